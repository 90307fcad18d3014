package redact

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

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

// Printable leaves nothing a terminal acts on, whatever the bytes, and
// escaping twice changes nothing; PrintableJSON keeps a document valid.
func FuzzPrintable(f *testing.F) {
	f.Add("FAIL\r\x1b[2KALL PASS\u202e\x9b\xff")
	f.Add("plain µs ≥ 1\n\ttab")
	f.Fuzz(func(t *testing.T, s string) {
		p := Printable(s)
		if strings.ContainsFunc(p, Unprintable) || !utf8.ValidString(p) {
			t.Fatalf("Printable(%q) = %q", s, p)
		}
		if Printable(p) != p {
			t.Fatalf("not idempotent: %q", s)
		}
		doc, err := json.Marshal(s)
		if err != nil {
			return
		}
		if out := PrintableJSON(doc); !json.Valid(out) || bytes.ContainsFunc(out, Unprintable) {
			t.Fatalf("PrintableJSON(%s) = %s", doc, out)
		}
	})
}
