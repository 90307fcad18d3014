package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"gotest.tools/v3/assert"
)

// mi355x is the replay folder of seed 004's MI355X outputs.
const mi355x = "../../testdata/recordings/mi355x-seed004"

// seedPair is seed 004's one T8 NIC pair (lines 205-207, 278), as --param:
// mi355x's write_bw tests every NIC by default, and a replay of the seed
// has a recording of this pair only. pairs is a site parameter of the
// suite (site_params), so the replay verifies.
const seedPair = "ibperf.write_bw:pairs=ionic_7:ionic_1"

// seedSite is seed 004's site file, which gives the same pair.
const seedSite = "../../examples/sites/seed004-mi355x-hosts.yaml"

type jsonRun struct {
	Status string `json:"status"`
	Tests  []struct {
		Name    string `json:"name"`
		Status  string `json:"status"`
		Message string `json:"message"`
	} `json:"tests"`
}

func runJSON(t *testing.T, args ...string) (int, jsonRun, string) {
	t.Helper()
	code, out, errs := cli(t, append(args, "--format", "json")...)
	var r jsonRun
	assert.NilError(t, json.Unmarshal([]byte(out), &r), out+errs)
	return code, r, errs
}

// The seed's recorded outputs pass the mi355x baseline through the whole
// pipeline (plan, replay, parse, judge), T1-T4 show as skipped (T1 and T4
// pointing at suite node, which runs them), and the results folder
// verifies.
func TestMI355XSeedReplayPasses(t *testing.T) {
	for _, c := range []struct {
		suite string
		want  map[string]string
	}{
		{"singlenode", map[string]string{"gemm.bf16_matmul": "skip", "train.node": "skip", "train.gpu": "skip",
			"rapido.p2p_bandwidth": "skip", "rccl.all_reduce": "pass", "rccl.alltoall": "pass", "mori.ep_intranode": "pass"}},
		{"multinode", map[string]string{"ibperf.write_bw": "pass", "ibperf.write_bw_gdr": "pass", "mori.ep_internode": "pass", "rccl.all_reduce": "pass", "rccl.alltoall": "pass"}},
	} {
		t.Run(c.suite, func(t *testing.T) {
			// T8 on the seed's one pair: the SKU's default is every NIC
			// (TestMI355XWriteBWEveryNIC), the recording has this one.
			out := filepath.Join(t.TempDir(), "r")
			args := []string{"--sku", "mi355x", "--suite", c.suite, "--launcher", "replay", "--replay-dir", filepath.Join(mi355x, c.suite), "--out", out}
			if c.suite == "multinode" {
				args = append(args, "--param", seedPair)
			}
			code, r, errs := runJSON(t, args...)
			assert.Equal(t, code, 0, errs)
			assert.Equal(t, r.Status, "pass")
			code, vout, verrs := cli(t, "verify", out)
			assert.Equal(t, code, 0, vout+verrs)
			assert.Assert(t, !strings.Contains(vout, "MISMATCH") && !strings.Contains(vout, "REJUDGED"), vout)
			got := map[string]string{}
			for _, tt := range r.Tests {
				got[tt.Name] = tt.Status
				if tt.Status == "skip" {
					// T1 and T4 run in suite node, T2 and T3 in suite train.
					assert.Assert(t, strings.Contains(tt.Message, " in suite node ") || strings.Contains(tt.Message, " in suite train "), tt.Message)
				}
			}
			assert.DeepEqual(t, got, c.want)
		})
	}
}

// Each recorded log alone, judged offline with gpuaccept check.
func TestMI355XSeedCheckPasses(t *testing.T) {
	for _, c := range []struct {
		test, nodes, log string
	}{
		{"rccl.all_reduce", "1", "singlenode/raw/rccl.all_reduce/all_reduce.log"},
		{"rccl.alltoall", "1", "singlenode/raw/rccl.alltoall/alltoall.log"},
		{"mori.ep_intranode", "1", "singlenode/raw/mori.ep_intranode/ep_intranode.log"},
		{"ibperf.write_bw", "2", "multinode/raw/ibperf.write_bw/client.0.log"},
		{"ibperf.write_bw", "2", "multinode/raw/ibperf.write_bw/server.0.log"},
		{"ibperf.write_bw_gdr", "2", "multinode/raw/ibperf.write_bw_gdr/client.0.log"},
		{"mori.ep_internode", "2", "multinode/raw/mori.ep_internode/ep_internode.log"},
		{"rccl.all_reduce", "2", "multinode/raw/rccl.all_reduce/all_reduce.log"},
		{"rccl.alltoall", "2", "multinode/raw/rccl.alltoall/alltoall.log"},
	} {
		t.Run(c.test+"/"+c.log, func(t *testing.T) {
			code, r, errs := runJSON(t, "check", "--sku", "mi355x", "--test", c.test, "--nodes", c.nodes, "--gpus-per-node", "8", filepath.Join(mi355x, c.log))
			assert.Equal(t, code, 0, errs)
			assert.Equal(t, r.Status, "pass", "%+v", r.Tests)
		})
	}
}

// scale multiplies the numbers at the given token positions of lines that
// match re (whitespace-separated tokens), as a slower fabric would print
// them.
func scale(s string, re *regexp.Regexp, factor float64, cols ...int) string {
	return re.ReplaceAllStringFunc(s, func(line string) string {
		f := strings.Fields(line)
		for _, c := range cols {
			if c < len(f) {
				if v, err := strconv.ParseFloat(f[c], 64); err == nil {
					f[c] = strconv.FormatFloat(v*factor, 'f', 2, 64)
				}
			}
		}
		return strings.Join(f, " ")
	})
}

var (
	rcclRow   = regexp.MustCompile(`(?m)^\d+ \d+ \S+ \S+ -?\d+ .*$`)
	ibRow     = regexp.MustCompile(`(?m)^\d+ 20000 \S+ \S+ \S+$`)
	moriTable = regexp.MustCompile(`(?m)^\| (Best|Worst|Average) \|.*$`)
	moriBW    = regexp.MustCompile(`bandwidth\(GB/s\) \[([^\]]*)\]`)
)

// degrade edits a recorded log the way a sick node would print it.
var degrade = map[string]func(string) string{
	// busbw of both placements 30% down.
	"rccl": func(s string) string { return scale(s, rcclRow, 0.7, 7, 11) },
	// BW average 30% down on the client's table, and MsgRate with it:
	// perftest derives both from one count, and the plugin reads the unit
	// from their ratio.
	"ibperf": func(s string) string {
		return ibRow.ReplaceAllStringFunc(scale(s, ibRow, 0.7, 3), func(line string) string {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[4], 64)
			f[4] = strconv.FormatFloat(v*0.7, 'f', 6, 64)
			return strings.Join(f, " ")
		})
	},
	// one rank 20% slow in every dispatch round.
	"mori.ep_intranode": func(s string) string {
		i := strings.Index(s, "Combine result:")
		return moriBW.ReplaceAllStringFunc(s[:i], func(m string) string {
			vs := strings.Split(moriBW.FindStringSubmatch(m)[1], ", ")
			v, _ := strconv.ParseFloat(vs[5], 64)
			vs[5] = strconv.FormatFloat(v*0.8, 'f', 2, 64)
			return "bandwidth(GB/s) [" + strings.Join(vs, ", ") + "]"
		}) + s[i:]
	},
	// RDMA and XGMI bandwidth 30% down (cells 2 and 3 of "| Best | 76.1 | ...").
	"mori.ep_internode": func(s string) string { return scale(s, moriTable, 0.7, 3, 5) },
}

// copyTree copies a replay folder so that its logs can be degraded.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	assert.NilError(t, err)
	return dst
}

// The same recordings, degraded, fail: every test of both suites.
func TestMI355XDegradedReplayFails(t *testing.T) {
	for _, suite := range []string{"singlenode", "multinode"} {
		t.Run(suite, func(t *testing.T) {
			dir := copyTree(t, filepath.Join(mi355x, suite))
			logs, err := filepath.Glob(filepath.Join(dir, layout.Raw, "*", "*.log"))
			assert.NilError(t, err)
			for _, l := range logs {
				test := filepath.Base(filepath.Dir(l))
				edit := degrade[test]
				if edit == nil {
					edit = degrade[strings.Split(test, ".")[0]]
				}
				data, err := os.ReadFile(l)
				assert.NilError(t, err)
				out := edit(string(data))
				if filepath.Base(l) != "server.0.log" {
					assert.Assert(t, out != string(data), "degrading %s changed nothing", l)
				}
				assert.NilError(t, os.WriteFile(l, []byte(out), 0o644))
			}
			code, r, errs := runJSON(t, "--sku", "mi355x", "--suite", suite, "--launcher", "replay", "--replay-dir", dir, "--out", t.TempDir())
			assert.Equal(t, code, 1, errs)
			assert.Equal(t, r.Status, "fail")
			for _, tt := range r.Tests {
				if strings.Contains(tt.Message, " in suite node ") || strings.Contains(tt.Message, " in suite train ") {
					continue // a suite skip: nothing ran
				}
				assert.Equal(t, tt.Status, "fail", "%s: %s", tt.Name, tt.Message)
			}
		})
	}
}

// A degraded log fails gpuaccept check too, and says why.
func TestMI355XDegradedCheckFails(t *testing.T) {
	for _, c := range []struct {
		test, nodes, log, want string
	}{
		{"rccl.all_reduce", "1", "singlenode/raw/rccl.all_reduce/all_reduce.log", "busbw out-of-place 224.1 GB/s at 32 MiB below 272.1 (baseline 320.1 -15%)"},
		{"mori.ep_intranode", "1", "singlenode/raw/mori.ep_intranode/ep_intranode.log", "rank 5"},
		{"ibperf.write_bw_gdr", "2", "multinode/raw/ibperf.write_bw_gdr/client.0.log", "bw_avg 481.2 Gb/s at 64 KiB below 618.7 (baseline 687.4 -10%)"},
		{"mori.ep_internode", "2", "multinode/raw/mori.ep_internode/ep_internode.log", "below"},
		{"rccl.alltoall", "2", "multinode/raw/rccl.alltoall/alltoall.log", "below"},
	} {
		t.Run(c.test, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(mi355x, c.log))
			assert.NilError(t, err)
			edit := degrade[c.test]
			if edit == nil {
				edit = degrade[strings.Split(c.test, ".")[0]]
			}
			p := filepath.Join(t.TempDir(), filepath.Base(c.log))
			assert.NilError(t, os.WriteFile(p, []byte(edit(string(data))), 0o644))
			code, r, errs := runJSON(t, "check", "--sku", "mi355x", "--test", c.test, "--nodes", c.nodes, "--gpus-per-node", "8", p)
			assert.Equal(t, code, 1, errs)
			assert.Equal(t, len(r.Tests), 1)
			assert.Equal(t, r.Tests[0].Status, "fail")
			assert.Assert(t, strings.Contains(r.Tests[0].Message, c.want), r.Tests[0].Message)
		})
	}
}

// ib_write_bw planned for two NIC pairs of one node (a loopback), run by
// the local launcher: both servers start and show their ready marker before
// the clients start, and every side's output reaches the plugin. The
// binary is a stand-in script that prints the seed's recorded server or
// client output with the HCA it was given.
func TestMI355XIbperfLocalLoopback(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	assert.NilError(t, os.MkdirAll(bin, 0o755))
	rec, err := filepath.Abs(filepath.Join(mi355x, "multinode/raw/ibperf.write_bw"))
	assert.NilError(t, err)
	script := `#!/bin/sh
dev=; prev=; last=
for a in "$@"; do [ "$prev" = "-d" ] && dev=$a; prev=$a; last=$a; done
f=$REC/server.0.log
[ "$last" = localhost ] && f=$REC/client.0.log
sed "s/Device : ionic_[0-9]*/Device : $dev/" "$f"
`
	assert.NilError(t, os.WriteFile(filepath.Join(bin, "ib_write_bw"), []byte(script), 0o755))
	skus := filepath.Join(dir, "skus")
	assert.NilError(t, os.MkdirAll(skus, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(skus, "loop.yaml"), []byte(`sku: loop
gpus_per_node: 8
suites:
  loop:
    nodes: 1
    tests:
      - test: ibperf.write_bw
        params: {pairs: "ionic_7:ionic_1,ionic_6:ionic_2", out_json: "false", iters: "5000"}
baselines:
  - test: ibperf.write_bw
    scope: {nodes: 1, gpus_per_node: 8}
    metric: bw_avg
    unit: Gb/s
    band: {min: "-10%"}
    ceiling: 800
    source: seed 004 T8 (line 336)
    points: [{size: 8M, value: 779.21}]
`), 0o644))
	out := filepath.Join(dir, "out")
	code, r, errs := runJSON(t, "--baselines", skus, "--sku", "loop", "--suite", "loop", "--launcher", "local", "--out", out,
		"--param", "bindir="+bin, "--param", "env.REC="+rec, "--timeout", "1m")
	assert.Equal(t, code, 0, errs)
	assert.Equal(t, r.Status, "pass", "%+v", r.Tests)
	for _, step := range []string{"server.0", "server.1", "client.0", "client.1"} {
		data, err := os.ReadFile(filepath.Join(out, layout.Raw, "ibperf.write_bw", step+".log"))
		assert.NilError(t, err)
		assert.Assert(t, strings.Contains(string(data), "779.21"), step)
	}
	data, err := os.ReadFile(filepath.Join(out, layout.Raw, "ibperf.write_bw", "client.1.log"))
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(string(data), "Device : ionic_2"))
}

// A suite mixing plugins takes one plugin's parameters with PLUGIN:KEY; a
// plain bindir would reach mori, which has none, and a scope naming nothing
// in the suite is refused instead of dropped.
func TestScopedParamsOnMixedSuite(t *testing.T) {
	code, out, errOut := cli(t, "--sku", "mi355x", "--suite", "singlenode", "--dry-run", "--param", "rccl:bindir=/opt/rccl-tests/build")
	assert.Equal(t, code, 0, errOut)
	assert.Assert(t, strings.Contains(out, "/opt/rccl-tests/build/all_reduce_perf "), out)
	assert.Assert(t, strings.Contains(out, "bench_dispatch_combine.py"), out)

	code, _, errOut = cli(t, "--sku", "mi355x", "--suite", "singlenode", "--dry-run", "--param", "rcl:bindir=/x")
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(errOut, `--param rcl:bindir: "rcl" is neither a plugin nor a test of the suite`), errOut)
}

// check judges a paired test's server and client logs as the one run the
// replay made of them: one test, the same pair, the same numbers.
func TestCheckPairsServerAndClient(t *testing.T) {
	type metric struct {
		Name   string            `json:"name"`
		Size   int64             `json:"size"`
		Value  float64           `json:"value"`
		Labels map[string]string `json:"labels"`
		Status string            `json:"status"`
	}
	type doc struct {
		Status string `json:"status"`
		Tests  []struct {
			Name    string   `json:"name"`
			Status  string   `json:"status"`
			Metrics []metric `json:"metrics"`
		} `json:"tests"`
	}
	decode := func(args ...string) doc {
		code, out, errs := cli(t, append(args, "--format", "json")...)
		assert.Equal(t, code, 0, out+errs)
		var d doc
		assert.NilError(t, json.Unmarshal([]byte(out), &d), out)
		return d
	}
	// The pair is named from the logs' devices; the replay names it from
	// the suite's planned pair, which the GDR recording did not use.
	for test, pair := range map[string]string{"ibperf.write_bw": "ionic_7:ionic_1", "ibperf.write_bw_gdr": "ionic_1:ionic_1"} {
		t.Run(test, func(t *testing.T) {
			raw := filepath.Join(mi355x, "multinode/raw", test)
			// The seed's own pair: the SKU's default is every NIC.
			replay := decode("--sku", "mi355x", "--suite", "multinode", "--launcher", "replay", "--replay-dir", filepath.Join(mi355x, "multinode"),
				"--test", test, "--param", test+":pairs="+pair, "--out", t.TempDir())
			for _, files := range [][]string{{"server.0.log", "client.0.log"}, {"client.0.log", "server.0.log"}} {
				check := decode("check", "--sku", "mi355x", "--test", test, "--nodes", "2", "--gpus-per-node", "8",
					filepath.Join(raw, files[0]), filepath.Join(raw, files[1]))
				var names []string
				for _, tt := range check.Tests {
					names = append(names, tt.Name)
				}
				assert.DeepEqual(t, names, []string{test})
				assert.Equal(t, check.Tests[0].Name, test)
				assert.Equal(t, len(check.Tests[0].Metrics), len(replay.Tests[0].Metrics))
				for i, m := range check.Tests[0].Metrics {
					assert.Equal(t, m.Labels["pair"], pair)
					m.Labels = nil
					r := replay.Tests[0].Metrics[i]
					r.Labels = nil
					assert.DeepEqual(t, m, r)
				}
			}
		})
	}
}

// longNames is a folder holding mi355x.yaml with a skipped test of a
// long name (seed 004's own name for T3) at the top of suite singlenode.
func longNames(t *testing.T) string {
	t.Helper()
	data := readFile(t, "../../baselines/mi355x.yaml")
	const at = "  singlenode:\n"
	i := strings.Index(data, at)
	assert.Assert(t, i >= 0)
	j := strings.Index(data[i:], "    tests:\n")
	assert.Assert(t, j >= 0)
	k := i + j + len("    tests:\n")
	data = data[:k] + "      - test: primus.qwen2_5_32b_pretrain_1gpu\n        skip: \"listed, not run\"\n" + data[k:]
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "mi355x.yaml"), []byte(data), 0o644))
	return dir
}

// The demo prints the progress lines a run prints, and a long test name
// (primus.qwen2_5_32b_pretrain_1gpu) does not push the status column out
// of line.
func TestProgressLinesAlike(t *testing.T) {
	status := regexp.MustCompile(`^(\S+ +)(start|PASS|WARN|FAIL|ERROR|SKIP) `)
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"demo", []string{"demo", "--out", t.TempDir()}, []string{"nccl.all_reduce          start  1x2 via replay\n", "nccl.all_reduce          PASS   18 points"}},
		{"run", []string{"--sku", "h200", "--suite", "singlenode", "--launcher", "replay", "--replay-dir", healthy, "--gpus-per-node", "2", "--out", filepath.Join(t.TempDir(), "r")},
			[]string{"nccl.all_reduce          start  1x2 via replay, limit ", "nccl.all_reduce          PASS   18 points"}},
		{"long names", []string{"--baselines", longNames(t), "--sku", "mi355x", "--suite", "singlenode", "--launcher", "replay", "--replay-dir", filepath.Join(mi355x, "singlenode"), "--out", filepath.Join(t.TempDir(), "r")},
			[]string{"primus.qwen2_5_32b_pretrain_1gpu SKIP   listed, not run", "rccl.all_reduce                  PASS "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, out, errs := cli(t, c.args...)
			for _, w := range c.want {
				assert.Assert(t, strings.Contains(errs, w), "want %q in\n%s", w, errs)
			}
			cols := map[int]bool{}
			for _, line := range strings.Split(errs, "\n") {
				if m := status.FindStringSubmatch(line); m != nil {
					cols[len(m[1])] = true
				}
			}
			assert.Equal(t, len(cols), 1, "status columns %v in\n%s", cols, errs+out)
		})
	}
}

// A hole in a real curve fails gpuaccept check under the shipped mi355x
// per-size baseline although no baseline point is there: seed 004's 1 x 8
// all_reduce with 16 MiB out-of-place (under the first point, 32 MiB)
// edited to 45% of 8 MiB, busbw 251.49 -> 92.88, algbw and time to match
// (baselines/README.md, rule 8a). The real log passes.
func TestMI355XHoleFailsCheck(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(mi355x, "singlenode/raw/rccl.all_reduce/all_reduce.log"))
	assert.NilError(t, err)
	const row, hole = "16777216 4194304 float sum -1 116.74 143.71 251.49", "16777216 4194304 float sum -1 316.13 53.07 92.88"
	assert.Assert(t, strings.Contains(string(data), row))
	for _, c := range []struct {
		name, text, status, want string
	}{
		{"real", string(data), "pass", "points inside their bands"},
		{"16 MiB at 45% of 8 MiB", strings.Replace(string(data), row, hole, 1), "fail",
			"dip busbw out-of-place: 92.9 GB/s at 16 MiB is 45.0% of the lower of its neighbours (206.4 GB/s at 8 MiB, 320.1 GB/s at 32 MiB)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "all_reduce.log")
			assert.NilError(t, os.WriteFile(p, []byte(c.text), 0o644))
			_, r, errs := runJSON(t, "check", "--sku", "mi355x", "--test", "rccl.all_reduce", "--nodes", "1", "--gpus-per-node", "8", p)
			assert.Equal(t, len(r.Tests), 1, errs)
			assert.Equal(t, r.Tests[0].Status, c.status, r.Tests[0].Message)
			assert.Assert(t, strings.Contains(r.Tests[0].Message, c.want), r.Tests[0].Message)
		})
	}
}

// mi355x's write_bw tests every NIC of the node by default, ionic_N of
// the first node with ionic_N of the second, each pair on its own port
// from 10000; the seed's one pair (ionic_7 with ionic_1) comes back with
// its site file or --param.
func TestMI355XWriteBWEveryNIC(t *testing.T) {
	var every []string
	for i := range 8 {
		every = append(every, fmt.Sprintf("server ionic_%d %d", i, 10000+i), fmt.Sprintf("client ionic_%d %d", i, 10000+i))
	}
	seed := []string{"server ionic_7 10000", "client ionic_1 10000"}
	cases := []struct {
		name string
		args []string
		want []string // "ROLE HCA PORT" of each ib_write_bw, in order
	}{
		{"default: every NIC", nil, every},
		{"seed's site file", []string{"--site", seedSite}, seed},
		{"--param", []string{"--param", seedPair}, seed},
	}
	step := regexp.MustCompile(`ibperf\.write_bw\.(server|client)\.\d+ .*exec ib_write_bw -d (\S+) -p (\d+) `)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := cli(t, append([]string{"--sku", "mi355x", "--suite", "multinode", "--test", "ibperf.write_bw", "--launcher", "ssh",
				"--hosts", "192.0.2.11,192.0.2.12", "--dry-run"}, c.args...)...)
			assert.Equal(t, code, 0, errs)
			var got []string
			for _, m := range step.FindAllStringSubmatch(out, -1) {
				got = append(got, m[1]+" "+m[2]+" "+m[3])
			}
			// Servers first, then clients: compare as sets of lines.
			sort.Strings(got)
			want := slices.Clone(c.want)
			sort.Strings(want)
			assert.DeepEqual(t, got, want)
		})
	}
}

// verify holds a run to its suite's parameters except the suite test's
// site parameters (site_params: mi355x's write_bw pairs, the NIC map),
// which are the site's to set and are judged as they ran: a note naming
// each, no finding. A judged parameter (bidirectional: -b sums both
// directions, so the recorded 779 Gb/s fails a one-way band) still gives
// the finding, and so does the NIC map where the kept SKU file does not
// list it, or a kept copy that lists a judged parameter where the built-in
// file does not.
func TestMI355XVerifySiteParams(t *testing.T) {
	builtin := readFile(t, "../../baselines/mi355x.yaml")
	const line = "        site_params: [pairs]\n"
	assert.Assert(t, strings.Count(builtin, line) == 1)
	sitesFile := func(text string) string {
		dir := t.TempDir()
		assert.NilError(t, os.WriteFile(filepath.Join(dir, "mi355x.yaml"), []byte(text), 0o644))
		return dir
	}
	const (
		pairNote  = "NOTE ibperf.write_bw ran with site parameters pairs=ionic_7:ionic_1 (suite multinode gives pairs=ionic_0,ionic_1,ionic_2,ionic_3,ionic_4,ionic_5,ionic_6,ionic_7): what is measured on the site (site_params), set by --param or the site file; the raw outputs are judged as they ran"
		bidirBad  = "MISMATCH ibperf.write_bw ran with parameters suite multinode does not give: bidirectional=false (--param or an edited journal): judged with the suite's own, the raw outputs give ibperf.write_bw: pass, not fail"
		pairsBad  = "MISMATCH ibperf.write_bw ran with parameters suite multinode does not give: pairs=ionic_7:ionic_1 (--param or an edited journal)"
		builtinBd = "MISMATCH ibperf.write_bw ran with parameters the built-in mi355x suite multinode does not give: bidirectional=false (--param or an edited journal): judged with the suite's own, the raw outputs give ibperf.write_bw: pass, not fail"
	)
	for _, c := range []struct {
		name          string
		args          []string
		runCode, code int
		want, notWant []string
	}{
		{"the seed's site file", []string{"--site", seedSite}, 0, 0, []string{pairNote, "verify: OK"}, []string{"MISMATCH", "REJUDGED"}},
		{"--param", []string{"--param", seedPair}, 0, 0, []string{pairNote, "verify: OK"}, []string{"MISMATCH", "REJUDGED"}},
		{"a judged parameter beside the site's", []string{"--param", seedPair, "--param", "ibperf.write_bw:bidirectional=false"}, 1, 1,
			[]string{pairNote, bidirBad, "verify: FAILED: 1 finding"}, []string{"does not give: bidirectional=false pairs="}},
		{"a kept SKU file without site_params", []string{"--param", seedPair, "--baselines", sitesFile(strings.Replace(builtin, line, "", 1))}, 0, 1,
			[]string{pairsBad, "verify: FAILED"}, []string{pairNote}},
		{"a kept SKU file that makes a judged parameter the site's", []string{"--param", seedPair, "--param", "ibperf.write_bw:bidirectional=false",
			"--baselines", sitesFile(strings.Replace(builtin, line, "        site_params: [pairs, bidirectional]\n", 1))}, 1, 1,
			[]string{builtinBd, "verify: FAILED: 1 finding"}, []string{bidirBad}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r")
			code, stdout, errs := cli(t, append([]string{"--sku", "mi355x", "--suite", "multinode", "--test", "ibperf.write_bw", "--launcher", "replay",
				"--replay-dir", filepath.Join(mi355x, "multinode"), "--out", out}, c.args...)...)
			assert.Equal(t, code, c.runCode, stdout+errs)
			// The parameters that ran are in results.json, whatever verify
			// makes of them.
			var res struct {
				Tests []struct {
					Params map[string]string `json:"params"`
				} `json:"tests"`
			}
			assert.NilError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, layout.Results))), &res))
			assert.Equal(t, res.Tests[0].Params["pairs"], "ionic_7:ionic_1")
			code, vout, verrs := cli(t, "verify", out)
			assert.Equal(t, code, c.code, vout+verrs)
			for _, w := range c.want {
				assert.Assert(t, strings.Contains(vout, w), "want %q in\n%s", w, vout)
			}
			for _, w := range c.notWant {
				assert.Assert(t, !strings.Contains(vout, w), "do not want %q in\n%s", w, vout)
			}
		})
	}
}
