package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
)

// A covered file replaced by a FIFO, a link to /dev/zero or a link out of
// the folder: hashing refuses it by name without blocking, and never
// hashes (reads) what is outside; manifest.json planted as a link is
// refused, not written through.
func TestManifestRefusesLinksAndSpecialFiles(t *testing.T) {
	const log = "raw/nccl.all_reduce/all_reduce.log"
	outside := filepath.Join(t.TempDir(), "outside.log")
	assert.NilError(t, os.WriteFile(outside, []byte("elsewhere\n"), 0o600))
	cases := []struct {
		name  string
		plant func(t *testing.T, dir string)
		do    func(dir string) error
		want  string
	}{
		{"FIFO in raw/", func(t *testing.T, dir string) {
			assert.NilError(t, os.Remove(filepath.Join(dir, log)))
			assert.NilError(t, syscall.Mkfifo(filepath.Join(dir, log), 0o644))
		}, func(dir string) error { _, err := Build(dir, "test", "h200"); return err }, log + " is a named pipe (FIFO)"},
		{"link to /dev/zero in raw/", func(t *testing.T, dir string) {
			assert.NilError(t, os.Remove(filepath.Join(dir, log)))
			assert.NilError(t, os.Symlink("/dev/zero", filepath.Join(dir, log)))
		}, func(dir string) error { _, err := Build(dir, "test", "h200"); return err }, log + " is a symbolic link"},
		{"link out in raw/", func(t *testing.T, dir string) {
			assert.NilError(t, os.Remove(filepath.Join(dir, log)))
			assert.NilError(t, os.Symlink(outside, filepath.Join(dir, log)))
		}, func(dir string) error { _, err := Build(dir, "test", "h200"); return err }, log + " is a symbolic link"},
		{"manifest.json a link", func(t *testing.T, dir string) {
			assert.NilError(t, os.Symlink(outside, filepath.Join(dir, layout.Manifest)))
		}, func(dir string) error { _, err := Write(dir, "test", "h200"); return err }, layout.Manifest + " is a symbolic link"},
		{"Read manifest.json a FIFO", func(t *testing.T, dir string) {
			assert.NilError(t, syscall.Mkfifo(filepath.Join(dir, layout.Manifest), 0o644))
		}, func(dir string) error { _, err := Read(dir); return err }, layout.Manifest + " is a named pipe (FIFO)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := folder(t)
			c.plant(t, dir)
			ch := make(chan error, 1)
			go func() { ch <- c.do(dir) }()
			var err error
			select {
			case err = <-ch:
			case <-time.After(10 * time.Second):
				t.Fatal("did not return within 10 s: it blocks on a file it should refuse")
			}
			assert.Assert(t, errors.Is(err, safefs.ErrRefused), "%v", err)
			assert.ErrorContains(t, err, c.want)
			got, _ := os.ReadFile(outside)
			assert.Equal(t, string(got), "elsewhere\n")
		})
	}
}
