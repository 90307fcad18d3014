// Package hostlink is the test plugin for a node's host links and GPU
// peer links: pinned host→device and device→host bandwidth per GPU
// (hostlink.pcie) and the GPU↔GPU copy matrix (hostlink.p2p). It runs
// workloads/torchbench.py, or nvbandwidth or TransferBench where a site
// has them (parameter tool), and reads the outputs of all three by their
// content, so that gpuaccept check takes any of them. With torchbench.py,
// pcie's copies run bound to each GPU's NUMA node, and where they ran (the
// placement) goes to Info "context", which the judge adds to the verdict
// of a low figure (placement.go).
package hostlink

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/plugins/internal/torchbench"
)

// PluginName is the plugin's name: its tests are "hostlink.pcie" and
// "hostlink.p2p".
const PluginName = "hostlink"

// The plugin is built into gpuaccept: registered for gpuaccept plugin
// serve hostlink and the lists of built-in plugins (pluginapi.Builtins).
func init() { pluginapi.Register(PluginName, Plugin{}) }

// Version is the plugin's version, reported by Describe.
const Version = "0.1.0"

// Tools are the values of the tool parameter.
var Tools = []string{"torch", "nvbandwidth", "transferbench"}

// Params are the parameters of both tests, with defaults.
var Params = append([]pluginapi.Param{
	{Name: "tool", Default: "torch", Description: "what measures: torch (workloads/torchbench.py), nvbandwidth (NVIDIA's, -j JSON) or transferbench (ROCm's TransferBench)"},
	{Name: "bindir", Description: "folder holding nvbandwidth or TransferBench; empty: found on PATH"},
	{Name: "bytes", Default: "1073741824", Unit: "bytes", Description: "torch: bytes per copy"},
	{Name: "iters", Default: "50", Unit: "iterations", Description: "torch: the script's --iters; it times max(5, iters/5) copies per repeat"},
	{Name: "repeats", Default: "5", Description: "torch: repeats; the best is reported"},
	{Name: "numa", Default: "on", Description: "torch, hostlink.pcie: on binds each GPU's copies and pinned buffer to the GPU's NUMA node where the host exposes one; off measures wherever the process landed (to compare both placements on one host). Either way the placement is recorded (Info context)"},
}, append(torchbench.Params,
	pluginapi.Param{Name: "env.NAME", Description: "environment variable NAME for the tool"})...)

// Plugin implements pluginapi.Plugin for hostlink.
type Plugin struct{}

// Describe implements pluginapi.Plugin.
func (Plugin) Describe(context.Context) (pluginapi.Description, error) {
	return pluginapi.Description{Name: PluginName, Version: Version, Tests: []pluginapi.TestInfo{
		{
			Name:        "pcie",
			Description: "pinned host→device and device→host copy bandwidth per GPU (torchbench.py, nvbandwidth or TransferBench)",
			Params:      Params,
			Metrics: []pluginapi.MetricInfo{{Name: "bw", Unit: "GB/s",
				Description: "bytes copied / time between pinned host memory and one GPU, best of the repeats, 1e9 B/s",
				Labels:      append([]string{"direction=h2d|d2h", "gpu", "host"}, toolLabels...), InstanceLabels: []string{"gpu", "host", "cpu"},
				Better: result.BetterHigher, Plot: result.PlotLabels, Record: true},
				{Name: "bw_total", Unit: "GB/s", Description: "nvbandwidth and TransferBench bidirectional runs: both directions summed, 1e9 B/s",
					Labels: append([]string{"direction=h2d|d2h", "gpu", "host"}, toolLabels...), InstanceLabels: []string{"gpu", "host", "cpu"}, Better: result.BetterHigher},
				{Name: "latency", Unit: "us", Description: "nvbandwidth latency testcases: one access, microseconds",
					Labels: append([]string{"direction=h2d|d2h", "gpu", "host"}, toolLabels...), InstanceLabels: []string{"gpu", "host", "cpu"}, Better: result.BetterLower}},
		},
		{
			Name:        "p2p",
			Description: "GPU→GPU copy bandwidth of every ordered pair of a node's GPUs (torchbench.py, nvbandwidth or TransferBench)",
			Params:      Params,
			Metrics: []pluginapi.MetricInfo{{Name: "bw", Unit: "GB/s",
				Description: "bytes copied / time from GPU src to GPU dst, best of the repeats, 1e9 B/s",
				Labels:      append([]string{"src", "dst", "host"}, toolLabels...), InstanceLabels: []string{"src", "dst", "host"},
				Better: result.BetterHigher, Plot: result.PlotLabels, Record: true},
				{Name: "bw_total", Unit: "GB/s", Description: "nvbandwidth and TransferBench bidirectional runs: both directions summed, 1e9 B/s",
					Labels: append([]string{"src", "dst", "host"}, toolLabels...), InstanceLabels: []string{"src", "dst", "host"}, Better: result.BetterHigher},
				{Name: "latency", Unit: "us", Description: "nvbandwidth latency testcases: one access, microseconds",
					Labels: append([]string{"src", "dst", "host"}, toolLabels...), InstanceLabels: []string{"src", "dst", "host"}, Better: result.BetterLower}},
		},
	}}, nil
}

type settings struct {
	torchbench.Settings
	tool, bindir string
	// numaOff passes --numa off: the copies run unbound.
	numaOff bool
	env     map[string]string
}

func parseParams(p map[string]string) (settings, error) {
	s := settings{tool: "torch"}
	env, err := pluginapi.ParseParams(p, Params, func(k, v string) error {
		if ok, err := s.Setting(k, v); ok {
			return err
		}
		switch k {
		case "tool":
			found := false
			for _, t := range Tools {
				found = found || t == v
			}
			if !found {
				return fmt.Errorf("%q is not one of %s", v, strings.Join(Tools, ", "))
			}
			s.tool = v
		case "bindir":
			s.bindir = v
		case "numa":
			if v != "on" && v != "off" {
				return fmt.Errorf("%q is not on or off", v)
			}
			s.numaOff = v == "off"
		}
		return nil
	})
	s.env = env
	return s, err
}

// nvbandwidthTests are nvbandwidth's testcases per test: copy engine
// transfers, the ones nvbandwidth runs by default and DCGM's diag uses.
var nvbandwidthTests = map[string][]string{
	"pcie": {"host_to_device_memcpy_ce", "device_to_host_memcpy_ce"},
	"p2p":  {"device_to_device_memcpy_write_ce"},
}

// Plan implements pluginapi.Plugin: one step, one process per node that
// measures all of its GPUs. p2p needs two GPUs per node or more.
func (Plugin) Plan(_ context.Context, req pluginapi.PlanRequest) (plan.Plan, error) {
	if req.Test != "pcie" && req.Test != "p2p" {
		return plan.Plan{}, pluginapi.UnknownTest(PluginName, req.Test, []string{"pcie", "p2p"})
	}
	s, err := parseParams(req.Params)
	if err != nil {
		return plan.Plan{}, fmt.Errorf("hostlink.%s: %w", req.Test, err)
	}
	t := req.Topology
	if err := pluginapi.CheckTopology(PluginName+"."+req.Test, t); err != nil {
		return plan.Plan{}, err
	}
	if req.Test == "p2p" && t.GPUsPerNode < 2 {
		return plan.Plan{}, pluginapi.TopologyError("hostlink.p2p", t, "p2p needs 2 GPUs per node or more")
	}
	bin := func(name string) string {
		if s.bindir == "" {
			return name
		}
		return filepath.Join(s.bindir, name)
	}
	step := plan.Step{Name: req.Test, Procs: t.Nodes, ProcsPerNode: 1}
	if len(s.env) > 0 {
		step.Env = s.env
	}
	switch s.tool {
	case "nvbandwidth":
		step.Argv = []string{bin("nvbandwidth"), "-j"}
		for _, tc := range nvbandwidthTests[req.Test] {
			step.Argv = append(step.Argv, "-t", tc)
		}
	case "transferbench":
		// TransferBench's p2p preset measures CPU↔GPU and GPU↔GPU.
		step.Argv = []string{bin("TransferBench"), "p2p"}
	default:
		tests := []string{"h2d", "d2h"}
		args := s.CountArgs()
		if req.Test == "p2p" {
			tests = []string{"p2p"}
		} else if s.numaOff {
			// Only when asked: a script= copy older than --numa refuses
			// the flag, and on is its default.
			args = append(args, "--numa", "off")
		}
		step = torchbench.Step(torchbench.StepOptions{Name: req.Test, Python: s.Python, Script: s.Script, Tests: tests, Args: args, Env: s.env, Nodes: t.Nodes})
	}
	return plan.Plan{Steps: []plan.Step{step}}, nil
}

// sniffMax is how much of an output is read to tell which tool wrote it.
const sniffMax = 1 << 20

// Parse implements pluginapi.Plugin.
func (Plugin) Parse(_ context.Context, req pluginapi.ParseRequest) (result.Parsed, error) {
	var p result.Parsed
	if req.Test != "pcie" && req.Test != "p2p" {
		p.Error = pluginapi.UnknownTest(PluginName, req.Test, []string{"pcie", "p2p"}).Error()
		return p, nil
	}
	if p, ok := pluginapi.NoOutputs(req); ok {
		return p, nil
	}
	var errs, names []string
	var tb torchbench.Output
	external := false
	for _, o := range req.Outputs {
		if o.LaunchError != "" {
			errs = append(errs, fmt.Sprintf("step %s: %s", o.Step, o.LaunchError))
		} else if o.ExitCode != 0 {
			errs = append(errs, fmt.Sprintf("step %s exited with status %d", o.Step, o.ExitCode))
		}
		// Every file of the output: check hands a lone nvbandwidth -j
		// X.json as a Files entry with no Log.
		for _, path := range torchbench.Paths(o) {
			name := filepath.Base(path)
			head, err := readHead(path)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			var tool func(string) (result.Parsed, error)
			switch {
			case torchbench.Sniff(head):
			case sniffNvbandwidth(head):
				tool = parseNvbandwidth
			case sniffTransferBench(head):
				tool = parseTransferBench
			}
			if tool != nil {
				external = true
				r, err := tool(path)
				if err != nil {
					errs = append(errs, fmt.Sprintf("parse %s: %v", name, err))
					continue
				}
				if r.Error != "" {
					errs = append(errs, r.Error)
				}
				if msg := merge(&p, r, req.Test, name); msg != "" {
					errs = append(errs, msg)
				}
				continue
			}
			f, err := os.Open(path)
			if err != nil {
				errs = append(errs, fmt.Sprintf("open %s: %v", name, err))
				continue
			}
			r, err := torchbench.Parse(f, name)
			f.Close()
			if err != nil {
				errs = append(errs, err.Error())
			}
			tb.Merge(r)
			names = append(names, name)
		}
	}
	if tb.Records > 0 || len(tb.Errors) > 0 || !external {
		errs = append(errs, judgeTorch(&p, req.Test, req.Topology, tb, strings.Join(names, ","))...)
	} else if len(p.Metrics) > 0 {
		p.Checks = append(p.Checks, toolCounts(p.Metrics, req.Topology)...)
	}
	if len(errs) > 0 {
		p.Error = strings.Join(errs, "; ")
	}
	return p, nil
}

func readHead(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	head := make([]byte, sniffMax)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	return head[:n], nil
}

// toolLabels are the labels nvbandwidth's and TransferBench's parsers add,
// by which a baseline entry can pick one testcase or copy engine.
var toolLabels = []string{"testcase", "stream", "mode", "executor", "cpu"}

// merge adds what an nvbandwidth or TransferBench parser found in file to
// p, keeping what belongs to test: pcie's metrics are host↔GPU copies
// (direction h2d or d2h; a GPU's copy within its own memory, "local", and
// CPU↔CPU, "h2h", are neither test's), p2p's carry a src and a dst (one
// output of those tools may hold both kinds), and each check goes to the
// test checkTest names. It returns an error when file holds no metric of
// test, naming the test its copies are for.
func merge(p *result.Parsed, r result.Parsed, test, file string) string {
	kept, other := 0, 0
	for _, m := range r.Metrics {
		if metricTest(m) == test {
			p.Metrics = append(p.Metrics, m)
			kept++
		} else if metricTest(m) != "" {
			other++
		}
	}
	for _, c := range r.Checks {
		if t := checkTest(c.Name); t == "" || t == test {
			p.Checks = append(p.Checks, c)
		}
	}
	p.Diagnostics = append(p.Diagnostics, r.Diagnostics...)
	for k, v := range r.Info {
		if p.Info == nil {
			p.Info = map[string]string{}
		}
		if p.Info[k] == "" {
			p.Info[k] = v
		}
	}
	if kept > 0 || other == 0 && r.Error != "" {
		// An output with no metric at all has said why in r.Error.
		return ""
	}
	what := map[string]string{"pcie": "host-to-device or device-to-host", "p2p": "GPU-to-GPU"}
	msg := fmt.Sprintf("%s: no %s measurement", file, what[test])
	if other > 0 {
		o := map[string]string{"pcie": "p2p", "p2p": "pcie"}[test]
		msg += fmt.Sprintf(" (it holds %s copies: --test hostlink.%s)", what[o], o)
	}
	return msg
}

// metricTest is the test a tool metric belongs to: "pcie" for a host
// link (direction h2d or d2h), "p2p" for a GPU pair (src and dst), ""
// for neither (a GPU's local copy, CPU to CPU).
func metricTest(m result.Metric) string {
	dir := m.Labels["direction"]
	_, src := m.Labels["src"]
	_, dst := m.Labels["dst"]
	switch {
	case dir == "h2d" || dir == "d2h":
		return "pcie"
	case src && dst:
		return "p2p"
	}
	return ""
}

// checkTest is the test a check of the nvbandwidth or TransferBench
// parser belongs to, by its name: "p2p paths ..." (a GPU pair not
// measured) is p2p's; "host link ..." (a GPU's host link not measured)
// is pcie's; "testcase NAME" (nvbandwidth could not run it) and "data
// verification NAME" (wrong bytes in its copies) go with NAME's kind
// (testcaseTest). "" is both tests': a check without a testcase, or one
// whose testcase is of neither kind or unknown.
func checkTest(name string) string {
	switch {
	case strings.HasPrefix(name, "p2p paths"):
		return "p2p"
	case strings.HasPrefix(name, "host link"):
		return "pcie"
	case strings.HasPrefix(name, "testcase "):
		return testcaseTest(strings.TrimPrefix(name, "testcase "))
	case strings.HasPrefix(name, "data verification "):
		return testcaseTest(strings.TrimPrefix(name, "data verification "))
	}
	return ""
}

// testcaseTest is the test an nvbandwidth testcase measures for: one
// with the host in its name (host_to_device_*, device_to_host_*,
// host_to_all_*, all_to_host_*, host_device_latency_sm) copies over a
// host link, pcie; one between devices (device_to_device_*, including
// device_to_device_latency_sm, all_to_one_*, one_to_all_*, and their
// multinode_ forms) is p2p's. A name of neither kind (device_local_copy,
// "?" for a name nvbandwidth did not know) is "".
func testcaseTest(tc string) string {
	tc = strings.TrimPrefix(tc, "multinode_")
	switch {
	case strings.Contains(tc, "host"):
		return "pcie"
	case strings.HasPrefix(tc, "device_to_device"), strings.HasPrefix(tc, "all_to_one"), strings.HasPrefix(tc, "one_to_all"):
		return "p2p"
	}
	return ""
}

// judgeTorch turns the script's h2d/d2h or p2p records into metrics and
// the completeness gates.
func judgeTorch(p *result.Parsed, test string, topo plan.Topology, o torchbench.Output, name string) []string {
	var errs []string
	for _, d := range o.Diags {
		p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: d})
	}
	seen := torchbench.Seen{}
	var items, unpinned, noPeer []string
	found := false
	switch test {
	case "pcie":
		items = []string{"h2d", "d2h"}
		for _, c := range o.Copies {
			found = true
			seen.Add(c.Host, c.GPU, c.Direction)
			if !c.Pinned {
				unpinned = append(unpinned, fmt.Sprintf("%s %s (line %d)", torchbench.GPUKey(c.Host, c.GPU), c.Direction, c.Line))
			}
			labels := map[string]string{"direction": c.Direction, "gpu": strconv.Itoa(c.GPU)}
			if c.Host != "" {
				labels["host"] = c.Host
			}
			p.Metrics = append(p.Metrics, result.Metric{Name: "bw", Value: c.GBps, Unit: "GB/s", Labels: labels})
		}
	case "p2p":
		// GPU s must have copied to every other GPU of its node: item
		// "to GPU d" for each d, its own given.
		for d := 0; d < topo.GPUsPerNode; d++ {
			items = append(items, "to GPU "+strconv.Itoa(d))
		}
		for _, h := range o.Hosts() {
			for g := 0; g < topo.GPUsPerNode; g++ {
				seen.Add(h, g, "to GPU "+strconv.Itoa(g))
			}
		}
		for _, x := range o.P2P {
			found = true
			seen.Add(x.Host, x.Src, "to GPU "+strconv.Itoa(x.Dst))
			if !x.PeerAccess {
				noPeer = append(noPeer, fmt.Sprintf("%s→%d", torchbench.GPUKey(x.Host, x.Src), x.Dst))
			}
			labels := map[string]string{"src": strconv.Itoa(x.Src), "dst": strconv.Itoa(x.Dst)}
			if x.Host != "" {
				labels["host"] = x.Host
			}
			p.Metrics = append(p.Metrics, result.Metric{Name: "bw", Value: x.GBps, Unit: "GB/s", Labels: labels})
		}
	}
	var hosts []string
	if found || len(o.Errors) > 0 {
		hosts = o.Hosts()
	}
	complete, cause := torchbench.Complete(topo, o, hosts, items, seen, test)
	p.Checks = append(p.Checks, complete...)
	if len(unpinned) > 0 {
		p.Checks = append(p.Checks, result.Check{Name: "pinned host memory", OK: false, Warn: true,
			Message: "copies from pageable host memory, which measure the CPU's copy and not the link: " + strings.Join(unpinned, ", ")})
	}
	if len(noPeer) > 0 {
		sort.Strings(noPeer)
		p.Checks = append(p.Checks, result.Check{Name: "peer access", OK: false, Warn: true,
			Message: "torch reports no peer access, so these copies went through host memory: " + strings.Join(noPeer, ", ")})
	}
	p.Checks = append(p.Checks, torchbench.ErrorChecks(o, name)...)
	info, checks := torchbench.Facts(o, nil)
	p.Checks = append(p.Checks, checks...)
	if test == "pcie" {
		// Where the copies ran: the judge adds it to a verdict a low
		// figure warns or fails, and results.json keeps it either way.
		if t := placementText(o.Copies); t != "" {
			info[placementInfo] = t
		}
	}
	for k, v := range info {
		if p.Info == nil {
			p.Info = map[string]string{}
		}
		p.Info[k] = v
	}
	switch {
	case cause != "" && !found:
		errs = append(errs, fmt.Sprintf("no %s result; %s: %s", test, name, cause))
	case cause != "":
		errs = append(errs, fmt.Sprintf("%s: %s", name, cause))
	case !found:
		if len(o.Errors) > 0 {
			e := o.Errors[0]
			errs = append(errs, fmt.Sprintf("no %s result; %s:%d: %s", test, name, e.Line, e.Message))
		} else {
			where := "in " + name
			if name == "" {
				where = "(no output file)"
			}
			errs = append(errs, fmt.Sprintf("no %s record %s: not torchbench.py, nvbandwidth or TransferBench output", test, where))
		}
	}
	return errs
}

// toolCounts are the gates on an nvbandwidth or TransferBench output that
// torchbench's records get from Complete: the GPUs it measured against the
// scope's GPUs per node (a 1-GPU output must not pass an 8-GPU scope), and
// for a scope of several nodes a warning that these tools name no node, so
// their count cannot be checked.
func toolCounts(ms []result.Metric, topo plan.Topology) []result.Check {
	gpus := map[string]bool{}
	for _, m := range ms {
		for _, k := range []string{"gpu", "src", "dst"} {
			if g := m.Labels[k]; g != "" && g != "all" {
				gpus[g] = true
			}
		}
	}
	want := topo.GPUsPerNode
	c := result.Check{Name: "GPU count", OK: len(gpus) >= want}
	if !c.OK {
		c.Message = fmt.Sprintf("the output measured %s (%s), the scope has %d per node", result.Count(len(gpus), "GPU"), strings.Join(slices.Sorted(maps.Keys(gpus)), ", "), want)
	}
	out := []result.Check{c}
	if topo.Nodes > 1 {
		out = append(out, result.Check{Name: "node count", OK: false, Warn: true,
			Message: fmt.Sprintf("not verifiable: nvbandwidth and TransferBench outputs name no node; the scope has %d nodes", topo.Nodes)})
	}
	return out
}
