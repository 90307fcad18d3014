package nccl

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/plugins/internal/hang"
)

const rec = "../../testdata/recordings/"

func TestPlan(t *testing.T) {
	cases := []struct {
		name   string
		params map[string]string
		topo   plan.Topology
		want   plan.Step
	}{
		{"one process drives both GPUs", map[string]string{"bindir": "/opt/nccl-tests/build", "maxbytes": "4G"}, plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}},
			plan.Step{Name: "all_reduce", Argv: []string{"/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "4G", "-f", "2", "-g", "2", "-c", "1", "-J", "all_reduce.json"},
				Procs: 1, ProcsPerNode: 1, Files: []string{"all_reduce.json"}}},
		{"one MPI rank per GPU", map[string]string{"mode": "mpi", "suffix": "_mpi"}, plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 8}},
			plan.Step{Name: "all_reduce", Argv: []string{"all_reduce_perf_mpi", "-b", "8", "-e", "4G", "-f", "2", "-g", "1", "-c", "1", "-J", "all_reduce.json"},
				Procs: 8, ProcsPerNode: 8, MPI: true, Files: []string{"all_reduce.json"}}},
		{"two nodes default to MPI ranks; seed 000's run", map[string]string{"maxbytes": "8G", "json": "false", "env.NCCL_TOPO_FILE": "/workspace/ndv4-topo.xml", "iters": "20"},
			plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}},
			plan.Step{Name: "all_reduce", Argv: []string{"all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1", "-c", "1", "-n", "20"},
				Procs: 16, ProcsPerNode: 8, MPI: true, Env: map[string]string{"NCCL_TOPO_FILE": "/workspace/ndv4-topo.xml"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "all_reduce", Params: c.params, Topology: c.topo})
			assert.NilError(t, err)
			assert.NilError(t, p.Validate())
			assert.DeepEqual(t, p.Steps, []plan.Step{c.want})
		})
	}
}

func TestPlanErrors(t *testing.T) {
	topo := plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}
	for _, c := range []struct {
		test   string
		params map[string]string
		want   string
	}{
		{"allreduce", nil, "unknown test nccl.allreduce (known: nccl.all_reduce, nccl.all_gather"},
		{"all_reduce", map[string]string{"maxbyte": "4G"}, `nccl.all_reduce: unknown parameter "maxbyte" (known: bindir, suffix, minbytes, maxbytes`},
		{"all_reduce", map[string]string{"maxbytes": "lots"}, `parameter maxbytes: size "lots"`},
		{"all_reduce", map[string]string{"mode": "threads"}, `parameter mode: "threads" is not single or mpi`},
		{"all_reduce", map[string]string{"iters": "-3"}, `parameter iters: "-3" is not a non-negative integer`},
		{"all_reduce", map[string]string{"suffix": "/../x"}, `parameter suffix: "/../x" must be a plain name suffix`},
	} {
		_, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: c.test, Params: c.params, Topology: topo})
		assert.ErrorContains(t, err, c.want)
	}
}

func parse(t *testing.T, test string, topo plan.Topology, params map[string]string, outs ...plan.Output) result.Parsed {
	t.Helper()
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: test, Topology: topo, Params: params, Outputs: outs})
	assert.NilError(t, err)
	return p
}

var twoGPUs = plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}

func check(p result.Parsed, name string) *result.Check {
	for i := range p.Checks {
		if p.Checks[i].Name == name {
			return &p.Checks[i]
		}
	}
	return nil
}

func busbwAt(p result.Parsed, size int64, placement string) float64 {
	for _, m := range p.Metrics {
		if m.Name == "busbw" && m.Size == size && m.Labels["placement"] == placement {
			return m.Value
		}
	}
	return -1
}

func TestParseRecordedRun(t *testing.T) {
	dir := rec + "h200-1x2-healthy/nccl.all_reduce/"
	p := parse(t, "all_reduce", twoGPUs, nil, plan.Output{Step: "all_reduce", Log: dir + "all_reduce.log",
		Files: map[string]string{"all_reduce.json": dir + "all_reduce.files/all_reduce.json"}})
	assert.Equal(t, p.Error, "")
	assert.Equal(t, busbwAt(p, 4<<30, "out-of-place"), 344.031485, "the JSON's unrounded value")
	assert.Equal(t, busbwAt(p, 4<<30, "in-place"), 343.537087)
	assert.Equal(t, check(p, "rank count").OK, true)
	assert.Equal(t, check(p, "data validation").OK, true)
	assert.Equal(t, check(p, "out of bounds values").OK, true)
	assert.Equal(t, p.Info["nccl_version"], "2.28.9")
	assert.Equal(t, p.Info["nccl_tests_version"], "2.19.6")
	assert.Equal(t, p.Info["gpu"], "NVIDIA H200")
	assert.Equal(t, p.Info["hosts"], "vm")
	assert.Equal(t, len(p.Metrics), 30*2*3+1, "busbw, algbw and time per size (8 B to 4 GiB) and placement, and avg_busbw")
}

func copyWith(t *testing.T, src, name string, edit func(string) string) string {
	data, err := os.ReadFile(src)
	assert.NilError(t, err)
	p := filepath.Join(t.TempDir(), name)
	assert.NilError(t, os.WriteFile(p, []byte(edit(string(data))), 0o644))
	return p
}

// A binary built without MPI=1 under mpirun -np 2: every process runs alone
// and prints a whole output with its single rank 0. Made from the real
// two-rank log by keeping one rank line and printing it twice.
func TestRankCountCatchesNonMPIBinary(t *testing.T) {
	src := rec + "h200-1x2-mpi/nccl.all_reduce/all_reduce.log"
	log := copyWith(t, src, "all_reduce.log", func(s string) string {
		lines := strings.Split(s, "\n")
		var one []string
		for _, l := range lines {
			if !strings.Contains(l, "#  Rank  1 ") {
				one = append(one, l)
			}
		}
		body := strings.Join(one, "\n")
		return body + body
	})
	p := parse(t, "all_reduce", twoGPUs, nil, plan.Output{Step: "all_reduce", Log: log})
	c := check(p, "independent runs")
	assert.Assert(t, c != nil && !c.OK && !c.Warn, "%+v", c)
	assert.Equal(t, c.Message, "2 independent 1-rank runs: nccl-tests built without MPI=1 under mpirun (expected one run of 2 ranks, 1x2)")
}

func TestWrongElementsFail(t *testing.T) {
	src := rec + "h200-1x2-healthy/nccl.all_reduce/all_reduce.log"
	// One wrong element at 1 GiB in-place, as a corrupting link shows it.
	log := copyWith(t, src, "all_reduce.log", func(s string) string {
		return strings.Replace(s, "3275.32  327.83  327.83       0", "3275.32  327.83  327.83       1", 1)
	})
	p := parse(t, "all_reduce", twoGPUs, nil, plan.Output{Step: "all_reduce", Log: log})
	c := check(p, "data validation")
	assert.Assert(t, c != nil && !c.OK)
	assert.Equal(t, c.Message, "1 wrong elements in-place at 1 GiB")
}

func TestExitCodesAndLaunchErrors(t *testing.T) {
	log := rec + "h200-1x2-healthy/nccl.all_reduce/all_reduce.log"
	p := parse(t, "all_reduce", twoGPUs, nil, plan.Output{Step: "all_reduce", Log: log, ExitCode: 4})
	assert.Equal(t, p.Error, "exited with status 4 (timeout)")
	assert.Assert(t, len(p.Metrics) > 0, "what was measured is kept")
	p = parse(t, "all_reduce", twoGPUs, nil, plan.Output{Step: "all_reduce", Log: log, ExitCode: -1, LaunchError: "timed out after 30m0s; process group killed"})
	assert.Assert(t, strings.HasPrefix(p.Error, "timed out after 30m0s"), p.Error)
}

// With the planned sizes known, an output that stops early is truncated
// even when its last line is whole.
func TestTruncatedAgainstPlan(t *testing.T) {
	src := rec + "h200-1x2-healthy/nccl.all_reduce/all_reduce.log"
	log := copyWith(t, src, "all_reduce.log", func(s string) string {
		return s[:strings.Index(s, "  2147483648")]
	})
	p := parse(t, "all_reduce", twoGPUs, map[string]string{"maxbytes": "4G"}, plan.Output{Step: "all_reduce", Log: log})
	assert.Assert(t, strings.Contains(p.Error, "output ends at 1 GiB but sizes up to 4 GiB were asked for: truncated"), p.Error)
	p = parse(t, "all_reduce", twoGPUs, map[string]string{"maxbytes": "1G"}, plan.Output{Step: "all_reduce", Log: log})
	assert.Assert(t, !strings.Contains(p.Error, "truncated"), p.Error)
}

// Seed 000 (2 x 8 A100 under Volcano): a log joined late, without rank
// lines; its NCCL INFO lines give the communicator's 16 ranks, and each
// rank's line its host (two pods).
func TestSeedWithoutRankLines(t *testing.T) {
	p := parse(t, "all_reduce", plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}, nil, plan.Output{Step: "all_reduce", Log: "../internal/nccltests/testdata/seeds/000_aks_ndmv4_all_reduce.txt"})
	assert.Equal(t, p.Error, "")
	assert.Equal(t, check(p, "rank count").OK, true)
	assert.Equal(t, check(p, "node count").OK, true)
	assert.Equal(t, busbwAt(p, 8<<30, "out-of-place"), 189.20)
	p = parse(t, "all_reduce", plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 16}}, nil, plan.Output{Step: "all_reduce", Log: "../internal/nccltests/testdata/seeds/000_aks_ndmv4_all_reduce.txt"})
	assert.Equal(t, check(p, "node count").Message, "ranks ran on 2 hosts (the NCCL INFO lines of all 16 ranks), expected 1 node")
	// Judged as 4x8, the communicator's size fails it.
	p = parse(t, "all_reduce", plan.Topology{Scope: plan.Scope{Nodes: 4, GPUsPerNode: 8}}, nil, plan.Output{Step: "all_reduce", Log: "../internal/nccltests/testdata/seeds/000_aks_ndmv4_all_reduce.txt"})
	assert.Equal(t, check(p, "rank count").Message, "16 ranks in NCCL's communicator (NCCL INFO nranks 16), expected 32 (4x8)")
}

// Logs judged offline have no plan: the header's own "maxBytes ... step:
// 2(factor)" says which sizes a whole output has.
func TestTruncatedAgainstHeader(t *testing.T) {
	src := rec + "h200-1x2-healthy/nccl.all_reduce/all_reduce.log"
	log := copyWith(t, src, "cut.log", func(s string) string {
		return s[:strings.Index(s, "   536870912")]
	})
	p := parse(t, "all_reduce", twoGPUs, nil, plan.Output{Step: "all_reduce", Log: log})
	assert.Assert(t, strings.Contains(p.Error, "output ends at 256 MiB but sizes up to 4 GiB were asked for: truncated"), p.Error)
}

// A text log and a JSON of another run side by side: an error, not the
// JSON's verdict.
func TestTextAndJSONDisagree(t *testing.T) {
	p := parse(t, "all_reduce", twoGPUs, nil, plan.Output{Step: "all_reduce",
		Log:   rec + "h200x2-2026-11-30-final/p2poff/raw/nccl.all_reduce/all_reduce.log",
		Files: map[string]string{"all_reduce.json": rec + "h200-1x2-healthy/nccl.all_reduce/all_reduce.files/all_reduce.json"}})
	assert.Assert(t, strings.Contains(p.Error, "all_reduce.log and all_reduce.json disagree: busbw at "), p.Error)
}

func TestWarnChecks(t *testing.T) {
	// A real run with -c 0: #wrong shows N/A.
	p := parse(t, "all_reduce", twoGPUs, nil, plan.Output{Step: "all_reduce", Log: "../internal/nccltests/testdata/h200x2-variants/nocheck.txt"})
	c := check(p, "data validation")
	assert.Assert(t, c != nil && !c.OK && c.Warn, "%+v", c)
	// The footer cut off: out-of-bounds not seen.
	src := rec + "h200-1x2-healthy/nccl.all_reduce/all_reduce.log"
	log := copyWith(t, src, "nofooter.log", func(s string) string { return s[:strings.Index(s, "# Out of bounds")] })
	p = parse(t, "all_reduce", twoGPUs, nil, plan.Output{Step: "all_reduce", Log: log})
	c = check(p, "out of bounds values")
	assert.Assert(t, c != nil && !c.OK && c.Warn, "%+v", c)
	assert.Equal(t, p.Error, "")
}

// A one-node log judged as a two-node run fails, even when the rank count
// matches.
func TestNodeCount(t *testing.T) {
	p := parse(t, "all_reduce", plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 1}}, nil, plan.Output{Step: "all_reduce", Log: rec + "h200-1x2-healthy/nccl.all_reduce/all_reduce.log"})
	assert.Equal(t, check(p, "rank count").OK, true)
	c := check(p, "node count")
	assert.Assert(t, c != nil && !c.OK)
	assert.Equal(t, c.Message, "ranks ran on 1 host, expected 2 nodes")
}

// A broadcast log whose header was lost, judged as all_reduce.
func TestAnotherCollectiveWithoutHeader(t *testing.T) {
	log := copyWith(t, rec+"h200-1x2-healthy/nccl.broadcast/broadcast.log", "x.log", func(s string) string {
		return strings.Replace(s, "# Collective test starting: broadcast_perf\n", "", 1)
	})
	p := parse(t, "all_reduce", twoGPUs, nil, plan.Output{Step: "all_reduce", Log: log})
	assert.Assert(t, strings.Contains(p.Error, `result rows have redop "none" (line 12), which all_reduce_perf does not print`), p.Error)
}

// FuzzParse runs the plugin's whole Parse (text, JSON, checks, metrics) on
// arbitrary logs: it must never panic, whatever the output.
func FuzzParse(f *testing.F) {
	for _, p := range []string{rec + "h200-1x2-healthy/nccl.all_reduce/all_reduce.log", "../internal/nccltests/testdata/seeds/001_a4x_all_gather_tas.txt", "../internal/nccltests/testdata/h200x2-variants/killed.txt"} {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data, []byte(`{"results": [`))
		}
	}
	js, _ := os.ReadFile(rec + "h200-1x2-healthy/nccl.all_reduce/all_reduce.files/all_reduce.json")
	f.Add([]byte(""), js)
	f.Fuzz(func(t *testing.T, log, json []byte) {
		dir := t.TempDir()
		lp, jp := filepath.Join(dir, "all_reduce.log"), filepath.Join(dir, "all_reduce.json")
		if os.WriteFile(lp, log, 0o644) != nil || os.WriteFile(jp, json, 0o644) != nil {
			t.Skip()
		}
		p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "all_reduce", Topology: twoGPUs,
			Params:  map[string]string{"maxbytes": "4G"},
			Outputs: []plan.Output{{Step: "all_reduce", Log: lp, Files: map[string]string{"all_reduce.json": jp}}}})
		if err != nil {
			t.Fatal(err)
		}
		if p.Error == "" && len(p.Metrics) == 0 {
			t.Fatal("no error and no metrics")
		}
	})
}

// nccl-tests older than 2.17 has no -J: getopt refuses it ("invalid option
// -- 'J'") and the error says how to turn JSON off. The input is the real
// refusal of an unknown option (nccltests testdata h200x2-variants/badopt.txt,
// all_reduce_perf -Q 1) with the option letter edited from Q to J, the only
// change: the letter getopt names is the one on the command line.
func TestOldNCCLTestsRefuseJSONHint(t *testing.T) {
	data, err := os.ReadFile("../internal/nccltests/testdata/h200x2-variants/badopt.txt")
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(string(data), "invalid option -- 'Q'"))
	log := filepath.Join(t.TempDir(), "all_reduce.log")
	assert.NilError(t, os.WriteFile(log, []byte(strings.Replace(string(data), "invalid option -- 'Q'", "invalid option -- 'J'", 1)), 0o644))
	p := parse(t, "all_reduce", twoGPUs, map[string]string{"maxbytes": "4G"}, plan.Output{Step: "all_reduce", Log: log, ExitCode: 1})
	assert.Assert(t, strings.Contains(p.Error, "invalid option -- 'J'"), p.Error)
	assert.Assert(t, strings.Contains(p.Error, `this nccl-tests predates -J (JSON output, nccl-tests 2.17): set the test parameter json=false (--param nccl:json=false, or json: "false" under params: nccl: in the site file, --site)`), p.Error)
	// Another option refused gets no such hint.
	log2 := filepath.Join(t.TempDir(), "all_reduce.log")
	assert.NilError(t, os.WriteFile(log2, data, 0o644))
	p = parse(t, "all_reduce", twoGPUs, map[string]string{"maxbytes": "4G"}, plan.Output{Step: "all_reduce", Log: log2, ExitCode: 1})
	assert.Assert(t, strings.Contains(p.Error, "invalid option -- 'Q'") && !strings.Contains(p.Error, "json=false"), p.Error)
}

// evidence=true adds one evidence step per node and NCCL_DEBUG=WARN
// (unless the site set NCCL_DEBUG); Parse hands a timed-out run's
// evidence to the hang reader: a node where a rank was stopped fails the
// test naming the host, an evidence step that did not run is no evidence.
func TestEvidence(t *testing.T) {
	topo := plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}
	p, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "all_reduce", Params: map[string]string{"evidence": "true"}, Topology: topo})
	assert.NilError(t, err)
	assert.Equal(t, len(p.Steps), 3)
	assert.Equal(t, p.Steps[0].Env["NCCL_DEBUG"], "WARN")
	for i, s := range p.Steps[1:] {
		assert.Equal(t, s.Role, plan.Evidence)
		assert.Equal(t, s.Host, i)
	}
	assert.NilError(t, pluginapi.CheckRoles(p, nil))
	// Every step carries the same random test id, the evidence step's
	// only way to tell the test's processes; another plan, another id.
	id := p.Steps[0].Env[hang.TestIDEnv]
	assert.Assert(t, len(id) >= 26, "test id %q", id)
	for _, s := range p.Steps {
		assert.Equal(t, s.Env[hang.TestIDEnv], id, s.Name)
	}
	again, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "all_reduce", Params: map[string]string{"evidence": "true"}, Topology: topo})
	assert.NilError(t, err)
	assert.Assert(t, again.Steps[0].Env[hang.TestIDEnv] != id, "two plans share test id %q", id)
	p, err = Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "all_reduce", Params: map[string]string{"evidence": "true", "env.NCCL_DEBUG": "INFO"}, Topology: topo})
	assert.NilError(t, err)
	assert.Equal(t, p.Steps[0].Env["NCCL_DEBUG"], "INFO")
	p, err = Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "all_reduce", Topology: topo})
	assert.NilError(t, err)
	assert.Equal(t, len(p.Steps), 1, "evidence is asked for")
	_, hasDebug := p.Steps[0].Env["NCCL_DEBUG"]
	assert.Assert(t, !hasDebug)

	dir := t.TempDir()
	ev := filepath.Join(dir, "evidence.1.log")
	assert.NilError(t, os.WriteFile(ev, []byte("gpuaccept-evidence|gpu-node-2|procs|4242 T do_signal_stop - all_reduce_perf -b 8 -e 4G\n"), 0o644))
	log := rec + "h200-1x2-healthy/nccl.all_reduce/all_reduce.log"
	for _, c := range []struct {
		name   string
		ev     plan.Output
		status bool // a failed hang.suspect check
	}{
		{"stopped rank", plan.Output{Step: "evidence.1", Role: plan.Evidence, Host: "node2", Log: ev}, true},
		{"not run", plan.Output{Step: "evidence.1", Role: plan.Evidence, Host: "node2", Log: ev, ExitCode: -1, LaunchError: "not run: a batch job collects no evidence at its timeout yet"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			parsed, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "all_reduce", Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}},
				Outputs: []plan.Output{{Step: "all_reduce", Log: log}, c.ev}})
			assert.NilError(t, err)
			var got *result.Check
			for i, ch := range parsed.Checks {
				if ch.Name == "hang.suspect" {
					got = &parsed.Checks[i]
				}
			}
			if !c.status {
				assert.Assert(t, got == nil, "%+v", got)
				return
			}
			assert.Assert(t, got != nil && !got.OK, "%+v", parsed.Checks)
			assert.Equal(t, got.Host, "node2")
			assert.Assert(t, strings.Contains(got.Message, "timed out after 4 GiB (the largest size measured): node2 pid 4242 (all_reduce_perf -b 8 ...) stopped (state T)"), got.Message)
		})
	}
}
