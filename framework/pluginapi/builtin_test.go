package pluginapi_test

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	_ "github.com/gpuaccept/gpuaccept/plugins/gemm"
	_ "github.com/gpuaccept/gpuaccept/plugins/hbm"
	_ "github.com/gpuaccept/gpuaccept/plugins/health"
	_ "github.com/gpuaccept/gpuaccept/plugins/hostlink"
	_ "github.com/gpuaccept/gpuaccept/plugins/ibperf"
	_ "github.com/gpuaccept/gpuaccept/plugins/mori"
	_ "github.com/gpuaccept/gpuaccept/plugins/nccl"
	_ "github.com/gpuaccept/gpuaccept/plugins/rccl"
)

// Every built-in plugin registers itself under the name it describes
// itself by, and refuses what it cannot run in the scaffolding's words
// (UnknownTest, an unknown parameter, the topology, NoOutputs), so that
// a user reads one message per mistake whichever plugin made it.
func TestBuiltinPluginsShareTheScaffolding(t *testing.T) {
	ctx := context.Background()
	names := pluginapi.Builtins()
	assert.DeepEqual(t, names, []string{"gemm", "hbm", "health", "hostlink", "ibperf", "mori", "nccl", "rccl"})
	for _, name := range names {
		p, _ := pluginapi.Builtin(name)
		d, err := p.Describe(ctx)
		assert.NilError(t, err)
		assert.Equal(t, d.Name, name)
		var tests []string
		for _, ti := range d.Tests {
			tests = append(tests, ti.Name)
		}
		good := plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}
		_, err = p.Plan(ctx, pluginapi.PlanRequest{Test: "no_such_test", Topology: good})
		assert.Error(t, err, pluginapi.UnknownTest(name, "no_such_test", tests).Error())
		for _, test := range tests {
			full := name + "." + test
			_, err = p.Plan(ctx, pluginapi.PlanRequest{Test: test, Topology: good, Params: map[string]string{"no_such_param": "1"}})
			assert.ErrorContains(t, err, full+`: unknown parameter "no_such_param" (known: `)
			_, err = p.Plan(ctx, pluginapi.PlanRequest{Test: test})
			assert.ErrorContains(t, err, full+": topology 0x0: ")
			parsed, err := p.Parse(ctx, pluginapi.ParseRequest{Test: test, Topology: good})
			assert.NilError(t, err)
			assert.Equal(t, parsed.Error, pluginapi.NoOutputsError, full)
			assert.Assert(t, len(parsed.Metrics) == 0 && len(parsed.Checks) == 0, "%s: nothing judged from nothing", full)
		}
	}
}
