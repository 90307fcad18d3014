package runner

import (
	"context"

	"github.com/gpuaccept/gpuaccept/framework/judge"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Preflight says plugin declares test (short name) a preflight test
// (pluginapi.TestInfo.Preflight), when plugins is a Describer; false when
// it is not or the plugin cannot say.
func Preflight(ctx context.Context, plugins Plugins, plugin, test string) bool {
	d, ok := plugins.(Describer)
	if !ok {
		return false
	}
	desc, err := d.Describe(ctx, plugin)
	if err != nil {
		return false
	}
	ti, ok := desc.Test(test)
	return ok && ti.Preflight
}

// judgeDeclared is JudgeWith with what the plugin declares of test: its
// label defaults, and for a preflight test a verdict by its checks
// (judge.ByChecks), as it has nothing to baseline.
func judgeDeclared(ctx context.Context, plugins Plugins, s *sku.SKU, name, plugin, test string, topo plan.Topology, parsed result.Parsed) result.Test {
	t := JudgeWith(s, name, topo, parsed, LabelDefaults(ctx, plugins, plugin, test))
	if Preflight(ctx, plugins, plugin, test) {
		t = judge.ByChecks(t, judge.NoBaseline(s, name, topo.Scope))
	}
	return t
}
