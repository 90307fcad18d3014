package health

// This file: AMD GPUs from the default text views of amd-smi (static,
// metric, list, monitor) and of rocm-smi (the concise table,
// --showallinfo, --showproductname, --showbus, --showrasinfo), read into
// the same gpu values as their --json (amd.go) and judged by the same
// checks. ROCm/amdsmi's CHANGELOG.md and amdsmi_cli/README.md show the
// amd-smi text; rocm_smi.py (printLog, printTableLog, showRasInfo) the
// rocm-smi text.
//
// amd-smi text is "GPU: 0" then "KEY: VALUE" lines indented four blanks
// a level ("    ECC:", "        TOTAL_UNCORRECTABLE_COUNT: 0"); "CPU: 0"
// blocks (an APU's CPU) are skipped. amd-smi monitor is a table: a
// "GPU  POWER  GPU_TEMP ... DOUBLE_ECC ..." header, then a row per GPU
// whose values carry their units ("248 W"). rocm-smi prints
// "GPU[0]\t\t: Card Series: \t\tAMD Instinct MI300X" lines, its RAS table
// per GPU ("GPU[0]: \tRAS INFO", a "Block Status Correctable Error
// Uncorrectable Error" header, rows "UMC  ENABLED  0  0") and a concise
// table whose rows start with the device number.

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/textdiag"
)

var (
	amdsmiGPU   = regexp.MustCompile(`^GPU: (\d{1,6})\s*$`)
	amdsmiOther = regexp.MustCompile(`^(CPU|CORE|NIC|SWITCH): \d{1,6}\s*$`)
	amdsmiKV    = regexp.MustCompile(`^([A-Z][A-Z0-9_ ]{0,63}):\s*(.*)$`)
	// amdsmiMonHdr is amd-smi monitor's header: "GPU  POWER  GPU_TEMP ...",
	// with --watch " TIMESTAMP  GPU  POWER ...".
	amdsmiMonHdr = regexp.MustCompile(`^(TIMESTAMP\s+)?GPU(\s+[A-Z][A-Z0-9_%]*){2,}\s*$`)
	rocmLine     = regexp.MustCompile(`^GPU\[(\d{1,6})\]\s*:\s*(.*)$`)
	rocmRASHead  = regexp.MustCompile(`^GPU\[(\d{1,6})\]:\s*RAS INFO`)
	rocmRASRow   = regexp.MustCompile(`^([A-Z][A-Z0-9_]{1,31})\s+([A-Z_]{2,32})\s+(\d{1,15})\s+(\d{1,15})\s*$`)
	rocmPCIeNow  = regexp.MustCompile(`\(([\d.]{1,8})GT/s x(\d{1,2})\)`)
	// amdsmiError is a line amd-smi or rocm-smi prints instead of data:
	// a status name, a device not found, no GPU at all.
	amdsmiError = regexp.MustCompile(`AMDSMI_STATUS_|RSMI_STATUS_|Can not find a device|Error code: -?\d|No JSON data to report|No AMD GPUs|Driver not initialized|amdgpu not found|^ERROR:|^WARNING:|^Error:`)
)

// amdText collects the GPUs of one text output by index.
type amdText struct {
	where string
	gpus  map[int]*gpu
	notes []line
}

func (a *amdText) gpu(i int) *gpu {
	if g, ok := a.gpus[i]; ok {
		return g
	}
	g := newGPU(i, a.where)
	g.amd = true
	a.gpus[i] = &g
	return &g
}

func (a *amdText) list() []gpu {
	var out []gpu
	for _, g := range a.gpus {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].index < out[j].index })
	return out
}

// textValue is a value of the text views: "" for N/A and the like.
func textValue(v string) string {
	v = strings.TrimSpace(v)
	switch strings.ToUpper(v) {
	case "N/A", "NA", "UNKNOWN", "NONE":
		return ""
	}
	return v
}

// textCount reads a count ("0", "12"), -1 for N/A or anything else.
func textCount(v string) int64 {
	f := strings.Fields(v)
	if len(f) == 0 {
		return -1
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 || n > 1e15 {
		return -1
	}
	return n
}

// textGen is the PCIe generation of "32 GT/s" (or the API's "32000
// MT/s"/"16000 GT/s", which some versions print: GT/s x 1000), -1 if
// none.
func textGen(v string) int {
	f := strings.Fields(v)
	if len(f) == 0 {
		return -1
	}
	n, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	if n >= 1000 {
		n /= 1000
	}
	return pcieGen(n)
}

// textWidth reads "16" or "x16", -1 if none.
func textWidth(v string) int {
	f := strings.Fields(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(v)), "x"))
	if len(f) == 0 {
		return -1
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 0 || n > 64 {
		return -1
	}
	return n
}

// parseAMDText reads amd-smi's and rocm-smi's text views in s (one
// file may hold several: static and metric pasted together). A line
// either tool prints instead of data (a status name, "Can not find a
// device", "No JSON data to report") is a note; with no GPU read, the
// notes are the error.
func parseAMDText(s *section) ([]gpu, []line, error) {
	a := &amdText{where: s.where(), gpus: map[int]*gpu{}}
	cur := -1 // amd-smi's "GPU: N" block, -1 none (or a CPU block)
	var path []pathKey
	var monCols []string // amd-smi monitor's header, nil outside its table
	rasGPU := -1         // rocm-smi's RAS table of this GPU, -1 none
	concise := false
	for _, l := range s.lines {
		raw := strings.TrimSuffix(l.text, "\r")
		// A paste's labels (kubectl logs --timestamps, ...) go; the blanks
		// after them stay: amd-smi's nesting is its indentation.
		raw = raw[textdiag.PrefixLen(raw):]
		t := strings.TrimSpace(raw)
		if t == "" {
			monCols = nil
			continue
		}
		if amdsmiError.MatchString(t) {
			a.notes = append(a.notes, line{t, l.no})
			continue
		}
		if strings.HasPrefix(t, "PROCESS INFO") {
			monCols = nil
			continue
		}
		if strings.HasPrefix(t, "==") {
			// rocm-smi's section titles ("=== Concise Info ===", "=== RAS
			// Info ===", "=== End of ROCm SMI Log ===") start and end its
			// tables; a bare "=====" rule sits inside one.
			if strings.Trim(t, "=") != "" {
				concise, rasGPU = strings.Contains(t, "Concise Info"), -1
			}
			continue
		}
		if m := amdsmiGPU.FindStringSubmatch(t); m != nil {
			cur, _ = strconv.Atoi(m[1])
			a.gpu(cur)
			path = path[:0]
			continue
		}
		if amdsmiOther.MatchString(t) {
			cur = -1
			continue
		}
		if amdsmiMonHdr.MatchString(t) {
			monCols = strings.Fields(t)
			continue
		}
		if monCols != nil {
			a.monitorRow(monCols, strings.Fields(t))
			continue
		}
		if m := rocmRASHead.FindStringSubmatch(t); m != nil {
			rasGPU, _ = strconv.Atoi(m[1])
			a.gpu(rasGPU)
			continue
		}
		if rasGPU >= 0 {
			if m := rocmRASRow.FindStringSubmatch(t); m != nil {
				// A block whose RAS is not ENABLED counts nothing: rocm-smi
				// prints what the driver returns for it all the same.
				if m[2] == "ENABLED" {
					a.rasBlock(rasGPU, m[1], textCount(m[4]))
					a.gpu(rasGPU).src = "rocm-smi --showrasinfo"
				}
				continue
			}
		}
		if m := rocmLine.FindStringSubmatch(t); m != nil {
			i, _ := strconv.Atoi(m[1])
			a.rocmKV(i, m[2])
			continue
		}
		if concise {
			// The concise table's rows start with the device number.
			if f := strings.Fields(t); len(f) > 3 {
				if i, err := strconv.Atoi(f[0]); err == nil && i >= 0 && i < 1<<16 {
					a.gpu(i)
				}
			}
			continue
		}
		if cur >= 0 {
			m := amdsmiKV.FindStringSubmatch(t)
			if m == nil {
				continue
			}
			depth := indentOf(raw)
			for len(path) > 0 && path[len(path)-1].indent >= depth {
				path = path[:len(path)-1]
			}
			key, val := strings.TrimSpace(m[1]), strings.TrimSpace(m[2])
			if val == "" {
				path = append(path, pathKey{key, depth})
				continue
			}
			a.amdsmiKV(cur, path, key, val)
		}
	}
	gs := a.list()
	if len(gs) == 0 {
		if len(a.notes) > 0 {
			return nil, a.notes, fmt.Errorf("%s: the AMD GPU tool printed no GPU, only: %s", s.where(), clip(a.notes[0].text))
		}
		return nil, nil, fmt.Errorf("%s: no GPU could be read (amd-smi's \"GPU: N\" blocks or monitor table, rocm-smi's GPU[N] lines)", s.where())
	}
	return gs, a.notes, nil
}

// pathKey is one enclosing section of an amd-smi text line.
type pathKey struct {
	name   string
	indent int
}

// indentOf counts the blanks before a line's text (a tab as 4).
func indentOf(s string) int {
	n := 0
	for _, r := range s {
		switch r {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n
		}
	}
	return n
}

// amdsmiKV sets one amd-smi text value of GPU i, under the sections of
// path ("BUS", "ECC", "ECC_BLOCKS"/"UMC", ...).
func (a *amdText) amdsmiKV(i int, path []pathKey, key, val string) {
	g := a.gpu(i)
	sec, blk := "", ""
	if len(path) > 0 {
		sec = path[0].name
	}
	if len(path) > 1 {
		blk = path[1].name
	}
	switch {
	case sec == "ASIC" && key == "MARKET_NAME", sec == "" && key == "MARKET_NAME":
		if v := textValue(val); v != "" {
			g.name = v
		}
	case (sec == "BUS" || sec == "") && key == "BDF":
		g.busID = textValue(val)
	case sec == "BUS" && (key == "MAX_PCIE_WIDTH" || key == "MAX_PCIE_LANES"):
		g.widthMax = textWidth(val)
	case sec == "BUS" && key == "MAX_PCIE_SPEED":
		g.genMax = textGen(val)
	case sec == "PCIE" && (key == "WIDTH" || key == "CURRENT_WIDTH" || key == "LANES"):
		g.widthCur = textWidth(val)
	case sec == "PCIE" && (key == "SPEED" || key == "CURRENT_SPEED"):
		g.genCur = textGen(val)
	case sec == "DRIVER" && key == "VERSION":
		g.driver = textValue(val)
	case (sec == "VBIOS" || sec == "IFWI") && key == "VERSION":
		if v := textValue(val); v != "" {
			g.vbios = v
		}
	case sec == "ECC" && (key == "TOTAL_UNCORRECTABLE_COUNT" || key == "UNCORRECTABLE_COUNT" || key == "UNCORRECTABLE"):
		g.amdUncorr, g.src = textCount(val), "amd-smi metric"
	case sec == "ECC" && (key == "TOTAL_DEFERRED_COUNT" || key == "DEFERRED_COUNT"):
		g.amdDeferred = textCount(val)
	case sec == "ECC_BLOCKS" && blk != "" && key == "UNCORRECTABLE_COUNT":
		a.rasBlock(i, blk, textCount(val))
		g.src = "amd-smi metric"
	case key == "XGMI_ERR" || sec == "XGMI_ERR" && key == "STATUS":
		if v := textValue(val); v != "" && !strings.EqualFold(v, "No errors detected") {
			g.xgmiErr = v
		}
	}
}

// rasBlock records one ECC block's uncorrectable count (amd-smi's
// ECC_BLOCKS, rocm-smi's RAS table): XGMI_WAFL's is the XGMI check's,
// every block's a part of the GPU's uncorrectable count where no total
// is printed.
func (a *amdText) rasBlock(i int, block string, n int64) {
	g := a.gpu(i)
	if n < 0 {
		return
	}
	if block == "XGMI_WAFL" {
		g.xgmiUncorr = n
	}
	g.addBlock(block, n)
}

// rocmKV reads one "KEY: VALUE" of rocm-smi's GPU[i] lines.
func (a *amdText) rocmKV(i int, rest string) {
	key, val, ok := strings.Cut(rest, ":")
	if !ok {
		return
	}
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	g := a.gpu(i)
	switch key {
	case "Card Series", "Card series", "Device Name", "Card model", "Market Name":
		if v := textValue(val); v != "" && (g.name == "" || key == "Card Series" || key == "Card series") {
			g.name = v
		}
	case "PCI Bus":
		g.busID = textValue(val)
	case "VBIOS version":
		g.vbios = textValue(val)
	case "Driver version":
		g.driver = textValue(val)
	case "pcie clock level", "PCIe clock level":
		// The current DPM level: "1 (16.0GT/s x16)".
		if m := rocmPCIeNow.FindStringSubmatch(val); m != nil {
			f, _ := strconv.ParseFloat(m[1], 64)
			g.genCur = pcieGen(f)
			g.widthCur = textWidth(m[2])
		}
	}
}

// monitorRow reads one row of amd-smi monitor's table under cols: the
// GPU number and, where printed, DOUBLE_ECC (uncorrectable ECC errors)
// and XGMI_ERR. A value and its unit ("248 W") are one cell.
func (a *amdText) monitorRow(cols, f []string) {
	col := 0 // the GPU column: 1 after --watch's TIMESTAMP
	for k, c := range cols {
		if c == "GPU" {
			col = k
			break
		}
	}
	if len(f) <= col {
		return
	}
	i, err := strconv.Atoi(f[col])
	if err != nil || i < 0 || i >= 1<<16 {
		return
	}
	g := a.gpu(i)
	var cells []string
	for _, x := range f {
		if len(cells) > 0 && isUnit(x) {
			cells[len(cells)-1] += " " + x
			continue
		}
		cells = append(cells, x)
	}
	if len(cells) != len(cols) {
		return
	}
	for k, c := range cols {
		switch c {
		case "DOUBLE_ECC", "UNCORRECTABLE_ECC":
			g.amdUncorr, g.src = textCount(cells[k]), "amd-smi monitor DOUBLE_ECC"
		case "XGMI_ERR":
			if v := textValue(cells[k]); v != "" {
				g.xgmiErr = v
			}
		}
	}
}

// isUnit says x is a unit amd-smi monitor prints after a value.
func isUnit(x string) bool {
	switch x {
	case "W", "°C", "C", "%", "MHz", "GHz", "MB", "GB", "KB", "B", "Mb/s", "Gb/s", "MB/s", "GB/s", "ns", "us", "ms", "V", "mV", "RPM":
		return true
	}
	return false
}
