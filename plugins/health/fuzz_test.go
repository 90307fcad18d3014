package health

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// seeds adds the real outputs (and their degraded copies) as seeds.
func seeds(f *testing.F, files ...string) {
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(""))
	f.Add([]byte("\x00\xff<\n{"))
}

func sectionOf(b []byte) *section {
	s := &section{name: "fuzz", file: "fuzz", exit: -1}
	_ = readLines(bytes.NewReader(b), func(text string, no int) { s.lines = append(s.lines, line{text, no}) })
	return s
}

// Every parser takes any bytes without panicking or hanging.

func FuzzParseXML(f *testing.F) {
	seeds(f, filepath.Join(h200, "nvidia-smi-q-x.xml"), "testdata/h200/pcie-x8.xml")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = parseXML(sectionOf(b)) })
}

func FuzzParseCSV(f *testing.F) {
	seeds(f, filepath.Join(h200, "query-gpu.csv"), filepath.Join(h200, "query-throttle-old-name.csv"))
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = parseCSV(sectionOf(b)) })
}

func FuzzParseNVLink(f *testing.F) {
	seeds(f, "testdata/azurehpc/good_nvlink_status.txt", "testdata/azurehpc/bad_nvlink_status.txt")
	f.Fuzz(func(t *testing.T, b []byte) { parseNVLink(sectionOf(b)) })
}

func FuzzParseXIDs(f *testing.F) {
	seeds(f, "testdata/gpud/dmesg-with-xid-119.log", "testdata/h200/dmesg-xid79.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, x := range parseXIDs(sectionOf(b)) {
			sameBus(x.pci, "00000000:00:06.0")
		}
		parseXIDList(string(b))
	})
}

func FuzzParseDCGM(f *testing.F) {
	seeds(f, "testdata/dcgm/dcgm-3.1.0-jsonresulttests.txt", "testdata/dcgm/dcgm-4.2.3-gb10-software-fail.json", "testdata/dcgm/dcgm-4-issue215-diagnostic-gpu3-isolate.json")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = parseDCGM(sectionOf(b)) })
}

func FuzzParseIB(f *testing.F) {
	seeds(f, "testdata/gpud/ibstat.39.0.a100.failed.ibpanic.exit-255.0")
	f.Add([]byte("mlx5_0 1 state 4: ACTIVE\nmlx5_0 1 rate 400 Gb/sec (4X NDR)\nmlx5_0 1 gids/0 0000:0000:0000:0000:0000:0000:0000:0000\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseIBStat(sectionOf(b))
		parseIBSysfs(sectionOf(b))
	})
}

func FuzzParseIBDevinfo(f *testing.F) {
	const fd = "../../testdata/field/health/"
	seeds(f, fd+"ibv-devinfo-mlx4-port2-down/ibv_devinfo.txt", fd+"ibv-devinfo-v-port2-polling/ibv_devinfo-v.txt", fd+"ibstatus-hdr-mlx5_1-down/ibstatus.txt", "testdata/ib/heioy-ibstat-mlx4.txt")
	f.Add([]byte("hca_id:\tx\n\tvendor_part_id:\t4129\n\t\tport:\t99999\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tactive_width:\t\t12X (8)\n\t\t\tactive_speed:\t\t1e308 Gbps (1)\n\t\t\tlink_layer:\t\tInfiniBand\n"))
	f.Add([]byte("Infiniband device 'a' port 1 status:\n\tstate:\t:\n\tphys state:\t:\n\trate:\t\t -1 Gb/sec (1X XDR)\n\tlink_layer:\tIB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ports, _ := parseIBDevinfo(sectionOf(b))
		st, _ := parseIBStat(sectionOf(b))
		var p result.Parsed
		judgeIB(checks{&p, "n"}, node{ports: mergeIB(st, ports), ibSeen: true}, settings{ibRate: 400, hcas: 2})
	})
}

func FuzzParseAMDText(f *testing.F) {
	const fd = "../../testdata/field/health/"
	seeds(f, fd+"amdsmi-static-mi300a-apu/amd-smi-static.txt", fd+"amdsmi-metric-ecc-block/amd-smi-metric-ecc-block.txt", fd+"amdsmi-monitor-q-ecc/amd-smi-monitor-q.txt", fd+"amdsmi-monitor-watch-mi300x-8/amd-smi-monitor.txt", fd+"rocmsmi-concise-mi300x-8/rocm-smi.txt", fd+"rocmsmi-rasinfo-mi50/rocm-smi-showrasinfo.txt", fd+"amdsmi-gpu-not-found/amd-smi-static-asic.txt")
	f.Add([]byte("GPU: 99999999\n    ECC_BLOCKS:\n        UMC:\n            UNCORRECTABLE_COUNT: 999999999999999999999\nGPU  GPU  DOUBLE_ECC\n  1  x  2\nGPU[4]: RAS INFO\nUMC ENABLED 1 1\nGPU[0]\t\t: pcie clock level: 1 (99999.0GT/s x99)\n"))
	f.Add([]byte("\t\t\t\tGPU: 0\n\t  BUS:\n BDF:\n        MAX_PCIE_SPEED: 1e400 MT/s\n==== Concise Info ====\n-1 2 3 4\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		gs, _, _ := parseAMDText(sectionOf(b))
		var p result.Parsed
		judgeAMD(checks{&p, "n"}, fillAMD(gs, gs))
		sniff(b)
	})
}

// The whole Parse, tagged log or sniffed file.
func FuzzParse(f *testing.F) {
	seeds(f, filepath.Join(h200, "nvidia-smi-q-x.xml"), "testdata/gpud/ibstat.39.0.a100.failed.ibpanic.exit-255.0", "testdata/dcgm/dcgm-4.2.3-gb10-software-fail.json", "testdata/amd/rx6600-amd-smi-static.json", "testdata/amd/rx6600-amd-smi-metric.json", "testdata/amd/rx6600-rocm-smi-showallinfo.json", "../../testdata/field/health/ibv-devinfo-v-port2-polling/ibv_devinfo-v.txt", "../../testdata/field/health/amdsmi-static-mi300a-apu/amd-smi-static.txt", "../../testdata/field/health/rocmsmi-rasinfo-mi50/rocm-smi-showrasinfo.txt",
		"testdata/attack/paste_combo.txt", "testdata/attack/paste_q_twice.txt", "testdata/attack/paste_topo.txt")
	f.Add([]byte("a|begin|@begin gpuaccept-health 1\na|amdsmi-static|[{\"gpu\": 0, \"asic\": {\"market_name\": \"x\"}}]\na|amdsmi-metric|[{\"gpu\": 0, \"xgmi_err\": \"AMDSMI_XGMI_STATUS_ERROR\"}]\na|end|@end\n"))
	f.Add([]byte("a|begin|@begin gpuaccept-health 1\na|nvsmi-csv|index, name\na|nvsmi-csv|0, x\na|nvlink|GPU 0: X (UUID: y)\na|nvlink|Link 0: <inactive>\na|end|@end\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "in.log")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		parse(t, map[string]string{"nvlinks": "4", "hcas": "2", "ib_rate": "400", "dcgm_level": "1"}, 2, 8, path)
	})
}

func FuzzParseAMD(f *testing.F) {
	seeds(f, "testdata/amd/rx6600-amd-smi-static.json", "testdata/amd/rx6600-amd-smi-metric.json", "testdata/amd/rx6600-amd-smi-metric-gpu-data.json", "testdata/amd/rx6600-rocm-smi-showallinfo.json", "testdata/amd/mi250x-rocm-smi-productname.json")
	f.Add([]byte(`[{"gpu": 1e300, "pcie": {"width": "x", "speed": {"value": -1}}, "ecc": {"total_uncorrectable_count": 1e30}, "ecc_blocks": {"XGMI_WAFL": {"uncorrectable_count": "3"}}}]`))
	f.Add([]byte(`{"gpu_data": [1, null, {"bus": {"max_pcie_speed": "32 GT/s"}}], "card99999999999": {}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, _ := parseAMDStatic(sectionOf(b))
		me, _ := parseAMDMetric(sectionOf(b))
		ro, _ := parseROCmSMI(sectionOf(b))
		var p result.Parsed
		judgeAMD(checks{&p, "n"}, append(mergeAMD(st, me), ro...))
		sniff(b)
	})
}

func FuzzParseDCGMText(f *testing.F) {
	seeds(f, field+"/dcgm-3.3.8-r3-cuda-init-fail-nccl-tests-264/dcgmi-diag-r3.txt", field+"/dcgm3-r2-gpu-memory-thermal-stas00/dcgmi-diag-r2.txt",
		field+"/dcgm3-deployment-error-rowremap-stas00/dcgmi-diag.txt", field+"/dcgm-2.4.6-r2-pcie-fail-nvlink-down-dcgm-49/dcgmi-diag-r2.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		run, _ := parseDCGMText(sectionOf(b))
		if run != nil {
			var p result.Parsed
			judgeDCGM(checks{&p, "h"}, run)
		}
	})
}

func FuzzParseSMIText(f *testing.F) {
	seeds(f, filepath.Join(h200, "nvidia-smi-q.txt"), "testdata/gpud/nvidia-smi-q-a10-hw-slowdown.txt", "testdata/azurehpc/bad_nvsmi8_output.txt",
		field+"/a100-q-rowremap-pending-stas00/nvidia-smi-q.txt", "testdata/attack/q_ecc_flat.txt", "testdata/attack/q_ecc_section_flat.txt")
	f.Fuzz(func(t *testing.T, b []byte) { _, _, _ = parseSMITextNotes(sectionOf(b)) })
}

func FuzzParseLostGPUs(f *testing.F) {
	seeds(f, field+"/kernel-3050ti-not-supported-open-gpu-kernel-modules-393/dmesg.txt", field+"/kernel-l40-fallen-off-bus-multiline-nvsentinel-155/dmesg.txt",
		field+"/kernel-rminitadapter-syslog-gpu-operator-1146/kern.log", field+"/kernel-probe-not-called-nouveau-bigdata-133/dmesg.txt", "testdata/attack/offbus_attacker.txt", "testdata/attack/rminit_no_address.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		var p result.Parsed
		judgeLost(checks{&p, "h"}, node{lost: parseLostGPUs(sectionOf(b)), gpus: []gpu{newGPU(0, "f")}})
	})
}

// The paste cleaning and the sniffing take any line without panicking.
func FuzzPastedSniff(f *testing.F) {
	seeds(f, "testdata/h200/query-gpu-pasted.csv", "testdata/h200/nvidia-smi-q-pasted.txt", field+"/nvlink-v100-links-inactive-azhpc-diagnostics-73/nvlink-status.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		var head []byte
		_ = readLines(bytes.NewReader(b), func(text string, no int) {
			if l, ok := pastedLine(text); ok {
				head = append(append(head, l...), '\n')
			}
		})
		sniff(head)
	})
}
