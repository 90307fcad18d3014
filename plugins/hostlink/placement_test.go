package hostlink

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/plugins/internal/torchbench"
	"github.com/gpuaccept/gpuaccept/workloads"
	"gotest.tools/v3/assert"
)

// nodeLog is the real hostlink.pcie output of the H200 node run, from
// before placement records.
const nodeLog = "../../testdata/recordings/h200x1-2026-12-01/node/node-1/raw/hostlink.pcie/pcie.log"

// placementLog writes nodeLog's copy lines as the script prints them now,
// with the placement its functions give for kase
// (workloads/testdata/placement_lines.py: two-nodes, numa-off, h100-vm,
// here), and
// returns the file. Skipped without python3.
func placementLog(t *testing.T, kase string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to run torchbench.py's placement functions")
	}
	out, err := exec.Command(py, "../../workloads/testdata/placement_lines.py", kase, nodeLog).Output()
	assert.NilError(t, err)
	path := filepath.Join(t.TempDir(), "pcie.log")
	assert.NilError(t, os.WriteFile(path, out, 0o644))
	return path
}

func TestParsePCIePlacement(t *testing.T) {
	// Before placement records: no context, so that re-judging a results
	// folder of then (gpuaccept verify) gives what was recorded.
	p := parse(t, "pcie", topo(1, 1), nodeLog)
	assert.Equal(t, p.Error, "")
	_, ok := p.Info[placementInfo]
	assert.Assert(t, !ok, "context %q", p.Info[placementInfo])

	for _, c := range []struct{ kase, want string }{
		{"two-nodes", "placement: GPU0 on NUMA node 1, process bound to CPUs 48-95,144-191 (node 1), buffer on node 1; " +
			"IOMMU on (GPU's group DMA-FQ; intel_iommu=on; iommu=pt absent); PCIe Gen5 x16; 2 NUMA nodes: node0 1007 GiB (955 free), node1 1008 GiB (12 free)"},
		{"numa-off", "placement: GPU0 on NUMA node 1, process unbound (--numa off), buffer on node 1; " +
			"IOMMU on (GPU's group DMA-FQ; intel_iommu=on; iommu=pt absent); PCIe Gen5 x16; 2 NUMA nodes: node0 1007 GiB (955 free), node1 1008 GiB (12 free)"},
		// What the 1-GPU H100 VM will say: a VM gives its GPU no node.
		{"h100-vm", "placement: GPU0 on no NUMA node, process unbound (the host gives 0000:00:06.0 no NUMA node (numa_node -1)), " +
			"buffer on node 0; IOMMU off; PCIe Gen5 x16; 1 NUMA node: node0 126 GiB (124 free)"},
		{"here", "placement: GPU0 on "},
	} {
		t.Run(c.kase, func(t *testing.T) {
			p := parse(t, "pcie", topo(1, 1), placementLog(t, c.kase))
			assert.Equal(t, p.Error, "")
			assert.DeepEqual(t, failed(p), []string(nil))
			assert.Equal(t, len(p.Metrics), 2)
			got := p.Info[placementInfo]
			if c.kase == "here" {
				assert.Assert(t, strings.HasPrefix(got, c.want), got)
				return
			}
			assert.Equal(t, got, c.want)
		})
	}
	// p2p's copies have no host buffer: no placement.
	p = parse(t, "p2p", topo(1, 1), placementLog(t, "two-nodes"))
	_, ok = p.Info[placementInfo]
	assert.Assert(t, !ok)
}

func TestPlacementText(t *testing.T) {
	bound := func(node int, cpus string, buf map[string]int64) *torchbench.Placement {
		return &torchbench.Placement{NUMANode: node, CPUs: cpus, BufferNodes: buf, IOMMU: "on", IOMMUCmdline: "iommu=pt",
			IOMMUDomain: "identity", Nodes: []torchbench.NodeMemory{{Node: 0, TotalKB: 4 << 20, FreeKB: 1 << 20}, {Node: 1, TotalKB: 4 << 20, FreeKB: 2 << 20}},
			Link: torchbench.Link{CurrentSpeed: "32.0 GT/s PCIe", CurrentWidth: "16", MaxSpeed: "32.0 GT/s PCIe", MaxWidth: "16"}}
	}
	cp := func(host string, gpu int, dir string, p *torchbench.Placement) torchbench.Copy {
		return torchbench.Copy{At: torchbench.At{Host: host}, GPU: gpu, Direction: dir, GBps: 50, Placement: p}
	}
	facts := "IOMMU on (GPU's group identity; iommu=pt); PCIe Gen5 x16; 2 NUMA nodes: node0 4.0 GiB (1.0 free), node1 4.0 GiB (2.0 free)"
	downtrained := bound(1, "48-95", map[string]int64{"1": 64})
	downtrained.Link.CurrentSpeed, downtrained.Link.CurrentWidth = "16.0 GT/s PCIe", "8"
	defaultPT := bound(1, "48-95", map[string]int64{"1": 64})
	defaultPT.IOMMUCmdline = ""
	vm := &torchbench.Placement{NUMANode: -1, Unbound: "the host gives 0000:00:04.0 no NUMA node (numa_node -1)", BufferUnknown: "numa_maps lists no node for the mapping at 0x7f2a40000000",
		IOMMU: "off", Nodes: []torchbench.NodeMemory{{Node: 0, TotalKB: 240 << 20, FreeKB: 200 << 20}}}
	for _, c := range []struct {
		name   string
		copies []torchbench.Copy
		want   string
	}{
		{"none recorded", []torchbench.Copy{cp("", 0, "h2d", nil), cp("", 0, "d2h", nil)}, ""},
		{"GPUs alike are named together", []torchbench.Copy{
			cp("n1", 0, "h2d", bound(0, "0-47", map[string]int64{"0": 64})), cp("n1", 0, "d2h", bound(0, "0-47", map[string]int64{"0": 64})),
			cp("n1", 1, "h2d", bound(0, "0-47", map[string]int64{"0": 64})), cp("n1", 1, "d2h", bound(0, "0-47", map[string]int64{"0": 64})),
			cp("n1", 2, "h2d", bound(1, "48-95", map[string]int64{"1": 64})), cp("n1", 2, "d2h", bound(1, "48-95", map[string]int64{"1": 64})),
		}, "placement: GPU0,1 on NUMA node 0, process bound to CPUs 0-47 (node 0), buffer on node 0; " +
			"GPU2 on NUMA node 1, process bound to CPUs 48-95 (node 1), buffer on node 1; " + facts},
		{"buffers of the two directions apart, split buffer", []torchbench.Copy{
			cp("", 0, "h2d", bound(1, "48-95", map[string]int64{"1": 60, "0": 4})), cp("", 0, "d2h", bound(1, "48-95", map[string]int64{"0": 64})),
		}, "placement: GPU0 on NUMA node 1, process bound to CPUs 48-95 (node 1), buffer on nodes 1 (94%), 0 (6%) (h2d), buffer on node 0 (d2h); " + facts},
		{"link trained down", []torchbench.Copy{cp("", 0, "h2d", downtrained)},
			"placement: GPU0 on NUMA node 1, process bound to CPUs 48-95 (node 1), buffer on node 1; " +
				"IOMMU on (GPU's group identity; iommu=pt); PCIe Gen4 x8 (max Gen5 x16); 2 NUMA nodes: node0 4.0 GiB (1.0 free), node1 4.0 GiB (2.0 free)"},
		{"passthrough by the kernel's default, no flag", []torchbench.Copy{cp("", 0, "h2d", defaultPT)},
			"placement: GPU0 on NUMA node 1, process bound to CPUs 48-95 (node 1), buffer on node 1; " +
				"IOMMU on (GPU's group identity); PCIe Gen5 x16; 2 NUMA nodes: node0 4.0 GiB (1.0 free), node1 4.0 GiB (2.0 free)"},
		{"VM: no node, buffer unknown", []torchbench.Copy{cp("vm", 0, "h2d", vm), cp("vm", 0, "d2h", vm)},
			"placement: GPU0 on no NUMA node, process unbound (the host gives 0000:00:04.0 no NUMA node (numa_node -1)), " +
				"buffer node unknown (numa_maps lists no node for the mapping at 0x7f2a40000000); IOMMU off; PCIe link unknown; 1 NUMA node: node0 240 GiB (200 free)"},
		{"two hosts", []torchbench.Copy{cp("a", 0, "h2d", vm), cp("b", 0, "h2d", nil)},
			"placement: host a: GPU0 on no NUMA node, process unbound (the host gives 0000:00:04.0 no NUMA node (numa_node -1)), " +
				"buffer node unknown (numa_maps lists no node for the mapping at 0x7f2a40000000); IOMMU off; PCIe link unknown; 1 NUMA node: node0 240 GiB (200 free); " +
				"host b: GPU0 placement not recorded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, placementText(c.copies), c.want)
		})
	}
}

func TestPlanNUMA(t *testing.T) {
	ctx := context.Background()
	p, err := Plugin{}.Plan(ctx, pluginapi.PlanRequest{Test: "pcie", Topology: topo(1, 8), Params: map[string]string{"numa": "off"}})
	assert.NilError(t, err)
	assert.DeepEqual(t, p.Steps[0].Argv, []string{"python3", "-c", workloads.TorchBench, "--tests", "h2d,d2h", "--gpus", "all", "--numa", "off"})
	// on is the script's default: no flag, so a script= copy older than
	// --numa still runs.
	p, err = Plugin{}.Plan(ctx, pluginapi.PlanRequest{Test: "pcie", Topology: topo(1, 8), Params: map[string]string{"numa": "on"}})
	assert.NilError(t, err)
	assert.DeepEqual(t, p.Steps[0].Argv, []string{"python3", "-c", workloads.TorchBench, "--tests", "h2d,d2h", "--gpus", "all"})
	p, err = Plugin{}.Plan(ctx, pluginapi.PlanRequest{Test: "p2p", Topology: topo(1, 8), Params: map[string]string{"numa": "off"}})
	assert.NilError(t, err)
	assert.DeepEqual(t, p.Steps[0].Argv, []string{"python3", "-c", workloads.TorchBench, "--tests", "p2p", "--gpus", "all"})
	_, err = Plugin{}.Plan(ctx, pluginapi.PlanRequest{Test: "pcie", Topology: topo(1, 8), Params: map[string]string{"numa": "auto"}})
	assert.ErrorContains(t, err, `hostlink.pcie: parameter numa: "auto" is not on or off`)
}
