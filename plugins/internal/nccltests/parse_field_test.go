package nccltests

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// The outputs of testdata/field/ (copies of the field corpus, README.md
// names their sources): shapes of real logs the other files do not show.

// ntParseString parses s as a text output named name.
func ntParseString(t *testing.T, s, name string) *Output {
	t.Helper()
	o, err := ParseText(strings.NewReader(s), name)
	assert.NilError(t, err)
	return o
}

// ntLines returns the lines of s, line breaks kept, 1-based (l[0] is "").
func ntLines(s string) []string { return append([]string{""}, strings.SplitAfter(s, "\n")...) }

// A test whose output holds a header and errors but no row, then the next
// test's output: a second header line of a kind the part already had
// starts a new part, whatever the part holds. Headers that several
// processes of one run print, back to back or line by line, stay one part.
func TestParseTextPartsByHeader(t *testing.T) {
	both := string(ntTestdata(t, "field/h100_2x4_alltoall_failure_then_sendrecv.txt"))
	l := ntLines(both)
	// The alltoall's header lines alone, its rank lines, column header and
	// errors (lines 6-24) cut: a test that printed nothing after "# Using
	// devices".
	headerOnly := strings.Join(l[1:6], "") + strings.Join(l[25:], "")
	ar := string(ntTestdata(t, "h200x2-2.19.6/all_reduce.txt"))
	arl := ntLines(ar)
	// Its first four lines (JSON, version, Collective, nThread) each
	// printed twice, as two processes that interleave line by line.
	twice := ""
	for _, x := range arl[1:5] {
		twice += x + x
	}
	twice += strings.Join(arl[5:], "")
	type part struct {
		coll               string
		first, last        int
		rows, ranks, heads int
	}
	tests := []struct {
		name, text string
		parts      []part // nil: one part (Output.Parts nil)
		headers    int
	}{
		{"alltoall died after its column header, then sendrecv", both,
			[]part{{"alltoall", 1, 24, 0, 8, 1}, {"sendrecv", 25, 56, 10, 8, 1}}, 2},
		{"alltoall printed only its header, then sendrecv", headerOnly,
			[]part{{"alltoall", 1, 5, 0, 0, 1}, {"sendrecv", 6, 37, 10, 8, 1}}, 2},
		{"every header line twice, line by line", twice, nil, 2},
		{"issue 107: two processes' headers, then their rank lines", string(ntTestdata(t, "public/issue107_two_1rank_runs.txt")), nil, 2},
		{"issue 213: the same with 8 GPUs each", string(ntTestdata(t, "public/issue213_two_8rank_runs.txt")), nil, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := ntParseString(t, tc.text, "tests.log")
			assert.Equal(t, o.Headers, tc.headers)
			assert.Equal(t, len(o.Parts), len(tc.parts), "%+v", o.Parts)
			for i, w := range tc.parts {
				pt := o.Parts[i]
				got := part{pt.Collective, pt.FirstLine, pt.LastLine, pt.RowTo - pt.RowFrom, pt.RankTo - pt.RankFrom, pt.Headers}
				assert.Equal(t, got, w)
			}
		})
	}

	// Each test's lines alone: the alltoall's errors, none of the
	// sendrecv's rows.
	o := ntParseString(t, both, "tests.log")
	sel, skipped := o.Select("alltoall")
	assert.Equal(t, len(sel.Rows), 0)
	assert.Equal(t, len(sel.Ranks), 8)
	assert.Equal(t, len(sel.Errors), 7)
	assert.Equal(t, sel.Errors[0].Line, 18)
	assert.Assert(t, strings.Contains(sel.Errors[0].Text, "Test NCCL failure common.cu:401"))
	assert.Equal(t, len(skipped), 1)
	assert.Equal(t, skipped[0].Collective, "sendrecv")
	sel, _ = o.Select("sendrecv")
	assert.Equal(t, len(sel.Rows), 10)
	assert.Equal(t, len(sel.Errors), 0)
	assert.Equal(t, sel.Rows[9].OutOfPlace.Time, 1.8e+07)
}

// A device list ends with the '#' line nccl-tests prints after it; one
// that does not (a page that quotes the first rank lines, an output that
// stopped) is marked cut at its last rank line. Other programs' lines
// (NCCL INFO, NCCL's blank line and WARN line, RCCL's version report)
// may come between the list and its '#'.
func TestParseTextRankListEnd(t *testing.T) {
	first100 := string(ntTestdata(t, "field/h100_128x8_first_100_ranks.txt"))
	ar := string(ntTestdata(t, "h200x2-2.19.6/all_reduce.txt"))
	// noiface.txt's blank line and NCCL WARN line (NCCL starts a WARN
	// with a line break), put between all_reduce.txt's rank lines and
	// its '#'.
	warn := "\n[2026-11-30 06:20:33] vm:1223:1223 [0] bootstrap.cc:114 NCCL WARN Bootstrap : no socket interface found\n"
	rank1 := "#  Rank  1 Group  0 Pid   1550 on         vm device  1 [0000:00:07] NVIDIA H200\n"
	tests := []struct {
		name, text string
		ranks, cut int
	}{
		{"issue 322: rank lines 0-99, a blank line, then '#'", first100, 100, 103},
		{"issue 322 without its blank line", strings.Replace(first100, "NVIDIA H100 80GB HBM3\n\n#", "NVIDIA H100 80GB HBM3\n#", 1), 100, 0},
		{"issue 322 with '...' for its blank line", strings.Replace(first100, "NVIDIA H100 80GB HBM3\n\n#", "NVIDIA H100 80GB HBM3\n...\n#", 1), 100, 103},
		{"NCCL INFO lines before the '#'", string(ntTestdata(t, "h200x2-variants/info.txt")), 2, 0},
		{"NCCL's blank line and WARN line before the '#'", strings.Replace(ar, rank1, rank1+warn, 1), 2, 0},
		{"a blank line before the next rank line", strings.Replace(ar, rank1, "\n"+rank1, 1), 2, 7},
		{"RCCL's version report before the '#'", string(ntTestdata(t, "seeds/004_mi355x_rccl_2node_all_reduce.txt")), 16, 0},
		{"a CUDA failure after the list", string(ntTestdata(t, "edited/cuda_failure.txt")), 2, 8},
		{"the input ends in the list", string(ntTestdata(t, "public/issue213_two_8rank_runs.txt")), 4, 11},
		{"the next test's header right after the list", strings.Replace(ar, rank1, rank1+"# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809\n", 1), 2, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := ntParseString(t, tc.text, "all_reduce.log")
			assert.Equal(t, len(o.Ranks), tc.ranks)
			assert.Equal(t, o.RanksCutAt, tc.cut)
		})
	}
}

// SkyPilot's console puts Ray's "(head, rank=0, pid=3808) " before every
// line, and mpirun --tag-output's label follows it.
func TestParseTextSkyPilot(t *testing.T) {
	o := ntText(t, "field/h200_2x8_skypilot_all_gather.txt")
	assert.Equal(t, len(o.Rows), 24)
	assert.Equal(t, len(o.Ranks), 16)
	assert.Equal(t, o.Ranks[15].Host, "nc-d87e1263-worker1")
	assert.Equal(t, o.RanksCutAt, 0)
	assert.Equal(t, ntRow(t, o, 8589934592).OutOfPlace.BusBW, 325.72)
	assert.Equal(t, o.NThreads*o.NGPUs, 1)
	assert.Equal(t, o.OutOfBounds, 0)
	assert.Equal(t, o.AvgBusBW, 122.073)
	assert.Equal(t, len(o.Errors)+len(o.Warnings), 0, "%v %v", o.Errors, o.Warnings)
}

// ntRowsOnly keeps the lines of s that do not start with '#': a table
// pasted without its header.
func ntRowsOnly(s string) string {
	var keep []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(strings.TrimLeft(l, " "), "#") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// Rows seen before any column header are read by the layout the row
// itself shows: its number of columns, a name or a number where today's
// redop column is, and the old error column's %5.0le form against
// #wrong's integers.
func TestParseTextGuessedLayout(t *testing.T) {
	five := ntLines(string(ntTestdata(t, "field/v100_dgx2_five_old_tests.txt")))
	tests := []struct {
		name, text  string
		rows        int
		size, count int64 // the row looked at: the first of that size
		redop       string
		root        int
		busbw       float64
		wrong       int64 // out-of-place
		maxErr      float64
		hasErr      bool
		footer      bool // "Out of bounds values : 2 FAILED" and the average read
	}{
		// Issue 37: old all_gather without its '#'s: 11 columns, no redop.
		{"old all_gather pasted without '#'", string(ntTestdata(t, "field/v100_1x8_old_all_gather_no_hash.txt")), 1,
			4294967296, 134217728, "", -1, 129.05, -1, 1, true, true},
		// The five-test log's tables alone, one old test at a time.
		{"old all_gather rows alone", ntRowsOnly(strings.Join(five[21:52], "")), 31,
			4294967280, 89478485, "", -1, 73.04, -1, 1, true, false},
		{"old all_reduce rows alone", ntRowsOnly(strings.Join(five[75:106], "")), 31,
			4294967296, 1073741824, "sum", -1, 123.50, -1, 2e-07, true, false},
		{"old broadcast rows alone", ntRowsOnly(strings.Join(five[129:160], "")), 31,
			4294967296, 1073741824, "", 0, 122.02, -1, 0, true, false},
		{"old reduce rows alone", ntRowsOnly(strings.Join(five[183:214], "")), 31,
			4294967296, 1073741824, "sum", 0, 0, -1, 2e-07, true, false},
		// Today's rows with the redop printed empty (hypercube), headerless:
		// 12 columns like the old broadcast, but #wrong is an integer.
		{"empty redop rows alone", ntRowsOnly(string(ntTestdata(t, "edited/empty_redop.txt"))), 30,
			2147483648, 268435456, "", -1, 0, 0, 0, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := ntParseString(t, tc.text, "log")
			assert.Equal(t, len(o.Rows), tc.rows)
			assert.Equal(t, len(o.Errors)+len(o.Warnings), 0, "%v %v", o.Errors, o.Warnings)
			r := ntRow(t, o, tc.size)
			assert.Equal(t, r.Count, tc.count)
			assert.Equal(t, r.Type, "float")
			assert.Equal(t, r.Redop, tc.redop)
			assert.Equal(t, r.Root, tc.root)
			if tc.busbw != 0 {
				assert.Equal(t, r.OutOfPlace.BusBW, tc.busbw)
			}
			assert.Equal(t, r.OutOfPlace.Wrong, tc.wrong)
			assert.Equal(t, r.OutOfPlace.HasMaxError, tc.hasErr)
			assert.Equal(t, r.OutOfPlace.MaxError, tc.maxErr)
			assert.Equal(t, r.InPlace != nil, true)
			assert.Equal(t, o.FooterSeen, tc.footer)
			if tc.footer {
				assert.Equal(t, o.OutOfBounds, 2)
				assert.Equal(t, o.OutOfBoundsFailed, true)
				assert.Equal(t, o.AvgBusBW, 128.942)
			}
		})
	}
}

// Five old outputs back to back name no test (no "Collective test
// starting" line before 2.13): the test asked for is told by the command
// line before each ("Running: ... ./build/all_gather_perf ..."), and
// without those lines by its rows.
func TestParseTextSelectUnnamed(t *testing.T) {
	five := string(ntTestdata(t, "field/v100_dgx2_five_old_tests.txt"))
	var noCmd []string
	for _, l := range strings.SplitAfter(five, "\n") {
		if !strings.HasPrefix(l, "Running: ") {
			noCmd = append(noCmd, l)
		}
	}
	type rows struct{ first, last int }
	tests := []struct {
		test          string
		withCmd, rows rows // the row lines of the part chosen, with the command lines and without
	}{
		{"all_gather", rows{21, 51}, rows{20, 50}},
		{"all_reduce", rows{75, 105}, rows{73, 103}},
		{"broadcast", rows{129, 159}, rows{126, 156}},
		{"reduce", rows{183, 213}, rows{179, 209}},
		{"reduce_scatter", rows{237, 267}, rows{232, 262}},
		// Old alltoall printed its rows as all_gather did: only the
		// command line tells them apart.
		{"alltoall", rows{}, rows{20, 50}},
	}
	for _, in := range []struct {
		name, text string
		cmd        bool
	}{{"with command lines", five, true}, {"without", strings.Join(noCmd, ""), false}} {
		o := ntParseString(t, in.text, "dgx2.log")
		assert.Equal(t, len(o.Parts), 5)
		for _, tc := range tests {
			t.Run(in.name+"/"+tc.test, func(t *testing.T) {
				want := tc.rows
				if in.cmd {
					want = tc.withCmd
				}
				sel, skipped := o.Select(tc.test)
				if want == (rows{}) {
					// No part is the test's: the whole, for Result to name.
					assert.Assert(t, sel == o && skipped == nil)
					return
				}
				assert.Equal(t, len(skipped), 4)
				assert.Equal(t, len(sel.Rows), 31)
				assert.Equal(t, rows{sel.Rows[0].Line, sel.Rows[30].Line}, want)
				assert.Equal(t, sel.RankCount, 12)
				if in.cmd {
					assert.Equal(t, skipped[0].Name(), map[bool]string{true: "all_reduce_perf", false: "all_gather_perf"}[tc.test == "all_gather"])
				}
			})
		}
	}
}
