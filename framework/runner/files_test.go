package runner

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// fakePlugins plans one step and parses by returning metrics, recording
// every path it was handed (an out-of-process plugin opens what it gets).
type fakePlugins struct {
	mu      sync.Mutex
	paths   []string
	metrics []result.Metric
}

func (f *fakePlugins) Plan(context.Context, string, pluginapi.PlanRequest) (plan.Plan, error) {
	return plan.Plan{Steps: []plan.Step{{Name: "all_reduce", Argv: []string{"all_reduce_perf"}, Procs: 1, ProcsPerNode: 1}}}, nil
}

func (f *fakePlugins) Parse(_ context.Context, _ string, req pluginapi.ParseRequest) (result.Parsed, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range req.Outputs {
		f.paths = append(f.paths, o.Log)
		for _, p := range o.Files {
			f.paths = append(f.paths, p)
		}
	}
	return result.Parsed{Metrics: f.metrics}, nil
}

// logLauncher writes each step's log as a launcher does.
type logLauncher struct{}

func (logLauncher) Name() string                              { return "fake" }
func (logLauncher) Commands(launch.Request) ([]string, error) { return nil, nil }
func (logLauncher) Launch(_ context.Context, req launch.Request) ([]plan.Output, error) {
	var outs []plan.Output
	for _, s := range req.Plan.Steps {
		o := plan.Output{Step: s.Name}
		w, p, err := launch.CreateLog(req, s.Name)
		if err != nil {
			o.ExitCode, o.LaunchError = -1, err.Error()
		} else {
			w.Write([]byte("# nccl-tests\n"))
			w.Close()
			o.Log = p
		}
		outs = append(outs, o)
	}
	return outs, nil
}

func h200(t *testing.T) *sku.SKU {
	t.Helper()
	cat, err := sku.Load(baselines.FS, "baselines")
	assert.NilError(t, err)
	s, err := cat.Get("h200")
	assert.NilError(t, err)
	return s
}

// A results folder whose raw/ is a link out (planted before the run, or
// raced in): the run and check refuse it by name and write nothing where
// it points.
func TestRunAndCheckRefuseALinkedRawFolder(t *testing.T) {
	log := filepath.Join(t.TempDir(), "all_reduce.log")
	assert.NilError(t, os.WriteFile(log, []byte("# nccl-tests\n"), 0o644))
	cases := map[string]func(dir string) error{
		"run": func(dir string) error {
			r := &Runner{Plugins: &fakePlugins{}, Launcher: logLauncher{}, SKU: h200(t), Dir: dir, Only: []string{"nccl.all_reduce"}}
			_, err := r.Run(context.Background(), "singlenode", plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}})
			return err
		},
		"check --out": func(dir string) error {
			_, err := CheckInto(context.Background(), &fakePlugins{}, h200(t), "nccl.all_reduce", plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}, []string{log}, "test", dir, []byte("name: h200\n"))
			return err
		},
	}
	for name, do := range cases {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			dir, elsewhere := filepath.Join(base, "results"), filepath.Join(base, "elsewhere")
			assert.NilError(t, os.MkdirAll(dir, 0o755))
			assert.NilError(t, os.MkdirAll(elsewhere, 0o755))
			assert.NilError(t, os.Symlink(elsewhere, filepath.Join(dir, layout.Raw)))
			err := do(dir)
			assert.ErrorContains(t, err, "raw is a symbolic link")
			ents, _ := os.ReadDir(elsewhere)
			assert.Equal(t, len(ents), 0, "wrote into the folder raw/ points at")
		})
	}
}

// The launcher is given the results folder as its root: a link planted as
// a test's raw folder while the run goes on is refused, not written
// through.
func TestRunGivesTheLauncherItsRoot(t *testing.T) {
	base := t.TempDir()
	dir, elsewhere := filepath.Join(base, "results"), filepath.Join(base, "elsewhere")
	assert.NilError(t, os.MkdirAll(filepath.Join(dir, layout.Raw), 0o755))
	assert.NilError(t, os.MkdirAll(elsewhere, 0o755))
	assert.NilError(t, os.Symlink(elsewhere, filepath.Join(dir, layout.Raw, "nccl.all_reduce")))
	r := &Runner{Plugins: &fakePlugins{}, Launcher: logLauncher{}, SKU: h200(t), Dir: dir, Only: []string{"nccl.all_reduce"}}
	run, err := r.Run(context.Background(), "singlenode", plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}})
	assert.NilError(t, err)
	assert.Equal(t, run.Tests[0].Status, result.Error)
	ents, _ := os.ReadDir(elsewhere)
	assert.Equal(t, len(ents), 0, "wrote into the folder raw/nccl.all_reduce points at")
}

// Re-judging hands the plugin only regular files inside the folder: an
// outputs.json naming a log out of the folder, or a log that is a link,
// is a finding naming it, and the plugin never sees the path.
func TestRejudgeHandsThePluginOnlyTheFolder(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.log")
	assert.NilError(t, os.WriteFile(outside, []byte("# nccl-tests\n"), 0o644))
	cases := []struct {
		name string
		edit func(t *testing.T, testDir string)
		want string
	}{
		{"outputs.json names a log out of the folder", func(t *testing.T, testDir string) {
			rel, err := filepath.Rel(testDir, outside)
			assert.NilError(t, err)
			data, _ := json.Marshal([]plan.Output{{Step: "all_reduce", Log: rel}})
			assert.NilError(t, os.WriteFile(filepath.Join(testDir, layout.Outputs), data, 0o644))
		}, "outside the folder"},
		{"outputs.json names an absolute log", func(t *testing.T, testDir string) {
			data, _ := json.Marshal([]plan.Output{{Step: "all_reduce", Log: outside}})
			assert.NilError(t, os.WriteFile(filepath.Join(testDir, layout.Outputs), data, 0o644))
		}, "outside the folder"},
		{"the log is a link out", func(t *testing.T, testDir string) {
			p := filepath.Join(testDir, "all_reduce.log")
			assert.NilError(t, os.Remove(p))
			assert.NilError(t, os.Symlink(outside, p))
		}, "a symbolic link"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "results")
			plugins := &fakePlugins{}
			r := &Runner{Plugins: plugins, Launcher: logLauncher{}, SKU: h200(t), Dir: dir, Only: []string{"nccl.all_reduce"}}
			run, err := r.Run(context.Background(), "singlenode", plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}})
			assert.NilError(t, err)
			c.edit(t, filepath.Join(dir, layout.Raw, "nccl.all_reduce"))
			plugins.paths = nil
			diffs := Rejudge(context.Background(), plugins, h200(t), dir, run)
			assert.Assert(t, len(diffs) > 0 && strings.Contains(strings.Join(diffs, "\n"), c.want), "%q", diffs)
			for _, p := range plugins.paths {
				assert.Assert(t, p != outside && !strings.Contains(p, ".."), "the plugin was handed %s", p)
			}
		})
	}
}

// A plugin reporting NaN or ±Inf makes the test an error naming the
// metric; the number is dropped, so nothing downstream has to hold it.
func TestJudgeRefusesNonFiniteMetrics(t *testing.T) {
	for _, v := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
		parsed := result.Parsed{Metrics: []result.Metric{
			{Name: "busbw", Value: 344.0, Unit: "GB/s", Size: 4 << 30, Labels: map[string]string{"placement": "in-place"}},
			{Name: "busbw", Value: v, Unit: "GB/s", Size: 4 << 30, Labels: map[string]string{"placement": "out-of-place"}},
		}}
		got := Judge(h200(t), "nccl.all_reduce", plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}, parsed)
		assert.Equal(t, got.Status, result.Error)
		assert.Assert(t, strings.Contains(got.Message, "busbw[out-of-place] at 4 GiB"), got.Message)
		for _, m := range got.Metrics {
			assert.Assert(t, !math.IsNaN(m.Value) && !math.IsInf(m.Value, 0), "%v kept", m)
		}
	}
}
