package torchbench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/workloads"
	"gotest.tools/v3/assert"
)

// rec is the folder of the script's real outputs on one H200
// (testdata/recordings/h200x1-2026-12-01/README.md, "torchbench/").
const rec = "../../../testdata/recordings/h200x1-2026-12-01/torchbench/"

func parseFile(t *testing.T, path string) Output {
	t.Helper()
	f, err := os.Open(path)
	assert.NilError(t, err)
	defer f.Close()
	o, err := Parse(f, filepath.Base(path))
	assert.NilError(t, err)
	return o
}

func TestStep(t *testing.T) {
	s := Step(StepOptions{Name: "alone", Tests: []string{"gemm"}, Args: []string{"--dtypes", "bf16"}, Nodes: 4})
	assert.DeepEqual(t, s.Argv, []string{"python3", "-c", workloads.TorchBench, "--tests", "gemm", "--gpus", "all", "--dtypes", "bf16"})
	assert.Equal(t, s.Procs, 4)
	assert.Equal(t, s.ProcsPerNode, 1)
	assert.Equal(t, s.MPI, false)
	assert.NilError(t, plan.Plan{Steps: []plan.Step{s}}.Validate())
	assert.Assert(t, strings.Contains(workloads.TorchBench, `"host"`), "the embedded script names its node")

	s = Step(StepOptions{Name: "pcie", Python: "/opt/venv/bin/python", Script: "/opt/torchbench.py", Tests: []string{"h2d", "d2h"}, Env: map[string]string{"X": "1"}})
	assert.DeepEqual(t, s.Argv, []string{"/opt/venv/bin/python", "/opt/torchbench.py", "--tests", "h2d,d2h", "--gpus", "all"})
	assert.Equal(t, s.Procs, 1)
	assert.DeepEqual(t, s.Env, map[string]string{"X": "1"})
}

func TestParseRecordings(t *testing.T) {
	o := parseFile(t, rec+"default.jsonl")
	assert.Equal(t, o.Records, 10)
	assert.Equal(t, len(o.Diags), 0)
	assert.DeepEqual(t, o.Infos, []Info{{At: At{Line: 1}, Torch: "2.11.0+cu130", CUDA: "13.0", GPUs: 1, Names: []string{"NVIDIA H200"}}})
	assert.Equal(t, len(o.GEMM), 5)
	g := o.GEMM[0]
	assert.Equal(t, g.DType, "bf16")
	assert.Equal(t, g.Line, 2)
	assert.Equal(t, g.Host, "", "the recording predates the host field")
	assert.Equal(t, g.M, int64(8192))
	assert.Equal(t, g.TFLOPS, 740.9970788760238)
	assert.DeepEqual(t, o.HBM, []HBM{
		{At: At{Line: 7}, Op: "copy", Bytes: 1 << 30, GBps: 4200.315823345812},
		{At: At{Line: 8}, Op: "triad", Bytes: 1 << 30, GBps: 4382.839257313731},
	})
	assert.DeepEqual(t, o.Copies, []Copy{
		{At: At{Line: 9}, Direction: "h2d", Bytes: 1 << 30, Pinned: true, GBps: 55.49858181333672},
		{At: At{Line: 10}, Direction: "d2h", Bytes: 1 << 30, Pinned: true, GBps: 55.35509679736613},
	})
	assert.DeepEqual(t, o.Hosts(), []string{""})

	o = parseFile(t, rec+"no-such-gpu.jsonl")
	assert.DeepEqual(t, o.Errors, []Error{{At: At{Line: 1}, Message: "GPU 3 asked for, torch sees 1"}})
	o = parseFile(t, rec+"no-gpu.jsonl")
	assert.Equal(t, len(o.Errors), 1)
	assert.Equal(t, len(o.Hosts()), 0)
}

// Lines that are no record are diagnostics naming the file and line; the
// records around them are kept.
func TestParseDiagnostics(t *testing.T) {
	data, err := os.ReadFile(rec + "host-256M.jsonl")
	assert.NilError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	// The edits: a warning on stderr, a record cut in the middle, an
	// unknown kind, a gemm record without tflops, a traceback, and
	// mpirun --tag-output before a real line.
	edited := lines[0] +
		"/usr/lib/python3/dist-packages/torch/cuda/__init__.py:61: UserWarning: something\n" +
		lines[1][:40] + "\n" +
		`{"kind": "nvlink", "gpu": 0}` + "\n" +
		`{"kind": "gemm", "gpu": 0, "dtype": "bf16"}` + "\n" +
		"Traceback (most recent call last):\n" +
		"[1,0]<stdout>:" + lines[2]
	o, err := Parse(strings.NewReader(edited), "host-256M.jsonl")
	assert.NilError(t, err)
	assert.Equal(t, len(o.Copies), 1)
	assert.Equal(t, o.Copies[0].Direction, "d2h")
	assert.Equal(t, o.Copies[0].Line, 7)
	assert.Equal(t, len(o.Diags), 4)
	assert.Assert(t, strings.HasPrefix(o.Diags[0], "host-256M.jsonl:2: not a JSON object: /usr/lib"), o.Diags[0])
	assert.Assert(t, strings.HasPrefix(o.Diags[1], "host-256M.jsonl:3: not JSON ("), o.Diags[1])
	assert.Equal(t, o.Diags[2], `host-256M.jsonl:4: a record of unknown kind "nvlink"`)
	assert.Equal(t, o.Diags[3], "host-256M.jsonl:5: a gemm record without a positive tflops")
	assert.DeepEqual(t, o.Errors, []Error{{At: At{Line: 6}, Message: "Python traceback: the script died"}})
}

func TestSniff(t *testing.T) {
	for _, c := range []struct {
		file string
		want bool
	}{
		{"default.jsonl", true},
		{"no-gpu.jsonl", true},
		{"smi-before.csv", false},
		{"torch.txt", false},
	} {
		data, err := os.ReadFile(rec + c.file)
		assert.NilError(t, err)
		assert.Equal(t, Sniff(data), c.want, c.file)
	}
}

func TestComplete(t *testing.T) {
	topo := plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}}
	o := parseFile(t, rec+"default.jsonl")
	seen := Seen{}
	for _, g := range o.GEMM {
		seen.Add(g.Host, g.GPU, g.DType)
	}
	items := []string{"bf16", "fp16"}
	cs, cause := Complete(topo, o, o.Hosts(), items, seen, "gemm")
	assert.Equal(t, cause, "")
	for _, c := range cs {
		assert.Assert(t, c.OK, "%+v", c)
	}
	// Two GPUs per node: GPU 1 is missing, and torch saw only one.
	topo.GPUsPerNode = 2
	var failed []string
	cs, cause = Complete(topo, o, o.Hosts(), items, seen, "gemm")
	assert.Equal(t, cause, "", "a missing GPU with no setup error is a failure")
	for _, c := range cs {
		if !c.OK {
			failed = append(failed, c.Name+": "+c.Message)
		}
	}
	assert.DeepEqual(t, failed, []string{
		"gemm results host unknown: host unknown: GPU 1: no result (every GPU 0..1 must have each of: bf16, fp16)",
		"GPUs seen host unknown: host unknown: torch sees 1 GPU(s), the topology has 2 per node (line 1)",
	})
	// Two nodes, one reported.
	topo = plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 1}}
	cs, _ = Complete(topo, o, o.Hosts(), items, seen, "gemm")
	assert.Equal(t, cs[0].Name, "node count")
	assert.Equal(t, cs[0].OK, false)
	assert.Equal(t, cs[0].Message, "1 node(s) reported (host unknown), the topology has 2")
}

// Lines that are no record but say why the script did not measure: a
// traceback's exception (recorded: python3 -c 'import torch' without
// torch), the shell's exec failure (testdata/field/torchbench). The gates
// take them for a setup error: a warning and a cause, never a fail.
func TestParseCouldNotRun(t *testing.T) {
	topo := plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 8}}
	for _, c := range []struct {
		name, out, want string
	}{
		{"traceback", "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nModuleNotFoundError: No module named 'torch'\n",
			"Python traceback: ModuleNotFoundError: No module named 'torch'"},
		{"no interpreter", readFile(t, "../../../testdata/field/torchbench/bash-python-command-not-found-hbm/nopython.log"),
			"bash: line 1: nosuchpython3: command not found"},
		{"no torch", readFile(t, "../../../testdata/field/torchbench/no-torch-gemm/alone.jsonl"),
			"import torch: No module named 'torch'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, err := Parse(strings.NewReader(c.out), "x.log")
			assert.NilError(t, err)
			assert.Equal(t, len(o.Errors), 1, "%+v", o.Errors)
			assert.Equal(t, o.Errors[0].Message, c.want)
			cs, cause := Complete(topo, o, o.Hosts(), []string{"bf16"}, Seen{}, "gemm")
			assert.Equal(t, len(cs), 1)
			assert.Assert(t, !cs[0].OK && cs[0].Warn, "%+v", cs[0])
			assert.Assert(t, strings.Contains(cause, "the tool could not run (setup, not hardware)") && strings.Contains(cause, c.want), cause)
		})
	}
	// A device fault during the measurement stays a fail (the exception
	// line of vllm-project/vllm#5222 after a real traceback's frame).
	o, err := Parse(strings.NewReader("Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nRuntimeError: CUDA error: uncorrectable ECC error encountered\n"), "x.log")
	assert.NilError(t, err)
	cs, cause := Complete(topo, o, o.Hosts(), []string{"bf16"}, Seen{}, "gemm")
	assert.Equal(t, cause, "")
	assert.Assert(t, !cs[0].OK && !cs[0].Warn && strings.Contains(cs[0].Message, "the device failed"), "%+v", cs[0])
}

// Two nodes' logs in one (as the rank starter interleaves them): the
// H200's real default.jsonl, and a node without torch. The missing node
// is explained by its own error record: a warning and a cause (ERROR),
// while a GPU missing on the node that ran stays a failure.
func TestCompleteOneNodeWithoutTorch(t *testing.T) {
	log := readFile(t, rec+"default.jsonl") + readFile(t, "../../../testdata/field/torchbench/no-torch-gemm/alone.jsonl")
	o, err := Parse(strings.NewReader(log), "alone.log")
	assert.NilError(t, err)
	seen := Seen{}
	for _, g := range o.GEMM {
		seen.Add(g.Host, g.GPU, g.DType)
	}
	topo := plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 1}}
	cs, cause := Complete(topo, o, o.Hosts(), []string{"bf16"}, seen, "gemm")
	assert.Equal(t, cs[0].Name, "node count")
	assert.Assert(t, !cs[0].OK && cs[0].Warn, "%+v", cs[0])
	assert.Equal(t, cause, "the tool could not run (setup, not hardware): host vm, line 11: import torch: No module named 'torch'")
	// Two GPUs per node: GPU 1 of the node that ran is missing, which its
	// own output does not explain.
	topo.GPUsPerNode = 2
	cs, _ = Complete(topo, o, o.Hosts(), []string{"bf16"}, seen, "gemm")
	var fails []string
	for _, c := range cs {
		if !c.OK && !c.Warn {
			fails = append(fails, c.Name)
		}
	}
	assert.DeepEqual(t, fails, []string{"gemm results host unknown", "GPUs seen host unknown"})
}

// A shell's stray "command not found" (a login profile's) in a complete
// log: no warning, no failure, nothing to explain.
func TestStrayLineInCompleteLog(t *testing.T) {
	log := readFile(t, "../../../testdata/field/torchbench/bash-python-command-not-found-hbm/nopython.log") + readFile(t, rec+"default.jsonl")
	o, err := Parse(strings.NewReader(log), "default.jsonl")
	assert.NilError(t, err)
	seen := Seen{}
	for _, g := range o.GEMM {
		seen.Add(g.Host, g.GPU, g.DType)
	}
	cs, cause := Complete(plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}}, o, o.Hosts(), []string{"bf16"}, seen, "gemm")
	assert.Equal(t, cause, "")
	for _, c := range cs {
		assert.Assert(t, c.OK, "%+v", c)
	}
	assert.Equal(t, len(ErrorChecks(o, "default.jsonl")), 0)
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	assert.NilError(t, err)
	return string(b)
}

func TestFacts(t *testing.T) {
	o := parseFile(t, rec+"default.jsonl")
	info, checks := Facts(o, nil)
	assert.DeepEqual(t, info, map[string]string{"gpu": "NVIDIA H200", "torchversion": "2.11.0+cu130", "cudaversion": "13.0", "gpus": "1"})
	assert.Equal(t, len(checks), 0)
	// A node with an odd GPU (an edit of the real info line).
	o.Infos = append(o.Infos, Info{At: At{Line: 11, Host: "b"}, GPUs: 2, Names: []string{"NVIDIA H200", "NVIDIA H100 80GB HBM3"}})
	o.Infos[0].Host = "a"
	info, checks = Facts(o, nil)
	assert.Equal(t, info["gpu"], "NVIDIA H200")
	assert.Equal(t, info["hosts"], "a,b")
	assert.Equal(t, len(checks), 1)
	assert.Equal(t, checks[0].Message, `most GPUs are "NVIDIA H200", but "NVIDIA H100 80GB HBM3" on b GPU 1`)
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"default.jsonl", "gemm-16384.jsonl", "host-256M.jsonl", "no-gpu.jsonl", "no-such-gpu.jsonl"} {
		data, err := os.ReadFile(rec + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"kind": "p2p", "src": -1, "dst": 1e30, "gbps": 1e400}` + "\n{\"kind\":null}\n{}{}\n[1,0]<stdout>:{"))
	f.Add([]byte(`{"gbps": 55.4, "gpu": 0, "kind": "h2d", "pinned": true, "placement": {"buffer_nodes": {"1": -3}, "nodes": [{"node": -1}], "link": []}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := Parse(strings.NewReader(string(data)), "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		_ = Sniff(data)
		topo := plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 2}}
		seen := Seen{}
		for _, g := range o.GEMM {
			if g.GPU < 0 || (g.Skipped == "" && !(g.TFLOPS > 0)) {
				t.Fatalf("bad record kept: %+v", g)
			}
			seen.Add(g.Host, g.GPU, g.DType)
		}
		Complete(topo, o, o.Hosts(), []string{"bf16"}, seen, "gemm")
		ErrorChecks(o, "fuzz")
		Facts(o, nil)
	})
}

// placementLines are the h2d and d2h lines of the H200 node recording as
// the script prints them now, with the placement its own functions give
// for kase (workloads/testdata/placement_lines.py: two-nodes, numa-off,
// here); no GPU run has recorded them yet. Skipped without python3.
func placementLines(t *testing.T, kase string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to run torchbench.py's placement functions")
	}
	out, err := exec.Command(py, "../../../workloads/testdata/placement_lines.py", kase,
		"../../../testdata/recordings/h200x1-2026-12-01/node/node-1/raw/hostlink.pcie/pcie.log").Output()
	assert.NilError(t, err)
	return string(out)
}

func TestParsePlacement(t *testing.T) {
	// The recording predates placements: none is read, and nothing is
	// diagnosed.
	old := parseFile(t, "../../../testdata/recordings/h200x1-2026-12-01/node/node-1/raw/hostlink.pcie/pcie.log")
	assert.Equal(t, len(old.Copies), 2)
	assert.Assert(t, old.Copies[0].Placement == nil && old.Copies[1].Placement == nil)
	assert.Equal(t, len(old.Diags), 0)

	twoNodes := Placement{BDF: "0000:19:00.0", NUMANode: 1, CPUs: "48-95,144-191", MemPolicy: "first touch",
		BufferNodes: map[string]int64{"1": 262144}, BufferSource: "numa_maps, pages of the mapping",
		IOMMU: "on", IOMMUCmdline: "intel_iommu=on", IOMMUDomain: "DMA-FQ",
		Nodes: []NodeMemory{{Node: 0, TotalKB: 1056355408, FreeKB: 1001234560}, {Node: 1, TotalKB: 1056964608, FreeKB: 12345678}},
		Link:  Link{CurrentSpeed: "32.0 GT/s PCIe", CurrentWidth: "16", MaxSpeed: "32.0 GT/s PCIe", MaxWidth: "16"}}
	off := twoNodes
	off.CPUs, off.Unbound, off.MemPolicy = "", "--numa off", "default"
	for _, c := range []struct {
		kase string
		want *Placement
	}{
		{"two-nodes", &twoNodes},
		{"numa-off", &off},
		{"here", nil},
	} {
		t.Run(c.kase, func(t *testing.T) {
			o, err := Parse(strings.NewReader(placementLines(t, c.kase)), "pcie.log")
			assert.NilError(t, err)
			assert.Equal(t, len(o.Diags), 0, "%v", o.Diags)
			assert.Equal(t, len(o.Copies), 2)
			for _, cp := range o.Copies {
				assert.Assert(t, cp.Placement != nil, "line %d: no placement", cp.Line)
				assert.Assert(t, cp.GBps > 55)
				if c.want != nil {
					assert.DeepEqual(t, *cp.Placement, *c.want)
					continue
				}
				// This machine: whatever it is, the script said where the
				// GPU's node is and either bound to it or why not.
				p := cp.Placement
				assert.Assert(t, p.IOMMU != "", "%+v", p)
				assert.Assert(t, (p.CPUs != "") != (p.Unbound != ""), "%+v", p)
				assert.Assert(t, len(p.BufferNodes) > 0 || p.BufferUnknown != "", "%+v", p)
			}
		})
	}
}

// A placement of the wrong shape costs the placement, not the figure.
func TestParseBadPlacement(t *testing.T) {
	line := `{"bytes": 1073741824, "gbps": 55.43040955167523, "gpu": 0, "host": "vm", "kind": "h2d", "pinned": true, "placement": {"numa_node": "one"}}`
	o, err := Parse(strings.NewReader(line+"\n"), "pcie.log")
	assert.NilError(t, err)
	assert.Equal(t, len(o.Copies), 1)
	assert.Assert(t, o.Copies[0].Placement == nil)
	assert.Equal(t, o.Copies[0].GBps, 55.43040955167523)
	assert.Equal(t, len(o.Diags), 1)
	assert.Assert(t, strings.Contains(o.Diags[0], "pcie.log:1: a h2d record's placement is unreadable"), o.Diags[0])
}

// TestStrayLineExplainsNoOtherNode: a line that names no node (a
// shell's "command not found", testdata/field/torchbench's real one)
// may be the node that ran's own: it never turns another node's missing
// results into a setup error, and explains a gap only where the
// topology has one node. The H100 recording's gemm log of host vm is
// the node that ran (the attacker's two.log / two_stray.log, its host
// renamed a).
func TestStrayLineExplainsNoOtherNode(t *testing.T) {
	h100 := readFile(t, "../../../testdata/recordings/h100x1-2026-12-07/issue28/node-1/raw/gemm.matmul/alone.log")
	stray := readFile(t, "../../../testdata/field/torchbench/bash-python-command-not-found-hbm/nopython.log")
	for _, tc := range []struct {
		name     string
		log      string
		nodes    int
		gpus     int
		check    string // the check that does not hold
		warn     bool   // ... and is a warning (setup), not a failure
		causeHas string // in the cause; "" none
	}{
		{"missing node, no stray", h100, 2, 1, "node count", false, ""},
		{"missing node, stray before", stray + h100, 2, 1, "node count", false, ""},
		{"missing node, stray after", h100 + stray, 2, 1, "node count", false, ""},
		// One node: the stray line can be no other node's.
		{"one node, missing GPU, stray", stray + readFile(t, rec+"default.jsonl"), 1, 2, "gemm results host unknown", true, "nosuchpython3: command not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(strings.NewReader(tc.log), "two.log")
			assert.NilError(t, err)
			seen := Seen{}
			for _, g := range o.GEMM {
				seen.Add(g.Host, g.GPU, g.DType)
			}
			cs, cause := Complete(plan.Topology{Scope: plan.Scope{Nodes: tc.nodes, GPUsPerNode: tc.gpus}}, o, o.Hosts(), []string{"bf16"}, seen, "gemm")
			found := false
			for _, c := range cs {
				if c.Name == tc.check {
					found = true
					assert.Assert(t, !c.OK && c.Warn == tc.warn, "%+v", c)
				}
			}
			assert.Assert(t, found, "%+v", cs)
			if tc.causeHas == "" {
				assert.Equal(t, cause, "")
			} else {
				assert.Assert(t, strings.Contains(cause, tc.causeHas), cause)
			}
		})
	}
}
