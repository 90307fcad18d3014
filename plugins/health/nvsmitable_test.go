package health

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// nvidia-smi's default table, as real nodes printed it: each GPU's name,
// bus id, persistence mode and volatile uncorrected ECC count are read
// and judged as the CSV's are; the GPUs are named for the hardware list
// (and --sku auto). A table a page shortened with "..." lists some GPUs
// only: an error, never a GPU count that fails the node.
func TestSMITable(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		gpus       int
		devices    []result.Device
		failed     []string
		err        string
	}{
		{name: "H100 SXM, driver 580 (this project's node)", file: "../../testdata/recordings/h100x1-2026-12-07/smi/nvidia-smi.txt", gpus: 1,
			devices: []result.Device{{Kind: result.GPUDevice, Name: "NVIDIA H100 80GB HBM3", BusID: "00000000:00:06.0"}}},
		{name: "H200 NVL, driver 595, persistence off", file: "../../testdata/field/skus-names/h200-nvl.nvidia-smi.txt", gpus: 2,
			devices: []result.Device{{Kind: result.GPUDevice, Name: "NVIDIA H200 NVL", BusID: "00000000:D1:00.0"}, {Kind: result.GPUDevice, Name: "NVIDIA H200 NVL", BusID: "00000000:F1:00.0"}},
			failed:  []string{"persistence mode"}},
		{name: "B300, GPUs 2-6 elided", file: "../../testdata/field/skus-names/b300.nvidia-smi.txt", gpus: 8,
			err: `b300.nvidia-smi.txt:13: the nvidia-smi table elides GPUs ("..."): 3 GPUs listed, the node's GPU count is not known`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := parse(t, nil, 1, tc.gpus, tc.file)
			if tc.err != "" {
				assert.ErrorContains(t, errorOf(p), tc.err)
				_, bad := failed(p)["GPU count"]
				assert.Assert(t, !bad, "an elided table failed the GPU count: %+v", p.Checks)
				return
			}
			assert.Equal(t, p.Error, "")
			var names []string
			for n := range failed(p) {
				names = append(names, n)
			}
			assert.DeepEqual(t, names, tc.failed)
			ok := map[string]bool{}
			for _, c := range p.Checks {
				ok[c.Name] = c.OK
			}
			assert.Assert(t, ok["GPU count"] && ok["uncorrected ECC"], "checks: %+v", p.Checks)
			_, ds, err := result.StripHardware(p)
			assert.NilError(t, err)
			assert.DeepEqual(t, ds, tc.devices)
		})
	}
}

// errorOf is p.Error as an error, nil for none.
func errorOf(p result.Parsed) error {
	if p.Error == "" {
		return nil
	}
	return errString(p.Error)
}

type errString string

func (e errString) Error() string { return string(e) }

func FuzzParseSMITable(f *testing.F) {
	seeds(f, "../../testdata/recordings/h100x1-2026-12-07/smi/nvidia-smi.txt", "../../testdata/field/skus-names/h200-nvl.nvidia-smi.txt",
		"../../testdata/field/skus-names/b300.nvidia-smi.txt")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = parseSMITable(sectionOf(b)) })
}
