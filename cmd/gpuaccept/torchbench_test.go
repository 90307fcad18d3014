package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
			assert.Equal(t, code, 4, stdout+stderr)
			assert.Assert(t, strings.Contains(stdout, "SKIP"), stdout)
			assert.Assert(t, strings.Contains(stdout, "no baseline"), stdout)
			data, err := os.ReadFile(filepath.Join(out, "results.json"))
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
			assert.Equal(t, tt.Status, "skip")
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
