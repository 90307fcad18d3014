package nccltests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"gotest.tools/v3/assert"
)

// Result's inputs are testdata files, or copies of them edited as each test
// says (ntEdited), written to a temporary folder.

// ntEdited writes testdata file rel, passed through edit, as name in a
// temporary folder and returns its path. edit must change something: a
// test that names an edit must make it.
func ntEdited(t *testing.T, rel, name string, edit func(string) string) string {
	t.Helper()
	src := string(ntTestdata(t, rel))
	out := src
	if edit != nil {
		out = edit(src)
		assert.Assert(t, out != src, "the edit of %s changed nothing", rel)
	}
	p := filepath.Join(t.TempDir(), name)
	assert.NilError(t, os.WriteFile(p, []byte(out), 0o644))
	return p
}

// ntReplace returns an edit replacing old by new exactly once.
func ntReplace(t *testing.T, old, new string) func(string) string {
	return func(s string) string {
		t.Helper()
		assert.Equal(t, strings.Count(s, old), 1, "%q", old)
		return strings.Replace(s, old, new, 1)
	}
}

// ntCheck returns the check of that name, or nil.
func ntCheck(p result.Parsed, name string) *result.Check {
	for i := range p.Checks {
		if p.Checks[i].Name == name {
			return &p.Checks[i]
		}
	}
	return nil
}

func ntTopo(nodes, gpus int) plan.Topology {
	return plan.Topology{Scope: plan.Scope{Nodes: nodes, GPUsPerNode: gpus}}
}

// The 1-GPU H200 broadcast of the issue: its in-place 2 GiB row is a no-op
// on one rank, timed at 1.76 us, so busbw 1222105.42 GB/s, which the text
// column of 6 can only print as "1e+06" (getFloatStr's %6.0e). Made from
// the real 2-GPU broadcast text and JSON by writing that row's in-place
// figures as the 1-GPU run printed and wrote them.
func TestResultTextJSONShortForm(t *testing.T) {
	const (
		textRow = "  2147483648     536870912     float    none       0  5866.78  366.04  366.04       0  5818.54  369.08  369.08       0"
		jsonIn  = `"alg_bw": 369.075856,
    "bus_bw": 369.075856,`
	)
	tests := []struct {
		name, textInPlace, jsonBusBW string
		want                         string // the error's disagreement, "" none
	}{
		{"1e+06 against 1222105.42: within the text's rounding", "     1.76   1e+06   1e+06", "1222105.42", ""},
		{"1e+06 against 1499999: still within", "     1.76   1e+06   1e+06", "1499999", ""},
		{"1e+06 against 1722105.42: another run", "     1.76   1e+06   1e+06", "1722105.42", "busbw at 2 GiB is 1e+06 in the text, 1722105.42 in the JSON"},
		{"369.08 against 369.09: beyond %6.2f", "  5818.54  369.08  369.08", "369.09", "busbw at 2 GiB is 369.08 in the text, 369.09 in the JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			row := strings.Replace(textRow, "  5818.54  369.08  369.08", tc.textInPlace, 1)
			var edit func(string) string // the text as recorded when its row is unchanged
			if row != textRow {
				edit = ntReplace(t, textRow, row)
			}
			log := ntEdited(t, "h200x2-2.19.6/broadcast.txt", "broadcast.log", edit)
			js := ntEdited(t, "h200x2-2.19.6/broadcast.json", "broadcast.json", ntReplace(t, jsonIn,
				strings.ReplaceAll(jsonIn, "369.075856", tc.jsonBusBW)))
			p := Result(plan.Output{Step: "broadcast", Log: log, Files: map[string]string{"broadcast.json": js}},
				Options{Test: "broadcast", Topology: ntTopo(1, 2)})
			if tc.want == "" {
				assert.Equal(t, p.Error, "")
				return
			}
			assert.Assert(t, strings.Contains(p.Error, "broadcast.log and broadcast.json disagree: "+tc.want), p.Error)
		})
	}
}

// ntResult runs Result on a log (a testdata path or a file made by
// ntEdited) as test at the scope nodes x gpus.
func ntResult(t *testing.T, log, test string, nodes, gpus int) result.Parsed {
	t.Helper()
	if !filepath.IsAbs(log) {
		log = filepath.Join("testdata", log)
	}
	return Result(plan.Output{Step: test, Log: log}, Options{Test: test, Topology: ntTopo(nodes, gpus)})
}

// want is a check's expected state: "pass", "fail" or "warn", and a
// message ("" for a pass; a prefix otherwise).
type ntWant struct{ state, message string }

func ntAssertCheck(t *testing.T, p result.Parsed, name string, w ntWant) {
	t.Helper()
	c := ntCheck(p, name)
	if w.state == "" {
		assert.Assert(t, c == nil, "%s: %+v", name, c)
		return
	}
	assert.Assert(t, c != nil, "no %s check among %+v", name, p.Checks)
	state := "fail"
	switch {
	case c.OK:
		state = "pass"
	case c.Warn:
		state = "warn"
	}
	assert.Equal(t, state, w.state, "%s: %s", name, c.Message)
	assert.Assert(t, strings.HasPrefix(c.Message, w.message), "%s: %q does not start with %q", name, c.Message, w.message)
}

// The rank and node counts from every piece of evidence a real output
// has: complete rank lines, one kept rank line, NCCL INFO, the header, the
// size and count columns, busbw/algbw.
func TestResultRankCount(t *testing.T) {
	noRankLines := func(s string) string {
		var keep []string
		for _, l := range strings.SplitAfter(s, "\n") {
			if !strings.HasPrefix(l, "#  Rank ") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "")
	}
	cutAliyun1 := func(s string) string {
		var keep []string
		for _, l := range strings.SplitAfter(s, "\n") {
			if !(strings.HasPrefix(l, "# Rank ") && strings.Contains(l, " on Aliyun1 ")) {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "")
	}
	tests := []struct {
		name, log, test string
		edit            func(string) string // nil: the file as it is
		nodes, gpus     int
		ranks, nodeC    ntWant
	}{
		{"2 complete rank lines", "h200x2-2.19.6/all_reduce.txt", "all_reduce", nil, 1, 2,
			ntWant{"pass", ""}, ntWant{"pass", ""}},
		{"2 complete rank lines judged 1x8", "h200x2-2.19.6/all_reduce.txt", "all_reduce", nil, 1, 8,
			ntWant{"fail", "2 distinct rank lines, expected 8 (1x8)"}, ntWant{"pass", ""}},
		{"one host judged as two nodes", "h200x2-2.19.6/all_reduce.txt", "all_reduce", nil, 2, 1,
			ntWant{"pass", ""}, ntWant{"fail", "ranks ran on 1 host, expected 2 nodes"}},
		// Seed 001: all_gather on 2 A4X nodes (2x4), header lost: its count
		// column says 8 ranks (1024 B is 32 floats per rank).
		{"seed 001 all_gather as 2x4", "seeds/001_a4x_all_gather_kubectl.txt", "all_gather", nil, 2, 4,
			ntWant{"pass", ""}, ntWant{"warn", "not verifiable (no rank lines or NCCL INFO nNodes tell it)"}},
		{"seed 001 all_gather as 8x4", "seeds/001_a4x_all_gather_kubectl.txt", "all_gather", nil, 8, 4,
			ntWant{"fail", "8 ranks by the size and count columns (1 KiB is 32 float per rank), expected 32 (8x4)"}, ntWant{"warn", "not verifiable"}},
		{"seed 001 TAS run as 8x4", "seeds/001_a4x_all_gather_tas.txt", "all_gather", nil, 8, 4,
			ntWant{"pass", ""}, ntWant{"warn", "not verifiable"}},
		// Only rank 71's line kept: at least 72 ranks; busbw/algbw of
		// all_reduce (2(n-1)/n) pins 72.
		{"NVL72, one rank line", "public/coreweave_pr43_gb200_nvl72.txt", "all_reduce", nil, 18, 4,
			ntWant{"pass", ""}, ntWant{"warn", "not verifiable (the rank lines of 1 rank name 1 host: at least 1), expected 18 nodes"}},
		{"NVL72 judged as 16x4", "public/coreweave_pr43_gb200_nvl72.txt", "all_reduce", nil, 16, 4,
			ntWant{"fail", "at least 72 ranks: rank lines up to rank 71, expected 64 (16x4)"}, ntWant{"warn", ""}},
		{"NVL72 judged as 19x4", "public/coreweave_pr43_gb200_nvl72.txt", "all_reduce", nil, 19, 4,
			ntWant{"fail", "72 ranks by busbw/algbw 586.06/297.16 at 512 MiB (all_reduce: 2(n-1)/n), expected 76 (19x4)"}, ntWant{"warn", ""}},
		// Seed 004's 2x8 rccl-tests run with one node's rank lines cut, as
		// pages quote outputs: ranks 0-7 are no proof of 8 when busbw/algbw
		// (2(n-1)/n) proves 16.
		{"rank lines 0-7 of 16", "seeds/004_mi355x_rccl_2node_all_reduce.txt", "all_reduce", cutAliyun1, 2, 8,
			ntWant{"pass", ""}, ntWant{"warn", "not verifiable (the rank lines of 8 ranks name 1 host: at least 1), expected 2 nodes"}},
		{"rank lines 0-7 of 16 judged 1x8", "seeds/004_mi355x_rccl_2node_all_reduce.txt", "all_reduce", cutAliyun1, 1, 8,
			ntWant{"fail", "16 ranks by busbw/algbw "}, ntWant{"warn", "not verifiable"}},
		// Seed 000: no rank lines, but every rank's NCCL INFO line names its
		// host (two pods) and the communicator's 16 ranks.
		{"seed 000 as 2x8", "seeds/000_aks_ndmv4_all_reduce.txt", "all_reduce", nil, 2, 8,
			ntWant{"pass", ""}, ntWant{"pass", ""}},
		{"seed 000 as 4x4", "seeds/000_aks_ndmv4_all_reduce.txt", "all_reduce", nil, 4, 4,
			ntWant{"pass", ""}, ntWant{"fail", "ranks ran on 2 hosts (the NCCL INFO lines of all 16 ranks), expected 4 nodes"}},
		// Rank lines cut away: NCCL INFO lines still tell both counts.
		{"NCCL INFO nranks and nNodes", "h200x2-variants/info.txt", "all_reduce", noRankLines, 1, 2,
			ntWant{"pass", ""}, ntWant{"pass", ""}},
		{"NCCL INFO nranks judged 1x4", "h200x2-variants/info.txt", "all_reduce", noRankLines, 1, 4,
			ntWant{"fail", "2 ranks in NCCL's communicator (NCCL INFO nranks 2), expected 4 (1x4)"}, ntWant{"pass", ""}},
		{"NCCL INFO nNodes judged 2x1", "h200x2-variants/info.txt", "all_reduce", noRankLines, 2, 1,
			ntWant{"pass", ""}, ntWant{"fail", "NCCL INFO nNodes 1, expected 2 nodes"}},
		// Rank lines and header gone: the header's -g 2 and the columns.
		{"broadcast without rank lines", "h200x2-2.19.6/broadcast.txt", "broadcast", noRankLines, 1, 2,
			ntWant{"warn", "not verifiable (a multiple of 2 ranks: nThread 1 nGpus 2 in the header), expected 2 (1x2)"}, ntWant{"warn", "not verifiable"}},
		{"broadcast without rank lines judged 1x3", "h200x2-2.19.6/broadcast.txt", "broadcast", noRankLines, 1, 3,
			ntWant{"fail", "a multiple of 2 ranks: nThread 1 nGpus 2 in the header, expected 3 (1x3)"}, ntWant{"warn", ""}},
		{"alltoall without rank lines", "h200x2-2.19.6/alltoall.txt", "alltoall", noRankLines, 1, 2,
			ntWant{"pass", ""}, ntWant{"warn", "not verifiable"}},
		// Issue 322: the reporter kept rank lines 0-99 of 1024 and cut the
		// list with a blank line: a lower bound, which a scope of fewer
		// ranks or hosts still fails.
		{"issue 322: rank lines 0-99 of 1024", "field/h100_128x8_first_100_ranks.txt", "all_reduce", nil, 128, 8,
			ntWant{"warn", "not verifiable (at least 100 ranks: rank lines up to rank 99, the list cut at line 103 (not ended by nccl-tests' '#' line);"},
			ntWant{"warn", "not verifiable (the rank lines of 100 ranks name 13 hosts: at least 13), expected 128 nodes"}},
		{"issue 322 judged 8x8", "field/h100_128x8_first_100_ranks.txt", "all_reduce", nil, 8, 8,
			ntWant{"fail", "at least 100 ranks: rank lines up to rank 99, the list cut at line 103 (not ended by nccl-tests' '#' line), expected 64 (8x8)"},
			ntWant{"fail", "ranks ran on at least 13 hosts (the rank lines of 100 ranks), expected 8 nodes"}},
		// The same without the blank line: the list ends as nccl-tests ends
		// it, so it holds every rank.
		{"issue 322 with its list ended by '#'", "field/h100_128x8_first_100_ranks.txt", "all_reduce",
			ntReplace(t, "NVIDIA H100 80GB HBM3\n\n#", "NVIDIA H100 80GB HBM3\n#"), 128, 8,
			ntWant{"fail", "100 distinct rank lines, expected 1024 (128x8)"}, ntWant{"fail", "ranks ran on 13 hosts, expected 128 nodes"}},
		// RCCL's version report between the list and its '#'.
		{"seed 004 two nodes", "seeds/004_mi355x_rccl_2node_all_reduce.txt", "all_reduce", nil, 2, 8,
			ntWant{"pass", ""}, ntWant{"pass", ""}},
		// Every line under SkyPilot's and mpirun's labels.
		{"SkyPilot console", "field/h200_2x8_skypilot_all_gather.txt", "all_gather", nil, 2, 8,
			ntWant{"pass", ""}, ntWant{"pass", ""}},
		// The alltoall's own 8 rank lines, not the sendrecv's rows after it.
		{"alltoall died, then sendrecv", "field/h100_2x4_alltoall_failure_then_sendrecv.txt", "alltoall", nil, 2, 4,
			ntWant{"pass", ""}, ntWant{"pass", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log := tc.log
			if tc.edit != nil {
				log = ntEdited(t, tc.log, filepath.Base(tc.log), tc.edit)
			}
			p := ntResult(t, log, tc.test, tc.nodes, tc.gpus)
			ntAssertCheck(t, p, "rank count", tc.ranks)
			ntAssertCheck(t, p, "node count", tc.nodeC)
			ntAssertCheck(t, p, "independent runs", ntWant{})
			if strings.Contains(tc.ranks.message, "the list cut") {
				assert.Equal(t, p.Info["ranks"], "at least 100")
			}
		})
	}
}

// A binary built without MPI=1 under mpirun: every process runs the test
// alone and prints a whole output of its own ranks. Real outputs of two
// such processes, and sixteen 1-rank outputs back to back made of the real
// two-rank MPI run by keeping rank 0's line (what each 1-rank process
// prints) and repeating the whole 16 times.
func TestResultIndependentRuns(t *testing.T) {
	sixteen := func(s string) string {
		var one []string
		for _, l := range strings.SplitAfter(s, "\n") {
			if !strings.Contains(l, "#  Rank  1 ") {
				one = append(one, l)
			}
		}
		return strings.Repeat(strings.Join(one, ""), 16)
	}
	tests := []struct {
		name, log   string
		edit        func(string) string
		nodes, gpus int
		want        ntWant
	}{
		{"issue 107: two 1-rank runs", "public/issue107_two_1rank_runs.txt", nil, 2, 1,
			ntWant{"fail", "2 independent 1-rank runs: nccl-tests built without MPI=1 under mpirun (expected one run of 2 ranks, 2x1)"}},
		{"issue 213: two 8-rank runs", "public/issue213_two_8rank_runs.txt", nil, 2, 8,
			ntWant{"fail", "2 independent 8-rank runs: nccl-tests built without MPI=1 under mpirun"}},
		{"sixteen 1-rank runs", "h200x2-2.19.6/mpi_np2_all_reduce.txt", sixteen, 2, 8,
			ntWant{"fail", "16 independent 1-rank runs: nccl-tests built without MPI=1 under mpirun (expected one run of 16 ranks, 2x8)"}},
		// Two processes' header lines interleaved line by line (each of
		// all_reduce.txt's first four lines printed twice): one part, two
		// headers.
		{"headers interleaved line by line", "h200x2-2.19.6/all_reduce.txt", func(s string) string {
			l := strings.SplitAfter(s, "\n")
			var b strings.Builder
			for _, x := range l[:4] {
				b.WriteString(x + x)
			}
			return b.String() + strings.Join(l[4:], "")
		}, 2, 2, ntWant{"fail", "2 independent 2-rank runs: nccl-tests built without MPI=1 under mpirun (expected one run of 4 ranks, 2x2)"}},
		{"one MPI run", "h200x2-2.19.6/mpi_np2_all_reduce.txt", nil, 1, 2, ntWant{}},
		// Two whole runs of the scope one after another are no sign.
		{"the same 2-rank run twice", "h200x2-2.19.6/all_reduce.txt", func(s string) string { return s + s }, 1, 2, ntWant{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log := tc.log
			if tc.edit != nil {
				log = ntEdited(t, tc.log, "all_reduce.log", tc.edit)
			}
			p := ntResult(t, log, "all_reduce", tc.nodes, tc.gpus)
			ntAssertCheck(t, p, "independent runs", tc.want)
			if tc.want.state == "fail" {
				assert.Equal(t, ntCheck(p, "rank count").OK, false)
			}
		})
	}
}

// Old nccl-tests print the largest error instead of #wrong: validation ran,
// and the error is judged against the bound those versions used.
func TestResultOldErrorColumn(t *testing.T) {
	tests := []struct {
		name, log, test string
		edit            func(string) string
		nodes, gpus     int
		want            ntWant
	}{
		{"2019 all_reduce, 5e-07 on float with 2 ranks", "edited/old_2019_all_reduce.txt", "all_reduce", nil, 1, 2, ntWant{"pass", ""}},
		{"issue 104: 3e+02 on uint8", "public/issue104_sendrecv_uint8_error.txt", "sendrecv", nil, 1, 2,
			ntWant{"fail", "error 300 in-place at 37748744 B (above the 1e-200 nccl-tests allows for uint8 on 2 ranks)"}},
		// 2e-05 reads as 1.5e-05 at least: above float's 1e-05 x (2-1).
		{"2019 all_reduce with 2e-05", "edited/old_2019_all_reduce.txt", "all_reduce",
			func(s string) string { return strings.Replace(s, "5e-07", "2e-05", 1) }, 1, 2,
			ntWant{"fail", "error 2e-05 out-of-place at 4 GiB (above the 1e-05 nccl-tests allows for float on 2 ranks)"}},
		// 1e-05 may be 0.95e-05: not above the bound.
		{"2019 all_reduce with 1e-05", "edited/old_2019_all_reduce.txt", "all_reduce",
			func(s string) string { return strings.Replace(s, "5e-07", "1e-05", 1) }, 1, 2, ntWant{"pass", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log := tc.log
			if tc.edit != nil {
				log = ntEdited(t, tc.log, filepath.Base(tc.log), tc.edit)
			}
			p := ntResult(t, log, tc.test, tc.nodes, tc.gpus)
			ntAssertCheck(t, p, "data validation", tc.want)
		})
	}
}

// A log of two tests: each is judged by its own output, and the other is
// named. Made of the real all_reduce and all_gather outputs one after
// the other, the all_reduce one with its footer saying 4 FAILED.
func TestResultSeveralTests(t *testing.T) {
	ar := strings.Replace(string(ntTestdata(t, "h200x2-2.19.6/all_reduce.txt")), "# Out of bounds values : 0 OK", "# Out of bounds values : 4 FAILED", 1)
	ag := string(ntTestdata(t, "h200x2-2.19.6/all_gather.txt"))
	arLines := strings.Count(ar, "\n")
	log := filepath.Join(t.TempDir(), "tests.log")
	assert.NilError(t, os.WriteFile(log, []byte(ar+ag), 0o644))
	tests := []struct {
		test, oob, note string
		rows            int
	}{
		{"all_gather", "pass", "the file also holds all_reduce_perf (lines 1-48), not judged: only the output of all_gather_perf is", 30},
		{"all_reduce", "fail", "the file also holds all_gather_perf (lines 49-96), not judged: only the output of all_reduce_perf is", 30},
	}
	assert.Equal(t, arLines, 48)
	for _, tc := range tests {
		t.Run(tc.test, func(t *testing.T) {
			p := ntResult(t, log, tc.test, 1, 2)
			assert.Equal(t, p.Error, "")
			ntAssertCheck(t, p, "out of bounds values", ntWant{tc.oob, ""})
			ntAssertCheck(t, p, "rank count", ntWant{"pass", ""})
			assert.DeepEqual(t, p.Diagnostics, []result.Diagnostic{{Level: result.Info, Source: "tests.log", Message: tc.note}})
			n := 0
			for _, m := range p.Metrics {
				if m.Name == "busbw" && m.Labels["placement"] == "out-of-place" {
					n++
				}
			}
			assert.Equal(t, n, tc.rows-2*btoi(tc.test == "all_gather"), "size 0 rows of all_gather carry no metric")
		})
	}
	// A test the file does not hold: the output of another test.
	p := ntResult(t, log, "broadcast", 1, 2)
	assert.Assert(t, strings.Contains(p.Error, "tests.log is output of all_reduce_perf, not broadcast_perf"), p.Error)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// An alltoall that died before its first row, then a whole sendrecv in
// the same file (field corpus): each is judged by its own lines, so the
// alltoall has its NCCL failure and no rows, and the sendrecv's rows do not
// stand in for it.
func TestResultDiedBeforeRows(t *testing.T) {
	const file = "h100_2x4_alltoall_failure_then_sendrecv.txt"
	p := ntResult(t, "field/"+file, "alltoall", 2, 4)
	assert.Assert(t, strings.Contains(p.Error, file+":18: cnode2-003: Test NCCL failure common.cu:401 'remote process exited or there was a network error / '"), p.Error)
	assert.Assert(t, strings.Contains(p.Error, "no result rows in "+file), p.Error)
	assert.Assert(t, !strings.Contains(p.Error, "redop"), p.Error)
	assert.Equal(t, len(p.Metrics), 0)
	assert.Equal(t, p.Info["ranks"], "8")
	assert.DeepEqual(t, p.Diagnostics, []result.Diagnostic{{Level: result.Info, Source: file,
		Message: "the file also holds sendrecv_perf (lines 25-56), not judged: only the output of alltoall_perf is"}})

	p = ntResult(t, "field/"+file, "sendrecv", 2, 4)
	assert.Equal(t, p.Error, "")
	ntAssertCheck(t, p, "rank count", ntWant{"pass", ""})
	ntAssertCheck(t, p, "out of bounds values", ntWant{"pass", ""})
}

// Old outputs of the field corpus: issue 37's all_gather pasted without
// its '#'s (11 columns, error 1e+00, 2 FAILED), and the DGX-2 log of five
// old tests back to back, each judged by its own part. Old all_gather
// and reduce_scatter printed busbw = algbw (before ec1b5e2): no rank
// count follows from it, the count column gives it.
func TestResultOldOutputs(t *testing.T) {
	const noHash, five = "field/v100_1x8_old_all_gather_no_hash.txt", "field/v100_dgx2_five_old_tests.txt"
	fiveNote := func(test string, lines ...string) string {
		var held []string
		for i, n := range []string{"all_gather", "all_reduce", "broadcast", "reduce", "reduce_scatter"} {
			if n != test {
				held = append(held, n+"_perf (lines "+lines[i]+", named by the command line before it)")
			}
		}
		return "the file also holds " + strings.Join(held, ", ") + ", not judged: only the output of " + test + "_perf is"
	}
	lines := []string{"1-55", "56-109", "110-163", "164-217", "218-270"}
	tests := []struct {
		name, log, test   string
		gpus              int
		valid, oob, ranks ntWant
		err, note         string // p.Error ("" none); the info diagnostic ("" none)
	}{
		{"issue 37 as 1x8", noHash, "all_gather", 8,
			ntWant{"fail", "error 1 out-of-place at 4 GiB (above the 7e-05 nccl-tests allows for float on 8 ranks)"},
			ntWant{"fail", "2 values out of bounds (FAILED)"}, ntWant{"pass", ""}, "", ""},
		{"issue 37 as 1x4", noHash, "all_gather", 4,
			ntWant{"fail", "error 1 out-of-place at 4 GiB (above the 7e-05 nccl-tests allows for float on 8 ranks)"},
			ntWant{"fail", "2 values out of bounds (FAILED)"},
			ntWant{"fail", "8 ranks by the size and count columns (4 GiB is 134217728 float per rank), expected 4 (1x4)"}, "", ""},
		{"five tests: all_reduce", five, "all_reduce", 12, ntWant{"pass", ""}, ntWant{"pass", ""}, ntWant{"pass", ""}, "", fiveNote("all_reduce", lines...)},
		{"five tests: all_gather", five, "all_gather", 12,
			ntWant{"fail", "error 1 out-of-place at 4294967280 B (above the 0.00011 nccl-tests allows for float on 12 ranks)"},
			ntWant{"fail", "4 values out of bounds (FAILED)"}, ntWant{"pass", ""}, "", fiveNote("all_gather", lines...)},
		{"five tests: reduce_scatter", five, "reduce_scatter", 12, ntWant{"pass", ""}, ntWant{"pass", ""}, ntWant{"pass", ""}, "", fiveNote("reduce_scatter", lines...)},
		{"five tests: broadcast", five, "broadcast", 12, ntWant{"pass", ""}, ntWant{"pass", ""}, ntWant{"pass", ""}, "", fiveNote("broadcast", lines...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := ntResult(t, tc.log, tc.test, 1, tc.gpus)
			assert.Equal(t, p.Error, tc.err)
			ntAssertCheck(t, p, "data validation", tc.valid)
			ntAssertCheck(t, p, "out of bounds values", tc.oob)
			ntAssertCheck(t, p, "rank count", tc.ranks)
			var notes []result.Diagnostic
			if tc.note != "" {
				notes = []result.Diagnostic{{Level: result.Info, Source: filepath.Base(tc.log), Message: tc.note}}
			}
			assert.DeepEqual(t, p.Diagnostics, notes)
		})
	}
}

// A log checked as another collective (a wrong --test) is that error
// alone: its rows are neither judged against the asked test's baseline
// nor read as rank evidence by the asked test's formulas. Input: the real
// 1x2 H200 all_reduce (testdata/recordings/h200-1x2-healthy).
func TestResultWrongTestIsTheError(t *testing.T) {
	log := "../../../testdata/recordings/h200-1x2-healthy/nccl.all_reduce/all_reduce.log"
	for _, test := range []string{"all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv"} {
		p := Result(plan.Output{Log: log}, Options{Test: test, Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}})
		assert.Assert(t, strings.HasPrefix(p.Error, "all_reduce.log is output of all_reduce_perf, not "+test+"_perf"), "%s: %s", test, p.Error)
		assert.Equal(t, len(p.Metrics), 0, test)
		for _, c := range p.Checks {
			assert.Assert(t, c.OK || c.Name != "rank count", "%s: %+v", test, c)
		}
	}
}

// A failure every rank printed is said once, with how many more ranks
// printed it, and nccl-tests' call-stack lines are counted, not quoted.
// Input: NVIDIA/nccl-tests issue output kept in testdata/field (source in
// its case.yaml): dozens of ranks print "Test NCCL failure ... 'unhandled
// cuda error'", each with its stack.
func TestResultFoldsRepeatedFailures(t *testing.T) {
	log := "../../../testdata/field/nccl-tests/h100-128x8-first-100-ranks-nccl-failure/all_reduce.log"
	p := Result(plan.Output{Log: log}, Options{Test: "all_reduce", Topology: plan.Topology{Scope: plan.Scope{Nodes: 128, GPUsPerNode: 8}}})
	assert.Equal(t, strings.Count(p.Error, "unhandled cuda error"), 1, p.Error)
	assert.Assert(t, strings.Contains(p.Error, "more like it, from line"), p.Error)
	assert.Assert(t, strings.Contains(p.Error, "call-stack lines of nccl-tests not quoted"), p.Error)
	assert.Assert(t, !strings.Contains(p.Error, "Test failure common.cu"), p.Error)
}

// The -J JSON beside a real text log, overwritten or emptied (one cut
// short keeps its complete results and is judged as truncated): the test is judged on the text, and a "JSON
// output" check warns, naming the file, so that the sign-off shows the
// numbers are the text's rounded ones. The whole JSON gives no such check.
func TestResultUnusableJSON(t *testing.T) {
	cases := []struct {
		name string
		edit func(string) string
		want ntWant
	}{
		{"whole", nil, ntWant{}},
		{"overwritten", func(s string) string { return "\x00\x00\x00" + s[3:] }, ntWant{"warn", "broadcast.json unusable, judged on the text output (its numbers rounded): "}},
		{"empty", func(string) string { return "" }, ntWant{"warn", "broadcast.json unusable, judged on the text output"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := ntEdited(t, "h200x2-2.19.6/broadcast.txt", "broadcast.log", nil)
			js := ntEdited(t, "h200x2-2.19.6/broadcast.json", "broadcast.json", c.edit)
			p := Result(plan.Output{Step: "broadcast", Log: log, Files: map[string]string{"broadcast.json": js}},
				Options{Test: "broadcast", Topology: ntTopo(1, 2)})
			assert.Equal(t, p.Error, "")
			assert.Assert(t, len(p.Metrics) > 0)
			ntAssertCheck(t, p, "JSON output", c.want)
		})
	}
}

// Lines that say the binary could not run are the error of an output with
// no row only. Inputs: the real 1x2 H200 all_reduce with a shell's
// "command not found" (recorded: testdata/field/torchbench/
// bash-python-command-not-found-hbm) before its header, as a login
// profile leaves one in a job's log: still no error; and the real
// libnccl-not-found output of NVIDIA/nccl-tests#85: the error names it.
func TestResultSetupLines(t *testing.T) {
	noise, err := os.ReadFile("../../../testdata/field/torchbench/bash-python-command-not-found-hbm/nopython.log")
	assert.NilError(t, err)
	healthy, err := os.ReadFile("../../../testdata/recordings/h200-1x2-healthy/nccl.all_reduce/all_reduce.log")
	assert.NilError(t, err)
	log := filepath.Join(t.TempDir(), "all_reduce.log")
	assert.NilError(t, os.WriteFile(log, append(noise, healthy...), 0o644))
	p := ntResult(t, log, "all_reduce", 1, 2)
	assert.Equal(t, p.Error, "")
	assert.Assert(t, len(p.Metrics) > 0)

	p = ntResult(t, "../../../../testdata/field/nccl-tests/longhorn-1x4-libnccl-not-found/all_reduce.log", "all_reduce", 1, 4)
	assert.Assert(t, strings.Contains(p.Error, "no result rows in all_reduce.log; all_reduce.log:1: ./build/all_reduce_perf: error while loading shared libraries: libnccl.so.2"), p.Error)
}
