package runner

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

type describer map[string]pluginapi.Description

func (d describer) Describe(_ context.Context, p string) (pluginapi.Description, error) {
	if desc, ok := d[p]; ok {
		return desc, nil
	}
	return pluginapi.Description{}, &noPlugin{p}
}

type noPlugin struct{ name string }

func (n *noPlugin) Error() string { return "no plugin " + n.name }

var plugins = describer{"nccl": {Name: "nccl", Tests: []pluginapi.TestInfo{{Name: "all_reduce", Metrics: []pluginapi.MetricInfo{
	{Name: "busbw", Unit: "GB/s", Labels: []string{"placement=out-of-place|in-place", "type"}},
}}, {Name: "all_gather"}}}}

const base = `sku: t
suites:
  s:
    tests:
      - test: nccl.all_reduce
      - test: rccl.alltoall
        skip: no plugin yet
baselines:
  - test: nccl.all_reduce
    scope: {nodes: 1, gpus_per_node: 2}
    metric: busbw
    unit: GB/s
    labels: {placement: out-of-place, type: float}
    band: {min: "-10%"}
    source: test
    points: [{size: 1G, value: 300}]
`

// Typos a YAML schema cannot see, caught against what the plugins report.
func TestValidateSKU(t *testing.T) {
	cases := []struct{ from, to, want string }{
		{"", "", ""},
		{"metric: busbw", "metric: bus_bw", `t.yaml: line 9: field metric: nccl.all_reduce reports no metric "bus_bw" (it reports: busbw)`},
		{"placement: out-of-place", "placement: outofplace", `line 9: field labels: label placement="outofplace" is not one of out-of-place, in-place`},
		{"placement: out-of-place", "placment: out-of-place", `line 9: field labels: nccl.all_reduce busbw has no label "placment" (its labels: placement, type)`},
		{"  - test: nccl.all_reduce\n    scope", "  - test: nccl.allreduce\n    scope", `line 9: field test: nccl.allreduce is in no suite of SKU t (suites list: nccl.all_reduce, rccl.alltoall)`},
		{"      - test: nccl.all_reduce\n", "      - test: nccl.all_reduc\n", `t.yaml: line 5: field test: plugin nccl has no test "all_reduc"`},
		{"unit: GB/s", "unit: Gb/s", "line 9: field unit: nccl.all_reduce busbw is in GB/s, not Gb/s"},
		{"      - test: nccl.all_reduce\n", "      - test: nccl.all_reduce\n      - test: nccl.all_gather\n", ""},
	}
	for _, c := range cases {
		s, err := sku.Parse([]byte(strings.Replace(base, c.from, c.to, 1)), "t.yaml")
		assert.NilError(t, err)
		err = ValidateSKU(context.Background(), plugins, s)
		if c.want == "" {
			assert.NilError(t, err)
			continue
		}
		assert.ErrorContains(t, err, c.want)
	}
}

func TestUnbaselined(t *testing.T) {
	s, err := sku.Parse([]byte(strings.Replace(base, "      - test: nccl.all_reduce\n", "      - test: nccl.all_reduce\n      - test: nccl.all_gather\n", 1)), "t.yaml")
	assert.NilError(t, err)
	assert.DeepEqual(t, Unbaselined(s), []string{"suite s: nccl.all_gather has no baseline at any scope"})
}
