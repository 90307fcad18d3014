package signoff

import (
	"context"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// What report may rebuild: a folder not signed off yet, or one that still
// matches its manifest; not one changed since, nor a signed one whose
// manifest is gone.
func TestMayRebuild(t *testing.T) {
	cases := []struct {
		name      string
		prepare   func(t *testing.T, dir string)
		wantError string
	}{
		{name: "no manifest yet", prepare: func(t *testing.T, dir string) {}},
		{name: "matches its manifest", prepare: func(t *testing.T, dir string) {
			_, err := manifest.Write(dir, "test", "h200")
			assert.NilError(t, err)
		}},
		{name: "changed since", prepare: func(t *testing.T, dir string) {
			_, err := manifest.Write(dir, "test", "h200")
			assert.NilError(t, err)
			assert.NilError(t, os.WriteFile(filepath.Join(dir, "journal.jsonl"), []byte("{}\n{}\n"), 0o644))
		}, wantError: "no longer matches the manifest.json it has (journal.jsonl: edited since the run"},
		{name: "signed, manifest gone", prepare: func(t *testing.T, dir string) {
			assert.NilError(t, os.WriteFile(filepath.Join(dir, layout.SigFile), []byte("sig"), 0o644))
		}, wantError: "holds manifest.json.sig but no manifest.json: a signed folder whose manifest was removed is not signed off again"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			assert.NilError(t, os.WriteFile(filepath.Join(dir, "journal.jsonl"), []byte("{}\n"), 0o644))
			assert.NilError(t, os.Mkdir(filepath.Join(dir, "baseline"), 0o755))
			assert.NilError(t, os.WriteFile(filepath.Join(dir, "baseline", "h200.yaml"), []byte("sku: h200\n"), 0o644))
			c.prepare(t, dir)
			// No plugins: signing is off, so nothing is re-judged.
			diffs, err := MayRebuild(context.Background(), nil, dir, &result.Run{}, nil, false)
			assert.Assert(t, diffs == nil)
			if c.wantError != "" {
				assert.ErrorContains(t, err, c.wantError)
				return
			}
			assert.NilError(t, err)
		})
	}
}
