// Package health is the test plugin health.node: every node's health
// before any benchmark, vendor-neutral. One process per node runs
// collect.sh, which prints what the node's tools say (nvidia-smi -q -x and
// --query-gpu, nvlink --status, the kernel log's XID lines, dcgmi diag,
// amd-smi, ibstat, /sys/class/infiniband) with each line tagged by host and
// section; Parse regroups the lines by node and checks each node against
// what the SKU expects (its parameters), one check per node and kind, with
// the node in Check.Host and gpuaccept's fault code (framework/faults) in
// Check.Code when it fails. Files a tool wrote by itself (nvidia-smi -q -x
// > f.xml) are read too, so gpuaccept check judges outputs people have.
package health

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/plugins/internal/toolfail"
)

// PluginName is the plugin's name: its test is "health.node".
const PluginName = "health"

// The plugin is built into gpuaccept: registered for gpuaccept plugin
// serve health and the lists of built-in plugins (pluginapi.Builtins).
func init() { pluginapi.Register(PluginName, Plugin{}) }

// Version is the plugin's version, reported by Describe.
const Version = "0.1.0"

// Collect is the collection script every node runs (POSIX sh; $1 the
// dcgmi diag level).
//
//go:embed collect.sh
var Collect string

// Params are the parameters of health.node. A SKU suite sets them: the
// plugin never sees the SKU.
var Params = []pluginapi.Param{
	{Name: "gpus", Description: "GPUs per node the node must show; empty: the topology's GPUs per node"},
	{Name: "pcie_gen", Default: "0", Description: "PCIe generation every GPU link must reach (its max); 0: only current against max is checked"},
	{Name: "pcie_width", Default: "0", Description: "PCIe width (lanes) every GPU link must reach; 0: only current against max is checked"},
	{Name: "nvlinks", Default: "0", Description: "active NVLink links per GPU expected; 0: not counted (an inactive link listed still fails)"},
	{Name: "ib_rate", Default: "0", Unit: "Gb/s", Description: "rate every InfiniBand/RoCE port must run at (400: NDR); 0: not checked"},
	{Name: "hcas", Default: "0", Description: "InfiniBand/RoCE HCA ports the node must have; 0: not checked"},
	{Name: "xid_fatal", Default: fatalXIDs, Description: "XIDs that fail a node, comma-separated, ranges allowed (azurehpc-health-checks' list)"},
	{Name: "dcgm_level", Default: "0", Description: "run dcgmi diag -r LEVEL (1-4) where dcgmi is installed; 0: do not run it"},
}

// Plugin implements pluginapi.Plugin for node health.
type Plugin struct{}

// Describe implements pluginapi.Plugin.
func (Plugin) Describe(context.Context) (pluginapi.Description, error) {
	return pluginapi.Description{Name: PluginName, Version: Version, Tests: []pluginapi.TestInfo{{
		Name:        "node",
		Description: "each node's health before any benchmark: GPU count and model, ECC, row remaps, retired pages, clock events, PCIe, NVLink, persistence, XIDs, DCGM diag, InfiniBand/RoCE ports; failed checks name the node and a fault code (docs/FAULTS.md)",
		Params:      Params,
		Preflight:   true,
	}}}, nil
}

// settings are the parsed parameters.
type settings struct {
	gpus               int // -1: the topology's
	pcieGen, pcieWidth int
	nvlinks, hcas      int
	ibRate             float64
	xidFatal           map[int]bool
	dcgmLevel          int
}

func parseParams(p map[string]string) (settings, error) {
	fatal, _ := parseXIDList(fatalXIDs)
	s := settings{gpus: -1, xidFatal: fatal}
	count := func(v string, lo, hi int) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("%q is not a whole number from %d to %d", v, lo, hi)
		}
		return n, nil
	}
	_, err := pluginapi.ParseParams(p, Params, func(k, v string) (err error) {
		switch k {
		case "gpus":
			if strings.TrimSpace(v) != "" {
				if s.gpus, err = count(v, 0, 1024); err != nil {
					return err
				}
			}
		case "pcie_gen":
			if s.pcieGen, err = count(v, 0, 16); err != nil {
				return err
			}
		case "pcie_width":
			if s.pcieWidth, err = count(v, 0, 32); err != nil {
				return err
			}
		case "nvlinks":
			if s.nvlinks, err = count(v, 0, 64); err != nil {
				return err
			}
		case "hcas":
			if s.hcas, err = count(v, 0, 1024); err != nil {
				return err
			}
		case "dcgm_level":
			if s.dcgmLevel, err = count(v, 0, 4); err != nil {
				return err
			}
		case "ib_rate":
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || f < 0 || f > 1e5 {
				return fmt.Errorf("%q is not a rate in Gb/s", v)
			}
			s.ibRate = f
		case "xid_fatal":
			set, ok := parseXIDList(v)
			if !ok {
				return fmt.Errorf("%q is not a list of XIDs (48,56-58,79)", v)
			}
			s.xidFatal = set
		}
		return nil
	})
	return s, err
}

// Plan implements pluginapi.Plugin: one step, one process per node (not
// an MPI job: the rank starter only starts them), each running Collect.
func (Plugin) Plan(_ context.Context, req pluginapi.PlanRequest) (plan.Plan, error) {
	if req.Test != "node" {
		return plan.Plan{}, pluginapi.UnknownTest(PluginName, req.Test, []string{"node"})
	}
	s, err := parseParams(req.Params)
	if err != nil {
		return plan.Plan{}, fmt.Errorf("health.node: %w", err)
	}
	t := req.Topology
	if t.Nodes < 1 {
		return plan.Plan{}, pluginapi.TopologyError("health.node", t, "at least one node")
	}
	env, _, _ := pluginapi.SplitParams(req.Params, Params)
	if len(env) == 0 {
		env = nil
	}
	return plan.Plan{Steps: []plan.Step{{
		Name:         "node",
		Argv:         []string{"sh", "-c", Collect, "gpuaccept-health", strconv.Itoa(s.dcgmLevel)},
		Env:          env,
		Procs:        t.Nodes,
		ProcsPerNode: 1,
	}}}, nil
}

// Parse implements pluginapi.Plugin.
func (Plugin) Parse(_ context.Context, req pluginapi.ParseRequest) (result.Parsed, error) {
	if p, ok := pluginapi.NoOutputs(req); ok {
		return p, nil
	}
	var p result.Parsed
	s, err := parseParams(req.Params)
	if err != nil {
		p.Error = err.Error()
		return p, nil
	}
	if s.gpus < 0 {
		s.gpus = req.Topology.GPUsPerNode
	}
	var nodes []*nodeInput
	var errs []string
	for _, o := range req.Outputs {
		ns, e := readOutput(&p, o)
		nodes = append(nodes, ns...)
		errs = append(errs, e...)
	}
	errs = append(errs, judgeNodes(&p, nodes, s, req.Topology)...)
	if len(errs) > 0 {
		p.Error = strings.Join(errs, "; ")
	}
	return p, nil
}

// readOutput turns one step output (a tagged log, or a tool's own file)
// into nodes.
func readOutput(p *result.Parsed, o plan.Output) ([]*nodeInput, []string) {
	var errs []string
	if o.LaunchError != "" {
		errs = append(errs, o.LaunchError)
	}
	if o.Log == "" && len(o.Files) > 0 {
		// gpuaccept check hands a .json file without a log of its stem
		// (amd-smi --json, dcgmi diag -j > f.json) as the output's file:
		// each is read as the log would be.
		var names []string
		for k := range o.Files {
			names = append(names, k)
		}
		sort.Strings(names)
		var nodes []*nodeInput
		for _, k := range names {
			ns, e := readOutput(p, plan.Output{Step: o.Step, Log: o.Files[k], ExitCode: o.ExitCode})
			nodes = append(nodes, ns...)
			errs = append(errs, e...)
		}
		return nodes, errs
	}
	if o.Log == "" {
		return nil, append(errs, "the step wrote no log")
	}
	name := filepath.Base(o.Log)
	f, err := os.Open(o.Log)
	if err != nil {
		return nil, append(errs, fmt.Sprintf("open log: %v", err))
	}
	defer f.Close()
	nodes, strays, tagged, err := splitTagged(f, name)
	if err != nil {
		return nil, append(errs, fmt.Sprintf("read %s: %v", name, err))
	}
	if tagged {
		for _, st := range strays {
			if len(p.Diagnostics) < 50 {
				p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Info, Message: "not collect.sh output: " + clip(st.text), Source: fmt.Sprintf("%s:%d", name, st.no)})
			}
		}
		for _, n := range nodes {
			if !n.ended {
				errs = append(errs, fmt.Sprintf("%s: node %s's collection was cut short (no end line)", name, n.host))
			}
			if n.overflow {
				errs = append(errs, fmt.Sprintf("%s: node %s's collection is over %d MiB (a real one is about 1 MB): the rest is not read", name, n.host, maxNodeBytes>>20))
			}
		}
		if o.ExitCode != 0 && o.LaunchError == "" {
			errs = append(errs, fmt.Sprintf("exited with status %d", o.ExitCode))
		}
		return nodes, errs
	}
	// A tool's own output: one section of a node without a name.
	if _, err := f.Seek(0, 0); err != nil {
		return nil, append(errs, fmt.Sprintf("read %s: %v", name, err))
	}
	// The file's lines as the tool printed them (pastedLine: no prompt,
	// no collector's labels) are what is sniffed and parsed. A paste of
	// several commands ("$ nvidia-smi -q", its output, "$ dmesg | grep
	// NVRM", its lines) is split at each prompt line into parts, each
	// sniffed and read as its own section of the one node: sniffing the
	// whole file once would read it as its first tool and drop the rest
	// (an Xid 79 after a healthy -q passed).
	var parts []*pastePart
	cur := &pastePart{}
	parts = append(parts, cur)
	total := 0
	if err := readLines(f, func(text string, no int) {
		t, ok := pastedLine(text)
		if !ok {
			cur = &pastePart{prompt: line{strings.TrimSpace(text), no}, hasPrompt: true}
			parts = append(parts, cur)
			return
		}
		if total >= maxLines {
			return
		}
		total++
		cur.lines = append(cur.lines, line{t, no})
		if len(cur.head) < 64<<10 {
			cur.head = append(append(cur.head, t...), '\n')
		}
	}); err != nil {
		return nil, append(errs, fmt.Sprintf("read %s: %v", name, err))
	}
	k := 0
	for _, pt := range parts {
		k += len(pt.head)
	}
	if k == 0 {
		// Nothing to judge: an empty file or stream is what a failed
		// collection leaves (kubectl logs of a pod that never ran, a cut
		// ssh), never evidence of health. A real empty nvlink --status (a
		// GPU without NVLink peers) is told apart only inside collect.sh's
		// tagged log, where its section names the tool.
		return nil, append(errs, name+" is empty: nothing to judge")
	}
	n := &nodeInput{sections: map[string]*section{}, begun: true, ended: true}
	var unknown []*pastePart
	for _, pt := range parts {
		if strings.TrimSpace(string(pt.head)) == "" {
			if pt.hasPrompt && len(parts) > 1 {
				// A command that printed nothing (grep finding no line):
				// said, since nothing of it is judged.
				p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Info, Message: fmt.Sprintf("%q printed nothing", clip(pt.prompt.text)), Source: fmt.Sprintf("%s:%d", name, pt.prompt.no)})
			}
			continue
		}
		kind := sniff(pt.head)
		if kind == "" {
			unknown = append(unknown, pt)
			continue
		}
		n.addPart(kind, name, pt.lines)
	}
	for _, pt := range unknown {
		// A GPU tool's own "could not run" message ("NVIDIA-SMI has
		// failed because it couldn't communicate with the NVIDIA
		// driver"), saved as its output: say so, not just "not an output".
		for i, l := range pt.lines {
			if k, _ := toolfail.Classify(l.text); k == toolfail.Setup {
				errs = append(errs, fmt.Sprintf("%s:%d: %s%s", name, l.no, toolfail.CouldNotRun, clip(strings.TrimSpace(l.text))))
				pt.setup = true
				break
			}
			if i >= 20 {
				break
			}
		}
	}
	if len(n.order) == 0 {
		if len(unknown) > 0 && unknown[0].setup {
			return nil, errs
		}
		return nil, append(errs, fmt.Sprintf("%s: not an output health.node reads (nvidia-smi -q -x, nvidia-smi -q, nvidia-smi --query-gpu CSV, nvidia-smi nvlink --status, dmesg, dcgmi diag -j or its table, ibstat, ibv_devinfo, ibstatus, amd-smi static/metric --json or text, amd-smi list/monitor, rocm-smi --json or text, or collect.sh's tagged log)", name))
	}
	for _, pt := range unknown {
		if pt.setup {
			continue
		}
		// Never dropped in silence: a part no reader knows may be the
		// one that shows the fault.
		what := "the text"
		at := pt.lines[0].no
		if pt.hasPrompt {
			what, at = fmt.Sprintf("the output of %q", clip(pt.prompt.text)), pt.prompt.no
		}
		p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: fmt.Sprintf("%s (lines %d-%d) is not an output health.node reads: not judged", what, pt.lines[0].no, pt.lines[len(pt.lines)-1].no), Source: fmt.Sprintf("%s:%d", name, at)})
	}
	return []*nodeInput{n}, errs
}

// pastePart is the text of one command of a paste: the lines after a
// prompt line (or before the first).
type pastePart struct {
	prompt    line
	hasPrompt bool
	lines     []line
	head      []byte
	setup     bool // a GPU tool's could-not-run line, said as an error
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:160] + "..."
	}
	return s
}
