package sku

import (
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
)

// Problems carry their file, line and field as data, whichever part of
// Parse found them: yaml.v3's own type errors, the decoders' (a bad bound
// inside a band), the file's rules (validate).
func TestProblemsAreData(t *testing.T) {
	data, err := os.ReadFile("testdata/mi355x-user-copy.yaml")
	assert.NilError(t, err)
	s := string(data)
	s = editLine(t, s, 156, "value: 395.27", "value: fast")
	s = editLine(t, s, 160, "scope: {nodes: 1,", "scope: {nodes: 0,")
	s = editLine(t, s, 150, `min: "-10%"`, `min: "10%"`)
	s = editLine(t, s, 177, "unit: GB/s", `unit: ""`)
	_, err = Parse([]byte(s), "mi355x.yaml")
	var p *Problems
	assert.Assert(t, errors.As(err, &p), "%T %v", err, err)
	const f = "mi355x.yaml"
	want := []Problem{
		{f, 150, "band.min", `bound "10%": a floor (min, warn_min) must be negative (-10%)`},
		{f, 156, "", "cannot unmarshal !!str `fast` into float64"},
		{f, 160, "scope", "nodes and gpus_per_node must be >= 1, got 0x8"},
		{f, 177, "unit", "missing (the metric's unit, as its plugin declares it: gpuaccept list tests)"},
	}
	assert.DeepEqual(t, p.List, want)
	// What a check after Parse adds (skucheck) merges by line.
	merged := NewProblems(f, []error{err, Problem{Line: 149, Field: "metric", Message: "m"}, Problem{Message: "about the whole file"}})
	assert.Assert(t, errors.As(merged, &p))
	var lines []int
	for _, x := range p.List {
		lines = append(lines, x.Line)
		assert.Equal(t, x.File, f)
	}
	assert.DeepEqual(t, lines, []int{0, 149, 150, 156, 160, 177})
}

// problemFromYAML reads back exactly what crossed yaml.v3 as text: its
// String is the text again, and a Problem's own String reads back to it.
func TestProblemFromYAML(t *testing.T) {
	for _, c := range []struct {
		text string
		want Problem
	}{
		{"line 12: cannot unmarshal !!str `fast` into float64", Problem{Line: 12, Message: "cannot unmarshal !!str `fast` into float64"}},
		{"line 18: field band.min: bound \"10%\": a floor", Problem{Line: 18, Field: "band.min", Message: "bound \"10%\": a floor"}},
		{"field sku: missing", Problem{Field: "sku", Message: "missing"}},
		{`line 3: field "bnad" is not known here (known: band, unit)`, Problem{Line: 3, Message: `field "bnad" is not known here (known: band, unit)`}},
		{"line 0: kept whole", Problem{Message: "line 0: kept whole"}},
		{"line 07: kept whole", Problem{Message: "line 07: kept whole"}},
		{"line 5: fields value/points: give one", Problem{Line: 5, Message: "fields value/points: give one"}},
		{"line 5: field a..b: not a path", Problem{Line: 5, Message: "field a..b: not a path"}},
		{"no line at all", Problem{Message: "no line at all"}},
	} {
		got := problemFromYAML(c.text)
		assert.DeepEqual(t, got, c.want)
		assert.Equal(t, got.String(), c.text)
		if diff := cmp.Diff(problemFromYAML(c.want.String()), c.want); diff != "" {
			t.Errorf("%q: %s", c.text, diff)
		}
	}
}

func FuzzProblemFromYAML(f *testing.F) {
	for _, s := range []string{"line 12: x", "line 1: field a.b: m", "field sku: missing", "line 0: x", "line -1: x", "line 1:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := problemFromYAML(s).String(); got != s {
			t.Fatalf("%q read back as %q", s, got)
		}
	})
}
