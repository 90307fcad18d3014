package telemetry

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/plugins/internal/lines"
)

// maxLine bounds one line of a tool's output: a query of 19 fields over
// 8 GPUs is far below it.
const maxLine = 64 << 10

// NvidiaSMIFields is the query the sampler asks nvidia-smi first
// (--query-gpu=... --format=csv,nounits -lms INTERVAL); a driver that
// refuses one field refuses the whole query, so sample.sh falls back to
// smaller lists (README.md).
const NvidiaSMIFields = "timestamp,index,uuid,serial,pci.bus_id,utilization.gpu,clocks.sm,clocks.mem,power.draw,enforced.power.limit,temperature.gpu,temperature.memory,clocks_event_reasons.active,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max"

// nvsmiColumn maps a --query-gpu field, as nvidia-smi names it in the CSV
// header (without " [unit]"), to what it sets in a Sample. Both the name
// asked (clocks.sm) and the name printed (clocks.current.sm) are listed,
// and both names of the clock event reasons (clocks_throttle_reasons
// before driver 535).
var nvsmiColumn = map[string]func(*Sample, string) bool{
	"timestamp":                             func(s *Sample, v string) bool { return setTime(s, v) },
	"index":                                 func(s *Sample, v string) bool { var ok bool; s.GPU, ok = gpuIndex(v); return ok },
	"uuid":                                  ident("uuid", func(s *Sample) *string { return &s.UUID }),
	"serial":                                ident("serial", func(s *Sample) *string { return &s.Serial }),
	"pci.bus_id":                            ident("pci.bus_id", func(s *Sample) *string { return &s.BusID }),
	"utilization.gpu":                       num(func(s *Sample) *float64 { return &s.Util }),
	"clocks.sm":                             num(func(s *Sample) *float64 { return &s.SMClock }),
	"clocks.current.sm":                     num(func(s *Sample) *float64 { return &s.SMClock }),
	"clocks.mem":                            num(func(s *Sample) *float64 { return &s.MemClock }),
	"clocks.current.memory":                 num(func(s *Sample) *float64 { return &s.MemClock }),
	"power.draw":                            num(func(s *Sample) *float64 { return &s.Power }),
	"power.draw.instant":                    num(func(s *Sample) *float64 { return &s.Power }),
	"enforced.power.limit":                  num(func(s *Sample) *float64 { return &s.PowerLimit }),
	"power.limit":                           num(func(s *Sample) *float64 { return &s.PowerLimit }),
	"temperature.gpu":                       num(func(s *Sample) *float64 { return &s.Temp }),
	"temperature.memory":                    num(func(s *Sample) *float64 { return &s.MemTemp }),
	"clocks_event_reasons.active":           setReasons,
	"clocks_throttle_reasons.active":        setReasons,
	"ecc.errors.corrected.volatile.total":   count(func(s *Sample) *int64 { return &s.ECCCorrected }),
	"ecc.errors.uncorrected.volatile.total": count(func(s *Sample) *int64 { return &s.ECCUncorrected }),
	"pcie.link.gen.current":                 small(func(s *Sample) *int { return &s.PCIeGen }),
	"pcie.link.width.current":               small(func(s *Sample) *int { return &s.PCIeWidth }),
	"pcie.link.gen.max":                     small(func(s *Sample) *int { return &s.PCIeGenMax }),
	"pcie.link.width.max":                   small(func(s *Sample) *int { return &s.PCIeWidthMax }),
}

// Per-reason columns (clocks_event_reasons.hw_slowdown, ...: "Active" or
// "Not Active"), the bits of NVML's bitmask they stand for (nvidia-smi
// --help-query-gpu names them; sample.go cites the bits).
func init() {
	for name, bit := range map[string]uint64{
		"gpu_idle": 0x1, "applications_clocks_setting": 0x2, "sw_power_cap": 0x4, "hw_slowdown": 0x8, "sync_boost": 0x10,
		"sw_thermal_slowdown": 0x20, "hw_thermal_slowdown": 0x40, "hw_power_brake_slowdown": 0x80, "display_clock_setting": 0x100,
	} {
		for _, prefix := range []string{"clocks_event_reasons.", "clocks_throttle_reasons."} {
			nvsmiColumn[prefix+name] = reasonFlag(bit)
		}
	}
	nvsmiColumn["power.draw.average"] = nvsmiColumn["power.draw"]
}

// reasonFlag reads a per-reason column: "Active" sets bit.
func reasonFlag(bit uint64) func(*Sample, string) bool {
	return func(s *Sample, v string) bool {
		switch strings.TrimSpace(v) {
		case "Active":
			s.Reasons |= bit
			s.HasReasons = true
		case "Not Active":
			s.HasReasons = true
		default:
			return notShown(v)
		}
		return true
	}
}

// notShown says v is how a tool says it has no value: nvidia-smi prints
// "[N/A]", "[Not Supported]", "N/A" (older drivers), "[Unknown Error]";
// dcgmi and amd-smi print "N/A".
func notShown(v string) bool {
	v = strings.Trim(strings.TrimSpace(v), "[]")
	switch strings.ToLower(v) {
	case "", "n/a", "not supported", "unknown error", "not available", "na":
		return true
	}
	return false
}

// ident reads an identity column: not shown is "", a value of other
// bytes than letters, digits and -_.: is dropped and the sample marks the
// column refused (an escape sequence or markup must not reach
// results.json), the row still read.
func ident(name string, field func(*Sample) *string) func(*Sample, string) bool {
	return func(s *Sample, v string) bool {
		v = shown(v)
		if v != "" && !identOK(v) {
			if s.refused == "" {
				s.refused = name
			}
			v = ""
		}
		*field(s) = v
		return true
	}
}

func shown(v string) string {
	if notShown(v) {
		return ""
	}
	return strings.TrimSpace(v)
}

// number reads a value with or without its unit ("1980 MHz", "79.85 W",
// "35", "83 %", "55 °C"); ok false for a value that is no number.
func number(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, ' '); i > 0 {
		v = v[:i]
	}
	v = strings.TrimSuffix(v, "%")
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func num(field func(*Sample) *float64) func(*Sample, string) bool {
	return func(s *Sample, v string) bool {
		if notShown(v) {
			return true
		}
		f, ok := number(v)
		if ok {
			*field(s) = f
		}
		return ok
	}
}

func count(field func(*Sample) *int64) func(*Sample, string) bool {
	return func(s *Sample, v string) bool {
		if notShown(v) {
			return true
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return false
		}
		*field(s) = n
		return true
	}
}

func small(field func(*Sample) *int) func(*Sample, string) bool {
	return func(s *Sample, v string) bool {
		if notShown(v) {
			return true
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 || n > 1024 {
			return false
		}
		*field(s) = n
		return true
	}
}

// setReasons reads a clock event reasons bitmask: nvidia-smi prints it in
// hex ("0x0000000000000004"), dcgmi in decimal.
func setReasons(s *Sample, v string) bool {
	if notShown(v) {
		return true
	}
	v = strings.TrimSpace(v)
	var n uint64
	var err error
	if h, ok := strings.CutPrefix(strings.ToLower(v), "0x"); ok {
		n, err = strconv.ParseUint(h, 16, 64)
	} else {
		n, err = strconv.ParseUint(v, 10, 64)
	}
	if err != nil {
		return false
	}
	s.Reasons, s.HasReasons = n, true
	return true
}

// setTime reads nvidia-smi's timestamp, "2026/12/08 00:31:02.123": the
// node's local time without a zone. It is taken as UTC (nodes of a
// cluster run in UTC as a rule; a node that does not shifts its times,
// not its counts or ranges).
func setTime(s *Sample, v string) bool {
	if notShown(v) {
		return true
	}
	v = strings.TrimSpace(v)
	for _, layout := range []string{"2006/01/02 15:04:05.000", "2006/01/02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			s.T = float64(t.UnixMilli()) / 1000
			return true
		}
	}
	return false
}

// nvsmiReader reads nvidia-smi --query-gpu CSV line by line: a header
// (printed once by -lms, again by every run without it) names the
// columns of the lines after it.
type nvsmiReader struct {
	host    string
	columns []func(*Sample, string) bool // nil: a column not read
	// Without a timestamp column, rows are timed by their rounds.
	rounds
	out Reading
}

// header reports whether line is a --query-gpu CSV header, and its
// columns: every cell a field name, optionally with " [unit]", at least
// one of them a field the reader knows.
func nvsmiHeader(line string) ([]func(*Sample, string) bool, bool) {
	cells := strings.Split(line, ",")
	cols := make([]func(*Sample, string) bool, len(cells))
	known := false
	for i, c := range cells {
		c = strings.TrimSpace(c)
		if j := strings.Index(c, " ["); j > 0 && strings.HasSuffix(c, "]") {
			c = c[:j]
		}
		if c == "" || strings.Trim(c, "abcdefghijklmnopqrstuvwxyz_.0123456789") != "" {
			return nil, false
		}
		if f, ok := nvsmiColumn[c]; ok {
			cols[i], known = f, true
		}
	}
	return cols, known
}

func (r *nvsmiReader) line(line string, no int) {
	if strings.TrimSpace(line) == "" {
		return
	}
	if cols, ok := nvsmiHeader(line); ok {
		r.columns = cols
		return
	}
	if r.columns == nil {
		// nvidia-smi's own messages ("Failed to initialize NVML: Driver/library
		// version mismatch"), or a pasted prompt.
		r.out.before(line)
		return
	}
	cells := strings.Split(line, ",")
	if len(cells) != len(r.columns) {
		r.out.bad(no, strconv.Itoa(len(cells))+" values under "+strconv.Itoa(len(r.columns))+" columns")
		return
	}
	s := newSample(r.host, "nvidia-smi")
	for i, c := range cells {
		if f := r.columns[i]; f != nil && !f(&s, c) {
			r.out.bad(no, "column "+strconv.Itoa(i+1)+": "+strconv.Quote(strings.TrimSpace(c))+" is not a value of its field")
			return
		}
	}
	if s.refused != "" {
		r.out.refuse(no, s.refused)
	}
	if s.GPU == "" {
		// A query without index: the bus id or uuid names the GPU.
		s.GPU = firstOf(s.BusID, s.UUID, "0")
	}
	if t := r.next(s.GPU); s.T == 0 {
		s.T = t
	}
	r.out.add(s)
}

func firstOf(v ...string) string {
	for _, x := range v {
		if x != "" {
			return x
		}
	}
	return ""
}

// ReadNvidiaSMI reads the CSV of nvidia-smi --query-gpu=...
// --format=csv[,nounits] (with -l/-lms or not) of host: one Sample per
// value line, the columns named by the header before it. Values nvidia-smi
// could not give ("[N/A]", "[Not Supported]") are not shown, never an
// error; lines that cannot be read are counted in Reading.Unparsed. The
// error is r's.
func ReadNvidiaSMI(r io.Reader, host string) (Reading, error) {
	return ReadNvidiaSMIWithHeader(r, host, "")
}

// ReadNvidiaSMIWithHeader is ReadNvidiaSMI for a CSV written with
// --format=csv,noheader: header is the header line nvidia-smi would have
// printed for the query ("timestamp, name, pci.bus_id, ...", units in
// brackets or not). A header in r still replaces it. Errors: a header
// that names no field the reader knows, r's.
func ReadNvidiaSMIWithHeader(r io.Reader, host, header string) (Reading, error) {
	rd := &nvsmiReader{host: host}
	if header != "" {
		cols, ok := nvsmiHeader(header)
		if !ok {
			return Reading{}, fmt.Errorf("read nvidia-smi CSV of %s: header %q names no --query-gpu field read (timestamp, index, clocks.sm, power.draw, ...)", host, header)
		}
		rd.columns = cols
	}
	err := lines.Each(r, maxLine, func(l []byte, no int, _ bool) { rd.line(string(l), no) })
	return rd.out, err
}
