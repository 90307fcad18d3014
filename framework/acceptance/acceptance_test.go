package acceptance

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/plugins/health"
	"github.com/gpuaccept/gpuaccept/plugins/nccl"
)

// Real all_reduce logs of 2 x H200 (testdata/recordings: a healthy run
// and one with NVLink peer-to-peer disabled, which fails its baseline).
const (
	healthyLog = "../../testdata/recordings/h200-1x2-healthy/nccl.all_reduce/all_reduce.log"
	p2poffLog  = "../../testdata/recordings/h200x2-2026-11-30-final/p2poff/raw/nccl.all_reduce/all_reduce.log"
)

// inProcess serves the built-in plugins in this process.
type inProcess map[string]pluginapi.Plugin

func (p inProcess) Plan(ctx context.Context, name string, req pluginapi.PlanRequest) (plan.Plan, error) {
	return p[name].Plan(ctx, req)
}

func (p inProcess) Parse(ctx context.Context, name string, req pluginapi.ParseRequest) (result.Parsed, error) {
	return p[name].Parse(ctx, req)
}

func (p inProcess) Describe(ctx context.Context, name string) (pluginapi.Description, error) {
	pl, ok := p[name]
	if !ok {
		// As the host answers for a plugin it cannot find.
		return pluginapi.Description{}, errors.New("no plugin " + name)
	}
	return pl.Describe(ctx)
}

var builtins = inProcess{"nccl": nccl.Plugin{}, health.PluginName: health.Plugin{}}

// replaying is a launcher whose every step writes the real log log.
type replaying struct{ log string }

func (r replaying) Name() string { return "replaying" }

func (r replaying) Commands(req launch.Request) ([]string, error) {
	return []string{"all_reduce_perf -b 8 -e 4G -f 2 -g 2"}, nil
}

func (r replaying) Launch(_ context.Context, req launch.Request) ([]plan.Output, error) {
	data, err := os.ReadFile(r.log)
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

func shippedSKU(t *testing.T, name string) *sku.SKU {
	t.Helper()
	cat, err := sku.Load(baselines.FS, "baselines")
	assert.NilError(t, err)
	s, err := cat.Get(name)
	assert.NilError(t, err)
	return s
}

// options are valid RunOptions of one all_reduce on 1 x 2 H200 that
// replays log, into a fresh results folder.
func options(t *testing.T, log string) RunOptions {
	l := replaying{log: log}
	return RunOptions{
		Setup: Setup{SKU: shippedSKU(t, "h200"), Suite: "singlenode", Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}},
			Timeout: time.Minute, Dir: filepath.Join(t.TempDir(), "results"), LauncherName: l.Name(),
			NewLauncher: func([]string) (launch.Launcher, error) { return l, nil }, Plugins: builtins, Version: "test",
			Baseline: []byte("name: h200\n")},
		Launcher: l, Only: []string{"nccl.all_reduce"},
	}
}

// Every field Validate checks is refused, naming the field, when it is
// out of range; the defaults a caller may leave zero pass.
func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(o *RunOptions)
		want string
	}{
		{"valid", func(o *RunOptions) {}, ""},
		{"zero localise settings are the defaults", func(o *RunOptions) { o.Localise = LocaliseSettings{} }, ""},
		{"no SKU", func(o *RunOptions) { o.SKU = nil }, "Setup.SKU"},
		{"unknown suite", func(o *RunOptions) { o.Suite = "nosuch" }, `Setup.Suite "nosuch"`},
		{"no nodes", func(o *RunOptions) { o.Topology.Nodes = 0 }, "Setup.Topology"},
		{"too many GPUs", func(o *RunOptions) { o.Topology.GPUsPerNode = plan.MaxGPUsPerNode + 1 }, "Setup.Topology"},
		{"no timeout", func(o *RunOptions) { o.Timeout = 0 }, "Setup.Timeout"},
		{"no results folder", func(o *RunOptions) { o.Dir = "" }, "Setup.Dir"},
		{"a dry run needs no folder", func(o *RunOptions) { o.Dir, o.DryRun = "", true }, ""},
		{"no plugins", func(o *RunOptions) { o.Plugins = nil }, "Setup.Plugins"},
		{"no launcher", func(o *RunOptions) { o.Launcher = nil }, "RunOptions.Launcher"},
		{"negative retries", func(o *RunOptions) { o.Retries = -1 }, "RunOptions.Retries -1"},
		{"too many retries", func(o *RunOptions) { o.Retries = MaxRetries + 1 }, "RunOptions.Retries 11"},
		{"both localise and not", func(o *RunOptions) { o.LocaliseAll, o.NoLocalise = true, true }, "contradict"},
		{"unknown strategy", func(o *RunOptions) { o.Localise.Strategy = "random" }, `Strategy "random"`},
		{"tolerance NaN", func(o *RunOptions) { o.Localise.Tolerance = math.NaN() }, "Tolerance NaN"},
		{"tolerance 1", func(o *RunOptions) { o.Localise.Tolerance = 1 }, "Tolerance 1"},
		{"negative parallel", func(o *RunOptions) { o.Localise.Parallel = -1 }, "Parallel -1"},
		{"multi-node node suite", func(o *RunOptions) { o.Localise.NodeSuite = "multinode" }, `NodeSuite "multinode"`},
		{"node tests without suite", func(o *RunOptions) { o.Localise.NodeTests = []string{"nccl.all_reduce"} }, "NodeTests"},
		{"node test not in suite", func(o *RunOptions) {
			o.Localise.NodeSuite, o.Localise.NodeTests = "singlenode", []string{"nccl.nosuch"}
		}, "NodeTests nccl.nosuch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := options(t, healthyLog)
			c.edit(&o)
			err := o.Validate()
			if c.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, c.want)
		})
	}
}

// A run judges the real log against the shipped baseline, writes the
// journal and the raw outputs, and records the launcher; invalid options
// stop it before anything is written.
func TestRun(t *testing.T) {
	for _, c := range []struct {
		log    string
		status result.Status
	}{{healthyLog, result.Pass}, {p2poffLog, result.Fail}} {
		t.Run(string(c.status), func(t *testing.T) {
			o := options(t, c.log)
			var stderr bytes.Buffer
			o.Stderr = &stderr
			res, err := Run(context.Background(), o)
			assert.NilError(t, err)
			assert.Equal(t, res.Status, c.status)
			assert.Equal(t, res.Launcher, "replaying")
			assert.Equal(t, len(res.Tests), 1)
			assert.Equal(t, len(res.Localisations), 0) // one node: nothing to narrow down
			_, err = os.Stat(filepath.Join(o.Dir, layout.Journal))
			assert.NilError(t, err)
			_, err = os.Stat(filepath.Join(o.Dir, resultsdir.TestDir("nccl.all_reduce"), layout.Outputs))
			assert.NilError(t, err)
		})
	}
	o := options(t, healthyLog)
	o.Retries = MaxRetries + 1
	_, err := Run(context.Background(), o)
	assert.ErrorContains(t, err, "RunOptions.Retries")
	_, err = os.Stat(o.Dir)
	assert.Assert(t, errors.Is(err, os.ErrNotExist), "results folder written: %v", err)
}

// A dry run says when the baseline judges nothing at the run's scope (h200
// has no 3-node baseline; its 2-node one is a reference all_reduce), unless every multi-node test is localised;
// then it prints each test's localisation schedule, or why a launcher
// that refuses the hosts cannot localise.
func TestDryRun(t *testing.T) {
	multi := func(t *testing.T) RunOptions {
		o := options(t, healthyLog)
		o.Suite, o.Only, o.DryRun = "multinode", nil, true
		o.Topology = plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}, Hosts: []string{"node1", "node2"}}
		return o
	}
	t.Run("nothing judged", func(t *testing.T) {
		o := multi(t)
		o.Topology = plan.Topology{Scope: plan.Scope{Nodes: 3, GPUsPerNode: 8}, Hosts: []string{"node1", "node2", "node3"}}
		_, err := Run(context.Background(), o)
		var nj *NothingJudgedError
		assert.Assert(t, errors.As(err, &nj), "%v", err)
		assert.Equal(t, err.Error(), "dry run: no benchmark would be judged at scope 3x8 (gpuaccept baseline show h200)")
	})
	t.Run("localised", func(t *testing.T) {
		o := multi(t)
		var stdout bytes.Buffer
		o.Stdout, o.LocaliseAll = &stdout, true
		_, err := Run(context.Background(), o)
		assert.NilError(t, err)
		assert.Assert(t, strings.Contains(stdout.String(), "# nccl.all_reduce: then localised (--localise)\n"), stdout.String())
		assert.Assert(t, strings.Contains(stdout.String(), "# localise nccl.all_reduce on 2 nodes (pairs)\n"), stdout.String())
	})
	t.Run("launcher refuses the hosts", func(t *testing.T) {
		o := multi(t)
		var stdout bytes.Buffer
		o.Stdout, o.LocaliseAll = &stdout, true
		o.NewLauncher = func([]string) (launch.Launcher, error) { return nil, errors.New("no such node") }
		_, err := Run(context.Background(), o)
		assert.NilError(t, err)
		assert.Assert(t, strings.Contains(stdout.String(),
			"# nccl.all_reduce: would not be localised: launcher replaying cannot run a test on nodes it is given: launcher replaying for node1,node2: no such node\n"), stdout.String())
	})
}

// Localise refuses what it cannot narrow down, naming the field.
func TestLocaliseValidate(t *testing.T) {
	base := func(t *testing.T) LocaliseOptions {
		o := options(t, healthyLog)
		o.Suite = "multinode"
		o.Topology = plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}, Hosts: []string{"node1", "node2"}}
		return LocaliseOptions{Setup: o.Setup, Tests: []string{"nccl.all_reduce"}}
	}
	cases := []struct {
		name string
		edit func(o *LocaliseOptions)
		want string
	}{
		{"valid", func(o *LocaliseOptions) {}, ""},
		{"one host", func(o *LocaliseOptions) { o.Topology.Hosts = o.Topology.Hosts[:1] }, "Topology.Hosts: 1 hosts"},
		{"no tests", func(o *LocaliseOptions) { o.Tests = nil }, "LocaliseOptions.Tests: empty"},
		{"test not in suite", func(o *LocaliseOptions) { o.Tests = []string{"nccl.nosuch"} }, "Tests nccl.nosuch"},
		{"no timeout", func(o *LocaliseOptions) { o.Timeout = -time.Second }, "Setup.Timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := base(t)
			c.edit(&o)
			err := o.Validate()
			if c.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, c.want)
			_, err = Localise(context.Background(), o)
			assert.ErrorContains(t, err, c.want)
		})
	}
}

// A test's nodes are the hosts given, else those its ranks reported, in
// step then rank order, each once.
func TestTestHosts(t *testing.T) {
	ranks := result.Test{RankHosts: map[string][]string{"b": {"n3", "n1"}, "a": {"n2", "", "n3"}}}
	assert.DeepEqual(t, testHosts(plan.Topology{Hosts: []string{"x", "y"}}, ranks), []string{"x", "y"})
	assert.DeepEqual(t, testHosts(plan.Topology{}, ranks), []string{"n2", "n3", "n1"})
	assert.DeepEqual(t, testHosts(plan.Topology{}, result.Test{}), []string(nil))
}
