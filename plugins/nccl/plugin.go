// Package nccl is the test plugin for NVIDIA's nccl-tests (all_reduce_perf,
// all_gather_perf, ...): it plans their command lines and parses their text
// and -J JSON output into busbw/algbw curves and correctness checks.
package nccl

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/plugins/internal/hang"
	"github.com/gpuaccept/gpuaccept/plugins/internal/nccltests"
)

// PluginName is the plugin's name: its tests are "nccl.NAME".
const PluginName = "nccl"

// The plugin is built into gpuaccept: registered for gpuaccept plugin
// serve nccl and the lists of built-in plugins (pluginapi.Builtins).
func init() { pluginapi.Register(PluginName, Plugin{}) }

// Version is the plugin's version, reported by Describe.
const Version = "0.1.0"

// Collectives are the nccl-tests binaries the plugin offers, by test name;
// the binary is NAME_perf.
var Collectives = []string{"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv", "gather", "scatter", "hypercube"}

// Params are the parameters every nccl test takes, with defaults.
var Params = []pluginapi.Param{
	{Name: "bindir", Description: "folder holding the nccl-tests binaries (e.g. /opt/nccl-tests/build); empty: found on PATH"},
	{Name: "suffix", Description: "binary name suffix, as built with NAME_SUFFIX (e.g. _mpi)"},
	{Name: "minbytes", Default: "8", Unit: "bytes", Description: "smallest message size (-b); K/M/G suffixes are binary"},
	{Name: "maxbytes", Default: "4G", Unit: "bytes", Description: "largest message size (-e)"},
	{Name: "stepfactor", Default: "2", Description: "size multiplication factor between sizes (-f)"},
	{Name: "iters", Unit: "iterations", Description: "timed iterations per size (-n); empty: nccl-tests' default (20)"},
	{Name: "warmup", Unit: "iterations", Description: "warmup iterations (-w); empty: nccl-tests' default (1)"},
	{Name: "check", Default: "1", Unit: "iterations", Description: "correctness-check iterations (-c); 0 turns validation off (#wrong shows N/A)"},
	{Name: "datatype", Description: "data type (-d), e.g. float, bfloat16, all; empty: float"},
	{Name: "op", Description: "reduction (-o), e.g. sum, all; empty: sum"},
	{Name: "json", Default: "true", Description: "ask for -J JSON output (nccl-tests >= 2.17); false for older binaries"},
	{Name: "mode", Description: "single: one process per node drives all its GPUs (-g G); mpi: one MPI rank per GPU (-g 1). Empty: single on one node, mpi on several"},
	{Name: "evidence", Default: "false", Description: "true: when the test's time runs out, first collect each node's evidence (GPU state, new XIDs, the ranks' processes and stacks: py-spy, eu-stack or gdb where present), then stop the ranks; a node the evidence names fails the test (check hang.suspect, with the host). Sets NCCL_DEBUG=WARN unless env.NCCL_DEBUG is given. Collected by the local and ssh launchers, and by Slurm for a submitted job; not yet inside a Slurm allocation nor by k8s (the evidence step says \"not run\")"},
	{Name: "extra", Description: "extra nccl-tests arguments, space-separated"},
	{Name: "env.NAME", Description: "environment variable NAME for every rank (e.g. env.NCCL_TOPO_FILE=/etc/topo.xml)"},
}

// Plugin implements pluginapi.Plugin for nccl-tests.
type Plugin struct{}

// Describe implements pluginapi.Plugin.
func (Plugin) Describe(context.Context) (pluginapi.Description, error) {
	d := pluginapi.Description{Name: PluginName, Version: Version}
	for _, c := range Collectives {
		d.Tests = append(d.Tests, pluginapi.TestInfo{
			Name:        c,
			Description: fmt.Sprintf("nccl-tests %s_perf: busbw/algbw curve over message sizes, out-of-place and in-place, with data validation", c),
			Params:      Params,
			Metrics:     nccltests.MetricInfos("nccl-tests"),
		})
	}
	return d, nil
}

// settings are the parsed parameters of one test.
type settings struct {
	sweep          nccltests.SweepParams
	bindir, suffix string
	json           bool
	evidence       bool
	env            map[string]string
}

func parseParams(p map[string]string) (settings, error) {
	s := settings{sweep: nccltests.SweepParams{MinBytes: "8", MaxBytes: "4G", StepFactor: "2", Check: "1"}, json: true}
	env, err := pluginapi.ParseParams(p, Params, func(k, v string) (err error) {
		if handled, err := s.sweep.Set(k, v); handled {
			return err
		}
		switch k {
		case "bindir":
			s.bindir = v
		case "suffix":
			if v != "" && strings.ContainsAny(v, "/ \t") {
				return fmt.Errorf("%q must be a plain name suffix", v)
			}
			s.suffix = v
		case "json":
			s.json, err = pluginapi.BoolParam(k, v)
		case "evidence":
			s.evidence, err = pluginapi.BoolParam(k, v)
		}
		return err
	})
	s.env = env
	return s, err
}

// JSONName is the file the plugin asks nccl-tests to write with -J.
func JSONName(test string) string { return test + ".json" }

// Plan implements pluginapi.Plugin.
func (Plugin) Plan(_ context.Context, req pluginapi.PlanRequest) (plan.Plan, error) {
	if !slices.Contains(Collectives, req.Test) {
		return plan.Plan{}, pluginapi.UnknownTest(PluginName, req.Test, Collectives)
	}
	s, err := parseParams(req.Params)
	if err != nil {
		return plan.Plan{}, fmt.Errorf("nccl.%s: %w", req.Test, err)
	}
	if err := pluginapi.CheckTopology(PluginName+"."+req.Test, req.Topology); err != nil {
		return plan.Plan{}, err
	}
	bin := req.Test + "_perf" + s.suffix
	if s.bindir != "" {
		bin = filepath.Join(s.bindir, bin)
	}
	env := s.env
	if _, set := env["NCCL_DEBUG"]; s.evidence && !set {
		// NCCL's WARN lines (a timed-out IB completion, a peer gone) are
		// the ranks' own account of a hang, and cost nothing until then.
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		env["NCCL_DEBUG"] = "WARN"
	}
	step, err := s.sweep.Sweep(bin, env).Step(req.Test, req.Topology)
	if err != nil {
		return plan.Plan{}, fmt.Errorf("nccl.%s: %w", req.Test, err)
	}
	if s.json {
		step.Argv = append(step.Argv, "-J", JSONName(req.Test))
		step.Files = []string{JSONName(req.Test)}
	}
	p := plan.Plan{Steps: []plan.Step{step}}
	if s.evidence {
		p.Steps = append(p.Steps, hang.Steps(req.Topology.Nodes)...)
		// The evidence step lists the ranks by this value alone.
		p = hang.Mark(p)
	}
	return p, nil
}

// Parse implements pluginapi.Plugin.
func (Plugin) Parse(_ context.Context, req pluginapi.ParseRequest) (result.Parsed, error) {
	if p, ok := pluginapi.NoOutputs(req); ok {
		return p, nil
	}
	// Sizes asked for are known only when the plugin planned the run; logs
	// judged offline (gpuaccept check) have no params, so no expectation.
	var expectMax, factor int64
	if len(req.Params) > 0 {
		if s, err := parseParams(req.Params); err == nil {
			expectMax, factor = nccltests.Expected(s.sweep.MaxBytes, s.sweep.StepFactor)
		}
	}
	work, evidence := hang.Split(req.Outputs)
	p := nccltests.Results(work, nccltests.Options{Test: req.Test, Topology: req.Topology, ExpectMax: expectMax, Factor: factor})
	checks, diags := hang.Checks(work, evidence, reached(p.Metrics), req.Topology.Hosts)
	p.Checks = append(p.Checks, checks...)
	p.Diagnostics = append(p.Diagnostics, diags...)
	if strings.Contains(p.Error, refusedJSON) {
		p.Error += "; " + jsonHint
	}
	return p, nil
}

// reached is the largest message size measured ("256 MiB"), "" when none.
func reached(ms []result.Metric) string {
	var max int64
	for _, m := range ms {
		if m.Size > max {
			max = m.Size
		}
	}
	if max == 0 {
		return ""
	}
	return result.FormatBytes(max)
}

// refusedJSON is getopt's refusal of -J by an nccl-tests that predates it
// (its own line after it is "invalid option '?'").
const refusedJSON = "invalid option -- 'J'"

// jsonHint says how to run such a binary: the parameter that drops -J.
const jsonHint = `this nccl-tests predates -J (JSON output, nccl-tests 2.17): set the test parameter json=false (--param nccl:json=false, or json: "false" under params: nccl: in the site file, --site)`
