package workload

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// field holds the real serving-benchmark outputs of the field corpus
// (each folder's case.yaml names its source).
const field = "../../testdata/field/workload/"

var (
	docsLog   = field + "vllm-docs-hermes3-8b-sharegpt/bench-serve.log"
	prLog     = field + "vllm-pr18566-llama31-8b-sharegpt-hf/bench-serve.log"
	h200Log   = field + "vllm-issue12568-h200x8-deepseek-r1-v1/bench-serve.log"
	sglangLog = field + "sglang-pr9812-vllm-chat-multimodal/bench-serving.log"
	twoRuns   = field + "vllm-fork-two-runs-one-log/pp_local_test_res.sh.log"
)

// vllm declares what testdata/field/skus/inference-site.yaml declares:
// the figures of vLLM's Serving Benchmark Result block.
var vllm = []*sku.DeclaredMetric{
	{Name: "request_throughput", Pattern: `Request throughput \(req/s\):\s+(\S+)`, Unit: "req/s", Better: result.BetterHigher},
	{Name: "output_tokens_per_s", Pattern: `Output token throughput \(tok/s\):\s+(\S+)`, Unit: "tok/s", Better: result.BetterHigher},
	{Name: "total_tokens_per_s", Pattern: `Total Token throughput \(tok/s\):\s+(\S+)`, Unit: "tok/s", Better: result.BetterHigher},
	{Name: "mean_ttft", Pattern: `Mean TTFT \(ms\):\s+(\S+)`, Unit: "ms", Better: result.BetterLower},
}

func declared(ds ...*sku.DeclaredMetric) string { return sku.EncodeDeclared(ds) }

func topo(nodes, gpus int) plan.Topology {
	return plan.Topology{Scope: plan.Scope{Nodes: nodes, GPUsPerNode: gpus}}
}

func parse(t *testing.T, ds []*sku.DeclaredMetric, outs ...plan.Output) result.Parsed {
	t.Helper()
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: TestName, Params: map[string]string{sku.DeclaredParam: declared(ds...)}, Topology: topo(1, 8), Outputs: outs})
	assert.NilError(t, err)
	return p
}

func values(p result.Parsed) map[string]float64 {
	out := map[string]float64{}
	for _, m := range p.Metrics {
		out[pointName(m)] = m.Value
	}
	return out
}

func TestPlan(t *testing.T) {
	p, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: TestName, Topology: topo(2, 8),
		Params: map[string]string{"command": "vllm bench serve --model m", sku.DeclaredParam: declared(vllm...), "env.HF_HOME": "/data/hf"}})
	assert.NilError(t, err)
	assert.NilError(t, p.Validate())
	assert.DeepEqual(t, p.Steps, []plan.Step{{Name: StepName, Argv: []string{"/bin/sh", "-c", "vllm bench serve --model m"},
		Env: map[string]string{"HF_HOME": "/data/hf"}, Procs: 1, ProcsPerNode: 1}})
	for _, c := range []struct {
		name   string
		test   string
		params map[string]string
		topo   plan.Topology
		want   string
	}{
		{"no command", TestName, map[string]string{sku.DeclaredParam: declared(vllm...)}, topo(1, 1), "parameter command: not given"},
		{"blank command", TestName, map[string]string{"command": "  ", sku.DeclaredParam: declared(vllm...)}, topo(1, 1), "parameter command: empty"},
		{"nothing declared", TestName, map[string]string{"command": "true"}, topo(1, 1), "no metrics declared"},
		{"declarations not JSON", TestName, map[string]string{"command": "true", sku.DeclaredParam: "request_throughput req/s"}, topo(1, 1), "parameter metrics: not a JSON list"},
		{"a pattern without its value group", TestName, map[string]string{"command": "true", sku.DeclaredParam: `[{"name":"rps","pattern":"Request throughput","unit":"req/s","better":"higher"}]`}, topo(1, 1), "0 unnamed capture groups"},
		{"unknown parameter", TestName, map[string]string{"command": "true", "shell": "bash"}, topo(1, 1), `"shell"`},
		{"unknown test", "run", map[string]string{"command": "true"}, topo(1, 1), "unknown test workload.run (known: workload.command)"},
		{"no node", TestName, map[string]string{"command": "true", sku.DeclaredParam: declared(vllm...)}, topo(0, 1), "topology"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: c.test, Params: c.params, Topology: c.topo})
			assert.ErrorContains(t, err, c.want)
		})
	}
}

// fio's etcd fdatasync check, as testdata/field/skus/storage-site.yaml
// declares it: MB/s and usec, the units fio printed for the healthy pool.
var fio = []*sku.DeclaredMetric{
	{Name: "write_mb_s", Pattern: `WRITE: bw=\S+ \(([0-9.]+)MB/s\)`, Unit: "MB/s", Better: result.BetterHigher},
	{Name: "fdatasync_mean_us", Pattern: `^\s+sync \(usec\): min=\S+ max=\S+ avg=\s*([0-9.]+),`, Unit: "us", Better: result.BetterLower},
}

// fio prints its units as the figures go: the same check on the pool
// without its SLOG prints kB/s and msec, which the patterns do not read.
func TestParseFioUnits(t *testing.T) {
	for _, c := range []struct {
		log   string
		want  map[string]float64
		error string
	}{
		{field + "fio-etcd-zfs-optane-slog/fio.log", map[string]float64{"write_mb_s": 19.7, "fdatasync_mean_us": 192.48}, ""},
		{field + "fio-etcd-sata-ssd-raw/fio.log", map[string]float64{"write_mb_s": 11.6, "fdatasync_mean_us": 346.60}, ""},
		{field + "fio-etcd-zfs-without-slog/fio.log", map[string]float64{},
			`metric write_mb_s: pattern "WRITE: bw=\\S+ \\(([0-9.]+)MB/s\\)" matched no line of fio.log (the tool printed another format or unit, or stopped before its summary); metric fdatasync_mean_us: pattern`},
	} {
		t.Run(filepath.Base(filepath.Dir(c.log)), func(t *testing.T) {
			p := parse(t, fio, plan.Output{Step: StepName, Log: c.log})
			assert.DeepEqual(t, values(p), c.want)
			assert.Assert(t, strings.HasPrefix(p.Error, c.error), "error %q", p.Error)
			if c.error == "" {
				assert.Equal(t, p.Error, "")
			}
		})
	}
}

// The real outputs, read by the declarations of the field SKU: every
// figure as printed (trailing blanks, "# " comment marks, a progress bar
// before the block), and the gates where the output is not one
// measurement of what was declared.
func TestParseRealOutputs(t *testing.T) {
	for _, c := range []struct {
		name  string
		log   string
		want  map[string]float64
		error []string
	}{
		{"vLLM docs", docsLog, map[string]float64{"request_throughput": 1.73, "output_tokens_per_s": 382.89, "total_tokens_per_s": 619.85, "mean_ttft": 71.54}, nil},
		{"padded with blanks, after the command lines", prLog, map[string]float64{"request_throughput": 32.42, "output_tokens_per_s": 6582.87, "total_tokens_per_s": 14029.44, "mean_ttft": 9626.13}, nil},
		{"after a progress bar", h200Log, map[string]float64{"request_throughput": 2.11, "output_tokens_per_s": 252.42, "total_tokens_per_s": 2414.51, "mean_ttft": 100636.33}, nil},
		{"SGLang's summary", sglangLog, map[string]float64{"request_throughput": 17.53, "output_tokens_per_s": 17.53, "mean_ttft": 25747.35},
			[]string{`metric total_tokens_per_s: pattern "Total Token throughput \\(tok/s\\):\\s+(\\S+)" matched no line of bench-serving.log`}},
		{"two runs in one log", twoRuns, map[string]float64{},
			[]string{"matched more than once with the same labels, so none is judged: request_throughput at pp_local_test_res.sh.log:10, pp_local_test_res.sh.log:36; output_tokens_per_s at pp_local_test_res.sh.log:11, pp_local_test_res.sh.log:37"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, vllm, plan.Output{Step: StepName, Log: c.log})
			assert.DeepEqual(t, values(p), c.want)
			for _, m := range p.Metrics {
				d := vllm[slicesIndex(m.Name)]
				assert.Equal(t, m.Unit, d.Unit, m.Name)
			}
			if c.error == nil {
				assert.Equal(t, p.Error, "")
			}
			for _, e := range c.error {
				assert.Assert(t, strings.Contains(p.Error, e), "error %q lacks %q", p.Error, e)
			}
		})
	}
}

func slicesIndex(name string) int {
	for i, d := range vllm {
		if d.Name == name {
			return i
		}
	}
	return -1
}

// Each number is said with the line it was read from, for a reader to
// hold it against the tool's own words.
func TestParseSaysWhereEachValueCameFrom(t *testing.T) {
	p := parse(t, vllm[:1], plan.Output{Step: StepName, Log: prLog})
	assert.DeepEqual(t, p.Diagnostics, []result.Diagnostic{{Level: result.Info, Source: "bench-serve.log:9",
		Message: `request_throughput 32.42 req/s from "Request throughput (req/s):              32.42     "`}})
}

// Named groups label the points: one metric, one value per label set.
func TestParseLabelsFromNamedGroups(t *testing.T) {
	ttft := &sku.DeclaredMetric{Name: "ttft", Pattern: `^(?P<stat>Mean|Median|P99) TTFT \(ms\):\s+(\S+)`, Unit: "ms", Better: result.BetterLower}
	p := parse(t, []*sku.DeclaredMetric{ttft}, plan.Output{Step: StepName, Log: docsLog})
	assert.Equal(t, p.Error, "")
	assert.DeepEqual(t, values(p), map[string]float64{"ttft{stat=Mean}": 71.54, "ttft{stat=Median}": 73.88, "ttft{stat=P99}": 79.49})
}

// A command that could not start or failed, a value that is no number, a
// file that cannot be read: errors, never a verdict, whatever matched.
func TestParseGates(t *testing.T) {
	concurrency := &sku.DeclaredMetric{Name: "max_concurrency", Pattern: `Max(?:imum)? request concurrency:\s+(\S+)`, Unit: "requests", Better: result.BetterHigher}
	for _, c := range []struct {
		name  string
		ds    []*sku.DeclaredMetric
		out   plan.Output
		want  map[string]float64
		error string
	}{
		{"exited non-zero", vllm[:1], plan.Output{Step: StepName, Log: docsLog, ExitCode: 1},
			map[string]float64{"request_throughput": 1.73}, "step command: the command exited with status 1"},
		{"could not start", vllm[:1], plan.Output{Step: StepName, Log: docsLog, ExitCode: -1, LaunchError: "exec: /bin/sh: not found"},
			map[string]float64{"request_throughput": 1.73}, "step command: exec: /bin/sh: not found"},
		{"None is no number", []*sku.DeclaredMetric{concurrency}, plan.Output{Step: StepName, Log: h200Log},
			map[string]float64{}, `bench-serve.log:3: metric max_concurrency: "None" is not a number (line "Maximum request concurrency: None")`},
		{"not set is no number", []*sku.DeclaredMetric{concurrency}, plan.Output{Step: StepName, Log: sglangLog},
			map[string]float64{}, `bench-serving.log:4: metric max_concurrency: "not" is not a number`},
		{"no such file", vllm[:1], plan.Output{Step: StepName, Log: filepath.Join(t.TempDir(), "command.log")},
			map[string]float64{}, "open command.log:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, c.ds, c.out)
			assert.DeepEqual(t, values(p), c.want)
			assert.Assert(t, strings.Contains(p.Error, c.error), "error %q lacks %q", p.Error, c.error)
		})
	}
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: TestName, Params: map[string]string{sku.DeclaredParam: declared(vllm...)}, Topology: topo(1, 1)})
	assert.NilError(t, err)
	assert.Equal(t, p.Error, pluginapi.NoOutputsError)
	p, err = Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: TestName, Topology: topo(1, 1), Outputs: []plan.Output{{Step: "check", Log: docsLog}}})
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(p.Error, "no metrics declared"), p.Error)
	assert.Equal(t, len(p.Metrics), 0)
}

// gpuaccept check hands a file as an output's files, without a log.
func TestParseReadsFiles(t *testing.T) {
	p := parse(t, vllm, plan.Output{Step: "check", Files: map[string]string{"bench-serve.log": docsLog}})
	assert.Equal(t, p.Error, "")
	assert.Equal(t, values(p)["mean_ttft"], 71.54)
}

// A line of megabytes is read up to maxLine and said so; the lines after
// it are read as ever.
func TestParseOverlongLine(t *testing.T) {
	data, err := os.ReadFile(docsLog)
	assert.NilError(t, err)
	long := "Request throughput (req/s): 9.99 " + strings.Repeat("x", 2*maxLine) + "\n"
	path := filepath.Join(t.TempDir(), "command.log")
	assert.NilError(t, os.WriteFile(path, []byte(long+string(data)), 0o644))
	p := parse(t, vllm, plan.Output{Step: StepName, Log: path})
	assert.Assert(t, strings.Contains(p.Error, "request_throughput at command.log:1, command.log:7"), p.Error)
	assert.Equal(t, values(p)["mean_ttft"], 71.54)
	assert.Equal(t, p.Diagnostics[0].Level, result.Warning)
	assert.Equal(t, p.Diagnostics[0].Source, "command.log:1")
}

// FuzzRead feeds the reader any output and any pattern: it must not
// panic, and every value it gives is a finite number read from a line.
func FuzzRead(f *testing.F) {
	for _, n := range []string{docsLog, prLog, h200Log, sglangLog, twoRuns, field + "fio-etcd-zfs-without-slog/fio.log"} {
		data, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, vllm[0].Pattern)
		f.Add(data, `^(?P<stat>Mean|Median|P99) TTFT \(ms\):\s+(\S+)`)
	}
	f.Add([]byte("a: 1e999\nb: -0x1p3\nc: NaN\r\n"), `^(?P<k>\w+): (.*)$`)
	f.Fuzz(func(t *testing.T, data []byte, pattern string) {
		ds, err := Compile([]*sku.DeclaredMetric{{Name: "m", Pattern: pattern, Unit: "u", Better: result.BetterHigher}})
		if err != nil {
			return
		}
		r, err := Read(strings.NewReader(string(data)), "fuzz.log", ds)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range r.Matches {
			if math.IsNaN(m.Metric.Value) || math.IsInf(m.Metric.Value, 0) || !strings.HasPrefix(m.Source, "fuzz.log:") {
				t.Fatalf("match %+v", m)
			}
		}
		errs, kept := Gates(ds, r.Matches, []string{"fuzz.log"})
		if len(kept) > len(r.Matches) || (len(r.Matches) == 0 && len(errs) == 0) {
			t.Fatalf("gates %v kept %d of %d", errs, len(kept), len(r.Matches))
		}
	})
}
