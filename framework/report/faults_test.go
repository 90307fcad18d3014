package report

import (
	"bytes"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// A failed check with a fault code shows the code and its remedy in the
// table, the Markdown and the JUnit; a check without a code, or one that
// holds, adds nothing.
func TestFailedCheckShowsItsFaultCode(t *testing.T) {
	run := &result.Run{SKU: "h200", Suite: "check", Launcher: "check", Status: result.Fail, Tests: []result.Test{{
		Name: "health.node", Status: result.Fail, Message: "row remap failure: node-b: GPU 0: a row remap failed",
		Checks: []result.Check{
			{Name: "GPU count", OK: true, Host: "node-b", Message: "node-b: 8 GPUs, 8 expected"},
			{Name: "row remap failure", Host: "node-b", Code: "GA-GPU-ROWREMAP-FAIL", Message: "node-b: GPU 0: a row remap failed"},
			{Name: "persistence mode", Warn: true, Host: "node-b", Code: "GA-GPU-PERSISTENCE", Message: "node-b: persistence mode disabled on GPU 3"},
			{Name: "rank count", Message: "4 ranks, 8 expected"},
		},
	}}}
	line := "GA-GPU-ROWREMAP-FAIL (drain) on node-b, health.node check row remap failure: a row remap failed: the GPU has no spare rows left. Remedy: Drain the node and RMA the GPU"
	cases := []struct {
		format string
		want   []string
		not    []string
	}{
		{"table", []string{"Faults (docs/FAULTS.md):\n  " + line, "GA-GPU-PERSISTENCE (fix) on node-b"}, []string{"rank count:"}},
		{"markdown", []string{"**Faults** (docs/FAULTS.md)", "- GA-GPU-ROWREMAP-FAIL (drain) on node-b"}, nil},
	}
	for _, c := range cases {
		var b bytes.Buffer
		assert.NilError(t, Write(&b, c.format, run))
		for _, w := range c.want {
			assert.Assert(t, strings.Contains(b.String(), w), "%s lacks %q:\n%s", c.format, w, b.String())
		}
		for _, n := range c.not {
			assert.Assert(t, !strings.Contains(b.String(), "Faults") || !strings.Contains(b.String()[strings.Index(b.String(), "Faults"):], n), "%s lists %q among faults", c.format, n)
		}
		assert.Assert(t, !strings.Contains(b.String(), "GPU count ("), "a check that holds is listed")
	}
	assert.Equal(t, checkText(run.Tests[0].Checks[3]), "4 ranks, 8 expected")
	assert.Equal(t, checkText(run.Tests[0].Checks[0]), "node-b: 8 GPUs, 8 expected")
	assert.Assert(t, strings.HasPrefix(checkText(run.Tests[0].Checks[1]), "node-b: GPU 0: a row remap failed [GA-GPU-ROWREMAP-FAIL (drain): "))
	// No coded check: the table has no Faults block.
	var b bytes.Buffer
	assert.NilError(t, Table(&b, &result.Run{Tests: []result.Test{{Name: "x", Status: result.Fail, Checks: []result.Check{{Name: "rank count", Message: "bad"}}}}}))
	assert.Assert(t, !strings.Contains(b.String(), "Faults"), b.String())
}
