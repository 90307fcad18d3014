// Package rccl is the test plugin for AMD's rccl-tests (all_reduce_perf,
// alltoall_perf, ...), the ROCm fork of nccl-tests: it plans their command
// lines and parses their text output and the Reporter file they write with
// -Z json into busbw/algbw curves and correctness checks. The text layout
// is nccl-tests', read by plugins/internal/nccltests; what is rccl-tests'
// own (the Reporter file, -O, stress cycles, "RCCL version :" lines) is
// here or there, marked as such.
package rccl

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/plugins/internal/nccltests"
)

// PluginName is the plugin's name: its tests are "rccl.NAME".
const PluginName = "rccl"

// The plugin is built into gpuaccept: registered for gpuaccept plugin
// serve rccl and the lists of built-in plugins (pluginapi.Builtins).
func init() { pluginapi.Register(PluginName, Plugin{}) }

// Version is the plugin's version, reported by Describe.
const Version = "0.1.0"

// Collectives are the rccl-tests binaries the plugin offers, by test name;
// the binary is NAME_perf.
var Collectives = []string{"all_reduce", "all_gather", "reduce_scatter", "alltoall", "alltoallv", "broadcast", "reduce", "sendrecv", "gather", "scatter"}

// Params are the parameters every rccl test takes, with defaults.
var Params = []pluginapi.Param{
	{Name: "bindir", Description: "folder holding the rccl-tests binaries (e.g. /opt/rccl-tests/build); empty: found on PATH"},
	{Name: "minbytes", Default: "8", Unit: "bytes", Description: "smallest message size (-b); K/M/G suffixes are binary"},
	{Name: "maxbytes", Default: "1G", Unit: "bytes", Description: "largest message size (-e)"},
	{Name: "stepfactor", Default: "2", Description: "size multiplication factor between sizes (-f)"},
	{Name: "iters", Unit: "iterations", Description: "timed iterations per size (-n); empty: rccl-tests' default (20)"},
	{Name: "warmup", Unit: "iterations", Description: "warmup iterations (-w); empty: rccl-tests' default (1)"},
	{Name: "check", Default: "1", Unit: "iterations", Description: "correctness-check iterations (-c); 0 turns validation off"},
	{Name: "datatype", Description: "data type (-d), e.g. float, bfloat16; empty: float"},
	{Name: "op", Description: "reduction (-o), e.g. sum; empty: sum"},
	{Name: "outofplace", Description: "rccl-tests -O: 0 measures in-place only, 1 out-of-place only; empty: both"},
	{Name: "cycles", Unit: "cycles", Description: "run the whole sweep this many times (-N), each cycle judged; empty: once"},
	{Name: "report", Default: "json", Description: "structured output rccl-tests writes beside its text (-Z json, one object per size and placement); none for binaries without it"},
	{Name: "report_flag", Default: "-x", Description: "flag naming the report file: -x (--output_file) in rccl-tests up to 2.17, -X (--rccl_output_file) in later ones"},
	{Name: "mode", Description: "single: one process per node drives all its GPUs (-g G); mpi: one MPI rank per GPU (-g 1). Empty: single on one node, mpi on several"},
	{Name: "extra", Description: "extra rccl-tests arguments, space-separated"},
	{Name: "env.NAME", Description: "environment variable NAME for every rank, e.g. the AINIC settings env.NCCL_IB_HCA=ionic_0,...,ionic_7 env.NCCL_IB_GID_INDEX=1 env.NCCL_IB_TC=104"},
}

// Plugin implements pluginapi.Plugin for rccl-tests.
type Plugin struct{}

// Describe implements pluginapi.Plugin.
func (Plugin) Describe(context.Context) (pluginapi.Description, error) {
	d := pluginapi.Description{Name: PluginName, Version: Version}
	for _, c := range Collectives {
		d.Tests = append(d.Tests, pluginapi.TestInfo{
			Name:        c,
			Description: fmt.Sprintf("rccl-tests %s_perf: busbw/algbw curve over message sizes, out-of-place and in-place, with data validation", c),
			Params:      Params,
			Metrics:     nccltests.MetricInfos("rccl-tests"),
		})
	}
	return d, nil
}

type settings struct {
	sweep                                          nccltests.SweepParams
	bindir, outofplace, cycles, report, reportFlag string
	env                                            map[string]string
}

func parseParams(p map[string]string) (settings, error) {
	s := settings{sweep: nccltests.SweepParams{MinBytes: "8", MaxBytes: "1G", StepFactor: "2", Check: "1"}, report: "json", reportFlag: "-x"}
	env, err := pluginapi.ParseParams(p, Params, func(k, v string) error {
		if handled, err := s.sweep.Set(k, v); handled {
			return err
		}
		switch k {
		case "bindir":
			s.bindir = v
		case "cycles":
			if err := pluginapi.CountParam(k, v); err != nil {
				return err
			}
			s.cycles = v
		case "outofplace":
			if v != "" && v != "0" && v != "1" {
				return fmt.Errorf("%q is not 0, 1 or empty", v)
			}
			s.outofplace = v
		case "report":
			if v != "json" && v != "none" {
				return fmt.Errorf("%q is not json or none", v)
			}
			s.report = v
		case "report_flag":
			if v != "-x" && v != "-X" {
				return fmt.Errorf("%q is not -x or -X", v)
			}
			s.reportFlag = v
		}
		return nil
	})
	s.env = env
	return s, err
}

// ReportName is the file the plugin asks rccl-tests to write with -Z json.
func ReportName(test string) string { return test + ".json" }

// Plan implements pluginapi.Plugin.
func (Plugin) Plan(_ context.Context, req pluginapi.PlanRequest) (plan.Plan, error) {
	if !slices.Contains(Collectives, req.Test) {
		return plan.Plan{}, pluginapi.UnknownTest(PluginName, req.Test, Collectives)
	}
	s, err := parseParams(req.Params)
	if err != nil {
		return plan.Plan{}, fmt.Errorf("rccl.%s: %w", req.Test, err)
	}
	if err := pluginapi.CheckTopology(PluginName+"."+req.Test, req.Topology); err != nil {
		return plan.Plan{}, err
	}
	bin := req.Test + "_perf"
	if s.bindir != "" {
		bin = filepath.Join(s.bindir, bin)
	}
	step, err := s.sweep.Sweep(bin, s.env, [2]string{"-O", s.outofplace}, [2]string{"-N", s.cycles}).Step(req.Test, req.Topology)
	if err != nil {
		return plan.Plan{}, fmt.Errorf("rccl.%s: %w", req.Test, err)
	}
	if s.report == "json" {
		step.Argv = append(step.Argv, s.reportFlag, ReportName(req.Test), "-Z", "json")
		step.Files = []string{ReportName(req.Test)}
	}
	return plan.Plan{Steps: []plan.Step{step}}, nil
}

// genericDevice reports the device name HIP gives GPUs missing from its
// marketing-name table: rccl-tests 2.17 on MI355X prints "AMD Radeon
// Graphics" (seed 004), which names no model, so no GPU model check is
// made on it.
func genericDevice(name string) bool {
	return strings.EqualFold(strings.TrimSpace(name), "AMD Radeon Graphics")
}

// Parse implements pluginapi.Plugin.
func (Plugin) Parse(_ context.Context, req pluginapi.ParseRequest) (result.Parsed, error) {
	if p, ok := pluginapi.NoOutputs(req); ok {
		return p, nil
	}
	var expectMax, factor int64
	if len(req.Params) > 0 {
		if s, err := parseParams(req.Params); err == nil {
			expectMax, factor = nccltests.Expected(s.sweep.MaxBytes, s.sweep.StepFactor)
		}
	}
	return nccltests.Results(req.Outputs, nccltests.Options{Test: req.Test, Topology: req.Topology, ExpectMax: expectMax, Factor: factor,
		InfoPrefix: "rccl", ParseFile: ParseReport, GenericDevice: genericDevice}), nil
}
