package judge

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// A preflight test is judged by its checks: with no baseline it passes
// when they hold and warns on a warn check, while a failed one still
// fails; without checks nothing was judged (skip); the no-baseline note
// leaves the message.
func TestByChecks(t *testing.T) {
	const nb = "no baseline for health.node in SKU h200"
	ok := result.Check{Name: "GPU count", OK: true, Message: "8 GPUs"}
	warn := result.Check{Name: "persistence mode", Warn: true, Message: "disabled on GPU 3", Code: "GA-GPU-PERSISTENCE"}
	bad := result.Check{Name: "row remap failure", Message: "GPU 0: a row remap failed", Code: "GA-GPU-ROWREMAP-FAIL"}
	cases := []struct {
		name   string
		checks []result.Check
		status result.Status
		msg    string
	}{
		{"all hold", []result.Check{ok, ok}, result.Pass, "all 2 checks hold"},
		{"the one holds", []result.Check{ok}, result.Pass, "1 check holds"},
		{"a warn check", []result.Check{ok, warn}, result.Warn, "persistence mode: disabled on GPU 3"},
		{"a failed check", []result.Check{ok, bad}, result.Fail, "row remap failure: GPU 0: a row remap failed"},
		{"no checks", nil, result.Skip, nb},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := Judge(result.Parsed{Checks: c.checks}, Options{NoBaseline: nb})
			got := ByChecks(j, nb)
			assert.Equal(t, got.Status, c.status)
			assert.Equal(t, got.Message, c.msg)
		})
	}
	// With metrics the baseline judges: a skip stays a skip.
	j := Judge(result.Parsed{Checks: []result.Check{ok}, Metrics: []result.Metric{{Name: "busbw", Value: 1, Unit: "GB/s"}}}, Options{NoBaseline: nb})
	assert.Equal(t, ByChecks(j, nb).Status, result.Skip)
}
