package result

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// Every number JSON cannot hold, wherever a run carries one (a metric, its
// baseline, an attempt's metric, a localisation's figures), makes the run
// writable: the number 0, the test an error (or the localisation a note)
// naming it, and the run given unchanged.
func TestFiniteNamesEveryNonFiniteNumber(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	point := func(v float64) Judged {
		return Judged{Metric: Metric{Name: "busbw", Value: v, Unit: "GB/s", Size: 4 << 30, Labels: map[string]string{"placement": "in-place"}}, Status: Pass}
	}
	withExpected := point(344)
	withExpected.Expected = &inf
	cases := []struct {
		name string
		run  Run
		want string
	}{
		{"metric +Inf", Run{Tests: []Test{{Name: "t", Status: Pass, Metrics: []Judged{point(1), point(inf)}}}}, "busbw[in-place] at 4 GiB = +Inf"},
		{"metric NaN", Run{Tests: []Test{{Name: "t", Status: Pass, Metrics: []Judged{point(nan)}}}}, "busbw[in-place] at 4 GiB = NaN"},
		{"baseline +Inf", Run{Tests: []Test{{Name: "t", Status: Pass, Metrics: []Judged{withExpected}}}}, "busbw[in-place] at 4 GiB baseline = +Inf"},
		{"attempt", Run{Tests: []Test{{Name: "t", Status: Warn, Metrics: []Judged{point(1)}, Attempts: []Test{{Name: "t", Status: Fail, Metrics: []Judged{point(math.Inf(-1))}}}}}}, "attempt 1"},
		{"localisation figure", Run{Localisations: []Localisation{{Test: "t", Tolerance: 0.1, Stages: []Stage{{Name: "pairs", Runs: []SubRun{{Round: 1, Hosts: []string{"a", "b"}, Figure: inf, Status: Pass}}}}}}}, "pairs round 1 on a,b: figure +Inf"},
		{"localisation tolerance", Run{Localisations: []Localisation{{Test: "t", Tolerance: nan}}}, "tolerance = NaN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := json.Marshal(c.run)
			assert.Assert(t, err != nil, "the case holds no non-finite number")
			f := c.run.Finite()
			data, err := json.Marshal(f)
			assert.NilError(t, err)
			assert.Assert(t, strings.Contains(string(data), c.want), string(data))
			if len(c.run.Tests) > 0 {
				assert.Equal(t, f.Tests[0].Status, Error)
				assert.Equal(t, f.Status, Error)
				assert.Assert(t, c.run.Tests[0].Status != Error, "the run given was changed")
			}
		})
	}
	// A run without such numbers is returned as is.
	r := &Run{Tests: []Test{{Name: "t", Status: Pass, Metrics: []Judged{point(1)}}}}
	assert.Assert(t, r.Finite() == r)
}
