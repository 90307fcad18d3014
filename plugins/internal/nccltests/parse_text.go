package nccltests

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/textdiag"
	"github.com/gpuaccept/gpuaccept/plugins/internal/toolfail"
)

// The text parser reads the input line by line with bufio.Reader.ReadSlice,
// so it keeps no more than one buffer of input however long the input or
// its lines are (outputs whose line breaks were lost put a whole test on
// one line). Lines that cannot hold results (NCCL INFO lines and any other
// program's output) are classified on their first bytes and skipped
// without copying. Lines that can (rows, and comment lines, which may hold
// a whole flattened output) are cut into whitespace-separated tokens fed to
// a small state machine: a '#' token starts a comment segment, a column
// header segment sets the row layout, and row tokens are grouped by the
// layout's width, so flattened rows are split the same way as normal ones.

const (
	// parseTextBufSize is the read buffer size in bytes.
	parseTextBufSize = 256 << 10
	// parseTextHeadMax is how many bytes at the start of a line decide what
	// the line is, whatever the buffer size.
	parseTextHeadMax = 4 << 10
	// parseTextTokenMax is the longest token kept whole, in bytes; longer
	// ones are cut and marked so that they never parse.
	parseTextTokenMax = 256
	// parseTextSegMax is how many tokens of one comment segment are kept.
	parseTextSegMax = 64
	// parseTextInternMax bounds the table of interned type, op and host
	// names.
	parseTextInternMax = 512
	// parseTextPartsMax bounds Output.Parts: a log of a million outputs
	// repeated must not hold a million parts.
	parseTextPartsMax = 1024
)

// parseInternalError starts the report of a bug of the parser.
const parseInternalError = "internal error of the nccl-tests parser, output read up to here (please report)"

// parseTextLongMark ends a token that was cut for being too long; it is not
// ASCII, so no number or name parses with it.
const parseTextLongMark = "\u2026"

// parseTextErrorMarks are the texts that mark a line as a tool error.
var parseTextErrorMarks = [][]byte{
	[]byte("Test failure"), []byte("Test NCCL failure"), []byte("Test CUDA failure"),
	// rccl-tests' HIPCHECK: "Test HIP failure common.cu:1129 'hipErrorInvalidDevice'" (ROCm/rccl-tests#16).
	[]byte("Test HIP failure"),
	[]byte("Test timeout"), []byte("Invalid number of GPUs"), []byte("invalid option"),
	[]byte("USAGE:"), []byte("Incompatible NCCL versions"), []byte("invalid size"),
}

var (
	parseTextInfoMark    = []byte("NCCL INFO")
	parseTextWarnMark    = []byte("NCCL WARN")
	parseTextVersionMark = []byte("NCCL version ")
	parseTextNCCLMark    = []byte("NCCL ")
	parseTextTestMark    = []byte("Test ")
	// parseTextErsionMark is in every version line: "version", "Version".
	parseTextErsionMark = []byte("ersion")
	// parseTextPerfMark is in the names of nccl-tests' programs.
	parseTextPerfMark = []byte("_perf")
	// The footer's lines, as they start without their '#'.
	parseTextBoundsMark = []byte("Out of bounds values ")
	parseTextAvgMark    = []byte("Avg bus bandwidth ")
)

// ParseText reads nccl-tests text output (stdout and stderr as captured)
// and returns what it says. It never panics and returns an error only when
// reading r fails, together with what was parsed up to there; name is used
// in messages ("name:line"). Everything wrong with the output itself is
// reported in Output.Errors and Output.Warnings.
func ParseText(r io.Reader, name string) (*Output, error) {
	return parseTextSized(r, name, parseTextBufSize)
}

// parseTextSized is ParseText with a given read buffer size in bytes (at
// least 16), so that tests can check that results do not depend on it.
func parseTextSized(r io.Reader, name string, bufSize int) (out *Output, err error) {
	p := &textParser{out: newOutput("text"), errs: newDiags("errors"), warn: newDiags("warnings"), setup: newDiags("could-not-run lines"), lay: textDefaultLayout, strs: map[string]string{}, run: newPart(1, 0, 0)}
	p.set.NewPerf = p.slabPerf
	defer func() {
		// A bug must not take the caller down: report it, keep what was
		// parsed.
		if v := recover(); v != nil {
			p.errs.Add(p.line, fmt.Sprintf("%s: %v", parseInternalError, v))
			out, err = p.result(), nil
		}
	}()
	br := bufio.NewReaderSize(r, bufSize)
	var readErr error
	errLine := 0 // the line the read error struck in
	for {
		piece, rerr := br.ReadSlice('\n')
		ends := rerr == nil
		final := rerr != nil && rerr != bufio.ErrBufferFull
		errLine = p.line
		if !p.inLine && len(piece) == 0 {
			errLine++
		}
		if len(piece) > 0 || (final && p.inLine) {
			p.piece(piece, ends, final)
		}
		if final {
			if rerr != io.EOF {
				readErr = rerr
			}
			break
		}
	}
	out = p.result()
	if readErr != nil {
		return out, fmt.Errorf("read nccl-tests output %s:%d: %w", name, errLine, readErr)
	}
	return out, nil
}

// textCol is what one column of a result row holds.
type textCol uint8

const (
	textColSkip textCol = iota // a column not understood: any token
	textColSize
	textColCount
	textColType
	textColRedop
	textColRoot
	textColTime
	textColAlgBW
	textColBusBW
	textColWrong
	textColError
	textColIMin
	textColIMax
	textColIP99
	textColICV
)

// textColNames names the columns in messages, as the header does.
var textColNames = [...]string{"?", "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "error", "i_min", "i_max", "i_p99", "i_cv%"}

// textField is one column of a layout: what it holds and which
// measurement it belongs to (-1 for the columns before the first time
// column, 0 out-of-place, 1 in-place, 2 and up ignored).
type textField struct {
	col   textCol
	block int8
}

// textLayout is the column layout of result rows.
type textLayout struct {
	fields []textField
	// short are the fields of a row without its out-of-place part (the
	// leading columns, then block 1); nil when the layout has no two
	// blocks.
	short []textField
	// npre is the number of columns before the first time column.
	npre int
	// redop is the index of the redop column, -1 none; noRedop the fields
	// without it, for rows that print it empty (hypercube_perf's opName
	// is "", printed as blanks).
	redop   int
	noRedop []textField
}

// textNullGap is the least run of blanks before the in-place columns that
// marks a row printed without its out-of-place part (nccl-tests writes 32
// spaces there); a row cut short has the usual 2 to 8.
const textNullGap = 30

// newTextLayout makes a layout from its fields.
func newTextLayout(fields []textField) textLayout {
	l := textLayout{fields: fields, redop: -1}
	var blocks [3]int
	for i, f := range fields {
		if f.col == textColRedop && l.redop < 0 {
			l.redop = i
			l.noRedop = append(append([]textField{}, fields[:i]...), fields[i+1:]...)
		}
		if f.block < 0 {
			l.npre++
		}
		if f.block >= 0 && f.block < 2 {
			blocks[f.block]++
		} else if f.block >= 2 {
			blocks[2]++
		}
	}
	if blocks[0] > 0 && blocks[1] > 0 && blocks[2] == 0 {
		for _, f := range fields {
			if f.block != 0 {
				l.short = append(l.short, f)
			}
		}
	}
	return l
}

// textMakeLayout builds a layout from column names, as in a header line.
func textMakeLayout(names ...string) textLayout {
	var fields []textField
	block := int8(-1)
	for _, n := range names {
		c, timeCol := textHeaderCol(n)
		if timeCol {
			block++
		}
		fields = append(fields, textField{col: c, block: block})
	}
	return newTextLayout(fields)
}

// textHeaderCol maps a header name to a column; timeCol is true for the
// time column that starts a measurement.
func textHeaderCol(name string) (c textCol, timeCol bool) {
	switch name {
	case "size":
		return textColSize, false
	case "count":
		return textColCount, false
	case "type":
		return textColType, false
	case "redop":
		return textColRedop, false
	case "root":
		return textColRoot, false
	case "time", "cputime":
		return textColTime, true
	case "algbw":
		return textColAlgBW, false
	case "busbw":
		return textColBusBW, false
	case "#wrong":
		return textColWrong, false
	case "error":
		return textColError, false
	case "i_min":
		return textColIMin, false
	case "i_max":
		return textColIMax, false
	case "i_p99":
		return textColIP99, false
	case "i_cv%":
		return textColICV, false
	}
	return textColSkip, false
}

var (
	// textDefaultLayout is today's layout, assumed when no header was seen.
	textDefaultLayout = textMakeLayout("size", "count", "type", "redop", "root",
		"time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong")
	// textOldLayout is the layout of nccl-tests before the root column
	// (2019 and earlier), with the error column instead of #wrong.
	textOldLayout = textMakeLayout("size", "count", "type", "redop",
		"time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error")
	// textOldRootLayout is textOldLayout of broadcast, which printed the
	// root instead of the op.
	textOldRootLayout = textMakeLayout("size", "count", "type", "root",
		"time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error")
	// textOldReduceLayout is textOldLayout of reduce, which printed both.
	textOldReduceLayout = textMakeLayout("size", "count", "type", "redop", "root",
		"time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error")
	// textOldNoOpLayout is textOldLayout of all_gather and sendrecv, which
	// printed neither.
	textOldNoOpLayout = textMakeLayout("size", "count", "type",
		"time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error")
	// textIterLayout is the layout with per-iteration columns (-I).
	textIterLayout = textMakeLayout("size", "count", "type", "redop", "root",
		"time", "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%",
		"time", "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%")
)

// textMode is the state of the token machine within a line.
type textMode uint8

const (
	textModeLine    textMode = iota // at the first token of a line
	textModeRow                     // in row tokens
	textModeStamp                   // after a row and a date: want a time of day
	textModeSegment                 // after '#': want the segment's first word
	textModeHeader                  // in a column header segment
	textModeUnits                   // in a units segment ("(B) (elements) ...")
	textModeComment                 // in another comment segment
	textModeSkip                    // ignoring tokens until the next '#'
)

// textLine says what kind of line is being read.
type textLine uint8

const (
	textLineNew    textLine = iota // nothing read of it yet
	textLineHead                   // gathering the first bytes to decide
	textLineTokens                 // rows and comments: tokens are fed on
	textLineOther                  // anything else: the rest is skipped
)

// textParser is the state of one ParseText call.
type textParser struct {
	out  *Output
	errs textdiag.List
	warn textdiag.List
	// setup holds the lines that say the binary could not run (Output.Setup).
	setup textdiag.List

	line   int      // current line number, 1-based
	inLine bool     // the last piece did not end its line
	kind   textLine // what the current line is
	head   []byte   // first bytes of a line read in several pieces

	partial    []byte // a token cut by the end of a piece
	partialGap int    // the blanks before it
	gap        int    // blanks since the last token of the line
	tokGap     int    // blanks before the token being handled

	mode       textMode
	lay        textLayout
	headerSeen bool
	rowsInLine int

	rowBuf  []byte   // bytes of the current row's tokens
	rowToks [][2]int // their bounds in rowBuf
	rowCut  bool     // the last row token may be cut (input ended in it)
	rowGap  int      // blanks before the row's first time column
	// rowNoRedop is set when the token in the redop column is a number: the
	// column was printed empty, the row has one token fewer.
	rowNoRedop bool

	segBuf  []byte   // bytes of the current comment segment's tokens
	segToks [][2]int // their bounds in segBuf
	stamp   []byte   // the date of a -S timestamp

	// set holds the rows of the part being read, cycles folded; prev the
	// rows of the parts before it. One set per part: a test's rows are
	// never cycles of another test's printed in the same file.
	set  RowSet
	prev []Row
	// scratch holds the Perf values of the row being filled, which set
	// copies when the row is new.
	scratch  [2]Perf
	nscratch int

	strs      map[string]string // interned names
	lastType  string            // the last type and op names, to skip the table
	lastRedop string
	perfs     []Perf // Perf values handed out in slabs
	colWarned bool   // a later test output with another collective was noted
	// inPlaceOnly is set by a "# in-place" title without "out-of-place"
	// (rccl-tests -O 0): the header's one block is the in-place one.
	inPlaceOnly bool

	// run is the part being read: the scalars of the output go there;
	// parts the finished ones.
	run      Part
	parts    []Part
	partsCut bool // parseTextPartsMax was reached
	// heads are the kinds of header line the part being read has seen,
	// runDiags the errors and warnings kept before it started; lastBare
	// tells that the last of parts holds header lines only.
	heads    textHead
	runDiags int
	lastBare bool
	// nextProgram is the test a command line named after the part being
	// read had its header: the next part's (Part.Program).
	nextProgram string
	// ranks follows the device list being read, rankLast is the line of
	// its last rank line.
	ranks    textRanks
	rankLast int
}

// piece handles one piece of a line as ReadSlice returns it: ends is true
// when it ends with '\n', final when the input ends after it.
func (p *textParser) piece(b []byte, ends, final bool) {
	if ends {
		b = b[:len(b)-1]
	}
	if !p.inLine {
		p.line++
		p.kind = textLineNew
		p.head = p.head[:0]
	}
	done := ends || final
	p.inLine = !done
	switch p.kind {
	case textLineNew:
		if done || len(b) >= parseTextHeadMax {
			skip := p.startLine(b, done && len(b) < parseTextHeadMax, final && !ends)
			if p.kind == textLineTokens {
				p.feed(b[skip:], ends, final)
			}
			return
		}
		p.kind = textLineHead
		fallthrough
	case textLineHead:
		p.head = append(p.head, b...)
		if !done && len(p.head) < parseTextHeadMax {
			return
		}
		h := p.head
		skip := p.startLine(h, done && len(h) < parseTextHeadMax, final && !ends)
		if p.kind == textLineTokens {
			p.feed(h[skip:], ends, final)
		}
	case textLineTokens:
		p.feed(b, ends, final)
	}
}

// startLine decides what a line is from its first bytes b (at most
// parseTextHeadMax of them, more are ignored); whole is true when b is the
// whole line, cut when the input ends in the line without a line break.
// It returns how many bytes of the line to skip before its tokens: blanks
// and a launcher's label.
func (p *textParser) startLine(b []byte, whole, cut bool) (skip int) {
	if len(b) > parseTextHeadMax {
		b = b[:parseTextHeadMax]
	}
	// Launchers and log collectors label lines (mpirun --tag-output, srun
	// --label, kubectl logs --prefix --timestamps); what follows is the
	// tool's own line.
	s := textTrimLeft(b[textdiag.PrefixLen(b):])
	skip = len(b) - len(s)
	p.kind = textLineOther
	if len(s) == 0 {
		p.ranksBlank()
		return skip
	}
	switch c := s[0]; {
	case c == '#':
		p.kind = textLineTokens
		p.mode = textModeLine
		return skip
	case c >= '0' && c <= '9':
		if textRowStart(s, whole && cut) {
			p.ranksOther()
			if whole && p.rowInterrupted(textTrimRight(s)) {
				return skip
			}
			p.kind = textLineTokens
			p.mode = textModeLine
			if !p.headerSeen {
				p.lay = textGuessLayout(s, whole)
			}
			return skip
		}
	}
	p.otherLine(textTrimRight(s))
	return skip
}

// textBlank reports whether c is blank space within a line.
func textBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

// textTrimLeft returns b without leading blanks.
func textTrimLeft(b []byte) []byte {
	for len(b) > 0 && textBlank(b[0]) {
		b = b[1:]
	}
	return b
}

// textTrimRight returns b without trailing blanks.
func textTrimRight(b []byte) []byte {
	for len(b) > 0 && textBlank(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// textRowStart reports whether a line starting with s (trimmed) is a
// result row: an integer size and count, then a type name. A last line
// cut short (cut) needs only to start like one.
func textRowStart(s []byte, cut bool) bool {
	var toks [3][]byte
	n := 0
	for i := 0; i < len(s) && n < 3; {
		for i < len(s) && textSpace(s[i]) {
			i++
		}
		j := i
		for j < len(s) && !textSpace(s[j]) {
			j++
		}
		if j > i {
			toks[n] = s[i:j]
			n++
		}
		i = j
	}
	if n == 0 || !parseDigits(toks[0]) || n >= 2 && !parseDigits(toks[1]) || n >= 3 && !parseWord(toks[2]) {
		return false
	}
	return n == 3 || cut
}

// rowInterrupted reports a row line s that another message was written
// into: a tool error (as when a timeout strikes after the row's first
// columns were printed) or an NCCL log line printed by another thread.
// The row itself is lost.
func (p *textParser) rowInterrupted(s []byte) bool {
	if bytes.Contains(s, parseTextTestMark) {
		for _, m := range parseTextErrorMarks {
			if bytes.Contains(s, m) {
				p.errs.Add(p.line, string(s))
				return true
			}
		}
	}
	if i := bytes.Index(s, parseTextNCCLMark); i >= 0 {
		rest := s[i+len(parseTextNCCLMark):]
		if bytes.HasPrefix(rest, parseTextInfoMark[5:]) || bytes.HasPrefix(rest, parseTextWarnMark[5:]) {
			p.warn.Add(p.line, "result row interrupted by an NCCL log line, row lost: "+string(s))
			return true
		}
	}
	return false
}

// textGuessLayout picks the layout of a row seen before any header (a
// header lost, or pasted without its '#') from the row itself: its number
// of columns, whether a number or a name stands where today's redop column
// is, and whether the last column of each measurement has the old error
// column's %5.0le form ("1e+00") or #wrong's integer. The layouts are those
// of src/<test>.cu's print_header: today's (redop and root, #wrong), and
// before 51af557 (2022-08) size, count and type, then redop (all_reduce,
// reduce_scatter, alltoall), root (broadcast), both (reduce) or neither
// (all_gather, sendrecv), with the error column; and today's with -I.
func textGuessLayout(s []byte, whole bool) textLayout {
	if !whole || bytes.IndexByte(s, '#') >= 0 {
		return textDefaultLayout
	}
	toks := bytes.Fields(s)
	n := len(toks)
	if n >= 2 && parseIsDate(toks[n-2]) && parseIsClock(toks[n-1]) {
		n -= 2
	}
	if n < 11 {
		return textDefaultLayout
	}
	_, num3 := parseFloat(toks[3])
	errs := func(i, j int) bool { return textErrorForm(toks[i]) && textErrorForm(toks[j]) }
	switch n {
	case 11:
		if num3 && errs(6, 10) {
			return textOldNoOpLayout
		}
	case 12:
		switch {
		case !num3:
			return textOldLayout
		case errs(7, 11):
			return textOldRootLayout
		}
		// Today's with the redop printed empty (hypercube): the row
		// tokens notice it (rowNoRedop).
	case 13:
		if errs(8, 12) {
			return textOldReduceLayout
		}
	case 21:
		return textIterLayout
	}
	return textDefaultLayout
}

// textErrorForm reports whether tok is printed as the old error column
// prints (%5.0le: one digit, no point, an exponent; "N/A" with -c 0; nan
// or inf for data gone wrong), which #wrong's integers never are.
func textErrorForm(tok []byte) bool {
	switch string(tok) {
	case "N/A", "nan", "-nan", "inf", "-inf":
		return true
	}
	if len(tok) < 5 || tok[0] < '0' || tok[0] > '9' || tok[1] != 'e' || tok[2] != '+' && tok[2] != '-' {
		return false
	}
	return parseDigits(tok[3:])
}

// otherLine handles a line that holds no rows nor comments: NCCL's log
// lines, tool errors, and any other program's output.
func (p *textParser) otherLine(s []byte) {
	if p.ranks != textRanksNone {
		p.ranksLine(s)
	}
	if i := textInfoAt(s); i >= 0 {
		rest := s[i+len(parseTextInfoMark):]
		p.infoCounts(s[:i], rest)
		// Most INFO lines are not the version line: look at one byte
		// before trimming.
		if len(rest) > 1 && rest[1] == 'N' || len(rest) > 0 && rest[0] == 'N' {
			if rest = textTrimLeft(rest); bytes.HasPrefix(rest, parseTextVersionMark) {
				p.versionLine(rest[len(parseTextVersionMark):])
			}
		}
		return
	}
	if i := bytes.Index(s, parseTextWarnMark); i >= 0 {
		p.warn.Add(p.line, string(s[i+len(parseTextWarnMark):]))
		return
	}
	if bytes.HasPrefix(s, parseTextVersionMark) {
		p.versionLine(s[len(parseTextVersionMark):])
		return
	}
	if len(s) < 256 && (s[0] == 'O' && bytes.HasPrefix(s, parseTextBoundsMark) || s[0] == 'A' && bytes.HasPrefix(s, parseTextAvgMark)) {
		// The footer of an output pasted without its '#'s.
		if t := bytes.Fields(s); s[0] == 'O' {
			p.boundsLine(t)
		} else {
			p.avgLine(t)
		}
		return
	}
	if len(s) <= parseTextHeadMax && bytes.Contains(s, parseTextPerfMark) {
		p.commandLine(s)
	}
	if len(s) > 256 || !bytes.Contains(s, parseTextErsionMark) {
		// Not a version line: keep other programs' lines off the
		// allocating checks below.
		p.errorLine(s)
		return
	}
	if f := bytes.Fields(s); len(f) >= 3 && bytes.HasSuffix(f[0], []byte("-tests")) && string(f[1]) == "version" {
		p.testsVersion(f)
		return
	}
	if f := bytes.Fields(s); len(f) >= 3 && string(f[0]) == "rccl-tests:" && string(f[1]) == "Version" {
		// rccl-tests develop builds of 2024-2025: "rccl-tests: Version develop:83d38d9".
		p.headerLine(textHeadRCCLVersion)
		if p.run.TestsVersion == "" {
			p.run.TestsVersion = outputCleanText(string(f[2]))
		}
		return
	}
	if f := bytes.Fields(s); len(f) >= 4 && string(f[1]) == "version" && string(f[2]) == ":" {
		// rccl-tests' build report: "RCCL version : 2.27.7-HEAD:96a25b5",
		// "HIP version : 7.2.53211-671d39a71e", "ROCm version : 7.2.2.0-86-671d39a71e".
		if name := string(f[0]); name == "RCCL" || name == "HIP" || name == "ROCm" {
			if p.run.Libraries == nil {
				p.run.Libraries = map[string]string{}
			}
			if _, seen := p.run.Libraries[name]; !seen {
				p.run.Libraries[name] = outputCleanText(string(f[3]))
			}
			return
		}
	}
	p.errorLine(s)
}

// parseTextPrograms are the tests of nccl-tests and rccl-tests by their
// programs' names without "_perf" (src/*.cu).
var parseTextPrograms = map[string]bool{
	"all_reduce": true, "all_gather": true, "broadcast": true, "reduce": true, "reduce_scatter": true,
	"alltoall": true, "alltoallv": true, "sendrecv": true, "gather": true, "scatter": true, "hypercube": true,
}

// commandLine takes the test a command line names ("Running: ...
// ./build/all_gather_perf -b 8 -e 10240M", "mpirun -np 16 all_reduce_perf
// -g 1") for the part whose header comes next: the part being read when it
// has no header line yet, else the next one. The first program named
// counts.
func (p *textParser) commandLine(s []byte) {
	for _, f := range bytes.Fields(s) {
		if !bytes.Contains(f, parseTextPerfMark) {
			continue
		}
		c := outputCollective(string(f))
		if !parseTextPrograms[c] {
			continue
		}
		switch {
		case p.heads == 0 && !p.run.hasContent():
			if p.run.Program == "" {
				p.run.Program = c
			}
		case p.nextProgram == "":
			p.nextProgram = c
		}
		return
	}
}

// parseTextRanksMark ends "nranks " and "nRanks ", which NCCL INFO lines
// print before a communicator's size.
var parseTextRanksMark = []byte("anks ")

// parseTextNodesMark is before the node count in NCCL's "comm 0x... rank
// 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0" INFO line.
var parseTextNodesMark = []byte(" nNodes ")

// The starts of the NCCL INFO messages that name a communicator's size.
var (
	parseTextCommMark     = []byte("comm 0x")
	parseTextCommInitMark = []byte("ncclComm")
	parseTextTimingsMark  = []byte("Init timings")
)

// parseTextInfoHostsMax bounds Output.InfoHosts.
const parseTextInfoHostsMax = 1 << 16

// infoCounts takes the communicator size and node count from the rest of
// an NCCL INFO line ("ncclCommInitRankConfig comm 0x55ea629b9a70 rank 1
// nranks 2 cudaDev 1 ...", "comm 0x... rank 0 nRanks 2 nNodes 1
// localRanks 2 ..."), and the rank's host from the line's head (head,
// "vm:1199:1211 [1] "). The largest counts are kept: NCCL_TESTS_SPLIT's
// child communicators are smaller than the one of all ranks.
func (p *textParser) infoCounts(head, rest []byte) {
	// This is the hot path of NCCL_DEBUG=INFO logs: only messages that
	// start as those that name a communicator's size ("comm 0x...",
	// "ncclCommInitRank...", "Init timings", after NCCL 2.29's "[Rank 0] ")
	// are searched.
	m := rest
	if len(m) > 0 && m[0] == ' ' {
		m = m[1:]
	}
	if len(m) > 0 && m[0] == '[' {
		if k := bytes.IndexByte(m, ']'); k > 0 && k < 16 && k+2 < len(m) {
			m = m[k+2:]
		}
	}
	var want []byte
	if len(m) > 0 {
		switch m[0] {
		case 'c':
			want = parseTextCommMark
		case 'n':
			want = parseTextCommInitMark
		case 'I':
			want = parseTextTimingsMark
		}
	}
	if want == nil || !bytes.HasPrefix(m, want) {
		return
	}
	j := bytes.Index(rest, parseTextRanksMark)
	if j < 3 || rest[j-3] != ' ' || rest[j-2] != 'n' || rest[j-1] != 'r' && rest[j-1] != 'R' {
		return
	}
	num := func(b []byte) (int, int) {
		k := 0
		for k < len(b) && k < 9 && b[k] >= '0' && b[k] <= '9' {
			k++
		}
		v, _ := parseUint(b[:k])
		return int(v), k
	}
	n, k0 := num(rest[j+len(parseTextRanksMark):])
	p.run.NRanks = max(p.run.NRanks, n)
	if rest[j-1] == 'R' && bytes.HasPrefix(rest[j+len(parseTextRanksMark)+k0:], parseTextNodesMark) {
		k := j + len(parseTextRanksMark) + k0
		nodes, _ := num(rest[k+len(parseTextNodesMark):])
		p.run.NNodes = max(p.run.NNodes, nodes)
	}
	// "... rank R nranks N": R's digits end right before " nranks".
	before := rest[:j-3]
	r := bytes.LastIndexByte(before, ' ')
	if r < 4 || string(before[r-4:r]) != "rank" || (r > 4 && before[r-5] != ' ') {
		return
	}
	rank, k := num(before[r+1:])
	if k != len(before)-r-1 || k == 0 {
		return
	}
	if _, seen := p.run.InfoHosts[rank]; seen || len(p.run.InfoHosts) >= parseTextInfoHostsMax {
		return // every rank prints several such lines
	}
	head = textTrimLeft(head)
	c := bytes.IndexByte(head, ':')
	if c <= 0 {
		return
	}
	for _, x := range head[:c] {
		if textSpace(x) || x == '[' {
			return
		}
	}
	if p.run.InfoHosts == nil {
		p.run.InfoHosts = map[int]string{}
	}
	p.run.InfoHosts[rank] = p.intern(head[:c])
}

// errorLine records s when it is a tool error (one of nccl-tests' own
// reports), or in Output.Setup when it says the binary could not run at
// all (the loader's "error while loading shared libraries", "Cuda failure
// common.cu:891 'CUDA driver version is insufficient ...'" of nccl-tests
// before its "Test " prefix, the shell's "command not found":
// toolfail.Setup), so that a run with no row says why.
func (p *textParser) errorLine(s []byte) {
	for _, m := range parseTextErrorMarks {
		if bytes.Contains(s, m) {
			p.errs.Add(p.line, string(s))
			return
		}
	}
	// NCCL INFO lines, the bulk of a debug log, are never one (and
	// some name a missing optional plugin's "cannot open shared object
	// file"): they are kept off the table's searches.
	if bytes.Contains(s, parseTextInfoMark) {
		return
	}
	if k, _ := toolfail.Classify(string(s)); k == toolfail.Setup {
		p.setup.Add(p.line, string(s))
	}
}

// textInfoAt returns where "NCCL INFO" starts in s, or -1. NCCL prefixes
// its lines with "host:pid:tid [dev] ", so the mark is looked for after the
// first ']' before searching the whole line: this is the hot path of large
// NCCL_DEBUG=INFO logs.
func textInfoAt(s []byte) int {
	head := s
	if len(head) > 96 {
		head = head[:96]
	}
	if j := bytes.IndexByte(head, ']'); j >= 0 && j+1+len(parseTextInfoMark) < len(s) && s[j+1] == ' ' &&
		bytes.Equal(s[j+2:j+2+len(parseTextInfoMark)], parseTextInfoMark) {
		return j + 2
	}
	return bytes.Index(s, parseTextInfoMark)
}

// versionLine takes the NCCL version from the rest of an "NCCL version
// 2.25.1+cuda12.8" line.
func (p *textParser) versionLine(rest []byte) {
	if p.run.NCCLVersion != "" {
		return // every rank prints it; the first one is enough
	}
	if f := bytes.Fields(rest); len(f) > 0 {
		p.run.NCCLVersion = outputCleanText(string(f[0]))
	}
}

// textSpace reports whether c separates tokens.
func textSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == 0
}

// feed cuts b, a piece of a tokenised line, into tokens.
func (p *textParser) feed(b []byte, ends, final bool) {
	i, n := 0, len(b)
	if len(p.partial) > 0 {
		j := 0
		for j < n && !textSpace(b[j]) {
			j++
		}
		p.partial = textAppendToken(p.partial, b[:j])
		if j == n && !ends && !final {
			return
		}
		p.tokGap = p.partialGap
		p.token(p.partial, j == n && final && !ends)
		p.partial = p.partial[:0]
		i = j
	}
	for i < n {
		k := i
		for i < n && textSpace(b[i]) {
			i++
		}
		p.gap += i - k
		if i == n {
			break
		}
		j := i
		for j < n && !textSpace(b[j]) {
			j++
		}
		p.tokGap, p.gap = p.gap, 0
		if j == n && !ends && !final {
			p.partial = textAppendToken(p.partial[:0], b[i:j])
			p.partialGap = p.tokGap
			return
		}
		tok := b[i:j]
		if len(tok) > parseTextTokenMax {
			p.partial = textAppendToken(p.partial[:0], tok)
			tok = p.partial
			p.partial = p.partial[:0]
		}
		p.token(tok, j == n && final && !ends)
		i = j
	}
	if ends || final {
		p.gap = 0
		p.endLine()
	}
}

// textAppendToken appends more bytes of a token to dst, cutting the token
// at parseTextTokenMax bytes and marking it.
func textAppendToken(dst, more []byte) []byte {
	if len(dst) > parseTextTokenMax {
		return dst
	}
	if len(dst)+len(more) <= parseTextTokenMax {
		return append(dst, more...)
	}
	dst = append(dst, more[:parseTextTokenMax-len(dst)]...)
	return append(dst, parseTextLongMark...)
}

// textIsHash reports whether tok starts a comment segment: it starts with
// '#' and is not the header's "#wrong".
func textIsHash(tok []byte) bool {
	return tok[0] == '#' && string(tok) != "#wrong"
}

// token handles one token of a tokenised line; cut is true when the input
// ended in it, so it may be incomplete.
func (p *textParser) token(tok []byte, cut bool) {
	switch p.mode {
	case textModeLine:
		if textIsHash(tok) {
			p.startSegment(tok, cut)
			return
		}
		p.mode = textModeRow
		p.rowToken(tok, cut)
	case textModeRow:
		p.rowToken(tok, cut)
	case textModeStamp:
		p.mode = textModeRow
		if last := p.lastRow(); last != nil && parseIsClock(tok) {
			last.Timestamp = string(p.stamp) + " " + string(tok)
			return
		}
		p.rowToken(tok, cut)
	case textModeSegment:
		if p.ranks != textRanksNone {
			p.ranksSegment(tok)
		}
		switch {
		case string(tok) == "size":
			p.mode = textModeHeader
			p.segToken(tok)
		case tok[0] == '(':
			p.mode = textModeUnits
		case string(tok) == "out-of-place":
			p.inPlaceOnly = false
			p.mode = textModeSkip
		case string(tok) == "in-place":
			// rccl-tests -O 0 prints only the in-place block, titled
			// "# in-place" above the header.
			p.inPlaceOnly = true
			p.mode = textModeSkip
		default:
			p.mode = textModeComment
			p.segToken(tok)
		}
	case textModeHeader:
		if !textIsHash(tok) && tok[0] != '(' && !parseDigits(tok) {
			p.segToken(tok)
			return
		}
		p.endHeader()
		p.afterSegment(tok, cut)
	case textModeUnits:
		if tok[0] == '(' || tok[len(tok)-1] == ')' || tok[0] == '%' {
			return
		}
		p.afterSegment(tok, cut)
	case textModeComment:
		if textIsHash(tok) {
			p.endComment()
			p.startSegment(tok, cut)
			return
		}
		p.segToken(tok)
	case textModeSkip:
		if textIsHash(tok) {
			p.startSegment(tok, cut)
		}
	}
}

// afterSegment handles the first token after a header or units segment in
// the same line: rows follow in flattened output.
func (p *textParser) afterSegment(tok []byte, cut bool) {
	switch {
	case textIsHash(tok):
		p.startSegment(tok, cut)
	case parseDigits(tok):
		p.mode = textModeRow
		p.rowToken(tok, cut)
	default:
		p.mode = textModeSkip
	}
}

// startSegment starts a comment segment at a '#' token; what follows the
// '#'s in the token is the segment's first word.
func (p *textParser) startSegment(tok []byte, cut bool) {
	p.mode = textModeSegment
	p.segBuf, p.segToks = p.segBuf[:0], p.segToks[:0]
	rest := bytes.TrimLeft(tok, "#")
	if len(rest) > 0 {
		p.token(rest, cut)
	}
}

// segToken keeps a token of the current comment segment.
func (p *textParser) segToken(tok []byte) {
	if len(p.segToks) >= parseTextSegMax {
		return
	}
	start := len(p.segBuf)
	p.segBuf = append(p.segBuf, tok...)
	p.segToks = append(p.segToks, [2]int{start, len(p.segBuf)})
}

// seg returns the current segment's tokens.
func (p *textParser) seg() [][]byte {
	t := make([][]byte, len(p.segToks))
	for i, b := range p.segToks {
		t[i] = p.segBuf[b[0]:b[1]]
	}
	return t
}

// endLine finishes what the line left open.
func (p *textParser) endLine() {
	switch p.mode {
	case textModeRow:
		p.endRow()
	case textModeHeader:
		p.endHeader()
	case textModeComment:
		p.endComment()
	case textModeSegment:
		// A '#' alone: what nccl-tests prints after the device list.
		p.ranksEnded()
	}
	p.mode = textModeLine
	p.rowsInLine = 0
}

// endHeader makes the layout of the rows that follow from the header's
// column names.
func (p *textParser) endHeader() {
	var fields []textField
	block := int8(-1)
	hasSize, hasBusBW := false, false
	for _, t := range p.seg() {
		name := string(t)
		if name == "timestamp" {
			continue
		}
		c, timeCol := textHeaderCol(name)
		if timeCol {
			block++
		}
		hasSize = hasSize || c == textColSize
		hasBusBW = hasBusBW || c == textColBusBW && block >= 0
		fields = append(fields, textField{col: c, block: block})
	}
	if p.inPlaceOnly {
		one := true
		for _, f := range fields {
			one = one && f.block <= 0
		}
		for i := range fields {
			if one && fields[i].block == 0 {
				fields[i].block = 1
			}
		}
	}
	if !hasSize || !hasBusBW {
		if t := p.seg(); len(t) > 1 && string(t[1]) == "count" {
			p.warn.Add(p.line, "column header not understood, keeping the previous layout: "+string(bytes.Join(t, []byte(" "))))
		}
		return
	}
	p.lay = newTextLayout(fields)
	p.headerSeen = true
}

// endComment handles a finished comment segment other than a header.
func (p *textParser) endComment() {
	t := p.seg()
	if len(t) == 0 {
		return
	}
	is := func(i int, w string) bool { return i < len(t) && string(t[i]) == w }
	o := &p.run
	switch {
	case is(0, "Writing") && is(1, "JSON") && is(2, "output"):
		p.headerLine(textHeadJSON)
	case len(t) >= 3 && bytes.HasSuffix(t[0], []byte("-tests")) && is(1, "version"):
		p.testsVersion(t)
	case is(0, "Collective") && is(1, "test") && is(2, "starting:") && len(t) >= 4:
		p.headerLine(textHeadCollective)
		o = &p.run
		c := outputCleanText(outputCollective(string(t[3])))
		if o.Collective == "" {
			o.Collective = c
		} else if c != o.Collective && !p.colWarned {
			p.colWarned = true
			p.warn.Add(p.line, fmt.Sprintf("output of %s_perf follows that of %s_perf; Collective says %s, Rows hold both", c, o.Collective, o.Collective))
		}
	case is(0, "nThread"):
		p.headerLine(textHeadNThread)
		o = &p.run
		o.Headers++
		for i := 0; i+1 < len(t); i++ {
			if string(t[i]) == "step:" {
				// "step: 2(factor)" or "step: 1048576(bytes)"
				if n, ok := bytes.CutSuffix(t[i+1], []byte("(factor)")); ok {
					if v, ok := parseUint(n); ok && o.StepFactor == 0 {
						o.StepFactor = v
					}
				}
				continue
			}
			v, ok := parseUint(t[i+1])
			if !ok {
				continue
			}
			switch string(t[i]) {
			case "nThread":
				if o.NThreads == 0 && v <= 1<<30 {
					o.NThreads = int(v)
				}
			case "nGpus":
				if o.NGPUs == 0 && v <= 1<<30 {
					o.NGPUs = int(v)
				}
			case "minBytes":
				if o.MinBytes == 0 {
					o.MinBytes = v
				}
			case "maxBytes":
				if o.MaxBytes == 0 {
					o.MaxBytes = v
				}
			}
		}
	case is(0, "Rank"):
		p.rankLine(t)
	case is(0, "Reducing") && is(1, "maxBytes") && is(2, "to") && len(t) >= 4:
		if v, ok := parseUint(t[3]); ok && o.ReducedMaxBytes == 0 {
			o.ReducedMaxBytes = v
		}
	case is(0, "Out") && is(1, "of") && is(2, "bounds"):
		p.boundsLine(t)
	case is(0, "Avg") && is(1, "bus") && is(2, "bandwidth"):
		p.avgLine(t)
	case is(0, "error:"):
		p.errs.Add(p.line, "nccl-tests: error: "+string(bytes.Join(t[1:], []byte(" "))))
	}
}

// testsVersion handles "nccl-tests version 2.19.6 nccl-headers=22809
// nccl-library=22809", with or without the '#' (rccl-tests 2.17 prints
// "rccl-tests version 2.17.9-develop:2596ca5f71 rccl-headers=22803
// rccl-library=22707"), given as tokens.
func (p *textParser) testsVersion(t [][]byte) {
	p.headerLine(textHeadVersion)
	o := &p.run
	if o.TestsVersion == "" {
		o.TestsVersion = outputCleanText(string(t[2]))
	}
	for _, x := range t[3:] {
		if i := bytes.Index(x, []byte("-library=")); i > 0 && o.NCCLVersion == "" {
			if code, ok := parseUint(x[i+len("-library="):]); ok {
				o.NCCLVersion = outputNCCLVersion(code)
			}
		}
	}
}

// textAfterColon returns the tokens after the first ':' token (or the first
// token that ends with ':').
func textAfterColon(t [][]byte) [][]byte {
	for i, x := range t {
		if len(x) > 0 && x[len(x)-1] == ':' {
			return t[i+1:]
		}
	}
	return nil
}

// boundsLine handles "# Out of bounds values : 0 OK".
func (p *textParser) boundsLine(t [][]byte) {
	v := textAfterColon(t)
	n, ok := int64(0), len(v) > 0
	if ok {
		n, ok = parseUint(v[0])
	}
	if !ok || n > math.MaxInt32 {
		p.warn.Add(p.line, "footer line not understood: "+string(bytes.Join(t, []byte(" "))))
		return
	}
	o := &p.run
	o.FooterSeen = true
	if o.OutOfBounds < 0 {
		o.OutOfBounds = 0
	}
	o.OutOfBounds += int(n)
	if len(v) > 1 && string(v[1]) == "FAILED" {
		o.OutOfBoundsFailed = true
	}
}

// avgLine handles "# Avg bus bandwidth    : 103.407 " (with "OK" or
// "FAILED" after it when NCCL_TESTS_MIN_BW is set).
func (p *textParser) avgLine(t [][]byte) {
	v := textAfterColon(t)
	f, ok := 0.0, len(v) > 0
	if ok {
		f, ok = parseFloat(v[0])
	}
	if !ok {
		p.warn.Add(p.line, "footer line not understood: "+string(bytes.Join(t, []byte(" "))))
		return
	}
	if p.run.AvgBusBW < 0 {
		p.run.AvgBusBW = f
	}
	if len(v) > 1 && string(v[1]) == "FAILED" {
		p.warn.Add(p.line, "nccl-tests reports the average bus bandwidth "+string(v[0])+" GB/s as FAILED (below NCCL_TESTS_MIN_BW)")
	}
}

// rankLine handles "#  Rank  0 Group  0 Pid   1550 on vm device  0
// [0000:00:06] NVIDIA H200" and the older "#   Rank  0 Pid 1550 on vm
// device  0 [0x06] Tesla V100".
func (p *textParser) rankLine(t [][]byte) {
	var r Rank
	i, ok := 1, true
	num := func() int {
		if i >= len(t) {
			ok = false
			return 0
		}
		v, good := parseInt(t[i])
		ok = ok && good
		i++
		return v
	}
	word := func(w string) {
		if i >= len(t) || string(t[i]) != w {
			ok = false
		}
		i++
	}
	r.Rank = num()
	if i < len(t) && string(t[i]) == "Group" {
		i++
		r.Group = num()
	}
	word("Pid")
	r.Pid = num()
	word("on")
	if i < len(t) {
		r.Host = p.intern(t[i])
	}
	i++
	word("device")
	r.Device = num()
	if !ok {
		p.warn.Add(p.line, "rank line not understood: "+string(bytes.Join(t, []byte(" "))))
		return
	}
	if i < len(t) && len(t[i]) >= 2 && t[i][0] == '[' && t[i][len(t[i])-1] == ']' {
		r.BusID = outputCleanText(string(t[i][1 : len(t[i])-1]))
		i++
	}
	if i < len(t) {
		r.DeviceName = outputCleanText(string(bytes.Join(t[i:], []byte(" "))))
	}
	if strings.HasSuffix(r.DeviceName, "...") {
		p.warn.Add(p.line, "rank list cut by nccl-tests (it prints at most 2048 bytes of rank lines per process): ranks may be missing")
	}
	p.out.Ranks = append(p.out.Ranks, r)
	p.run.RankTo = len(p.out.Ranks)
	if p.ranks == textRanksBlank {
		p.cutRanks()
	}
	p.ranks, p.rankLast = textRanksOpen, p.line
}

// textRanks is where the device list being read stands: whether the
// line that ends it has been seen.
type textRanks uint8

const (
	textRanksNone  textRanks = iota // no list open: the last one ended
	textRanksOpen                   // after a rank line
	textRanksBlank                  // after a rank line and a blank line
)

// The device list ends with the '#' line nccl-tests prints right after it
// (src/util.cu writeDeviceReport prints the rank lines, src/common.cu
// then "#" before the column header or "# Reducing maxBytes"). Until
// then other programs' lines may come: NCCL INFO and WARN lines of the
// communicators being made (a WARN line starts with a blank line of its
// own), NCCL's "NCCL version 2.19.3+cuda12.3" line, and RCCL's version report ("RCCL version : ...", "Hostname : ...",
// "Librccl path : ...", init.cc showVersion). Any other line (a blank
// line not followed by a WARN line, "...", text, a row, the next test's
// header, the end of the input) means the list was cut there: a page that
// quotes only the first ranks, an output that stopped.

// ranksEnded handles a '#' line of the output after the device list.
func (p *textParser) ranksEnded() {
	switch p.ranks {
	case textRanksOpen:
		p.ranks = textRanksNone
	case textRanksBlank:
		p.cutRanks()
	}
}

// ranksSegment handles the first word of a '#' segment while a device
// list is open: another rank line continues it, a header line of the next
// test (headerLine) cuts it, any other comment ends it.
func (p *textParser) ranksSegment(tok []byte) {
	switch {
	case string(tok) == "Rank":
	case bytes.HasSuffix(tok, []byte("-tests")), string(tok) == "Collective", string(tok) == "nThread", string(tok) == "Writing":
		p.cutRanks()
	default:
		p.ranksEnded()
	}
}

// ranksBlank handles a blank line while a device list is open.
func (p *textParser) ranksBlank() {
	switch p.ranks {
	case textRanksOpen:
		p.ranks = textRanksBlank
	case textRanksBlank:
		p.cutRanks()
	}
}

// ranksOther handles a line that is not another program's log line while
// a device list is open: the list was cut.
func (p *textParser) ranksOther() {
	if p.ranks != textRanksNone {
		p.cutRanks()
	}
}

// parseTextColonMark separates the name and value of RCCL's version
// report lines.
var parseTextColonMark = []byte(" : ")

// ranksLine handles a line that is neither a row nor a comment while a
// device list is open (s trimmed, not empty).
func (p *textParser) ranksLine(s []byte) {
	if textInfoAt(s) >= 0 || bytes.HasPrefix(s, parseTextVersionMark) {
		return
	}
	if bytes.Contains(s, parseTextWarnMark) {
		if p.ranks == textRanksBlank {
			p.ranks = textRanksOpen
		}
		return
	}
	if p.ranks == textRanksOpen && len(s) < 512 {
		if i := bytes.Index(s, parseTextColonMark); i > 0 {
			switch string(bytes.TrimRight(s[:i], " ")) {
			case "RCCL version", "HIP version", "ROCm version", "Hostname", "Librccl path":
				return
			}
		}
	}
	p.cutRanks()
}

// cutRanks notes that the open device list was cut after its last rank
// line.
func (p *textParser) cutRanks() {
	if p.run.RanksCutAt == 0 {
		p.run.RanksCutAt = p.rankLast
	}
	p.ranks = textRanksNone
}

// endRanks handles the end of a part or of the input: an open device
// list was cut.
func (p *textParser) endRanks() { p.ranksOther() }

// intern returns b as a string, shared between equal names.
func (p *textParser) intern(b []byte) string {
	if s, ok := p.strs[string(b)]; ok {
		return s
	}
	s := outputCleanText(string(b))
	if len(p.strs) < parseTextInternMax {
		p.strs[string(b)] = s
	}
	return s
}

// rowToken handles a token in row mode.
func (p *textParser) rowToken(tok []byte, cut bool) {
	if textIsHash(tok) {
		p.endRow()
		p.startSegment(tok, cut)
		return
	}
	if len(p.rowToks) == 0 && p.rowsInLine > 0 && parseIsDate(tok) {
		p.stamp = append(p.stamp[:0], tok...)
		p.mode = textModeStamp
		return
	}
	width, npre := len(p.lay.fields), p.lay.npre
	if p.rowNoRedop {
		width, npre = width-1, npre-1
	}
	if len(p.rowToks) == npre {
		p.rowGap = p.tokGap
	}
	if len(p.rowToks) == p.lay.redop && !parseWord(tok) {
		if _, isRoot := parseInt(tok); isRoot {
			p.rowNoRedop = true
			width--
		}
	}
	start := len(p.rowBuf)
	p.rowBuf = append(p.rowBuf, tok...)
	p.rowToks = append(p.rowToks, [2]int{start, len(p.rowBuf)})
	p.rowCut = cut
	if len(p.rowToks) == width {
		p.endRow()
	}
}

// rowTok returns the i-th token of the current row.
func (p *textParser) rowTok(i int) []byte {
	b := p.rowToks[i]
	return p.rowBuf[b[0]:b[1]]
}

// rowText returns the current row's tokens joined by spaces.
func (p *textParser) rowText() string {
	var sb strings.Builder
	for i := range p.rowToks {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.Write(p.rowTok(i))
		if sb.Len() > outputDiagTextMax {
			break
		}
	}
	return sb.String()
}

// endRow finishes the current row: a whole one is kept, a short or bad one
// reported.
func (p *textParser) endRow() {
	n := len(p.rowToks)
	if n == 0 {
		return
	}
	defer func() {
		p.rowBuf, p.rowToks, p.rowCut, p.rowGap, p.rowNoRedop = p.rowBuf[:0], p.rowToks[:0], false, 0, false
	}()
	fields := p.lay.fields
	if p.rowNoRedop {
		fields = p.lay.noRedop
	}
	width := len(fields)
	var row Row
	bad := -1
	switch {
	case n == width:
		bad = p.fillRow(&row, fields)
	case n == len(p.lay.short) && p.rowGap >= textNullGap && !p.rowNoRedop:
		fields = p.lay.short
		bad = p.fillRow(&row, fields)
	default:
		fields = fields[:n]
		bad = p.fillRow(&row, fields)
		if bad < 0 {
			bad = n // valid as far as it goes, but short
		}
	}
	switch {
	case bad < 0 && p.rowCut:
		p.errs.Add(p.line, "last result row has no line end: output truncated: "+p.rowText())
	case bad < 0:
		p.addRow(row)
		p.rowsInLine++
	case bad == n && (p.rowsInLine == 0 || p.rowCut):
		p.errs.Add(p.line, fmt.Sprintf("result row cut short after %d of %d columns (output truncated?): %s", n, width, p.rowText()))
	case bad == n:
		p.warn.Add(p.line, fmt.Sprintf("%d columns after the line's last result row not understood: %s", n, p.rowText()))
	default:
		col := textColSkip
		if bad < len(fields) {
			col = fields[bad].col
		}
		p.warn.Add(p.line, fmt.Sprintf("result row not understood: column %d (%s) is %q: %s", bad+1, textColNames[col], outputCleanText(string(p.rowTok(bad))), p.rowText()))
	}
}

// addRow keeps a row, or folds it into the row of an earlier cycle.
func (p *textParser) addRow(r Row) {
	p.set.Add(r)
	p.nscratch = 0
	p.run.RowTo = len(p.prev) + p.set.Len()
}

// textHead is a kind of header line nccl-tests prints once at the start of
// an output (src/util.cu's writeDeviceReport, src/common.cu before it), as
// a bit of textParser.heads.
type textHead uint8

const (
	textHeadJSON        textHead = 1 << iota // "# Writing JSON output to F"
	textHeadVersion                          // "# nccl-tests version 2.19.6 ..."
	textHeadCollective                       // "# Collective test starting: all_reduce_perf"
	textHeadNThread                          // "# nThread 1 nGpus 8 ..."
	textHeadRCCLVersion                      // "rccl-tests: Version develop:83d38d9"
)

// headerLine handles a line that starts a test's output (the JSON file
// line, the version, "Collective test starting", "nThread") of the given
// kind: after rows or a footer, or when the part being read already had a
// header line of that kind (an output that died before its first row, then
// the next test's), it starts a new part.
func (p *textParser) headerLine(kind textHead) {
	if p.run.hasContent() || p.heads&kind != 0 {
		p.endPart()
	}
	p.heads |= kind
}

// endPart ends the part being read at the line before this one and starts
// the next part here, unless parseTextPartsMax parts were read.
func (p *textParser) endPart() {
	if len(p.parts) == parseTextPartsMax-1 {
		if !p.partsCut {
			p.partsCut = true
			p.warn.Add(p.line, fmt.Sprintf("more than %d test outputs in one text: this one and the rest are read as one", parseTextPartsMax-1))
		}
		return
	}
	p.endRanks()
	pt := p.run
	pt.LastLine = max(pt.FirstLine, p.line-1)
	p.addPart(pt, p.bare())
	p.prev = append(p.prev, p.set.Rows()...)
	p.set = RowSet{NewPerf: p.slabPerf}
	p.run = newPart(p.line, len(p.prev), len(p.out.Ranks))
	p.run.Program, p.nextProgram = p.nextProgram, ""
	p.heads, p.runDiags = 0, p.errs.Len()+p.warn.Len()
	p.colWarned = false
}

// bare reports whether the part being read holds header lines only: no
// rows, footer, rank lines, errors or warnings.
func (p *textParser) bare() bool {
	return !p.run.hasContent() && p.run.RankTo == p.run.RankFrom && p.errs.Len()+p.warn.Len() == p.runDiags
}

// addPart appends a finished part. A part of header lines only before it
// is joined to it when their tests do not differ: processes of one run each
// print the header (a binary built without MPI=1 under mpirun), and their
// lines interleave ("# nThread" twice, then the rank lines); a test that
// printed its header and nothing else, then the next test's output, stay
// two parts.
func (p *textParser) addPart(pt Part, bare bool) {
	if n := len(p.parts); n > 0 && p.lastBare {
		if prev := &p.parts[n-1]; prev.Collective == "" || pt.Collective == "" || prev.Collective == pt.Collective {
			joined := *prev
			joined.join(&pt)
			joined.LastLine, joined.RowTo, joined.RankTo = pt.LastLine, pt.RowTo, pt.RankTo
			p.parts[n-1] = joined
			p.lastBare = bare
			return
		}
	}
	p.parts = append(p.parts, pt)
	p.lastBare = bare
}

// lastRow returns the last row kept (a copy when it was folded into an
// earlier cycle's), or nil.
func (p *textParser) lastRow() *Row { return p.set.Last() }

// newPerf returns the scratch Perf for the next measurement of the row
// being filled; addRow copies it into a kept row, or folds it, so a row
// that repeats an earlier cycle's allocates nothing.
func (p *textParser) newPerf() *Perf {
	f := &p.scratch[p.nscratch%len(p.scratch)]
	p.nscratch++
	return f
}

// slabPerf returns a new Perf from a slab, which costs fewer allocations
// than one each.
func (p *textParser) slabPerf() *Perf {
	if len(p.perfs) == 0 {
		p.perfs = make([]Perf, 256)
	}
	f := &p.perfs[0]
	p.perfs = p.perfs[1:]
	return f
}

// name returns tok as an interned name (a type or an op), reusing *last
// when it repeats, as it does on every row of a table; ok is false when tok
// is not a name.
func (p *textParser) name(tok []byte, last *string) (string, bool) {
	if string(tok) == *last {
		return *last, true
	}
	if !parseWord(tok) {
		return "", false
	}
	*last = p.intern(tok)
	return *last, true
}

// fillRow fills row from the current row tokens by fields (one field per
// token) and returns the index of the first token that does not parse, or
// -1.
func (p *textParser) fillRow(row *Row, fields []textField) int {
	row.Line, row.Root = p.line, -1
	perf := [2]Perf{{Wrong: -1, Prec: Prec{Known: true}}, {Wrong: -1, Prec: Prec{Known: true}}}
	var have [2]bool
	for i, f := range fields {
		tok := p.rowTok(i)
		var pf *Perf
		if f.block == 0 || f.block == 1 {
			pf = &perf[f.block]
			have[f.block] = true
		}
		ok := true
		switch f.col {
		case textColSize:
			row.Size, ok = parseUint(tok)
		case textColCount:
			row.Count, ok = parseUint(tok)
		case textColType:
			row.Type, ok = p.name(tok, &p.lastType)
		case textColRedop:
			row.Redop, ok = p.name(tok, &p.lastRedop)
		case textColRoot:
			row.Root, ok = parseInt(tok)
		case textColWrong:
			var w int64
			if w, ok = parseWrong(tok); ok && pf != nil {
				pf.Wrong = w
			}
		case textColError:
			var v float64
			if string(tok) != "N/A" {
				v, ok = parseFloat(tok)
			}
			if ok && pf != nil {
				pf.MaxError, pf.Wrong = v, -1
				pf.HasMaxError = string(tok) != "N/A"
				pf.Prec.MaxError = parseExp(tok)
			}
		case textColSkip:
		default:
			var v float64
			var exp int8
			if v, exp, ok = parseFloatExp(tok); ok && pf != nil {
				switch f.col {
				case textColTime:
					pf.Time, pf.Prec.Time = v, exp
				case textColAlgBW:
					pf.AlgBW, pf.Prec.AlgBW = v, exp
				case textColBusBW:
					pf.BusBW, pf.Prec.BusBW = v, exp
				case textColIMin:
					pf.IMin = v
				case textColIMax:
					pf.IMax = v
				case textColIP99:
					pf.IP99 = v
				case textColICV:
					pf.ICV = v
				}
			}
		}
		if !ok {
			return i
		}
	}
	for b := 0; b < 2; b++ {
		if !have[b] {
			continue
		}
		pf := p.newPerf()
		*pf = perf[b]
		if b == 0 {
			row.OutOfPlace = pf
		} else {
			row.InPlace = pf
		}
	}
	return -1
}

// result finishes the parse and returns the Output.
func (p *textParser) result() *Output {
	o := p.out
	p.endRanks()
	run := p.run
	run.LastLine = max(run.FirstLine, p.line)
	p.addPart(run, p.bare())
	parts := p.parts
	o.Rows = append(p.prev, p.set.Rows()...)
	o.Errors = p.errs.Done()
	o.Warnings = p.warn.Done()
	o.Setup = p.setup.Done()
	o.RankCount = len(o.Ranks)
	o.Groups = outputGroups(o.Ranks)
	o.setScalars(parts)
	if len(parts) > 1 {
		o.Parts = parts
	}
	return o
}
