package nccltests

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// Every metric Result gives from real outputs (-N cycles, a rooted
// collective, -d all -o all) is described by MetricInfos, with its unit and
// label keys, so baselines are checked against what is really produced.
func TestMetricInfosDescribeResult(t *testing.T) {
	infos := map[string]map[string]bool{}
	units := map[string]string{}
	for _, m := range MetricInfos("nccl-tests") {
		infos[m.Name] = map[string]bool{}
		units[m.Name] = m.Unit
		for _, l := range m.Labels {
			key, _, _ := strings.Cut(l, "=")
			infos[m.Name][key] = true
		}
	}
	for f, test := range map[string]string{"cycles3.txt": "all_reduce", "bcastroot.txt": "broadcast", "dall_oall.txt": "all_reduce"} {
		p := Result(plan.Output{Log: "testdata/h200x2-variants/" + f}, Options{Test: test})
		assert.Assert(t, len(p.Metrics) > 0, f)
		for _, m := range p.Metrics {
			labels, ok := infos[m.Name]
			assert.Assert(t, ok, "%s: metric %s not described", f, m.Name)
			assert.Equal(t, m.Unit, units[m.Name], "%s: %s", f, m.Name)
			for k := range m.Labels {
				assert.Assert(t, labels[k], "%s: metric %s label %s not described", f, m.Name, k)
			}
		}
	}
}
