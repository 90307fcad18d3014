package result

import (
	"testing"

	"gotest.tools/v3/assert"
)

// One GPU seen by two tools is one device: nvidia-smi's bus id
// (00000000:18:00.0), nccl-tests' (0000:18:00, older 0x18) and a UUID or
// serial, the first both show; two GPUs of one model are two.
func TestMergeHardware(t *testing.T) {
	smi := Device{Host: "n1", Kind: GPUDevice, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-a", Serial: "1651724062853", BusID: "00000000:18:00.0"}
	for _, c := range []struct {
		name  string
		tests map[string][]Device
		order []string
		want  []Device
	}{
		{"nccl-tests bus id joins the nvidia-smi GPU",
			map[string][]Device{"health.node": {smi}, "nccl.all_reduce": {{Host: "n1", Kind: GPUDevice, Name: "NVIDIA H100 80GB HBM3", BusID: "0000:18:00"}}},
			[]string{"health.node", "nccl.all_reduce"},
			[]Device{{Host: "n1", Kind: GPUDevice, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-a", Serial: "1651724062853", BusID: "00000000:18:00.0", Tests: []string{"health.node", "nccl.all_reduce"}}}},
		{"old nccl-tests bus id 0x18",
			map[string][]Device{"health.node": {smi}, "nccl.all_reduce": {{Host: "n1", Kind: GPUDevice, BusID: "0x18"}}},
			[]string{"health.node", "nccl.all_reduce"},
			[]Device{{Host: "n1", Kind: GPUDevice, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-a", Serial: "1651724062853", BusID: "00000000:18:00.0", Tests: []string{"health.node", "nccl.all_reduce"}}}},
		{"another UUID on the same bus of another host is another GPU",
			map[string][]Device{"health.node": {smi, {Host: "n2", Kind: GPUDevice, UUID: "GPU-b", BusID: "00000000:18:00.0"}}},
			[]string{"health.node"},
			[]Device{{Host: "n1", Kind: GPUDevice, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-a", Serial: "1651724062853", BusID: "00000000:18:00.0", Tests: []string{"health.node"}},
				{Host: "n2", Kind: GPUDevice, UUID: "GPU-b", BusID: "00000000:18:00.0", Tests: []string{"health.node"}}}},
		{"a NIC's port GUIDs are joined",
			map[string][]Device{"health.node": {{Host: "n1", Kind: NICDevice, Name: "mlx5_0", GUID: "0x1", PortGUIDs: []string{"0x2"}}}, "ibperf.write": {{Host: "n1", Kind: NICDevice, Name: "mlx5_0", GUID: "0x1", PortGUIDs: []string{"0x3"}}}},
			[]string{"ibperf.write", "health.node"},
			[]Device{{Host: "n1", Kind: NICDevice, Name: "mlx5_0", GUID: "0x1", PortGUIDs: []string{"0x3", "0x2"}, Tests: []string{"health.node", "ibperf.write"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var list []Device
			for _, n := range c.order {
				list = MergeHardware(list, n, c.tests[n])
			}
			assert.DeepEqual(t, list, c.want)
		})
	}
}

// The hardware info key is taken out of Info whatever it holds; a value
// that is no list of devices is an error naming the key.
func TestStripHardware(t *testing.T) {
	for _, c := range []struct {
		name, value string
		want        []Device
		err         string
	}{
		{"list", `[{"kind":"gpu","uuid":"GPU-a"}]`, []Device{{Kind: "gpu", UUID: "GPU-a"}}, ""},
		{"not JSON", `GPU-a`, nil, `info "hardware": not a JSON list of devices`},
		{"unknown kind", `[{"kind":"cpu"}]`, nil, `info "hardware": device 0: kind "cpu" is neither gpu nor nic`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, got, err := StripHardware(Parsed{Info: map[string]string{HardwareInfo: c.value, "gpu": "NVIDIA H100"}})
			assert.DeepEqual(t, p.Info, map[string]string{"gpu": "NVIDIA H100"})
			if c.err != "" {
				assert.ErrorContains(t, err, c.err)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, got, c.want)
		})
	}
}

// The list is in bus order whatever width the tool prints bus ids in
// (rccl-tests' 0000:05:00 before 0000:15:00).
func TestMergeHardwareBusOrder(t *testing.T) {
	var list []Device
	for _, b := range []string{"0000:15:00", "0000:05:00", "0000:f5:00", "0000:65:00"} {
		list = MergeHardware(list, "rccl.all_reduce", []Device{{Host: "Aliyun1", Kind: GPUDevice, Name: "AMD Radeon Graphics", BusID: b}})
	}
	var got []string
	for _, d := range list {
		got = append(got, d.BusID)
	}
	assert.DeepEqual(t, got, []string{"0000:05:00", "0000:15:00", "0000:65:00", "0000:f5:00"})
}
