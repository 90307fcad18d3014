package ibperf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
)

// seed is the replay folder made of seed 004's recorded outputs.
const seed = "../../testdata/recordings/mi355x-seed004/multinode/raw/"

var twoNodes = plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}, Hosts: []string{"192.0.2.11", "192.0.2.12"}}

// The seed's command lines (T8, T9), planned from a NIC map.
func TestPlan(t *testing.T) {
	for _, c := range []struct {
		name   string
		test   string
		params map[string]string
		want   []plan.Step
	}{
		{"T8 host memory, one pair as in seed 004", "write_bw",
			map[string]string{"pairs": "ionic_7:ionic_1", "gid_index": "1", "qps": "4", "iters": "5000", "port": "10000", "out_json": "false"},
			[]plan.Step{
				{Name: "server.0", Role: "server", Argv: strings.Fields("ib_write_bw -d ionic_7 -p 10000 -x 1 -q 4 -n 5000 -a -F -b --report_gbits"), Procs: 1, ProcsPerNode: 1, ReadyMarker: ReadyMarker},
				{Name: "client.0", Role: "client", Argv: strings.Fields("ib_write_bw -d ionic_1 -p 10000 -x 1 -q 4 -n 5000 -a -F -b --report_gbits 192.0.2.11"), Procs: 1, ProcsPerNode: 1, Host: 1},
			}},
		{"T9 GPUDirect, two pairs at once", "write_bw_gdr",
			map[string]string{"pairs": "ionic_1:ionic_1,ionic_2:ionic_2", "gid_index": "1", "qps": "4", "tclass": "104", "ib_port": "1", "port": "5001", "gpus": "1,2", "bindir": "/opt/perftest/bin"},
			[]plan.Step{
				{Name: "server.0", Role: "server", Argv: strings.Fields("/opt/perftest/bin/ib_write_bw -d ionic_1 -p 5001 -i 1 -x 1 -q 4 --tclass 104 -a -F -b --report_gbits --use_rocm=1 --out_json --out_json_file=server.0.json"), Procs: 1, ProcsPerNode: 1, ReadyMarker: ReadyMarker, Files: []string{"server.0.json"}},
				{Name: "server.1", Role: "server", Argv: strings.Fields("/opt/perftest/bin/ib_write_bw -d ionic_2 -p 5002 -i 1 -x 1 -q 4 --tclass 104 -a -F -b --report_gbits --use_rocm=2 --out_json --out_json_file=server.1.json"), Procs: 1, ProcsPerNode: 1, ReadyMarker: ReadyMarker, Files: []string{"server.1.json"}},
				{Name: "client.0", Role: "client", Argv: strings.Fields("/opt/perftest/bin/ib_write_bw -d ionic_1 -p 5001 -i 1 -x 1 -q 4 --tclass 104 -a -F -b --report_gbits --use_rocm=1 --out_json --out_json_file=client.0.json 192.0.2.11"), Procs: 1, ProcsPerNode: 1, Host: 1, ReadyMarker: clientReady, Files: []string{"client.0.json"}},
				{Name: "client.1", Role: "client", Argv: strings.Fields("/opt/perftest/bin/ib_write_bw -d ionic_2 -p 5002 -i 1 -x 1 -q 4 --tclass 104 -a -F -b --report_gbits --use_rocm=2 --out_json --out_json_file=client.1.json 192.0.2.11"), Procs: 1, ProcsPerNode: 1, Host: 1, Files: []string{"client.1.json"}},
			}},
		{"CUDA dmabuf, one size, duration", "write_bw_gdr",
			map[string]string{"pairs": "mlx5_0", "gdr": "cuda_dmabuf", "size": "64K", "duration": "10", "bidirectional": "false", "out_json": "false", "cpu_util": "true"},
			[]plan.Step{
				{Name: "server.0", Role: "server", Argv: strings.Fields("ib_write_bw -d mlx5_0 -p 18515 -s 65536 -D 10 -F --report_gbits --cpu_util --use_cuda=0 --use_cuda_dmabuf"), Procs: 1, ProcsPerNode: 1, ReadyMarker: ReadyMarker},
				{Name: "client.0", Role: "client", Argv: strings.Fields("ib_write_bw -d mlx5_0 -p 18515 -s 65536 -D 10 -F --report_gbits --cpu_util --use_cuda=0 --use_cuda_dmabuf 192.0.2.11"), Procs: 1, ProcsPerNode: 1, Host: 1},
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: c.test, Params: c.params, Topology: twoNodes})
			assert.NilError(t, err)
			assert.NilError(t, p.Validate())
			assert.DeepEqual(t, p.Steps, c.want)
		})
	}
}

// Every test declares what the framework relies on, and its plans keep
// to it: the HCA map parameter, the pair label its metrics carry, and the
// server and client roles its steps are named by (pluginapi's checks, which
// the host makes on every description and plan).
func TestDeclaresCapabilities(t *testing.T) {
	d, err := Plugin{}.Describe(context.Background())
	assert.NilError(t, err)
	assert.NilError(t, d.Check(PluginName))
	for _, ti := range d.Tests {
		assert.Equal(t, ti.HCAMapParam, "pairs", ti.Name)
		assert.Equal(t, ti.PairLabel, "pair", ti.Name)
		assert.DeepEqual(t, ti.Roles, []string{"server", "client"})
		p, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: ti.Name, Params: map[string]string{"pairs": "mlx5_0:mlx5_1,mlx5_2:mlx5_3"}, Topology: twoNodes})
		assert.NilError(t, err)
		assert.NilError(t, pluginapi.CheckRoles(p, ti.Roles), ti.Name)
	}
}

func TestPlanErrors(t *testing.T) {
	for _, c := range []struct {
		params map[string]string
		topo   plan.Topology
		want   string
	}{
		{nil, twoNodes, "no NIC pairs: set parameter pairs"},
		{map[string]string{"pairs": "ionic 7"}, twoNodes, `pairs: "ionic 7" is not SERVER_HCA:CLIENT_HCA`},
		{map[string]string{"pairs": "ionic_0:ionic_0,ionic_1,ionic_0"}, twoNodes, `pairs: "ionic_0" is listed twice`},
		{map[string]string{"pairs": "a", "port": "70000"}, twoNodes, "parameter port"},
		{map[string]string{"pairs": "a", "gdr": "opencl"}, twoNodes, "parameter gdr"},
		{map[string]string{"pairs": "a", "iters": "5", "duration": "5"}, twoNodes, "give one"},
		{map[string]string{"pairs": "a"}, plan.Topology{Scope: plan.Scope{Nodes: 3, GPUsPerNode: 8}}, "one node (loopback) or two nodes"},
		{map[string]string{"pairs": "a", "qp": "4"}, twoNodes, `unknown parameter "qp"`},
	} {
		_, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "write_bw", Params: c.params, Topology: c.topo})
		assert.ErrorContains(t, err, c.want)
	}
	_, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "atomic_bw", Topology: twoNodes})
	assert.ErrorContains(t, err, "unknown test ibperf.atomic_bw")
}

func TestPlanNICsAndAddress(t *testing.T) {
	p, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "write_bw", Params: map[string]string{"out_json": "false"},
		Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 8}, NICs: []string{"mlx5_0", "mlx5_1"}}})
	assert.NilError(t, err)
	assert.Equal(t, len(p.Steps), 4)
	assert.Equal(t, p.Steps[3].Argv[len(p.Steps[3].Argv)-1], "localhost", "one node: a loopback between two HCAs")
	assert.Equal(t, p.Steps[3].Host, 0)
	p, err = Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "write_bw", Params: map[string]string{"pairs": "a", "server_addr": "10.0.0.1"}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}})
	assert.NilError(t, err)
	assert.Equal(t, p.Steps[1].Argv[len(p.Steps[1].Argv)-1], "10.0.0.1")
}

// renderOutput writes what ParseText found, for golden files.
func renderOutput(o *Output) string {
	var b strings.Builder
	fmt.Fprintf(&b, "test=%q bidirectional=%v device=%q qps=%d gid=%d link=%q gpu=%q gpuid=%d gpumem=%v unit=%q nopeak=%v cpu=%v waiting=%v closed=%v\n",
		o.Test, o.Bidirectional, o.Device, o.QPs, o.GIDIndex, o.LinkType, o.GPU, o.GPUID, o.GPUMemory, o.Unit, o.NoPeak, o.CPUUtil, o.Waiting, o.Closed)
	for _, r := range o.Rows {
		fmt.Fprintf(&b, "row line=%d size=%d iters=%d peak=%g avg=%g rate=%g cpu=%g\n", r.Line, r.Size, r.Iters, r.Peak, r.Avg, r.MsgRate, r.CPU)
	}
	for _, d := range o.Errors {
		fmt.Fprintf(&b, "error %d: %s\n", d.Line, d.Text)
	}
	for _, d := range o.Warnings {
		fmt.Fprintf(&b, "warning %d: %s\n", d.Line, d.Text)
	}
	return b.String()
}

func parseFile(t *testing.T, path string) *Output {
	t.Helper()
	f, err := os.Open(path)
	assert.NilError(t, err)
	defer f.Close()
	o, err := ParseText(f, filepath.Base(path))
	assert.NilError(t, err)
	return o
}

// Every perftest output of seed 004 and of the public issues.
func TestParseTextGolden(t *testing.T) {
	files := []string{
		seed + "ibperf.write_bw/server.0.log", seed + "ibperf.write_bw/client.0.log",
		seed + "ibperf.write_bw_gdr/server.0.log", seed + "ibperf.write_bw_gdr/client.0.log",
	}
	issues, err := filepath.Glob("testdata/issues/*.txt")
	assert.NilError(t, err)
	assert.Assert(t, len(issues) >= 4)
	for _, f := range append(files, issues...) {
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		if strings.HasPrefix(f, seed) {
			name = "seed004-" + filepath.Base(filepath.Dir(f)) + "-" + name
		}
		t.Run(name, func(t *testing.T) {
			golden.Assert(t, renderOutput(parseFile(t, f)), name+".golden")
		})
	}
}

func TestParseTextFacts(t *testing.T) {
	o := parseFile(t, seed+"ibperf.write_bw_gdr/client.0.log")
	assert.Equal(t, o.GPU, "AMD Instinct MI355X")
	assert.Equal(t, o.GPUID, 1)
	assert.Assert(t, o.GPUMemory && o.Bidirectional && o.Closed)
	assert.Equal(t, len(o.Rows), 23, "2 B .. 8 MiB")
	assert.Equal(t, o.Rows[22].Avg, 697.97)

	o = parseFile(t, "testdata/issues/perftest-pr228-couldnt-connect.txt")
	assert.Equal(t, len(o.Errors), 2)
	assert.Assert(t, strings.HasPrefix(o.Errors[0].Text, "Couldn't connect to 192.168.125.211:18515"))

	o = parseFile(t, "testdata/issues/perftest-issue132-write-bw-a-gbits.txt")
	assert.Equal(t, len(o.Rows), 4, "2 to 16 B; the 32 B row is cut")
	assert.Equal(t, o.Rows[0].Avg, 0.042185)
	assert.Assert(t, !o.Closed)
	assert.Equal(t, len(o.Errors), 1, "the cut row")

	o = parseFile(t, "testdata/issues/perftest-issue234-write-bw-D-mbsec-server.txt")
	assert.Assert(t, o.Waiting)
	assert.Equal(t, o.Unit, "MB/sec")
	assert.Equal(t, o.GbPerSec(1000), 8.388608, "perftest's MB is 2^20 bytes")

	o = parseFile(t, "testdata/issues/ngc-multinode-perf-issue108-write-bw-D-bidir.txt")
	assert.Assert(t, o.NoPeak && o.Bidirectional)
	assert.Equal(t, o.QPs, 2)
}

func edited(t *testing.T, src, name string, edit func(string) string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	assert.NilError(t, err)
	out := edit(string(data))
	assert.Assert(t, out != string(data), "the edit changed nothing")
	p := filepath.Join(t.TempDir(), name)
	assert.NilError(t, os.WriteFile(p, []byte(out), 0o644))
	return p
}

var rowRE = regexp.MustCompile(`(?m)^(\d+) (\d+) (\S+) (\S+) (\S+)$`)

// Other perftest forms, made from the seed's real client output: MiB/sec
// (no --report_gbits), the CPU_Util column (--cpu_util), and -D (the
// WARNING line, one size, peak 0).
func TestParseTextForms(t *testing.T) {
	src := seed + "ibperf.write_bw/client.0.log"
	mib := func(s string) string {
		v, _ := strconv.ParseFloat(s, 64)
		return strconv.FormatFloat(v*1e9/8/1048576, 'f', 2, 64)
	}
	t.Run("MiB/sec", func(t *testing.T) {
		p := edited(t, src, "c.log", func(s string) string {
			s = strings.Replace(s, "BW peak[Gb/sec] BW average[Gb/sec]", "BW peak[MiB/sec] BW average[MiB/sec]", 1)
			return rowRE.ReplaceAllStringFunc(s, func(r string) string {
				f := strings.Fields(r)
				return strings.Join([]string{f[0], f[1], mib(f[2]), mib(f[3]), f[4]}, " ")
			})
		})
		o := parseFile(t, p)
		assert.Equal(t, o.Unit, "MiB/sec")
		got := o.GbPerSec(o.Rows[22].Avg)
		assert.Assert(t, got > 779.20 && got < 779.22, "%v", got)
	})
	t.Run("cpu_util", func(t *testing.T) {
		p := edited(t, src, "c.log", func(s string) string {
			s = strings.Replace(s, "MsgRate[Mpps]", "MsgRate[Mpps]    CPU_Util[%]", 1)
			return rowRE.ReplaceAllString(s, "$0\t    12.50")
		})
		o := parseFile(t, p)
		assert.Assert(t, o.CPUUtil)
		assert.Equal(t, o.Rows[3].CPU, 12.5)
		assert.Equal(t, len(o.Errors), 0)
	})
	t.Run("-D duration", func(t *testing.T) {
		p := edited(t, src, "c.log", func(s string) string {
			s = " WARNING: BW peak won't be measured in this run.\n" + s
			rows := rowRE.FindAllString(s, -1)
			for _, r := range rows[:len(rows)-1] {
				s = strings.Replace(s, r+"\n", "", 1)
			}
			return strings.Replace(s, "8388608 20000 779.21 779.21", "8388608 1394123 0.00 779.21", 1)
		})
		pp := parseRun(t, "write_bw", map[string]string{"pairs": "ionic_7:ionic_1", "size": "8M", "duration": "10", "out_json": "false"}, "", p)
		assert.Equal(t, pp.Error, "")
		for _, m := range pp.Metrics {
			assert.Assert(t, m.Name != "bw_peak", "no peak in -D mode")
		}
	})
}

func parseRun(t *testing.T, test string, params map[string]string, server, client string) result.Parsed {
	t.Helper()
	var outs []plan.Output
	if server != "" {
		outs = append(outs, plan.Output{Step: "server.0", Role: "server", Log: server})
	}
	if client != "" {
		outs = append(outs, plan.Output{Step: "client.0", Role: "client", Log: client})
	}
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: test, Params: params, Topology: twoNodes, Outputs: outs})
	assert.NilError(t, err)
	return p
}

func metricAt(p result.Parsed, name string, size int64) float64 {
	for _, m := range p.Metrics {
		if m.Name == name && m.Size == size {
			return m.Value
		}
	}
	return -1
}

func TestParseSeed(t *testing.T) {
	for _, c := range []struct {
		test, dir, pairs string
		avg              float64
		gpu              string
	}{
		{"write_bw", "ibperf.write_bw", "ionic_7:ionic_1", 779.21, ""},
		{"write_bw_gdr", "ibperf.write_bw_gdr", "ionic_1:ionic_1", 697.97, "AMD Instinct MI355X"},
	} {
		t.Run(c.test, func(t *testing.T) {
			p := parseRun(t, c.test, map[string]string{"pairs": c.pairs, "out_json": "false"}, seed+c.dir+"/server.0.log", seed+c.dir+"/client.0.log")
			assert.Equal(t, p.Error, "")
			assert.Equal(t, metricAt(p, "bw_avg", 8<<20), c.avg)
			assert.Equal(t, p.Info["gpu"], c.gpu)
			assert.Equal(t, p.Info["hca_pairs"], c.pairs)
			for _, ch := range p.Checks {
				assert.Assert(t, ch.OK, "%+v", ch)
			}
			// Offline, each log alone (gpuaccept check).
			p = parseRun(t, c.test, nil, "", seed+c.dir+"/client.0.log")
			assert.Equal(t, p.Error, "")
			assert.Equal(t, metricAt(p, "bw_avg", 8<<20), c.avg)
		})
	}
}

// Degraded variants of the seed's recordings: each must fail or error.
func TestDegraded(t *testing.T) {
	host, gdr := seed+"ibperf.write_bw/", seed+"ibperf.write_bw_gdr/"
	for _, c := range []struct {
		name, test, dir, pairs, side string
		edit                         func(string) string
		check                        string // failed check, or "" for an error
		want                         string
	}{
		{"client cannot connect", "write_bw", host, "ionic_7:ionic_1", "client", func(s string) string {
			return "Couldn't connect to 192.0.2.11:10000\nUnable to open file descriptor for socket connection Unable to init the socket connection\n"
		}, "", "pair ionic_7:ionic_1 client: client.0.log:1: Couldn't connect to 192.0.2.11:10000"},
		{"server cannot listen", "write_bw", host, "ionic_7:ionic_1", "server", func(s string) string {
			return strings.Replace(s, "************************************\n* Waiting", "Couldn't listen to port 10000\n************************************\n* Waiting", 1)
		}, "", "Couldn't listen to port 10000"},
		{"completion with error", "write_bw", host, "ionic_7:ionic_1", "client", func(s string) string {
			return strings.Replace(s, "16384 20000 773.59 773.21 5.899086\n", " Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\n", 1)
		}, "", "Completion with error at client"},
		{"failed to exchange data", "write_bw", host, "ionic_7:ionic_1", "server", func(s string) string {
			return strings.Replace(s, "Completed:", " Failed to exchange data between server and clients\nCompleted:", 1)
		}, "", "Failed to exchange data"},
		{"GDR run in host memory", "write_bw_gdr", gdr, "ionic_1:ionic_1", "client", func(s string) string {
			// Every GPU line goes: a host-memory run allocates no GPU buffer.
			s = regexp.MustCompile(`(?m)^(Using ROCm Device|allocated|deallocating).*\n`).ReplaceAllString(s, "")
			return strings.Replace(s, "Use ROCm memory : ON\n", "", 1)
		}, "GPU memory ionic_1:ionic_1 client", "client.0 used host memory: not a GPUDirect RDMA run"},
		{"GDR server in host memory", "write_bw_gdr", gdr, "ionic_1:ionic_1", "server", func(s string) string {
			s = regexp.MustCompile(`(?m)^(Using ROCm Device|allocated|deallocating).*\n`).ReplaceAllString(s, "")
			return strings.Replace(s, "Use ROCm memory : ON\n", "", 1)
		}, "GPU memory ionic_1:ionic_1 server", "server.0 used host memory"},
		{"GDR client completion error", "write_bw_gdr", gdr, "ionic_1:ionic_1", "client", func(s string) string {
			return strings.Replace(s, "8388608 20000 698.41 697.97 0.010401\n", " Completion with error at client\n", 1)
		}, "", "Completion with error at client"},
		{"unidirectional", "write_bw", host, "ionic_7:ionic_1", "client", func(s string) string {
			return strings.Replace(s, "RDMA_Write Bidirectional BW Test", "RDMA_Write BW Test", 1)
		}, "direction ionic_7:ionic_1", "bidirectional=true was asked"},
		{"another HCA", "write_bw", host, "ionic_7:ionic_1", "client", func(s string) string {
			return strings.Replace(s, "Device : ionic_1", "Device : ionic_3", 1)
		}, "HCA ionic_7:ionic_1 client", "ran on ionic_3, planned ionic_1"},
		{"sweep cut short", "write_bw", host, "ionic_7:ionic_1", "client", func(s string) string {
			return regexp.MustCompile(`(?m)^(2097152|4194304|8388608) .*\n`).ReplaceAllString(s, "")
		}, "", "the -a sweep ends at 1 MiB, not 8 MiB: truncated"},
		{"killed inside the table", "write_bw", host, "ionic_7:ionic_1", "client", func(s string) string {
			return s[:strings.Index(s, "65536 20000")]
		}, "", "ends inside the result table: output cut short"},
	} {
		t.Run(c.name, func(t *testing.T) {
			server, client := c.dir+"server.0.log", c.dir+"client.0.log"
			if c.side == "client" {
				client = edited(t, client, "client.0.log", c.edit)
			} else {
				server = edited(t, server, "server.0.log", c.edit)
			}
			p := parseRun(t, c.test, map[string]string{"pairs": c.pairs, "out_json": "false"}, server, client)
			if c.check == "" {
				assert.Assert(t, strings.Contains(p.Error, c.want), p.Error)
				return
			}
			var found *result.Check
			for i := range p.Checks {
				if p.Checks[i].Name == c.check {
					found = &p.Checks[i]
				}
			}
			assert.Assert(t, found != nil && !found.OK, "%+v", p.Checks)
			assert.Assert(t, strings.Contains(found.Message, c.want), found.Message)
		})
	}
}

// A slow pair among several is a finding: two pairs, the second made from
// the first with its bandwidth and message rate scaled down (both, as a
// slower link moves fewer messages: the unit check reads BW against
// MsgRate).
func TestPairBalance(t *testing.T) {
	src := seed + "ibperf.write_bw/client.0.log"
	slow := edited(t, src, "client.1.log", func(s string) string {
		return rowRE.ReplaceAllStringFunc(s, func(r string) string {
			f := strings.Fields(r)
			v, _ := strconv.ParseFloat(f[3], 64)
			f[3] = strconv.FormatFloat(v*0.7, 'f', 2, 64)
			v, _ = strconv.ParseFloat(f[4], 64)
			f[4] = strconv.FormatFloat(v*0.7, 'f', 6, 64)
			return strings.Join(f, " ")
		})
	})
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "write_bw", Topology: twoNodes,
		Params: map[string]string{"pairs": "ionic_7:ionic_1,ionic_6:ionic_2", "out_json": "false"},
		Outputs: []plan.Output{{Step: "client.0", Role: "client", Log: src}, {Step: "client.1", Role: "client", Log: slow},
			{Step: "server.0", Role: "server", Log: seed + "ibperf.write_bw/server.0.log"}, {Step: "server.1", Role: "server", Log: seed + "ibperf.write_bw/server.0.log"}}})
	assert.NilError(t, err)
	assert.Equal(t, p.Error, "")
	var bal *result.Check
	for i := range p.Checks {
		if p.Checks[i].Name == "pair balance" {
			bal = &p.Checks[i]
		}
	}
	assert.Assert(t, bal != nil && !bal.OK, "%+v", p.Checks)
}

// Pairs tied at the top: the message names the first by name, every time
// (map order must not choose it).
func TestPairBalanceTieNamesFirst(t *testing.T) {
	best := map[string]float64{"ionic_7:ionic_1": 350, "ionic_6:ionic_2": 350, "ionic_5:ionic_3": 100}
	for range 50 {
		c := balance(best)
		assert.DeepEqual(t, c, result.Check{Name: "pair balance",
			Message: "below 90% of the best pair (ionic_6:ionic_2 350.0 Gb/s): ionic_5:ionic_3 100.0 Gb/s"})
	}
}

// The --out_json report, in perftest's own layout (write_test_info_to_file
// and write_bw_report_to_file in src/perftest_parameters.c) with the
// seed's last size.
const seedJSON = `{
"test_info": {
"test": "RDMA_Write_Bidirectional_BW_Test",
"Dual_port": "OFF",
"Device": "ionic_1",
"Number_of_qps": 4,
"Transport_type": "IB"
},
"results": {
"MsgSize": 8388608,
"n_iterations": 20000,
"BW_peak": 779.21,
"BW_average": 779.21,
"MsgRate": 0.011611
}
}
`

func TestParseJSON(t *testing.T) {
	o, err := ParseJSON(strings.NewReader(seedJSON), "client.0.json")
	assert.NilError(t, err)
	assert.Assert(t, o.Bidirectional)
	assert.Equal(t, o.Device, "ionic_1")
	assert.DeepEqual(t, o.Rows, []Row{{Size: 8 << 20, Iters: 20000, Peak: 779.21, Avg: 779.21, MsgRate: 0.011611, CPU: -1}})

	dir := t.TempDir()
	js := filepath.Join(dir, "client.0.json")
	assert.NilError(t, os.WriteFile(js, []byte(seedJSON), 0o644))
	params := map[string]string{"pairs": "ionic_7:ionic_1"}
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "write_bw", Params: params, Topology: twoNodes, Outputs: []plan.Output{
		{Step: "server.0", Role: "server", Log: seed + "ibperf.write_bw/server.0.log"},
		{Step: "client.0", Role: "client", Log: seed + "ibperf.write_bw/client.0.log", Files: map[string]string{"client.0.json": js}}}})
	assert.NilError(t, err)
	assert.Equal(t, p.Error, "")

	bad := filepath.Join(dir, "bad.json")
	assert.NilError(t, os.WriteFile(bad, []byte(strings.Replace(seedJSON, `"BW_average": 779.21`, `"BW_average": 479.21`, 1)), 0o644))
	p, err = Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "write_bw", Params: params, Topology: twoNodes, Outputs: []plan.Output{
		{Step: "server.0", Role: "server", Log: seed + "ibperf.write_bw/server.0.log"},
		{Step: "client.0", Role: "client", Log: seed + "ibperf.write_bw/client.0.log", Files: map[string]string{"client.0.json": bad}}}})
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(p.Error, "disagree: BW average at 8 MiB is 779.21 in the text, 479.21 in the JSON"), p.Error)

	_, err = ParseJSON(strings.NewReader(`{"test_info": {}}`), "x.json")
	assert.ErrorContains(t, err, "x.json: no results")
}

// fuzzSeeds are the real outputs the fuzzers start from: the seed's, every
// public one (units, errors naming HCAs, missing devices, a QP that cannot
// reach RTR, CUDA's GPU lines, a script's joined tails and servers no
// client reached), and the seed's server headed MB/sec over Gb/s values.
func fuzzSeeds(f *testing.F) [][]byte {
	paths, _ := filepath.Glob("testdata/issues/*.txt")
	more, _ := filepath.Glob("testdata/issues/*/*.log")
	fieldLogs, _ := filepath.Glob(field + "*/*.log")
	paths = append(append(append([]string{seed + "ibperf.write_bw/server.0.log", seed + "ibperf.write_bw_gdr/client.0.log"}, paths...), more...), fieldLogs...)
	var out [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, data)
	}
	return append(out, []byte(strings.Replace(string(out[0]), "BW peak[Gb/sec] BW average[Gb/sec]", "BW peak[MB/sec] BW average[MB/sec]", 1)))
}

func FuzzParseText(f *testing.F) {
	for _, data := range fuzzSeeds(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseText(strings.NewReader(string(data)), "f.log")
		if err != nil || o == nil {
			t.Fatalf("%v %v", o, err)
		}
		for _, r := range o.Rows {
			if r.Size < 0 || r.Iters < 0 {
				t.Fatalf("negative row %+v", r)
			}
			switch RowUnit(r) {
			case "", unitGb, unitMiB, unitNone:
			default:
				t.Fatalf("row unit %q", RowUnit(r))
			}
		}
		if o.Unit != o.HeaderUnit && o.Unit != unitGb && o.Unit != unitMiB {
			t.Fatalf("unit %q from header %q", o.Unit, o.HeaderUnit)
		}
		for _, e := range o.Errors {
			_ = NamedDevice(e.Text)
		}
		for _, d := range o.NoClient {
			if d.Line <= 0 || !strings.HasPrefix(d.Text, "no client connected: ") {
				t.Fatalf("no-client diag %+v", d)
			}
		}
		if o.Joined && len(o.Rows) < 2 || o.GPUMemType == cudaMalloc && o.GPUMemory || o.GPUMemory != (o.GPULine > 0) && o.GPUMemType != cudaMalloc {
			t.Fatalf("joined=%v rows=%d memtype=%q gpumem=%v gpuline=%d", o.Joined, len(o.Rows), o.GPUMemType, o.GPUMemory, o.GPULine)
		}
	})
}

func FuzzParseJSON(f *testing.F) {
	f.Add([]byte(seedJSON))
	f.Add([]byte(`{"results": {"MsgSize": 65536,\nsl: 0,\n"BW_average": 1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseJSON(strings.NewReader(string(data)), "f.json")
		if o == nil || err == nil && len(o.Rows) != 1 {
			t.Fatalf("%v %v", o, err)
		}
	})
}

// FuzzParse runs the whole Parse on arbitrary server and client logs of
// two pairs, planned and judged offline (where error lines go to the pair
// of the HCA they name).
func FuzzParse(f *testing.F) {
	s, _ := os.ReadFile(seed + "ibperf.write_bw/server.0.log")
	c, _ := os.ReadFile(seed + "ibperf.write_bw/client.0.log")
	seeds := fuzzSeeds(f)
	f.Add(s, c, seeds[len(seeds)-1])
	for _, d := range seeds {
		f.Add(s, c, d)
	}
	f.Fuzz(func(t *testing.T, server, client, other []byte) {
		dir := t.TempDir()
		var logs []string
		for i, data := range [][]byte{server, client, other, client} {
			p := filepath.Join(dir, []string{"server.0.log", "client.0.log", "server.1.log", "client.1.log"}[i])
			if os.WriteFile(p, data, 0o644) != nil {
				t.Skip()
			}
			logs = append(logs, p)
		}
		for _, params := range []map[string]string{{"pairs": "a:b,ionic_7:ionic_1", "out_json": "false"}, nil} {
			p := parseOutputs(t, params, logs...)
			if p.Error == "" && len(p.Metrics) == 0 {
				t.Fatal("no error and no metrics")
			}
		}
	})
}
