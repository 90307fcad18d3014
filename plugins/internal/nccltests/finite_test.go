package nccltests

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// A non-finite time or bandwidth (nan, inf, or a number past float64 such
// as 1e309), written into the real H200 all_reduce run by the edit each
// case names, is a parse error naming file and line, and no metric carries
// it: no benchmark measures one, and JSON cannot hold one.
func TestNonFiniteIsAParseError(t *testing.T) {
	text, err := os.ReadFile("testdata/h200x2-2.19.6/all_reduce.txt")
	assert.NilError(t, err)
	js, err := os.ReadFile("testdata/h200x2-2.19.6/all_reduce.json")
	assert.NilError(t, err)
	// Line 42 of the text: the 4 GiB row; the JSON's out-of-place busbw
	// of that row.
	const row = "  4294967296    1073741824     float     sum      -1  12484.2  344.03  344.03       0"
	const jsBus = `"bus_bw": 344.031485,`
	cases := []struct {
		name, file, from, to, want string
	}{
		{"text busbw +Inf", "all_reduce.txt", row, strings.Replace(row, "344.03       0", "  +Inf       0", 1), "all_reduce.txt:42: busbw (out-of-place) is +Inf"},
		{"text algbw 1e309", "all_reduce.txt", row, strings.Replace(row, "344.03  344.03", " 1e309  344.03", 1), "all_reduce.txt:42: algbw (out-of-place) is +Inf"},
		{"text time nan", "all_reduce.txt", row, strings.Replace(row, "12484.2", "    nan", 1), "all_reduce.txt:42: time (out-of-place) is NaN"},
		{"text busbw -inf", "all_reduce.txt", row, strings.Replace(row, "344.03       0", "  -inf       0", 1), "all_reduce.txt:42: busbw (out-of-place) is -Inf"},
		{"text avg busbw inf", "all_reduce.txt", "# Avg bus bandwidth    : 103.407", "# Avg bus bandwidth    : inf", "all_reduce.txt: avg_busbw is +Inf"},
		{"JSON busbw 1e309", "all_reduce.json", jsBus, `"bus_bw": 1e309,`, "all_reduce.json: busbw (out-of-place) is +Inf at 4 GiB"},
		{"JSON busbw \"nan\"", "all_reduce.json", jsBus, `"bus_bw": "nan",`, "all_reduce.json: busbw (out-of-place) is NaN at 4 GiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src := map[string][]byte{"all_reduce.txt": text, "all_reduce.json": js}
			assert.Assert(t, strings.Contains(string(src[c.file]), c.from), "the edit no longer applies")
			src[c.file] = []byte(strings.Replace(string(src[c.file]), c.from, c.to, 1))
			out := plan.Output{Log: filepath.Join(dir, "all_reduce.txt")}
			assert.NilError(t, os.WriteFile(out.Log, src["all_reduce.txt"], 0o644))
			if c.file == "all_reduce.json" {
				out.Files = map[string]string{"all_reduce.json": filepath.Join(dir, "all_reduce.json")}
				assert.NilError(t, os.WriteFile(out.Files["all_reduce.json"], src["all_reduce.json"], 0o644))
			}
			p := Result(out, Options{Test: "all_reduce", Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}})
			assert.Assert(t, strings.Contains(p.Error, c.want), "error: %s", p.Error)
			for _, m := range p.Metrics {
				assert.Assert(t, !math.IsNaN(m.Value) && !math.IsInf(m.Value, 0), "metric %s kept as %v", m.Key(), m.Value)
			}
		})
	}
}
