package record

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

// A results folder given to baseline record whose results.json is a FIFO
// or a link out of it: refused by name, without blocking.
func TestLoadRefusesSpecialFiles(t *testing.T) {
	outside := filepath.Join(t.TempDir(), layout.Results)
	assert.NilError(t, os.WriteFile(outside, []byte(`{"tests":[]}`), 0o644))
	for name, plant := range map[string]func(p string) error{
		"FIFO":     func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"link out": func(p string) error { return os.Symlink(outside, p) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			assert.NilError(t, plant(filepath.Join(dir, layout.Results)))
			ch := make(chan error, 1)
			go func() { _, err := Load(dir); ch <- err }()
			select {
			case err := <-ch:
				assert.Assert(t, errors.Is(err, safefs.ErrRefused), "%v", err)
				assert.ErrorContains(t, err, layout.Results)
			case <-time.After(10 * time.Second):
				t.Fatal("Load did not return within 10 s: it blocks on a FIFO")
			}
		})
	}
}
