package gpuaccept

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// The binary embeds exactly the recordings the demo replays: each
// DemoRecordings folder whole, as it is on disk, and no other file (the
// rest of testdata/recordings is several MB of test data).
func TestRecordingsEmbedDemoOnly(t *testing.T) {
	assert.Assert(t, len(DemoRecordings) > 0)
	under := func(p string) bool {
		for _, d := range DemoRecordings {
			if p == d.Dir || strings.HasPrefix(p, d.Dir+"/") {
				return true
			}
		}
		return false
	}
	var embedded []string
	assert.NilError(t, fs.WalkDir(Recordings, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		assert.Check(t, under(p), "%s is embedded but no demo recording holds it", p)
		embedded = append(embedded, p)
		return nil
	}))
	var onDisk []string
	for _, d := range DemoRecordings {
		n := len(onDisk)
		assert.NilError(t, fs.WalkDir(os.DirFS("."), d.Dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			// go:embed leaves out names starting with . or _ in a folder.
			if b := path.Base(p); p != d.Dir && (b[0] == '.' || b[0] == '_') {
				if e.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if e.IsDir() {
				return nil
			}
			onDisk = append(onDisk, p)
			want, err := os.ReadFile(p)
			assert.NilError(t, err)
			got, err := fs.ReadFile(Recordings, p)
			if assert.Check(t, err == nil, "demo recording file %s is not embedded: %v", p, err) {
				assert.Check(t, bytes.Equal(got, want), "%s: embedded copy differs from the file", p)
			}
			return nil
		}))
		assert.Check(t, len(onDisk) > n, "demo recording %s holds no file", d.Dir)
	}
	sort.Strings(embedded)
	sort.Strings(onDisk)
	assert.DeepEqual(t, embedded, onDisk)
}
