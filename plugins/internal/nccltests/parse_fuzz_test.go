package nccltests

import (
	"bytes"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// ntCuts returns data and copies of it cut at a few places, as a killed
// run leaves it.
func ntCuts(data []byte) [][]byte {
	out := [][]byte{data}
	for _, frac := range []int{3, 2} {
		out = append(out, data[:len(data)*(frac-1)/frac+1])
	}
	return out
}

// ntCheckOutput checks what must hold for any Output.
func ntCheckOutput(t *testing.T, o *Output, format string, lines int) {
	t.Helper()
	if o == nil {
		t.Fatal("nil Output without error")
	}
	if o.Format != format {
		t.Errorf("Format %q", o.Format)
	}
	for _, r := range o.Rows {
		if format == "text" && (r.Line < 1 || r.Line > lines) || format == "json" && r.Line != 0 {
			t.Errorf("row line %d of %d lines", r.Line, lines)
		}
		if r.Size < 0 || r.Count < 0 {
			t.Errorf("row size %d count %d", r.Size, r.Count)
		}
		if format == "text" && r.OutOfPlace == nil && r.InPlace == nil {
			t.Errorf("row of line %d has no measurement", r.Line)
		}
		if !utf8.ValidString(r.Type) || !utf8.ValidString(r.Redop) {
			t.Errorf("row names %q %q", r.Type, r.Redop)
		}
	}
	if ntHasDiag(o.Errors, parseInternalError) {
		t.Errorf("parser bug: %v", o.Errors)
	}
	for _, ds := range [][]Diag{o.Errors, o.Warnings} {
		if len(ds) > outputDiagMax+1 {
			t.Errorf("%d diagnostics kept", len(ds))
		}
		for _, d := range ds {
			if len(d.Text) > outputDiagTextMax+len("...") || !utf8.ValidString(d.Text) || d.Line < 0 || d.Line > lines {
				t.Errorf("diagnostic %+v", d)
			}
		}
	}
	for _, r := range o.Ranks {
		if !utf8.ValidString(r.Host) || !utf8.ValidString(r.DeviceName) || !utf8.ValidString(r.BusID) {
			t.Errorf("rank %+v", r)
		}
	}
	if format == "text" && o.RankCount != len(o.Ranks) || o.Groups > len(o.Ranks) || o.OutOfBounds < -1 {
		t.Errorf("rank count %d of %d ranks, %d groups, out of bounds %d", o.RankCount, len(o.Ranks), o.Groups, o.OutOfBounds)
	}
	if o.NRanks < 0 || o.NNodes < 0 || o.Headers < 0 {
		t.Errorf("nranks %d nnodes %d headers %d", o.NRanks, o.NNodes, o.Headers)
	}
	// Parts cover the rows, ranks and lines in order, without overlap.
	if len(o.Parts) == 1 {
		t.Errorf("one part kept: %+v", o.Parts[0])
	}
	row, rank, line := 0, 0, 1
	for i, pt := range o.Parts {
		if pt.RowFrom != row || pt.RowTo < pt.RowFrom || pt.RankFrom != rank || pt.RankTo < pt.RankFrom ||
			pt.FirstLine < line || pt.LastLine < pt.FirstLine || pt.LastLine > lines || i == 0 && pt.FirstLine != 1 {
			t.Fatalf("part %d %+v after row %d rank %d line %d", i, pt, row, rank, line)
		}
		row, rank, line = pt.RowTo, pt.RankTo, pt.LastLine
	}
	if len(o.Parts) > 0 && (row != len(o.Rows) || rank != len(o.Ranks)) {
		t.Errorf("parts end at row %d rank %d of %d, %d", row, rank, len(o.Rows), len(o.Ranks))
	}
	// Select keeps the rows of the part it picks and nothing else.
	for _, pt := range o.Parts {
		sel, skipped := o.Select(pt.Collective)
		if sel == nil || len(skipped) >= len(o.Parts) || sel.RankCount != len(sel.Ranks) {
			t.Fatalf("Select(%q) of %d parts: %d left out", pt.Collective, len(o.Parts), len(skipped))
		}
		if sel == o || sel.Parts != nil {
			continue
		}
		if len(sel.Rows) != pt.RowTo-pt.RowFrom {
			t.Fatalf("Select(%q): %d rows, its part %d", pt.Collective, len(sel.Rows), pt.RowTo-pt.RowFrom)
		}
		for _, r := range sel.Rows {
			if r.Line < pt.FirstLine || r.Line > pt.LastLine {
				t.Fatalf("Select(%q) holds a row of line %d, out of its part's lines %d-%d", pt.Collective, r.Line, pt.FirstLine, pt.LastLine)
			}
		}
	}
}

// FuzzParseText checks that ParseText never panics nor fails on any input,
// that its Output is sane, and that it does not depend on the read buffer
// size.
func FuzzParseText(f *testing.F) {
	for _, rel := range ntFiles(f, ".txt") {
		for _, c := range ntCuts(ntTestdata(f, rel)) {
			f.Add(c, uint8(len(c)))
		}
	}
	// The shapes of real outputs the files show only in part: lines under
	// stacked kubectl and mpirun labels, with CRLF; two tests back to back;
	// NCCL INFO lines naming ranks and hosts; a row with its redop printed
	// empty; numbers in getFloatStr's short forms.
	ar := string(ntTestdata(f, "h200x2-2.19.6/all_reduce.txt"))
	var labelled strings.Builder
	for _, l := range strings.SplitAfter(ar, "\n") {
		labelled.WriteString("[pod/p/c] 2024-05-01T12:00:00.123456789Z [1,0]<stdout>:" + strings.TrimSuffix(l, "\n") + "\r\n")
	}
	for _, s := range []string{
		labelled.String(),
		ar + string(ntTestdata(f, "h200x2-2.19.6/all_gather.txt")),
		"vm:1199:1211 [1] NCCL INFO comm 0x55ea629b9a70 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0\n" +
			"h:1:2 [0] NCCL INFO [Rank 0] ncclCommInitRankConfig comm 0x1 rank 0 nranks 16 cudaDev 0 - Init START\n" +
			"x NCCL INFO Init timings - ncclCommInitRankConfig: rank 99999999999 nranks 2 total 0.45\n",
		"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
			"  2147483648     536870912     float                 -1     1.76   1e+06   1e+06       0  1.2e+04  2e+05  1.5e-07  1e+06\n",
		// testdata/field's shapes cut into one text: Ray's coloured label
		// over mpirun's, a rank list cut by a blank line then an NCCL WARN
		// line, headerless old rows of reduce (13 columns) and all_gather
		// (11), a footer without '#', a command line naming the test.
		"\x1b[2m\x1b[36m(head, rank=0, pid=3808)\x1b[0m [1,0]<stdout>:#  Rank  0 Group  0 Pid   7774 on nc-d87e1263-head device  0 [0000:8f:00] NVIDIA H200\n" +
			"\n[2026-11-30 06:20:33] vm:1223:1223 [0] bootstrap.cc:114 NCCL WARN Bootstrap : no socket interface found\n\n#\n" +
			"Running: ./build/reduce_perf -b 8 -e 10240M -f 2 -g 12\n" +
			"  4294967296    1073741824   float     sum       0    80680   48.80   48.80  2e-07    80962   48.63   48.63  2e-07\n" +
			"  4294967296     134217728   float    29122  129.05  129.05  1e+00    29169  128.84  128.84  1e+00\n" +
			" Out of bounds values : 2 FAILED\n Avg bus bandwidth    : 128.942\n",
	} {
		f.Add([]byte(s), uint8(len(s)))
	}
	f.Fuzz(func(t *testing.T, data []byte, size uint8) {
		o, err := ParseText(bytes.NewReader(data), "fuzz")
		if err != nil {
			t.Fatalf("error reading a byte slice: %v", err)
		}
		ntCheckOutput(t, o, "text", bytes.Count(data, []byte{'\n'})+1)
		o2, err := parseTextSized(iotest.HalfReader(bytes.NewReader(data)), "fuzz", 16+int(size))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(o, o2, cmpopts.EquateNaNs()); d != "" {
			t.Errorf("with a %d byte buffer (-64K +small):\n%s", 16+int(size), d)
		}
	})
}

// FuzzParseJSON checks that ParseJSON never panics, returns an Output or
// an error naming the input, and does not depend on how the input arrives.
func FuzzParseJSON(f *testing.F) {
	for _, rel := range ntFiles(f, ".json") {
		for _, c := range ntCuts(ntTestdata(f, rel)) {
			f.Add(c)
		}
	}
	f.Add([]byte(`{"results":[{"size":"8","root":"  -1","in_place":{"time":"nan","nwrong":null}}],"average_bus_bandwidth":1}`))
	// The 1-GPU broadcast's in-place no-op at 2 GiB: a busbw the text
	// prints as 1e+06.
	f.Add([]byte(`{"config":{"nthreads":1,"ngpus":1,"devices":[{"rank":0,"hostname":"vm"}]},"results":[{"size":2147483648,"count":536870912,"type":"float","redop":"none","root":"     0","in_place":{"time":1.757201,"alg_bw":1222105.42,"bus_bw":1222105.42,"nwrong":0}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseJSON(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			if strings.Contains(err.Error(), parseInternalError) {
				t.Fatalf("parser bug: %v", err)
			}
			if o != nil || !strings.Contains(err.Error(), "fuzz.json") {
				t.Fatalf("Output %v with error %v", o, err)
			}
			return
		}
		ntCheckOutput(t, o, "json", 0)
		o2, err := ParseJSON(iotest.HalfReader(bytes.NewReader(data)), "fuzz.json")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(o, o2, cmpopts.EquateNaNs()); d != "" {
			t.Errorf("read in halves (-whole +halves):\n%s", d)
		}
	})
}
