package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"gotest.tools/v3/assert"
)

// noTorch is torchbench.py's real output on a node whose Python has no
// torch (recorded: testdata/field/torchbench/no-torch-gemm/case.yaml).
const noTorch = "../../testdata/field/torchbench/no-torch-gemm/alone.jsonl"

// A node suite's torchbench tests on a node without PyTorch: the script
// says "import torch: No module named 'torch'" and exits 3. That is a
// setup to fix, so every test is ERROR and the run exits 3, never 1 (a
// faulty machine).
func TestTorchBenchWithoutTorchIsError(t *testing.T) {
	line := readFile(t, noTorch)
	assert.Assert(t, strings.Contains(line, `"message": "import torch: No module named 'torch'"`), line)
	dir := t.TempDir()
	steps := map[string][]string{
		"gemm.matmul":   {"alone", "concurrent"},
		"hbm.bandwidth": {"bandwidth"},
		"hostlink.pcie": {"pcie"},
		"hostlink.p2p":  {"p2p"},
	}
	args := []string{"--sku", "h200", "--suite", "node", "--launcher", "replay", "--replay-dir", dir, "--gpus-per-node", "2", "--out", t.TempDir()}
	for test, ss := range steps {
		td := filepath.Join(dir, test)
		assert.NilError(t, os.MkdirAll(td, 0o755))
		var outs []string
		for _, s := range ss {
			assert.NilError(t, os.WriteFile(filepath.Join(td, s+".log"), []byte(line), 0o644))
			outs = append(outs, `{"step":"`+s+`","exit_code":3,"log":"`+s+`.log"}`)
		}
		assert.NilError(t, os.WriteFile(filepath.Join(td, layout.Outputs), []byte("["+strings.Join(outs, ",")+"]"), 0o644))
		args = append(args, "--test", test)
	}
	code, out, errs := cli(t, args...)
	assert.Equal(t, code, 3, out+errs)
	for test := range steps {
		assert.Assert(t, strings.Contains(out, test+" ") && !strings.Contains(out, "FAIL"), out)
	}
	assert.Assert(t, strings.Contains(out, "the tool could not run (setup, not hardware)"), out)
	assert.Assert(t, strings.Contains(out, "4 error"), out)

	// The same line handed to check: ERROR, exit 3.
	for test := range steps {
		code, out, _ := cli(t, "check", "--sku", "h200", "--test", test, "--nodes", "1", "--gpus-per-node", "1", noTorch)
		assert.Equal(t, code, 3, "%s: %s", test, out)
		assert.Assert(t, strings.Contains(out, "ERROR"), out)
	}
}

// Replaying a folder that has no recording of a test: the test could not
// run, an ERROR naming the folder and the test, never a FAIL.
func TestReplayMissingRecordingIsError(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--sku", "h200", "--suite", "node", "--launcher", "replay", "--replay-dir", dir, "--gpus-per-node", "2", "--format", "json", "--out", t.TempDir()}
	for _, test := range []string{"gemm.matmul", "hbm.bandwidth", "hostlink.pcie", "hostlink.p2p", "nccl.all_reduce", "health.node"} {
		args = append(args, "--test", test)
	}
	code, out, errs := cli(t, args...)
	assert.Equal(t, code, 3, out+errs)
	assert.Assert(t, !strings.Contains(out, `"status": "fail"`), out)
	assert.Equal(t, strings.Count(out, `"status": "error"`), 7, "the run and its 6 tests: %s", out)
	for _, rec := range []string{"gemm.matmul/alone.log", "hbm.bandwidth/bandwidth.log", "hostlink.pcie/pcie.log", "hostlink.p2p/p2p.log", "nccl.all_reduce/all_reduce.log", "health.node/node.log"} {
		assert.Assert(t, strings.Contains(out, "no recording "+rec+" in "+dir), "%s: %s", rec, out)
	}
}
