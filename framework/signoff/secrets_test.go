package signoff

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

// A secret in clear in a results folder is named with its file and line,
// in a .gz file too; a link is not followed.
func TestClearSecrets(t *testing.T) {
	const secret = "hf_Zq8vT3kLm9Pw2Xy7Rb4Nc6Dj1Fg5Hs0"
	t.Setenv("HF_TOKEN", secret)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte("a\nb\ntoken " + secret + "\n"))
	assert.NilError(t, zw.Close())
	cases := []struct {
		name  string
		files map[string][]byte
		link  bool
		want  []string
	}{
		{name: "clean", files: map[string][]byte{"results.json": []byte("{}\n"), "raw/t/s.log": []byte("busbw 10\n")}},
		{name: "in clear", files: map[string][]byte{"raw/t/s.log": []byte("ok\nHF_TOKEN=" + secret + "\n")},
			want: []string{"raw/t/s.log: line 2 holds a secret in clear (what gpuaccept writes is masked)"}},
		{name: "in a .gz", files: map[string][]byte{"raw/t/s.log.gz": gz.Bytes()},
			want: []string{"raw/t/s.log.gz: line 3 holds a secret in clear (what gpuaccept writes is masked)"}},
		{name: "not gzip", files: map[string][]byte{"x.gz": []byte("plain")}, want: []string{"x.gz: cannot be decompressed to look for secrets: unexpected EOF"}},
		{name: "a link is not followed", link: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for rel, data := range c.files {
				p := filepath.Join(dir, filepath.FromSlash(rel))
				assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				assert.NilError(t, os.WriteFile(p, data, 0o644))
			}
			if c.link {
				out := filepath.Join(t.TempDir(), "elsewhere.log")
				assert.NilError(t, os.WriteFile(out, []byte(secret+"\n"), 0o644))
				assert.NilError(t, os.Symlink(out, filepath.Join(dir, "l.log")))
			}
			assert.DeepEqual(t, ClearSecrets(dir), c.want)
		})
	}
}
