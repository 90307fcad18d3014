// Package skuauto is --sku auto: it runs the preflight test (health.node)
// on the run's nodes through the run's launcher, as any test step runs,
// reads the GPUs its plugin names (result.HardwareInfo) and picks the SKU
// whose gpu_variant lists them (sku.Catalog.PickForGPU). It never reads a
// tool's output itself: the plugin parses, this package groups the
// devices the plugin named by host.
package skuauto

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Auto is the --sku value that asks for the SKU to be picked from the
// hardware (sku.Auto).
const Auto = sku.Auto

// ProbeTest is the test the probe runs: the health plugin's preflight
// test, which names every GPU each node shows.
const ProbeTest = "health.node"

// Node is one host's GPUs as the probe's outputs show them.
type Node struct {
	// Host is the node's name as the output prints it ("" when it names
	// none: a tool's own output pasted without a host).
	Host string
	// Models are the GPU model names shown on the host, sorted, each once.
	Models []string
	// GPUs is how many GPUs the host shows, named or not.
	GPUs int
	// Unnamed is how many of them show no model name.
	Unnamed int
}

// String is "HOST: 8 x NVIDIA H100 80GB HBM3".
func (n Node) String() string {
	host := n.Host
	if host == "" {
		host = "(no host named)"
	}
	switch {
	case n.GPUs == 0:
		return host + ": no GPU"
	case len(n.Models) == 1 && n.Unnamed == 0:
		return fmt.Sprintf("%s: %d x %s", host, n.GPUs, shownName(n.Models[0]))
	}
	shown := make([]string, len(n.Models))
	for i, m := range n.Models {
		shown[i] = shownName(m)
	}
	what := strings.Join(shown, ", ")
	if n.Unnamed > 0 {
		what = strings.TrimPrefix(what+fmt.Sprintf(", %d without a model name", n.Unnamed), ", ")
	}
	return fmt.Sprintf("%s: %d GPUs (%s)", host, n.GPUs, what)
}

// NodesOf groups the GPUs of ds by host, sorted by host; NIC devices are
// left out. hosts, when given, are the nodes the probe ran on: where the
// outputs name nodes by these names, one that shows no GPU is listed with
// none, so that a refusal names it (a launcher that names nodes its own
// way, a replayed folder of other hosts, lists only the nodes shown).
func NodesOf(ds []result.Device, hosts []string) []Node {
	by := map[string]*Node{}
	ours := len(hosts) > 0
	for _, d := range ds {
		if d.Kind == result.GPUDevice && !slices.Contains(hosts, d.Host) {
			ours = false
		}
	}
	if ours {
		for _, h := range hosts {
			by[h] = &Node{Host: h}
		}
	}
	for _, d := range ds {
		if d.Kind != result.GPUDevice {
			continue
		}
		n := by[d.Host]
		if n == nil {
			n = &Node{Host: d.Host}
			by[d.Host] = n
		}
		n.GPUs++
		if d.Name == "" {
			n.Unnamed++
		} else if !slices.Contains(n.Models, d.Name) {
			n.Models = append(n.Models, d.Name)
		}
	}
	out := make([]Node, 0, len(by))
	for _, n := range by {
		sort.Strings(n.Models)
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}

// maxShownName bounds, in runes, a model name a message quotes: an output
// may name a GPU with anything, and a refusal must stay one readable line.
const maxShownName = 120

// shownName is a model name as a message quotes it: cut to maxShownName
// runes (saying how long it was) and escaped (redact.PrintableLine).
func shownName(name string) string {
	if r := []rune(name); len(r) > maxShownName {
		name = fmt.Sprintf("%s... (%d bytes)", string(r[:maxShownName]), len(name))
	}
	return redact.PrintableLine(name)
}

// Choice is what --sku auto picked and why.
type Choice struct {
	// SKU is the SKU picked.
	SKU *sku.SKU
	// Model is the GPU model every node shows.
	Model string
	// GPUsPerNode is the GPU count every node shows: the run's
	// --gpus-per-node unless the flag was given (then they are equal).
	GPUsPerNode int
	// Nodes are the nodes the probe saw.
	Nodes []Node
	// Also are the other SKUs that list Model, most preferred first.
	Also []*sku.SKU
}

// Line is the one line --sku auto prints: "--sku auto: h100 (2 nodes,
// each 8 x NVIDIA H100 80GB HBM3: listed in SKU h100's gpu_variant;
// built-in); also matches a100-ndmv4 (...): give --sku a100-ndmv4 for it".
func (c *Choice) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "--sku auto: %s (%s, each %d x %s: listed in SKU %s's gpu_variant; %s)", c.SKU.Name, result.Count(len(c.Nodes), "node"),
		c.GPUsPerNode, c.Model, c.SKU.Name, c.SKU.AutoWhy())
	for _, s := range c.Also {
		fmt.Fprintf(&b, "; also matches %s (%s): give --sku %s for it", s.Name, s.AutoWhy(), s.Name)
	}
	return b.String()
}

// Note is how the SKU was picked, for the run's notes (result.Run.Notes):
// Line, naming each host.
func (c *Choice) Note() string {
	hosts := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		hosts[i] = n.String()
	}
	return c.Line() + "; nodes seen by " + ProbeTest + ": " + strings.Join(hosts, "; ")
}

// Resolve picks the SKU of cat for nodes (NodesOf): every node must show
// GPUs, all of one model and as many on each; gpus, when above 0, is the
// --gpus-per-node given, which the nodes' count must equal. An error names
// each host with what it shows, or the model no SKU lists (PickForGPU);
// the caller exits 2 on it.
func Resolve(cat *sku.Catalog, nodes []Node, gpus int) (*Choice, error) {
	if len(nodes) == 0 {
		return nil, errors.New("--sku auto: the probe's outputs name no node and no GPU: give --sku (gpuaccept list skus)")
	}
	var bad []string
	for _, n := range nodes {
		switch {
		case n.GPUs == 0:
			bad = append(bad, n.String())
		case n.Unnamed > 0 || len(n.Models) != 1:
			bad = append(bad, n.String())
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("--sku auto: cannot tell one GPU model on every node: %s; give --sku (gpuaccept list skus)", strings.Join(hostList(nodes, bad), "; "))
	}
	first := nodes[0]
	for _, n := range nodes[1:] {
		if n.Models[0] != first.Models[0] || n.GPUs != first.GPUs {
			all := make([]string, len(nodes))
			for i, m := range nodes {
				all[i] = m.String()
			}
			return nil, fmt.Errorf("--sku auto: the nodes disagree: %s; one run signs off one SKU: give --sku and --hosts of one kind", strings.Join(all, "; "))
		}
	}
	if gpus > 0 && gpus != first.GPUs {
		return nil, fmt.Errorf("--sku auto: --gpus-per-node %d, but %s %s %s: leave --gpus-per-node out, or give --sku", gpus,
			result.Count(len(nodes), "node"), result.Noun(len(nodes), "shows", "each show"), result.Count(first.GPUs, "GPU"))
	}
	s, also, err := cat.PickForGPU(first.Models[0])
	if err != nil {
		return nil, fmt.Errorf("--sku auto: %s: %w", hostList(nodes, nil)[0], err)
	}
	return &Choice{SKU: s, Model: first.Models[0], GPUsPerNode: first.GPUs, Nodes: nodes, Also: also}, nil
}

// hostList is bad when given, else the nodes in words: "vm: 1 x NVIDIA
// H100 80GB HBM3" for one node, "2 nodes, each ..." for several alike.
func hostList(nodes []Node, bad []string) []string {
	if len(bad) > 0 {
		return bad
	}
	if len(nodes) == 1 {
		return []string{nodes[0].String()}
	}
	return []string{fmt.Sprintf("%s, each %d x %s", result.Count(len(nodes), "node"), nodes[0].GPUs, nodes[0].Models[0])}
}

// ProbeOptions are what the probe runs with.
type ProbeOptions struct {
	// Plugins plans and parses ProbeTest.
	Plugins runner.Plugins
	// Launcher is the run's launcher (built with no SKU: none is known
	// yet), on the run's hosts.
	Launcher launch.Launcher
	// Topology is where the probe runs: the run's nodes and hosts, and
	// the GPUs per node a launcher that hands a step only the GPUs it asks
	// for (Slurm, Kubernetes) gives it.
	Topology plan.Topology
	// Dir is a folder the probe's outputs are written to (and a Slurm
	// launcher's staging, so on the cluster's shared storage); the caller
	// removes it.
	Dir string
	// Timeout bounds the probe (zero: none).
	Timeout time.Duration
}

// Probe runs ProbeTest with no parameters but the topology's through
// o.Launcher, exactly as a run's step is launched, and returns the nodes
// its plugin names GPUs on (NodesOf). An error says why none could be
// read: the test is not a preflight test of its plugin, planning or
// launching failed, or the outputs name no GPU (with the plugin's own
// error, where it gave one).
func Probe(ctx context.Context, o ProbeOptions) ([]Node, error) {
	pluginName, test, _ := runner.SplitName(ProbeTest)
	if !runner.IsPreflight(ctx, o.Plugins, pluginName, test) {
		return nil, fmt.Errorf("--sku auto: plugin %s does not declare %s a preflight test, which the probe runs: give --sku", pluginName, ProbeTest)
	}
	// A launcher that replays recordings made at a known scope (replay's
	// RecordedScope) is probed at it: any other is refused there.
	if r, ok := o.Launcher.(interface{ RecordedScope() plan.Scope }); ok {
		if sc := r.RecordedScope(); !sc.IsZero() && sc.Nodes == o.Topology.Nodes {
			o.Topology.Scope = sc
		}
	}
	req := pluginapi.PlanRequest{Test: test, Topology: o.Topology}
	pl, err := o.Plugins.Plan(ctx, pluginName, req)
	if err != nil {
		return nil, fmt.Errorf("--sku auto: plan %s: %w", ProbeTest, err)
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("--sku auto: probe folder %s: %w", o.Dir, err)
	}
	testDir := filepath.Join(dir, ProbeTest)
	if err := os.MkdirAll(testDir, 0o755); err != nil {
		return nil, fmt.Errorf("--sku auto: probe folder: %w", err)
	}
	red := redact.FromEnv(os.Environ(), nil)
	outs, err := o.Launcher.Launch(ctx, launch.Request{Test: ProbeTest, Plan: pl, Topology: o.Topology, Dir: testDir, Root: dir, Timeout: o.Timeout, Redactor: red})
	if err != nil {
		return nil, fmt.Errorf("--sku auto: %s through launcher %s: %w; give --sku", ProbeTest, o.Launcher.Name(), err)
	}
	parsed, err := o.Plugins.Parse(ctx, pluginName, pluginapi.ParseRequest{Test: test, Topology: o.Topology, Outputs: outs})
	if err != nil {
		return nil, fmt.Errorf("--sku auto: parse %s: %w", ProbeTest, err)
	}
	for _, out := range outs {
		if parsed.Error == "" && out.LaunchError != "" {
			parsed.Error = out.LaunchError
		}
	}
	parsed.Error = redact.PrintableLine(red.String(parsed.Error))
	nodes, err := NodesOfParsed(parsed, o.Topology.Hosts)
	if err != nil {
		return nil, fmt.Errorf("--sku auto: %s through launcher %s %w", ProbeTest, o.Launcher.Name(), err)
	}
	return nodes, nil
}

// NodesOfParsed is NodesOf the devices p, the probe's parsed outputs,
// names (result.HardwareInfo), hosts being the nodes it ran on. An error
// (worded to follow "health.node through launcher L") when p names no
// GPU, or when its plugin could not read all of them (p.Error: a node
// that did not report, a tool that could not run, an output cut short or
// elided), since the GPUs seen may then not be all the nodes have.
func NodesOfParsed(p result.Parsed, hosts []string) ([]Node, error) {
	_, ds, err := result.StripHardware(p)
	if err != nil {
		return nil, fmt.Errorf("named its hardware wrongly: %w", err)
	}
	nodes := NodesOf(ds, hosts)
	gpus := 0
	for _, n := range nodes {
		gpus += n.GPUs
	}
	switch {
	case gpus == 0:
		why := p.Error
		for _, c := range p.Checks {
			// The plugin's own word on the node (health.node: "no GPU
			// tool ... found") says more than that none was named.
			if why == "" && !c.OK && !c.Warn {
				why = c.Name + ": " + c.Message
			}
		}
		if why == "" {
			why = "its outputs name no GPU"
		}
		return nil, fmt.Errorf("showed no GPU (%s): give --sku (gpuaccept list skus)", why)
	case p.Error != "":
		seen := make([]string, len(nodes))
		for i, n := range nodes {
			seen[i] = n.String()
		}
		return nil, fmt.Errorf("could not read every output (%s), so the GPUs seen (%s) may not be all the nodes have: give --sku (gpuaccept list skus)", p.Error, strings.Join(seen, "; "))
	}
	return nodes, nil
}
