package mori

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
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
const seed = "../../testdata/recordings/mi355x-seed004/"

var (
	intraLog = seed + "singlenode/raw/mori.ep_intranode/ep_intranode.log"
	interLog = seed + "multinode/raw/mori.ep_internode/ep_internode.log"
	oneNode  = plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 8}}
	twoNodes = plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}, Hosts: []string{"node0", "node1"}}
)

func TestPlan(t *testing.T) {
	p, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "ep_intranode", Topology: oneNode,
		Params: map[string]string{"moridir": "/opt/mori", "args": "--max-tokens 4096", "env.MORI_SHMEM_HEAP_SIZE": "6G"}})
	assert.NilError(t, err)
	assert.DeepEqual(t, p.Steps, []plan.Step{{Name: "ep_intranode", Argv: []string{"python3", "/opt/mori/tests/python/ops/bench_dispatch_combine.py", "--max-tokens", "4096"},
		Env: map[string]string{"MORI_PERF_OUT": PerfOut, "MORI_SHMEM_HEAP_SIZE": "6G"}, Procs: 1, ProcsPerNode: 1, Files: []string{PerfOut}}})

	p, err = Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "ep_internode", Topology: twoNodes, Params: map[string]string{"perf_out": "false"}})
	assert.NilError(t, err)
	assert.NilError(t, p.Validate())
	assert.DeepEqual(t, p.Steps, []plan.Step{{Name: "ep_internode",
		Argv: []string{"sh", "-c", rankFromStarter, "sh", "python3", "examples/ops/dispatch_combine/test_dispatch_combine_internode.py"},
		Env:  map[string]string{"WORLD_SIZE": "2", "GPU_PER_NODE": "8", "MASTER_ADDR": "node0", "MASTER_PORT": "29500"}, Procs: 2, ProcsPerNode: 1, MPI: true}})

	p, err = Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "ep_intranode", Topology: oneNode, Params: map[string]string{"cmd": "./run_intra_mori.sh", "perf_out": "false"}})
	assert.NilError(t, err)
	assert.DeepEqual(t, p.Steps[0].Argv, []string{"./run_intra_mori.sh"})

	for _, c := range []struct {
		test   string
		topo   plan.Topology
		params map[string]string
		want   string
	}{
		{"ep_intranode", twoNodes, nil, "runs on one node"},
		{"ep_internode", oneNode, nil, "needs two nodes"},
		{"ep_lowlatency", oneNode, nil, "unknown test mori.ep_lowlatency"},
		{"ep_intranode", oneNode, map[string]string{"rank_tolerance": "120"}, "parameter rank_tolerance"},
		{"ep_intranode", oneNode, map[string]string{"ranks": "8"}, `unknown parameter "ranks"`},
	} {
		_, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: c.test, Topology: c.topo, Params: c.params})
		assert.ErrorContains(t, err, c.want)
	}
}

func parse(t *testing.T, test string, topo plan.Topology, params map[string]string, log string, files map[string]string) result.Parsed {
	t.Helper()
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: test, Topology: topo, Params: params,
		Outputs: []plan.Output{{Step: test, Log: log, Files: files}}})
	assert.NilError(t, err)
	return p
}

func render(p result.Parsed) string {
	var b strings.Builder
	fmt.Fprintf(&b, "error: %q\n", p.Error)
	for _, c := range p.Checks {
		fmt.Fprintf(&b, "check %s: ok=%v %s\n", c.Name, c.OK, c.Message)
	}
	for _, d := range p.Diagnostics {
		fmt.Fprintf(&b, "diag %s %s: %s\n", d.Level, d.Source, d.Message)
	}
	for _, m := range p.Metrics {
		ls := make([]string, 0, len(m.Labels))
		for k, v := range m.Labels {
			ls = append(ls, k+"="+v)
		}
		sort.Strings(ls)
		fmt.Fprintf(&b, "%s %g %s %s\n", m.Name, m.Value, m.Unit, strings.Join(ls, ","))
	}
	return b.String()
}

// Seed 004's two Mori-EP outputs (T7, T10). No raw Mori-EP output was
// found in public issues (they quote summaries only, e.g. ROCm/mori#72).
func TestParseGolden(t *testing.T) {
	for _, c := range []struct {
		golden, test, log string
		topo              plan.Topology
	}{
		{"seed004-T7-ep_intranode", "ep_intranode", intraLog, oneNode},
		{"seed004-T10-ep_internode", "ep_internode", interLog, twoNodes},
	} {
		t.Run(c.golden, func(t *testing.T) {
			p := parse(t, c.test, c.topo, nil, c.log, nil)
			assert.Equal(t, p.Error, "")
			golden.Assert(t, render(p), c.golden+".golden")
		})
	}
}

func metric(p result.Parsed, name string, labels ...string) float64 {
	for _, m := range p.Metrics {
		if m.Name != name {
			continue
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			ok = ok && m.Labels[labels[i]] == labels[i+1]
		}
		if ok {
			return m.Value
		}
	}
	return -1
}

func TestParseSeedValues(t *testing.T) {
	p := parse(t, "ep_intranode", oneNode, nil, intraLog, nil)
	assert.Equal(t, metric(p, "bw", "phase", "dispatch", "stat", "best"), 368.67, "round 3")
	assert.Equal(t, metric(p, "lat", "phase", "dispatch", "stat", "best"), 842.7)
	assert.Equal(t, metric(p, "bw", "phase", "combine", "stat", "best"), 384.51, "round 6")
	assert.Equal(t, metric(p, "lat", "phase", "combine", "stat", "best"), 807.9)
	assert.Equal(t, metric(p, "e2e_lat", "stat", "best"), 1632.98, "round 4")
	for _, c := range p.Checks {
		assert.Assert(t, c.OK, "%+v", c)
	}

	p = parse(t, "ep_internode", twoNodes, nil, interLog, nil)
	assert.Equal(t, metric(p, "rdma_bw", "phase", "dispatch", "stat", "best"), 76.1)
	assert.Equal(t, metric(p, "lat", "phase", "combine", "stat", "average"), 1659.39)
	assert.Equal(t, metric(p, "ll_bw", "phase", "combine", "stat", "worst"), 261.58)
}

func edited(t *testing.T, src string, edit func(string) string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	assert.NilError(t, err)
	out := edit(string(data))
	assert.Assert(t, out != string(data), "the edit changed nothing")
	p := filepath.Join(t.TempDir(), filepath.Base(src))
	assert.NilError(t, os.WriteFile(p, []byte(out), 0o644))
	return p
}

var bwArrayRE = regexp.MustCompile(`bandwidth\(GB/s\) \[([^\]]*)\]`)

// slowRank scales one rank's bandwidth in every round of the dispatch
// section, as a rank on a degraded XGMI link would show.
func slowRank(s string, rank int, factor float64) string {
	combine := strings.Index(s, "Combine result:")
	head := bwArrayRE.ReplaceAllStringFunc(s[:combine], func(m string) string {
		in := bwArrayRE.FindStringSubmatch(m)[1]
		vs := strings.Split(in, ", ")
		v, _ := strconv.ParseFloat(vs[rank], 64)
		vs[rank] = strconv.FormatFloat(v*factor, 'f', 2, 64)
		return "bandwidth(GB/s) [" + strings.Join(vs, ", ") + "]"
	})
	return head + s[combine:]
}

// Degraded variants of the seed's recordings: each must fail or error.
func TestDegraded(t *testing.T) {
	for _, c := range []struct {
		name, test, src string
		topo            plan.Topology
		edit            func(string) string
		check           string
		want            string
	}{
		{"slow rank", "ep_intranode", intraLog, oneNode, func(s string) string { return slowRank(s, 3, 0.8) },
			"slow rank dispatch", "rank 3 29"},
		{"a rank missing", "ep_intranode", intraLog, oneNode, func(s string) string {
			return regexp.MustCompile(`, [0-9.]+\]`).ReplaceAllString(s, "]")
		}, "rank count", "7 ranks in the rounds, expected 8 (1x8)"},
		{"combine cut short", "ep_intranode", intraLog, oneNode, func(s string) string { return s[:strings.Index(s, "Round 5 duration(us) [808.7")] },
			"", "10 dispatch rounds, 5 combine rounds: output cut short"},
		{"gloo peers missing", "ep_intranode", intraLog, oneNode, func(s string) string {
			return strings.Replace(s, "Rank 5 is connected to 7 peer ranks", "Rank 5 is connected to 6 peer ranks", 1)
		}, "", "Rank 5 is connected to 6 peer ranks"},
		{"traceback", "ep_intranode", intraLog, oneNode, func(s string) string {
			return strings.Replace(s, "Combine result:", "Traceback (most recent call last):\nRuntimeError: HIP error: an illegal memory access was encountered\nCombine result:", 1)
		}, "", "Traceback"},
		{"inter-node table cut", "ep_internode", interLog, twoNodes, func(s string) string { return s[:strings.Index(s, "| Average | 70.66")] },
			"", "the combine table (line 11) has no average row: output cut short"},
		{"inter-node worst rank far off", "ep_internode", interLog, twoNodes, func(s string) string {
			return strings.Replace(s, "| Worst | 62.8 |", "| Worst | 31.4 |", 1)
		}, "rank spread dispatch", "58.7% below the best 76.10"},
		{"intra-node log judged as inter-node", "ep_internode", intraLog, twoNodes, func(s string) string { return s + "\n" }, "", "no dispatch table"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, c.test, c.topo, nil, edited(t, c.src, c.edit), nil)
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

// seedRecords are $MORI_PERF_OUT lines in the layout of Mori's
// tests/python/perf_report.py (record_perf, sort_keys=True) carrying the
// seed's numbers: the best round intra-node, best bandwidths and average
// latency inter-node.
const seedRecords = `{"category": "intra_ep", "commit": "", "date": "", "metrics": {"combine_bw_gbps": 384.51, "combine_lat_us": 807.9, "dispatch_bw_gbps": 368.67, "dispatch_lat_us": 842.7}, "params": {"dtype": "bfloat16", "world_size": 8}, "platform": "MI355X_AINIC", "python": "", "run_id": "", "ts": 1776961424.5}
{"category": "internode_ep", "commit": "", "date": "", "metrics": {"combine_ll_bw_gbps": 314.74, "combine_lat_us": 1659.39, "combine_rdma_bw_gbps": 77.4, "combine_xgmi_bw_gbps": 253.82, "dispatch_ll_bw_gbps": 308.6, "dispatch_lat_us": 1714.7, "dispatch_rdma_bw_gbps": 76.1, "dispatch_xgmi_bw_gbps": 248.88}, "params": {"world_size": 16}, "platform": "MI355X_AINIC", "python": "", "run_id": "", "ts": 1776962610.6}
`

func TestPerfReport(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, PerfOut)
	assert.NilError(t, os.WriteFile(js, []byte("not json\n"+seedRecords), 0o644))
	files := map[string]string{PerfOut: js}
	p := parse(t, "ep_intranode", oneNode, nil, intraLog, files)
	assert.Equal(t, p.Error, "")
	assert.Equal(t, p.Info["platform"], "MI355X_AINIC")
	assert.Equal(t, len(p.Diagnostics), 1, "the line that is no record")
	p = parse(t, "ep_internode", twoNodes, nil, interLog, files)
	assert.Equal(t, p.Error, "")

	t.Run("report only", func(t *testing.T) {
		empty := filepath.Join(dir, "empty.log")
		assert.NilError(t, os.WriteFile(empty, nil, 0o644))
		p := parse(t, "ep_intranode", oneNode, nil, empty, files)
		assert.Equal(t, p.Error, "")
		assert.Equal(t, metric(p, "bw", "phase", "combine", "stat", "best"), 384.51)
		p = parse(t, "ep_internode", twoNodes, nil, empty, files)
		assert.Equal(t, p.Error, "")
		assert.Equal(t, metric(p, "lat", "phase", "dispatch", "stat", "average"), 1714.7)
	})
	t.Run("disagreeing", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.jsonl")
		assert.NilError(t, os.WriteFile(bad, []byte(strings.Replace(seedRecords, `"dispatch_bw_gbps": 368.67`, `"dispatch_bw_gbps": 300.1`, 1)), 0o644))
		p := parse(t, "ep_intranode", oneNode, nil, intraLog, map[string]string{PerfOut: bad})
		assert.Assert(t, strings.Contains(p.Error, "disagree: dispatch best bw 368.67 GB/s in the text, 300.10 in the report"), p.Error)
	})
	t.Run("no record", func(t *testing.T) {
		_, _, err := ParseJSONL(strings.NewReader("{}\n[1]\n"), "x.jsonl")
		assert.ErrorContains(t, err, "x.jsonl: no perf record")
	})
}

func FuzzParseText(f *testing.F) {
	for _, p := range []string{intraLog, interLog} {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseText(strings.NewReader(string(data)), "f.log")
		if err != nil || o == nil {
			t.Fatal(err)
		}
		for _, c := range o.Configs {
			for _, r := range c.Dispatch {
				if len(r.BW) != len(r.Duration) {
					t.Fatalf("round with %d durations and %d bandwidths", len(r.Duration), len(r.BW))
				}
			}
		}
	})
}

func FuzzParseJSONL(f *testing.F) {
	f.Add([]byte(seedRecords))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, _, err := ParseJSONL(strings.NewReader(string(data)), "f.jsonl")
		if err == nil && len(recs) == 0 {
			t.Fatal("no records and no error")
		}
	})
}

// FuzzParse runs the whole Parse on arbitrary logs and reports.
func FuzzParse(f *testing.F) {
	for _, p := range []string{intraLog, interLog} {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data, []byte(seedRecords))
		}
	}
	f.Fuzz(func(t *testing.T, log, js []byte) {
		dir := t.TempDir()
		lp, jp := filepath.Join(dir, "x.log"), filepath.Join(dir, PerfOut)
		if os.WriteFile(lp, log, 0o644) != nil || os.WriteFile(jp, js, 0o644) != nil {
			t.Skip()
		}
		for _, test := range []string{"ep_intranode", "ep_internode"} {
			p := parse(t, test, twoNodes, nil, lp, map[string]string{PerfOut: jp})
			if p.Error == "" && len(p.Metrics) == 0 {
				t.Fatal("no error and no metrics")
			}
		}
	})
}

// The benchmark's own correctness check failing is wrong data: a failed
// data validation gate naming the line, whatever else the output lacks.
// Input: ROCm/mori issue #61, kept in testdata/field/mori with its source.
func TestResultMismatchFailsValidation(t *testing.T) {
	log := "../../testdata/field/mori/mori61-intranode-tune-result-mismatch/mori.log"
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "ep_intranode",
		Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 8}}, Outputs: []plan.Output{{Step: "mori", Log: log}}})
	assert.NilError(t, err)
	var found bool
	for _, c := range p.Checks {
		if c.Name == "data validation" {
			found = true
			assert.Assert(t, !c.OK && !c.Warn, "%+v", c)
			assert.Assert(t, strings.Contains(c.Message, "mori.log:13: Result mismatch for token 0"), c.Message)
		}
	}
	assert.Assert(t, found, "no data validation check in %+v", p.Checks)
}
