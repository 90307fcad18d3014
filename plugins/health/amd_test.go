package health

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

const amdTD = "testdata/amd/"

// verdict is one check's outcome as a test states it.
type verdict struct {
	OK   bool
	Code string
	Msg  string
}

// checksOf maps p's checks by name to their outcome.
func checksOf(p result.Parsed) map[string]verdict {
	out := map[string]verdict{}
	for _, c := range p.Checks {
		out[c.Name] = verdict{c.OK, c.Code, c.Message}
	}
	return out
}

// Each real amd-smi / rocm-smi output given to gpuaccept check by itself
// (testdata/amd/README.md) makes exactly the checks it carries the values
// for, and each degraded copy fails with its code. The RX 6600's link is
// x8 (an x8 card): against pcie_width 16 it fails, against 8 it holds.
func TestAMDOutputs(t *testing.T) {
	metric := amdTD + "rx6600-amd-smi-metric.json"
	eccOK := verdict{true, "", "no uncorrectable ECC errors on 1 GPU (amd-smi metric)"}
	count1 := verdict{true, "", "1 GPU, 1 expected"}
	cases := []struct {
		name   string
		file   string
		params map[string]string
		gpus   int
		want   map[string]verdict
		info   map[string]string
	}{
		{"static", amdTD + "rx6600-amd-smi-static.json", nil, 1, map[string]verdict{
			"GPU count": count1,
			"GPU model": {true, "", "1 x Navi 23 [Radeon RX 6600/6600 XT"},
		}, map[string]string{"gpu": "Navi 23 [Radeon RX 6600/6600 XT", "driver_version": "7.0.0-3-pve"}},
		{"static, 8 GPUs expected", amdTD + "rx6600-amd-smi-static.json", nil, 8, map[string]verdict{
			"GPU count": {false, "GA-GPU-COUNT", "1 GPU, 8 expected"},
			"GPU model": {true, "", "1 x Navi 23 [Radeon RX 6600/6600 XT"},
		}, nil},
		// No max width in metric: without pcie_width nothing to compare,
		// so no PCIe check.
		{"metric", metric, nil, 1, map[string]verdict{"GPU count": count1, "uncorrected ECC": eccOK}, nil},
		{"metric, the gpu_data shape", amdTD + "rx6600-amd-smi-metric-gpu-data.json", nil, 1, map[string]verdict{"GPU count": count1, "uncorrected ECC": eccOK}, nil},
		{"metric, pcie_width 8", metric, map[string]string{"pcie_width": "8"}, 1, map[string]verdict{
			"GPU count": count1, "uncorrected ECC": eccOK,
			"PCIe link": {true, "", "every link of 1 GPU at its width and generation"},
		}, nil},
		{"metric, pcie_width 16", metric, map[string]string{"pcie_width": "16"}, 1, map[string]verdict{
			"GPU count": count1, "uncorrected ECC": eccOK,
			"PCIe link": {false, "GA-PCIE-DOWNGRADE", "GPU 0: width x8, the SKU's x16"},
		}, nil},
		{"ECC raised", amdTD + "rx6600-amd-smi-metric-ecc-uncorrectable.json", nil, 1, map[string]verdict{
			"GPU count":       count1,
			"uncorrected ECC": {false, "GA-GPU-ECC-UNCORR", "GPU 0: 3 uncorrectable ECC errors (amd-smi total_uncorrectable_count)"},
		}, nil},
		{"width x4", amdTD + "rx6600-amd-smi-metric-x4.json", map[string]string{"pcie_width": "8"}, 1, map[string]verdict{
			"GPU count": count1, "uncorrected ECC": eccOK,
			"PCIe link": {false, "GA-PCIE-DOWNGRADE", "GPU 0: width x4, the SKU's x8"},
		}, nil},
		{"XGMI error", amdTD + "rx6600-amd-smi-metric-xgmi-error.json", nil, 1, map[string]verdict{
			"GPU count": count1, "uncorrected ECC": eccOK,
			"XGMI": {false, "GA-GPU-XGMI", "GPU 0: xgmi_err AMDSMI_XGMI_STATUS_ERROR"},
		}, nil},
		{"rocm-smi showallinfo", amdTD + "rx6600-rocm-smi-showallinfo.json", nil, 1, map[string]verdict{
			"GPU count": count1,
			"GPU model": {true, "", "1 x Navi 23 [Radeon RX 6600/6600 XT/6600M]"},
		}, map[string]string{"gpu": "Navi 23 [Radeon RX 6600/6600 XT/6600M]", "driver_version": "7.0.0-3-pve"}},
		{"rocm-smi productname", amdTD + "mi250x-rocm-smi-productname.json", nil, 8, map[string]verdict{
			"GPU count": {false, "GA-GPU-COUNT", "1 GPU, 8 expected"},
			"GPU model": {true, "", "1 x AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2"},
		}, map[string]string{"gpu": "AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, c.params, 1, c.gpus, c.file)
			assert.Equal(t, p.Error, "")
			assert.DeepEqual(t, checksOf(p), c.want)
			for k, v := range c.info {
				assert.Equal(t, p.Info[k], v, k)
			}
		})
	}
}

// A deferred ECC count or an XGMI_WAFL uncorrectable count (how MI300
// GPUs report XGMI faults) is read from the JSON amd-smi prints; the
// values here are the real metric's GPU with the counts set, as a
// gpu value (no real output with them was found).
func TestAMDDeferredAndWAFL(t *testing.T) {
	s := &section{name: "amdsmi-metric", file: "m.json", exit: -1}
	b, err := os.ReadFile(amdTD + "rx6600-amd-smi-metric.json")
	assert.NilError(t, err)
	_ = readLines(bytes.NewReader(b), func(text string, no int) { s.lines = append(s.lines, line{text, no}) })
	gs, err := parseAMDMetric(s)
	assert.NilError(t, err)
	assert.Equal(t, len(gs), 1)
	assert.Equal(t, gs[0].amdDeferred, int64(0))
	assert.Equal(t, gs[0].xgmiUncorr, int64(-1), "ecc_blocks is N/A on the RX 6600")
	gs[0].amdDeferred, gs[0].xgmiUncorr = 2, 1
	var p result.Parsed
	judgeAMD(checks{&p, "n1"}, gs)
	got := checksOf(p)
	assert.DeepEqual(t, got["deferred ECC"], verdict{false, "GA-GPU-ECC-DEFERRED", "n1: GPU 0: 2 deferred ECC errors (uncorrectable, poisoned and not yet consumed)"})
	assert.DeepEqual(t, got["XGMI"], verdict{false, "GA-GPU-XGMI", "n1: GPU 0: 1 uncorrectable XGMI_WAFL error"})
}

// collect.sh on a node with amd-smi (a stub printing the RX 6600's real
// static and metric outputs) or rocm-smi: the sections are judged
// together. The real outputs show the link at x8 of its max x16: a PCIe
// fail. amd-smi listing no GPU fails the count; amd-smi printing nothing
// is an error and a warn (GPUs that could not be counted).
func TestCollectAMD(t *testing.T) {
	for _, tool := range []string{"nvidia-smi", "amd-smi", "rocm-smi"} {
		if _, err := exec.LookPath(tool); err == nil {
			t.Skipf("%s is installed here", tool)
		}
	}
	abs := func(f string) string {
		a, err := filepath.Abs(amdTD + f)
		assert.NilError(t, err)
		return a
	}
	static, metric := abs("rx6600-amd-smi-static.json"), abs("rx6600-amd-smi-metric.json")
	rocmJSON := abs("rx6600-rocm-smi-showallinfo.json")
	// rocm-smi --showrasinfo as collect.sh runs it: the real MI50 table
	// cut before GPU[1] (the JSON stub has one GPU), a degraded copy with
	// 4 uncorrectable UMC errors, and the real line rocm-smi prints for a
	// GPU without RAS (ROCm/legacy-rocm-build#1453).
	ras, err := os.ReadFile("../../testdata/field/health/rocmsmi-rasinfo-mi50/rocm-smi-showrasinfo.txt")
	assert.NilError(t, err)
	gpu0, _, _ := bytes.Cut(ras, []byte("\nGPU[1]:"))
	dir := t.TempDir()
	rasOK, rasBad, rasNone := filepath.Join(dir, "ok"), filepath.Join(dir, "bad"), filepath.Join(dir, "none")
	assert.NilError(t, os.WriteFile(rasOK, gpu0, 0o644))
	assert.NilError(t, os.WriteFile(rasBad, bytes.Replace(gpu0, []byte("UMC        ENABLED                  0                    0"), []byte("UMC        ENABLED                  0                    4"), 1), 0o644))
	assert.NilError(t, os.WriteFile(rasNone, []byte("ERROR: 2 GPU[0]: ras: RSMI_STATUS_NOT_SUPPORTED: This function is not supported in the current environment.\t\n"), 0o644))
	rocm := func(rasFile string) string {
		return `case "$*" in *--json*) cat ` + rocmJSON + `;; *) cat ` + rasFile + `;; esac`
	}
	cases := []struct {
		name, tool, script string
		want               map[string]verdict
		errs               bool
	}{
		{"amd-smi", "amd-smi", `case "$1" in static) cat ` + static + `;; metric) cat ` + metric + `;; esac`, map[string]verdict{
			"GPU count":       {true, "", "bare: 1 GPU, 1 expected"},
			"GPU model":       {true, "", "bare: 1 x Navi 23 [Radeon RX 6600/6600 XT"},
			"PCIe link":       {false, "GA-PCIE-DOWNGRADE", "bare: GPU 0 (0000:0b:00.0): width x8, max x16"},
			"uncorrected ECC": {true, "", "bare: no uncorrectable ECC errors on 1 GPU (amd-smi metric)"},
		}, false},
		{"amd-smi lists no GPU", "amd-smi", `echo '[]'`, map[string]verdict{
			"GPU count": {false, "GA-GPU-COUNT", "bare: 0 GPUs, 1 expected"},
		}, false},
		{"amd-smi prints nothing", "amd-smi", `exit 0`, map[string]verdict{
			"GPU count": {false, "GA-TOOL-MISSING", "bare: nvidia-smi is not installed and amd-smi's output could not be read: 1 GPU expected, none could be counted"},
		}, true},
		{"rocm-smi without RAS", "rocm-smi", rocm(rasNone), map[string]verdict{
			"GPU count": {true, "", "bare: 1 GPU, 1 expected"},
			"GPU model": {true, "", "bare: 1 x Navi 23 [Radeon RX 6600/6600 XT/6600M]"},
		}, false},
		{"rocm-smi with RAS", "rocm-smi", rocm(rasOK), map[string]verdict{
			"GPU count":       {true, "", "bare: 1 GPU, 1 expected"},
			"GPU model":       {true, "", "bare: 1 x Navi 23 [Radeon RX 6600/6600 XT/6600M]"},
			"uncorrected ECC": {true, "", "bare: no uncorrectable ECC errors on 1 GPU (rocm-smi --showrasinfo)"},
		}, false},
		{"rocm-smi with RAS errors", "rocm-smi", rocm(rasBad), map[string]verdict{
			"GPU count":       {true, "", "bare: 1 GPU, 1 expected"},
			"GPU model":       {true, "", "bare: 1 x Navi 23 [Radeon RX 6600/6600 XT/6600M]"},
			"uncorrected ECC": {false, "GA-GPU-ECC-UNCORR", "bare: GPU 0 (0000:0B:00.0): 4 uncorrectable ECC errors (the sum of its ECC blocks; UMC 4)"},
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			assert.NilError(t, os.WriteFile(filepath.Join(bin, tc.tool), []byte("#!/bin/sh\n"+tc.script+"\n"), 0o755))
			cmd := exec.Command("sh", "-c", Collect, "gpuaccept-health", "0")
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "OMPI_COMM_WORLD_RANK=0", "GPUACCEPT_HOSTS=bare"}
			out, err := cmd.CombinedOutput()
			assert.NilError(t, err, string(out))
			log := filepath.Join(t.TempDir(), "node.log")
			assert.NilError(t, os.WriteFile(log, out, 0o644))
			p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "node",
				Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}}, Outputs: []plan.Output{{Step: "node", Log: log}}})
			assert.NilError(t, err)
			assert.Equal(t, p.Error != "", tc.errs, p.Error)
			got := checksOf(p)
			assert.DeepEqual(t, got, tc.want)
		})
	}
}
