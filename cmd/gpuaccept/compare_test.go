package main

import (
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// --compare: the H100's busy run (testdata/recordings/h100x1-2026-12-07/
// issue30/busy-reference) replayed against the store holding the same
// board's accepted idle run (issue30/node-4): every point says its
// change against that acceptance; a bad --compare is a usage error.
func TestHistoryCompare(t *testing.T) {
	rec := "../../testdata/recordings/h100x1-2026-12-07/issue30/"
	store := filepath.Join(t.TempDir(), "h.db")
	code, out, errs := cli(t, "history", "import", "--history", store, rec+"node-4")
	assert.Equal(t, code, 0, "%s%s", out, errs)
	args := []string{"run", "--sku", "h100", "--suite", "node", "--launcher", "replay", "--replay-dir", rec + "busy-reference", "--gpus-per-node", "1", "--history", store}
	code, out, errs = cli(t, append(args, "--compare", "acceptance", "--out", filepath.Join(t.TempDir(), "r"))...)
	assert.Equal(t, code, exitFail, errs)
	for _, want := range []string{
		"compared with the results store (--compare acceptance): 9 points",
		"GPU 1651624103756: gemm.matmul tflops{dtype=bf16,mode=alone} 317.9 TFLOPS, -57% against its acceptance on 2026-12-07 (734.5 TFLOPS)",
		"GPU 1651624103756: hbm.bandwidth bw{op=copy} at 1 GiB 1526 GB/s, -50% against its acceptance on 2026-12-07 (3026 GB/s)",
	} {
		assert.Assert(t, strings.Contains(out, want), "%q not in\n%s", want, out)
	}
	code, _, errs = cli(t, append(args, "--compare", "yesterday")...)
	assert.Equal(t, code, exitUsage, errs)
	assert.Assert(t, strings.Contains(errs, `--compare: "yesterday": want acceptance, last or a run's digest`), errs)
}
