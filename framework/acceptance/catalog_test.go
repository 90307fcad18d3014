package acceptance

import (
	"os"
	"path/filepath"
	"strings"
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

// A command's catalog: loaded once (a site's override said once), a SKU
// by name with auto refused where nothing probes, its file, and the
// folder baseline validate reads.
func TestCatalogLoader(t *testing.T) {
	dir := t.TempDir()
	data, err := baselines.FS.ReadFile("h200.yaml")
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "h200.yaml"), data, 0o644))
	l := CatalogLoader{Dir: dir}
	var notes strings.Builder
	s, err := l.SKU(&notes, "h200")
	assert.NilError(t, err)
	assert.Equal(t, s.File, filepath.Join(dir, "h200.yaml"))
	_, err = l.Load(&notes)
	assert.NilError(t, err)
	assert.Equal(t, notes.String(), "note: SKU h200 from "+filepath.Join(dir, "h200.yaml")+" overrides the built-in one\n", "said once")
	got, err := l.File(s)
	assert.NilError(t, err)
	assert.DeepEqual(t, got, data)
	_, err = l.SKU(&notes, "auto")
	assert.ErrorContains(t, err, "--sku auto reads the GPUs of the nodes a run or health check runs on")
	_, err = l.SKU(&notes, "h999")
	assert.ErrorContains(t, err, "h999")
	_, name := l.Files()
	assert.Equal(t, name, dir)

	var none CatalogLoader
	_, err = none.File(s)
	assert.Error(t, err, "SKU h200: no SKU files loaded")
	fsys, name := none.Files()
	assert.Equal(t, name, "baselines")
	_, err = fsys.Open("h200.yaml")
	assert.NilError(t, err)
	bad := CatalogLoader{Dir: filepath.Join(dir, "h200.yaml")}
	_, err = bad.Load(&notes)
	assert.ErrorContains(t, err, "is a file: give the folder that holds it")
}
