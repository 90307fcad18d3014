package k8s

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func block(name, content string) string {
	return fileBegin + name + " <==\n" + base64.StdEncoding.EncodeToString([]byte(content)) + "\n" + fileEnd + "\n"
}

func TestSplitFiles(t *testing.T) {
	cases := []struct {
		name      string
		in        string
		wantLog   string
		wantFiles map[string]string
	}{
		{"no blocks", "a\nb\n", "a\nb\n", nil},
		{"one block", "out\n" + block("x.json", `{"a":1}`), "out\n", map[string]string{"x.json": `{"a":1}`}},
		{"two blocks", "o\n" + block("a", "1") + block("b", "2\n"), "o\n", map[string]string{"a": "1", "b": "2\n"}},
		{"cut off block stays in the log", "o\n" + fileBegin + "x <==\nAAAA\n", "o\n" + fileBegin + "x <==\nAAAA\n", nil},
		{"bad base64 stays in the log", "o\n" + fileBegin + "x <==\n!!!\n" + fileEnd + "\n", "o\n" + fileBegin + "x <==\n!!!\n" + fileEnd + "\n", nil},
		{"no final newline", "a\nb", "a\nb", nil},
		{"CRLF", "a\r\n" + strings.ReplaceAll(block("x", "hi"), "\n", "\r\n"), "a\r\n", map[string]string{"x": "hi"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			files := map[string]string{}
			err := splitFiles(strings.NewReader(c.in), &log, func(n string, d []byte) error { files[n] = string(d); return nil })
			assert.NilError(t, err)
			assert.Equal(t, log.String(), c.wantLog)
			if c.wantFiles == nil {
				c.wantFiles = map[string]string{}
			}
			assert.DeepEqual(t, files, c.wantFiles)
		})
	}
}

func TestSplitFilesCollectError(t *testing.T) {
	err := splitFiles(strings.NewReader(block("x", "1")), &bytes.Buffer{}, func(string, []byte) error { return errors.New("disk full") })
	assert.ErrorContains(t, err, "disk full")
}

func FuzzSplitFiles(f *testing.F) {
	f.Add("out\n" + block("x.json", `{"a":1}`))
	f.Add(fileBegin + " <==\n" + fileEnd + "\n")
	f.Add("a\r\nb")
	f.Fuzz(func(t *testing.T, in string) {
		var log bytes.Buffer
		n := 0
		if err := splitFiles(strings.NewReader(in), &log, func(string, []byte) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n == 0 && log.String() != in {
			t.Fatalf("nothing collected but the log changed: %q -> %q", in, log.String())
		}
	})
}

// The pod's script runs here under /bin/sh as it would in the container:
// the program's output and exit status pass through, and the files it
// wrote come back through the log.
func TestSingleScriptRoundTrip(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no /bin/sh")
	}
	if _, err := exec.LookPath("base64"); err != nil {
		t.Skip("no base64")
	}
	work := filepath.Join(t.TempDir(), "work dir")
	json := `{"nccl": "2.28.9", "it's": [1, 2]}` + "\n"
	argv := []string{"sh", "-c", `echo "# nccl-tests"; printf '%s' "$1" > r.json; exit 3`, "x", json}
	script := singleScript(argv, []string{"r.json", "missing.json"}, work)
	cmd := exec.Command(sh, "-c", script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	assert.Assert(t, errors.As(err, &ee), "want exit 3, got %v", err)
	assert.Equal(t, ee.ExitCode(), 3)
	var log bytes.Buffer
	files := map[string]string{}
	assert.NilError(t, splitFiles(&out, &log, func(n string, d []byte) error { files[n] = string(d); return nil }))
	assert.Equal(t, log.String(), "# nccl-tests\n")
	assert.DeepEqual(t, files, map[string]string{"r.json": json})
	_, err = os.Stat(filepath.Join(work, "r.json"))
	assert.NilError(t, err)
}
