package nccltests

import (
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/textdiag"
)

// Output is what one nccl-tests output (the text it prints, or the file it
// writes with -J) says about a run. ParseText and ParseJSON fill it.
//
// When several whole test outputs are concatenated in one text, Rows, Ranks,
// Errors and Warnings hold those of all of them in input order (rows of
// equal size, count, type, op and root folded as cycles); the scalar
// fields keep the first value seen, except OutOfBounds (the sum of every
// footer's count), OutOfBoundsFailed (true when any footer failed),
// FooterSeen (true when any footer was seen), NRanks and NNodes (the
// largest) and Headers (the sum). Parts tells the outputs apart, and
// Select returns those of one test.
type Output struct {
	// Format is "text" or "json": which parser filled the Output.
	Format string
	// TestsVersion is the nccl-tests version, e.g. "2.19.6" ("" unknown; the
	// JSON file does not record it).
	TestsVersion string
	// NCCLVersion is the NCCL library version, e.g. "2.28.9" from
	// "nccl-library=22809" or JSON nccl_version, or "2.25.1+cuda12.8" from an
	// "NCCL version 2.25.1+cuda12.8" line ("" unknown).
	NCCLVersion string
	// Collective is the test's name without "_perf" and any suffix after it,
	// e.g. "all_reduce" ("" unknown).
	Collective string
	// NThreads is the number of threads per process (-t), NGPUs the number of
	// GPUs per thread (-g); 0 unknown.
	NThreads, NGPUs int
	// MinBytes and MaxBytes are the smallest and largest message sizes asked
	// for (-b, -e), in bytes; 0 unknown.
	MinBytes, MaxBytes int64
	// StepFactor is the multiplication factor between sizes (-f), from
	// "step: 2(factor)" or the JSON's step_factor; 0 when unknown or when
	// sizes step by a fixed increment (-i).
	StepFactor int64
	// ReducedMaxBytes is the largest size in bytes that nccl-tests fell back
	// to for lack of GPU memory ("# Reducing maxBytes to N"); 0 none.
	ReducedMaxBytes int64
	// Ranks has one entry per rank line ("#  Rank  0 Group  0 Pid 1550 on vm
	// device  0 [0000:00:06] NVIDIA H200") of the text, duplicates included.
	// From JSON it has one entry per config.devices element, which is one
	// per process (the first rank of that process).
	Ranks []Rank
	// RankCount is the number of ranks the output shows: len(Ranks) for
	// text; len(config.devices)*nthreads*ngpus for JSON. 0 when the output
	// has no rank information.
	RankCount int
	// Rows are the result rows in the order first printed, one per
	// distinct size, count, type, op and root: a row printed again (the
	// cycles of nccl-tests -N, rccl-tests' stress cycles) is folded into
	// the first while parsing (Row.Cycles), so memory does not grow with
	// the cycles.
	Rows []Row
	// OutOfBounds is the count on the "# Out of bounds values : N OK" line
	// (JSON out_of_bounds.count); -1 when not seen.
	OutOfBounds int
	// OutOfBoundsFailed is true when that line says FAILED (JSON
	// out_of_bounds.okay false).
	OutOfBoundsFailed bool
	// AvgBusBW is the "# Avg bus bandwidth" value in GB/s (JSON
	// average_bus_bandwidth); -1 when not seen.
	AvgBusBW float64
	// FooterSeen is true when the "Out of bounds values" line (JSON
	// out_of_bounds) was seen.
	FooterSeen bool
	// Errors are the tool's own failure reports ("Test NCCL failure", "Test
	// timeout", "Invalid number of GPUs", "# error: ...", usage errors, JSON
	// errors[] strings) and rows cut short by a truncated output.
	Errors []Diag
	// Setup are the lines that say the binary could not run at all
	// (toolfail.Setup: "error while loading shared libraries", "Cuda
	// failure common.cu:891 'CUDA driver version is insufficient for
	// CUDA runtime version'"). They are errors of an output with no row
	// only: a login profile's stray "bash: module: command not found" in
	// a complete run's log says nothing of the run.
	Setup []Diag
	// Warnings are NCCL WARN lines (the text after "NCCL WARN"), row-like
	// lines that could not be parsed, and other oddities worth a look.
	Warnings []Diag
	// Libraries are the versions rccl-tests reports on lines of their own
	// ("RCCL version : 2.27.7-HEAD:96a25b5"), by name: "RCCL", "HIP",
	// "ROCm"; nil when there are none.
	Libraries map[string]string
	// Groups is the number of distinct Group values among Ranks (more than
	// one with NCCL_TESTS_SPLIT); 0 unknown.
	Groups int
	// NRanks is the largest communicator size NCCL INFO lines print
	// ("comm 0x... rank 3 nranks 16 cudaDev 3 ...", "nRanks 16"), NNodes
	// the largest node count ("nNodes 2"); 0 when no such line was seen
	// (NCCL_DEBUG unset, and always for JSON).
	NRanks, NNodes int
	// InfoHosts is the host of each rank as the NCCL INFO lines that name
	// a rank's communicator ("vm:1199:1211 [1] NCCL INFO comm 0x... rank 1
	// nranks 2 ...") give it in their host:pid:tid prefix; nil when none.
	// Every rank's line proves the hosts as the rank lines do.
	InfoHosts map[int]string
	// Headers is the number of "# nThread ..." header lines: one per
	// output, more when several processes each printed a whole output.
	Headers int
	// RanksCutAt is the line of the last rank line of a device list that
	// did not end as nccl-tests ends it (the '#' line it prints right after
	// the list, src/util.cu writeDeviceReport and the header or "Reducing
	// maxBytes" line after it): a page that quotes the first rank lines and
	// cuts the rest with a blank line or "...", an output cut there. Its
	// rank lines are a lower bound, not the run's ranks. 0 when every
	// device list ended.
	RanksCutAt int
	// Parts are the test outputs the text holds, in input order: one per
	// header that follows rows or a footer, or a header line of a kind its
	// part already had (a log of several tests run one after another, of
	// a test that died before its rows and the next one, or of processes
	// that each printed a whole output); a part of header lines only is
	// joined to the next unless they name different tests. nil when the
	// text holds at most one; Select picks those of a test.
	Parts []Part
}

// Part is one test output within a text that holds several: the lines
// from its first header line to the next part's. Its fields mean what the
// Output fields of the same names mean, for its lines only.
type Part struct {
	// FirstLine and LastLine are the 1-based input lines it spans (the
	// first part starts at line 1); a flattened output's parts share their
	// line.
	FirstLine, LastLine int
	// RowFrom, RowTo and RankFrom, RankTo are its ranges [from, to) in the
	// Output's Rows and Ranks.
	RowFrom, RowTo, RankFrom, RankTo int

	Collective, TestsVersion, NCCLVersion string
	NThreads, NGPUs                       int
	MinBytes, MaxBytes                    int64
	StepFactor, ReducedMaxBytes           int64
	OutOfBounds                           int
	OutOfBoundsFailed, FooterSeen         bool
	AvgBusBW                              float64
	Libraries                             map[string]string
	NRanks, NNodes, Headers               int
	InfoHosts                             map[int]string
	RanksCutAt                            int
	// Program is the test that a command line before the part's header
	// names ("all_gather" from "Running: ./build/all_gather_perf -b 8",
	// as scripts and pages print it), "" none; Select goes by it when the
	// output does not name its test (Collective "").
	Program string
}

// newPart returns a Part starting at line with nothing seen yet.
func newPart(line, rows, ranks int) Part {
	return Part{FirstLine: line, RowFrom: rows, RowTo: rows, RankFrom: ranks, RankTo: ranks, OutOfBounds: -1, AvgBusBW: -1}
}

// hasContent reports whether the part has rows or a footer: a header line
// after that starts another part.
func (pt *Part) hasContent() bool {
	return pt.RowTo > pt.RowFrom || pt.FooterSeen || pt.AvgBusBW >= 0
}

// Name is the part's test as nccl-tests names it ("all_gather_perf"), by
// its output or else by its command line (Program), or "an output that
// does not name its test".
func (pt *Part) Name() string {
	switch {
	case pt.Collective != "":
		return pt.Collective + "_perf"
	case pt.Program != "":
		return pt.Program + "_perf"
	}
	return "an output that does not name its test"
}

// test is the part's test: the one its output names, else the one its
// command line names.
func (pt *Part) test() string {
	if pt.Collective != "" {
		return pt.Collective
	}
	return pt.Program
}

// join adds the scalars of pt, which follows dst in the text, to dst: the
// first value seen, except OutOfBounds (the sum), OutOfBoundsFailed and
// FooterSeen (any), NRanks and NNodes (the largest), Headers (the sum).
// Line and index ranges are left as they are; maps are copied, never
// shared with pt.
func (dst *Part) join(pt *Part) {
	first := func(d *string, v string) {
		if *d == "" {
			*d = v
		}
	}
	first(&dst.Collective, pt.Collective)
	first(&dst.Program, pt.Program)
	first(&dst.TestsVersion, pt.TestsVersion)
	first(&dst.NCCLVersion, pt.NCCLVersion)
	for _, f := range []struct {
		dst *int64
		v   int64
	}{{&dst.MinBytes, pt.MinBytes}, {&dst.MaxBytes, pt.MaxBytes}, {&dst.StepFactor, pt.StepFactor}, {&dst.ReducedMaxBytes, pt.ReducedMaxBytes}} {
		if *f.dst == 0 {
			*f.dst = f.v
		}
	}
	if dst.NThreads == 0 {
		dst.NThreads = pt.NThreads
	}
	if dst.NGPUs == 0 {
		dst.NGPUs = pt.NGPUs
	}
	if dst.RanksCutAt == 0 {
		dst.RanksCutAt = pt.RanksCutAt
	}
	if pt.OutOfBounds >= 0 {
		dst.OutOfBounds = max(dst.OutOfBounds, 0) + pt.OutOfBounds
	}
	dst.OutOfBoundsFailed = dst.OutOfBoundsFailed || pt.OutOfBoundsFailed
	dst.FooterSeen = dst.FooterSeen || pt.FooterSeen
	if dst.AvgBusBW < 0 {
		dst.AvgBusBW = pt.AvgBusBW
	}
	if len(pt.Libraries) > 0 {
		libs := map[string]string{}
		for k, v := range pt.Libraries {
			libs[k] = v
		}
		for k, v := range dst.Libraries {
			libs[k] = v
		}
		dst.Libraries = libs
	}
	dst.NRanks, dst.NNodes = max(dst.NRanks, pt.NRanks), max(dst.NNodes, pt.NNodes)
	if len(pt.InfoHosts) > 0 {
		hosts := map[int]string{}
		for r, h := range pt.InfoHosts {
			hosts[r] = h
		}
		for r, h := range dst.InfoHosts {
			hosts[r] = h
		}
		dst.InfoHosts = hosts
	}
	dst.Headers += pt.Headers
}

// setScalars sets o's scalar fields from parts, joined in order (join).
func (o *Output) setScalars(parts []Part) {
	all := newPart(0, 0, 0)
	for i := range parts {
		all.join(&parts[i])
	}
	o.Collective, o.TestsVersion, o.NCCLVersion = all.Collective, all.TestsVersion, all.NCCLVersion
	o.NThreads, o.NGPUs = all.NThreads, all.NGPUs
	o.MinBytes, o.MaxBytes, o.StepFactor, o.ReducedMaxBytes = all.MinBytes, all.MaxBytes, all.StepFactor, all.ReducedMaxBytes
	o.OutOfBounds, o.OutOfBoundsFailed, o.FooterSeen, o.AvgBusBW = all.OutOfBounds, all.OutOfBoundsFailed, all.FooterSeen, all.AvgBusBW
	o.Libraries, o.NRanks, o.NNodes, o.InfoHosts, o.Headers = all.Libraries, all.NRanks, all.NNodes, all.InfoHosts, all.Headers
	o.RanksCutAt = all.RanksCutAt
}

// Select returns the output of one test (collective, e.g. "all_gather")
// out of a text that holds several, and the parts it left out, in input
// order. The parts chosen are those that name the test, or whose command
// line does (Part.Program) when their output names none; when none does,
// those that name no test either way (outputs of nccl-tests before the
// "Collective test starting" line) and whose rows fit it (rowsFit), or
// every part that names no test when none fits; when every part names
// another test, o itself, whose Collective then names another test. Errors and Warnings are those of the
// lines chosen, and the notes about the whole output (line 0). An output
// of one part is returned as it is, with no part left out.
func (o *Output) Select(collective string) (*Output, []Part) {
	if len(o.Parts) < 2 {
		return o, nil
	}
	var take, skip []Part
	pick := func(keep func(pt *Part) bool) {
		take, skip = take[:0], skip[:0]
		for i := range o.Parts {
			if keep(&o.Parts[i]) {
				take = append(take, o.Parts[i])
			} else {
				skip = append(skip, o.Parts[i])
			}
		}
	}
	pick(func(pt *Part) bool { return pt.test() == collective })
	if len(take) == 0 {
		pick(func(pt *Part) bool {
			return pt.test() == "" && rowsFit(collective, o.Rows[pt.RowFrom:pt.RowTo], pt.minRanks(o.Ranks[pt.RankFrom:pt.RankTo]))
		})
	}
	if len(take) == 0 {
		pick(func(pt *Part) bool { return pt.test() == "" })
	}
	if len(take) == 0 || len(skip) == 0 {
		return o, nil
	}
	sel := &Output{Format: o.Format}
	in := func(line int) bool {
		if line == 0 {
			return true
		}
		for _, pt := range take {
			if line >= pt.FirstLine && line <= pt.LastLine {
				return true
			}
		}
		return false
	}
	for _, pt := range take {
		np := pt
		np.RowFrom, np.RankFrom = len(sel.Rows), len(sel.Ranks)
		sel.Rows = append(sel.Rows, o.Rows[pt.RowFrom:pt.RowTo]...)
		sel.Ranks = append(sel.Ranks, o.Ranks[pt.RankFrom:pt.RankTo]...)
		np.RowTo, np.RankTo = len(sel.Rows), len(sel.Ranks)
		sel.Parts = append(sel.Parts, np)
	}
	if len(sel.Parts) == 1 {
		sel.Parts = nil
	}
	for _, d := range o.Errors {
		if in(d.Line) {
			sel.Errors = append(sel.Errors, d)
		}
	}
	for _, d := range o.Setup {
		if in(d.Line) {
			sel.Setup = append(sel.Setup, d)
		}
	}
	for _, d := range o.Warnings {
		if in(d.Line) {
			sel.Warnings = append(sel.Warnings, d)
		}
	}
	sel.setScalars(take)
	sel.RankCount = len(sel.Ranks)
	sel.Groups = outputGroups(sel.Ranks)
	return sel, append([]Part(nil), skip...)
}

// rootedTests lists the tests whose rows print a root rank (the last
// argument of TimeTest in src/<test>.cu is the root, -1 for the others).
var rootedTests = map[string]bool{"broadcast": true, "reduce": true, "gather": true, "scatter": true}

// minRanks is the least rank count the part's rank lines and header
// show (its ranks: the part's rank lines); 0 when they show none.
func (pt *Part) minRanks(ranks []Rank) int {
	n := pt.NThreads * pt.NGPUs
	for _, r := range ranks {
		n = max(n, r.Rank+1)
	}
	return n
}

// rowsFit reports whether rows can be those of test (a collective), for
// an output that does not name its test, of a run of at least minRanks
// ranks (0 unknown): reducing tests print their op (and printed a redop
// column in every version), the others "none" or no column (old
// all_gather, alltoall and sendrecv); rooted tests print a root, the
// others -1 or no column; the tests that print one rank's count have size
// = count x ranks x type size, the others size = count x type size (the
// GetCollByteCount of src/<test>.cu). Rows of tests the rules do not know,
// and no rows, fit. Old all_gather and alltoall outputs fit each other.
func rowsFit(test string, rows []Row, minRanks int) bool {
	wantOp, knownOp := namesOp[test]
	for _, r := range rows {
		if knownOp {
			switch r.Redop {
			case "":
				// Old sendrecv printed no redop column; reducing tests did.
				if wantOp && test != "sendrecv" {
					return false
				}
			case "none":
				if wantOp {
					return false
				}
			default:
				if !wantOp {
					return false
				}
			}
			if (r.Root >= 0) != rootedTests[test] {
				return false
			}
		}
		// Counts past 2^56 would overflow count x type size.
		if ts := ntTypeSize[r.Type]; ts > 0 && r.Count > 0 && r.Count < 1<<56 {
			per := r.Count * ts
			if perRankCount[test] && (r.Size%per != 0 || r.Size/per < int64(minRanks)) || !perRankCount[test] && r.Size != per {
				return false
			}
		}
	}
	return true
}

// Rank is one rank line of the output.
type Rank struct {
	// Rank is the global rank number, Group the NCCL_TESTS_SPLIT color (0
	// when the line has none), Pid the process id, Device the CUDA device
	// index on its host.
	Rank, Group, Pid, Device int
	// Host is the host name, BusID the PCI address as printed without
	// brackets ("0000:00:06", or "0x06" in old outputs), DeviceName the
	// device's name ("NVIDIA H200").
	Host, BusID, DeviceName string
}

// Diag is one error or warning found in an output: Line is the 1-based
// input line (0 for JSON and for notes about the whole output), Text says
// what was found, cut to outputDiagTextMax bytes.
type Diag = textdiag.Diag

// Row is one result row: one message size of one sweep, or of every cycle
// of the sweep that printed it.
type Row struct {
	// Line is the 1-based input line of the row (0 for JSON); of its first
	// cycle when it has several.
	Line int
	// Cycles is how many times the row was printed when more than once; 0
	// for a row printed once. OutOfPlace and InPlace then hold the worst of
	// the cycles (Perf.Stats).
	Cycles int
	// Size is the message size in bytes.
	Size int64
	// Count is the message size in elements of Type.
	Count int64
	// Type is the data type, e.g. "float", "bfloat16".
	Type string
	// Redop is the reduction, e.g. "sum", or "none" for collectives that
	// do not reduce ("" when the output has no redop column).
	Redop string
	// Root is the root rank; -1 when the column is -1 or absent.
	Root int
	// OutOfPlace and InPlace are the two measurements of the row; nil when
	// not printed (nccl-tests prints no out-of-place part when replaying
	// traces).
	OutOfPlace *Perf
	InPlace    *Perf
	// Timestamp is the wall-clock time printed with -S ("2026-11-30
	// 06:20:11", local time of the run; of the first cycle); "" otherwise.
	Timestamp string
}

// Perf is one measurement: out-of-place or in-place.
type Perf struct {
	// Time is the time per operation in microseconds (CPU time with -C).
	Time float64
	// AlgBW is the algorithm bandwidth in GB/s (10^9 bytes per second).
	AlgBW float64
	// BusBW is the bus bandwidth in GB/s (10^9 bytes per second).
	BusBW float64
	// Wrong is the number of wrong elements (#wrong); -1 when validation is
	// off ("N/A", JSON null) or when the output has the old "error" column.
	Wrong int64
	// MaxError is the old format's "error" column (largest difference
	// seen, e.g. 5e-07); 0 otherwise. HasMaxError is true when that column
	// held a number: validation ran ("N/A" leaves it false).
	MaxError    float64
	HasMaxError bool
	// Prec is how precisely the text printed the numbers above; zero for
	// JSON.
	Prec Prec
	// IMin, IMax and IP99 are the per-iteration minimum, maximum and 99th
	// percentile times in microseconds, ICV their coefficient of variation
	// in percent, printed with -I; 0 when absent.
	IMin, IMax, IP99, ICV float64
	// Stats, for a row printed in several cycles, summarises Time, AlgBW
	// and BusBW over them; the fields above are then the worst cycle's:
	// the highest Time, the lowest AlgBW and BusBW, the most Wrong, the
	// largest MaxError, IMax, IP99 and ICV, the least IMin. nil for a row
	// printed once.
	Stats *PerfStats
}

// Prec says how precisely the text printed a Perf's numbers: for each, the
// decimal exponent of its last printed digit ("344.03": -2, "12484": 0,
// "1.2e+04": 3, "1e+06": 6, as nccl-tests' getFloatStr shortens numbers too
// wide for their column), so that a number stands for any value within
// half a unit of that digit (HalfUnit). Known is false for numbers that
// were not printed rounded to a column (JSON, which nccl-tests writes with
// %lf: 6 decimals).
type Prec struct {
	Known                        bool
	Time, AlgBW, BusBW, MaxError int8
}

// HalfUnit returns half a unit of the last digit of exponent exp when the
// precision is known (0.005 for -2, 5e+05 for 6), else half a unit of the
// 6th decimal, %lf's.
func (q Prec) HalfUnit(exp int8) float64 {
	if !q.Known {
		exp = -6
	}
	return 0.5 * math.Pow10(int(exp))
}

// outputDiagMax bounds Errors and Warnings so that memory does not grow
// with the input; a note at the end says how many more there were.
const outputDiagMax = 1000

// outputDiagTextMax bounds the length of one Diag's Text, in bytes.
const outputDiagTextMax = 400

// newOutput returns an Output of the given format with nothing seen yet.
func newOutput(format string) *Output {
	return &Output{Format: format, OutOfBounds: -1, AvgBusBW: -1}
}

// newDiags returns the list that collects an output's Errors or Warnings
// (what: "errors", "warnings"), bounded by outputDiagMax and
// outputDiagTextMax.
func newDiags(what string) textdiag.List {
	return textdiag.List{Max: outputDiagMax, TextMax: outputDiagTextMax, What: what}
}

// outputCleanText trims s, cuts it to outputDiagTextMax bytes and makes it
// valid UTF-8 so that reports can show it.
func outputCleanText(s string) string { return textdiag.Clip(s, outputDiagTextMax) }

// outputGroups counts the distinct Group values among ranks; 0 for none.
func outputGroups(ranks []Rank) int {
	if len(ranks) == 0 {
		return 0
	}
	seen := map[int]bool{}
	for _, r := range ranks {
		seen[r.Group] = true
	}
	return len(seen)
}

// outputNCCLVersion turns NCCL's version code into a version string:
// 22809 -> "2.28.9" (codes from NCCL 2.9 on are X*10000+Y*100+Z), 2708 ->
// "2.7.8" (older codes are X*1000+Y*100+Z). It returns "" for codes that
// are no version.
func outputNCCLVersion(code int64) string {
	switch {
	case code >= 10000 && code < 1000000:
		return strconv.FormatInt(code/10000, 10) + "." + strconv.FormatInt(code/100%100, 10) + "." + strconv.FormatInt(code%100, 10)
	case code >= 1000 && code < 10000:
		return strconv.FormatInt(code/1000, 10) + "." + strconv.FormatInt(code/100%10, 10) + "." + strconv.FormatInt(code%100, 10)
	}
	return ""
}

// outputCollective turns a program name or path ("./build/all_reduce_perf",
// "all_reduce_perf_mpi") into the collective's name ("all_reduce"). Names
// without "_perf" are returned as their base name.
func outputCollective(prog string) string {
	prog = strings.TrimSpace(prog)
	if i := strings.LastIndexAny(prog, `/\`); i >= 0 {
		prog = prog[i+1:]
	}
	prog = path.Base(prog)
	if prog == "." || prog == "/" {
		return ""
	}
	if i := strings.Index(prog, "_perf"); i > 0 {
		return prog[:i]
	}
	return prog
}
