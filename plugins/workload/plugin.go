// Package workload is the test plugin for a site's own benchmark
// (workload.command): it runs any command line once and reads the metrics
// the SKU file declares for the test (a name, a pattern whose one unnamed
// group is the value, a unit, better higher or lower: sku.DeclaredMetric)
// out of its output, so that an inference benchmark (vllm bench serve,
// SGLang's bench_serving) or a storage one (fio) is judged against its
// own bands like any built-in test. It knows no tool: what a number means
// is the declaration's.
package workload

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// PluginName is the plugin's name: its test is "workload.command".
const PluginName = "workload"

// TestName is the short name of the plugin's one test.
const TestName = "command"

// StepName names the one step, and so its log (raw/workload.command/command.log).
const StepName = "command"

// The plugin is built into gpuaccept: registered for gpuaccept plugin
// serve workload and the lists of built-in plugins (pluginapi.Builtins).
func init() { pluginapi.Register(PluginName, Plugin{}) }

// Version is the plugin's version, reported by Describe.
const Version = "0.1.0"

// Params are command's parameters.
var Params = []pluginapi.Param{
	{Name: "command", Description: "the command line, run once by /bin/sh -c on the scope's first node (its own launcher, mpirun or srun, reaches the others); its output is read for the declared metrics"},
	{Name: sku.DeclaredParam, Description: "the metrics to read, set from the suite test's metrics: list in the SKU file (a JSON list of {name, pattern, unit, better}); not given by hand"},
	{Name: "env.NAME", Description: "environment variable NAME for the command"},
}

// Plugin implements pluginapi.Plugin for workload.command.
type Plugin struct{}

// Describe implements pluginapi.Plugin. The test declares no metric of
// its own: its metrics are the SKU file's (sku.SuiteTest.Metrics), which
// skucheck, the judge, the reports and baseline record read from there.
func (Plugin) Describe(context.Context) (pluginapi.Description, error) {
	return pluginapi.Description{Name: PluginName, Version: Version, Tests: []pluginapi.TestInfo{{
		Name:        TestName,
		Description: "any command (a site's inference or storage benchmark), once on the first node; the metrics the SKU file declares for it (metrics: name, pattern, unit, better) read from its output",
		Params:      Params,
	}}}, nil
}

type settings struct {
	command  string
	declared []Declared
	env      map[string]string
}

func parseParams(p map[string]string) (settings, error) {
	var s settings
	env, err := pluginapi.ParseParams(p, Params, func(k, v string) error {
		switch k {
		case "command":
			if strings.TrimSpace(v) == "" {
				return fmt.Errorf("empty: give the command line to run")
			}
			s.command = v
		case sku.DeclaredParam:
			ds, err := sku.DecodeDeclared(v)
			if err != nil {
				return err
			}
			if s.declared, err = Compile(ds); err != nil {
				return err
			}
		}
		return nil
	})
	s.env = env
	return s, err
}

// Plan implements pluginapi.Plugin: one step, the command under /bin/sh
// -c, one process on the first node. A benchmark that spans nodes starts
// its own ranks; one that measures each node alone runs at a scope of one
// node per node.
func (Plugin) Plan(_ context.Context, req pluginapi.PlanRequest) (plan.Plan, error) {
	if req.Test != TestName {
		return plan.Plan{}, pluginapi.UnknownTest(PluginName, req.Test, []string{TestName})
	}
	s, err := parseParams(req.Params)
	if err != nil {
		return plan.Plan{}, fmt.Errorf("workload.command: %w", err)
	}
	if err := pluginapi.CheckTopology("workload.command", req.Topology); err != nil {
		return plan.Plan{}, err
	}
	switch {
	case s.command == "":
		return plan.Plan{}, fmt.Errorf("workload.command: %w", &pluginapi.ParamError{Name: "command", Err: fmt.Errorf("not given: the command line to run")})
	case s.declared == nil:
		return plan.Plan{}, fmt.Errorf("workload.command: no metrics declared: the suite test's metrics: list in the SKU file names what to read (name, pattern, unit, better), else nothing would be judged")
	}
	var env map[string]string
	if len(s.env) > 0 {
		env = s.env
	}
	return plan.Plan{Steps: []plan.Step{{Name: StepName, Argv: []string{"/bin/sh", "-c", s.command}, Env: env, Procs: 1, ProcsPerNode: 1}}}, nil
}

// Parse implements pluginapi.Plugin: the declared metrics from every
// output's log (check: from each file given), and the gates: a command
// that could not start or exited non-zero, a declared metric no line
// matched or matched twice, a value that is no number are errors, never a
// verdict on the hardware.
func (Plugin) Parse(_ context.Context, req pluginapi.ParseRequest) (result.Parsed, error) {
	if req.Test != TestName {
		return result.Parsed{}, pluginapi.UnknownTest(PluginName, req.Test, []string{TestName})
	}
	if p, ok := pluginapi.NoOutputs(req); ok {
		return p, nil
	}
	s, err := parseParams(req.Params)
	if err != nil {
		return result.Parsed{Error: err.Error()}, nil
	}
	if s.declared == nil {
		return result.Parsed{Error: "no metrics declared to read (the suite test's metrics: in the SKU file): nothing of the output can be judged"}, nil
	}
	var p result.Parsed
	var errs, logs []string
	var ms []Match
	for _, out := range req.Outputs {
		if out.LaunchError != "" {
			errs = append(errs, fmt.Sprintf("step %s: %s", out.Step, out.LaunchError))
		} else if out.ExitCode != 0 {
			errs = append(errs, fmt.Sprintf("step %s: the command exited with status %d", out.Step, out.ExitCode))
		}
		for _, path := range paths(out) {
			name := filepath.Base(path)
			logs = append(logs, name)
			f, err := os.Open(path)
			if err != nil {
				errs = append(errs, fmt.Sprintf("open %s: %v", name, err))
				continue
			}
			r, err := Read(f, name, s.declared)
			f.Close()
			if err != nil {
				errs = append(errs, err.Error())
			}
			ms = append(ms, r.Matches...)
			errs = append(errs, r.Errors...)
			p.Diagnostics = append(p.Diagnostics, r.Warnings...)
		}
	}
	gates, kept := Gates(s.declared, ms, logs)
	errs = append(errs, gates...)
	for _, m := range kept {
		p.Metrics = append(p.Metrics, m.Metric)
		// Where each number was read, so a reader checks it against the
		// line the tool printed.
		p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Info, Source: m.Source,
			Message: fmt.Sprintf("%s %s %s from %q", pointName(m.Metric), formatValue(m.Metric.Value), m.Metric.Unit, m.Text)})
	}
	p.Error = strings.Join(errs, "; ")
	return p, nil
}

// paths are the files of out to read: its log, else (gpuaccept check
// handing a file as the output's files) every file, in name order.
func paths(out plan.Output) []string {
	if out.Log != "" {
		return []string{out.Log}
	}
	var ps []string
	for _, k := range slices.Sorted(maps.Keys(out.Files)) {
		ps = append(ps, out.Files[k])
	}
	return ps
}

// pointName is a point's metric name with its labels: "ttft{stat=P99}".
func pointName(m result.Metric) string {
	if len(m.Labels) == 0 {
		return m.Name
	}
	return m.Name + "{" + sku.LabelText(m.Labels) + "}"
}

func formatValue(v float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.6f", v), "0"), ".")
}
