package acceptance

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
)

// The catalog: the built-in SKU files, a site's folder over them, and
// --baselines given as something that is not a folder named as such.
func TestLoadCatalog(t *testing.T) {
	h200, err := baselines.FS.ReadFile("h200.yaml")
	assert.NilError(t, err)
	site := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(site, "h200.yaml"), h200, 0o644))
	file := filepath.Join(site, "h200.yaml")
	cases := []struct {
		name, dir string
		over      []string
		wantError string
	}{
		{name: "built-in only"},
		{name: "a site's file replaces the built-in one", dir: site, over: []string{"h200"}},
		{name: "no such folder", dir: filepath.Join(site, "nope"), wantError: "no such folder (give the folder that holds the SKU files, SKU.yaml)"},
		{name: "a file", dir: file, wantError: "--baselines " + file + " is a file: give the folder that holds it (--baselines " + site + ")"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cat, over, err := LoadCatalog(baselines.FS, c.dir)
			if c.wantError != "" {
				assert.ErrorContains(t, err, c.wantError)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, over, c.over)
			_, err = cat.Get("h200")
			assert.NilError(t, err)
		})
	}
}
