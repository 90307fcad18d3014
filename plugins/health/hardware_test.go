package health

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// The hardware a node's outputs show (result.HardwareInfo) is read from
// every view that prints it: nvidia-smi -q -x, -q text, ibstat and
// ibv_devinfo, on real outputs; a view that does not print a field (the
// query CSV has no serial here) leaves it empty, never guessed.
func TestHardwareOfRealOutputs(t *testing.T) {
	for _, c := range []struct {
		name  string
		files []string
		want  []result.Device
	}{
		{"h100 collect.sh (issue 28, node-1)", []string{"../../testdata/recordings/h100x1-2026-12-07/issue28/node-1/raw/health.node/node.log"},
			[]result.Device{{Host: "vm", Kind: "gpu", Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-2137ad31-944e-c25c-407c-a7fb0549d297", Serial: "1651724062853", BusID: "00000000:00:06.0"}}},
		{"h200 -q -x", []string{h200 + "/nvidia-smi-q-x.xml"},
			[]result.Device{{Kind: "gpu", Name: "NVIDIA H200", UUID: "GPU-27fdb23e-a805-5229-28cc-714065f360d7", Serial: "1654024199393", BusID: "00000000:00:06.0"}}},
		{"h200 -q text", []string{h200 + "/nvidia-smi-q.txt"},
			[]result.Device{{Kind: "gpu", Name: "NVIDIA H200", UUID: "GPU-27fdb23e-a805-5229-28cc-714065f360d7", Serial: "1654024199393", BusID: "00000000:00:06.0"}}},
		{"h200 query CSV", []string{h200 + "/query-gpu.csv"},
			[]result.Device{{Kind: "gpu", Name: "NVIDIA H200", BusID: "00000000:00:06.0"}}},
		{"h100 query CSV with serial and uuid", []string{"../../testdata/recordings/h100x1-2026-12-07/smi/query-gpu.csv"},
			[]result.Device{{Kind: "gpu", Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-a1d26965-b5f5-b2d8-762f-baa6674e4cb6", Serial: "1651924066533", BusID: "00000000:00:06.0"}}},
		{"ibstat (gpud, A100)", []string{"testdata/gpud/ibstat.39.0.a100-mlx5_3-down"}, nil},
		{"ibv_devinfo mlx4", []string{"../../testdata/field/health/ibv-devinfo-mlx4-port2-down/ibv_devinfo.txt"},
			[]result.Device{{Kind: "nic", Name: "mlx4_1", GUID: "7cfe:9003:00a5:95c0"}, {Kind: "nic", Name: "mlx4_0", GUID: "e41d:2d03:00e0:c740"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, nil, 1, 0, c.files...)
			_, got, err := result.StripHardware(p)
			assert.NilError(t, err)
			if c.want == nil {
				// ibstat: every CA with its node GUID and port GUIDs.
				assert.Assert(t, len(got) >= 3, "%v", got)
				assert.DeepEqual(t, got[0], result.Device{Kind: "nic", Name: "mlx5_0", GUID: "0x00155dfffe3411eb", PortGUIDs: []string{"0x00155dfffd3411eb"}})
				assert.Equal(t, got[1].GUID, "0x00155dfffe3411ec")
				return
			}
			assert.DeepEqual(t, got, c.want)
		})
	}
}
