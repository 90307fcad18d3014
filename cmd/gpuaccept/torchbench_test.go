package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"gotest.tools/v3/assert"
)

// torchbenchRec holds torchbench.py's real outputs on one H200
// (testdata/recordings/h200x1-2026-12-01/README.md).
const torchbenchRec = "../../testdata/recordings/h200x1-2026-12-01/torchbench/"

// TestXTorchbenchCheck: gpuaccept check judges the script's real H200
// output with each of the three plugins. No SKU has a baseline for them
// at 1x1 yet: each ends SKIP "no baseline" (exit 4, nothing judged) with
// its metrics in results.json, and the gates still run (the GPU model is
// the H200's, so they pass).
func TestXTorchbenchCheck(t *testing.T) {
	for _, c := range []struct {
		test   string
		metric string
		labels map[string]string
		value  float64
	}{
		{"gemm.matmul", "tflops", map[string]string{"dtype": "bf16", "gpu": "0", "mode": "alone"}, 740.9970788760238},
		{"hbm.bandwidth", "bw", map[string]string{"op": "copy", "gpu": "0"}, 4200.315823345812},
		{"hostlink.pcie", "bw", map[string]string{"direction": "h2d", "gpu": "0"}, 55.49858181333672},
	} {
		t.Run(c.test, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			code, stdout, stderr := cli(t, "check", "--sku", "h200", "--test", c.test, "--nodes", "1", "--gpus-per-node", "1", "--out", out, torchbenchRec+"default.jsonl")
			// Recorded hours before the runs the 1x1 baseline came from
			// (node/README.md), on the same GPU: it passes them.
			assert.Equal(t, code, 0, stdout+stderr)
			assert.Assert(t, strings.Contains(stdout, "PASS: SKU h200"), stdout)
			assert.Assert(t, strings.Contains(stdout, "points inside their bands"), stdout)
			data, err := os.ReadFile(filepath.Join(out, layout.Results))
			assert.NilError(t, err)
			var doc struct {
				Tests []struct {
					Name, Status string
					Checks       []struct {
						Name string
						OK   bool
					}
					Metrics []struct {
						Name   string
						Value  float64
						Labels map[string]string
					}
				}
			}
			assert.NilError(t, json.Unmarshal(data, &doc))
			assert.Equal(t, len(doc.Tests), 1)
			tt := doc.Tests[0]
			assert.Equal(t, tt.Status, "pass")
			found := false
			for _, m := range tt.Metrics {
				match := m.Name == c.metric
				for k, v := range c.labels {
					match = match && m.Labels[k] == v
				}
				if match {
					found = true
					assert.Equal(t, m.Value, c.value)
				}
			}
			assert.Assert(t, found, "no %s %v in %s", c.metric, c.labels, data)
			for _, ch := range tt.Checks {
				assert.Assert(t, ch.OK, "check %s failed: %s", ch.Name, data)
			}
		})
	}
}

// TestXTorchbenchCheckDegraded: the same output judged at two GPUs per
// node fails, whatever the baseline: GPU 1 is missing.
func TestXTorchbenchCheckDegraded(t *testing.T) {
	code, stdout, stderr := cli(t, "check", "--sku", "h200", "--test", "gemm.matmul", "--nodes", "1", "--gpus-per-node", "2", "--out", filepath.Join(t.TempDir(), "out"), torchbenchRec+"default.jsonl")
	assert.Equal(t, code, 1, stdout+stderr)
	assert.Assert(t, strings.Contains(stdout, "GPU 1: no result"), stdout)
}

// The node suite's recordings on the H200 (testdata/recordings/
// h200x1-2026-12-01/node/README.md) through the CLI: a healthy run's
// results folder verifies and passes the 1x1 baseline when judged again;
// the busy and clock-locked runs fail it, and the efficiency against the
// datasheet is in the table.
func TestNodeRecordings(t *testing.T) {
	const rec = "../../testdata/recordings/h200x1-2026-12-01/node/"
	for _, c := range []struct {
		run, test, log string
		code           int
		want           string
	}{
		{"node-3", "gemm.matmul", "alone.log", 0, "744.1 TFLOPS, 75.2% of 989 TFLOPS (H200 SXM BF16 Tensor Core, dense)"},
		{"busy", "gemm.matmul", "alone.log", 1, "tflops {dtype=bf16} 312.2 TFLOPS below 668.5"},
		{"busy", "hbm.bandwidth", "bandwidth.log", 1, "bw {op=copy} 2492.2 GB/s at 1 GiB below 3804.7"},
		{"lgc", "gemm.matmul", "alone.log", 1, "488.0 TFLOPS, 49.3% of 989 TFLOPS"},
	} {
		t.Run(c.run+"/"+c.test, func(t *testing.T) {
			code, stdout, stderr := cli(t, "check", "--sku", "h200", "--test", c.test, "--nodes", "1", "--gpus-per-node", "1", rec+c.run+"/raw/"+c.test+"/"+c.log)
			assert.Equal(t, code, c.code, stdout+stderr)
			assert.Assert(t, strings.Contains(stdout, c.want), stdout)
		})
	}
	// Rendered by an earlier build, which headed a run that measured and
	// judged nothing "SKIP" (and had no failing "sign-off" JUnit case);
	// today's renders NOT SIGNED OFF. The manifest says the same version
	// (dev), so verify compares the reports byte for byte and names each
	// of the four: those, and nothing else (the raw outputs, journal and
	// verdicts re-derive), are its findings.
	for _, run := range []string{"busy", "lgc"} {
		code, stdout, stderr := cli(t, "verify", rec+run)
		assert.Equal(t, code, 1, "%s: %s%s", run, stdout, stderr)
		assert.Assert(t, strings.Contains(stdout, "verify: FAILED: 4 findings"), "%s: %s", run, stdout)
		for _, f := range []string{layout.Table, layout.Markdown, layout.JUnit, layout.HTML} {
			assert.Assert(t, strings.Contains(stdout, "MISMATCH "+f+": differs from the one re-rendered from the journal and the baseline copy"), "%s: %s", run, stdout)
		}
		assert.Assert(t, strings.Contains(stdout, `<title>gpuaccept h200 node: SKIP</title>", re-rendered "<title>gpuaccept h200 node: NOT SIGNED OFF</title>"`), "%s: %s", run, stdout)
		assert.Assert(t, !strings.Contains(stdout, "REJUDGED"), "%s: %s", run, stdout)
	}
	// Judged by a build whose health.node made 13 checks: today's reads
	// the same raw outputs with the GPU-lost check of issue 28 (a GPU
	// gone without an XID line), so verify, which judges every raw
	// output again, names the difference instead of vouching for the
	// recorded verdict.
	for _, run := range []string{"baselined/suite", "baselined/health", "baselined/busy"} {
		code, stdout, stderr := cli(t, "verify", rec+run)
		assert.Equal(t, code, 1, "%s: %s%s", run, stdout, stderr)
		assert.Assert(t, strings.Contains(stdout, `REJUDGED health.node: check "GPU lost" made on the raw output, not recorded`), "%s: %s", run, stdout)
	}
	// Run before health.node joined the node suite: today's built-in
	// suite runs a test they have no result for, whose verdict against
	// the built-in baseline nothing re-derives.
	for _, run := range []string{"node-1", "node-2"} {
		code, stdout, stderr := cli(t, "verify", rec+run)
		assert.Equal(t, code, 1, "%s: %s%s", run, stdout, stderr)
		assert.Assert(t, strings.Contains(stdout, "MISMATCH health.node: the built-in h200 suite node runs it, but the run has no result for it (the kept copy's suite leaves it out)"), stdout)
	}
	// Judged live on the H200 against the 1x1 baseline: the suite passed
	// with health first, and failed with the GPU held busy.
	for run, want := range map[string]string{"baselined/suite": "PASS: SKU h200, suite node", "baselined/busy": "FAIL: SKU h200, suite node"} {
		code, stdout, stderr := cli(t, "report", copyDir(t, rec+run)) // report writes the folder's reports again
		assert.Assert(t, code == 0 || code == 1, "%s: %d %s", run, code, stderr)
		assert.Assert(t, strings.Contains(stdout, want), "%s: %s", run, stdout)
	}
}

// TestCheckOtherToolOutputs: gpuaccept check on the real (and degraded)
// outputs of nvbandwidth, hipblaslt-bench and rocblas-bench in the
// plugins' testdata, as a new user gives them: a lone nvbandwidth -j
// JSON is read (it reaches the plugin as a file beside no log), pcie is
// not failed by a GPU pair's gate, and a gemm log of one dtype below its
// band fails with that point first.
func TestCheckOtherToolOutputs(t *testing.T) {
	const (
		nvb  = "../../plugins/hostlink/testdata/nvbandwidth/"
		gemm = "../../plugins/gemm/testdata/"
	)
	for _, c := range []struct {
		test, file string
		gpus, code int
		want, not  string
	}{
		// 12.4 GB/s H2D (a Gen3 link) under the H200's 1x1 baseline.
		{"hostlink.pcie", nvb + "dcgm-1gpu-verbose-v0.5.json", 1, 1, "testcase=host_to_device_memcpy_ce} 12.4 GB/s below 49.9", "no pcie record"},
		{"hostlink.pcie", nvb + "degraded-azure-h100x8-na-3-5.txt", 8, 1,
			"degraded-azure-h100x8-na-3-5.txt: no host-to-device or device-to-host measurement (it holds GPU-to-GPU copies: --test hostlink.p2p)", "p2p paths"},
		{"hostlink.p2p", nvb + "degraded-azure-h100x8-na-3-5.txt", 8, 1, "degraded-azure-h100x8-na-3-5.txt:26: no P2P path measured for GPU 3 -> GPU 5", ""},
		{"gemm.matmul", gemm + "hipblaslt-pr1544-f16-efficiency.txt", 1, 1, `"message": "tflops {dtype=fp16} 555.0 TFLOPS below 622.8 (baseline 724.1 -14%); baseline entry at line`, ""},
		{"gemm.matmul", gemm + "rocblas-mi300x-guide-fp32.txt", 1, 3, "the run measured tflops {dtype=unknown})", ""},
	} {
		t.Run(c.test+"/"+filepath.Base(c.file), func(t *testing.T) {
			code, stdout, stderr := cli(t, "check", "--sku", "h200", "--test", c.test, "--nodes", "1", "--gpus-per-node", strconv.Itoa(c.gpus), "--format", "json", c.file)
			assert.Equal(t, code, c.code, stdout+stderr)
			out := strings.ReplaceAll(stdout, `\u003e`, ">")
			assert.Assert(t, strings.Contains(out, c.want), out)
			if c.not != "" {
				assert.Assert(t, !strings.Contains(out, c.not), out)
			}
		})
	}
}
