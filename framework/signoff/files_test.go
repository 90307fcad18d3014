package signoff

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
)

// Each report of a results folder replaced by a link: WriteReports
// refuses it by name, and the link's target stays as it was.
func TestReportsNeverWriteThroughALink(t *testing.T) {
	const victimContent = "root:$6$secret:19000::\n"
	for _, name := range []string{layout.Results, layout.Table, layout.Markdown, layout.JUnit, layout.HTML} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile("../../testdata/recordings/h200x2-2026-11-30-final/single/results.json")
			assert.NilError(t, err)
			var run result.Run
			assert.NilError(t, json.Unmarshal(data, &run))
			run.Dir = t.TempDir()
			victim := filepath.Join(t.TempDir(), "shadow")
			assert.NilError(t, os.WriteFile(victim, []byte(victimContent), 0o600))
			assert.NilError(t, os.Symlink(victim, filepath.Join(run.Dir, name)))
			err = WriteReports(&run, nil, "")
			assert.Assert(t, errors.Is(err, safefs.ErrRefused), "%v", err)
			assert.ErrorContains(t, err, "a symbolic link")
			got, _ := os.ReadFile(victim)
			assert.Equal(t, string(got), victimContent)
		})
	}
}
