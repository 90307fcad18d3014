package health

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/faults"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// nvidia-smi -q text and -q -x of the same GPU are one document
// (gpusOf): they make the same checks with the same messages, and a copy
// pasted with a prompt and kubectl's labels makes them too.
func TestSMITextSameAsXML(t *testing.T) {
	xml := parse(t, nil, 1, 1, filepath.Join(h200, "nvidia-smi-q-x.xml"))
	for _, f := range []string{filepath.Join(h200, "nvidia-smi-q.txt"), "testdata/h200/nvidia-smi-q-pasted.txt"} {
		t.Run(filepath.Base(f), func(t *testing.T) {
			text := parse(t, nil, 1, 1, f)
			assert.Equal(t, text.Error, "")
			assert.DeepEqual(t, text.Checks, xml.Checks)
			assert.DeepEqual(t, text.Info, xml.Info)
		})
	}
}

// A --query-gpu CSV pasted after a shell prompt and a blank line, each
// line under kubectl logs --prefix --timestamps labels, is read as the
// CSV itself; so is the paste that also caught the prompt after the
// output (a bare prompt, no command: it once erred "1 cells, the header
// has 15").
func TestPastedCSVRead(t *testing.T) {
	want := parse(t, nil, 1, 1, filepath.Join(h200, "query-gpu.csv"))
	pasted := readFile(t, "testdata/h200/query-gpu-pasted.csv")
	for name, text := range map[string]string{
		"prompt before":            pasted,
		"bare prompt after":        pasted + "root@vm:~# \n",
		"bare $ after, no newline": pasted + "$ ",
		"bracketed prompt after":   pasted + "[root@vm ~]#\n",
		"prompts before and after": "root@vm:~# \n" + pasted + "root@vm:~#\n",
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "csv.prompt")
			assert.NilError(t, os.WriteFile(file, []byte(text), 0o644))
			got := parse(t, nil, 1, 1, file)
			assert.Equal(t, got.Error, "")
			assert.DeepEqual(t, got.Checks, want.Checks)
		})
	}
}

// Real outputs (and degraded copies, testdata/README.md) of the text
// readers fail the check they should, with its code, naming the GPU.
func TestTextFaultsFailWithTheirCode(t *testing.T) {
	cases := []struct {
		file  string
		gpus  int
		check string
		code  string
		msg   string
	}{
		{"testdata/gpud/nvidia-smi-q-a10-hw-slowdown.txt", 1, "clock events", "GA-GPU-THROTTLE", "GPU 0 (00000000:06:00.0): clocks held down by hw_slowdown, hw_power_brake_slowdown"},
		{"testdata/azurehpc/bad_nvsmi8_output.txt", 8, "retired pages", "GA-GPU-RETIRED-PENDING", "GPU 1 (00000002:00:00.0): pages pending retirement"},
		{field + "a100-q-rowremap-pending-stas00/nvidia-smi-q.txt", 1, "row remap pending", "GA-GPU-ROWREMAP-PENDING", "GPU 0 (00000000:10:1C.0): a row remap is pending"},
		{field + "dcgm-3.3.8-r3-cuda-init-fail-nccl-tests-264/dcgmi-diag-r3.txt", 8, "DCGM diag GPU Memory", "GA-DCGM-DIAG", "failed: GPUs 0,1,2,3,4,5,6,7: Error using CUDA API cuInit Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics. Unable to initialize CUDA library: 'system not yet initialized'"},
		{field + "dcgm3-r2-gpu-memory-thermal-stas00/dcgmi-diag-r2.txt", 8, "DCGM diag GPU Memory", "GA-DCGM-DIAG", "failed: GPU 0: Thermal violations totaling 13.3 seconds started at 9.7 seconds into the test for GPU 0"},
		{field + "dcgm3-deployment-error-rowremap-stas00/dcgmi-diag.txt", 8, "DCGM diag Deployment", "GA-DCGM-DIAG", "GPU 3: has uncorrectable memory errors and row remappings are pending"},
		{field + "dcgm-2.4.6-r2-pcie-fail-nvlink-down-dcgm-49/dcgmi-diag-r2.txt", 1, "DCGM diag PCIe", "GA-DCGM-DIAG", "GPU 0: GPU 0's NvLink link 0 is currently down Run a field diagnostic on the GPU."},
		{field + "kernel-l40-fallen-off-bus-multiline-nvsentinel-155/dmesg.txt", 8, "GPU lost", "GA-GPU-OFFBUS", "PCI 0000:b3:00.0: has fallen off the bus (dmesg.txt:1)"},
		{field + "kernel-fallen-off-bus-bumblebee-554/dmesg.txt", 1, "GPU lost", "GA-GPU-OFFBUS", "PCI 0000:01:00.0: has fallen off the bus (dmesg.txt:1)"},
		{field + "kernel-3050ti-not-supported-open-gpu-kernel-modules-393/dmesg.txt", 1, "GPU lost", "GA-GPU-INIT", "PCI 0000:01:00.0: the GPU (PCI ID 10de:25a0) is not supported by the installed driver (dmesg.txt:6)"},
		{field + "kernel-3090-rminitadapter-open-gpu-kernel-modules-789/dmesg.txt", 1, "GPU lost", "GA-GPU-INIT", "PCI 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792) (dmesg.txt:2)"},
		{field + "kernel-rminitadapter-syslog-gpu-operator-1146/kern.log", 8, "GPU lost", "GA-GPU-INIT", "PCI 0000:0a:00.0: RmInitAdapter failed! (0x24:0x72:1568) (kern.log:1)"},
		{field + "kernel-probe-not-called-nouveau-bigdata-133/dmesg.txt", 3, "GPU lost", "GA-GPU-INIT", "a GPU: The NVIDIA probe routine was not called for 3 device(s)"},
		{field + "nvlink-b200-all-links-inActive-gpud-1085/nvlink-status.txt", 8, "NVLink", "GA-NVLINK-INACTIVE", "GPU 2: all links inactive"},
		{field + "nvlink-v100-links-inactive-azhpc-diagnostics-73/nvlink-status.txt", 8, "NVLink", "GA-NVLINK-INACTIVE", "GPU 3: links 3,5 inactive (4 active)"},
	}
	for _, c := range cases {
		t.Run(filepath.Base(filepath.Dir(c.file))+"/"+filepath.Base(c.file), func(t *testing.T) {
			p := parse(t, nil, 1, c.gpus, c.file)
			assert.Equal(t, p.Error, "")
			f, ok := failed(p)[c.check]
			assert.Assert(t, ok, "check %q did not fail; checks: %+v", c.check, p.Checks)
			assert.Equal(t, f.Code, c.code)
			assert.Assert(t, !f.Warn)
			assert.Assert(t, strings.Contains(f.Message, c.msg), "message %q lacks %q", f.Message, c.msg)
			_, known := faults.Lookup(f.Code)
			assert.Assert(t, known, "code %s is not in framework/faults", f.Code)
		})
	}
}

// Healthy real outputs of the text readers pass, the check named
// holding with its message.
func TestTextHealthyPass(t *testing.T) {
	cases := []struct {
		file  string
		gpus  int
		check string
		msg   string
	}{
		{field + "q-d-page-retirement-8gpu-azurehpc/nvidia-smi-q.txt", 8, "retired pages", "no page retirement pending on 8 GPUs"},
		{filepath.Join(h200, "dmesg-nvrm.txt"), 1, "GPU lost", "no GPU fell off the bus or failed to initialise"},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			p := parse(t, nil, 1, c.gpus, c.file)
			assert.Equal(t, p.Error, "")
			assert.DeepEqual(t, failed(p), map[string]result.Check{})
			found := false
			for _, ch := range p.Checks {
				found = found || ch.Name == c.check && ch.OK && strings.Contains(ch.Message, c.msg)
			}
			assert.Assert(t, found, "no passing %q check with %q: %+v", c.check, c.msg, p.Checks)
		})
	}
}

// A dcgmi diag table whose tests pass or are skipped passes, a skipped
// test said to be skipped. No real table of passes and skips only was
// found whole (the pages cut them); these rows are the Metadata,
// Deployment and Integration rows of the nccl-tests#264 table
// (testdata/field/health/dcgm-3.3.8-r3-cuda-init-fail-nccl-tests-264),
// without its failing Hardware rows.
func TestDCGMTextPassAndSkip(t *testing.T) {
	s := sectionOf([]byte(strings.Join([]string{
		"+---------------------------+------------------------------------------------+",
		"| Diagnostic                | Result                                         |",
		"+===========================+================================================+",
		"|-----  Metadata  ----------+------------------------------------------------|",
		"| DCGM Version              | 3.3.8                                          |",
		"|-----  Deployment  --------+------------------------------------------------|",
		"| Denylist                  | Pass                                           |",
		"+-----  Integration  -------+------------------------------------------------+",
		"| PCIe                      | Skip - All                                     |",
		"+---------------------------+------------------------------------------------+",
	}, "\n")))
	run, err := parseDCGMText(s)
	assert.NilError(t, err)
	var p result.Parsed
	judgeDCGM(checks{&p, ""}, run)
	assert.DeepEqual(t, failed(p), map[string]result.Check{})
	assert.Equal(t, len(p.Checks), 2)
	assert.Equal(t, p.Checks[0].Message, "passed (DCGM 3.3.8)")
	assert.Equal(t, p.Checks[1].Message, "skipped, not failed (DCGM 3.3.8)")
}

// collect.sh asks dcgmi diag for -j; a dcgmi that prints its table there
// instead (the real table of nccl-tests#264 as the dcgm section) is read
// as the table.
func TestCollectedDCGMTable(t *testing.T) {
	b, err := os.ReadFile(field + "dcgm-3.3.8-r3-cuda-init-fail-nccl-tests-264/dcgmi-diag-r3.txt")
	assert.NilError(t, err)
	s := sectionOf(b)
	s.name = "dcgm"
	var p result.Parsed
	nd, errs := readNode(&p, &nodeInput{host: "n1", sections: map[string]*section{"dcgm": s}, order: []string{"dcgm"}})
	assert.DeepEqual(t, errs, []string(nil))
	assert.Assert(t, nd.dcgm != nil)
	judgeDCGM(checks{&p, "n1"}, nd.dcgm)
	f, ok := failed(p)["DCGM diag GPU Memory"]
	assert.Assert(t, ok, "%+v", p.Checks)
	assert.Equal(t, f.Host, "n1")
}

// DCGM 4's table (a row per GPU under each test) is read GPU by GPU; a
// table without its closing border is cut short: an error naming the
// line, never a pass of the tests seen.
func TestDCGM4TableCutShort(t *testing.T) {
	b, err := os.ReadFile(field + "dcgm-4.2.3-kubectl-exec-cut-dcgm-253/dcgmi-diag.txt")
	assert.NilError(t, err)
	s := sectionOf(b)
	run, err := parseDCGMText(s)
	assert.ErrorContains(t, err, "fuzz:17: the dcgmi diag table is cut short")
	assert.Equal(t, run.version, "4.2.3")
	var got []string
	for _, f := range run.findings {
		got = append(got, f.test+"/"+f.gpus+"/"+f.status)
	}
	assert.DeepEqual(t, got, []string{"software//pass", "software/0/pass", "software/1/pass", "software/2/pass", "software/3/pass", "memory//pass"})
}

// "All links are inactive" fails on a GPU that always has NVLink peers
// (a module), and on any GPU where the SKU sets nvlinks; on a board GPU
// without nvlinks it only warns (its bridge may not be fitted).
func TestNVLinkModuleNames(t *testing.T) {
	for name, module := range map[string]bool{
		"Tesla V100-SXM2-32GB": true, "NVIDIA A100-SXM4-80GB": true, "NVIDIA A800-SXM4-80GB": true,
		"NVIDIA H100 80GB HBM3": true, "NVIDIA H200": true, "NVIDIA H800": true, "NVIDIA H20": true,
		"NVIDIA B200": true, "NVIDIA GB200": true, "NVIDIA GH200 480GB": true,
		"NVIDIA A100-PCIE-40GB": false, "NVIDIA A100 80GB PCIe": false, "NVIDIA H100 PCIe": false,
		"NVIDIA H100 NVL": false, "NVIDIA H200 NVL": false, "NVIDIA A10": false, "NVIDIA A40": false,
		"NVIDIA L40S": false, "NVIDIA RTX A6000": false, "NVIDIA GeForce RTX 3090": false,
	} {
		assert.Equal(t, nvlinkModule(name), module, name)
	}
	// A board GPU's line (the B200 field output, its name made a board
	// part's: a named edit) warns without nvlinks and fails with it.
	b, err := os.ReadFile(field + "nvlink-b200-all-links-inActive-gpud-1085/nvlink-status.txt")
	assert.NilError(t, err)
	s := sectionOf([]byte(strings.Replace(string(b), "NVIDIA B200", "NVIDIA H100 PCIe", 1)))
	for _, nvlinks := range []int{0, 18} {
		var p result.Parsed
		judgeNVLink(checks{&p, ""}, node{nvlink: parseNVLink(s), nvlinkSeen: true}, settings{nvlinks: nvlinks})
		assert.Equal(t, len(p.Checks), 1)
		assert.Equal(t, p.Checks[0].Code, "GA-NVLINK-INACTIVE")
		assert.Equal(t, p.Checks[0].Warn, nvlinks == 0, "nvlinks=%d: %+v", nvlinks, p.Checks[0])
	}
}

// collect.sh keeps every NVRM line of the kernel log, not only XIDs: a
// GPU that fell off the bus with no XID (the driver's multi-line message
// of NVSentinel#155, as dmesg prints it) fails its node through a real
// collection.
func TestCollectKeepsLostGPU(t *testing.T) {
	tmp := t.TempDir()
	lost, err := filepath.Abs(field + "kernel-l40-fallen-off-bus-multiline-nvsentinel-155/dmesg.txt")
	assert.NilError(t, err)
	lines := collect(t, tmp, "0", "node-a", filepath.Join(h200, "nvidia-smi-q-x.xml"), [2]string{"dmesg", "cat '" + lost + "'\n"})
	path := filepath.Join(tmp, "node.log")
	assert.NilError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	p := parse(t, nil, 1, 1, path)
	assert.Equal(t, p.Error, "")
	f, ok := failed(p)["GPU lost"]
	assert.Assert(t, ok, "%+v", p.Checks)
	assert.Equal(t, f.Code, "GA-GPU-OFFBUS")
	assert.Equal(t, f.Host, "node-a")
	assert.Assert(t, strings.Contains(f.Message, "PCI 0000:b3:00.0: has fallen off the bus"), f.Message)
}

// The prompt lines of real pastes are dropped; the lines of the outputs
// read are kept, whatever they start with.
func TestPastedLine(t *testing.T) {
	for line, keep := range map[string]bool{
		"sh-5.1# /usr/bin/dcgmi diag --run 3 --fail-early":                              false, // nccl-tests#264
		"root@5128e2f4e9d5:/# sudo dcgmi diag -r 1":                                     false,
		"[root@test nccl-tests-master]# ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8": false,
		"$ dcgmi diag -r 3":              false, // DCGM#55
		"jdh4@traverse-k05g9:~$ lscpu":   false,
		"+ nvidia-smi -q":                false,
		"root@vm:~# ":                    false, // the prompt after a pasted output
		"$":                              false,
		"[root@test nccl-tests-master]#": false,
		"+---------------------------+-----------+":                                                                     true,
		"| Denylist                  | Pass      |":                                                                     true,
		"    Pending Page Blacklist            : Yes":                                                                   true,
		"[   49.261458] NVRM: GPU at 0000:01:00.0 has fallen off the bus.":                                              true,
		"[ 1157.036170] PKCS#7 signature not signed with a trusted key":                                                 true,
		"Dec  2 11:49:53 worker4 kernel: [  885.242168] NVRM: GPU 0000:0a:00.0: RmInitAdapter failed! (0x24:0x72:1568)": true,
		"index, name, pci.bus_id":                                                                                       true,
		"0, NVIDIA H200, 00000000:00:06.0, 100 %":                                                                       true,
		"==============NVSMI LOG==============":                                                                         true,
	} {
		_, kept := pastedLine(line)
		assert.Equal(t, kept, keep, line)
	}
	got, _ := pastedLine("2026-12-01T09:33:56.912345Z     Product Name : NVIDIA H200")
	assert.Equal(t, got, "    Product Name : NVIDIA H200")
}
