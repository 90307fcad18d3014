package sku

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// A baseline entry's scope is a mapping in the SKU file. plan.Scope is text
// in JSON ("1x2"), and yaml.v3 would hand a scalar to its UnmarshalText:
// these cases pin what the file's scope decodes to, and the messages (text
// and line) of each way to get it wrong, as they were when sku had a Scope
// type of its own.
func TestEntryScopeDecoding(t *testing.T) {
	const entry = "sku: t\nbaselines:\n  - test: a.b\n    scope: SCOPE\n    metric: m\n    unit: us\n    source: s\n    value: 1\n    band: {max: \"+5%\"}\n"
	for _, c := range []struct {
		name, scope string
		nodes, gpus int
		want        string
	}{
		{"block mapping", "\n      nodes: 2\n      gpus_per_node: 8", 2, 8, ""},
		{"flow mapping", "{nodes: 1, gpus_per_node: 2}", 1, 2, ""},
		{"text form is not a scope here", "1x2", 0, 0, "t.yaml: line 4: cannot unmarshal !!str `1x2` into sku.Scope"},
		{"a list", "[1, 2]", 0, 0, "t.yaml: line 4: cannot unmarshal !!seq into sku.Scope"},
		{"count not a number", "{nodes: one, gpus_per_node: 2}", 0, 0, "t.yaml: line 4: cannot unmarshal !!str `one` into int"},
		{"zero count", "{nodes: 0, gpus_per_node: 2}", 0, 2, "t.yaml: line 4: field scope: nodes and gpus_per_node must be >= 1, got 0x2"},
		{"misspelt key leaves a count zero", "{nodes: 1, gpu_per_node: 2}", 1, 0, "t.yaml: line 4: field scope: nodes and gpus_per_node must be >= 1, got 1x0"},
		{"empty", "", 0, 0, "t.yaml: line 4: field scope: nodes and gpus_per_node must be >= 1, got 0x0"},
		// plan.CheckCounts is the one rule: a scope no run can have is refused.
		{"beyond plan's limits", "{nodes: 200000, gpus_per_node: 8}", 200000, 8, "t.yaml: line 4: field scope: 200000x8: nodes 200000: want 1 to 131072"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(strings.Replace(entry, "SCOPE", c.scope, 1)), "t.yaml")
			if c.want == "" {
				assert.NilError(t, err)
			} else {
				assert.Error(t, err, c.want)
			}
			if len(s.Baselines) == 0 {
				assert.Assert(t, c.nodes == 0 && c.gpus == 0, "the entry did not decode")
				return
			}
			assert.Equal(t, s.Baselines[0].Scope.Nodes, c.nodes)
			assert.Equal(t, s.Baselines[0].Scope.GPUsPerNode, c.gpus)
		})
	}
}
