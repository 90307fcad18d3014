package sku

import (
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
)

// A SKU file that is not YAML is reported at the line of the fault
// (issue 22: yaml.v3 prints its parser's lines 0-based, and a tab in the
// indentation at the line before the tab's). Each case edits a line of
// the shipped h200 file, found by its text; the error must name that line.
// The end of the file is its last line, not the one yaml.v3 moves to past
// it.
func TestSyntaxErrorAtEnd(t *testing.T) {
	for _, c := range []struct {
		text string
		line int
	}{{"{", 1}, {"{\n", 1}, {"sku: t\nsuites: {\n", 2}, {"sku: t\nsuites: [a,\n\n", 3}} {
		_, err := Parse([]byte(c.text), "t.yaml")
		var p *Problems
		assert.Assert(t, errors.As(err, &p), "%q: %v", c.text, err)
		assert.Equal(t, p.List[0].Line, c.line, "%q: %v", c.text, err)
	}
}

func TestSyntaxErrorLine(t *testing.T) {
	data, err := fs.ReadFile(baselines.FS, "h200.yaml")
	assert.NilError(t, err)
	lines := strings.Split(string(data), "\n")
	find := func(t *testing.T, text string) int {
		for i, l := range lines {
			if strings.Contains(l, text) {
				return i
			}
		}
		t.Fatalf("no line of h200.yaml holds %q", text)
		return 0
	}
	for _, c := range []struct {
		name, line string
		edit       func(string) string
		want       string
	}{
		{"a flow mapping's } dropped", "scope: {nodes: 1, gpus_per_node: 2}", func(l string) string { return strings.TrimSuffix(l, "}") },
			"did not find expected ',' or '}'"},
		{"a tab before a suite's test", "      - test: nccl.sendrecv", func(l string) string { return "\t" + l },
			"found a tab character that violates indentation"},
		{"a tab for the indentation of an entry's key", "    scope: {nodes: 1, gpus_per_node: 2}", func(l string) string { return "\t" + strings.TrimPrefix(l, "  ") },
			"found a tab character that violates indentation"},
		// A scanner error yaml.v3 already counts from 1: left as it is.
		{"a tab before the key after a flow mapping", "    metric: busbw", func(l string) string { return "\t" + l },
			"found character that cannot start any token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			i := find(t, c.line)
			edited := append([]string(nil), lines...)
			edited[i] = c.edit(edited[i])
			s, err := Parse([]byte(strings.Join(edited, "\n")), "h200.yaml")
			assert.Assert(t, s == nil)
			var p *Problems
			assert.Assert(t, errors.As(err, &p), "%T %v", err, err)
			assert.DeepEqual(t, p.List, []Problem{{File: "h200.yaml", Line: i + 1, Message: "yaml: " + c.want}})
			assert.Error(t, err, "h200.yaml: line "+strconv.Itoa(i+1)+": yaml: "+c.want)
		})
	}
}
