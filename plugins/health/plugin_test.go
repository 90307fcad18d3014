package health

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/faults"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// The H200 machine's real outputs (no dcgmi, no InfiniBand on it) pass
// every check they give, and name the GPU for the framework's model gate.
func TestRealH200OutputsPass(t *testing.T) {
	cases := []struct {
		file  string
		names []string // checks that must be made
	}{
		{"nvidia-smi-q-x.xml", []string{"GPU count", "GPU model", "ECC mode", "uncorrected ECC", "row remap pending", "row remap failure", "clock events", "PCIe link", "persistence mode"}},
		{"query-gpu.csv", []string{"GPU count", "GPU model", "ECC mode", "uncorrected ECC", "row remap pending", "row remap failure", "clock events", "PCIe link", "persistence mode"}},
		{"query-throttle-old-name.csv", []string{"GPU count", "clock events"}},
		// Three ordinary NVRM lines, none an XID.
		{"dmesg-nvrm.txt", []string{"XID"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			p := parse(t, nil, 1, 1, filepath.Join(h200, c.file))
			assert.Equal(t, p.Error, "")
			assert.DeepEqual(t, failed(p), map[string]result.Check{})
			made := map[string]bool{}
			for _, ch := range p.Checks {
				made[ch.Name] = true
			}
			for _, n := range c.names {
				assert.Assert(t, made[n], "check %q not made; made: %v", n, made)
			}
			if strings.HasSuffix(c.file, ".xml") || c.file == "query-gpu.csv" {
				assert.Equal(t, p.Info["gpu"], "NVIDIA H200")
				assert.Equal(t, p.Info["driver_version"], "580.159.04")
			}
		})
	}
	p := parse(t, nil, 1, 1, filepath.Join(h200, "dmesg-nvrm.txt"))
	assert.Equal(t, p.Checks[0].Message, "no fatal XID in the kernel log (0 XID lines)")
}

// Each degraded copy (testdata/README.md names the edit) and each real
// faulty output fails the check it should, with its fault code, and the
// message names the GPU or port and the numbers.
func TestFaultsFailWithTheirCode(t *testing.T) {
	td := "testdata"
	cases := []struct {
		file   string
		params map[string]string
		gpus   int
		check  string
		code   string
		msg    string
		warn   bool
	}{
		{td + "/h200/ecc-uncorrected.xml", nil, 1, "uncorrected ECC", "GA-GPU-ECC-UNCORR", "GPU 0 (00000000:00:06.0): 2 uncorrected ECC errors since the driver loaded (volatile), 2 in its lifetime", false},
		{td + "/h200/rowremap-failed.xml", nil, 1, "row remap failure", "GA-GPU-ROWREMAP-FAIL", "GPU 0 (00000000:00:06.0): a row remap failed", false},
		{td + "/h200/rowremap-pending.xml", nil, 1, "row remap pending", "GA-GPU-ROWREMAP-PENDING", "GPU 0 (00000000:00:06.0): a row remap is pending", false},
		{td + "/h200/pcie-x8.xml", nil, 1, "PCIe link", "GA-PCIE-DOWNGRADE", "GPU 0 (00000000:00:06.0): width x8, max x16", false},
		{td + "/h200/query-gpu-pcie-x8.csv", map[string]string{"pcie_width": "16"}, 1, "PCIe link", "GA-PCIE-DOWNGRADE", "width x8, max x16, width x8, the SKU's x16", false},
		{filepath.Join(h200, "nvidia-smi-q-x.xml"), map[string]string{"pcie_gen": "6"}, 1, "PCIe link", "GA-PCIE-DOWNGRADE", "max generation 5, the SKU's 6", false},
		{td + "/h200/hw-thermal-slowdown.xml", nil, 1, "clock events", "GA-GPU-THROTTLE", "clocks held down by hw_thermal_slowdown (clocks_event_reasons 0x0000000000000041)", false},
		{filepath.Join(h200, "nvidia-smi-q-x.xml"), nil, 8, "GPU count", "GA-GPU-COUNT", "1 GPU, 8 expected", false},
		{filepath.Join(h200, "nvidia-smi-q-x.xml"), map[string]string{"gpus": "8"}, 1, "GPU count", "GA-GPU-COUNT", "1 GPU, 8 expected", false},
		{td + "/h200/dmesg-xid79.txt", nil, 1, "XID", "GA-GPU-OFFBUS", "fatal XID 79 on PCI 0000:00:06 (dmesg-xid79.txt:4)", false},
		{td + "/gpud/dmesg-with-xid-119.log", nil, 8, "XID", "GA-GPU-XID", "fatal XID 119 on PCI 0000:9b:00 (dmesg-with-xid-119.log:3)", false},
		{td + "/azurehpc/bad_nvlink_status.txt", nil, 8, "NVLink", "GA-NVLINK-INACTIVE", "GPU 6: all links inactive", false},
		{td + "/azurehpc/good_nvlink_status-link5-inactive.txt", nil, 8, "NVLink", "GA-NVLINK-INACTIVE", "GPU 7: link 5 inactive (11 active)", false},
		{td + "/azurehpc/good_nvlink_status.txt", map[string]string{"nvlinks": "18"}, 8, "NVLink", "GA-NVLINK-INACTIVE", "GPU 7: 12 active links, 18 expected", false},
		{td + "/gpud/ibstat.39.0.a100.failed.ibpanic.exit-255.0", map[string]string{"ib_rate": "400"}, 8, "IB rate", "GA-IB-RATE", "mlx5_0 port 1 at 200 Gb/s", false},
		{td + "/gpud/ibstat.39.0.a100.failed.ibpanic.exit-255.0", map[string]string{"hcas": "9"}, 8, "HCA count", "GA-IB-COUNT", "8 InfiniBand/RoCE ports, 9 expected", false},
		{td + "/gpud/ibstat.39.0.a100-mlx5_3-down", nil, 8, "IB port state", "GA-IB-PORT-DOWN", "mlx5_3 port 1 is DOWN", false},
		{td + "/dcgm/dcgm-3.1.0-jsonresulttests-persistence-fail.txt", nil, 8, "DCGM diag Persistence Mode", "GA-DCGM-DIAG", "failed: ", false},
		{td + "/dcgm/dcgm-4.2.3-gb10-software-fail.json", nil, 1, "DCGM diag software", "GA-DCGM-CONFIG", "failed (DCGM_ERROR_CONFIG): GPU 0: DCGM_FR_PERSISTENCE_MODE: Persistence Mode: Persistence mode for GPU 0 is disabled.", false},
		{td + "/dcgm/dcgm-4-issue215-diagnostic-gpu3-isolate.json", nil, 8, "DCGM diag diagnostic", "GA-DCGM-DIAG", "failed (DCGM_ERROR_ISOLATE): GPU 3: DCGM_FR_FAULTY_MEMORY: EDIT: GPU 3 faulty memory", false},
		{td + "/dcgm/dcgm-4-issue215-diagnostic-gpu3-reset.json", nil, 8, "DCGM diag diagnostic", "GA-DCGM-RESET", "failed (DCGM_ERROR_RESET)", false},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.file)+"/"+c.code, func(t *testing.T) {
			p := parse(t, c.params, 1, c.gpus, c.file)
			assert.Equal(t, p.Error, "")
			f, ok := failed(p)[c.check]
			assert.Assert(t, ok, "check %q did not fail; checks: %+v", c.check, p.Checks)
			assert.Equal(t, f.Code, c.code)
			assert.Equal(t, f.Warn, c.warn)
			assert.Assert(t, strings.Contains(f.Message, c.msg), "message %q lacks %q", f.Message, c.msg)
			_, known := faults.Lookup(f.Code)
			assert.Assert(t, known, "code %s is not in framework/faults", f.Code)
			for _, other := range p.Checks {
				if other.Name != c.check {
					assert.Assert(t, other.OK || other.Warn, "another check failed too: %+v", other)
				}
			}
		})
	}
}

// Real healthy third-party outputs pass at the parameters of their
// hardware.
func TestRealThirdPartyOutputsPass(t *testing.T) {
	cases := []struct {
		file   string
		params map[string]string
		gpus   int
		check  string
		msg    string
	}{
		{"testdata/azurehpc/good_nvlink_status.txt", map[string]string{"nvlinks": "12"}, 8, "NVLink", "1 GPU, 12 active links, none inactive"},
		{"testdata/gpud/nvidia-smi.nvlink.status.a100", map[string]string{"nvlinks": "12"}, 8, "NVLink", "8 GPUs, 96 active links, none inactive"},
		{"testdata/gpud/ibstat.39.0.a100.failed.ibpanic.exit-255.0", map[string]string{"ib_rate": "200", "hcas": "8"}, 8, "IB rate", "8 ports at 200 Gb/s or more"},
		{"testdata/dcgm/dcgm-3.1.0-jsonresulttests.txt", nil, 8, "DCGM diag Inforom", "passed (DCGM 3.1.0)"},
		{"testdata/dcgm/dcgm-4-issue215-diagnostic.json", nil, 8, "DCGM diag diagnostic", "passed"},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			p := parse(t, c.params, 1, c.gpus, c.file)
			assert.Equal(t, p.Error, "")
			assert.DeepEqual(t, failed(p), map[string]result.Check{})
			var found bool
			for _, ch := range p.Checks {
				if ch.Name == c.check {
					found = true
					assert.Assert(t, strings.Contains(ch.Message, c.msg), "%q lacks %q", ch.Message, c.msg)
				}
			}
			assert.Assert(t, found, "check %q not made: %+v", c.check, p.Checks)
		})
	}
	// ibstat's ibpanic line on the missing mlx5_8 is said, not dropped.
	p := parse(t, nil, 1, 8, "testdata/gpud/ibstat.39.0.a100.failed.ibpanic.exit-255.0")
	assert.Assert(t, len(p.Diagnostics) == 1 && strings.Contains(p.Diagnostics[0].Message, "ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed"), "%+v", p.Diagnostics)
}

// /sys/class/infiniband of a real H100 node (leptonai/gpud's copy): eight
// NDR ports at 400 Gb/s and a bonded RoCE port at 200; at ib_rate 400 the
// RoCE bond is the slow one.
func TestSysfsInfiniband(t *testing.T) {
	root := "testdata/gpud/sys-class-infiniband-h100.0"
	hcas, err := os.ReadDir(root)
	assert.NilError(t, err)
	s := &section{name: "ib-sysfs", file: "sysfs"}
	for _, h := range hcas {
		for _, f := range []string{"state", "rate", "link_layer"} {
			b, err := os.ReadFile(filepath.Join(root, h.Name(), "ports", "1", f))
			assert.NilError(t, err)
			s.lines = append(s.lines, line{h.Name() + " 1 " + f + " " + strings.TrimSpace(string(b)), len(s.lines) + 1})
		}
	}
	ports := parseIBSysfs(s)
	assert.Equal(t, len(ports), 9)
	var p result.Parsed
	set, _ := parseParams(map[string]string{"ib_rate": "400", "hcas": "9"})
	judgeIB(checks{&p, "h100"}, node{host: "h100", ports: ports, ibSeen: true}, set)
	f := failed(p)
	assert.Equal(t, len(f), 1, "%+v", p.Checks)
	assert.Equal(t, f["IB rate"].Code, "GA-IB-RATE")
	assert.Equal(t, f["IB rate"].Host, "h100")
	assert.Assert(t, strings.Contains(f["IB rate"].Message, "h100: mlx5_bond_0 port 1 at 200 Gb/s"), f["IB rate"].Message)
}

// The plan: one step, a process per node, no MPI job, running the
// embedded script with the DCGM level.
func TestPlan(t *testing.T) {
	pl, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "node", Params: map[string]string{"dcgm_level": "2"}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 4, GPUsPerNode: 8}}})
	assert.NilError(t, err)
	assert.NilError(t, pl.Validate())
	assert.Equal(t, len(pl.Steps), 1)
	st := pl.Steps[0]
	assert.Equal(t, st.Procs, 4)
	assert.Equal(t, st.ProcsPerNode, 1)
	assert.Equal(t, st.MPI, false)
	assert.DeepEqual(t, st.Argv, []string{"sh", "-c", Collect, "gpuaccept-health", "2"})
	d, err := Plugin{}.Describe(context.Background())
	assert.NilError(t, err)
	assert.NilError(t, d.Check(PluginName))
	assert.Assert(t, d.Tests[0].Preflight)
	for _, bad := range []map[string]string{{"dcgm_level": "5"}, {"xid_fatal": "48,x"}, {"ib_rate": "fast"}, {"nope": "1"}} {
		_, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "node", Params: bad, Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}}})
		assert.Assert(t, err != nil, "%v accepted", bad)
	}
}

// collect.sh run on two nodes, its tools replaying real outputs (node b's
// nvidia-smi the ECC-degraded copy), the two logs interleaved line by line
// as a rank starter does: Parse regroups them, node a passes, node b
// fails naming itself and the code.
func TestCollectScriptOnTwoNodes(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	tmp := t.TempDir()
	run := func(rank, xml string) []string {
		return collect(t, tmp, rank, "node-a,node-b", xml)
	}
	a, b := run("0", filepath.Join(h200, "nvidia-smi-q-x.xml")), run("1", "testdata/h200/ecc-uncorrected.xml")
	path := filepath.Join(tmp, "node.log")
	log := interleave(a, b)
	assert.NilError(t, os.WriteFile(path, []byte(strings.Join(log, "\n")+"\n"), 0o644))
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "node", Params: map[string]string{"hcas": "8", "ib_rate": "200"},
		Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 1}}, Outputs: []plan.Output{{Step: "node", Log: path}}})
	assert.NilError(t, err)
	assert.Equal(t, p.Error, "")
	f := failed(p)
	assert.Equal(t, len(f), 1, "%+v", p.Checks)
	ecc := f["uncorrected ECC"]
	assert.Equal(t, ecc.Host, "node-b")
	assert.Equal(t, ecc.Code, "GA-GPU-ECC-UNCORR")
	assert.Assert(t, strings.HasPrefix(ecc.Message, "node-b: GPU 0 (00000000:00:06.0): 2 uncorrected"), ecc.Message)
	hosts := map[string]int{}
	for _, c := range p.Checks {
		hosts[c.Host]++
	}
	assert.Assert(t, hosts["node-a"] > 10 && hosts["node-b"] > 10, "%v", hosts)
	assert.Equal(t, p.Info["hosts"], "node-a,node-b")
	assert.Equal(t, p.Info["gpu"], "NVIDIA H200")
	// Cut short: a node without its end line is an error naming it.
	cut := strings.Join(log[:len(log)-1], "\n") + "\n"
	assert.NilError(t, os.WriteFile(path, []byte(cut), 0o644))
	p, err = Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "node", Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 1}}, Outputs: []plan.Output{{Step: "node", Log: path}}})
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(p.Error, "node node-b's collection was cut short"), p.Error)
}

func interleave(logs ...[]string) []string {
	var out []string
	for i := 0; ; i++ {
		more := false
		for _, l := range logs {
			if i < len(l) {
				out = append(out, l[i])
				more = true
			}
		}
		if !more {
			return out
		}
	}
}

// collect runs collect.sh as rank of hosts, its nvidia-smi, dmesg and
// ibstat replaying real outputs (nvidia-smi -q -x: xml).
func collect(t *testing.T, tmp, rank, hosts, xml string, over ...[2]string) []string {
	t.Helper()
	abs := func(p string) string { a, err := filepath.Abs(p); assert.NilError(t, err); return a }
	bin, err := os.MkdirTemp(tmp, "bin")
	assert.NilError(t, err)
	{
		stub := func(name, body string) {
			assert.NilError(t, os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755))
		}
		stub("nvidia-smi", `case "$1" in
-q) cat '`+abs(xml)+`' ;;
--query-gpu=clocks_event_reasons.active) exit 0 ;;
--query-gpu=*) cat '`+abs(filepath.Join(h200, "query-gpu.csv"))+`' ;;
nvlink) cat '`+abs(filepath.Join(h200, "nvlink-status.txt"))+`' ;;
esac
`)
		stub("dmesg", `cat '`+abs(filepath.Join(h200, "dmesg-nvrm.txt"))+"'\n")
		stub("ibstat", `cat '`+abs("testdata/gpud/ibstat.39.0.a100.failed.ibpanic.exit-255.0")+"'\n")
		for _, o := range over {
			stub(o[0], o[1])
		}
		cmd := exec.Command("sh", "-c", Collect, "gpuaccept-health", "0")
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "OMPI_COMM_WORLD_RANK=" + rank, "GPUACCEPT_HOSTS=" + hosts}
		out, err := cmd.CombinedOutput()
		assert.NilError(t, err, string(out))
		return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	}
}

// Three nodes, node-c's driver another version: node-c fails
// GA-DRIVER-MISMATCH naming both versions. Two nodes that disagree: no
// version is the common one, both fail.
func TestDriverAcrossNodes(t *testing.T) {
	tmp := t.TempDir()
	good, odd := filepath.Join(h200, "nvidia-smi-q-x.xml"), "testdata/h200/driver-570.xml"
	judgeLog := func(hosts string, xmls ...string) result.Parsed {
		var logs [][]string
		for i, x := range xmls {
			logs = append(logs, collect(t, tmp, fmt.Sprint(i), hosts, x))
		}
		path := filepath.Join(tmp, "node.log")
		assert.NilError(t, os.WriteFile(path, []byte(strings.Join(interleave(logs...), "\n")+"\n"), 0o644))
		p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "node", Topology: plan.Topology{Scope: plan.Scope{Nodes: len(xmls), GPUsPerNode: 1}}, Outputs: []plan.Output{{Step: "node", Log: path}}})
		assert.NilError(t, err)
		assert.Equal(t, p.Error, "")
		return p
	}
	p := judgeLog("node-a,node-b,node-c", good, good, odd)
	var bad []result.Check
	for _, c := range p.Checks {
		if !c.OK {
			bad = append(bad, c)
		}
	}
	assert.Equal(t, len(bad), 1, "%+v", bad)
	assert.Equal(t, bad[0].Host, "node-c")
	assert.Equal(t, bad[0].Code, "GA-DRIVER-MISMATCH")
	assert.Equal(t, bad[0].Message, "node-c: GPU 0 (00000000:00:06.0) has 570.172.08; the other GPUs have 580.159.04")
	p = judgeLog("node-a,node-b", good, odd)
	hosts := map[string]bool{}
	for _, c := range p.Checks {
		if !c.OK {
			assert.Equal(t, c.Code, "GA-DRIVER-MISMATCH")
			hosts[c.Host] = true
		}
	}
	assert.DeepEqual(t, hosts, map[string]bool{"node-a": true, "node-b": true})
}

// collect.sh on a node without nvidia-smi, dcgmi or an RDMA driver: each
// is said absent; dcgmi and the RDMA driver, where the SKU expects them,
// are warn checks GA-TOOL-MISSING. No GPU tool at all where GPUs are
// expected fails GA-GPU-COUNT (a node no GPU can be seen on must not take
// jobs). amd-smi and rocm-smi present are TestCollectAMD's.
func TestAbsentTools(t *testing.T) {
	for _, tool := range []string{"nvidia-smi", "amd-smi", "rocm-smi", "dcgmi", "ibstat"} {
		if _, err := exec.LookPath(tool); err == nil {
			t.Skipf("%s is installed here", tool)
		}
	}
	if _, err := os.Stat("/sys/class/infiniband"); err == nil {
		t.Skip("this machine has /sys/class/infiniband")
	}
	cases := []struct {
		name    string
		stub    string // a tool put on PATH that prints nothing: its presence is what counts
		gpuWarn bool
		gpuCode string
		gpuMsg  string
	}{
		{"no GPU tool", "", false, "GA-GPU-COUNT", "bare: no GPU tool (nvidia-smi, amd-smi, rocm-smi) found: 8 GPUs expected, none could be counted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := "/usr/bin:/bin"
			if tc.stub != "" {
				bin := t.TempDir()
				assert.NilError(t, os.WriteFile(filepath.Join(bin, tc.stub), []byte("#!/bin/sh\nexit 0\n"), 0o755))
				path = bin + ":" + path
			}
			cmd := exec.Command("sh", "-c", Collect, "gpuaccept-health", "1")
			cmd.Env = []string{"PATH=" + path, "OMPI_COMM_WORLD_RANK=0", "GPUACCEPT_HOSTS=bare"}
			out, err := cmd.CombinedOutput()
			assert.NilError(t, err, string(out))
			log := filepath.Join(t.TempDir(), "node.log")
			assert.NilError(t, os.WriteFile(log, out, 0o644))
			p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "node", Params: map[string]string{"dcgm_level": "1", "hcas": "8"},
				Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 8}}, Outputs: []plan.Output{{Step: "node", Log: log}}})
			assert.NilError(t, err)
			assert.Equal(t, p.Error, "")
			f := failed(p)
			for _, name := range []string{"DCGM diag", "HCA count"} {
				c, ok := f[name]
				assert.Assert(t, ok, "no %s check: %+v", name, p.Checks)
				assert.Assert(t, c.Warn, "%s is not a warn check", name)
				assert.Equal(t, c.Code, "GA-TOOL-MISSING")
				assert.Equal(t, c.Host, "bare")
			}
			g, ok := f["GPU count"]
			assert.Assert(t, ok, "no GPU count check: %+v", p.Checks)
			assert.Equal(t, g.Warn, tc.gpuWarn)
			assert.Equal(t, g.Code, tc.gpuCode)
			assert.Equal(t, g.Host, "bare")
			assert.Assert(t, strings.Contains(g.Message, tc.gpuMsg), g.Message)
			assert.Equal(t, len(f), 3, "%+v", p.Checks)
			infos := 0
			for _, d := range p.Diagnostics {
				if strings.Contains(d.Message, "is not installed") {
					infos++
				}
			}
			assert.Assert(t, infos >= 3, "%+v", p.Diagnostics)
		})
	}
	// No GPU expected (gpus 0): no tool is no fault.
	cmd := exec.Command("sh", "-c", Collect, "gpuaccept-health", "0")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "OMPI_COMM_WORLD_RANK=0", "GPUACCEPT_HOSTS=bare"}
	out, err := cmd.CombinedOutput()
	assert.NilError(t, err, string(out))
	log := filepath.Join(t.TempDir(), "node.log")
	assert.NilError(t, os.WriteFile(log, out, 0o644))
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "node", Params: map[string]string{"gpus": "0"},
		Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 8}}, Outputs: []plan.Output{{Step: "node", Log: log}}})
	assert.NilError(t, err)
	assert.DeepEqual(t, failed(p), map[string]result.Check{})
}

// What is no health output is an error naming the file.
func TestNotAHealthOutput(t *testing.T) {
	p := parse(t, nil, 1, 1, "../../testdata/recordings/h200x1-2026-12-01/smi/topo-m.txt")
	assert.Assert(t, strings.Contains(p.Error, "topo-m.txt: not an output health.node reads"), p.Error)
}

// The H200 machine's real nvidia-smi nvlink --status is empty (one GPU,
// no NVLink peers). Given alone, an empty file is an ERROR whatever the
// parameters: which tool wrote it (or whether one ran at all: a failed
// kubectl logs, a cut ssh) cannot be told, and nothing is no evidence.
// Inside collect.sh's tagged log the empty section is known to be
// nvlink --status: no links listed, a pass, and a fail where links are
// expected.
func TestEmptyNVLinkStatus(t *testing.T) {
	file := filepath.Join(h200, "nvlink-status.txt")
	st, err := os.Stat(file)
	assert.NilError(t, err)
	assert.Equal(t, st.Size(), int64(0), "the recorded nvlink status is no longer empty")
	tmp := t.TempDir()
	tagged := filepath.Join(tmp, "node.log")
	assert.NilError(t, os.WriteFile(tagged, []byte(strings.Join(collect(t, tmp, "0", "node-a", filepath.Join(h200, "nvidia-smi-q-x.xml")), "\n")+"\n"), 0o644))
	cases := []struct {
		name   string
		file   string
		params map[string]string
		err    string // the ERROR; "" where the NVLink check is judged
		ok     bool
		msg    string
	}{
		{"alone", file, nil, "nvlink-status.txt is empty: nothing to judge", false, ""},
		{"alone, links expected", file, map[string]string{"nvlinks": "18"}, "nvlink-status.txt is empty: nothing to judge", false, ""},
		{"collect.sh section", tagged, nil, "", true, "no NVLink links listed"},
		{"collect.sh section, links expected", tagged, map[string]string{"nvlinks": "18"}, "", false, "nvidia-smi nvlink --status lists no GPU with NVLink, 18 active links per GPU expected"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, c.params, 1, 1, c.file)
			if c.err != "" {
				assert.Assert(t, strings.Contains(p.Error, c.err), p.Error)
				assert.Equal(t, len(p.Checks), 0, "%+v", p.Checks)
				return
			}
			assert.Equal(t, p.Error, "")
			var ch *result.Check
			for i := range p.Checks {
				if p.Checks[i].Name == "NVLink" {
					ch = &p.Checks[i]
				}
			}
			assert.Assert(t, ch != nil, "%+v", p.Checks)
			assert.Equal(t, ch.OK, c.ok, ch.Message)
			assert.Equal(t, ch.Warn, false)
			if !c.ok {
				assert.Equal(t, ch.Code, "GA-NVLINK-INACTIVE")
			}
			assert.Assert(t, strings.Contains(ch.Message, c.msg), ch.Message)
		})
	}
}

// An unprivileged pod: dmesg is denied and journalctl finds no journal
// (it says so and matches nothing). XIDs were not looked for: a warn,
// not "no fatal XID".
func TestKernelLogUnreadable(t *testing.T) {
	tmp := t.TempDir()
	lines := collect(t, tmp, "0", "node-a", filepath.Join(h200, "nvidia-smi-q-x.xml"),
		[2]string{"dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1\n"},
		[2]string{"journalctl", "echo 'No journal files were found.'\n"})
	path := filepath.Join(tmp, "node.log")
	assert.NilError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "node",
		Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}}, Outputs: []plan.Output{{Step: "node", Log: path}}})
	assert.NilError(t, err)
	x := failed(p)["XID"]
	assert.Assert(t, x.Warn, "%+v", p.Checks)
	assert.Equal(t, x.Code, "GA-TOOL-MISSING")
	assert.Assert(t, strings.Contains(x.Message, "XIDs not checked"), x.Message)
}

// A node whose collection passes maxNodeBytes (a hostile log: 20 MiB of
// one section) is an error naming it, and what is kept stays bounded.
func TestNodeOutputBounded(t *testing.T) {
	tmp := t.TempDir()
	lines := collect(t, tmp, "0", "node-a", filepath.Join(h200, "nvidia-smi-q-x.xml"))
	big := strings.Repeat("node-a|nvsmi-csv|"+strings.Repeat("x", 1000)+"\n", 20<<10)
	path := filepath.Join(tmp, "node.log")
	assert.NilError(t, os.WriteFile(path, []byte(strings.Join(lines[:2], "\n")+"\n"+big+strings.Join(lines[2:], "\n")+"\n"), 0o644))
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "node",
		Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}}, Outputs: []plan.Output{{Step: "node", Log: path}}})
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(p.Error, "node node-a's collection is over 16 MiB"), p.Error)
}

// Under Kubernetes the checks name the Node the pod ran on
// (GPUACCEPT_NODE_NAME, from the downward API), which is what
// --taint-on-fail marks, not the pod's DNS name in GPUACCEPT_HOSTS.
func TestCollectNamesTheNode(t *testing.T) {
	cmd := exec.Command("sh", "-c", Collect, "gpuaccept-health", "0")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "OMPI_COMM_WORLD_RANK=0", "GPUACCEPT_HOSTS=ga-run-0.ga-run.ns.svc", "GPUACCEPT_NODE_NAME=gpu-node-7"}
	out, err := cmd.CombinedOutput()
	assert.NilError(t, err, string(out))
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		assert.Assert(t, strings.HasPrefix(l, "gpu-node-7|"), l)
	}
}

// collect.sh on a node whose driver nvidia-smi cannot reach: each
// nvidia-smi section holds nvidia-smi's real message
// (testdata/field/health/nvidia-smi-driver-not-loaded) and exit status 9,
// as collect.sh's sec() tags them; the H200 node log's other sections
// are the recorded ones. No GPU is known bad: the test errs (fix the
// driver), the GPU count is a warning that names the message, and the
// nvlink section's message is no empty link list that passes.
func TestDriverNotReachableIsError(t *testing.T) {
	msg := strings.TrimSpace(readFile(t, "../../testdata/field/health/nvidia-smi-driver-not-loaded/nvidia-smi.txt"))
	rec := "../../testdata/recordings/h200x1-2026-12-01/node/baselined/suite/raw/health.node/node.log"
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(readFile(t, rec), "\n"), "\n") {
		switch sec := strings.SplitN(l, "|", 3)[1]; sec {
		case "nvsmi-xml", "nvsmi-csv", "nvlink":
			if strings.HasSuffix(l, "|@exit 0") {
				b.WriteString("vm|" + sec + "|" + msg + "\nvm|" + sec + "|@exit 9\n")
			}
		default:
			b.WriteString(l + "\n")
		}
	}
	log := filepath.Join(t.TempDir(), "node.log")
	assert.NilError(t, os.WriteFile(log, []byte(b.String()), 0o644))
	p := parse(t, nil, 1, 1, log)
	assert.Assert(t, strings.Contains(p.Error, "nvsmi-xml could not run (setup, not hardware): NVIDIA-SMI has failed"), p.Error)
	fs := failed(p)
	c, ok := fs["GPU count"]
	assert.Assert(t, ok, "%+v", p.Checks)
	assert.Assert(t, c.Warn && strings.Contains(c.Message, "no GPU could be counted, 1 GPU expected: nvsmi-xml: NVIDIA-SMI has failed"), "%+v", c)
	for _, c := range p.Checks {
		assert.Assert(t, c.Name != "NVLink", "nvlink --status printed only the failure: %+v", c)
		assert.Assert(t, c.OK || c.Warn, "no check fails: %+v", c)
	}
}
