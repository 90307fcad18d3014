package hostlink

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

func parse(t *testing.T, test string, tp plan.Topology, log string) result.Parsed {
	t.Helper()
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: test, Topology: tp, Outputs: []plan.Output{{Step: "check", Log: log}}})
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
	ctx := context.Background()
	p, err := Plugin{}.Plan(ctx, pluginapi.PlanRequest{Test: "pcie", Topology: topo(2, 8)})
	assert.NilError(t, err)
	assert.DeepEqual(t, p.Steps, []plan.Step{{Name: "pcie", Procs: 2, ProcsPerNode: 1,
		Argv: []string{"python3", "-c", workloads.TorchBench, "--tests", "h2d,d2h", "--gpus", "all"}}})
	p, err = Plugin{}.Plan(ctx, pluginapi.PlanRequest{Test: "p2p", Topology: topo(1, 8), Params: map[string]string{"bytes": "268435456"}})
	assert.NilError(t, err)
	assert.DeepEqual(t, p.Steps[0].Argv, []string{"python3", "-c", workloads.TorchBench, "--tests", "p2p", "--gpus", "all", "--bytes", "268435456"})
	p, err = Plugin{}.Plan(ctx, pluginapi.PlanRequest{Test: "pcie", Topology: topo(4, 8), Params: map[string]string{"tool": "nvbandwidth", "bindir": "/opt/nvbandwidth"}})
	assert.NilError(t, err)
	assert.NilError(t, p.Validate())
	assert.DeepEqual(t, p.Steps, []plan.Step{{Name: "pcie", Procs: 4, ProcsPerNode: 1,
		Argv: []string{"/opt/nvbandwidth/nvbandwidth", "-j", "-t", "host_to_device_memcpy_ce", "-t", "device_to_host_memcpy_ce"}}})
	p, err = Plugin{}.Plan(ctx, pluginapi.PlanRequest{Test: "p2p", Topology: topo(1, 8), Params: map[string]string{"tool": "transferbench"}})
	assert.NilError(t, err)
	assert.DeepEqual(t, p.Steps[0].Argv, []string{"TransferBench", "p2p"})

	for _, c := range []struct {
		test   string
		tp     plan.Topology
		params map[string]string
		want   string
	}{
		{"p2p", topo(1, 1), nil, "hostlink.p2p: topology 1x1: p2p needs 2 GPUs per node or more"},
		{"nvlink", topo(1, 8), nil, "unknown test hostlink.nvlink"},
		{"pcie", topo(1, 8), map[string]string{"tool": "bandwidthTest"}, `parameter tool: "bandwidthTest" is not one of torch, nvbandwidth, transferbench`},
	} {
		_, err := Plugin{}.Plan(ctx, pluginapi.PlanRequest{Test: c.test, Topology: c.tp, Params: c.params})
		assert.ErrorContains(t, err, c.want)
	}
}

func TestParsePCIe(t *testing.T) {
	for _, c := range []struct {
		file     string
		h2d, d2h float64
	}{
		{"default.jsonl", 55.49858181333672, 55.35509679736613},
		{"host-256M.jsonl", 55.491955713257056, 55.351278189511305},
	} {
		p := parse(t, "pcie", topo(1, 1), rec+c.file)
		assert.Equal(t, p.Error, "")
		assert.DeepEqual(t, failed(p), []string(nil))
		assert.DeepEqual(t, p.Metrics, []result.Metric{
			{Name: "bw", Value: c.h2d, Unit: "GB/s", Labels: map[string]string{"direction": "h2d", "gpu": "0"}},
			{Name: "bw", Value: c.d2h, Unit: "GB/s", Labels: map[string]string{"direction": "d2h", "gpu": "0"}},
		})
		assert.Equal(t, p.Info["gpu"], "NVIDIA H200")
	}
	// Degraded: d2h's line removed, and a line from pageable memory.
	p := parse(t, "pcie", topo(1, 1), edited(t, rec+"host-256M.jsonl", func(s string) string {
		l := strings.SplitAfter(s, "\n")
		return l[0] + strings.Replace(l[1], `"pinned": true`, `"pinned": false`, 1)
	}))
	assert.DeepEqual(t, failed(p), []string{
		"pcie results host unknown: host unknown: GPU 0: no d2h (every GPU 0..0 must have each of: h2d, d2h)",
		"pinned host memory: copies from pageable host memory, which measure the CPU's copy and not the link: GPU 0 h2d (line 2)",
	})
	// The gemm run's output is no pcie measurement.
	p = parse(t, "pcie", topo(1, 1), rec+"gemm-16384.jsonl")
	assert.Equal(t, p.Error, "no pcie record in gemm-16384.jsonl: not torchbench.py, nvbandwidth or TransferBench output")
}

// p2p has no real multi-GPU recording yet: the H200's host copy lines are
// edited into the script's p2p lines of a two-GPU node (src/dst instead
// of gpu, kind p2p), as the script prints them.
func TestParseP2P(t *testing.T) {
	toP2P := func(s string) string {
		l := strings.SplitAfter(s, "\n")
		l[0] = strings.Replace(l[0], `"gpus": 1`, `"gpus": 2`, 1)
		l[1] = strings.Replace(strings.Replace(l[1], `"gpu": 0`, `"dst": 1`, 1), `"kind": "h2d", "pinned": true`, `"kind": "p2p", "peer_access": true, "src": 0`, 1)
		l[2] = strings.Replace(strings.Replace(l[2], `"gpu": 0`, `"dst": 0`, 1), `"kind": "d2h", "pinned": true`, `"kind": "p2p", "peer_access": false, "src": 1`, 1)
		return strings.Join(l, "")
	}
	p := parse(t, "p2p", topo(1, 2), edited(t, rec+"host-256M.jsonl", toP2P))
	assert.Equal(t, p.Error, "")
	assert.DeepEqual(t, p.Metrics, []result.Metric{
		{Name: "bw", Value: 55.491955713257056, Unit: "GB/s", Labels: map[string]string{"src": "0", "dst": "1"}},
		{Name: "bw", Value: 55.351278189511305, Unit: "GB/s", Labels: map[string]string{"src": "1", "dst": "0"}},
	})
	assert.DeepEqual(t, failed(p), []string{"peer access: torch reports no peer access, so these copies went through host memory: GPU 1→0"})

	p = parse(t, "p2p", topo(1, 2), edited(t, rec+"host-256M.jsonl", func(s string) string {
		l := strings.SplitAfter(toP2P(s), "\n")
		return l[0] + l[1]
	}))
	assert.DeepEqual(t, failed(p), []string{"p2p results host unknown: host unknown: GPU 1: no to GPU 0 (every GPU 0..1 must have each of: to GPU 0, to GPU 1)"})
}

func FuzzParse(f *testing.F) {
	for _, n := range []string{"default.jsonl", "no-gpu.jsonl", "host-256M.jsonl"} {
		data, err := os.ReadFile(rec + n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"gbps": 55.4, "gpu": 0, "kind": "h2d", "pinned": true, "placement": {"buffer_nodes": {"1": -3, "0": 3}, "nodes": [{"node": -1}], "numa_node": -7, "link": {"current_speed": "x"}}}` + "\n" +
		`{"gbps": 55.4, "gpu": 0, "kind": "d2h", "pinned": true, "placement": {"buffer_nodes": {}, "iommu": "on"}}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.log")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, test := range []string{"pcie", "p2p"} {
			p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: test, Topology: topo(1, 2), Outputs: []plan.Output{{Step: test, Log: path}}})
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

// One output of nvbandwidth or TransferBench holds host links, GPU pairs
// and a GPU's copies within its own memory: each test keeps its own kind
// only (pcie: h2d and d2h; p2p: pairs), never "local" or CPU-to-CPU.
func TestToolOutputsSplitByTest(t *testing.T) {
	cases := []struct {
		test, file string
		topo       plan.Topology
	}{
		{"pcie", "testdata/nvbandwidth/dcgm-1gpu-verbose-v0.5.json", topo(1, 1)},
		{"pcie", "testdata/transferbench/mi350x-8gpu-p2p-v1.62.txt", topo(1, 8)},
		{"p2p", "testdata/transferbench/mi350x-8gpu-p2p-v1.62.txt", topo(1, 8)},
		{"p2p", "testdata/nvbandwidth/azure-nhc-h100x8-d2d-read-ce-v0.4.txt", topo(1, 8)},
	}
	for _, c := range cases {
		t.Run(c.test+"/"+c.file, func(t *testing.T) {
			p := parse(t, c.test, c.topo, c.file)
			assert.Assert(t, len(p.Metrics) > 0, "%s: %s", p.Error, failed(p))
			for _, m := range p.Metrics {
				d := m.Labels["direction"]
				switch c.test {
				case "pcie":
					assert.Assert(t, d == "h2d" || d == "d2h", "%s %v", m.Name, m.Labels)
				case "p2p":
					assert.Assert(t, m.Labels["src"] != "" && m.Labels["dst"] != "" && d == "", "%s %v", m.Name, m.Labels)
				}
			}
		})
	}
}

// gpuaccept check hands a lone X.json as a Files entry of an output with
// no Log (the -J companion of a log not given): it is read like a log,
// and an error names it, not "".
func TestParseReadsFiles(t *testing.T) {
	const js = "testdata/nvbandwidth/dcgm-1gpu-verbose-v0.5.json"
	files := func(path string) []plan.Output {
		return []plan.Output{{Step: "check", Files: map[string]string{filepath.Base(path): path}}}
	}
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "pcie", Topology: topo(1, 1), Outputs: files(js)})
	assert.NilError(t, err)
	assert.Equal(t, p.Error, "")
	assert.Equal(t, metricAt(t, p, metricBW, "testcase", "host_to_device_memcpy_ce", "direction", "h2d"), 12.3964)
	assert.DeepEqual(t, failed(p), []string(nil))

	// The same through the parser alone, to be sure Files gave all of it.
	want, err := parseNvbandwidth(js)
	assert.NilError(t, err)
	n := 0
	for _, m := range want.Metrics {
		if metricTest(m) == "pcie" {
			n++
		}
	}
	assert.Equal(t, len(p.Metrics), n)

	p, err = Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "pcie", Topology: topo(1, 1), Outputs: files(rec + "gemm-16384.jsonl")})
	assert.NilError(t, err)
	assert.Equal(t, p.Error, "no pcie record in gemm-16384.jsonl: not torchbench.py, nvbandwidth or TransferBench output")
}

// Each test keeps its own checks of a tool's output: a GPU pair without
// a path is p2p's failure, not pcie's, and a file with no metric of the
// test says what it holds and which test it is for.
func TestToolChecksSplitByTest(t *testing.T) {
	const (
		nvbNA = "testdata/nvbandwidth/degraded-azure-h100x8-na-3-5.txt"
		tbNA  = "testdata/transferbench/degraded-mi350x-na-7-1.txt"
		nvbJS = "testdata/nvbandwidth/degraded-dcgm-1gpu-na-and-error.json"
	)
	for _, c := range []struct {
		test, file string
		gpus       int
		err        string
		failed     []string // check names
	}{
		{"pcie", nvbNA, 8, "degraded-azure-h100x8-na-3-5.txt: no host-to-device or device-to-host measurement (it holds GPU-to-GPU copies: --test hostlink.p2p)", nil},
		{"p2p", nvbNA, 8, "", []string{"p2p paths device_to_device_memcpy_read_ce"}},
		{"pcie", tbNA, 8, "", nil},
		{"p2p", tbNA, 8, "", []string{"p2p paths unidirectional"}},
		// host_to_device's N/A cell and device_to_host's Error are pcie's;
		// the one-GPU file has no GPU pair.
		{"pcie", nvbJS, 1, "", []string{"host link host_to_device_memcpy_ce", "testcase device_to_host_memcpy_ce"}},
		{"p2p", nvbJS, 2, "degraded-dcgm-1gpu-na-and-error.json: no GPU-to-GPU measurement (it holds host-to-device or device-to-host copies: --test hostlink.pcie)", nil},
	} {
		t.Run(c.test+"/"+filepath.Base(c.file), func(t *testing.T) {
			p := parse(t, c.test, topo(1, c.gpus), c.file)
			assert.Equal(t, p.Error, c.err)
			var names []string
			for _, ck := range p.Checks {
				if !ck.OK {
					names = append(names, ck.Name)
				}
			}
			assert.DeepEqual(t, names, c.failed)
		})
	}
}

func TestCheckTest(t *testing.T) {
	for name, want := range map[string]string{
		"p2p paths device_to_device_memcpy_read_ce read1":    "p2p",
		"p2p paths unidirectional":                           "p2p",
		"host link host_to_device_memcpy_ce":                 "pcie",
		"testcase device_to_host_memcpy_ce":                  "pcie",
		"testcase host_device_latency_sm":                    "pcie",
		"testcase all_to_host_memcpy_sm":                     "pcie",
		"testcase device_to_device_latency_sm":               "p2p",
		"testcase multinode_device_to_device_memcpy_read_ce": "p2p",
		"testcase one_to_all_write_ce":                       "p2p",
		"testcase device_local_copy":                         "",
		"testcase ?":                                         "",
		"data verification device_to_device_memcpy_write_ce": "p2p",
		"data verification":                                  "",
	} {
		assert.Equal(t, checkTest(name), want, name)
	}
}

// An nvbandwidth or TransferBench output is held to the scope's GPUs per
// node, as torchbench's records are: the 1-GPU DCGM nvbandwidth output
// passes a 1-GPU scope and fails an 8-GPU one; a scope of several nodes
// warns that these tools name no node.
func TestToolOutputsHeldToTheScope(t *testing.T) {
	const one = "testdata/nvbandwidth/dcgm-1gpu-verbose-v0.5.json"
	count := func(p result.Parsed) result.Check {
		for _, c := range p.Checks {
			if c.Name == "GPU count" {
				return c
			}
		}
		return result.Check{}
	}
	assert.Assert(t, count(parse(t, "pcie", topo(1, 1), one)).OK)
	c := count(parse(t, "pcie", topo(1, 8), one))
	assert.Assert(t, !c.OK && !c.Warn, "%+v", c)
	assert.Equal(t, c.Message, "the output measured 1 GPU (0), the scope has 8 per node")
	p := parse(t, "p2p", topo(4, 8), "testdata/transferbench/mi350x-8gpu-p2p-v1.62.txt")
	assert.Assert(t, count(p).OK, "%+v", count(p))
	var node result.Check
	for _, ch := range p.Checks {
		if ch.Name == "node count" {
			node = ch
		}
	}
	assert.Assert(t, node.Warn && strings.Contains(node.Message, "not verifiable"), "%+v", node)
}
