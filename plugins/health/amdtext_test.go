package health

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// The GPUs read from real amd-smi and rocm-smi text views (the field
// corpus's, each with its source in its case.yaml): index, name, bus id,
// PCIe link and the uncorrectable count, and where it was read.
func TestAMDTextGPUs(t *testing.T) {
	type g struct {
		Index                       int
		Name, Bus                   string
		WidthMax, GenMax, WCur, Gen int
		Uncorr                      int64
		Src                         string
	}
	none := func(i int, name, bus string) g { return g{i, name, bus, -1, -1, -1, -1, -1, ""} }
	cases := []struct {
		file string
		want []g
	}{
		{"amdsmi-static-mi300a-apu/amd-smi-static.txt", []g{
			{0, "MI300A", "0000:01:00.0", 16, 5, -1, -1, -1, ""},
			{1, "MI300A", "0001:01:00.0", 16, 5, -1, -1, -1, ""},
			{2, "MI300A", "0002:01:00.0", 16, 5, -1, -1, -1, ""},
			{3, "MI300A", "0003:01:00.0", 16, 5, -1, -1, -1, ""},
		}},
		{"amdsmi-list-2gpu/amd-smi-list.txt", []g{none(0, "", "0000:23:00.0"), none(1, "", "0000:26:00.0")}},
		{"amdsmi-static-asic-mi308x/amd-smi-static-asic.txt", []g{none(0, "MI308X", "")}},
		{"amdsmi-metric-pcie-2gpu/amd-smi-metric-pcie.txt", []g{
			{0, "", "", -1, -1, 16, 5, -1, ""},
			{1, "", "", -1, -1, 16, 5, -1, ""},
		}},
		{"amdsmi-metric-ecc-block/amd-smi-metric-ecc-block.txt", []g{{0, "", "", -1, -1, -1, -1, 0, "amd-smi metric"}}},
		{"amdsmi-metric-ecc-ecc-blocks/amd-smi-metric-ecc.txt", []g{{0, "", "", -1, -1, -1, -1, 0, "amd-smi metric"}}},
		{"amdsmi-monitor-q-ecc/amd-smi-monitor-q.txt", []g{{0, "", "", -1, -1, -1, -1, 0, "amd-smi monitor DOUBLE_ECC"}}},
		{"rocmsmi-rasinfo-mi50/rocm-smi-showrasinfo.txt", []g{{0, "", "", -1, -1, -1, -1, 0, "rocm-smi --showrasinfo"}, none(1, "", "")}},
	}
	for _, c := range cases {
		t.Run(filepath.Dir(c.file), func(t *testing.T) {
			gs, notes, err := parseAMDText(fileSection(t, field+c.file))
			assert.NilError(t, err)
			assert.Equal(t, len(notes), 0)
			var got []g
			for _, x := range gs {
				assert.Assert(t, x.amd)
				got = append(got, g{x.index, x.name, x.busID, x.widthMax, x.genMax, x.widthCur, x.genCur, x.uncorr(), x.src})
			}
			assert.DeepEqual(t, got, c.want)
		})
	}
	// The tables: how many GPUs, by their numbers.
	for file, n := range map[string]int{
		"amdsmi-monitor-32-partitions/amd-smi-monitor.txt":  32,
		"amdsmi-monitor-watch-mi300x-8/amd-smi-monitor.txt": 8,
		"rocmsmi-concise-mi300x-8/rocm-smi.txt":             8,
	} {
		gs, _, err := parseAMDText(fileSection(t, field+file))
		assert.NilError(t, err)
		assert.Equal(t, len(gs), n, file)
		for i, x := range gs {
			assert.Equal(t, x.index, i, file)
		}
	}
}

// What the tools print instead of a GPU is an error naming it.
func TestAMDTextNoGPU(t *testing.T) {
	for file, want := range map[string]string{
		"amdsmi-gpu-not-found/amd-smi-static-asic.txt":      "Can not find a device: GPU '123123' Error code: -3",
		"rocmsmi-a-errors-only/rocm-smi-a.txt":              "ERROR: GPU[0] \t\t: fclk clock is unsupported",
		"rocmsmi-json-rasinfo-no-data/rocm-smi-rasinfo.txt": "WARNING: No JSON data to report",
	} {
		p := parse(t, nil, 1, 8, field+file)
		assert.Assert(t, strings.Contains(p.Error, "the AMD GPU tool printed no GPU, only: "+want), p.Error)
		assert.Equal(t, len(p.Checks), 0, "%+v", p.Checks)
	}
}

// Degraded copies of the real text views, each one named edit, fail the
// check the JSON's same fault fails, with its code; the real ones hold.
func TestAMDTextFaults(t *testing.T) {
	edit := func(file, old, new string, n int) string {
		b, err := os.ReadFile(field + file)
		assert.NilError(t, err)
		s := string(b)
		assert.Assert(t, strings.Contains(s, old), "%s lacks %q", file, old)
		return strings.Replace(s, old, new, n)
	}
	blocks := "amdsmi-metric-ecc-block/amd-smi-metric-ecc-block.txt"
	cases := []struct {
		name   string
		text   string
		params map[string]string
		gpus   int
		check  string
		want   verdict
	}{
		{"UMC uncorrectable", edit(blocks, "UNCORRECTABLE_COUNT: 0", "UNCORRECTABLE_COUNT: 3", 1), nil, 1, "uncorrected ECC",
			verdict{false, "GA-GPU-ECC-UNCORR", "GPU 0: 3 uncorrectable ECC errors (the sum of its ECC blocks; UMC 3)"}},
		{"XGMI_WAFL uncorrectable", edit(blocks, "        XGMI_WAFL:\n            CORRECTABLE_COUNT: 0\n            UNCORRECTABLE_COUNT: 0", "        XGMI_WAFL:\n            CORRECTABLE_COUNT: 0\n            UNCORRECTABLE_COUNT: 2", 1), nil, 1, "XGMI",
			verdict{false, "GA-GPU-XGMI", "GPU 0: 2 uncorrectable XGMI_WAFL errors"}},
		{"total uncorrectable", edit("amdsmi-metric-ecc-ecc-blocks/amd-smi-metric-ecc.txt", "TOTAL_UNCORRECTABLE_COUNT: 0", "TOTAL_UNCORRECTABLE_COUNT: 5", 1), nil, 1, "uncorrected ECC",
			verdict{false, "GA-GPU-ECC-UNCORR", "GPU 0: 5 uncorrectable ECC errors (amd-smi total_uncorrectable_count)"}},
		{"total deferred", edit("amdsmi-metric-ecc-ecc-blocks/amd-smi-metric-ecc.txt", "TOTAL_DEFERRED_COUNT: 0", "TOTAL_DEFERRED_COUNT: 4", 1), nil, 1, "deferred ECC",
			verdict{false, "GA-GPU-ECC-DEFERRED", "GPU 0: 4 deferred ECC errors (uncorrectable, poisoned and not yet consumed)"}},
		{"monitor DOUBLE_ECC", edit("amdsmi-monitor-q-ecc/amd-smi-monitor-q.txt", "0 MHz           0           0            0", "0 MHz           0           1            0", 1), nil, 1, "uncorrected ECC",
			verdict{false, "GA-GPU-ECC-UNCORR", "GPU 0: 1 uncorrectable ECC error (amd-smi monitor DOUBLE_ECC)"}},
		{"rocm-smi RAS UMC", edit("rocmsmi-rasinfo-mi50/rocm-smi-showrasinfo.txt", "UMC        ENABLED                  0                    0", "UMC        ENABLED                  0                    4", 1), nil, 2, "uncorrected ECC",
			verdict{false, "GA-GPU-ECC-UNCORR", "GPU 0: 4 uncorrectable ECC errors (the sum of its ECC blocks; UMC 4)"}},
		// A block whose RAS is DISABLED counts nothing.
		{"rocm-smi RAS disabled block", edit("rocmsmi-rasinfo-mi50/rocm-smi-showrasinfo.txt", "XGMI_WAFL       DISABLED  ", "XGMI_WAFL       DISABLED                  7                    7", 1), nil, 2, "uncorrected ECC",
			verdict{true, "", "no uncorrectable ECC errors on 1 GPU (rocm-smi --showrasinfo)"}},
		{"PCIe x8 against the SKU", edit("amdsmi-metric-pcie-2gpu/amd-smi-metric-pcie.txt", "GPU: 1\n    PCIE:\n        WIDTH: 16", "GPU: 1\n    PCIE:\n        WIDTH: 8", 1), map[string]string{"pcie_width": "16"}, 2, "PCIe link",
			verdict{false, "GA-PCIE-DOWNGRADE", "GPU 1: width x8, the SKU's x16"}},
		{"PCIe x16 against the SKU", edit("amdsmi-metric-pcie-2gpu/amd-smi-metric-pcie.txt", "", "", 0), map[string]string{"pcie_width": "16"}, 2, "PCIe link",
			verdict{true, "", "every link of 2 GPUs at its width and generation"}},
		{"GPU missing from the list", edit("amdsmi-list-2gpu/amd-smi-list.txt", "GPU: 1\n", "", 1), nil, 2, "GPU count",
			verdict{false, "GA-GPU-COUNT", "1 GPU, 2 expected"}},
		{"a GPU of another model", edit("amdsmi-static-mi300a-apu/amd-smi-static.txt", "MARKET_NAME: MI300A", "MARKET_NAME: MI300X", 1), nil, 4, "GPU model",
			verdict{false, "GA-GPU-MODEL", "GPU 0 (0000:01:00.0) is MI300X; the other GPUs are MI300A"}},
		{"a concise row missing", edit("rocmsmi-concise-mi300x-8/rocm-smi.txt", "7       9     0x74a1,   10985", "", 1), nil, 8, "GPU count",
			verdict{false, "GA-GPU-COUNT", "7 GPUs, 8 expected"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, c.params, 1, c.gpus, writeTemp(t, "amd.txt", c.text))
			assert.Equal(t, p.Error, "")
			assert.DeepEqual(t, checksOf(p)[c.check], c.want)
		})
	}
}

// amd-smi static and metric pasted into one file are one GPU list: the
// static max link and the metric's current one meet (real MI300A static
// and MI3xx metric --pcie outputs; GPU 1's width made 8 in the degraded
// copy), and a shell prompt, blank lines or kubectl's timestamps change
// nothing.
func TestAMDTextPasted(t *testing.T) {
	read := func(f string) string {
		b, err := os.ReadFile(field + f)
		assert.NilError(t, err)
		return string(b)
	}
	static, metric := read("amdsmi-static-mi300a-apu/amd-smi-static.txt"), read("amdsmi-metric-pcie-2gpu/amd-smi-metric-pcie.txt")
	degraded := strings.Replace(metric, "GPU: 1\n    PCIE:\n        WIDTH: 16", "GPU: 1\n    PCIE:\n        WIDTH: 8", 1)
	var stamped strings.Builder
	for _, l := range strings.SplitAfter(static+"\n"+degraded, "\n") {
		if l != "" {
			stamped.WriteString("2026-03-01T10:00:00Z " + l)
		}
	}
	want := verdict{false, "GA-PCIE-DOWNGRADE", "GPU 1 (0001:01:00.0): width x8, max x16"}
	for name, text := range map[string]string{
		"static then metric": static + "\n" + degraded,
		"metric then static": "root@node:~# amd-smi metric --pcie\n\n" + degraded + "\nroot@node:~# amd-smi static\n" + static,
		"kubectl":            stamped.String(),
	} {
		t.Run(name, func(t *testing.T) {
			p := parse(t, nil, 1, 4, writeTemp(t, "amd.txt", text))
			assert.Equal(t, p.Error, "")
			assert.DeepEqual(t, checksOf(p)["PCIe link"], want)
			assert.DeepEqual(t, checksOf(p)["GPU count"], verdict{true, "", "4 GPUs, 4 expected"})
			assert.Equal(t, p.Info["gpu"], "MI300A")
		})
	}
}
