// Package hbm is the test plugin for device memory bandwidth per GPU
// (hbm.bandwidth): workloads/torchbench.py's device-to-device copy and
// triad on every GPU of every node, so that a GPU with a slow HBM stack is
// named by host and index.
package hbm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/plugins/internal/torchbench"
)

// PluginName is the plugin's name: its test is "hbm.bandwidth".
const PluginName = "hbm"

// The plugin is built into gpuaccept: registered for gpuaccept plugin
// serve hbm and the lists of built-in plugins (pluginapi.Builtins).
func init() { pluginapi.Register(PluginName, Plugin{}) }

// Version is the plugin's version, reported by Describe.
const Version = "0.1.0"

// Params are bandwidth's parameters, with defaults.
var Params = append([]pluginapi.Param{
	{Name: "bytes", Default: "1073741824", Unit: "bytes", Description: "size of one array (copy moves 2x, triad 3x per launch)"},
	{Name: "iters", Default: "50", Unit: "iterations", Description: "the script's --iters; the memory tests time max(5, iters/5) launches per repeat"},
	{Name: "repeats", Default: "5", Description: "repeats; the best is reported"},
}, append(torchbench.Params,
	pluginapi.Param{Name: "env.NAME", Description: "environment variable NAME for the script"})...)

// ops are what every GPU must report.
var ops = []string{"copy", "triad"}

// Plugin implements pluginapi.Plugin for hbm.bandwidth.
type Plugin struct{}

// Describe implements pluginapi.Plugin.
func (Plugin) Describe(context.Context) (pluginapi.Description, error) {
	return pluginapi.Description{Name: PluginName, Version: Version, Tests: []pluginapi.TestInfo{{
		Name:        "bandwidth",
		Description: "device memory bandwidth per GPU: copy (read + write) and triad (two reads, one write), torchbench.py",
		Params:      Params,
		Metrics: []pluginapi.MetricInfo{{
			Name: "bw", Unit: "GB/s",
			Description:    "bytes moved (copy 2x, triad 3x the array) / time, best of the repeats, 1e9 B/s; size: one array's bytes",
			Labels:         []string{"op=copy|triad", "gpu", "host"},
			InstanceLabels: []string{"gpu", "host"},
			// A band for copy must not judge triad's different figure.
			LabelDefaults: map[string]string{"op": "copy"},
			Better:        result.BetterHigher, Plot: result.PlotCurve, Record: true,
		}},
	}}}, nil
}

type settings struct {
	torchbench.Settings
	env map[string]string
}

func parseParams(p map[string]string) (settings, error) {
	var s settings
	env, err := pluginapi.ParseParams(p, Params, func(k, v string) error {
		_, err := s.Setting(k, v)
		return err
	})
	s.env = env
	return s, err
}

// Plan implements pluginapi.Plugin: one step, one copy of the script per
// node, every GPU in turn.
func (Plugin) Plan(_ context.Context, req pluginapi.PlanRequest) (plan.Plan, error) {
	if req.Test != "bandwidth" {
		return plan.Plan{}, pluginapi.UnknownTest(PluginName, req.Test, []string{"bandwidth"})
	}
	s, err := parseParams(req.Params)
	if err != nil {
		return plan.Plan{}, fmt.Errorf("hbm.bandwidth: %w", err)
	}
	t := req.Topology
	if err := pluginapi.CheckTopology("hbm.bandwidth", t); err != nil {
		return plan.Plan{}, err
	}
	return plan.Plan{Steps: []plan.Step{torchbench.Step(torchbench.StepOptions{Name: "bandwidth", Python: s.Python, Script: s.Script,
		Tests: []string{"hbm"}, Args: s.CountArgs(), Env: s.env, Nodes: t.Nodes})}}, nil
}

// Parse implements pluginapi.Plugin: a metric per GPU and op, and the
// completeness gates (every GPU of every node has copy and triad).
func (Plugin) Parse(_ context.Context, req pluginapi.ParseRequest) (result.Parsed, error) {
	if p, ok := pluginapi.NoOutputs(req); ok {
		return p, nil
	}
	var p result.Parsed
	var errs, names []string
	var o torchbench.Output
	for _, out := range req.Outputs {
		if out.LaunchError != "" {
			errs = append(errs, fmt.Sprintf("step %s: %s", out.Step, out.LaunchError))
		} else if out.ExitCode != 0 {
			errs = append(errs, fmt.Sprintf("step %s exited with status %d", out.Step, out.ExitCode))
		}
		// Every file of the output: check hands a lone X.json as a Files
		// entry with no Log.
		for _, path := range torchbench.Paths(out) {
			name := filepath.Base(path)
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
			o.Merge(r)
			names = append(names, name)
		}
	}
	name := strings.Join(names, ",")
	for _, d := range o.Diags {
		p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: d})
	}
	seen := torchbench.Seen{}
	for _, h := range o.HBM {
		seen.Add(h.Host, h.GPU, h.Op)
		labels := map[string]string{"op": h.Op, "gpu": strconv.Itoa(h.GPU)}
		if h.Host != "" {
			labels["host"] = h.Host
		}
		p.Metrics = append(p.Metrics, result.Metric{Name: "bw", Value: h.GBps, Unit: "GB/s", Size: h.Bytes, Labels: labels})
	}
	// An output of the script without memory records (its gemm or host
	// tests) is no measurement of this test: its nodes count only when
	// they gave hbm lines or said why not.
	var hosts []string
	if len(o.HBM) > 0 || len(o.Errors) > 0 {
		hosts = o.Hosts()
	}
	complete, cause := torchbench.Complete(req.Topology, o, hosts, ops, seen, "hbm")
	p.Checks = append(p.Checks, complete...)
	p.Checks = append(p.Checks, torchbench.ErrorChecks(o, name)...)
	info, checks := torchbench.Facts(o, nil)
	p.Checks = append(p.Checks, checks...)
	if len(info) > 0 {
		p.Info = info
	}
	switch {
	case cause != "" && len(p.Metrics) == 0:
		errs = append(errs, fmt.Sprintf("no hbm result; %s: %s", name, cause))
	case cause != "":
		errs = append(errs, fmt.Sprintf("%s: %s", name, cause))
	case len(p.Metrics) == 0:
		if len(o.Errors) > 0 {
			e := o.Errors[0]
			errs = append(errs, fmt.Sprintf("no hbm result; %s:%d: %s", name, e.Line, e.Message))
		} else if len(errs) == 0 {
			errs = append(errs, fmt.Sprintf("no hbm record in %s: not torchbench.py --tests hbm output", name))
		}
	}
	if len(errs) > 0 {
		p.Error = strings.Join(errs, "; ")
	}
	return p, nil
}
