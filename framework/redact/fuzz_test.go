package redact

import (
	"bytes"
	"os"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Masking never panics on any input, masks the same whether the input
// comes whole or in two writes, and a masked output masked again stays
// as it is (a results folder is masked once more when replayed).
func FuzzMask(f *testing.F) {
	data, err := os.ReadFile("testdata/secrets.yaml")
	if err != nil {
		f.Fatal(err)
	}
	var cs []secretCase
	if err := yaml.Unmarshal(data, &cs); err != nil {
		f.Fatal(err)
	}
	for _, c := range cs {
		f.Add([]byte(c.Line+"\n"+shellEnv(c.Env)), uint16(len(c.Line)/2))
		f.Add([]byte(`"env":["A=1",`+ncclJSON(c.Env)+`]`), uint16(7))
	}
	f.Fuzz(func(t *testing.T, in []byte, at uint16) {
		whole := Bytes(in)
		cut := min(int(at), len(in))
		var out bytes.Buffer
		w := (*Redactor)(nil).NewWriter(&out)
		if _, err := w.Write(in[:cut]); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(in[cut:]); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), whole) {
			t.Fatalf("in two writes (cut at %d):\n%q\nwhole:\n%q", cut, out.Bytes(), whole)
		}
		if again := Bytes(whole); !bytes.Equal(again, whole) {
			t.Fatalf("masked again:\n%q\nonce:\n%q", again, whole)
		}
	})
}
