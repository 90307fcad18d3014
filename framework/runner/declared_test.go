package runner

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// The metrics a SKU file declares are judged with what they declare
// (kept in the test's meanings for its reports), and one no entry judges
// at the scope says so, on its points and in the test's message. The
// values are those of vLLM's docs run
// (testdata/field/workload/vllm-docs-hermes3-8b-sharegpt).
func TestJudgeDeclaredMetrics(t *testing.T) {
	const head = `sku: site
suites:
  inference:
    tests:
      - test: workload.command
        metrics:
          - {name: request_throughput, pattern: 'Request throughput \(req/s\):\s+(\S+)', unit: req/s, better: higher}
          - {name: mean_ttft, pattern: 'Mean TTFT \(ms\):\s+(\S+)', unit: ms, better: lower}
baselines:
`
	const rps = `  - {test: workload.command, scope: {nodes: 1, gpus_per_node: 1}, metric: request_throughput, unit: req/s, band: {min: "-10%"}, source: docs, value: 1.73}
`
	const ttft = `  - {test: workload.command, scope: {nodes: 1, gpus_per_node: 1}, metric: mean_ttft, unit: ms, band: {max: "+20%"}, source: docs, value: 71.54}
`
	parsed := result.Parsed{Metrics: []result.Metric{{Name: "request_throughput", Value: 1.73, Unit: "req/s"}, {Name: "mean_ttft", Value: 71.54, Unit: "ms"}}}
	for _, c := range []struct {
		name, entries, status, message string
		unjudged                       []string
	}{
		{"both judged", rps + ttft, "pass", "2 points inside their bands", nil},
		{"the time left out", rps, "pass", "1 point inside its band; not judged, no baseline entry at scope 1x1: mean_ttft", []string{"mean_ttft"}},
		{"none judged", "", "skip", "no baseline for workload.command in SKU site", []string{"mean_ttft", "request_throughput"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := sku.Parse([]byte(head+c.entries), "site.yaml")
			assert.NilError(t, err)
			got := JudgeWith(s, "workload.command", plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}}, parsed, nil, nil)
			assert.Equal(t, string(got.Status), c.status, got.Message)
			assert.Equal(t, got.Message, c.message)
			assert.DeepEqual(t, got.Meanings, []result.Meaning{
				{Name: "request_throughput", Unit: "req/s", Better: result.BetterHigher, Plot: result.PlotLabels, Record: true},
				{Name: "mean_ttft", Unit: "ms", Better: result.BetterLower, Plot: result.PlotLabels},
			})
			var unjudged []string
			for _, m := range got.Metrics {
				if m.Message == "not judged: no baseline entry for "+m.Name+" at scope 1x1" {
					unjudged = append(unjudged, m.Name)
				}
			}
			assert.DeepEqual(t, unjudged, c.unjudged)
		})
	}
}
