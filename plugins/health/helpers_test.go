package health

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// h200 is the real outputs of the 1-GPU H200 machine.
const h200 = "../../testdata/recordings/h200x1-2026-12-01/smi"

// parse runs Parse over files (each an output of its own, as gpuaccept
// check hands them) at nodes x gpus.
func parse(t *testing.T, params map[string]string, nodes, gpus int, files ...string) result.Parsed {
	t.Helper()
	var outs []plan.Output
	for _, f := range files {
		abs, err := filepath.Abs(f)
		assert.NilError(t, err)
		outs = append(outs, plan.Output{Step: "check", Log: abs})
	}
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "node", Params: params,
		Topology: plan.Topology{Scope: plan.Scope{Nodes: nodes, GPUsPerNode: gpus}}, Outputs: outs})
	assert.NilError(t, err)
	return p
}

// failed returns the failed checks of p (warn ones too) by name.
func failed(p result.Parsed) map[string]result.Check {
	out := map[string]result.Check{}
	for _, c := range p.Checks {
		if !c.OK {
			out[c.Name] = c
		}
	}
	return out
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	assert.NilError(t, err)
	return string(b)
}
