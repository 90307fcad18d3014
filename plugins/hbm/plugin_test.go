package hbm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/workloads"
	"gotest.tools/v3/assert"
)

// rec holds torchbench.py's real outputs on one H200
// (testdata/recordings/h200x1-2026-12-01/README.md).
const rec = "../../testdata/recordings/h200x1-2026-12-01/torchbench/"

func topo(nodes, gpus int) plan.Topology {
	return plan.Topology{Scope: plan.Scope{Nodes: nodes, GPUsPerNode: gpus}}
}

func parse(t *testing.T, tp plan.Topology, log string) result.Parsed {
	t.Helper()
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "bandwidth", Topology: tp, Outputs: []plan.Output{{Step: "check", Log: log}}})
	assert.NilError(t, err)
	return p
}

func failed(p result.Parsed) []string {
	var out []string
	for _, c := range p.Checks {
		if !c.OK {
			out = append(out, c.Name+": "+c.Message)
		}
	}
	return out
}

func edited(t *testing.T, src string, edit func(string) string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	assert.NilError(t, err)
	out := edit(string(data))
	assert.Assert(t, out != string(data), "the edit changed nothing")
	p := filepath.Join(t.TempDir(), filepath.Base(src))
	assert.NilError(t, os.WriteFile(p, []byte(out), 0o644))
	return p
}

func TestPlan(t *testing.T) {
	p, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "bandwidth", Topology: topo(3, 8), Params: map[string]string{"bytes": "268435456"}})
	assert.NilError(t, err)
	assert.NilError(t, p.Validate())
	assert.DeepEqual(t, p.Steps, []plan.Step{{Name: "bandwidth", Procs: 3, ProcsPerNode: 1,
		Argv: []string{"python3", "-c", workloads.TorchBench, "--tests", "hbm", "--gpus", "all", "--bytes", "268435456"}}})
	for _, c := range []struct {
		test   string
		params map[string]string
		want   string
	}{
		{"copy", nil, "unknown test hbm.copy"},
		{"bandwidth", map[string]string{"bytes": "1G"}, `parameter bytes: "1G"`},
		{"bandwidth", map[string]string{"op": "copy"}, `unknown parameter "op"`},
	} {
		_, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: c.test, Topology: topo(1, 1), Params: c.params})
		assert.ErrorContains(t, err, c.want)
	}
}

func TestParse(t *testing.T) {
	p := parse(t, topo(1, 1), rec+"default.jsonl")
	assert.Equal(t, p.Error, "")
	assert.DeepEqual(t, failed(p), []string(nil))
	assert.DeepEqual(t, p.Metrics, []result.Metric{
		{Name: "bw", Value: 4200.315823345812, Unit: "GB/s", Size: 1 << 30, Labels: map[string]string{"op": "copy", "gpu": "0"}},
		{Name: "bw", Value: 4382.839257313731, Unit: "GB/s", Size: 1 << 30, Labels: map[string]string{"op": "triad", "gpu": "0"}},
	})
	assert.Equal(t, p.Info["gpu"], "NVIDIA H200")

	for _, c := range []struct {
		name string
		src  string
		tp   plan.Topology
		edit func(string) string
		want []string
		err  string
	}{
		{"triad's line removed", rec + "default.jsonl", topo(1, 1), func(s string) string {
			return strings.Replace(s, s[strings.Index(s, `{"bytes": 1073741824, "gbps": 4382`):strings.Index(s, `{"bytes": 1073741824, "gbps": 55.49`)], "", 1)
		}, []string{"hbm results host unknown: host unknown: GPU 0: no triad (every GPU 0..0 must have each of: copy, triad)"}, ""},
		{"two GPUs per node", rec + "default.jsonl", topo(1, 2), func(s string) string { return s + "\n" }, []string{
			"hbm results host unknown: host unknown: GPU 1: no result (every GPU 0..1 must have each of: copy, triad)",
			"GPUs seen host unknown: host unknown: torch sees 1 GPU(s), the topology has 2 per node (line 1)",
		}, ""},
		{"the host test's output", rec + "host-256M.jsonl", topo(1, 1), func(s string) string { return s + "\n" }, []string{
			"hbm results: no hbm result from any node (1x1 expected 1 nodes x 1 GPUs): nothing was measured",
		}, "no hbm record in host-256M.jsonl: not torchbench.py --tests hbm output"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, c.tp, edited(t, c.src, c.edit))
			assert.DeepEqual(t, failed(p), c.want)
			assert.Equal(t, p.Error, c.err)
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, n := range []string{"default.jsonl", "no-gpu.jsonl", "host-256M.jsonl"} {
		data, err := os.ReadFile(rec + n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.log")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "bandwidth", Topology: topo(2, 2), Outputs: []plan.Output{{Step: "bandwidth", Log: path}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range p.Metrics {
			if !(m.Value > 0) {
				t.Fatalf("metric %+v", m)
			}
		}
	})
}

// gpuaccept check hands a lone X.json as a Files entry of an output with
// no Log: the script's JSON lines under that name are read like a log.
func TestParseReadsFiles(t *testing.T) {
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "bandwidth", Topology: topo(1, 1),
		Outputs: []plan.Output{{Step: "check", Files: map[string]string{"default.json": rec + "default.jsonl"}}}})
	assert.NilError(t, err)
	want := parse(t, topo(1, 1), rec+"default.jsonl")
	assert.Equal(t, p.Error, "")
	assert.Assert(t, len(p.Metrics) == 2, "%+v", p.Metrics)
	assert.DeepEqual(t, p.Metrics, want.Metrics)
}
