package plan

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestParseTopology(t *testing.T) {
	for in, want := range map[string]Topology{"1x2": {Nodes: 1, GPUsPerNode: 2}, "16x8": {Nodes: 16, GPUsPerNode: 8}} {
		got, err := ParseTopology(in)
		assert.NilError(t, err)
		assert.DeepEqual(t, got, want)
	}
	for _, bad := range []string{"", "x", "2x", "0x8", "-1x2", "2x8x1", "2 x 8", "02x8", "2x8 "} {
		_, err := ParseTopology(bad)
		assert.ErrorContains(t, err, "want NODESxGPUS", "%q", bad)
	}
}

func FuzzParseTopology(f *testing.F) {
	for _, s := range []string{"2x8", "1x2", "0x8", "x", "18x4", "-1x2", "+1x2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		topo, err := ParseTopology(s)
		if err != nil {
			return
		}
		if topo.Nodes < 1 || topo.GPUsPerNode < 1 || topo.String() != s {
			t.Fatalf("%q accepted as %v", s, topo)
		}
	})
}
