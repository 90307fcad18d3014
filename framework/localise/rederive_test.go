package localise

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// The node suspects verify re-derives from a stage's slow runs are the
// ones the localiser names: per node, every slow node unless all are; in
// the pairs stage, every node whose runs (2 or more, errors left out)
// are all slow, unless that is every node.
func TestNodeSuspects(t *testing.T) {
	run := func(slow bool, status result.Status, hosts ...string) result.SubRun {
		return result.SubRun{Hosts: hosts, Slow: slow, Status: status}
	}
	hosts := []string{"n1", "n2", "n3", "n4"}
	cases := []struct {
		name     string
		stage    result.Stage
		strategy string
		want     []string
		known    bool
	}{
		{"per-node, one slow", result.Stage{Name: "per-node", Runs: []result.SubRun{run(false, result.Pass, "n1"), run(true, result.Fail, "n3"), run(false, result.Pass, "n2"), run(false, result.Pass, "n4")}}, Pairs, []string{"n3"}, true},
		{"per-node, all slow", result.Stage{Name: "per-node", Runs: []result.SubRun{run(true, result.Fail, "n1"), run(true, result.Fail, "n2"), run(true, result.Fail, "n3"), run(true, result.Fail, "n4")}}, Pairs, nil, true},
		{"pairs, n3 in every slow pair", result.Stage{Name: "pairs", Runs: []result.SubRun{
			run(false, result.Pass, "n1", "n2"), run(true, result.Pass, "n3", "n4"),
			run(true, result.Pass, "n1", "n3"), run(false, result.Pass, "n2", "n4"),
			run(false, result.Pass, "n1", "n4"), run(true, result.Pass, "n2", "n3")}}, Pairs, []string{"n3"}, true},
		{"pairs, an error says nothing", result.Stage{Name: "pairs", Runs: []result.SubRun{
			run(false, result.Pass, "n1", "n2"), run(false, result.Error, "n3", "n4"),
			run(true, result.Pass, "n1", "n3"), run(false, result.Pass, "n2", "n4"),
			run(false, result.Pass, "n1", "n4"), run(true, result.Pass, "n2", "n3")}}, Pairs, []string{"n3"}, true},
		{"pairs, every run slow", result.Stage{Name: "pairs", Runs: []result.SubRun{
			run(true, result.Pass, "n1", "n2"), run(true, result.Pass, "n3", "n4"),
			run(true, result.Pass, "n1", "n3"), run(true, result.Pass, "n2", "n4")}}, Pairs, nil, true},
		{"pairs of a matching", result.Stage{Name: "pairs"}, Matching, nil, false},
		{"bisect", result.Stage{Name: "bisect"}, Bisect, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, known := NodeSuspects(c.stage, c.strategy, hosts)
			assert.Equal(t, known, c.known)
			assert.DeepEqual(t, got, c.want)
		})
	}
}
