package mori

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/textdiag"
	"github.com/gpuaccept/gpuaccept/plugins/internal/toolfail"
)

// Output is what one Mori-EP dispatch/combine benchmark output says: the
// intra-node rounds (tests/python/ops/bench_dispatch_combine.py), the
// inter-node tables (examples/ops/dispatch_combine/
// test_dispatch_combine_internode.py), or both.
type Output struct {
	// Configs are the intra-node benchmark blocks in input order, one per
	// "Dispatch result:" section (a tuning run prints several).
	Configs []Config
	// Tables are the inter-node tables in input order, e.g. "Dispatch
	// Performance (bfloat16)".
	Tables []Table
	// Gloo are the "[Gloo] Rank N is connected to M peer ranks. Expected
	// number of connected peer ranks is : K" lines whose M differs from K.
	Gloo []Diag
	// Errors are failures the output reports (Python tracebacks, HIP and
	// RCCL errors, aborts) and lines of a section cut short.
	Errors []Diag
	// Setup are lines that say the benchmark could not start
	// ("ModuleNotFoundError: No module named 'mori'", "bash: python3:
	// command not found": toolfail.Setup), named when no table came (a
	// login profile's stray line in a complete log says nothing).
	Setup []Diag
	// Mismatches are the benchmark's own correctness check failing:
	// "Result mismatch for token N:" lines (ROCm/mori
	// tests/python/ops/bench_dispatch_combine*.py compare what combine
	// returns with what was dispatched): wrong data, whatever the bandwidth.
	Mismatches []Diag
	// Warnings are round lines not understood.
	Warnings []Diag
}

// Config is one intra-node benchmark block.
type Config struct {
	// Line is where its "Dispatch result:" is; Setting the "Benchmarking
	// with ..." line before it ("" when none).
	Line    int
	Setting string
	// Dispatch, Combine and E2E are the rounds of each phase.
	Dispatch, Combine, E2E []Round
}

// Round is one measured round of a phase.
type Round struct {
	// Line is the 1-based input line; N the round number printed.
	Line, N int
	// Duration is the time per rank in us, BW the bandwidth per rank in
	// GB/s (1e9 bytes/s), indexed by rank; e2e rounds have no BW.
	Duration, BW []float64
	// AvgMB is the average bytes per rank in MB (2^20 bytes), Lat the mean
	// time over ranks in us, AlgBW the mean bandwidth over ranks and LLBW
	// it scaled for the low-latency kernel, in GB/s (mori prints "lat L
	// bw A / B"). 0 for e2e rounds.
	AvgMB, Lat, AlgBW, LLBW float64
}

// Table is one inter-node table: rows Best, Worst, Average by column.
type Table struct {
	// Line is the line of its title; Phase "dispatch" or "combine"; Title
	// the whole title.
	Line         int
	Phase, Title string
	// Rows maps "best", "worst", "average" to the row's values by column:
	// "rdma_bw", "xgmi_bw", "ll_bw" (GB/s) and "lat" (us).
	Rows map[string]map[string]float64
}

// Diag is an error or warning with its 1-based line (0: whole output).
type Diag = textdiag.Diag

const (
	lineMax   = 1 << 16
	diagMax   = 200
	roundsMax = 1 << 14
	textLimit = 1 << 30
)

var (
	roundRE = regexp.MustCompile(`^Round\s+(\d+)\s+duration\(us\)\s*\[([^\]]*)\]\s*bandwidth\(GB/s\)\s*\[([^\]]*)\]\s*avg bytes\(MB\)\s*(\S+)\s+lat\s+(\S+)\s+bw\s+(\S+)(?:\s*/\s*(\S+))?`)
	e2eRE   = regexp.MustCompile(`^Round\s+(\d+)\s+e2e\(us\)\s*\[([^\]]*)\]`)
	glooRE  = regexp.MustCompile(`\[Gloo\] Rank (\d+) is connected to (\d+) peer ranks\. Expected number of connected peer ranks is : (\d+)`)
	// errorMarks are failure reports of Python, HIP, RCCL and the shell.
	errorMarks = []string{"Traceback (most recent call last)", "RuntimeError", "HIP error", "hipError", "NCCL error", "RCCL error",
		"Segmentation fault", "core dumped", "Aborted", "out of memory", "CUDA error", "ChildFailedError", "Killed"}
)

// ParseText reads a Mori-EP benchmark output as printed. Alignment is not
// relied on: table cells are split on '|', arrays on ','. It never panics;
// the error is for a failing reader only, with what was read up to there.
func ParseText(r io.Reader, name string) (*Output, error) {
	o := &Output{}
	errs := textdiag.List{Max: diagMax}
	setup := textdiag.List{Max: diagMax}
	warns := textdiag.List{Max: diagMax}
	gloo := textdiag.List{Max: diagMax}
	mism := textdiag.List{Max: diagMax, What: "mismatches"}
	br := bufio.NewReaderSize(io.LimitReader(r, textLimit), 64<<10)
	line := 0
	phase := ""       // "dispatch", "combine", "e2e" while in an intra-node section
	setting := ""     // the last "Benchmarking with" line
	var tbl *Table    // the inter-node table being read
	var cols []string // its column keys
	var rerr error
	for {
		raw, read, err := textdiag.ReadLine(br, lineMax)
		if read {
			line++
			t := strings.TrimSpace(strings.ToValidUTF8(raw[textdiag.PrefixLen(raw):], "?")) // after launcher labels
			switch {
			case t == "":
			case strings.HasPrefix(t, "Benchmarking with"):
				setting = clip(t)
			case t == "Dispatch result:":
				o.Configs = append(o.Configs, Config{Line: line, Setting: setting})
				phase = "dispatch"
			case t == "Combine result:":
				if len(o.Configs) == 0 {
					o.Configs = append(o.Configs, Config{Line: line, Setting: setting})
				}
				phase = "combine"
			case strings.HasPrefix(t, "End-to-end result:"):
				phase = "e2e"
				if len(o.Configs) == 0 {
					phase = ""
				}
			case strings.HasPrefix(t, "Round ") && phase != "":
				rd, ok := parseRound(t, phase == "e2e", line)
				if !ok {
					errs.Add(line, "round line not understood or cut short: "+clip(t))
					continue
				}
				c := &o.Configs[len(o.Configs)-1]
				switch phase {
				case "dispatch":
					if len(c.Dispatch) < roundsMax {
						c.Dispatch = append(c.Dispatch, rd)
					}
				case "combine":
					if len(c.Combine) < roundsMax {
						c.Combine = append(c.Combine, rd)
					}
				case "e2e":
					if len(c.E2E) < roundsMax {
						c.E2E = append(c.E2E, rd)
					}
				}
			case strings.HasPrefix(t, "|"):
				cells := tableCells(t)
				switch {
				case len(cells) == 1 && strings.Contains(cells[0], "Performance"):
					ph := strings.ToLower(strings.Fields(cells[0])[0])
					o.Tables = append(o.Tables, Table{Line: line, Phase: ph, Title: clip(cells[0]), Rows: map[string]map[string]float64{}})
					tbl, cols = &o.Tables[len(o.Tables)-1], nil
				case len(cells) > 1 && cells[0] == "Metrics" && tbl != nil:
					cols = nil
					for _, c := range cells[1:] {
						cols = append(cols, columnKey(c))
					}
				case len(cells) > 1 && tbl != nil && cols != nil:
					stat := strings.ToLower(cells[0])
					if stat != "best" && stat != "worst" && stat != "average" {
						warns.Add(line, "table row not understood: "+clip(t))
						continue
					}
					if len(cells)-1 != len(cols) {
						errs.Add(line, "table row cut short: "+clip(t))
						continue
					}
					row := map[string]float64{}
					for i, c := range cells[1:] {
						v, err := num(c)
						if err != nil {
							errs.Add(line, fmt.Sprintf("table cell %q is no number", clip(c)))
							continue
						}
						if cols[i] != "" {
							row[cols[i]] = v
						}
					}
					tbl.Rows[stat] = row
				}
			case strings.HasPrefix(t, "+-"):
			default:
				if strings.HasPrefix(t, "Result mismatch") {
					mism.Add(line, clip(t))
					continue
				}
				if m := glooRE.FindStringSubmatch(t); m != nil {
					if m[2] != m[3] {
						gloo.Add(line, clip(t))
					}
					continue
				}
				marked := false
				for _, m := range errorMarks {
					if strings.Contains(t, m) {
						errs.Add(line, clip(t))
						marked = true
						break
					}
				}
				if k, _ := toolfail.Classify(t); !marked && k == toolfail.Setup {
					setup.Add(line, clip(t))
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				rerr = fmt.Errorf("read Mori-EP output %s:%d: %w", name, line+1, err)
			}
			break
		}
	}
	o.Errors, o.Warnings, o.Gloo, o.Mismatches, o.Setup = errs.Done(), warns.Done(), gloo.Done(), mism.Done(), setup.Done()
	return o, rerr
}

// columnKey names an inter-node table column: "RDMA Bandwidth (GB/s)" is
// rdma_bw, "Latency (us)" lat; "" for a column not known.
func columnKey(c string) string {
	l := strings.ToLower(c)
	switch {
	case strings.HasPrefix(l, "rdma bandwidth"):
		return "rdma_bw"
	case strings.HasPrefix(l, "xgmi bandwidth"):
		return "xgmi_bw"
	case strings.HasPrefix(l, "ll bandwidth"):
		return "ll_bw"
	case strings.HasPrefix(l, "latency"):
		return "lat"
	}
	return ""
}

func tableCells(t string) []string {
	parts := strings.Split(strings.Trim(t, "|"), "|")
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		out = append(out, strings.TrimSpace(p))
	}
	return out
}

func parseRound(t string, e2e bool, line int) (Round, bool) {
	rd := Round{Line: line}
	if e2e {
		m := e2eRE.FindStringSubmatch(t)
		if m == nil {
			return rd, false
		}
		var ok bool
		rd.N, _ = strconv.Atoi(m[1])
		rd.Duration, ok = list(m[2])
		return rd, ok
	}
	m := roundRE.FindStringSubmatch(t)
	if m == nil {
		return rd, false
	}
	var ok1, ok2 bool
	rd.N, _ = strconv.Atoi(m[1])
	rd.Duration, ok1 = list(m[2])
	rd.BW, ok2 = list(m[3])
	if !ok1 || !ok2 || len(rd.Duration) != len(rd.BW) {
		return rd, false
	}
	var err error
	for _, f := range []struct {
		s string
		v *float64
	}{{m[4], &rd.AvgMB}, {m[5], &rd.Lat}, {m[6], &rd.AlgBW}, {m[7], &rd.LLBW}} {
		if f.s == "" {
			continue
		}
		if *f.v, err = num(f.s); err != nil {
			return rd, false
		}
	}
	return rd, true
}

// list parses a Python list of numbers: "848.5, 846.1, 846.5".
func list(s string) ([]float64, bool) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := num(f)
		if err != nil {
			return nil, false
		}
		out = append(out, v)
	}
	return out, len(out) > 0
}

func num(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, err
	}
	if v != v || v > 1e15 || v < -1e15 {
		return 0, fmt.Errorf("%q out of range", s)
	}
	return v, nil
}

func clip(s string) string { return textdiag.Clip(s, 300) }

// Record is one line of the JSON-lines report Mori's benchmarks append to
// $MORI_PERF_OUT (tests/python/perf_report.py record_perf): category
// "intra_ep" or "internode_ep", the run's params and its metrics, e.g.
// dispatch_bw_gbps (GB/s, the best round), dispatch_lat_us (us; the best
// round intra-node, the average inter-node), dispatch_rdma_bw_gbps, ...
type Record struct {
	Line     int                `json:"-"`
	Category string             `json:"category"`
	Params   map[string]any     `json:"params"`
	Metrics  map[string]float64 `json:"metrics"`
	Platform string             `json:"platform"`
	Commit   string             `json:"commit"`
}

// ParseJSONL reads a $MORI_PERF_OUT file: one JSON object a line. Lines
// that are no record are returned as warnings (the file is appended to by
// every run that names it); the error says why nothing was read.
func ParseJSONL(r io.Reader, name string) ([]Record, []Diag, error) {
	var recs []Record
	warns := textdiag.List{Max: diagMax}
	br := bufio.NewReaderSize(io.LimitReader(r, 64<<20), 64<<10)
	line := 0
	for {
		raw, err := br.ReadString('\n')
		if len(raw) > 0 {
			line++
			t := strings.TrimSpace(raw)
			if t != "" {
				var rec Record
				if jerr := json.Unmarshal([]byte(t), &rec); jerr != nil || rec.Category == "" || len(rec.Metrics) == 0 {
					warns.Add(line, fmt.Sprintf("%s:%d: not a perf record", name, line))
				} else {
					rec.Line = line
					recs = append(recs, rec)
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				return recs, warns.Done(), fmt.Errorf("read %s:%d: %w", name, line+1, err)
			}
			break
		}
	}
	if len(recs) == 0 {
		return nil, warns.Done(), fmt.Errorf("%s: no perf record", name)
	}
	return recs, warns.Done(), nil
}
