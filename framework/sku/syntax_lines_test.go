package sku

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
)

// Every shipped SKU file, edited at every line where the edit breaks the
// YAML: a flow mapping's closing } dropped, a tab put before the line's
// indentation. The problem must name the edited line, wherever it is in
// whichever file (issue 22: line 93's } was reported at line 92, line 84's
// tab at line 83; the fix was first checked on one line of h200.yaml).
func TestSyntaxErrorLineEverywhere(t *testing.T) {
	names, err := fs.Glob(baselines.FS, "*.yaml")
	assert.NilError(t, err)
	assert.Assert(t, len(names) > 0)
	edits := []struct {
		name string
		ok   func(string) bool
		edit func(string) string
	}{
		{"} dropped", func(l string) bool {
			return strings.HasSuffix(l, "}") && !strings.Contains(strings.TrimSuffix(l, "}"), "}")
		},
			func(l string) string { return strings.TrimSuffix(l, "}") }},
		{"tab in the indentation", func(l string) bool {
			return strings.HasPrefix(l, "  ") && !strings.HasPrefix(strings.TrimSpace(l), "#")
		},
			func(l string) string { return "\t" + l }},
	}
	tried := 0
	for _, name := range names {
		data, err := fs.ReadFile(baselines.FS, name)
		assert.NilError(t, err)
		lines := strings.Split(string(data), "\n")
		for i, l := range lines {
			for _, e := range edits {
				if !e.ok(l) {
					continue
				}
				edited := append([]string(nil), lines...)
				edited[i] = e.edit(l)
				_, err := Parse([]byte(strings.Join(edited, "\n")), name)
				var p *Problems
				if !errors.As(err, &p) || len(p.List) == 0 || !strings.HasPrefix(p.List[0].Message, "yaml: ") {
					continue // still YAML (a tab inside a block scalar): no syntax line to check
				}
				tried++
				assert.Check(t, p.List[0].Line == i+1, "%s line %d, %s: reported at line %d: %v", name, i+1, e.name, p.List[0].Line, err)
			}
		}
	}
	assert.Assert(t, tried > 100, "only %d edits broke the YAML", tried)
}
