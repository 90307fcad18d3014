package plan

import (
	"encoding/json"
	"testing"

	"gotest.tools/v3/assert"
)

func TestParseScope(t *testing.T) {
	for in, want := range map[string]Scope{"1x2": {Nodes: 1, GPUsPerNode: 2}, "16x8": {Nodes: 16, GPUsPerNode: 8}, "131072x1024": {Nodes: MaxNodes, GPUsPerNode: MaxGPUsPerNode}} {
		got, err := ParseScope(in)
		assert.NilError(t, err)
		assert.Equal(t, got, want)
		assert.Equal(t, got.String(), in)
	}
	for _, bad := range []string{"", "x", "2x", "0x8", "-1x2", "2x8x1", "2 x 8", "02x8", "2x8 ", "+1x2", "131073x1", "1x1025"} {
		_, err := ParseScope(bad)
		assert.Error(t, err, `scope "`+bad+`": want NODESxGPUS, e.g. 2x8`)
	}
}

func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"2x8", "1x2", "0x8", "x", "18x4", "-1x2", "+1x2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc, err := ParseScope(s)
		if err != nil {
			return
		}
		if sc.Check() != nil || sc.String() != s {
			t.Fatalf("%q accepted as %v", s, sc)
		}
		var back Scope
		if err := back.UnmarshalText([]byte(s)); err != nil || back != sc {
			t.Fatalf("%q: text round trip gave %v, %v", s, back, err)
		}
	})
}

// JSON writes a scope as its text, "1x2", as results.json and
// journal.jsonl have always named it, and the zero Scope as "" (a test
// that names none). A text that is no scope does not decode.
func TestScopeJSON(t *testing.T) {
	type doc struct {
		Scope Scope `json:"scope"`
	}
	for _, c := range []struct {
		s    Scope
		json string
	}{{Scope{Nodes: 1, GPUsPerNode: 2}, `{"scope":"1x2"}`}, {Scope{Nodes: 16, GPUsPerNode: 8}, `{"scope":"16x8"}`}, {Scope{}, `{"scope":""}`}} {
		data, err := json.Marshal(doc{c.s})
		assert.NilError(t, err)
		assert.Equal(t, string(data), c.json)
		var back doc
		assert.NilError(t, json.Unmarshal(data, &back))
		assert.Equal(t, back.Scope, c.s)
	}
	for _, bad := range []string{`{"scope":"0x1"}`, `{"scope":"2by8"}`, `{"scope":" 1x2"}`} {
		var d doc
		assert.ErrorContains(t, json.Unmarshal([]byte(bad), &d), "want NODESxGPUS", bad)
	}
}

// A Topology embeds its Scope, whose MarshalText would otherwise be
// promoted and make a topology "1x2" in JSON, without its hosts.
func TestTopologyJSON(t *testing.T) {
	topo := Topology{Scope: Scope{Nodes: 2, GPUsPerNode: 8}, Hosts: []string{"n1", "n2"}, NICs: []string{"mlx5_0"}}
	data, err := json.Marshal(topo)
	assert.NilError(t, err)
	assert.Equal(t, string(data), `{"nodes":2,"gpus_per_node":8,"hosts":["n1","n2"],"nics":["mlx5_0"]}`)
	var back Topology
	assert.NilError(t, json.Unmarshal(data, &back))
	assert.DeepEqual(t, back, topo)
	data, err = json.Marshal(Topology{Scope: Scope{Nodes: 1, GPUsPerNode: 2}})
	assert.NilError(t, err)
	assert.Equal(t, string(data), `{"nodes":1,"gpus_per_node":2}`)
	assert.Equal(t, topo.String(), "2x8")
	assert.Equal(t, topo.Ranks(), 16)
}

func TestCheckCounts(t *testing.T) {
	for _, c := range []struct {
		nodes, gpus int
		want        string
	}{
		{1, 1, ""}, {MaxNodes, MaxGPUsPerNode, ""},
		{0, 8, "nodes 0: want 1 to 131072"}, {MaxNodes + 1, 8, "nodes 131073: want 1 to 131072"},
		{2, 0, "GPUs per node 0: want 1 to 1024"}, {2, -1, "GPUs per node -1: want 1 to 1024"},
	} {
		err := CheckCounts(c.nodes, c.gpus)
		assert.Equal(t, err == nil, c.want == "", "%d %d", c.nodes, c.gpus)
		if c.want != "" {
			assert.Error(t, err, c.want)
			assert.Error(t, Scope{Nodes: c.nodes, GPUsPerNode: c.gpus}.Check(), c.want)
		}
	}
}
