package runner

// This file: parsing a test's outputs with its plugin and judging them
// against the baseline (the judge package holds the rules).

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/judge"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// parseTimeout bounds parsing a test's outputs after the run was stopped.
const parseTimeout = 2 * time.Minute

// judge parses outputs with the plugin and judges them against the SKU's
// baseline at topo's scope.
func (r *Runner) judge(ctx context.Context, t result.Test, pluginName, test string, params map[string]string, topo plan.Topology, outs []plan.Output) result.Test {
	// What a stopped test printed is still parsed (Ctrl-C, timeout): its
	// numbers are measurements, and verify re-parses them the same way.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), parseTimeout)
	defer cancel()
	parsed, err := r.Plugins.Parse(pctx, pluginName, pluginapi.ParseRequest{Test: test, Params: params, Topology: topo, Outputs: outs})
	if err != nil {
		parsed = result.Parsed{Error: "parse: " + err.Error()}
	}
	j := JudgeWith(r.SKU, t.Name, topo, parsed, LabelDefaults(pctx, r.Plugins, pluginName, test), Meanings(pctx, r.Plugins, pluginName, test))
	if t.Preflight {
		j = preflightVerdict(r.SKU, t.Name, topo.Scope, j)
	}
	j.Preflight = t.Preflight
	j.Name, j.Scope, j.Params, j.Commands, j.Duration, j.Started = t.Name, t.Scope, t.Params, t.Commands, t.Duration, t.Started
	j.Diagnostics = append(t.Diagnostics, j.Diagnostics...)
	return j
}

// Judge judges parsed output of a test at a topology against a SKU:
// JudgeWith without label defaults or meanings (no default dip rule).
func Judge(s *sku.SKU, name string, topo plan.Topology, parsed result.Parsed) result.Test {
	return JudgeWith(s, name, topo, parsed, nil, nil)
}

// JudgeWith judges parsed output of a test (full name) at a topology
// against a SKU (judge.SKUTest): the gates (the plugin's checks, the GPU
// model, the SKU's physical ceilings) whatever the baseline, then the
// baseline entries of that scope, or skip naming the scopes that exist.
// defaults are the plugin's label defaults per metric (LabelDefaults),
// meanings what it declares its metrics mean (Meanings), to which the
// metrics the SKU declares for the test are added (sku.SKU.WithDeclared);
// the test keeps them (result.Test.Meanings) for its reports.
func JudgeWith(s *sku.SKU, name string, topo plan.Topology, parsed result.Parsed, defaults map[string]map[string]string, meanings []result.Meaning) result.Test {
	// The hardware a plugin names is the results folder's list
	// (Hardware), no fact of the verdict: a folder made before plugins
	// named it re-judges the same.
	parsed, _, _ = result.StripHardware(parsed)
	parsed = dropNonFinite(parsed)
	// What the SKU file declares for the test (workload.command's
	// metrics) is judged, drawn and kept as a plugin's own declaration.
	meanings = s.WithDeclared(name, meanings)
	t := judge.SKUTest(s, name, topo.Scope, parsed, defaults, meanings)
	t.Name, t.Scope, t.Meanings = name, topo.Scope, meanings
	return unjudgedDeclared(t, s.Declared(name))
}

// unjudgedDeclared says which metrics the SKU declares for t (ds) no
// entry judged, in each of their points and in the message of a test
// judged by others: a site declares a metric to have it judged, and one
// left out by the baseline at this scope is a skip with its reason, not
// a silence beside a pass. A test skipped or in error as a whole already
// says why.
func unjudgedDeclared(t result.Test, ds []*sku.DeclaredMetric) result.Test {
	var names []string
	for _, d := range ds {
		var idx []int
		judged := false
		for i, m := range t.Metrics {
			if m.Name != d.Name {
				continue
			}
			// A summary an entry computed from the points judges them.
			if m.Status != result.Skip || m.Message != "" || m.Summary != "" {
				judged = true
				break
			}
			idx = append(idx, i)
		}
		if judged || len(idx) == 0 {
			continue
		}
		for _, i := range idx {
			t.Metrics[i].Message = fmt.Sprintf("not judged: no baseline entry for %s at scope %s", d.Name, t.Scope)
		}
		names = append(names, d.Name)
	}
	if len(names) > 0 && t.Status != result.Skip && t.Status != result.Error {
		t.Message += fmt.Sprintf("; not judged, no baseline entry at scope %s: %s", t.Scope, strings.Join(names, ", "))
	}
	return t
}

// Describer is a Plugins that also describes its plugins (the plugin host
// does); the runner asks it for the label defaults of a test's metrics.
type Describer interface {
	Describe(ctx context.Context, plugin string) (pluginapi.Description, error)
}

// LabelDefaults returns the label defaults per metric name that plugin
// declares for test (short name), when plugins is a Describer; nil when it
// is not, or the plugin declares none or cannot say (an old external
// plugin): entries then match every value of a label they leave out.
func LabelDefaults(ctx context.Context, plugins Plugins, plugin, test string) map[string]map[string]string {
	d, ok := plugins.(Describer)
	if !ok {
		return nil
	}
	desc, err := d.Describe(ctx, plugin)
	if err != nil {
		return nil
	}
	var out map[string]map[string]string
	for _, ti := range desc.Tests {
		if ti.Name != test {
			continue
		}
		for _, m := range ti.Metrics {
			if len(m.LabelDefaults) > 0 {
				if out == nil {
					out = map[string]map[string]string{}
				}
				out[m.Name] = m.LabelDefaults
			}
		}
	}
	return out
}

// Meanings returns what plugin declares the metrics of test (short name)
// mean (pluginapi.MetricInfo: unit, better, plot, record), when plugins is
// a Describer; nil when it is not, or the plugin declares no metrics or
// cannot say. A run keeps them in result.Test.Meanings, which its reports
// read.
func Meanings(ctx context.Context, plugins Plugins, plugin, test string) []result.Meaning {
	d, ok := plugins.(Describer)
	if !ok {
		return nil
	}
	return meanings(ctx, d, plugin, test)
}

func meanings(ctx context.Context, d Describer, plugin, test string) []result.Meaning {
	desc, err := d.Describe(ctx, plugin)
	if err != nil {
		return nil
	}
	ti, _ := desc.Test(test)
	return ti.Meanings()
}

// MeaningsOf returns, for each test (full name) of tests, what its plugin
// declares its metrics mean (Meanings): what baseline record reads to
// pick its default metrics and refuse a metric better lower. A plugin
// that cannot describe itself declares none.
func MeaningsOf(ctx context.Context, d Describer, tests []string) map[string][]result.Meaning {
	out := map[string][]result.Meaning{}
	for _, full := range tests {
		plugin, test, err := SplitName(full)
		if err != nil {
			continue
		}
		if _, done := out[full]; done {
			continue
		}
		if ms := meanings(ctx, d, plugin, test); ms != nil {
			out[full] = ms
		}
	}
	return out
}

// MeaningsOfSKU is MeaningsOf with the metrics s declares for each test
// added (sku.SKU.WithDeclared): what baseline record reads for a SKU.
func MeaningsOfSKU(ctx context.Context, d Describer, s *sku.SKU, tests []string) map[string][]result.Meaning {
	out := MeaningsOf(ctx, d, tests)
	for _, t := range tests {
		if ms := s.WithDeclared(t, out[t]); ms != nil {
			out[t] = ms
		}
	}
	return out
}

// dropNonFinite takes the metrics a plugin reported as NaN or ±Inf out of
// parsed and makes that its error, naming them (the first 5): no tool
// measures such a number, the rest of the output cannot be trusted to
// judge, and JSON cannot hold one.
func dropNonFinite(parsed result.Parsed) result.Parsed {
	var bad []string
	var kept []result.Metric
	for i, m := range parsed.Metrics {
		if !math.IsNaN(m.Value) && !math.IsInf(m.Value, 0) {
			if kept != nil {
				kept = append(kept, m)
			}
			continue
		}
		if kept == nil {
			kept = append([]result.Metric{}, parsed.Metrics[:i]...)
		}
		bad = append(bad, fmt.Sprintf("%s = %v", m.Key(), m.Value))
	}
	if len(bad) == 0 {
		return parsed
	}
	parsed.Metrics = kept
	more := ""
	if len(bad) > 5 {
		bad, more = bad[:5], fmt.Sprintf(" and %d more", len(bad)-5)
	}
	msg := fmt.Sprintf("%s: the plugin reported %s%s", result.NonFinite, strings.Join(bad, ", "), more)
	if parsed.Error != "" {
		msg = parsed.Error + "; " + msg
	}
	parsed.Error = msg
	return parsed
}

// Roles returns the step roles plugin declares for test (short name),
// when plugins is a Describer; nil when it is not, or the test declares
// none or the plugin cannot say.
func Roles(ctx context.Context, plugins Plugins, plugin, test string) []string {
	d, ok := plugins.(Describer)
	if !ok {
		return nil
	}
	desc, err := d.Describe(ctx, plugin)
	if err != nil {
		return nil
	}
	ti, _ := desc.Test(test)
	return ti.Roles
}

// InstanceLabels returns, for each test (full name) of tests, the labels
// its plugin declares as naming which GPU, node or pair a point was
// measured on (pluginapi.MetricInfo.InstanceLabels, of any of its
// metrics): what baseline record pools. A plugin that cannot describe
// itself declares none.
func InstanceLabels(ctx context.Context, d Describer, tests []string) map[string][]string {
	out := map[string][]string{}
	for _, full := range tests {
		plugin, test, err := SplitName(full)
		if err != nil {
			continue
		}
		desc, err := d.Describe(ctx, plugin)
		if err != nil {
			continue
		}
		if ti, ok := desc.Test(test); ok {
			for _, m := range ti.Metrics {
				for _, l := range m.InstanceLabels {
					if !slices.Contains(out[full], l) {
						out[full] = append(out[full], l)
					}
				}
			}
		}
	}
	return out
}
