package runner

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

func TestParseScope(t *testing.T) {
	for in, want := range map[string]plan.Topology{"1x2": {Nodes: 1, GPUsPerNode: 2}, "16x8": {Nodes: 16, GPUsPerNode: 8}} {
		got, err := ParseScope(in)
		assert.NilError(t, err)
		assert.DeepEqual(t, got, want)
	}
	for _, bad := range []string{"", "1x", "x2", "0x8", "1x2x3", "01x2", "1 x 2", "-1x2"} {
		_, err := ParseScope(bad)
		assert.ErrorContains(t, err, "is not NODESxGPUS", bad)
	}
}
