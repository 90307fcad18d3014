package acceptance

import (
	"bytes"
	"context"
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Each SKU file is checked on its own and every problem is listed; a
// folder's files must also load together.
func TestValidateSKUFiles(t *testing.T) {
	h200, err := baselines.FS.ReadFile("h200.yaml")
	assert.NilError(t, err)
	check := func(data []byte, name string) (*sku.SKU, error) {
		if bytes.Contains(data, []byte("broken")) {
			return nil, errors.New(name + ": line 1: field sku: broken\n" + name + ": line 2: field suites: broken too")
		}
		return sku.Parse(data, name)
	}
	cases := []struct {
		name      string
		fsys      fstest.MapFS
		files     []string
		bad       int
		lines     []string
		wantError string
	}{
		{name: "a good folder", fsys: fstest.MapFS{"h200.yaml": {Data: h200}}, files: []string{"h200.yaml"},
			lines: []string{"ok  site/h200.yaml: sku h200, "}},
		{name: "every problem of a bad file, the good one too", fsys: fstest.MapFS{"h200.yaml": {Data: h200}, "x.yaml": {Data: []byte("broken")}},
			files: []string{"h200.yaml", "x.yaml"}, bad: 1,
			lines: []string{"ok  site/h200.yaml: sku h200, ", "BAD site/x.yaml: line 1: field sku: broken\n", "BAD site/x.yaml: line 2: field suites: broken too\n"}},
		{name: "a file not of its name's SKU breaks the folder's rule", fsys: fstest.MapFS{"other.yaml": {Data: h200}}, files: []string{"other.yaml"},
			wantError: "other.yaml"},
		{name: "a path that cannot be read", files: []string{filepath.Join(t.TempDir(), "none.yaml")}, bad: 1, lines: []string{"BAD open ", "none.yaml: no such file or directory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			var fsys iofs.FS // a nil MapFS would be a folder of nothing
			if c.fsys != nil {
				fsys = c.fsys
			}
			bad, err := ValidateSKUFiles(&out, fsys, "site", c.files, check)
			if c.wantError != "" {
				assert.ErrorContains(t, err, c.wantError)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, bad, c.bad, out.String())
			for _, l := range c.lines {
				assert.Assert(t, strings.Contains(out.String(), l), "want %q in\n%s", l, out.String())
			}
		})
	}
}

// baseline validate: every file of --baselines (or the built-in folder)
// without FILE arguments, each on its own; bad files counted in the
// error; a folder that is none or holds no SKU file refused.
func TestValidateFolder(t *testing.T) {
	ctx := context.Background()
	check := SKUChecker(ctx, h200Plugins, nil)
	data, err := baselines.FS.ReadFile("h200.yaml")
	assert.NilError(t, err)
	site := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(site, "h200.yaml"), data, 0o644))
	var w strings.Builder
	assert.NilError(t, ValidateSKUs(&w, &CatalogLoader{Dir: site}, nil, check))
	assert.Assert(t, strings.HasPrefix(w.String(), "ok  "+filepath.Join(site, "h200.yaml")+": sku h200, "), w.String())

	bad := filepath.Join(site, "bad.yaml")
	assert.NilError(t, os.WriteFile(bad, []byte("name: bad\n"), 0o644))
	w.Reset()
	err = ValidateSKUs(&w, &CatalogLoader{}, []string{filepath.Join(site, "h200.yaml"), bad}, check)
	assert.Error(t, err, "1 of 2 files is malformed")
	assert.Assert(t, strings.Contains(w.String(), "BAD "+bad), w.String())

	empty := t.TempDir()
	err = ValidateSKUs(&w, &CatalogLoader{Dir: empty}, nil, check)
	assert.Error(t, err, "baseline validate: no SKU files (*.yaml) in "+empty)
	err = ValidateSKUs(&w, &CatalogLoader{Dir: bad}, nil, check)
	assert.ErrorContains(t, err, "is a file: give the folder that holds it")
}
