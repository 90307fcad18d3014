package telemetry

import (
	"io"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/lines"
)

// amdColumn maps a column of amd-smi monitor's table to what it sets in a
// Sample. The names differ between releases: ROCm 6.1-6.3 print
// GPU_TEMP, GFX_UTIL, GFX_CLOCK; 6.4's --watch prints GPU_T, GFX%,
// GFX_CLK (testdata/field/telemetry).
var amdColumn = map[string]func(*Sample, string) bool{
	"POWER":       num(func(s *Sample) *float64 { return &s.Power }),
	"GPU_TEMP":    num(func(s *Sample) *float64 { return &s.Temp }),
	"GPU_T":       num(func(s *Sample) *float64 { return &s.Temp }),
	"MEM_TEMP":    num(func(s *Sample) *float64 { return &s.MemTemp }),
	"MEM_T":       num(func(s *Sample) *float64 { return &s.MemTemp }),
	"GFX_UTIL":    num(func(s *Sample) *float64 { return &s.Util }),
	"GFX%":        num(func(s *Sample) *float64 { return &s.Util }),
	"GFX_CLOCK":   num(func(s *Sample) *float64 { return &s.SMClock }),
	"GFX_CLK":     num(func(s *Sample) *float64 { return &s.SMClock }),
	"MEM_CLOCK":   num(func(s *Sample) *float64 { return &s.MemClock }),
	"MEM_CLK":     num(func(s *Sample) *float64 { return &s.MemClock }),
	"SINGLE_ECC":  count(func(s *Sample) *int64 { return &s.ECCCorrected }),
	"DOUBLE_ECC":  count(func(s *Sample) *int64 { return &s.ECCUncorrected }),
	"PCIE_REPLAY": count(func(s *Sample) *int64 { return &s.Replays }),
	"GPU":         func(s *Sample, v string) bool { var ok bool; s.GPU, ok = gpuIndex(v); return ok },
	"TIMESTAMP": func(s *Sample, v string) bool {
		t, err := strconv.ParseInt(v, 10, 64)
		if err != nil || t < 0 {
			return false
		}
		s.T = float64(t)
		return true
	},
}

// amdUnits are the unit words amd-smi prints after a value ("248 W",
// "55 °C", "N/A Mb/s"): a value and its unit are one cell.
var amdUnits = map[string]bool{"W": true, "°C": true, "C": true, "%": true, "MHz": true, "MB": true, "GB": true, "KB": true, "B": true,
	"MiB": true, "GiB": true, "Mb/s": true, "mV": true, "J": true, "uJ": true, "ns": true}

// amdCells splits a row into cells, a unit joined to the value before it.
func amdCells(line string) []string {
	var cells []string
	for _, f := range strings.Fields(line) {
		if amdUnits[f] && len(cells) > 0 {
			cells[len(cells)-1] += " " + f
			continue
		}
		cells = append(cells, f)
	}
	return cells
}

// amdReader reads amd-smi monitor's table: a header of column names, then
// one row per GPU and sample. With --watch the rows carry a TIMESTAMP
// (Unix seconds); without, a row of a GPU already seen starts the next
// round, at start + round * interval.
type amdReader struct {
	host    string
	columns []func(*Sample, string) bool
	skip    bool // inside the process table of monitor -q
	rounds
	out Reading
}

// amdHeader reports whether f is a header of monitor's table: it starts
// with GPU (or TIMESTAMP GPU) and names a quantity the reader knows.
func amdHeader(f []string) ([]func(*Sample, string) bool, bool) {
	if len(f) < 2 || !(f[0] == "GPU" || f[0] == "TIMESTAMP" && f[1] == "GPU") {
		return nil, false
	}
	cols := make([]func(*Sample, string) bool, len(f))
	known := false
	for i, n := range f {
		if c, ok := amdColumn[n]; ok {
			cols[i] = c
			known = known || n != "GPU" && n != "TIMESTAMP"
		}
	}
	return cols, known
}

func (r *amdReader) line(line string, no int) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return
	}
	if cols, ok := amdHeader(f); ok {
		r.columns, r.skip = cols, false
		return
	}
	if strings.HasPrefix(f[0], "PROCESS") {
		r.skip = true
		return
	}
	if r.skip {
		return
	}
	if r.columns == nil {
		// What amd-smi prints before its table ("'CTRL' + 'C' to stop
		// watching output:"), or a pasted prompt.
		r.out.before(line)
		return
	}
	cells := amdCells(line)
	if len(cells) != len(r.columns) {
		r.out.bad(no, strconv.Itoa(len(cells))+" values under "+strconv.Itoa(len(r.columns))+" columns")
		return
	}
	s := newSample(r.host, "amd-smi")
	for i, c := range cells {
		if col := r.columns[i]; col != nil && !col(&s, c) {
			r.out.bad(no, "column "+strconv.Itoa(i+1)+": "+strconv.Quote(c)+" is not a value of its field")
			return
		}
	}
	if s.GPU == "" {
		r.out.bad(no, "no GPU index")
		return
	}
	if t := r.next(s.GPU); s.T == 0 {
		s.T = t
	}
	r.out.add(s)
}

// ReadAMDSMI reads the table of amd-smi monitor (with --watch or not, any
// of its column options) of host: one Sample per GPU row. What amd-smi
// prints before the table and the process table of -q are skipped; "N/A"
// is not shown; rows that cannot be read are counted in
// Reading.Unparsed. Rows without TIMESTAMP have T 0. The error is r's.
func ReadAMDSMI(r io.Reader, host string) (Reading, error) {
	rd := &amdReader{host: host}
	err := lines.Each(r, maxLine, func(l []byte, no int, _ bool) { rd.line(string(l), no) })
	return rd.out, err
}
