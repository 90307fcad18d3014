package ibperf

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/textdiag"
	"github.com/gpuaccept/gpuaccept/plugins/internal/toolfail"
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
	// GPU is the GPU model of a GPUDirect run, as perftest names it ("AMD
	// Instinct MI355X" from "Using ROCm Device with ID: 1, Name: AMD
	// Instinct MI355X, ...", "NVIDIA H100 80GB HBM3" from "[pid = 8661, dev
	// = 3] device name = [NVIDIA H100 80GB HBM3]"), GPUID its index
	// ("Picking device No. 3"); "" and -1 when not printed.
	GPU   string
	GPUID int
	// GPUMemory is true when the buffers are in GPU memory: a line of
	// gpuForms was seen ("Use ROCm memory : ON", a GPU chosen or named, a
	// GPU buffer allocated), and no CUDA_MEM_MALLOC allocation. GPULine is
	// the first such line (0: none).
	GPUMemory bool
	GPULine   int
	// GPUMemType is the CUDA memory type of "allocated GPU buffer of a N
	// address at P for type CUDA_MEM_DEVICE" (--cuda_mem_type; "" when not
	// printed): CUDA_MEM_MALLOC puts the buffers in host memory in a CUDA
	// run.
	GPUMemType string
	// Unit is the bandwidth unit of the table's values: "Gb/sec", "MB/sec"
	// or "MiB/sec" ("" when neither the header nor the rows tell). It is
	// the header's unit unless the rows' BW average and MsgRate prove
	// another (the unit check, RowUnit); HeaderUnit is the header's as
	// printed. perftest's MB and MiB are both 2^20 bytes.
	Unit, HeaderUnit string
	// NoPeak is true when perftest said the peak is not measured (-D, -N,
	// many iterations): the peak column holds no measurement then.
	NoPeak bool
	// CPUUtil is true when the table has the CPU_Util[%] column (--cpu_util).
	CPUUtil bool
	// Rows are the result rows in input order.
	Rows []Row
	// Waiting is true when the server's "Waiting for client to connect"
	// banner was seen; Closed when a rule follows the last row (the
	// table's closing rule).
	Waiting, Closed bool
	// Joined is true when rows were read after a closing rule: the output
	// joins the tails of several runs (a script's "ib_send_bw -s SIZE |
	// tail -2" per size), so its rows are not one -a sweep.
	Joined bool
	// NoClient are the servers no client reached: a "Waiting for client to
	// connect" banner (or rdma_cm's "Waiting for client rdma_cm QP to
	// connect") followed by nothing a connected run prints (settings,
	// addresses, an error) before the next banner, a result row of another
	// run, or the end; one Diag per table (series) they stand in, at the
	// first banner's line.
	NoClient []Diag
	// Errors are perftest's failure reports ("Couldn't connect to ...",
	// "Couldn't listen to port", "Completion with error at client",
	// "Failed to exchange data between server and clients", "Unable to
	// find the Infiniband/RoCE device", ...), rows cut short and a table
	// whose bandwidth fits no unit; Warnings are a table header whose unit
	// the values contradict. NamedDevice tells which HCA an error names.
	Errors, Warnings []Diag
	// Setup are lines that say the binary could not start at all ("bash:
	// ib_write_bw: command not found", the loader's "error while loading
	// shared libraries": toolfail.Setup); the plugin names them when the
	// output has no result row only (a login profile's stray line in a
	// complete log says nothing of the run).
	Setup []Diag
	// headerLine is the line of the table header (0: none seen).
	headerLine int
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

// mibPerGb is MiB/s per Gb/s: 1e9 bits / 8 / 2^20 bytes, about 119.2.
const mibPerGb = 1e9 / 8 / 1048576

// Units RowUnit tells apart.
const (
	unitGb  = "Gb/sec"
	unitMiB = "MiB/sec"
	// unitNone: the row's BW average is neither of the two.
	unitNone = "?"
)

// RowUnit says which unit a row's BW average is in, from its MsgRate and
// message size: perftest derives both from one count of messages and one
// time (print_report_bw in src/perftest_parameters.c: bw_avg = size x n x
// cycles_to_units / (cycles x format_factor), msgRate_avg = n x
// cycles_to_units / (cycles x 10^6), format_factor 125x10^6 for Gb/s and
// 2^20 for MiB/s; with -b both sides' sums), so in Gb/s
//
//	BW average [Gb/s] = size [B] x MsgRate [Mpps] x 8 / 1000
//
// and in MiB/s size x MsgRate x 10^6 / 2^20, 119.2 times more, up to the
// printed rounding (BW to 0.01, MsgRate to 10^-6). It returns "Gb/sec",
// "MiB/sec", "?" when the value is neither, or "" when the row cannot tell
// (no rate, or a value so rounded that the two units are not apart).
func RowUnit(r Row) string {
	if r.Size <= 0 || r.MsgRate <= 0 || r.Avg <= 0 {
		return ""
	}
	rounding := 0.005/r.Avg + 5e-7/r.MsgRate
	if rounding > 0.2 {
		return ""
	}
	tol := 0.02 + rounding
	gb := float64(r.Size) * r.MsgRate * 8 / 1000
	switch ratio := r.Avg / gb; {
	case ratio > 1-tol && ratio < 1+tol:
		return unitGb
	case ratio/mibPerGb > 1-tol && ratio/mibPerGb < 1+tol:
		return unitMiB
	}
	return unitNone
}

// checkUnit decides the unit of the table's values from its rows, not
// from the header alone: a server heading its table BW average[MB/sec]
// over Gb/s values has been reported (issue 15), and before perftest 26.x
// negotiated the flags a side whose peer ran without --report_gbits added
// the peer's MiB/s to its own Gb/s (xchg_bw_reports, print_full_bw_report). A header the rows
// contradict is a warning and the rows' unit is used; rows that fit no
// unit, or both, are an error: their bandwidth cannot be read.
func (o *Output) checkUnit(errs, warns *textdiag.List) {
	n := map[string]int{}
	first := map[string]Row{}
	for _, r := range o.Rows {
		u := RowUnit(r)
		if u == "" {
			continue
		}
		if n[u] == 0 {
			first[u] = r
		}
		n[u]++
	}
	told := n[unitGb] + n[unitMiB] + n[unitNone]
	if told == 0 {
		return
	}
	if n[unitGb] > 0 && n[unitMiB] > 0 {
		errs.Add(first[unitMiB].Line, fmt.Sprintf("the result rows disagree on their unit: line %d is in Gb/s, line %d in MiB/s (by MsgRate x size): bandwidth not read",
			first[unitGb].Line, first[unitMiB].Line))
		return
	}
	if bad := n[unitNone]; bad > 0 {
		r := first[unitNone]
		msg := fmt.Sprintf("BW average %g at %d B is neither Gb/s (%.4g) nor MiB/s (%.4g) of its MsgRate %g Mpps, on %d of %d rows (one side run with --report_gbits, the other without?)",
			r.Avg, r.Size, float64(r.Size)*r.MsgRate*8/1000, float64(r.Size)*r.MsgRate*1e6/1048576, r.MsgRate, bad, told)
		if 2*bad >= told {
			errs.Add(r.Line, msg+": bandwidth not read")
			return
		}
		warns.Add(r.Line, msg)
	}
	u, rule := unitGb, "Gb/s (BW average = MsgRate x size x 8 / 1000"
	if n[unitMiB] > 0 {
		u, rule = unitMiB, "MiB/s (BW average = MsgRate x size / 2^20"
	}
	header := o.HeaderUnit
	if header == "MB/sec" {
		header = unitMiB // perftest's MB is 2^20 bytes
	}
	if header == u {
		return
	}
	rows := fmt.Sprintf("%d of %d rows", n[u], told)
	if n[u] == told {
		rows = fmt.Sprintf("all %d rows that tell", told)
	}
	// Rows are read under a header only, so there is one to contradict.
	warns.Add(o.headerLine, fmt.Sprintf("the table is headed BW average[%s] but its values are %s on %s): read as %s, the header is wrong",
		o.HeaderUnit, rule, rows, u))
	o.Unit = u
}

const (
	diagMax    = 200
	lineMax    = 4096
	rowsMax    = 1 << 16
	textLimit  = 1 << 30
	resultRule = "----------------------------------------"
)

// errorMarks are the texts of perftest's failure reports (src/*.c) that
// may stand inside a line ("ethernet_read_keys: Couldn't read remote
// address"); errorStarts are the first words of the rest of them: perftest
// words every fatal report "Couldn't ...", "Unable to ..." or "Failed to
// ..." (" Unable to find the Infiniband/RoCE device", "Failed to modify QP
// 218 to RTR", " Failed to negotiate parameters"), and libibverbs' device
// list errors ("Did not detect devices", "IB device mlx5_3 not found",
// "No IB devices found") come before any of perftest's own lines.
var (
	errorMarks = []string{
		"Couldn't connect", "Couldn't listen", "Completion with error", "Failed to exchange data",
		"Couldn't read remote address", "Failed status", "No IB devices found", "Unable to open", "Couldn't get context",
		"Couldn't allocate", "Unable to init the socket connection", "Failed to create", "Failed to modify QP", "failed to open",
		"Couldn't create", "Couldn't post send", "is not valid for this test", "Invalid", "Can't produce a report",
		"Did not detect devices", "Unable to find the Infiniband/RoCE device", "Failed to get IB devices list",
		"Couldn't get device list", "ibv_open_device", "Couldn't open IB device", "mismatch: local=",
		"Parser function exited with Error",
		// The GPU set-up's failures (src/cuda_memory.c, src/rocm_memory.c,
		// the CUDA code of src/perftest_resources.c before 2023).
		"No such device ID", "There are no available device(s) that support", "can not pick device",
		"Requested ROCm device", "is not supported on this GPU", "cannot be used without",
		"cuInit(0) returned", "cuDeviceGetCount() returned", "hipDeviceGetCount() returned",
		"cuCtxCreate() error", "cuCtxCreate_v2() error", "cuMemAlloc error", "hipMalloc error",
		"cuMemGetHandleForAddressRange error",
	}
	errorStarts = []string{"Couldn't ", "Unable to ", "Failed to "}
	notFoundRE  = regexp.MustCompile(`^IB device \S+ not found`)
)

// isError says whether a trimmed output line is one of perftest's failure
// reports.
func isError(t string) bool {
	for _, m := range errorStarts {
		if strings.HasPrefix(t, m) {
			return true
		}
	}
	for _, m := range errorMarks {
		if strings.Contains(t, m) {
			return true
		}
	}
	return notFoundRE.MatchString(t)
}

// namedDeviceREs find the HCA a failure report names: libibverbs' and
// perftest's "IB device mlx5_3 not found", "Couldn't open IB device
// mlx5_3", older perftest's "Couldn't get context for mlx5_0" (today's
// says "for the device", which names none).
var namedDeviceREs = []*regexp.Regexp{
	regexp.MustCompile(`IB device ([A-Za-z0-9_.-]+) not found`),
	regexp.MustCompile(`Couldn't open IB device ([A-Za-z0-9_.-]+)`),
	regexp.MustCompile(`Couldn't get context for ([A-Za-z0-9_.-]+)`),
	regexp.MustCompile(`ibv_open_device\(?([A-Za-z0-9_.-]+)\)? failed`),
}

// NamedDevice is the HCA an error line names ("mlx5_3" in "IB device
// mlx5_3 not found"), or "" when it names none: such a line is about that
// device, whatever step's log it stands in.
func NamedDevice(text string) string {
	for _, re := range namedDeviceREs {
		if m := re.FindStringSubmatch(text); m != nil && m[1] != "the" && m[1] != "device" {
			return m[1]
		}
	}
	return ""
}

// gpuForms are the lines perftest prints when its buffers are in GPU
// memory, in the forms its history has had (linux-rdma/perftest: CUDA in
// src/perftest_resources.c from b304311 (2014), in src/cuda_memory.c since
// the memory types of 4975543 (2023); ROCm from e5749b4/d5bdf7b (2020),
// src/rocm_memory.c since 4975543). Upstream never printed a "Use CUDA
// memory" line: a CUDA run shows itself by its GPU lines alone.
var (
	// "Using ROCm Device with ID: 1, Name: AMD Instinct MI355X, PCI Bus
	// ID: 0x5, GCN Arch: gfx950" (GCN Arch a number before 4a83eea, 2024).
	rocmDeviceRE = regexp.MustCompile(`Using (?:ROCm|CUDA|cuda|rocm) Device with ID:\s*(\d+),\s*Name:\s*([^,]+)`)
	// "[pid = 8661, dev = 3] device name = [NVIDIA H100 80GB HBM3]":
	// every CUDA version since b304311, and MUSA's (40aa1f0).
	deviceNameRE = regexp.MustCompile(`\[pid = \d+, dev = (\d+)\] device name = \[([^\]]*)\]`)
	// The GPU chosen: "Picking device No. 3" (ea5fd7f, 2020; also MLU and
	// MUSA), "Picking GPU number 3" (--use_cuda_bus_id, 8e02a17), "There
	// are 8 devices supporting CUDA, picking 3..." (129348e, 2018) or
	// "..., picking first..." and "There is 1 device supporting CUDA"
	// (b304311, 2014).
	pickRE = regexp.MustCompile(`Picking device No\. (\d+)|Picking GPU number (\d+)|devices supporting CUDA, picking (\d+|first)|There is 1 device supporting CUDA`)
	// A GPU buffer: CUDA's "cuMemAlloc() of a N bytes GPU buffer" and
	// "allocated GPU buffer address at" (until 2023), "allocated GPU
	// buffer of a N address at P for type CUDA_MEM_DEVICE" (since);
	// ROCm's "allocated N bytes of GPU buffer at"; dmabuf's "using
	// DMA-BUF for GPU buffer address at" (CUDA, ROCm since f5c3035) and
	// "dmabuf export addr".
	gpuBufferRE = regexp.MustCompile(`cuMemAlloc(?:Host)?\(\) of a \d+ bytes GPU buffer|allocated GPU buffer address at|allocated GPU buffer of a \d+ address at \S+ for type (\S+)|allocated \d+ bytes of GPU buffer at|using DMA-BUF for GPU buffer|dmabuf export addr`)
	// "Use ROCm memory : ON" (d5bdf7b), "Use MUSA memory : ON" (40aa1f0);
	// OFF in a host-memory run of such a build.
	useMemoryRE = regexp.MustCompile(`Use (?:ROCm|CUDA|MUSA) memory\s*:\s*(ON|OFF)`)
)

// cudaMalloc is the CUDA memory type whose buffers are host memory
// (--cuda_mem_type=4: "Host allocation selected, calling memalign
// allocator").
const cudaMalloc = "CUDA_MEM_MALLOC"

// gpuLine takes a line of gpuForms; it says whether t was one.
func gpuLine(o *Output, t string, line int) bool {
	seen := func() {
		if o.GPULine == 0 {
			o.GPULine = line
		}
		o.GPUMemory = true
	}
	id := func(s string) {
		if n, err := strconv.Atoi(s); err == nil && n < 1<<20 {
			o.GPUID = n
		}
	}
	if m := rocmDeviceRE.FindStringSubmatch(t); m != nil {
		o.GPU = clip(strings.TrimSpace(m[2]))
		id(m[1])
		seen()
		return true
	}
	if m := deviceNameRE.FindStringSubmatch(t); m != nil {
		o.GPU = clip(strings.TrimSpace(m[2]))
		if o.GPUID < 0 {
			id(m[1])
		}
		seen()
		return true
	}
	if m := pickRE.FindStringSubmatch(t); m != nil {
		switch {
		case m[1] != "":
			id(m[1])
		case m[2] != "":
			id(m[2])
		case m[3] == "first" || m[3] == "":
			o.GPUID = 0
		default:
			id(m[3])
		}
		seen()
		return true
	}
	if m := gpuBufferRE.FindStringSubmatch(t); m != nil {
		if m[1] != "" {
			o.GPUMemType = clip(m[1])
		}
		seen()
		return true
	}
	if strings.Contains(t, "Host allocation selected, calling memalign allocator") {
		o.GPUMemType = cudaMalloc
		return true
	}
	if m := useMemoryRE.FindStringSubmatch(t); m != nil && m[1] == "ON" {
		seen()
	}
	// The settings block holds more than this key on its line: header
	// reads the rest.
	return false
}

// ParseText reads perftest's bandwidth output as printed (stdout and
// stderr). It never panics; the error is for a failing reader only, with
// what was read up to there. Column alignment is not relied on: tokens
// are split on blanks, and the table's columns come from its header.
func ParseText(r io.Reader, name string) (*Output, error) {
	o := &Output{GIDIndex: -1, GPUID: -1}
	errs := textdiag.List{Max: diagMax}
	warns := textdiag.List{Max: diagMax}
	setup := textdiag.List{Max: diagMax}
	br := bufio.NewReaderSize(io.LimitReader(r, textLimit), 64<<10)
	var cols []string
	// reopen: a table closed with rows; a row after its rule is read as
	// the next run's tail (several runs' last rows joined by a script).
	inTable, reopen := false, false
	var w waits
	prev := "" // the last non-blank line: an echoed title above a header
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
					o.Closed, reopen = true, true
				}
				inTable = false
				w.answer(false)
			case strings.Contains(t, "Waiting for client to connect"):
				o.Waiting = true
				w.banner(line, false)
			case strings.Contains(t, "Waiting for client rdma_cm QP to connect"):
				w.banner(line, true)
			case strings.Contains(t, "BW peak won't be measured"):
				o.NoPeak = true
			case strings.HasPrefix(t, "#bytes"):
				cols = headerCols(f)
				inTable = true
				o.headerLine = line
				w.table(line, seriesLabel(prev))
				for _, c := range cols {
					if u, ok := strings.CutPrefix(c, "average["); ok {
						o.Unit = strings.TrimSuffix(u, "]")
						o.HeaderUnit = o.Unit
					}
					if strings.HasPrefix(c, "CPU_Util") {
						o.CPUUtil = true
					}
				}
			case (inTable || reopen) && len(f) > 0 && isUint(f[0]):
				row, ok := parseRow(f, cols, line)
				switch {
				case !ok && inTable:
					errs.Add(line, fmt.Sprintf("result row not understood or cut short: %s", clip(t)))
				case ok:
					if !inTable {
						o.Joined, inTable = true, true
					}
					// A row right after a banner is another run's: the
					// banner's run printed nothing more.
					w.unanswered()
					o.Closed = false
					if len(o.Rows) < rowsMax {
						o.Rows = append(o.Rows, row)
					}
				}
			case strings.HasSuffix(t, "BW Test") || strings.HasSuffix(t, "BW test"):
				if o.Test == "" {
					o.Test = clip(t)
					o.Bidirectional = strings.Contains(t, "Bidirectional")
				}
				w.answer(false)
			case gpuLine(o, t, line):
			default:
				header(o, t)
				if isError(t) {
					errs.Add(line, clip(t))
					w.answer(true)
				} else if k, _ := toolfail.Classify(t); k == toolfail.Setup {
					setup.Add(line, clip(t))
				} else if strings.HasPrefix(t, "local address:") || strings.HasPrefix(t, "remote address:") {
					w.answer(true)
				}
			}
			if t != "" {
				prev = t
			}
		}
		if err != nil {
			if err != io.EOF {
				rerr = fmt.Errorf("read perftest output %s:%d: %w", name, line+1, err)
			}
			break
		}
	}
	w.unanswered()
	o.NoClient = w.diags()
	if o.GPUMemType == cudaMalloc {
		o.GPUMemory = false
	}
	o.checkUnit(&errs, &warns)
	o.Errors, o.Warnings, o.Setup = errs.Done(), warns.Done(), setup.Done()
	return o, rerr
}

// seriesLabel is the title a script echoed above a table header ("host
// send to remote-dpu"), or "" when the line above is perftest's own (its
// rule, a row, a banner).
func seriesLabel(prev string) string {
	f := strings.Fields(prev)
	if len(f) == 0 || strings.HasPrefix(prev, "---") || strings.HasPrefix(prev, "*") || strings.HasPrefix(prev, "#") || isUint(f[0]) {
		return ""
	}
	return textdiag.Clip(prev, 80)
}

// waits follows the servers' "Waiting for client" banners. A connected
// run answers its banner with what it prints next: the settings block's
// rule or title (after the TCP banner), its QPs' addresses or an error
// (after either). A banner that meets another banner, a result row or the
// end first was never answered: no client reached that server. Unanswered
// banners are grouped by the table (series) they stand in.
type waits struct {
	pending int  // line of the banner not yet answered, 0: none
	cm      bool // it is rdma_cm's, which a rule does not answer
	header  int  // the table header the banners stand under (0: none)
	label   string
	groups  []waitGroup
}

type waitGroup struct {
	header, first, last, n int
	label                  string
	cm                     bool
}

func (w *waits) banner(line int, cm bool) {
	if w.pending > 0 && !(cm && !w.cm) {
		// rdma_cm's banner follows the TCP one in a run that went on.
		w.unanswered()
	}
	w.pending, w.cm = line, cm
}

// answer ends the pending wait: strong is evidence of a peer (addresses,
// an error), a rule or a title answers the TCP banner only.
func (w *waits) answer(strong bool) {
	if w.pending > 0 && (strong || !w.cm) {
		w.pending = 0
	}
}

func (w *waits) table(line int, label string) { w.header, w.label = line, label }

func (w *waits) unanswered() {
	if w.pending == 0 {
		return
	}
	if n := len(w.groups); n > 0 && w.groups[n-1].header == w.header && w.groups[n-1].cm == w.cm {
		g := &w.groups[n-1]
		g.last, g.n = w.pending, g.n+1
	} else if n < diagMax {
		w.groups = append(w.groups, waitGroup{header: w.header, first: w.pending, last: w.pending, n: 1, label: w.label, cm: w.cm})
	}
	w.pending = 0
}

func (w *waits) diags() []Diag {
	var out []Diag
	for _, g := range w.groups {
		banner := "Waiting for client to connect"
		if g.cm {
			banner = "Waiting for client rdma_cm QP to connect"
		}
		where := fmt.Sprintf("at line %d", g.first)
		if g.n > 1 {
			where = fmt.Sprintf("%d times (lines %d-%d)", g.n, g.first, g.last)
		}
		msg := fmt.Sprintf("no client connected: %q %s with nothing a connected server prints after it", banner, where)
		switch {
		case g.header > 0 && g.label != "":
			msg += fmt.Sprintf(", in the series %q (table header at line %d)", g.label, g.header)
		case g.header > 0:
			msg += fmt.Sprintf(", in the table headed at line %d", g.header)
		}
		out = append(out, Diag{Line: g.first, Text: msg})
	}
	return out
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
