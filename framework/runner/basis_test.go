package runner

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// A test's basis is what its reports show ("judged on: floor"): verify
// holds it to the points it was recorded with, so a journal line that
// says golden over points a floor judged is a finding; a folder from
// before gpuaccept kept a basis claims none and is no finding.
func TestVerdictDiffsBasis(t *testing.T) {
	floorPoints := []result.Judged{
		{Metric: result.Metric{Name: "tflops", Value: 744.2, Labels: map[string]string{"dtype": "bf16"}}, Status: result.Pass, Basis: result.BasisFloor},
		{Metric: result.Metric{Name: "tflops", Value: 51.9, Labels: map[string]string{"dtype": "fp32"}}, Status: result.Pass, Basis: result.BasisFloor},
	}
	old := []result.Judged{{Metric: result.Metric{Name: "busbw", Value: 344}, Status: result.Pass}}
	cases := []struct {
		name    string
		metrics []result.Judged
		basis   []string
		want    string
	}{
		{"the points' own", floorPoints, []string{result.BasisFloor}, ""},
		{"golden claimed over floor points", floorPoints, []string{result.BasisGolden}, `basis recorded ["golden"], its points rest on ["floor"]`},
		{"none claimed over floor points", floorPoints, nil, `basis recorded [], its points rest on ["floor"]`},
		{"a folder from before the basis", old, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := result.Test{Name: "gemm.matmul", Status: result.Pass, Metrics: c.metrics, Basis: c.basis}
			got := verdictDiffs("gemm.matmul", rec, rec, false, "", "")
			if c.want == "" {
				assert.Equal(t, len(got), 0, "%v", got)
				return
			}
			assert.Assert(t, len(got) == 1 && strings.Contains(got[0], c.want), "%v", got)
		})
	}
}
