package sku

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
)

// --sku auto's choice among the SKUs that list a GPU (PickForGPU), for
// device names as real outputs print them: each name is read in the file
// named (the field corpus's name evidence, this project's recordings), so
// a name the tools do not print cannot pass. The generic SKU is preferred
// over the cloud instance SKUs that share its GPU, which are named.
func TestPickForGPU(t *testing.T) {
	cat, err := LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	field := func(f string) string { return filepath.Join("..", "..", "testdata", "field", f) }
	for _, tc := range []struct {
		name, file, model string
		want              string
		also              []string
		err               string
	}{
		{name: "H100 SXM, nvidia-smi", file: "../../testdata/recordings/h100x1-2026-12-07/smi/nvidia-smi.txt", model: "NVIDIA H100 80GB HBM3", want: "h100"},
		{name: "H200, nvidia-smi -q", file: "../../testdata/recordings/h200x1-2026-12-01/smi/nvidia-smi-q.txt", model: "NVIDIA H200", want: "h200"},
		{name: "H200 NVL, nvidia-smi", file: field("skus-names/h200-nvl.nvidia-smi.txt"), model: "NVIDIA H200 NVL", want: "h200-nvl"},
		{name: "B300, nvidia-smi", file: field("skus-names/b300.nvidia-smi.txt"), model: "NVIDIA B300 SXM6 AC", want: "b300"},
		{name: "A100 80GB: the generic SKU, then Azure's", file: field("health/a100-q-rowremap-pending-stas00/nvidia-smi-q.txt"), model: "NVIDIA A100-SXM4-80GB", want: "a100-80gb", also: []string{"a100-ndmv4"}},
		{name: "B200: the generic SKU, then Google A4", file: field("skus-names/b200.nccl-tests.txt"), model: "NVIDIA B200", want: "b200", also: []string{"b200-a4"}},
		{name: "GB200: the generic SKU, then Google A4X", file: field("nccl-tests/gb200-32x4-only-rank-127/all_reduce.log"), model: "NVIDIA GB200", want: "gb200", also: []string{"gb200-a4x"}},
		{name: "GB200, early drivers", file: field("skus-names/gb200.nccl-tests.txt"), model: "NVIDIA Graphics Device", want: "gb200", also: []string{"gb200-a4x"}},
		{name: "MI350X, amd-smi static", file: field("skus-names/mi350x.amd-smi-static.txt"), model: "AMD Instinct MI350X", want: "mi350x"},
		{name: "A10: no SKU", file: field("health/a10-q-550-healthy-gpud/nvidia-smi-q.txt"), model: "NVIDIA A10",
			err: `no SKU lists GPU "NVIDIA A10" in its gpu_variant.names: give --sku`},
		{name: "MI308X: no SKU", file: field("health/amdsmi-static-asic-mi308x/amd-smi-static-asic.txt"), model: "MI308X",
			err: `no SKU lists GPU "MI308X" in its gpu_variant.names`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := os.ReadFile(tc.file)
			assert.NilError(t, err)
			assert.Assert(t, strings.Contains(string(data), tc.model), "%s does not print %q", tc.file, tc.model)
			got, also, err := cat.PickForGPU(tc.model)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, got.Name, tc.want)
			var names []string
			for _, s := range also {
				names = append(names, s.Name)
			}
			assert.DeepEqual(t, names, tc.also)
		})
	}
}

// A name that holds a family but that no SKU lists is refused, naming the
// family's SKUs, never matched by the family substring; a site's own file
// wins over the built-in SKU listing the same GPU, and two site files
// listing it are refused naming both.
func TestPickForGPUPreference(t *testing.T) {
	built, err := LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	gh200 := "NVIDIA GH200 120GB"
	data, err := os.ReadFile("../../testdata/field/nccl-tests/gh200-2x4-int8-apptainer/all_reduce.log")
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(string(data), gh200))
	_, _, err = built.PickForGPU(gh200)
	assert.ErrorContains(t, err, `"NVIDIA GH200 120GB" contains H200 (the gpu of SKU h200, h200-nvl) but no SKU lists it in gpu_variant.names: give --sku`)

	h100, err := baselines.FS.ReadFile("h100.yaml")
	assert.NilError(t, err)
	siteFile := func(name string) []byte {
		return []byte(strings.Replace(string(h100), "sku: h100\n", "sku: "+name+"\n", 1))
	}
	one, err := Load(fstest.MapFS{"lab-h100.yaml": {Data: siteFile("lab-h100")}}, "site")
	assert.NilError(t, err)
	cat, _ := built.Overlay(one)
	got, also, err := cat.PickForGPU("NVIDIA H100 80GB HBM3")
	assert.NilError(t, err)
	assert.Equal(t, got.Name, "lab-h100")
	assert.Equal(t, got.AutoWhy(), "the site's own file site/lab-h100.yaml")
	assert.Equal(t, len(also), 1)
	assert.Equal(t, also[0].Name, "h100")

	two, err := Load(fstest.MapFS{"lab-a.yaml": {Data: siteFile("lab-a")}, "lab-b.yaml": {Data: siteFile("lab-b")}}, "site")
	assert.NilError(t, err)
	cat, _ = built.Overlay(two)
	_, _, err = cat.PickForGPU("NVIDIA H100 80GB HBM3")
	assert.ErrorContains(t, err, `GPU "NVIDIA H100 80GB HBM3" is listed by SKUs lab-a (the site's own file site/lab-a.yaml) and lab-b (the site's own file site/lab-b.yaml) alike: give --sku`)
}

// instance names a cloud instance on one line; the seeds' cloud SKUs set
// it, the generic ones do not; no SKU may be named auto.
func TestInstance(t *testing.T) {
	cat, err := LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	for _, n := range cat.Names() {
		cloud := map[string]bool{"a100-ndmv4": true, "b200-a4": true, "gb200-a4x": true, "volcengine-hpcpni": true}[n]
		assert.Equal(t, cat.SKUs[n].Instance != "", cloud, "SKU %s: instance %q", n, cat.SKUs[n].Instance)
	}
	for _, tc := range []struct{ name, yaml, err string }{
		{"two lines", "sku: x\ninstance: \"a\\nb\"\n", `t.yaml: line 2: field instance: "a\nb": want the instance type on one line`},
		{"blank", "sku: x\ninstance: \" \"\n", `t.yaml: line 2: field instance: " ": want the instance type on one line`},
		{"named auto", "sku: auto\n", `t.yaml: line 1: field sku: "auto" is --sku auto's`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "t.yaml")
			assert.ErrorContains(t, err, tc.err)
		})
	}
	s, err := Parse([]byte("sku: x\ninstance: Azure NDm A100 v4\n"), "t.yaml")
	assert.NilError(t, err)
	assert.Equal(t, s.Instance, "Azure NDm A100 v4")
}
