package signoff

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/burnin"
	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	_ "github.com/gpuaccept/gpuaccept/plugins/gemm"
	_ "github.com/gpuaccept/gpuaccept/plugins/hbm"
	_ "github.com/gpuaccept/gpuaccept/plugins/health"
	_ "github.com/gpuaccept/gpuaccept/plugins/hostlink"
	_ "github.com/gpuaccept/gpuaccept/plugins/nccl"
)

// burnInOf makes a burn-in folder whose cycles are an H100's signed node
// run (testdata/recordings/h100x1-2026-12-07/issue30/node-4, a folder
// this gpuaccept verifies as it is), copied in as each cycle ends, and
// seals it.
func burnInOf(t *testing.T, cycles int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "burnin")
	load := func(d string) (*result.Run, error) {
		run, _, err := resultsdir.Load(d)
		return run, err
	}
	o := burnin.Options{Plan: burnin.Plan{Cycles: cycles, Drift: burnin.DefaultDrift}, Dir: dir, SKU: "h100", Suite: "node",
		Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}, Launcher: "local", Load: load,
		RunCycle: func(_ context.Context, n int, d string) (*result.Run, error) {
			src := filepath.Join("..", "..", "testdata", "recordings", "h100x1-2026-12-07", "issue30", "node-4")
			if err := os.CopyFS(d, os.DirFS(src)); err != nil {
				return nil, err
			}
			return load(d)
		}}
	rec, err := burnin.Run(context.Background(), o)
	assert.NilError(t, err)
	assert.Equal(t, rec.Ran, cycles)
	_, err = burnin.Finish(dir, rec, "v1", nil)
	assert.NilError(t, err)
	return dir
}

// verify's account of a burn-in folder: OK as made; FAILED for a cycle
// changed, a record that its cycles do not give (re-sealed over, so
// that only re-deriving it catches it), a report edited.
func TestVerifyBurnIn(t *testing.T) {
	reseal := func(t *testing.T, dir string) {
		assert.NilError(t, os.Remove(filepath.Join(dir, "manifest.json")))
		_, err := manifest.WriteWith(dir, "v1", "h100", burnin.CycleDir(1)+"/baseline/h100.yaml")
		assert.NilError(t, err)
	}
	cases := []struct {
		name   string
		tamper func(t *testing.T, dir string)
		want   string // a line of the account; "" OK
	}{
		{"as made", func(*testing.T, string) {}, ""},
		{"a cycle's result edited", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "cycle-0002", "results.json")
			data, err := os.ReadFile(p)
			assert.NilError(t, err)
			assert.NilError(t, os.WriteFile(p, bytes.Replace(data, []byte(`"status": "pass"`), []byte(`"status": "fail"`), 1), 0o644))
		}, "cycle-0002/results.json: edited since the run"},
		{"the record says pass, re-sealed", func(t *testing.T, dir string) {
			p := filepath.Join(dir, burnin.File)
			var rec map[string]any
			data, err := os.ReadFile(p)
			assert.NilError(t, err)
			assert.NilError(t, json.Unmarshal(data, &rec))
			rec["status"] = "fail"
			rec["worst_drift"] = 0.2
			data, err = json.MarshalIndent(rec, "", "  ")
			assert.NilError(t, err)
			assert.NilError(t, os.WriteFile(p, append(data, '\n'), 0o644))
			reseal(t, dir)
		}, "burnin.json is not what its cycles show"},
		{"the text report edited, re-sealed", func(t *testing.T, dir string) {
			assert.NilError(t, os.WriteFile(filepath.Join(dir, burnin.TextReport), []byte("BURN-IN PASS\n"), 0o644))
			reseal(t, dir)
		}, "burnin.txt is not the report of burnin.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := burnInOf(t, 3)
			c.tamper(t, dir)
			var out bytes.Buffer
			failed, err := VerifyBurnIn(context.Background(), dir, Options{Version: "v1", Plugins: pluginapi.InProcess{}}, &out)
			assert.NilError(t, err)
			assert.Equal(t, failed, c.want != "", out.String())
			if c.want == "" {
				assert.Assert(t, strings.Contains(out.String(), "verify: OK: every file matches the manifest, each of the 3 cycles verifies as a run"), out.String())
				return
			}
			assert.Assert(t, strings.Contains(out.String(), c.want), out.String())
		})
	}
}

// --resume continues a burn-in's numbering and plan: two more cycles of
// a plan of five after three; the record re-derived from every cycle.
func TestResumeBurnIn(t *testing.T) {
	dir := burnInOf(t, 3)
	rec, err := burnin.Read(dir)
	assert.NilError(t, err)
	rec.Plan.Cycles = 5
	assert.NilError(t, burnin.Save(dir, rec))
	var ran []int
	load := func(d string) (*result.Run, error) {
		run, _, err := resultsdir.Load(d)
		return run, err
	}
	got, err := burnin.Run(context.Background(), burnin.Options{Plan: rec.Plan, Dir: dir, Resume: true, SKU: "h100", Suite: "node",
		Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}, Load: load,
		RunCycle: func(_ context.Context, n int, d string) (*result.Run, error) {
			ran = append(ran, n)
			src := filepath.Join("..", "..", "testdata", "recordings", "h100x1-2026-12-07", "issue30", "node-4")
			if err := os.CopyFS(d, os.DirFS(src)); err != nil {
				return nil, err
			}
			return load(d)
		}})
	assert.NilError(t, err)
	assert.DeepEqual(t, ran, []int{4, 5})
	assert.Equal(t, got.Ran, 5)
	assert.Equal(t, got.Started, rec.Started)
	names, err := burnin.Cycles(dir)
	assert.NilError(t, err)
	assert.Equal(t, len(names), 5)
}
