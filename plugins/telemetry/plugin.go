// Package telemetry is the test plugin telemetry.sample: while a test
// runs, each of its nodes samples its GPUs at about 1 Hz. Its plan is one
// monitor step per node (plan.Monitor), each running sample.sh, which
// samples with whichever of nvidia-smi, dcgmi dmon and amd-smi monitor the
// node has and tags every line "HOST|SECTION|TEXT". Parse reads those
// logs into a result.Telemetry (clocks, power, temperatures, slowdowns,
// PCIe link, errors that appeared, a downsampled series per GPU), handed
// over in result.Parsed.Info under result.TelemetryInfo: the runner keeps
// it beside the test's own result (result.StripTelemetry). It judges
// nothing itself.
package telemetry

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// PluginName is the plugin's name: its test is "telemetry.sample".
const PluginName = "telemetry"

// TestName is the short name of its test.
const TestName = "sample"

// The plugin is built into gpuaccept: registered for gpuaccept plugin
// serve telemetry and the lists of built-in plugins (pluginapi.Builtins).
func init() { pluginapi.Register(PluginName, Plugin{}) }

// Version is the plugin's version, reported by Describe.
const Version = "0.1.0"

// Script is the sampler every node runs (POSIX sh; $1 the interval in ms,
// $2 the node's index in the topology).
//
//go:embed sample.sh
var Script string

// Params are the parameters of telemetry.sample.
var Params = []pluginapi.Param{
	{Name: "interval_ms", Default: "1000", Unit: "ms", Description: "time between samples, 100 to 60000 (amd-smi samples in whole seconds: rounded up)"},
}

// Plugin implements pluginapi.Plugin for GPU telemetry.
type Plugin struct{}

// Describe implements pluginapi.Plugin. The test declares no metric: what
// it samples goes to the test it ran beside, as result.Telemetry.
func (Plugin) Describe(context.Context) (pluginapi.Description, error) {
	return pluginapi.Description{Name: PluginName, Version: Version, Tests: []pluginapi.TestInfo{{
		Name:        TestName,
		Description: "samples every node's GPUs (clocks, power, temperatures, clock event reasons, ECC, PCIe link and replays, kernel-log XIDs) at about 1 Hz while a test runs, with nvidia-smi, dcgmi dmon or amd-smi monitor; monitor steps beside the test's own, kept as the test's telemetry",
		Params:      Params,
		Roles:       []string{plan.Monitor},
	}}}, nil
}

func parseInterval(p map[string]string) (int, error) {
	iv := 1000
	_, err := pluginapi.ParseParams(p, Params, func(k, v string) error {
		if k == "interval_ms" {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 100 || n > 60000 {
				return fmt.Errorf("%q is not a whole number of ms from 100 to 60000", v)
			}
			iv = n
		}
		return nil
	})
	return iv, err
}

// StepName is the name of the monitor step of node i: "monitor.N", as a
// step of a declared role must be named (pluginapi.CheckRoles).
func StepName(i int) string { return plan.Monitor + "." + strconv.Itoa(i) }

// Plan implements pluginapi.Plugin: one monitor step per node of the
// topology, a single process on that node running Script. Errors: an
// unknown test, a bad interval_ms, a topology without nodes.
func (Plugin) Plan(_ context.Context, req pluginapi.PlanRequest) (plan.Plan, error) {
	if req.Test != TestName {
		return plan.Plan{}, pluginapi.UnknownTest(PluginName, req.Test, []string{TestName})
	}
	iv, err := parseInterval(req.Params)
	if err != nil {
		return plan.Plan{}, fmt.Errorf("%s.%s: %w", PluginName, TestName, err)
	}
	if err := pluginapi.CheckTopology(PluginName+"."+TestName, req.Topology); err != nil {
		return plan.Plan{}, err
	}
	var p plan.Plan
	for i := 0; i < req.Topology.Nodes; i++ {
		p.Steps = append(p.Steps, plan.Step{
			Name: StepName(i), Role: plan.Monitor, Host: i,
			Argv:  []string{"/bin/sh", "-c", Script, "gpuaccept-telemetry", strconv.Itoa(iv), strconv.Itoa(i)},
			Procs: 1, ProcsPerNode: 1, ReadyMarker: ReadyMarker,
		})
	}
	return p, nil
}

// Parse implements pluginapi.Plugin: the monitor steps' logs (one per
// node) become one result.Telemetry, as JSON in Info[result.TelemetryInfo].
// A log without a sample gives a note saying why, not an error; Error is
// set only for a log that is neither the sampler's nor a tool's output
// (ReadTool), or that cannot be read.
func (Plugin) Parse(_ context.Context, req pluginapi.ParseRequest) (result.Parsed, error) {
	if req.Test != TestName {
		return result.Parsed{}, pluginapi.UnknownTest(PluginName, req.Test, []string{TestName})
	}
	if p, ok := pluginapi.NoOutputs(req); ok {
		return p, nil
	}
	var all result.Telemetry
	var errs []string
	for _, o := range req.Outputs {
		t, err := readOutput(o)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		all.GPUs = append(all.GPUs, t.GPUs...)
		all.Notes = append(all.Notes, t.Notes...)
	}
	slices.SortStableFunc(all.GPUs, func(a, b result.GPUTelemetry) int {
		switch {
		case a.Host != b.Host:
			return strings.Compare(a.Host, b.Host)
		case lessIndex(a.GPU, b.GPU):
			return -1
		case lessIndex(b.GPU, a.GPU):
			return 1
		}
		return 0
	})
	var p result.Parsed
	data, err := json.Marshal(all)
	if err != nil {
		return p, fmt.Errorf("telemetry: encode: %w", err)
	}
	p.Info = map[string]string{result.TelemetryInfo: string(data)}
	if len(errs) > 0 {
		p.Error = strings.Join(errs, "; ")
	}
	return p, nil
}

// readOutput reads one step's log: the sampler's, or a tool's own output
// given to gpuaccept check.
func readOutput(o plan.Output) (result.Telemetry, error) {
	name := o.Step
	if o.Log == "" {
		return result.Telemetry{Notes: []string{name + ": no log kept"}}, nil
	}
	f, err := os.Open(o.Log)
	if err != nil {
		return result.Telemetry{}, fmt.Errorf("read the telemetry log of %s: %w", name, err)
	}
	defer f.Close()
	t, sampler, err := ReadLog(f)
	if err != nil {
		return t, fmt.Errorf("read the telemetry log of %s (%s): %w", name, o.Log, err)
	}
	if !sampler && len(t.GPUs) == 0 {
		if fi, err := os.Stat(o.Log); err == nil && fi.Size() == 0 {
			return result.Telemetry{Notes: []string{name + ": the sampler printed nothing"}}, nil
		}
		return t, fmt.Errorf("%s (%s): not the telemetry sampler's output (no HOST|SECTION|TEXT line) nor nvidia-smi, dcgmi or amd-smi output", name, o.Log)
	}
	for i := range t.GPUs {
		if t.GPUs[i].Host == "" {
			t.GPUs[i].Host = o.Host
		}
	}
	return t, nil
}
