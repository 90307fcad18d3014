package nccltests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"gotest.tools/v3/assert"
)

// Result's inputs are testdata files, or copies of them edited as each test
// says (ntEdited), written to a temporary folder.

// ntEdited writes testdata file rel, passed through edit, as name in a
// temporary folder and returns its path. edit must change something: a
// test that names an edit must make it.
func ntEdited(t *testing.T, rel, name string, edit func(string) string) string {
	t.Helper()
	src := string(ntTestdata(t, rel))
	out := src
	if edit != nil {
		out = edit(src)
		assert.Assert(t, out != src, "the edit of %s changed nothing", rel)
	}
	p := filepath.Join(t.TempDir(), name)
	assert.NilError(t, os.WriteFile(p, []byte(out), 0o644))
	return p
}

// ntReplace returns an edit replacing old by new exactly once.
func ntReplace(t *testing.T, old, new string) func(string) string {
	return func(s string) string {
		t.Helper()
		assert.Equal(t, strings.Count(s, old), 1, "%q", old)
		return strings.Replace(s, old, new, 1)
	}
}

// ntCheck returns the check of that name, or nil.
func ntCheck(p result.Parsed, name string) *result.Check {
	for i := range p.Checks {
		if p.Checks[i].Name == name {
			return &p.Checks[i]
		}
	}
	return nil
}

func ntTopo(nodes, gpus int) plan.Topology { return plan.Topology{Nodes: nodes, GPUsPerNode: gpus} }

// The 1-GPU H200 broadcast of the issue: its in-place 2 GiB row is a no-op
// on one rank, timed at 1.76 us, so busbw 1222105.42 GB/s, which the text
// column of 6 can only print as "1e+06" (getFloatStr's %6.0e). Made from
// the real 2-GPU broadcast text and JSON by writing that row's in-place
// figures as the 1-GPU run printed and wrote them.
func TestResultTextJSONShortForm(t *testing.T) {
	const (
		textRow = "  2147483648     536870912     float    none       0  5866.78  366.04  366.04       0  5818.54  369.08  369.08       0"
		jsonIn  = `"alg_bw": 369.075856,
    "bus_bw": 369.075856,`
	)
	tests := []struct {
		name, textInPlace, jsonBusBW string
		want                         string // the error's disagreement, "" none
	}{
		{"1e+06 against 1222105.42: within the text's rounding", "     1.76   1e+06   1e+06", "1222105.42", ""},
		{"1e+06 against 1499999: still within", "     1.76   1e+06   1e+06", "1499999", ""},
		{"1e+06 against 1722105.42: another run", "     1.76   1e+06   1e+06", "1722105.42", "busbw at 2 GiB is 1e+06 in the text, 1722105.42 in the JSON"},
		{"369.08 against 369.09: beyond %6.2f", "  5818.54  369.08  369.08", "369.09", "busbw at 2 GiB is 369.08 in the text, 369.09 in the JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			row := strings.Replace(textRow, "  5818.54  369.08  369.08", tc.textInPlace, 1)
			var edit func(string) string // the text as recorded when its row is unchanged
			if row != textRow {
				edit = ntReplace(t, textRow, row)
			}
			log := ntEdited(t, "h200x2-2.19.6/broadcast.txt", "broadcast.log", edit)
			js := ntEdited(t, "h200x2-2.19.6/broadcast.json", "broadcast.json", ntReplace(t, jsonIn,
				strings.ReplaceAll(jsonIn, "369.075856", tc.jsonBusBW)))
			p := Result(plan.Output{Step: "broadcast", Log: log, Files: map[string]string{"broadcast.json": js}},
				Options{Test: "broadcast", Topology: ntTopo(1, 2)})
			if tc.want == "" {
				assert.Equal(t, p.Error, "")
				return
			}
			assert.Assert(t, strings.Contains(p.Error, "broadcast.log and broadcast.json disagree: "+tc.want), p.Error)
		})
	}
}
