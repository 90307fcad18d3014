// Package gemm is the test plugin for dense matrix multiplication
// throughput per GPU (gemm.matmul): it runs workloads/torchbench.py on
// every GPU of every node, each GPU alone and then all of a node's GPUs at
// once, so that a slow GPU is named by host and index and power or thermal
// limits of a full node show. It also reads, by their content, the outputs
// of GEMM tools sites already run: hipblaslt-bench and rocblas-bench CSV
// rows, and RVS gst's [RESULT] GFLOPS lines.
package gemm

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/plugins/internal/torchbench"
)

// PluginName is the plugin's name: its test is "gemm.matmul".
const PluginName = "gemm"

// The plugin is built into gpuaccept: registered for gpuaccept plugin
// serve gemm and the lists of built-in plugins (pluginapi.Builtins).
func init() { pluginapi.Register(PluginName, Plugin{}) }

// Version is the plugin's version, reported by Describe.
const Version = "0.1.0"

// DefaultDTypes are the dtypes measured when the dtypes parameter is not
// given (fp8 is skipped, with a warning, where the GPU or torch lacks it).
const DefaultDTypes = "bf16,fp16,fp8,tf32,fp32"

// dtypeLabels are the values of the dtype label: the script's five and
// what the other tools measure (fp8e5m2: bf8; unknown: an output naming
// no type).
const dtypeLabels = "bf16|fp16|fp8|fp8e5m2|fp6|fp4|tf32|fp32|fp64|int8|unknown"

// scriptDTypes are the dtypes torchbench.py measures.
var scriptDTypes = map[string]bool{"bf16": true, "fp16": true, "fp8": true, "tf32": true, "fp32": true}

// Params are matmul's parameters, with defaults.
var Params = append([]pluginapi.Param{
	{Name: "dtypes", Default: DefaultDTypes, Description: "comma-separated dtypes to measure: bf16, fp16, fp8, tf32, fp32"},
	{Name: "size", Default: "8192", Description: "M = N = K of the square matmul"},
	{Name: "iters", Default: "50", Unit: "iterations", Description: "timed matmuls per repeat"},
	{Name: "repeats", Default: "5", Description: "repeats; the best is reported"},
}, append(torchbench.Params,
	pluginapi.Param{Name: "env.NAME", Description: "environment variable NAME for the script (e.g. env.HIP_VISIBLE_DEVICES)"})...)

// Plugin implements pluginapi.Plugin for gemm.matmul.
type Plugin struct{}

// Describe implements pluginapi.Plugin.
func (Plugin) Describe(context.Context) (pluginapi.Description, error) {
	return pluginapi.Description{Name: PluginName, Version: Version, Tests: []pluginapi.TestInfo{{
		Name:        "matmul",
		Description: "dense matmul TFLOPS per GPU and dtype, each GPU alone and all GPUs of a node at once (torchbench.py; also reads hipblaslt-bench, rocblas-bench and RVS gst outputs)",
		Params:      Params,
		Metrics: []pluginapi.MetricInfo{{
			Name: "tflops", Unit: "TFLOPS",
			Description:    "2*M*N*K per matmul / time, best of the repeats, 1e12 FLOP/s",
			Labels:         []string{"dtype=" + dtypeLabels, "gpu", "mode=alone|concurrent", "host"},
			InstanceLabels: []string{"gpu", "host"},
			// A baseline entry naming neither judges bf16 alone: a bf16
			// band must not judge fp32, nor the lower figures of a node
			// under full power.
			LabelDefaults: map[string]string{"dtype": "bf16", "mode": "alone"},
			Better:        result.BetterHigher, Plot: result.PlotLabels, Record: true,
		}},
	}}}, nil
}

type settings struct {
	torchbench.Settings
	dtypes    []string
	env       map[string]string
	dtypesSet bool
}

func parseParams(p map[string]string) (settings, error) {
	s := settings{dtypes: strings.Split(DefaultDTypes, ",")}
	env, err := pluginapi.ParseParams(p, Params, func(k, v string) error {
		if ok, err := s.Setting(k, v); ok {
			return err
		}
		if k == "dtypes" {
			s.dtypes, s.dtypesSet = nil, true
			for _, d := range strings.Split(v, ",") {
				d = strings.TrimSpace(d)
				if !scriptDTypes[d] {
					return fmt.Errorf("%q is not one of bf16, fp16, fp8, tf32, fp32", d)
				}
				s.dtypes = append(s.dtypes, d)
			}
		}
		return nil
	})
	s.env = env
	return s, err
}

// Plan implements pluginapi.Plugin: step "alone" runs every GPU of each
// node in turn; step "concurrent", with more than one GPU per node, all
// of a node's GPUs at once.
func (Plugin) Plan(_ context.Context, req pluginapi.PlanRequest) (plan.Plan, error) {
	if req.Test != "matmul" {
		return plan.Plan{}, pluginapi.UnknownTest(PluginName, req.Test, []string{"matmul"})
	}
	s, err := parseParams(req.Params)
	if err != nil {
		return plan.Plan{}, fmt.Errorf("gemm.matmul: %w", err)
	}
	t := req.Topology
	if err := pluginapi.CheckTopology("gemm.matmul", t); err != nil {
		return plan.Plan{}, err
	}
	args := append([]string{"--dtypes", strings.Join(s.dtypes, ",")}, s.CountArgs()...)
	o := torchbench.StepOptions{Name: "alone", Python: s.Python, Script: s.Script, Tests: []string{"gemm"}, Args: args, Env: s.env, Nodes: t.Nodes}
	steps := []plan.Step{torchbench.Step(o)}
	if t.GPUsPerNode > 1 {
		o.Name, o.Args = "concurrent", append(append([]string(nil), args...), "--concurrent")
		steps = append(steps, torchbench.Step(o))
	}
	return plan.Plan{Steps: steps}, nil
}

// sniffMax is how much of an output is read to tell which tool wrote it.
const sniffMax = 1 << 20

// Parse implements pluginapi.Plugin.
func (Plugin) Parse(_ context.Context, req pluginapi.ParseRequest) (result.Parsed, error) {
	if p, ok := pluginapi.NoOutputs(req); ok {
		return p, nil
	}
	var p result.Parsed
	s, err := parseParams(req.Params)
	if err != nil {
		s, _ = parseParams(nil)
	}
	var errs []string
	var tb torchbench.Output
	var tbNames []string
	planned, concurrent := false, false
	var tools []ToolOutput
	for _, o := range req.Outputs {
		switch o.Step {
		case "alone":
			planned = true
		case "concurrent":
			planned, concurrent = true, true
		}
		if o.LaunchError != "" {
			errs = append(errs, fmt.Sprintf("step %s: %s", o.Step, o.LaunchError))
		} else if o.ExitCode != 0 {
			errs = append(errs, fmt.Sprintf("step %s exited with status %d", o.Step, o.ExitCode))
		}
		// Every file of the output: check hands a lone X.json as a Files
		// entry with no Log.
		for _, path := range torchbench.Paths(o) {
			name := filepath.Base(path)
			f, err := os.Open(path)
			if err != nil {
				errs = append(errs, fmt.Sprintf("open %s: %v", name, err))
				continue
			}
			head := make([]byte, sniffMax)
			n, _ := io.ReadFull(f, head)
			head = head[:n]
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				f.Close()
				errs = append(errs, fmt.Sprintf("read %s: %v", name, err))
				continue
			}
			if tool := sniffTool(head); tool != "" && !torchbench.Sniff(head) {
				t, err := parseTool(f, name, tool)
				if err != nil {
					errs = append(errs, err.Error())
				}
				t.host = o.Host
				tools = append(tools, t)
			} else {
				out, err := torchbench.Parse(f, name)
				if err != nil {
					errs = append(errs, err.Error())
				}
				tb.Merge(out)
				tbNames = append(tbNames, name)
			}
			f.Close()
		}
	}
	if tb.Records > 0 || len(tb.Errors) > 0 || len(tools) == 0 {
		errs = append(errs, judgeTorch(&p, req.Topology, s, tb, strings.Join(tbNames, ","), planned, concurrent)...)
	}
	for _, t := range tools {
		judgeTool(&p, req.Topology, t)
	}
	if len(p.Metrics) == 0 && len(errs) == 0 {
		errs = append(errs, "no gemm result in the output: not torchbench.py's JSON lines, a hipblaslt-bench/rocblas-bench CSV or RVS gst [RESULT] lines")
	}
	if len(errs) > 0 {
		p.Error = strings.Join(errs, "; ")
	}
	return p, nil
}

// judgeTorch turns the script's gemm records into metrics and gates.
func judgeTorch(p *result.Parsed, topo plan.Topology, s settings, o torchbench.Output, name string, planned, concurrent bool) []string {
	var errs []string
	for _, d := range o.Diags {
		p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: d})
	}
	seen := torchbench.Seen{}
	models := map[string]string{}
	skipped := map[string][]string{} // dtype → "host:gpu: reason"
	modes := map[string]bool{}
	dtypes := map[string]bool{}
	for _, g := range o.GEMM {
		mode := "alone"
		if g.Concurrent {
			mode = "concurrent"
		}
		modes[mode] = true
		dtypes[g.DType] = true
		seen.Add(g.Host, g.GPU, g.DType+" "+mode)
		if g.Name != "" {
			models[torchbench.GPUKey(g.Host, g.GPU)] = g.Name
		}
		if g.Skipped != "" {
			skipped[g.DType] = append(skipped[g.DType], fmt.Sprintf("%s GPU %d: %s", hostOf(g.Host), g.GPU, g.Skipped))
			continue
		}
		labels := map[string]string{"dtype": g.DType, "gpu": strconv.Itoa(g.GPU), "mode": mode}
		if g.Host != "" {
			labels["host"] = g.Host
		}
		p.Metrics = append(p.Metrics, result.Metric{Name: "tflops", Value: g.TFLOPS, Unit: "TFLOPS", Labels: labels})
	}
	// A planned run must give what it asked for; a log handed to check
	// is held to the dtypes and modes it shows.
	asked := s.dtypes
	if !planned && !s.dtypesSet {
		asked = nil
		for d := range dtypes {
			asked = append(asked, d)
		}
		sort.Strings(asked)
	}
	wantModes := []string{"alone"}
	if planned && concurrent || !planned && modes["concurrent"] {
		wantModes = append(wantModes, "concurrent")
	}
	if !planned && !modes["alone"] && modes["concurrent"] {
		wantModes = []string{"concurrent"}
	}
	var items []string
	for _, m := range wantModes {
		for _, d := range asked {
			items = append(items, d+" "+m)
		}
	}
	hosts := o.Hosts()
	if len(items) == 0 {
		items = []string{"bf16 alone"}
	}
	complete, cause := torchbench.Complete(topo, o, hosts, items, seen, "gemm")
	p.Checks = append(p.Checks, complete...)
	var sk []string
	for d := range skipped {
		sk = append(sk, d)
	}
	sort.Strings(sk)
	for _, d := range sk {
		p.Checks = append(p.Checks, result.Check{Name: "dtype " + d + " skipped", OK: false, Warn: true,
			Message: fmt.Sprintf("%s not measured: %s", d, strings.Join(skipped[d], "; "))})
	}
	p.Checks = append(p.Checks, torchbench.ErrorChecks(o, name)...)
	info, checks := torchbench.Facts(o, models)
	p.Checks = append(p.Checks, checks...)
	if len(info) > 0 {
		if p.Info == nil {
			p.Info = map[string]string{}
		}
		for k, v := range info {
			p.Info[k] = v
		}
	}
	switch {
	case cause != "" && len(p.Metrics) == 0:
		errs = append(errs, fmt.Sprintf("no gemm result; %s: %s", name, cause))
	case cause != "":
		errs = append(errs, fmt.Sprintf("%s: %s", name, cause))
	case len(p.Metrics) == 0 && len(o.Errors) > 0:
		e := o.Errors[0]
		errs = append(errs, fmt.Sprintf("no gemm result; %s:%d: %s", name, e.Line, e.Message))
	}
	return errs
}

func hostOf(h string) string {
	if h == "" {
		return "host unknown"
	}
	return "host " + h
}

// judgeTool turns another tool's figures into metrics (mode alone: these
// tools measure the GPU they are given) and checks: the tool's own
// verdict (RVS met: FALSE fails), and fewer GPUs than the topology's.
func judgeTool(p *result.Parsed, topo plan.Topology, t ToolOutput) {
	for _, d := range t.Diags {
		p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: d})
	}
	gpus := map[string]bool{}
	var failed, noVerdict []string
	for _, pt := range t.Points {
		gpus[pt.GPU] = true
		labels := map[string]string{"dtype": pt.DType, "gpu": pt.GPU, "mode": "alone"}
		if t.host != "" {
			labels["host"] = t.host
		}
		p.Metrics = append(p.Metrics, result.Metric{Name: "tflops", Value: pt.TFLOPS, Unit: "TFLOPS", Labels: labels})
		if t.Tool == "rvs gst" {
			switch {
			case pt.Met == nil:
				noVerdict = append(noVerdict, fmt.Sprintf("GPU %s (line %d)", pt.GPU, pt.Line))
			case !*pt.Met:
				failed = append(failed, fmt.Sprintf("GPU %s %s %.1f TFLOPS below its target %.1f (line %d)", pt.GPU, pt.DType, pt.TFLOPS, pt.Target, pt.Line))
			}
		}
	}
	if t.Tool == "rvs gst" {
		c := result.Check{Name: "rvs gst target", OK: len(failed) == 0, Host: t.host}
		if !c.OK {
			c.Message = "RVS gst says met: FALSE: " + strings.Join(failed, "; ")
		}
		p.Checks = append(p.Checks, c)
		if len(noVerdict) > 0 {
			p.Checks = append(p.Checks, result.Check{Name: "rvs gst verdict", OK: false, Warn: true, Host: t.host,
				Message: "no \"Target GFLOPS: ... met:\" line for " + strings.Join(noVerdict, ", ") + ": the output was cut short; the last interval's GFLOPS is reported"})
		}
	}
	if topo.GPUsPerNode > 0 {
		c := result.Check{Name: "GPUs measured " + t.Tool, OK: len(gpus) >= topo.GPUsPerNode, Host: t.host}
		if !c.OK {
			c.Message = fmt.Sprintf("%s measured %d GPU(s), the topology has %d per node", t.Tool, len(gpus), topo.GPUsPerNode)
		}
		p.Checks = append(p.Checks, c)
	}
	if t.Device != "" {
		if p.Info == nil {
			p.Info = map[string]string{}
		}
		if p.Info["gpu"] == "" {
			p.Info["gpu"] = t.Device
		}
	}
}
