package telemetry

import (
	"io"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/lines"
)

// DCGMFields are the field ids sample.sh asks dcgmi dmon for (-e), in
// order: DCGM_FI_DEV_SM_CLOCK 100 (MHz), DCGM_FI_DEV_MEM_CLOCK 101 (MHz),
// DCGM_FI_DEV_GPU_TEMP 150 (C), DCGM_FI_DEV_MEMORY_TEMP 140 (C),
// DCGM_FI_DEV_POWER_USAGE 155 (W), DCGM_FI_DEV_POWER_MGMT_LIMIT 160 (W),
// DCGM_FI_DEV_GPU_UTIL 203 (%), DCGM_FI_DEV_CLOCKS_EVENT_REASONS 112 (the
// NVML bitmask, formerly DCGM_FI_DEV_CLOCK_THROTTLE_REASONS),
// DCGM_FI_DEV_PCIE_REPLAY_COUNTER 202, DCGM_FI_DEV_ECC_SBE_VOL_TOTAL 310
// and DCGM_FI_DEV_ECC_DBE_VOL_TOTAL 311 (source: DCGM's field identifiers,
// https://docs.nvidia.com/datacenter/dcgm/latest/dcgm-api/dcgm-api-field-ids.html).
var DCGMFields = []int{100, 101, 150, 140, 155, 160, 203, 112, 202, 310, 311}

// dcgmByID maps a DCGM field id to what it sets in a Sample.
var dcgmByID = map[int]func(*Sample, string) bool{
	100: num(func(s *Sample) *float64 { return &s.SMClock }),
	101: num(func(s *Sample) *float64 { return &s.MemClock }),
	150: num(func(s *Sample) *float64 { return &s.Temp }),
	140: num(func(s *Sample) *float64 { return &s.MemTemp }),
	155: num(func(s *Sample) *float64 { return &s.Power }),
	160: num(func(s *Sample) *float64 { return &s.PowerLimit }),
	203: num(func(s *Sample) *float64 { return &s.Util }),
	112: setReasons,
	202: count(func(s *Sample) *int64 { return &s.Replays }),
	310: count(func(s *Sample) *int64 { return &s.ECCCorrected }),
	311: count(func(s *Sample) *int64 { return &s.ECCUncorrected }),
}

// dcgmByName maps the short names dcgmi dmon prints in its header for
// the fields it reads when no field ids are given (dcgmi dmon -l lists
// them: SMCLK 100, MMCLK 101, TMPTR 150, MMTMP 140, POWER 155, PMLMT 160,
// GPUTL 203).
var dcgmByName = map[string]int{"SMCLK": 100, "MMCLK": 101, "TMPTR": 150, "MMTMP": 140, "POWER": 155, "PMLMT": 160, "GPUTL": 203}

// dcgmReader reads dcgmi dmon's table: "#Entity NAME..." and "ID
// UNIT..." headers (printed again every few rows), then one row per
// entity and sample, "GPU 0   1980   35 ...". Rows carry no time: a row of
// a GPU already seen in the current round starts the next round, at
// start + round * interval.
type dcgmReader struct {
	host    string
	ids     []int // the -e field ids, in column order; nil: by header names
	columns []func(*Sample, string) bool
	rounds  // dcgmi dmon prints no time
	out     Reading
}

func (r *dcgmReader) line(line string, no int) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return
	}
	switch {
	case f[0] == "#Entity" || strings.HasPrefix(f[0], "#"):
		names := f[1:]
		r.columns = make([]func(*Sample, string) bool, len(names))
		for i, n := range names {
			id, ok := dcgmByName[n]
			if r.ids != nil && len(r.ids) == len(names) {
				id, ok = r.ids[i], true
			}
			if ok {
				r.columns[i] = dcgmByID[id]
			}
		}
		return
	case f[0] == "ID":
		return
	}
	if r.columns == nil {
		// dcgmi's own messages before a table ("Error setting watches"),
		// or a pasted prompt.
		r.out.before(line)
		return
	}
	if len(f) < 2 {
		r.out.bad(no, "no entity id")
		return
	}
	entity, id := f[0], f[1]
	if entity != "GPU" {
		// GPU-I, GPU-CI, Switch: MIG instances and NVSwitches are not
		// GPUs sampled.
		return
	}
	id, ok := gpuIndex(id)
	if !ok {
		r.out.bad(no, "entity id "+strconv.Quote(f[1])+" is no GPU index (a whole number from 0)")
		return
	}
	vals := f[2:]
	if len(vals) != len(r.columns) {
		r.out.bad(no, strconv.Itoa(len(vals))+" values under "+strconv.Itoa(len(r.columns))+" columns")
		return
	}
	t := r.next(id)
	s := newSample(r.host, "dcgmi")
	s.GPU, s.T = id, t
	for i, v := range vals {
		if c := r.columns[i]; c != nil && !c(&s, v) {
			r.out.bad(no, "column "+strconv.Itoa(i+1)+": "+strconv.Quote(v)+" is not a value of its field")
			return
		}
	}
	r.out.add(s)
}

// ReadDCGM reads the table of dcgmi dmon -e IDS of host. ids are the -e
// field ids in order (DCGMFields for sample.sh's); nil reads the columns
// by the short names of the header (SMCLK, TMPTR, POWER, ...), leaving
// others unread. Rows of GPUs are samples (MIG instances are skipped);
// "N/A" is not shown; rows that cannot be read are counted in
// Reading.Unparsed. dmon prints no time: samples have T 0. The error is
// r's.
func ReadDCGM(r io.Reader, host string, ids []int) (Reading, error) {
	rd := &dcgmReader{host: host, ids: ids}
	err := lines.Each(r, maxLine, func(l []byte, no int, _ bool) { rd.line(string(l), no) })
	return rd.out, err
}
