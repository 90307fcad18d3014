package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

const h200smi = "../../testdata/recordings/h200x1-2026-12-01/smi"

// gpuaccept check judges the H200 machine's real nvidia-smi and dmesg
// outputs with health.node: every check holds, the test passes (a
// preflight test is judged by its checks, with no baseline to miss), and
// verify re-derives the folder.
func TestHealthCheckCommandPassesTheRealH200(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	files := []string{h200smi + "/nvidia-smi-q-x.xml", h200smi + "/query-gpu.csv", h200smi + "/query-throttle-old-name.csv", h200smi + "/dmesg-nvrm.txt"}
	args := append([]string{"check", "--sku", "h200", "--test", "health.node", "--nodes", "1", "--gpus-per-node", "1", "--out", dir}, files...)
	code, out, errs := cli(t, args...)
	assert.Equal(t, code, 0, out+errs)
	assert.Assert(t, strings.Contains(out, "PASS: SKU h200, suite check, scope 1x1, launcher check: 4 pass"), out)
	assert.Assert(t, strings.Contains(out, "all 10 checks hold"), out)
	assert.Assert(t, !strings.Contains(out, "Faults"), out)
	code, out, errs = cli(t, "verify", dir)
	assert.Equal(t, code, 0, out+errs)
}

// A degraded copy fails with its fault code, named with its remedy in
// table.txt and kept in results.json's check.
func TestHealthCheckCommandDegradedCopiesFail(t *testing.T) {
	cases := []struct {
		file, code, remedy string
	}{
		{"../../plugins/health/testdata/h200/rowremap-failed.xml", "GA-GPU-ROWREMAP-FAIL", "Remedy: Drain the node and RMA the GPU"},
		{"../../plugins/health/testdata/h200/ecc-uncorrected.xml", "GA-GPU-ECC-UNCORR", "Remedy: Reset the GPU"},
		{"../../plugins/health/testdata/h200/query-gpu-pcie-x8.csv", "GA-PCIE-DOWNGRADE", "Remedy: Reseat the GPU"},
		{"../../plugins/health/testdata/h200/dmesg-xid79.txt", "GA-GPU-OFFBUS", "Remedy: Drain the node; reseat the GPU"},
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			code, out, errs := cli(t, "check", "--sku", "h200", "--test", "health.node", "--nodes", "1", "--gpus-per-node", "1", "--out", dir, c.file)
			assert.Equal(t, code, 1, out+errs)
			table, err := os.ReadFile(filepath.Join(dir, layout.Table))
			assert.NilError(t, err)
			assert.Assert(t, strings.Contains(string(table), "Faults (docs/FAULTS.md):\n  "+c.code+" ("), string(table))
			assert.Assert(t, strings.Contains(string(table), c.remedy), string(table))
			b, err := os.ReadFile(filepath.Join(dir, layout.Results))
			assert.NilError(t, err)
			var run result.Run
			assert.NilError(t, json.Unmarshal(b, &run))
			assert.Equal(t, len(run.Tests), 1)
			assert.Equal(t, run.Tests[0].Status, result.Fail)
			var codes []string
			for _, ch := range run.Tests[0].Checks {
				if !ch.OK {
					codes = append(codes, ch.Code)
				}
			}
			assert.DeepEqual(t, codes, []string{c.code})
			code, out, errs = cli(t, "verify", dir)
			assert.Equal(t, code, 0, out+errs)
		})
	}
}

// An empty file or stream is no health evidence: the 1-GPU H200's real
// nvidia-smi nvlink --status (empty: no NVLink peers), an empty .gz and
// empty stdin (kubectl logs of a pod that never ran piped into check -)
// are each an ERROR (exit 3), never a pass. Inside collect.sh's tagged log
// the empty nvlink section is judged (plugins/health TestEmptyNVLinkStatus).
func TestHealthCheckCommandEmptyInput(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	assert.NilError(t, zw.Close())
	cases := []struct {
		name  string
		file  string
		stdin bool
		want  string
	}{
		{"real empty nvlink --status", h200smi + "/nvlink-status.txt", false, "nvlink-status.txt is empty: nothing to judge"},
		{"empty file", writeFile(t, "empty.log", ""), false, "empty.log is empty: nothing to judge"},
		{"empty gz", writeFile(t, "empty.log.gz", gz.String()), false, "is empty: nothing to judge"},
		{"empty stdin", "-", true, "stdin is empty: nothing to judge"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"check", "--sku", "h200", "--test", "health.node", "--nodes", "2", "--gpus-per-node", "8", c.file}
			var code int
			var out, errs string
			if c.stdin {
				code, out, errs = cliStdin(t, nil, args...)
			} else {
				code, out, errs = cli(t, args...)
			}
			assert.Equal(t, code, 3, out+errs)
			assert.Assert(t, strings.Contains(out, "ERROR"), out)
			assert.Assert(t, strings.Contains(out, c.want), out)
			assert.Assert(t, !strings.Contains(out, "PASS") && !strings.Contains(out, "holds"), out)
		})
	}
}

// gpuaccept check --sku mi355x --test health.node judges amd-smi's own
// JSON (the mi355x SKU has no health.node in its suites: --test names it
// anyway). The real RX 6600 output fails the SKU's GPU model gate and
// the count (1 GPU of 8); the degraded copy with uncorrectable ECC errors
// fails GA-GPU-ECC-UNCORR besides.
func TestHealthCheckCommandAMD(t *testing.T) {
	td := "../../plugins/health/testdata/amd/"
	cases := []struct {
		file  string
		codes []string
		text  string
	}{
		{td + "rx6600-amd-smi-static.json", []string{"GA-GPU-COUNT"}, `GPU model: the output shows "Navi 23 [Radeon RX 6600/6600 XT", SKU mi355x is "MI355X"`},
		{td + "rx6600-amd-smi-metric-ecc-uncorrectable.json", []string{"GA-GPU-COUNT", "GA-GPU-ECC-UNCORR"}, "uncorrected ECC: GPU 0: 3 uncorrectable ECC errors"},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			code, out, errs := cli(t, "check", "--sku", "mi355x", "--test", "health.node", "--nodes", "1", "--gpus-per-node", "8", "--out", dir, c.file)
			assert.Equal(t, code, 1, out+errs)
			assert.Assert(t, strings.Contains(out, c.text), out)
			b, err := os.ReadFile(filepath.Join(dir, layout.Results))
			assert.NilError(t, err)
			var run result.Run
			assert.NilError(t, json.Unmarshal(b, &run))
			assert.Equal(t, len(run.Tests), 1)
			assert.Equal(t, run.Tests[0].Status, result.Fail)
			var codes []string
			for _, ch := range run.Tests[0].Checks {
				if !ch.OK && ch.Code != "" {
					codes = append(codes, ch.Code)
				}
			}
			assert.DeepEqual(t, codes, c.codes)
			code, out, errs = cli(t, "verify", dir)
			assert.Equal(t, code, 0, out+errs)
		})
	}
}
