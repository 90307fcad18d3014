// Package pluginapi is the test-plugin boundary: the Plugin interface every
// test plugin implements, its gRPC transport over hashicorp/go-plugin, and
// the Host that starts plugin processes (built-in ones by re-executing
// gpuaccept, external ones as gpuaccept-plugin-NAME executables found on a
// plugin path) and turns their crashes and hangs into errors.
package pluginapi

import (
	"context"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// Plugin is what a test plugin answers. Implementations must not panic on
// hostile output, but the Host survives it if they do: the plugin runs in
// its own process.
type Plugin interface {
	// Describe says who the plugin is and what tests it offers.
	Describe(ctx context.Context) (Description, error)
	// Plan turns a test, its parameters and a topology into the steps to
	// launch. Errors are configuration errors (unknown test, bad parameter)
	// and name the parameter.
	Plan(ctx context.Context, req PlanRequest) (plan.Plan, error)
	// Parse turns the outputs of the steps into metrics, checks and
	// diagnostics. Output that cannot be understood is reported in
	// result.Parsed.Error, not as a Go error; the Go error is for failures of
	// the call itself.
	Parse(ctx context.Context, req ParseRequest) (result.Parsed, error)
}

// Description is a plugin's self-description.
type Description struct {
	// Name is the plugin name, the prefix of its test names ("nccl").
	Name    string     `json:"name"`
	Version string     `json:"version"`
	Tests   []TestInfo `json:"tests"`
}

// TestInfo describes one test a plugin offers.
type TestInfo struct {
	// Name is the short test name ("all_reduce"); the full name is
	// "plugin.name".
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Params      []Param      `json:"params,omitempty"`
	Metrics     []MetricInfo `json:"metrics,omitempty"`
}

// Param is a test parameter with its default and unit.
type Param struct {
	Name        string `json:"name"`
	Default     string `json:"default,omitempty"`
	Unit        string `json:"unit,omitempty"`
	Description string `json:"description"`
}

// MetricInfo is a metric a test reports.
type MetricInfo struct {
	Name        string `json:"name"`
	Unit        string `json:"unit"`
	Description string `json:"description"`
	// Labels are the label keys the metric carries, as "key" (any value)
	// or "key=v1|v2" (only these values).
	Labels []string `json:"labels,omitempty"`
	// LabelDefaults map a label to the value it has when the tool is not
	// asked for another ("type": "float", "redop": "sum" for nccl-tests).
	// Where a run's points differ in such a label (-d all -o all), a
	// baseline entry that does not name it judges only the points with the
	// default; the others are reported as not judged. Nil: none.
	LabelDefaults map[string]string `json:"label_defaults,omitempty"`
}

// PlanRequest asks a plugin for the steps of one test.
type PlanRequest struct {
	// Test is the short test name ("all_reduce").
	Test     string            `json:"test"`
	Params   map[string]string `json:"params,omitempty"`
	Topology plan.Topology     `json:"topology"`
}

// ParseRequest hands a plugin the outputs of one test's steps.
type ParseRequest struct {
	Test     string            `json:"test"`
	Params   map[string]string `json:"params,omitempty"`
	Topology plan.Topology     `json:"topology"`
	Outputs  []plan.Output     `json:"outputs"`
}
