package signoff

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// verify's OK line says a run that is not signed off as such, and why: a
// reader must not take "verify: OK" for a pass.
func TestRunVerdict(t *testing.T) {
	tests := func(st result.Status, names ...string) []result.Test {
		var out []result.Test
		for _, n := range names {
			out = append(out, result.Test{Name: n, Status: st})
		}
		return out
	}
	cases := []struct {
		name string
		run  result.Run
		want string
	}{
		{"pass", result.Run{Status: result.Pass, Tests: tests(result.Pass, "a")}, "pass"},
		{"warn", result.Run{Status: result.Warn, Tests: tests(result.Warn, "a")}, "warn"},
		{"failed tests", result.Run{Status: result.Fail, Tests: tests(result.Fail, "hbm.bandwidth")}, "fail: FAIL: failed: hbm.bandwidth"},
		{"more than 5", result.Run{Status: result.Fail, Tests: tests(result.Fail, "a", "b", "c", "d", "e", "f", "g")}, "fail: FAIL: failed: a, b, c, d, e, and 2 more"},
		{"bad nodes, each once", result.Run{Status: result.Fail, BadNodes: []result.BadNode{{Host: "n1"}, {Host: "n2"}, {Host: "n1"}}}, "fail: FAIL: failed health: n1, n2"},
		{"errored", result.Run{Status: result.Error, Tests: tests(result.Error, "nccl.all_reduce")}, "error: ERROR: errored: nccl.all_reduce"},
		{"nothing judged", result.Run{Status: result.Skip}, "skip: SKIP: nothing was judged"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, runVerdict(&c.run), c.want)
		})
	}
}
