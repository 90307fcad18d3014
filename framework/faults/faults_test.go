package faults

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// docs/FAULTS.md is the table rendered: a code added, renamed or reworded
// in faults.go without regenerating the page fails here.
// GPUACCEPT_UPDATE_FAULTS=1 rewrites the page.
func TestFaultsMarkdownIsTheTable(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "FAULTS.md")
	want := Markdown()
	if os.Getenv("GPUACCEPT_UPDATE_FAULTS") == "1" {
		assert.NilError(t, os.WriteFile(path, []byte(want), 0o644))
	}
	got, err := os.ReadFile(path)
	assert.NilError(t, err, "run GPUACCEPT_UPDATE_FAULTS=1 go test ./framework/faults/ to write it")
	assert.Equal(t, string(got), want, "docs/FAULTS.md differs from the table in faults.go: regenerate it (GPUACCEPT_UPDATE_FAULTS=1)")
}

var codeShape = regexp.MustCompile(`^GA(-[A-Z0-9]+){2,3}$`)

// Every row is complete and its code stable-shaped and unique, so that a
// report never prints an empty remedy.
func TestFaultRowsAreComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range All() {
		assert.Assert(t, codeShape.MatchString(f.Code), "code %q is not GA-AREA-WHAT", f.Code)
		assert.Assert(t, !seen[f.Code], "code %s listed twice", f.Code)
		seen[f.Code] = true
		assert.Assert(t, f.Title != "" && f.Remedy != "" && f.Source != "", "%s: title, remedy and source must be given", f.Code)
		switch f.Severity {
		case Drain, Reset, Fix, Warn:
		default:
			t.Errorf("%s: severity %q is not drain, reset, fix or warn", f.Code, f.Severity)
		}
		got, ok := Lookup(f.Code)
		assert.Assert(t, ok)
		assert.Equal(t, got, f)
	}
	assert.Equal(t, len(Codes()), len(seen))
}

func TestAdvice(t *testing.T) {
	cases := []struct{ code, want string }{
		{"GA-GPU-ROWREMAP-FAIL", "GA-GPU-ROWREMAP-FAIL (drain): a row remap failed: the GPU has no spare rows left. Remedy: Drain the node and RMA the GPU"},
		{"GA-NO-SUCH", "GA-NO-SUCH: not in gpuaccept's fault table (docs/FAULTS.md)"},
	}
	for _, c := range cases {
		assert.Assert(t, strings.HasPrefix(Advice(c.code), c.want), "Advice(%s) = %q", c.code, Advice(c.code))
	}
	_, ok := Lookup("GA-NO-SUCH")
	assert.Assert(t, !ok)
}
