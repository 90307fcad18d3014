package hostlink

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/plugins/internal/textdiag"
)

// The metrics both parsers return (the tests hostlink.pcie and
// hostlink.p2p choose among them by their labels):
//
//   - "bw" (GB/s, 1e9 B/s): one direction of one copy. A host link has
//     labels direction=h2d|d2h and gpu=<index>; a GPU pair has src and dst
//     (GPU indices, or "all" for nvbandwidth's all_to_one/one_to_all
//     aggregates); a GPU's copy within its own memory has direction=local
//     and gpu.
//   - "bw_total" (GB/s): the sum of both directions of a bidirectional run
//     (nvbandwidth's "Total" matrix, TransferBench's "<->" rows), with the
//     labels of its forward direction.
//   - "latency" (us): nvbandwidth's pointer-chase latency testcases, with
//     the labels a "bw" of the same matrix would have.
//
// An nvbandwidth GPU pair's src and dst follow the arrow it prints: "row
// -> column" and "row <-> column" make the row src, "row <- column" the
// column. Its code does not always move the data that way (the
// device_to_device *_read_* testcases copy from the column's memory to
// the row's, nvbandwidth testcases_ce.cpp DeviceToDeviceReadCE), so for
// them src is the GPU that reads; the pair is the same either way.
//
// nvbandwidth metrics carry testcase=<name> (and stream=read1|read2|
// write1|write2 for the per-stream matrices of a bidirectional
// device-to-device testcase); TransferBench metrics carry
// mode=unidirectional|bidirectional and executor=gfx|dma (and stream=1|2
// in a bidirectional table: the row's copy, or the one back that ran with
// it), cpu=<NUMA node> on host links, and Size (bytes per direction).
const (
	metricBW      = "bw"
	metricBWTotal = "bw_total"
	metricLatency = "latency"
	unitGBs       = "GB/s"
	unitUs        = "us"
)

// Limits that keep memory bounded whatever the file holds.
const (
	hlFileMax   = 64 << 20 // bytes read of one output
	hlLineMax   = 64 << 10 // bytes kept of one line (a 1024-GPU row is 10 KiB)
	hlDiagMax   = 100      // diagnostics kept per kind
	hlMetricMax = 1 << 20  // metrics kept per file
	hlCellMax   = 1e7      // GB/s or ns: a larger cell is no measurement
)

// nvbDescRE matches the line nvbandwidth prints above a matrix
// (Output::addTestcaseResults): "memcpy CE CPU(row) -> GPU(column)
// bandwidth (GB/s)", "memcpy SM GPU(row) <-> GPU(column) Read1 bandwidth
// (GB/s)", "memory latency SM CPU(row) <-> GPU(column) (ns)", "Device to
// Device Latency SM GPU(row) <-> GPU(column) (ns)", "memcpy local
// GPU(column) bandwidth (GB/s)", multinode's "memcpy SM All Gpus ->
// GPU(column) total bandwidth (GB/s)".
var nvbDescRE = regexp.MustCompile(`\((?:row|column)\).*(?:\(GB/s\)|\(ns\))\s*$`)

// nvbAxesRE reads the row and column kinds and the arrow between them.
var nvbAxesRE = regexp.MustCompile(`(CPU|GPU)\(row\)\s*(<->|->|<-)\s*(CPU|GPU)\(column\)`)

// nvbStreamRE finds the per-stream word of a bidirectional matrix
// ("Read1", "Write2", "Total") before "bandwidth".
var nvbStreamRE = regexp.MustCompile(`\b(Read[12]|Write[12]|Total)\s+bandwidth`)

// nvbDeviceRE reads a device line: "Device 0: NVIDIA H100 80GB HBM3" (v0.4),
// "Device 0: NVIDIA GH200 480GB (00000009:01:00)" (v0.5 on, with the PCI
// address), and the JSON device list's "0: NAME (PCI): (HOST)".
var nvbDeviceRE = regexp.MustCompile(`^Device (\d+): (.+?)\s*(?:\([0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F.]{2,}\))?$`)

// nvbProcessRE reads a multinode device line: "Process 0
// (nvbandwidth-test-worker-0): device 0: HGX GB200 (00000008:01:00)".
var nvbProcessRE = regexp.MustCompile(`^Process \d+ \(([^)]*)\): device \d+: (.+?)\s*(?:\([0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F.]{2,}\))?$`)

// nvbJSONDeviceRE reads an entry of the JSON "GPU Device list":
// "0: NVIDIA H100 80GB HBM3 (00000000:07:00): (host1)".
var nvbJSONDeviceRE = regexp.MustCompile(`^\d+: (.+?)\s*(?:\([0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F.]{2,}\))?(?::\s*\(([^)]*)\))?$`)

// sniffNvbandwidth says whether head, the first KiB or so of a file,
// looks like nvbandwidth's text output (its version banner, a "Running
// TESTCASE." line or a matrix description) or its -j JSON (an object with
// an "nvbandwidth" member).
func sniffNvbandwidth(head []byte) bool {
	s := string(head)
	switch {
	case strings.Contains(s, "nvbandwidth Version:"):
		return true
	case strings.Contains(s, `"nvbandwidth"`) && strings.Contains(s, "{"):
		return true
	}
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l[textdiag.PrefixLen(l):])
		if strings.HasPrefix(l, "Running ") && strings.HasSuffix(l, ".") && nvbIsTestcaseName(l[len("Running "):len(l)-1]) {
			return true
		}
		if nvbDescRE.MatchString(l) && (strings.HasPrefix(l, "memcpy ") || strings.HasPrefix(l, "memory latency ")) {
			return true
		}
	}
	return false
}

// nvbIsTestcaseName: nvbandwidth's testcase keys are lower-case words
// joined by underscores ("device_to_device_memcpy_read_ce").
func nvbIsTestcaseName(s string) bool {
	if !strings.Contains(s, "_") || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// parseNvbandwidth reads one nvbandwidth output, text or -j JSON (told
// apart by its first non-blank byte), and returns its metrics (see
// metricBW), checks and diagnostics. Info holds nvbandwidthversion,
// nvbandwidthgitversion, cudaversion, cudadriverversion, driverversion as
// printed, gpu (the model of device 0, e.g. "NVIDIA H100 80GB HBM3") and
// hosts (multinode runs and the JSON device list).
//
// Checks:
//   - "p2p paths <testcase>": every GPU pair off the diagonal of a GPU x
//     GPU matrix was measured. N/A there means nvbandwidth found no peer
//     access between the two GPUs while other pairs had it (a testcase in
//     which no pair has it is Waived instead): on an NVLink or XGMI node a
//     missing P2P path is a defect (a link down, P2P disabled by ACS or
//     the driver), so it fails, naming the pairs.
//   - "host link <testcase>": a CPU-GPU matrix cell is N/A (no
//     measurement of that GPU's link); it fails.
//   - "testcase <name>": nvbandwidth reported the testcase as Error (or
//     ERROR: a name it does not know); an error of the test (Check.Error),
//     since the tool did not measure.
//   - "data verification <testcase>" ("data verification" where no
//     "Running" line named it): nvbandwidth's copy check found wrong bytes
//     ("ASSERT in expression h_errorFlag == 0"); it fails.
//
// A Waived testcase (nvbandwidth found nothing it applies to: one GPU, or
// no GPU pair with peer access) is an info diagnostic, a warning when the
// output lists two GPUs or more. The diagonal's N/A is no measurement and
// gives no metric. An output cut short (a testcase started but never
// finished, a matrix without its SUM line, CUDA's fatal error) keeps what
// was parsed and sets Error with a diagnostic naming file:line. The
// returned error is for a file that cannot be read.
func parseNvbandwidth(path string) (result.Parsed, error) {
	data, err := hlReadFile(path)
	if err != nil {
		return result.Parsed{Error: err.Error()}, err
	}
	name := filepath.Base(path)
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		return nvbParseJSON(data, name), nil
	}
	// DCGM and wrappers print a few lines before the JSON object.
	if i := bytes.Index(data, []byte("\n{")); i >= 0 && bytes.Contains(data[i:], []byte(`"nvbandwidth"`)) && !bytes.Contains(data[:i], []byte("nvbandwidth Version:")) {
		return nvbParseJSON(data[i+1:], name), nil
	}
	return nvbParseText(data, name), nil
}

// hlReadFile reads at most hlFileMax bytes of path; an output larger than
// that is cut, which the parsers then report as an output cut short.
func hlReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read output %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, hlFileMax))
	if err != nil {
		return nil, fmt.Errorf("read output %s: %w", path, err)
	}
	return data, nil
}

// nvbMatrix is one matrix of a testcase: cells[row][col], a cell NaN where
// nvbandwidth printed N/A.
type nvbMatrix struct {
	testcase string
	desc     string
	line     int // the description's line (0 in JSON)
	cols     []string
	rows     []string
	cells    [][]float64
	rowLines []int
}

// nvbState gathers what one output says.
type nvbState struct {
	p      result.Parsed
	file   string
	errs   textdiag.List // Problem diagnostics
	warns  textdiag.List
	infos  textdiag.List
	gpus   []string // model per device, in device order
	hosts  []string
	waived []string // testcase names, or "" where the text does not say
	// waivedLines are the text's "Waived:" lines.
	waivedLines []int
	failErr     []string // Parsed.Error parts
	pairsNA     map[string][]string
	nmetric     int
}

func newNvbState(file string) *nvbState {
	return &nvbState{
		file:    file,
		errs:    textdiag.List{Max: hlDiagMax, TextMax: 400, What: "errors"},
		warns:   textdiag.List{Max: hlDiagMax, TextMax: 400, What: "warnings"},
		infos:   textdiag.List{Max: hlDiagMax, TextMax: 400, What: "notes"},
		p:       result.Parsed{Info: map[string]string{}},
		pairsNA: map[string][]string{},
	}
}

func (s *nvbState) info(key, v string) {
	v = textdiag.Clip(v, 200)
	if v != "" && s.p.Info[key] == "" {
		s.p.Info[key] = v
	}
}

func (s *nvbState) addMetric(m result.Metric) {
	if s.nmetric >= hlMetricMax || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
		return
	}
	s.nmetric++
	s.p.Metrics = append(s.p.Metrics, m)
}

// problem records an error that makes the output no complete measurement.
func (s *nvbState) problem(line int, text string) {
	if s.errs.Len() == 0 {
		s.failErr = append(s.failErr, hlAt(s.file, line)+": "+text)
	}
	s.errs.Add(line, text)
}

func hlAt(file string, line int) string {
	if line <= 0 {
		return file
	}
	return fmt.Sprintf("%s:%d", file, line)
}

// nvbParseText reads nvbandwidth's plain-text output.
func nvbParseText(data []byte, file string) result.Parsed {
	s := newNvbState(file)
	br := bufio.NewReaderSize(bytes.NewReader(data), 64<<10)
	var (
		line     int
		testcase string // the testcase running ("Running X.")
		runLine  int
		produced bool // the running testcase printed a matrix or status
		cur      *nvbMatrix
		wantHead bool
		prev     string
	)
	closeMatrix := func(end int, complete bool) {
		if cur == nil {
			return
		}
		if !complete {
			s.problem(end, fmt.Sprintf("the matrix of %s (line %d) ends without its SUM line: the output was cut short", nvbOr(cur.testcase, "a testcase"), cur.line))
		}
		s.emit(cur, complete)
		cur, wantHead = nil, false
	}
	for {
		raw, read, err := textdiag.ReadLine(br, hlLineMax)
		if read {
			line++
			l := strings.ToValidUTF8(raw[textdiag.PrefixLen(raw):], "?")
			t := strings.TrimSpace(l)
			f := strings.Fields(t)
			switch {
			case t == "":
			case strings.HasPrefix(t, "nvbandwidth Version:"):
				s.info("nvbandwidthversion", strings.TrimSpace(strings.TrimPrefix(t, "nvbandwidth Version:")))
			case strings.HasPrefix(t, "Built from Git version:"):
				s.info("nvbandwidthgitversion", strings.TrimSpace(strings.TrimPrefix(t, "Built from Git version:")))
			case strings.HasPrefix(t, "CUDA Runtime Version:"):
				s.info("cudaversion", strings.TrimSpace(strings.TrimPrefix(t, "CUDA Runtime Version:")))
			case strings.HasPrefix(t, "CUDA Driver Version"):
				// "CUDA Driver Version: 12080", v0.10's "CUDA Driver
				// Version (API): 13.3 (13030)".
				if _, v, ok := strings.Cut(t, ":"); ok {
					s.info("cudadriverversion", strings.TrimSpace(v))
				}
			case strings.HasPrefix(t, "Driver Version:"):
				s.info("driverversion", strings.TrimSpace(strings.TrimPrefix(t, "Driver Version:")))
			case strings.HasPrefix(t, "MPI version:"):
				s.info("mpiversion", strings.TrimSpace(strings.TrimPrefix(t, "MPI version:")))
			case nvbDeviceRE.MatchString(t):
				m := nvbDeviceRE.FindStringSubmatch(t)
				s.device(m[1], m[2])
				// v0.7 on prints the host name alone above the list.
				if len(s.gpus) == 1 && prev != "" && len(strings.Fields(prev)) == 1 && !strings.Contains(prev, ":") {
					s.addHost(prev)
				}
			case nvbProcessRE.MatchString(t):
				m := nvbProcessRE.FindStringSubmatch(t)
				s.addHost(m[1])
				s.gpus = append(s.gpus, textdiag.Clip(m[2], 120))
			case strings.HasPrefix(t, "Running ") && strings.HasSuffix(t, "."):
				closeMatrix(line, false)
				if testcase != "" && !produced {
					s.problem(runLine, fmt.Sprintf("testcase %s started but printed no result before the next one", testcase))
				}
				testcase, runLine, produced = textdiag.Clip(t[len("Running "):len(t)-1], 128), line, false
			case t == "Waived:" || strings.HasPrefix(t, "Waived: "):
				closeMatrix(line, false)
				// Text output never names a waived testcase: it is
				// printed in place of "Running NAME.".
				s.waived = append(s.waived, "")
				s.waivedLines = append(s.waivedLines, line)
			case strings.HasPrefix(t, "ERROR: ") || strings.HasPrefix(t, "Error: "):
				closeMatrix(line, false)
				msg := strings.TrimSpace(t[len("Error: "):])
				name := testcase
				if strings.HasPrefix(t, "ERROR: ") {
					name = "" // findTestcase: a name or index it does not know
				}
				s.testcaseError(nvbOr(name, "?"), msg, line)
				produced = true
			case strings.HasPrefix(t, "ASSERT in expression"):
				closeMatrix(line, false)
				if strings.Contains(t, "h_errorFlag == 0") {
					s.p.Checks = append(s.p.Checks, result.Check{Name: strings.TrimSpace("data verification " + testcase), OK: false,
						Message: fmt.Sprintf("%s: nvbandwidth's copy check found bytes that differ from the pattern written (%s), in %s", hlAt(file, line), textdiag.Clip(t, 200), nvbOr(testcase, "a testcase")),
					})
				}
				s.problem(line, "nvbandwidth stopped: "+t)
			case strings.HasPrefix(t, "[CUDA_ERROR") || strings.HasPrefix(t, "[cuda") || strings.HasPrefix(t, "NVML_ERROR:") || strings.HasPrefix(t, "[CUresult") ||
				(strings.HasPrefix(t, "[") && strings.Contains(t, "] ") && strings.Contains(t, " in expression ")):
				closeMatrix(line, false)
				s.problem(line, "nvbandwidth stopped on a CUDA error: "+t)
			case nvbDescRE.MatchString(t):
				closeMatrix(line, false)
				cur = &nvbMatrix{testcase: testcase, desc: textdiag.Clip(t, 200), line: line}
				wantHead, produced = true, true
			case cur != nil && wantHead && nvbAllUint(f):
				cur.cols, wantHead = f, false
			case cur != nil && !wantHead && len(f) > 0 && nvbIsUint(f[0]):
				s.row(cur, f, line)
			case (strings.HasPrefix(t, "SUM ") || strings.HasPrefix(t, "&&&& PERF ")) && cur != nil:
				// The matrix key names the testcase ("..._read1" for a
				// stream), where "Running" was not seen.
				if cur.testcase == "" && len(f) >= 2 {
					k := f[1]
					if strings.HasPrefix(t, "&&&&") && len(f) >= 3 {
						k = f[2]
					}
					cur.testcase = textdiag.Clip(k, 128)
				}
				closeMatrix(line, true)
			case cur != nil && !wantHead:
				// A line nvbandwidth does not print inside a matrix.
				closeMatrix(line, false)
			}
			if t != "" {
				prev = t
			}
		}
		if err != nil {
			break
		}
	}
	closeMatrix(line, false)
	if testcase != "" && !produced {
		s.problem(runLine, fmt.Sprintf("testcase %s started but printed no result: the output was cut short", testcase))
	}
	if len(s.p.Metrics) == 0 && s.errs.Len() == 0 && len(s.p.Checks) == 0 {
		msg := "no nvbandwidth result (no matrix of a testcase)"
		if len(s.waived) > 0 {
			msg += fmt.Sprintf(": all %d testcases were waived", len(s.waived))
		}
		s.problem(0, msg)
	}
	return s.done()
}

func nvbOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func nvbIsUint(s string) bool {
	if s == "" || len(s) > 6 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func nvbAllUint(f []string) bool {
	if len(f) == 0 {
		return false
	}
	for _, x := range f {
		if !nvbIsUint(x) {
			return false
		}
	}
	return true
}

// row takes a matrix row "3    370.90  372.05  N/A ...".
func (s *nvbState) row(m *nvbMatrix, f []string, line int) {
	if len(m.rows) >= 4096 {
		return
	}
	vals := make([]float64, 0, len(f)-1)
	for _, c := range f[1:] {
		v, ok := hlCell(c)
		if !ok {
			s.problem(line, fmt.Sprintf("matrix cell %q of %s is not a number or N/A", textdiag.Clip(c, 40), nvbOr(m.testcase, "a testcase")))
			return
		}
		vals = append(vals, v)
	}
	if len(m.cols) > 0 && len(vals) != len(m.cols) {
		s.problem(line, fmt.Sprintf("matrix row %s of %s has %d cells for %d columns: cut short or garbled", f[0], nvbOr(m.testcase, "a testcase"), len(vals), len(m.cols)))
		return
	}
	m.rows = append(m.rows, f[0])
	m.cells = append(m.cells, vals)
	m.rowLines = append(m.rowLines, line)
}

// hlCell reads a matrix cell: a finite, non-negative number, or N/A
// (returned as NaN).
func hlCell(c string) (float64, bool) {
	if c == "N/A" {
		return math.NaN(), true
	}
	v, err := strconv.ParseFloat(c, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > hlCellMax {
		return 0, false
	}
	return v, true
}

func (s *nvbState) device(idx, model string) {
	model = textdiag.Clip(model, 120)
	if n, err := strconv.Atoi(idx); err == nil && n == len(s.gpus) && n < 4096 {
		s.gpus = append(s.gpus, model)
	}
}

func (s *nvbState) addHost(h string) {
	h = textdiag.Clip(h, 120)
	if h == "" || len(s.hosts) >= 4096 {
		return
	}
	for _, x := range s.hosts {
		if x == h {
			return
		}
	}
	s.hosts = append(s.hosts, h)
}

func (s *nvbState) testcaseError(name, msg string, line int) {
	s.p.Checks = append(s.p.Checks, result.Check{Name: "testcase " + name, OK: false, Error: true,
		Message: fmt.Sprintf("%s: nvbandwidth could not run testcase %s: %s", hlAt(s.file, line), name, nvbOr(textdiag.Clip(msg, 300), "Error"))})
}

// nvbAxes is what a matrix description says of its rows and columns.
type nvbAxes struct {
	row, col, arrow string // "CPU"|"GPU"|"", "->"|"<-"|"<->"|""
	latency         bool
	local           bool   // "memcpy local GPU(column)"
	allGpus         string // multinode "All Gpus -> GPU(column)": "to"|"from"|""
	stream          string // "read1", "total", ...
}

func nvbReadAxes(desc string) nvbAxes {
	var a nvbAxes
	if m := nvbAxesRE.FindStringSubmatch(desc); m != nil {
		a.row, a.arrow, a.col = m[1], m[2], m[3]
	}
	a.latency = strings.HasSuffix(strings.TrimSpace(desc), "(ns)")
	a.local = strings.Contains(desc, "local GPU(column)")
	switch {
	case strings.Contains(desc, "All Gpus -> GPU(column)"):
		a.allGpus = "to"
	case strings.Contains(desc, "All Gpus <- GPU(column)"), strings.Contains(desc, "GPU(column) -> All Gpus"):
		a.allGpus = "from"
	}
	if m := nvbStreamRE.FindStringSubmatch(desc); m != nil {
		a.stream = strings.ToLower(m[1])
	}
	return a
}

// emit turns a matrix into metrics and checks. A matrix cut short
// (!complete) gives the metrics of its whole rows and no path check (its
// missing rows are no N/A).
func (s *nvbState) emit(m *nvbMatrix, complete bool) {
	if len(m.cells) == 0 {
		return
	}
	a := nvbReadAxes(m.desc)
	tc := m.testcase
	name, unit, scale := metricBW, unitGBs, 1.0
	switch {
	case a.latency:
		name, unit, scale = metricLatency, unitUs, 1e-3
	case a.stream == "total":
		name = metricBWTotal
	}
	square := len(m.cols) == len(m.cells) && len(m.cells) > 1
	// A GPU x GPU matrix cut short is still one: its diagonal is no
	// measurement.
	gpuGrid := a.row == "GPU" && a.col == "GPU" && len(m.cols) > 1 && (len(m.cells) > 1 || !complete)
	if complete && a.row == "GPU" && a.col == "GPU" && len(m.cols) > 0 && len(m.cells) > 1 && len(m.cells) != len(m.cols) {
		s.problem(m.line, fmt.Sprintf("the GPU x GPU matrix of %s has %d rows for %d columns", nvbOr(tc, "a testcase"), len(m.cells), len(m.cols)))
	}
	var naPairs, naHost hlCells
	for r, cells := range m.cells {
		rowLine := 0 // JSON: no line
		if r < len(m.rowLines) {
			rowLine = m.rowLines[r]
		}
		for c, v := range cells {
			col := strconv.Itoa(c)
			if c < len(m.cols) {
				col = m.cols[c]
			}
			row := m.rows[r]
			labels := map[string]string{"testcase": tc}
			if a.stream != "" && a.stream != "total" {
				labels["stream"] = a.stream
			}
			switch {
			case a.local:
				labels["direction"], labels["gpu"] = "local", col
			case a.allGpus == "to":
				labels["src"], labels["dst"] = "all", col
			case a.allGpus == "from":
				labels["src"], labels["dst"] = col, "all"
			case a.row == "CPU" && a.col == "GPU":
				labels["gpu"] = col
				labels["direction"] = nvbHostDirection(a.arrow, tc)
				if len(m.cells) > 1 {
					labels["cpu"] = row
				}
			case a.row == "GPU" && a.col == "CPU":
				labels["gpu"] = row
				labels["direction"] = nvbHostDirection(map[string]string{"->": "<-", "<-": "->"}[a.arrow], tc)
			case a.row == "GPU" && a.col == "GPU" && !gpuGrid && len(cells) > 1:
				// all_to_one_* / one_to_all_*: one row of per-GPU totals.
				switch {
				case strings.Contains(tc, "all_to_one"):
					labels["src"], labels["dst"] = "all", col
				case strings.Contains(tc, "one_to_all"):
					labels["src"], labels["dst"] = col, "all"
				default:
					labels["gpu"] = col
				}
			case a.row == "GPU" && a.col == "GPU":
				if a.arrow == "<-" {
					labels["src"], labels["dst"] = col, row
				} else {
					labels["src"], labels["dst"] = row, col
				}
			default:
				labels["gpu"] = col
				if len(m.cells) > 1 {
					labels["row"] = row
				}
			}
			if math.IsNaN(v) {
				switch {
				case gpuGrid && row == col:
					// The diagonal: a GPU and itself, never measured.
				case gpuGrid:
					naPairs.add(rowLine, "GPU "+row+" -> GPU "+col)
				case a.row == "CPU" || a.col == "CPU":
					naHost.add(rowLine, "GPU "+labels["gpu"])
				default:
					naPairs.add(rowLine, fmt.Sprintf("row %s column %s", row, col))
				}
				continue
			}
			s.addMetric(result.Metric{Name: name, Value: v * scale, Unit: unit, Labels: labels})
		}
	}
	ckName := "p2p paths " + tc
	if a.stream != "" {
		ckName += " " + a.stream
	}
	if a.row == "GPU" && a.col == "GPU" && square && complete && !a.latency {
		ck := result.Check{Name: ckName, OK: len(naPairs.items) == 0}
		if !ck.OK {
			ck.Message = fmt.Sprintf("%s: no P2P path measured for %s in %s (N/A off the diagonal: nvbandwidth found no peer access between them, while other GPU pairs have it)", naPairs.at(s.file, m.line), naPairs.list(16), nvbOr(tc, "a testcase"))
		}
		s.p.Checks = append(s.p.Checks, ck)
	} else if len(naPairs.items) > 0 {
		s.p.Checks = append(s.p.Checks, result.Check{Name: ckName, OK: false,
			Message: fmt.Sprintf("%s: N/A for %s in %s", naPairs.at(s.file, m.line), naPairs.list(16), nvbOr(tc, "a testcase"))})
	}
	if len(naHost.items) > 0 {
		s.p.Checks = append(s.p.Checks, result.Check{Name: "host link " + tc, OK: false,
			Message: fmt.Sprintf("%s: no host-link measurement (N/A) for %s in %s", naHost.at(s.file, m.line), naHost.list(16), nvbOr(tc, "a testcase"))})
	}
}

// nvbHostDirection: the arrow of a CPU(row) x GPU(column) matrix says
// the direction; a bidirectional testcase ("<->") reports the direction
// its name starts with (host_to_device_bidirectional_*: the H2D copy;
// device_to_host_* and all_to_host_*: the D2H copy).
func nvbHostDirection(arrow, testcase string) string {
	switch arrow {
	case "->":
		return "h2d"
	case "<-":
		return "d2h"
	}
	if strings.HasPrefix(testcase, "device_to_host") || strings.HasPrefix(testcase, "all_to_host") || strings.Contains(testcase, "device_to_host") {
		return "d2h"
	}
	return "h2d"
}

// hlCells are the cells a check names (an N/A GPU pair, a host link),
// each with the line of its row (0 in JSON), so that a message points at
// the bad cell rather than at its table's heading.
type hlCells struct {
	items []string
	lines []int
}

func (c *hlCells) add(line int, item string) {
	c.items = append(c.items, item)
	c.lines = append(c.lines, line)
}

// at is FILE:LINE of the first cell, or of heading when the cells have
// no line (JSON).
func (c hlCells) at(file string, heading int) string {
	if len(c.lines) > 0 && c.lines[0] > 0 {
		return hlAt(file, c.lines[0])
	}
	return hlAt(file, heading)
}

// list names the cells, each with its line when they lie on more than
// one line (the message's FILE:LINE names the first only).
func (c hlCells) list(max int) string {
	items := c.items
	if len(c.lines) > 0 && c.lines[0] != c.lines[len(c.lines)-1] {
		items = make([]string, len(c.items))
		for i, it := range c.items {
			items[i] = fmt.Sprintf("%s (line %d)", it, c.lines[i])
		}
	}
	return hlList(items, max)
}

func hlList(items []string, max int) string {
	if len(items) <= max {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:max], ", ") + fmt.Sprintf(" and %d more", len(items)-max)
}

// done finishes Info, the waived diagnostics and the error.
func (s *nvbState) done() result.Parsed {
	if len(s.gpus) > 0 {
		s.p.Info["gpu"] = s.gpus[0]
		seen := map[string]bool{}
		for _, g := range s.gpus {
			seen[g] = true
		}
		if len(seen) > 1 {
			var ms []string
			for g := range seen {
				ms = append(ms, g)
			}
			sort.Strings(ms)
			s.warns.Add(0, "the output lists GPUs of different models: "+strings.Join(ms, "; "))
		}
	}
	if len(s.hosts) > 0 {
		s.p.Info["hosts"] = strings.Join(s.hosts, ",")
	}
	if len(s.waived) > 0 {
		var names []string
		for _, w := range s.waived {
			if w != "" {
				names = append(names, w)
			}
		}
		msg := fmt.Sprintf("%d testcases were waived (nvbandwidth found nothing they apply to)", len(s.waived))
		if len(names) > 0 {
			msg += ": " + hlList(names, 12)
		}
		line := 0
		if len(s.waivedLines) > 0 {
			line = s.waivedLines[0]
			msg += fmt.Sprintf(" (\"Waived:\" lines %d-%d; the text output does not name them)", s.waivedLines[0], s.waivedLines[len(s.waivedLines)-1])
		}
		if len(s.gpus) >= 2 {
			s.warns.Add(line, msg+fmt.Sprintf(", on a node of %d GPUs: nvbandwidth waives a GPU-pair testcase when no pair has peer access", len(s.gpus)))
		} else {
			s.infos.Add(line, msg)
		}
	}
	for _, d := range s.errs.Done() {
		s.p.Diagnostics = append(s.p.Diagnostics, result.Diagnostic{Level: result.Problem, Message: d.Text, Source: hlSource(s.file, d.Line)})
	}
	for _, d := range s.warns.Done() {
		s.p.Diagnostics = append(s.p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: d.Text, Source: hlSource(s.file, d.Line)})
	}
	for _, d := range s.infos.Done() {
		s.p.Diagnostics = append(s.p.Diagnostics, result.Diagnostic{Level: result.Info, Message: d.Text, Source: hlSource(s.file, d.Line)})
	}
	if len(s.failErr) > 0 {
		s.p.Error = s.failErr[0]
		if n := s.errs.Len(); n > 1 {
			s.p.Error += fmt.Sprintf(" (and %d more errors)", n-1)
		}
	}
	if len(s.p.Info) == 0 {
		s.p.Info = nil
	}
	return s.p
}

func hlSource(file string, line int) string {
	if line <= 0 {
		return file
	}
	return fmt.Sprintf("%s:%d", file, line)
}

// nvbJSONHead is the -j document's members other than its testcases
// (JsonOutput in json_output.cpp).
type nvbJSONHead struct {
	Version     string          `json:"version"`
	GitVersion  string          `json:"git_version"`
	CUDARuntime json.RawMessage `json:"CUDA Runtime Version"`
	CUDADriver  json.RawMessage `json:"CUDA Driver Version"`
	Driver      string          `json:"Driver Version"`
	Devices     []string        `json:"GPU Device list"`
	Error       string          `json:"error"`
	Warning     string          `json:"warning"`
}

type nvbJSONTestcase struct {
	Name   string              `json:"name"`
	Status string              `json:"status"`
	Error  string              `json:"error"`
	Desc   string              `json:"bandwidth_description"`
	Matrix [][]json.RawMessage `json:"bandwidth_matrix"`
}

// nvbParseJSON reads nvbandwidth's -j output. Matrix cells are strings
// ("370.90", "N/A"); a bidirectional device-to-device testcase appends its
// three matrices (stream 1, stream 2, Total) to one bandwidth_matrix under
// the last description, which is split back here. The document is read
// as a stream, testcase by testcase, so that one cut short keeps the
// testcases before the cut.
func nvbParseJSON(data []byte, file string) result.Parsed {
	s := newNvbState(file)
	dec := json.NewDecoder(bytes.NewReader(data))
	var head nvbJSONHead
	var tcs []nvbJSONTestcase
	found, err := nvbWalkJSON(dec, &head, func(tc nvbJSONTestcase) {
		if len(tcs) < 4096 {
			tcs = append(tcs, tc)
		}
	})
	if !found && err == nil {
		s.problem(0, `no "nvbandwidth" object in the JSON: not nvbandwidth -j output`)
		return s.done()
	}
	n := head
	s.info("nvbandwidthversion", n.Version)
	s.info("nvbandwidthgitversion", n.GitVersion)
	s.info("cudaversion", hlRawString(n.CUDARuntime))
	s.info("cudadriverversion", hlRawString(n.CUDADriver))
	s.info("driverversion", n.Driver)
	for _, d := range n.Devices {
		if m := nvbJSONDeviceRE.FindStringSubmatch(strings.TrimSpace(d)); m != nil {
			s.gpus = append(s.gpus, textdiag.Clip(m[1], 120))
			if m[2] != "" {
				s.addHost(m[2])
			}
		}
		if len(s.gpus) >= 4096 {
			break
		}
	}
	if err != nil {
		msg := fmt.Sprintf("nvbandwidth JSON is not valid (cut short?): %v", err)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			msg = fmt.Sprintf("nvbandwidth JSON is not valid at byte %d (cut short?): %v", se.Offset, err)
		} else if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			msg = fmt.Sprintf("nvbandwidth JSON ends before its object closes, after %d testcases: the output was cut short", len(tcs))
		}
		s.problem(0, msg)
	}
	if n.Error != "" {
		s.problem(0, "nvbandwidth reported an error: "+n.Error)
	}
	if n.Warning != "" {
		s.warns.Add(0, "nvbandwidth: "+n.Warning)
	}
	for i, tc := range tcs {
		name := textdiag.Clip(tc.Name, 128)
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		switch strings.ToLower(tc.Status) {
		case "waived":
			s.waived = append(s.waived, name)
			continue
		case "error", "not found":
			s.testcaseError(name, nvbOr(tc.Error, tc.Status), 0)
			continue
		case "running":
			s.problem(0, "testcase "+name+" has status Running: nvbandwidth stopped before it finished")
		}
		if tc.Error != "" {
			s.testcaseError(name, tc.Error, 0)
		}
		if len(tc.Matrix) == 0 {
			if strings.EqualFold(tc.Status, "passed") {
				s.problem(0, "testcase "+name+" passed with no bandwidth_matrix")
			}
			continue
		}
		for _, m := range nvbSplitJSON(name, tc, s) {
			s.emit(m, true)
		}
	}
	if len(s.p.Metrics) == 0 && s.errs.Len() == 0 && len(s.p.Checks) == 0 {
		msg := "no nvbandwidth result (no testcase with a bandwidth_matrix)"
		if len(s.waived) > 0 {
			msg += fmt.Sprintf(": all %d testcases were waived", len(s.waived))
		}
		s.problem(0, msg)
	}
	return s.done()
}

// nvbWalkJSON reads {"nvbandwidth": {..., "testcases": [...]}} from dec,
// filling head and handing each testcase to each as it is decoded. found
// says the "nvbandwidth" object was there; err is the first decoding
// error (a cut-short document gives io.ErrUnexpectedEOF after the
// testcases before the cut).
func nvbWalkJSON(dec *json.Decoder, head *nvbJSONHead, each func(nvbJSONTestcase)) (found bool, err error) {
	if err := nvbDelim(dec, '{'); err != nil {
		return false, err
	}
	for dec.More() {
		key, err := nvbKey(dec)
		if err != nil {
			return found, err
		}
		if key != "nvbandwidth" || found {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return found, err
			}
			continue
		}
		found = true
		if err := nvbDelim(dec, '{'); err != nil {
			return found, err
		}
		for dec.More() {
			k, err := nvbKey(dec)
			if err != nil {
				return found, err
			}
			if k != "testcases" {
				var v json.RawMessage
				if err := dec.Decode(&v); err != nil {
					return found, err
				}
				// One member at a time: a member of another type than
				// expected leaves the others read.
				if b, err := json.Marshal(map[string]json.RawMessage{k: v}); err == nil {
					_ = json.Unmarshal(b, head)
				}
				continue
			}
			if err := nvbDelim(dec, '['); err != nil {
				return found, err
			}
			for dec.More() {
				var tc nvbJSONTestcase
				if err := dec.Decode(&tc); err != nil {
					return found, err
				}
				each(tc)
			}
			if err := nvbDelim(dec, ']'); err != nil {
				return found, err
			}
		}
		if err := nvbDelim(dec, '}'); err != nil {
			return found, err
		}
	}
	return found, nvbDelim(dec, '}')
}

func nvbDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, found %v", want, tok)
	}
	return nil
}

func nvbKey(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return "", io.ErrUnexpectedEOF
		}
		return "", err
	}
	k, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("want an object key, found %v", tok)
	}
	return k, nil
}

// nvbSplitJSON turns a JSON testcase into its matrices.
func nvbSplitJSON(name string, tc nvbJSONTestcase, s *nvbState) []*nvbMatrix {
	rows := make([][]float64, 0, len(tc.Matrix))
	width := -1
	for r, row := range tc.Matrix {
		if r >= 4096 {
			break
		}
		vals := make([]float64, 0, len(row))
		for _, c := range row {
			v, ok := hlCell(hlRawString(c))
			if !ok {
				s.problem(0, fmt.Sprintf("testcase %s: bandwidth_matrix row %d cell %s is not a number or N/A", name, r, textdiag.Clip(string(c), 40)))
				return nil
			}
			vals = append(vals, v)
		}
		if width >= 0 && len(vals) != width {
			s.problem(0, fmt.Sprintf("testcase %s: bandwidth_matrix rows differ in length (%d and %d)", name, width, len(vals)))
			return nil
		}
		width = len(vals)
		rows = append(rows, vals)
	}
	desc := textdiag.Clip(tc.Desc, 200)
	a := nvbReadAxes(desc)
	parts := []struct {
		desc  string
		cells [][]float64
	}{{desc, rows}}
	per := 0
	switch {
	case a.stream == "total" && a.row == "GPU" && a.col == "GPU" && width > 0 && len(rows) == 3*width:
		per = width
	case a.stream == "total" && a.row == "CPU" && len(rows) == 3:
		per = 1
	}
	if per > 0 {
		w1, w2 := "Read1", "Read2"
		if strings.Contains(name, "write") {
			w1, w2 = "Write1", "Write2"
		}
		parts = parts[:0]
		for i, w := range []string{w1, w2, "Total"} {
			parts = append(parts, struct {
				desc  string
				cells [][]float64
			}{nvbStreamRE.ReplaceAllString(desc, w+" bandwidth"), rows[i*per : (i+1)*per]})
		}
	}
	var out []*nvbMatrix
	for _, p := range parts {
		m := &nvbMatrix{testcase: name, desc: p.desc, cells: p.cells}
		for c := 0; c < width; c++ {
			m.cols = append(m.cols, strconv.Itoa(c))
		}
		for r := range p.cells {
			m.rows = append(m.rows, strconv.Itoa(r))
		}
		out = append(out, m)
	}
	return out
}

// hlRawString is a JSON value as text: a string's contents, or a number
// as written.
func hlRawString(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}
