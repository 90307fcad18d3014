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

func TestScopedParams(t *testing.T) {
	params := map[string]string{
		"iters":                  "20",
		"bindir":                 "/opt/all",
		"rccl:bindir":            "/opt/rccl-tests/build",
		"rccl.alltoall:maxbytes": "128M",
		"mori:python":            "python3.12",
	}
	tests := []struct {
		test string
		want map[string]string
	}{
		{"rccl.all_reduce", map[string]string{"iters": "20", "bindir": "/opt/rccl-tests/build"}},
		{"rccl.alltoall", map[string]string{"iters": "20", "bindir": "/opt/rccl-tests/build", "maxbytes": "128M"}},
		{"mori.ep_intranode", map[string]string{"iters": "20", "bindir": "/opt/all", "python": "python3.12"}},
		{"nccl.all_reduce", map[string]string{"iters": "20", "bindir": "/opt/all"}},
	}
	for _, tc := range tests {
		t.Run(tc.test, func(t *testing.T) {
			assert.DeepEqual(t, ScopedParams(params, tc.test), tc.want)
		})
	}
}
