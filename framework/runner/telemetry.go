package runner

// This file: the telemetry sampled beside a test (issue 33): the
// telemetry plugin's monitor steps added to a test's plan, their outputs
// kept apart from the test's own, parsed by that plugin, and the test's
// slow numbers explained by what its GPUs did.

import (
	"context"
	"fmt"

	"github.com/gpuaccept/gpuaccept/framework/judge"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// The plugin and test whose plan samples a test's nodes (one monitor step
// per node) and whose Parse reads the samples (result.TelemetryInfo).
const (
	TelemetryPlugin = "telemetry"
	TelemetryTest   = "sample"
)

// withMonitors puts the telemetry plugin's monitor steps for topo before
// the test's own steps; the test's plan alone, and why, when the plugin
// plans none or a step name would clash.
func withMonitors(ctx context.Context, plugins Plugins, pl plan.Plan, topo plan.Topology, params map[string]string) (plan.Plan, string) {
	mon, err := plugins.Plan(ctx, TelemetryPlugin, pluginapi.PlanRequest{Test: TelemetryTest, Params: params, Topology: topo})
	if err != nil {
		return pl, fmt.Sprintf("telemetry not sampled: plan: %v", err)
	}
	names := map[string]bool{}
	for _, s := range pl.Steps {
		names[s.Name] = true
	}
	for _, s := range mon.Steps {
		if s.Role != plan.Monitor {
			return pl, fmt.Sprintf("telemetry not sampled: step %s of the telemetry plugin is no monitor (role %q)", s.Name, s.Role)
		}
		if names[s.Name] {
			return pl, fmt.Sprintf("telemetry not sampled: the test has a step %s of its own", s.Name)
		}
	}
	return plan.Plan{Steps: append(append([]plan.Step(nil), mon.Steps...), pl.Steps...)}, ""
}

// splitMonitors tells the monitor steps' outputs from the test's own: a
// test's plugin is handed only what its plan asked for.
func splitMonitors(outs []plan.Output) (work, monitors []plan.Output) {
	for _, o := range outs {
		if o.Role == plan.Monitor {
			monitors = append(monitors, o)
		} else {
			work = append(work, o)
		}
	}
	return work, monitors
}

// telemetryOf parses the monitor outputs with the telemetry plugin: nil
// when there are none; a Telemetry whose note says why when they could
// not be read.
func telemetryOf(ctx context.Context, plugins Plugins, topo plan.Topology, monitors []plan.Output) *result.Telemetry {
	if len(monitors) == 0 {
		return nil
	}
	parsed, err := plugins.Parse(ctx, TelemetryPlugin, pluginapi.ParseRequest{Test: TelemetryTest, Topology: topo, Outputs: monitors})
	if err == nil && parsed.Error != "" {
		err = fmt.Errorf("%s", parsed.Error)
	}
	var tel *result.Telemetry
	if err == nil {
		_, tel, err = result.StripTelemetry(parsed)
	}
	if err != nil {
		return &result.Telemetry{Notes: []string{fmt.Sprintf("telemetry not read: %v", err)}}
	}
	if tel == nil {
		return &result.Telemetry{Notes: []string{"telemetry not read: the telemetry plugin returned no samples"}}
	}
	return tel
}

// withTelemetry keeps tel in t and explains t's slow numbers by it
// (judge.Explain).
func withTelemetry(t result.Test, tel *result.Telemetry) result.Test {
	if tel == nil {
		return t
	}
	t.Telemetry = tel
	return judge.Explain(t)
}
