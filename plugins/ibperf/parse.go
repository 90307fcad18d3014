package ibperf

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/textdiag"
)

// Output is what one perftest bandwidth output (ib_write_bw, ib_read_bw,
// ib_send_bw; server or client side) says. ParseText and ParseJSON fill it.
type Output struct {
	// Test is the title perftest prints, e.g. "RDMA_Write Bidirectional BW
	// Test" ("" when not seen).
	Test string
	// Bidirectional is true when the title says so (-b).
	Bidirectional bool
	// Device is the HCA ("ionic_7"), QPs the number of queue pairs, GIDIndex
	// the GID index (-1 unknown), LinkType "Ethernet" or "IB".
	Device   string
	QPs      int
	GIDIndex int
	LinkType string
	// GPU is the GPU model of a GPUDirect run ("AMD Instinct MI355X", from
	// "Using ROCm Device with ID: 1, Name: AMD Instinct MI355X, ..." or the
	// CUDA form), GPUID its index; "" and -1 for host memory.
	GPU   string
	GPUID int
	// GPUMemory is true when the buffers are in GPU memory ("Use ROCm
	// memory : ON", "Use CUDA memory : ON", or a GPU line above).
	GPUMemory bool
	// Unit is the bandwidth unit of the table as printed: "Gb/sec",
	// "MB/sec" or "MiB/sec" ("" when no table header was seen). perftest's
	// MB and MiB are both 2^20 bytes.
	Unit string
	// NoPeak is true when perftest said the peak is not measured (-D, -N,
	// many iterations): the peak column holds no measurement then.
	NoPeak bool
	// CPUUtil is true when the table has the CPU_Util[%] column (--cpu_util).
	CPUUtil bool
	// Rows are the result rows in input order.
	Rows []Row
	// Waiting is true when the server's "Waiting for client to connect"
	// banner was seen; Closed when the table's closing rule was.
	Waiting, Closed bool
	// Errors are perftest's failure reports ("Couldn't connect to ...",
	// "Couldn't listen to port", "Completion with error at client",
	// "Failed to exchange data between server and clients", ...) and rows
	// cut short; Warnings are lines not understood.
	Errors, Warnings []Diag
}

// Row is one result row: one message size.
type Row struct {
	// Line is the 1-based input line (0 for JSON).
	Line int
	// Size is the message size in bytes, Iters the number of iterations
	// (messages, with -D).
	Size, Iters int64
	// Peak and Avg are the peak and average bandwidth in Output.Unit; Peak
	// is meaningless when Output.NoPeak.
	Peak, Avg float64
	// MsgRate is the message rate in Mpps.
	MsgRate float64
	// CPU is the CPU utilisation in percent; -1 when not printed.
	CPU float64
}

// Diag is an error or warning found in an output, with its line.
type Diag = textdiag.Diag

// GbPerSec converts v, in the output's unit, to Gb/s (1e9 bits/s).
// perftest's MB/sec and MiB/sec are both 2^20 bytes per second
// (format_factor 0x100000 in src/perftest_parameters.c).
func (o *Output) GbPerSec(v float64) float64 {
	switch o.Unit {
	case "MB/sec", "MiB/sec":
		return v * 1048576 * 8 / 1e9
	}
	return v
}

const (
	diagMax    = 200
	lineMax    = 4096
	rowsMax    = 1 << 16
	textLimit  = 1 << 30
	resultRule = "----------------------------------------"
)

// errorMarks are the texts of perftest's failure reports (src/*.c).
var errorMarks = []string{
	"Couldn't connect", "Couldn't listen", "Completion with error", "Failed to exchange data",
	"Couldn't read remote address", "Failed status", "No IB devices found", "Unable to open", "Couldn't get context",
	"Couldn't allocate", "Unable to init the socket connection", "Failed to create", "Failed to modify QP", "failed to open",
	"Couldn't create", "Couldn't post send", "is not valid for this test", "Invalid", "Can't produce a report",
}

var gpuRE = regexp.MustCompile(`Using (ROCm|CUDA|cuda|rocm) Device with ID:\s*(\d+),\s*Name:\s*([^,]+)`)

// ParseText reads perftest's bandwidth output as printed (stdout and
// stderr). It never panics; the error is for a failing reader only, with
// what was read up to there. Column alignment is not relied on: tokens
// are split on blanks, and the table's columns come from its header.
func ParseText(r io.Reader, name string) (*Output, error) {
	o := &Output{GIDIndex: -1, GPUID: -1}
	errs := textdiag.List{Max: diagMax}
	warns := textdiag.List{Max: diagMax}
	br := bufio.NewReaderSize(io.LimitReader(r, textLimit), 64<<10)
	var cols []string
	inTable := false
	line := 0
	var rerr error
	for {
		raw, read, err := textdiag.ReadLine(br, lineMax)
		if read {
			line++
			s := strings.ToValidUTF8(raw[textdiag.PrefixLen(raw):], "?") // after mpirun/srun/kubectl labels
			t := strings.TrimSpace(s)
			f := strings.Fields(t)
			switch {
			case t == "":
			case strings.HasPrefix(t, resultRule):
				if inTable && len(o.Rows) > 0 {
					o.Closed = true
				}
				inTable = false
			case strings.Contains(t, "Waiting for client to connect"):
				o.Waiting = true
			case strings.Contains(t, "BW peak won't be measured"):
				o.NoPeak = true
			case strings.HasPrefix(t, "#bytes"):
				cols = headerCols(f)
				inTable = true
				for _, c := range cols {
					if u, ok := strings.CutPrefix(c, "average["); ok {
						o.Unit = strings.TrimSuffix(u, "]")
					}
					if strings.HasPrefix(c, "CPU_Util") {
						o.CPUUtil = true
					}
				}
			case inTable && len(f) > 0 && isUint(f[0]):
				row, ok := parseRow(f, cols, line)
				if !ok {
					errs.Add(line, fmt.Sprintf("result row not understood or cut short: %s", clip(t)))
					continue
				}
				if len(o.Rows) < rowsMax {
					o.Rows = append(o.Rows, row)
				}
			case strings.HasSuffix(t, "BW Test") || strings.HasSuffix(t, "BW test"):
				if o.Test == "" {
					o.Test = clip(t)
					o.Bidirectional = strings.Contains(t, "Bidirectional")
				}
			case gpuRE.MatchString(t):
				m := gpuRE.FindStringSubmatch(t)
				o.GPU = clip(strings.TrimSpace(m[3]))
				o.GPUID, _ = strconv.Atoi(m[2])
				o.GPUMemory = true
			default:
				header(o, t)
				for _, m := range errorMarks {
					if strings.Contains(t, m) {
						errs.Add(line, clip(t))
						break
					}
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				rerr = fmt.Errorf("read perftest output %s:%d: %w", name, line+1, err)
			}
			break
		}
	}
	o.Errors, o.Warnings = errs.Done(), warns.Done()
	return o, rerr
}

// header takes the settings of the "Key : value" block: "Dual-port : OFF
// Device : ionic_7" holds two of them on one line.
func header(o *Output, t string) {
	// The seed's copy lost the column alignment: match on single blanks.
	norm := strings.Join(strings.Fields(t), " ")
	for _, kv := range []struct {
		key string
		set func(string)
	}{
		{"Device :", func(v string) { o.Device = clip(firstWord(v)) }},
		{"Number of qps :", func(v string) { o.QPs, _ = strconv.Atoi(firstWord(v)) }},
		{"GID index :", func(v string) {
			if n, err := strconv.Atoi(firstWord(v)); err == nil {
				o.GIDIndex = n
			}
		}},
		{"Link type :", func(v string) { o.LinkType = clip(firstWord(v)) }},
		{"Use ROCm memory :", func(v string) { o.GPUMemory = o.GPUMemory || firstWord(v) == "ON" }},
		{"Use CUDA memory :", func(v string) { o.GPUMemory = o.GPUMemory || firstWord(v) == "ON" }},
	} {
		if i := strings.Index(norm, kv.key); i >= 0 {
			kv.set(norm[i+len(kv.key):])
		}
	}
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// headerCols names the table's columns from its header tokens: "#bytes",
// "#sl", "#iterations", and every token with a bracketed unit
// ("peak[Gb/sec]", "average[Gb/sec]", "MsgRate[Mpps]", "CPU_Util[%]",
// "Port1[Gb/sec]", ...). "BW" and the "MsgRate" of "MsgRate Port1[Mpps]"
// are words of a name, not columns.
func headerCols(f []string) []string {
	var cols []string
	for _, t := range f {
		if strings.HasPrefix(t, "#") || strings.Contains(t, "[") {
			cols = append(cols, t)
		}
	}
	return cols
}

func parseRow(f, cols []string, line int) (Row, bool) {
	r := Row{Line: line, CPU: -1}
	if len(cols) == 0 {
		cols = []string{"#bytes", "#iterations", "peak[", "average[", "MsgRate["}
	}
	if len(f) < len(cols) {
		return r, false
	}
	for i, c := range cols {
		var err error
		switch {
		case c == "#bytes":
			r.Size, err = strconv.ParseInt(f[i], 10, 64)
		case c == "#iterations":
			r.Iters, err = strconv.ParseInt(f[i], 10, 64)
		case strings.HasPrefix(c, "peak["):
			r.Peak, err = parseNum(f[i])
		case strings.HasPrefix(c, "average["):
			r.Avg, err = parseNum(f[i])
		case strings.HasPrefix(c, "MsgRate["):
			r.MsgRate, err = parseNum(f[i])
		case strings.HasPrefix(c, "CPU_Util"):
			r.CPU, err = parseNum(f[i])
		default:
			_, err = parseNum(f[i])
		}
		if err != nil {
			return r, false
		}
	}
	return r, r.Size >= 0 && r.Iters >= 0
}

func parseNum(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	if v != v || v > 1e15 || v < -1e15 {
		return 0, fmt.Errorf("%q out of range", s)
	}
	return v, nil
}

func isUint(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func clip(s string) string { return textdiag.Clip(s, 300) }

// ParseJSON reads the file perftest writes with --out_json
// (--out_json_file=FILE): a "test_info" object and a "results" object with
// MsgSize, n_iterations, BW_peak, BW_average, MsgRate and, with
// --cpu_util, CPU_util. perftest rewrites the file for every size, so it
// holds the last size of a sweep only; the units are those of the text
// (Gb/sec with --report_gbits). Some forms are not valid JSON (the QoS
// form writes an unquoted key), so the file is read line by line as
// "key": value pairs. The error says why nothing was found.
func ParseJSON(r io.Reader, name string) (*Output, error) {
	o := &Output{GIDIndex: -1, GPUID: -1}
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return o, fmt.Errorf("read perftest JSON %s: %w", name, err)
	}
	kv := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		for _, part := range strings.Split(l, ",") {
			k, v, ok := strings.Cut(part, ":")
			if !ok {
				continue
			}
			k = strings.Trim(strings.TrimSpace(k), `"{}`)
			v = strings.Trim(strings.TrimSpace(v), `"{}`)
			if _, seen := kv[k]; !seen && k != "" {
				kv[k] = v
			}
		}
	}
	if t := kv["test"]; t != "" {
		o.Test = clip(strings.ReplaceAll(t, "_", " "))
		o.Bidirectional = strings.Contains(t, "Bidirectional")
	}
	o.Device = clip(kv["Device"])
	o.QPs, _ = strconv.Atoi(kv["Number_of_qps"])
	num := func(k string) (float64, bool) {
		v, err := parseNum(kv[k])
		return v, err == nil
	}
	size, ok1 := num("MsgSize")
	iters, ok2 := num("n_iterations")
	avg, ok3 := num("BW_average")
	if !ok1 || !ok3 {
		if v, ok := num("bw_avg"); ok { // --output=bandwidth
			o.Rows = append(o.Rows, Row{Avg: v, CPU: -1})
			return o, nil
		}
		return o, fmt.Errorf("perftest JSON %s: no results (want MsgSize and BW_average)", name)
	}
	row := Row{Size: int64(size), Avg: avg, CPU: -1}
	if ok2 {
		row.Iters = int64(iters)
	}
	row.Peak, _ = num("BW_peak")
	row.MsgRate, _ = num("MsgRate")
	if v, ok := num("CPU_util"); ok {
		row.CPU = v
		o.CPUUtil = true
	}
	if size < 0 {
		return o, fmt.Errorf("perftest JSON %s: MsgSize %v is negative", name, size)
	}
	o.Rows = append(o.Rows, row)
	return o, nil
}
