package gemm

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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

func parse(t *testing.T, step string, tp plan.Topology, logs ...string) result.Parsed {
	t.Helper()
	var outs []plan.Output
	for _, l := range logs {
		outs = append(outs, plan.Output{Step: step, Log: l})
	}
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "matmul", Topology: tp, Outputs: outs})
	assert.NilError(t, err)
	return p
}

// edited writes a copy of src changed by edit (which must change it).
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

func metrics(p result.Parsed) []string {
	var out []string
	for _, m := range p.Metrics {
		var ls []string
		for k, v := range m.Labels {
			ls = append(ls, k+"="+v)
		}
		sort.Strings(ls)
		out = append(out, strings.Join(ls, ",")+" "+strconvG(m.Value)+" "+m.Unit)
	}
	return out
}

func failed(p result.Parsed) []string {
	var out []string
	for _, c := range p.Checks {
		if !c.OK {
			w := "fail"
			if c.Warn {
				w = "warn"
			}
			out = append(out, w+" "+c.Name+" ["+c.Host+"]: "+c.Message)
		}
	}
	return out
}

func TestPlan(t *testing.T) {
	p, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "matmul", Topology: topo(2, 8),
		Params: map[string]string{"dtypes": "bf16,fp8", "size": "16384", "env.HIP_FORCE_DEV_KERNARG": "1"}})
	assert.NilError(t, err)
	assert.NilError(t, p.Validate())
	assert.Equal(t, len(p.Steps), 2)
	want := []string{"python3", "-c", workloads.TorchBench, "--tests", "gemm", "--gpus", "all", "--dtypes", "bf16,fp8", "--size", "16384"}
	assert.DeepEqual(t, p.Steps[0].Argv, want)
	assert.DeepEqual(t, p.Steps[1].Argv, append(want, "--concurrent"))
	for _, s := range p.Steps {
		assert.Equal(t, s.Procs, 2)
		assert.Equal(t, s.ProcsPerNode, 1)
		assert.Equal(t, s.MPI, false)
		assert.DeepEqual(t, s.Env, map[string]string{"HIP_FORCE_DEV_KERNARG": "1"})
	}
	assert.Equal(t, p.Steps[1].Name, "concurrent")

	// One GPU per node: nothing runs concurrently.
	p, err = Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "matmul", Topology: topo(1, 1), Params: map[string]string{"script": "/opt/tb.py", "python": "python3.12"}})
	assert.NilError(t, err)
	assert.Equal(t, len(p.Steps), 1)
	assert.DeepEqual(t, p.Steps[0].Argv, []string{"python3.12", "/opt/tb.py", "--tests", "gemm", "--gpus", "all", "--dtypes", DefaultDTypes})

	for _, c := range []struct {
		test   string
		params map[string]string
		want   string
	}{
		{"gemm", nil, "unknown test gemm.gemm"},
		{"matmul", map[string]string{"dtypes": "bf16,fp64"}, `parameter dtypes: "fp64" is not one of`},
		{"matmul", map[string]string{"size": "0"}, "parameter size"},
		{"matmul", map[string]string{"python": ""}, "parameter python: empty"},
		{"matmul", map[string]string{"m": "1"}, `unknown parameter "m"`},
	} {
		_, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: c.test, Topology: topo(1, 8), Params: c.params})
		assert.ErrorContains(t, err, c.want)
	}
}

// The H200's real outputs, as gpuaccept check hands them (step "check").
func TestParseRecordings(t *testing.T) {
	p := parse(t, "check", topo(1, 1), rec+"default.jsonl")
	assert.Equal(t, p.Error, "")
	assert.DeepEqual(t, failed(p), []string(nil))
	assert.DeepEqual(t, metrics(p), []string{
		"dtype=bf16,gpu=0,mode=alone 740.9970788760238 TFLOPS",
		"dtype=fp16,gpu=0,mode=alone 713.1748965726075 TFLOPS",
		"dtype=fp8,gpu=0,mode=alone 1403.1220808167266 TFLOPS",
		"dtype=tf32,gpu=0,mode=alone 364.6789601450582 TFLOPS",
		"dtype=fp32,gpu=0,mode=alone 51.10483319915416 TFLOPS",
	})
	assert.DeepEqual(t, p.Info, map[string]string{"gpu": "NVIDIA H200", "torchversion": "2.11.0+cu130", "cudaversion": "13.0", "gpus": "1"})

	p = parse(t, "check", topo(1, 1), rec+"gemm-16384.jsonl")
	assert.DeepEqual(t, metrics(p), []string{
		"dtype=bf16,gpu=0,mode=alone 701.0277807140676 TFLOPS",
		"dtype=fp8,gpu=0,mode=alone 1285.7928998732375 TFLOPS",
	})
	assert.DeepEqual(t, failed(p), []string(nil))

	p = parse(t, "check", topo(1, 1), rec+"no-gpu.jsonl")
	// CUDA_VISIBLE_DEVICES= on the H200: torch reaches no GPU, a setup
	// error (exit 3), never a failed GPU.
	assert.Equal(t, p.Error, "no gemm result; no-gpu.jsonl: the tool could not run (setup, not hardware): line 1: torch sees no GPU (torch.cuda.is_available() is False)")
	assert.DeepEqual(t, failed(p), []string{
		"warn gemm results []: no gemm result from any node (1x1 expected 1 nodes x 1 GPUs): nothing was measured; the tool could not run (setup, not hardware): line 1: torch sees no GPU (torch.cuda.is_available() is False)",
		"warn torchbench errors host unknown []: no-gpu.jsonl:1: torch sees no GPU (torch.cuda.is_available() is False)",
	})
}

// Degraded copies of the H200's default.jsonl: each edit must fail (or
// warn on) the check it names.
func TestDegraded(t *testing.T) {
	src := rec + "default.jsonl"
	lines := func(s string) []string { return strings.SplitAfter(s, "\n") }
	for _, c := range []struct {
		name string
		step string
		tp   plan.Topology
		edit func(string) string
		want []string
	}{
		{"a dtype's line removed from a planned run", "alone", topo(1, 1), func(s string) string {
			l := lines(s)
			return strings.Join(append(l[:1:1], l[2:]...), "")
		}, []string{"fail gemm results host unknown []: host unknown: GPU 0: no bf16 alone (every GPU 0..0 must have each of: bf16 alone, fp16 alone, fp8 alone, tf32 alone, fp32 alone)"}},
		{"the node's lines named by host (the new field), and an error line", "check", topo(1, 1), func(s string) string {
			s = strings.ReplaceAll(s, `{"`, `{"host": "gpu-node-7", "`)
			return s + `{"host": "gpu-node-7", "kind": "error", "message": "GPU 0: gemm fp8 did not finish"}` + "\n"
		}, []string{`warn torchbench errors host gpu-node-7 [gpu-node-7]: default.jsonl:11: GPU 0: gemm fp8 did not finish`}},
		{"two GPUs per node, the output has one", "check", topo(1, 2), func(s string) string { return s + "\n" }, []string{
			"fail gemm results host unknown []: host unknown: GPU 1: no result (every GPU 0..1 must have each of: bf16 alone, fp16 alone, fp32 alone, fp8 alone, tf32 alone)",
			"fail GPUs seen host unknown []: host unknown: torch sees 1 GPU(s), the topology has 2 per node (line 1)",
		}},
		{"two nodes, one reported", "check", topo(2, 1), func(s string) string { return s + "\n" }, []string{
			"fail node count []: 1 node(s) reported (host unknown), the topology has 2",
		}},
		{"fp8 skipped (the script's line for a GPU without fp8 matmul)", "check", topo(1, 1), func(s string) string {
			l := lines(s)
			l[3] = `{"dtype": "fp8", "gpu": 0, "kind": "gemm", "skipped": "no fp8 matmul on this GPU or torch"}` + "\n"
			return strings.Join(l, "")
		}, []string{"warn dtype fp8 skipped []: fp8 not measured: host unknown GPU 0: no fp8 matmul on this GPU or torch"}},
		{"another GPU model on the node (GPU 1's lines as an H100)", "check", topo(1, 2), func(s string) string {
			l := lines(s)
			l[0] = strings.Replace(strings.Replace(l[0], `"gpus": 1`, `"gpus": 2`, 1), `["NVIDIA H200"]`, `["NVIDIA H200", "NVIDIA H100 80GB HBM3"]`, 1)
			for _, x := range l[1:6] {
				l = append(l, strings.Replace(strings.Replace(x, `"gpu": 0`, `"gpu": 1`, 1), "NVIDIA H200", "NVIDIA H100 80GB HBM3", 1))
			}
			return strings.Join(l, "")
		}, []string{`fail GPU model uniform []: most GPUs are "NVIDIA H200", but "NVIDIA H100 80GB HBM3" on GPU 1`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, c.step, c.tp, edited(t, src, c.edit))
			assert.DeepEqual(t, failed(p), c.want)
		})
	}
}

// A planned run of two GPUs: alone and concurrent steps; GPU 1's
// concurrent bf16 line removed fails, naming it.
func TestConcurrentStep(t *testing.T) {
	two := func(s string) string {
		l := strings.SplitAfter(s, "\n")
		l[0] = strings.Replace(strings.Replace(l[0], `"gpus": 1`, `"gpus": 2`, 1), `["NVIDIA H200"]`, `["NVIDIA H200", "NVIDIA H200"]`, 1)
		var out []string
		out = append(out, l[0])
		for _, x := range l[1:6] {
			out = append(out, x, strings.Replace(x, `"gpu": 0`, `"gpu": 1`, 1))
		}
		return strings.Join(out, "")
	}
	alone := edited(t, rec+"default.jsonl", two)
	conc := edited(t, rec+"default.jsonl", func(s string) string {
		s = two(s)
		s = strings.ReplaceAll(s, `"kind": "gemm"`, `"concurrent": true, "kind": "gemm"`)
		l := strings.SplitAfter(s, "\n")
		return strings.Join(append(l[:2:2], l[3:]...), "") // GPU 1's bf16
	})
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "matmul", Topology: topo(1, 2),
		Outputs: []plan.Output{{Step: "alone", Log: alone}, {Step: "concurrent", Log: conc}}})
	assert.NilError(t, err)
	assert.Equal(t, p.Error, "")
	assert.DeepEqual(t, failed(p), []string{"fail gemm results host unknown []: host unknown: GPU 1: no bf16 concurrent (every GPU 0..1 must have each of: bf16 alone, fp16 alone, fp8 alone, tf32 alone, fp32 alone, bf16 concurrent, fp16 concurrent, fp8 concurrent, tf32 concurrent, fp32 concurrent)"})
	assert.Equal(t, len(p.Metrics), 19)
	assert.Equal(t, p.Metrics[10].Labels["mode"], "concurrent")
}

func TestParseTools(t *testing.T) {
	for _, c := range []struct {
		file    string
		tp      plan.Topology
		metrics []string
		failed  []string
		diags   int
		gpu     string
	}{
		{"hipblaslt-issue251-radeonvii-f32.txt", topo(1, 1), []string{"dtype=fp32,gpu=0,mode=alone 2727.63 TFLOPS"}, nil, 0, "AMD Radeon VII"},
		{"hipblaslt-pr1544-f16-efficiency.txt", topo(1, 1), []string{"dtype=fp16,gpu=0,mode=alone 555.009 TFLOPS"}, nil, 0, ""},
		{"hipblaslt-rocmlibs-pr3066-f16-gfx942.txt", topo(1, 1), []string{
			"dtype=fp16,gpu=0,mode=alone 38.9641 TFLOPS", "dtype=fp16,gpu=0,mode=alone 9.43182 TFLOPS", "dtype=fp16,gpu=0,mode=alone 0.0145966 TFLOPS",
		}, nil, 1, ""},
		{"rocblas-mi300x-guide-fp32.txt", topo(1, 1), []string{"dtype=unknown,gpu=0,mode=alone 97.1906 TFLOPS"}, nil, 0, ""},
		{"rvs-gst-mi300x-guide-single.txt", topo(1, 1), []string{"dtype=fp8,gpu=28851,mode=alone 1687.129 TFLOPS"}, nil, 0, ""},
		{"rvs-gst-mi300x-guide-ext.txt", topo(1, 8), []string{"dtype=fp8,gpu=28851,mode=alone 1238.206 TFLOPS"},
			[]string{"fail GPUs measured rvs gst []: rvs gst measured 1 GPU(s), the topology has 8 per node"}, 0, ""},
	} {
		t.Run(c.file, func(t *testing.T) {
			p := parse(t, "check", c.tp, "testdata/"+c.file)
			assert.Equal(t, p.Error, "")
			assert.DeepEqual(t, metrics(p), c.metrics)
			assert.DeepEqual(t, failed(p), c.failed)
			assert.Equal(t, len(p.Diagnostics), c.diags, "%+v", p.Diagnostics)
			assert.Equal(t, p.Info["gpu"], c.gpu)
		})
	}
	p := parse(t, "check", topo(1, 1), "testdata/hipblaslt-rocmlibs-pr3066-f16-gfx942.txt")
	assert.Equal(t, p.Diagnostics[0].Message, "hipblaslt-rocmlibs-pr3066-f16-gfx942.txt:6: 11 fields, the header (hipblaslt-bench) has 44: cut short or not a result row")
}

func TestParseToolsDegraded(t *testing.T) {
	// RVS's own verdict: the target not met fails.
	p := parse(t, "check", topo(1, 1), edited(t, "testdata/rvs-gst-mi300x-guide-single.txt", func(s string) string {
		return strings.Replace(s, "GFLOPS 1687129 Target GFLOPS: 1215000 met: TRUE", "GFLOPS 1187129 Target GFLOPS: 1215000 met: FALSE", 1)
	}))
	assert.DeepEqual(t, failed(p), []string{"fail rvs gst target []: RVS gst says met: FALSE: GPU 28851 fp8 1187.1 TFLOPS below its target 1215.0 (line 8)"})
	// Cut before the verdict line.
	p = parse(t, "check", topo(1, 1), edited(t, "testdata/rvs-gst-mi300x-guide-single.txt", func(s string) string {
		return s[:strings.Index(s, "...")]
	}))
	assert.DeepEqual(t, metrics(p), []string{"dtype=fp8,gpu=28851,mode=alone 1640.057 TFLOPS"})
	assert.Equal(t, len(failed(p)), 1)
	assert.Assert(t, strings.HasPrefix(failed(p)[0], "warn rvs gst verdict"), failed(p)[0])
	// hipBLASLt issue 1786's inf (iters 0): the row is no measurement.
	p = parse(t, "check", topo(1, 1), edited(t, "testdata/hipblaslt-pr1544-f16-efficiency.txt", func(s string) string {
		return strings.Replace(s, "555009,81.3366,248.176,2361.71", "inf,81.3366,inf,0", 1)
	}))
	assert.Assert(t, strings.Contains(p.Error, "no gemm result in the output"), p.Error)
	assert.Equal(t, p.Diagnostics[0].Message, `hipblaslt-pr1544-f16-efficiency.txt:2: GFLOPS "inf" is not a positive finite number`)
}

func FuzzParse(f *testing.F) {
	for _, p := range []string{rec + "default.jsonl", rec + "no-gpu.jsonl", "testdata/hipblaslt-issue251-radeonvii-f32.txt",
		"testdata/hipblaslt-rocmlibs-pr3066-f16-gfx942.txt", "testdata/rocblas-mi300x-guide-fp32.txt", "testdata/rvs-gst-mi300x-guide-single.txt"} {
		data, err := os.ReadFile(p)
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
		for _, step := range []string{"check", "alone"} {
			p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "matmul", Topology: topo(2, 2),
				Outputs: []plan.Output{{Step: step, Log: path}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range p.Metrics {
				if !(m.Value > 0) {
					t.Fatalf("metric %+v", m)
				}
			}
		}
	})
}

func strconvG(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// gpuaccept check hands a lone X.json as a Files entry of an output with
// no Log: a hipblaslt-bench CSV saved under that name is read like a log.
func TestParseReadsFiles(t *testing.T) {
	const src = "testdata/hipblaslt-pr1544-f16-efficiency.txt"
	path := filepath.Join(t.TempDir(), "hipblaslt.json")
	data, err := os.ReadFile(src)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(path, data, 0o644))
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "matmul", Topology: topo(1, 1),
		Outputs: []plan.Output{{Step: "check", Files: map[string]string{"hipblaslt.json": path}}}})
	assert.NilError(t, err)
	want := parse(t, "check", topo(1, 1), src)
	assert.Equal(t, p.Error, want.Error)
	assert.DeepEqual(t, metrics(p), metrics(want))
	assert.Assert(t, len(p.Metrics) == 1, "%v", metrics(p))
}
