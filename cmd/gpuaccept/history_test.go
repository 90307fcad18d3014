package main

import (
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// gpuaccept history end to end, through masking: two recorded runs of one
// H100 (healthy, then busy) imported, imported again (skipped), listed by
// GPU serial and their drift printed; a bad --by is a usage error.
func TestHistoryCommand(t *testing.T) {
	rec := "../../testdata/recordings/h100x1-2026-12-07/issue30/"
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	code, out, errs := cli(t, "history", "import", rec+"node-1", rec+"busy-reference")
	assert.Equal(t, code, 0, errs)
	assert.Equal(t, strings.Count(out, "imported "), 2, out)
	code, out, errs = cli(t, "history", "import", rec+"node-1")
	assert.Equal(t, code, 0, errs)
	assert.Assert(t, strings.HasPrefix(out, "skipped "), out)

	code, out, errs = cli(t, "history", "--by", "gpu", "--serial", "1651624103756", "--format", "json")
	assert.Equal(t, code, 0, errs)
	assert.Equal(t, strings.Count(out, `"gpu_serial": "1651624103756"`), 18, out)

	code, out, errs = cli(t, "history", "drift", "--test", "gemm.matmul")
	assert.Equal(t, code, 0, errs)
	assert.Assert(t, strings.Contains(out, "GPU 1651624103756 on vm: gemm.matmul tflops{dtype=bf16,mode=alone} 317.9 TFLOPS, -59% since its acceptance on 2026-12-07\n"), out)

	code, _, errs = cli(t, "history", "--by", "rack")
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(errs, `--by "rack"`), errs)
	code, _, errs = cli(t, "history", "import", filepath.Join(t.TempDir(), "none"))
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(errs, "not a sealed results folder"), errs)
}
