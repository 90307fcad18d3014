package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/internal/fakehealth"
)

// Real all_reduce logs of 2 x H200 (testdata/recordings: a healthy run
// and one with NVLink peer-to-peer disabled, which fails its baseline).
const (
	healthyLog = "../../testdata/recordings/h200-1x2-healthy/nccl.all_reduce/all_reduce.log"
	p2poffLog  = "../../testdata/recordings/h200x2-2026-11-30-final/p2poff/raw/nccl.all_reduce/all_reduce.log"
)

// scripted is a launcher whose attempt N of a test writes the real log
// logs[N-1] as its step's output, or fails to launch where that is "".
type scripted struct {
	logs     []string
	launches int
	commands int
}

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) Commands(req launch.Request) ([]string, error) {
	s.commands++
	return []string{"all_reduce_perf -b 8 -e 4G -f 2 -g 2"}, nil
}

func (s *scripted) Launch(_ context.Context, req launch.Request) ([]plan.Output, error) {
	s.launches++
	src := s.logs[min(s.launches, len(s.logs))-1]
	if src == "" {
		return nil, errors.New("no node answered")
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return nil, err
	}
	var outs []plan.Output
	for _, st := range req.Plan.Steps {
		w, p, err := launch.CreateLog(req, st.Name)
		if err != nil {
			return nil, err
		}
		w.Write(data)
		w.Close()
		outs = append(outs, plan.Output{Step: st.Name, Log: p, Command: "all_reduce_perf"})
	}
	return outs, nil
}

// The runner's sequence on real outputs, with the real nccl plugin in
// process and a scripted launcher: a pass, a fail, a launch error, a
// retry that passes (a warn, every attempt's raw outputs kept apart), a
// dry run that launches nothing, and the verdicts re-judge from raw/.
func TestRunSequence(t *testing.T) {
	cases := []struct {
		name     string
		logs     []string
		retries  int
		dryRun   bool
		status   result.Status
		message  string
		launches int
		attempts int
	}{
		{"healthy", []string{healthyLog}, 0, false, result.Pass, "18 points inside their bands", 1, 0},
		{"p2p off", []string{p2poffLog}, 0, false, result.Fail, "busbw", 1, 0},
		{"launch error", []string{""}, 0, false, result.Error, "launch: no node answered", 1, 0},
		{"fails, then passes on a retry", []string{p2poffLog, healthyLog}, 2, false, result.Warn, "passed on attempt 2 of 2; attempt 1: busbw", 2, 1},
		{"launch error, retried, fails", []string{"", p2poffLog}, 1, false, result.Fail, "busbw", 2, 1},
		{"dry run", []string{healthyLog}, 0, true, result.Skip, "dry run", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "results")
			l := &scripted{logs: c.logs}
			r := &Runner{Plugins: builtins, Launcher: l, SKU: shippedSKU(t, "h200"), Dir: dir, Only: []string{"nccl.all_reduce"},
				Retries: c.retries, DryRun: c.dryRun, Version: "test"}
			run, err := r.Run(context.Background(), "singlenode", plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}})
			assert.NilError(t, err)
			assert.Equal(t, len(run.Tests), 1)
			got := run.Tests[0]
			assert.Equal(t, got.Status, c.status, got.Message)
			assert.Assert(t, strings.HasPrefix(got.Message, c.message), got.Message)
			assert.Equal(t, l.launches, c.launches)
			assert.Equal(t, len(got.Attempts), c.attempts)
			if c.dryRun {
				assert.Equal(t, l.commands, 1)
				assert.DeepEqual(t, got.Commands, []string{"all_reduce_perf -b 8 -e 4G -f 2 -g 2"})
				return
			}
			for i, a := range got.Attempts {
				for _, p := range a.Raw {
					assert.Assert(t, strings.HasPrefix(p, resultsdir.AttemptDir("nccl.all_reduce", i+1)+"/"), "attempt %d's %s", i+1, p)
				}
			}
			if got.Status != result.Error {
				assert.Assert(t, len(got.Raw) > 0 && strings.HasPrefix(got.Raw[0], resultsdir.TestDir("nccl.all_reduce")+"/"), "%v", got.Raw)
			}
			assert.DeepEqual(t, Rejudge(context.Background(), builtins, shippedSKU(t, "h200"), dir, run), []string(nil))
		})
	}
}

// A test the suite does not have is refused before anything launches.
func TestRunUnknownOnly(t *testing.T) {
	l := &scripted{logs: []string{healthyLog}}
	r := &Runner{Plugins: builtins, Launcher: l, SKU: shippedSKU(t, "h200"), Dir: filepath.Join(t.TempDir(), "results"), Only: []string{"nccl.all_reduse"}}
	_, err := r.Run(context.Background(), "singlenode", plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}})
	assert.ErrorContains(t, err, "nccl.all_reduse")
	assert.Equal(t, l.launches, 0)
}

// gpuaccept check judges a preflight test's log as a run does, by its
// checks, and marks it one; its bad node is the run's, and the folder
// re-judges to the same verdict.
func TestCheckPreflight(t *testing.T) {
	plugins := inProcess{fakehealth.PluginName: fakehealth.Plugin{}}
	p, err := fakehealth.Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "node", Params: map[string]string{"report": "n1=ok,n2=GA-TEST-PCIE:x8"}})
	assert.NilError(t, err)
	f := filepath.Join(t.TempDir(), "node.log")
	assert.NilError(t, os.WriteFile(f, []byte(fakehealth.Report(p)), 0o644))
	dir := filepath.Join(t.TempDir(), "results")
	run, err := CheckInto(context.Background(), plugins, shippedSKU(t, "h200"), "fakehealth.node", plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}, []string{f}, "test", dir, nil)
	assert.NilError(t, err)
	assert.Equal(t, run.Tests[0].Status, result.Fail)
	assert.Assert(t, run.Tests[0].Preflight)
	assert.Equal(t, run.Tests[0].Message, "node n2 failed health: GA-TEST-PCIE x8 (1 of 2 checks failed)")
	assert.DeepEqual(t, run.BadNodes, []result.BadNode{{Host: "n2", Code: "GA-TEST-PCIE", Check: "node health", Message: "x8", Test: "fakehealth.node"}})
	assert.DeepEqual(t, Rejudge(context.Background(), plugins, shippedSKU(t, "h200"), dir, run), []string(nil))
}

// A test not started because the run ended says why in words a user
// knows, not "context canceled".
func TestRunNotStartedSaysWhy(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, c := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"interrupted", cancelled, "not run: the run was interrupted (Ctrl-C or SIGTERM) before this test started"},
		{"out of time", expired, "not run: the run's time ran out before this test started"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := &scripted{logs: []string{healthyLog}}
			r := &Runner{Plugins: builtins, Launcher: l, SKU: shippedSKU(t, "h200"), Dir: filepath.Join(t.TempDir(), "results"), Only: []string{"nccl.all_reduce"}, Version: "test"}
			run, err := r.Run(c.ctx, "singlenode", plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}})
			assert.NilError(t, err)
			assert.Equal(t, len(run.Tests), 1)
			assert.Equal(t, run.Tests[0].Message, c.want)
			assert.Assert(t, !strings.Contains(run.Tests[0].Message, "context"), run.Tests[0].Message)
			assert.Equal(t, l.launches, 0)
		})
	}
}
