package skuauto

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/launchers/replay"
	"github.com/gpuaccept/gpuaccept/plugins/health"
)

// inProcess is the health plugin called in this process, as the plugin
// host calls it out of process.
type inProcess struct{}

func (inProcess) Describe(ctx context.Context, name string) (pluginapi.Description, error) {
	return health.Plugin{}.Describe(ctx)
}
func (inProcess) Plan(ctx context.Context, name string, req pluginapi.PlanRequest) (plan.Plan, error) {
	return health.Plugin{}.Plan(ctx, req)
}
func (inProcess) Parse(ctx context.Context, name string, req pluginapi.ParseRequest) (result.Parsed, error) {
	return health.Plugin{}.Parse(ctx, req)
}

const root = "../../testdata"

// nodesOfFiles parses files with the health plugin as gpuaccept check
// does (each a tool's own output, or a tagged health log) and groups the
// GPUs it names by host (NodesOfParsed).
func nodesOfFiles(t *testing.T, files ...string) ([]Node, error) {
	t.Helper()
	var outs []plan.Output
	for _, f := range files {
		outs = append(outs, plan.Output{Step: "node", Log: f})
	}
	p, err := health.Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "node", Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}}, Outputs: outs})
	assert.NilError(t, err)
	return NodesOfParsed(p, nil)
}

// tagged writes a health log of hosts, each given as the tagged log
// collect.sh printed on it (a recorded raw/health.node/node.log) or a
// tool's own output put under the section collect.sh prints it in: the
// format a step of several nodes writes (HOST|SECTION|TEXT).
func tagged(t *testing.T, parts ...[3]string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range parts {
		host, section, file := p[0], p[1], p[2]
		data, err := os.ReadFile(file)
		assert.NilError(t, err)
		if section == "" {
			b.Write(data)
			continue
		}
		b.WriteString(host + "|begin|@begin gpuaccept-health 1 hostname=" + host + " rank=\n")
		for _, l := range strings.SplitAfter(string(data), "\n") {
			if l != "" {
				b.WriteString(host + "|" + section + "|" + strings.TrimSuffix(l, "\n") + "\n")
			}
		}
		b.WriteString(host + "|" + section + "|@exit 0\n" + host + "|end|@end\n")
	}
	f := filepath.Join(t.TempDir(), "node.log")
	assert.NilError(t, os.WriteFile(f, []byte(b.String()), 0o644))
	return f
}

// The SKU --sku auto picks from the GPUs real outputs show, as the
// health plugin reads them: nvidia-smi's XML, -q text and query CSV of
// this project's H100 and H200, amd-smi's static text of an MI350X, the
// health logs of recorded results folders; and what it refuses: GPUs of
// two models, a model no SKU lists.
func TestResolveOnRealOutputs(t *testing.T) {
	cat, err := sku.LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	h100 := root + "/recordings/h100x1-2026-12-07"
	h200 := root + "/recordings/h200x1-2026-12-01"
	for _, tc := range []struct {
		name  string
		files []string
		// tagged, when set, builds one health log of several hosts.
		tagged [][3]string
		gpus   int
		want   string
		count  int
		line   string
		err    string
	}{
		{name: "H100 SXM nvidia-smi -q -x", files: []string{h100 + "/smi/nvidia-smi-q.xml"}, want: "h100", count: 1,
			line: "--sku auto: h100 (1 node, each 1 x NVIDIA H100 80GB HBM3: listed in SKU h100's gpu_variant; built-in)"},
		{name: "H100 SXM nvidia-smi -q", files: []string{h100 + "/smi/nvidia-smi-q.txt"}, want: "h100", count: 1},
		{name: "H100 SXM query CSV", files: []string{h100 + "/smi/query-gpu.csv"}, want: "h100", count: 1},
		{name: "H200 nvidia-smi -q -x", files: []string{h200 + "/smi/nvidia-smi-q-x.xml"}, want: "h200", count: 1},
		{name: "H200 nvidia-smi -q", files: []string{h200 + "/smi/nvidia-smi-q.txt"}, want: "h200", count: 1},
		{name: "H100 SXM nvidia-smi table", files: []string{h100 + "/smi/nvidia-smi.txt"}, want: "h100", count: 1},
		{name: "H200 NVL nvidia-smi table", files: []string{root + "/field/skus-names/h200-nvl.nvidia-smi.txt"}, want: "h200-nvl", count: 2},
		{name: "B300 nvidia-smi table, GPUs elided", files: []string{root + "/field/skus-names/b300.nvidia-smi.txt"},
			err: `the nvidia-smi table elides GPUs ("..."): 3 GPUs listed, the node's GPU count is not known), so the GPUs seen ((no host named): 3 x NVIDIA B300 SXM6 AC) may not be all the nodes have: give --sku`},
		{name: "MI350X amd-smi static text", files: []string{root + "/field/skus-names/mi350x.amd-smi-static.txt"}, want: "mi350x", count: 1},
		{name: "A100 80GB nvidia-smi -q: also the Azure SKU", files: []string{root + "/field/health/a100-q-rowremap-pending-stas00/nvidia-smi-q.txt"}, want: "a100-80gb", count: 1,
			line: "--sku auto: a100-80gb (1 node, each 1 x NVIDIA A100-SXM4-80GB: listed in SKU a100-80gb's gpu_variant; built-in); also matches a100-ndmv4 (built-in, Azure NDm A100 v4 (Standard_ND96amsr_A100_v4)): give --sku a100-ndmv4 for it"},
		{name: "recorded health log", files: []string{h100 + "/issue28/node-1/raw/health.node/node.log"}, want: "h100", count: 1},
		{name: "--gpus-per-node as the nodes show", files: []string{h100 + "/issue28/node-2/raw/health.node/node.log"}, gpus: 1, want: "h100", count: 1},
		{name: "--gpus-per-node other than the nodes show", files: []string{h100 + "/issue28/node-1/raw/health.node/node.log"}, gpus: 8,
			err: "--sku auto: --gpus-per-node 8, but 1 node shows 1 GPU: leave --gpus-per-node out, or give --sku"},
		{name: "two hosts of one model", tagged: [][3]string{{"", "", h100 + "/issue28/node-1/raw/health.node/node.log"}, {"h100b", "nvsmi-xml", h100 + "/smi/nvidia-smi-q.xml"}},
			want: "h100", count: 1, line: "--sku auto: h100 (2 nodes, each 1 x NVIDIA H100 80GB HBM3: listed in SKU h100's gpu_variant; built-in)"},
		{name: "two hosts, two models", tagged: [][3]string{{"", "", h100 + "/issue28/node-1/raw/health.node/node.log"}, {"h200node", "nvsmi-xml", h200 + "/smi/nvidia-smi-q-x.xml"}},
			err: "--sku auto: the nodes disagree: h200node: 1 x NVIDIA H200; vm: 1 x NVIDIA H100 80GB HBM3; one run signs off one SKU"},
		{name: "a model no SKU lists", files: []string{root + "/field/health/a10-q-550-healthy-gpud/nvidia-smi-q.txt"},
			err: `--sku auto: (no host named): 1 x NVIDIA A10: no SKU lists GPU "NVIDIA A10" in its gpu_variant.names: give --sku`},
		{name: "AMD amd-smi static JSON of a Radeon", files: []string{"../../plugins/health/testdata/amd/rx6600-amd-smi-static.json"},
			err: `no SKU lists GPU "Navi 23 [Radeon RX 6600/6600 XT" in its gpu_variant.names`}, // amd-smi's own truncation
		{name: "AMD rocm-smi JSON of an MI250X", files: []string{"../../plugins/health/testdata/amd/mi250x-rocm-smi-productname.json"},
			err: `no SKU lists GPU "AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2" in its gpu_variant.names`},
		{name: "AMD amd-smi static text of an MI308X", files: []string{root + "/field/health/amdsmi-static-asic-mi308x/amd-smi-static-asic.txt"},
			err: `(no host named): 1 x MI308X: no SKU lists GPU "MI308X" in its gpu_variant.names`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := tc.files
			if tc.tagged != nil {
				files = []string{tagged(t, tc.tagged...)}
			}
			nodes, err := nodesOfFiles(t, files...)
			var ch *Choice
			if err == nil {
				ch, err = Resolve(cat, nodes, tc.gpus)
			}
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, ch.SKU.Name, tc.want)
			assert.Equal(t, ch.GPUsPerNode, tc.count)
			if tc.line != "" {
				assert.Equal(t, ch.Line(), tc.line)
			}
		})
	}
}

// Nodes that show no GPU, or GPUs without a model name, are refused
// naming each host; so is an empty list.
func TestResolveRefusesUnknownNodes(t *testing.T) {
	cat, err := sku.LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	for _, tc := range []struct {
		name  string
		nodes []Node
		err   string
	}{
		{"none", nil, "--sku auto: the probe's outputs name no node and no GPU: give --sku"},
		{"a host without GPU", []Node{{Host: "a", Models: []string{"NVIDIA H200"}, GPUs: 8}, {Host: "b"}},
			"--sku auto: cannot tell one GPU model on every node: b: no GPU; give --sku"},
		{"GPUs without a name", []Node{{Host: "a", Models: []string{"NVIDIA H200"}, GPUs: 8, Unnamed: 1}},
			"--sku auto: cannot tell one GPU model on every node: a: 8 GPUs (NVIDIA H200, 1 without a model name); give --sku"},
		{"two models on a host", []Node{{Host: "a", Models: []string{"NVIDIA H200", "NVIDIA H200 NVL"}, GPUs: 2}},
			"--sku auto: cannot tell one GPU model on every node: a: 2 GPUs (NVIDIA H200, NVIDIA H200 NVL); give --sku"},
		{"counts differ", []Node{{Host: "a", Models: []string{"NVIDIA H200"}, GPUs: 8}, {Host: "b", Models: []string{"NVIDIA H200"}, GPUs: 7}},
			"--sku auto: the nodes disagree: a: 8 x NVIDIA H200; b: 7 x NVIDIA H200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(cat, tc.nodes, 0)
			assert.ErrorContains(t, err, tc.err)
		})
	}
}

// The probe runs health.node through a launcher as a run's step runs and
// reads the GPUs its plugin names: here the replay launcher on a recorded
// results folder's raw outputs (one H100 node), on a folder of two hosts
// of different models, and on a folder without recorded health outputs.
func TestProbeReplay(t *testing.T) {
	cat, err := sku.LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	mixed := t.TempDir()
	log := tagged(t, [3]string{"", "", root + "/recordings/h100x1-2026-12-07/issue28/node-1/raw/health.node/node.log"},
		[3]string{"h200node", "nvsmi-xml", root + "/recordings/h200x1-2026-12-01/smi/nvidia-smi-q-x.xml"})
	data, err := os.ReadFile(log)
	assert.NilError(t, err)
	assert.NilError(t, os.MkdirAll(filepath.Join(mixed, ProbeTest), 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(mixed, ProbeTest, "node.log"), data, 0o644))
	for _, tc := range []struct {
		name, dir string
		want      string
		err       string
	}{
		{"recorded H100 folder", root + "/recordings/h100x1-2026-12-07/issue28/node-1", "h100", ""},
		{"two models", mixed, "", "--sku auto: the nodes disagree: h200node: 1 x NVIDIA H200; vm: 1 x NVIDIA H100 80GB HBM3"},
		{"no health outputs", root + "/recordings/h200x1-2026-12-01/node/node-1", "",
			"--sku auto: health.node through launcher replay showed no GPU (no recording health.node/node.log in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := (&replay.Config{Dir: tc.dir}).Build(launch.Options{})
			assert.NilError(t, err)
			nodes, err := Probe(context.Background(), ProbeOptions{Plugins: inProcess{}, Launcher: l, Dir: t.TempDir(),
				Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 8}}})
			if err == nil {
				var ch *Choice
				if ch, err = Resolve(cat, nodes, 0); err == nil {
					assert.Equal(t, ch.SKU.Name, tc.want)
					return
				}
			}
			assert.Assert(t, tc.err != "", "unexpected error: %v", err)
			assert.ErrorContains(t, err, tc.err)
		})
	}
}

// What the probe's parsed outputs refuse, before any SKU is looked at:
// no GPU named (saying the plugin's failed check, else its error), GPUs
// named beside an error (the list may be short), a hardware list that is
// no list of devices.
func TestNodesOfParsed(t *testing.T) {
	h100 := `[{"host":"a","kind":"gpu","name":"NVIDIA H100 80GB HBM3"}]`
	for _, tc := range []struct {
		name string
		p    result.Parsed
		err  string
	}{
		{"no GPU tool", result.Parsed{Checks: []result.Check{{Name: "GPU count", Message: "a: no GPU tool (nvidia-smi, amd-smi, rocm-smi) found"}}},
			"showed no GPU (GPU count: a: no GPU tool (nvidia-smi, amd-smi, rocm-smi) found): give --sku"},
		{"nothing at all", result.Parsed{}, "showed no GPU (its outputs name no GPU): give --sku"},
		{"a node that did not report", result.Parsed{Error: "node b: no @end line", Info: map[string]string{result.HardwareInfo: h100}},
			"could not read every output (node b: no @end line), so the GPUs seen (a: 1 x NVIDIA H100 80GB HBM3) may not be all the nodes have: give --sku"},
		{"hardware not a list", result.Parsed{Info: map[string]string{result.HardwareInfo: "{}"}}, "named its hardware wrongly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NodesOfParsed(tc.p, nil)
			assert.ErrorContains(t, err, tc.err)
		})
	}
	nodes, err := NodesOfParsed(result.Parsed{Info: map[string]string{result.HardwareInfo: h100}}, []string{"a", "b"})
	assert.NilError(t, err)
	assert.DeepEqual(t, nodes, []Node{{Host: "a", Models: []string{"NVIDIA H100 80GB HBM3"}, GPUs: 1}, {Host: "b"}})
}

// A model name a message quotes stays one readable line, whatever an
// output names a GPU with (attacker trial of issue 30: a 20,000-byte name
// was printed whole; a tab raw).
func TestNodeStringCutsAndEscapesNames(t *testing.T) {
	cases := []struct {
		name, model, want string
	}{
		{"plain", "NVIDIA H100 80GB HBM3", "vm: 1 x NVIDIA H100 80GB HBM3"},
		{"long", strings.Repeat("H", 20000), "vm: 1 x " + strings.Repeat("H", 120) + "... (20000 bytes)"},
		{"tab and escape", "NVIDIA\tH100\x1b[2J", `vm: 1 x NVIDIA\tH100\x1b[2J`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Node{Host: "vm", GPUs: 1, Models: []string{c.model}}.String()
			assert.Equal(t, got, c.want)
		})
	}
}
