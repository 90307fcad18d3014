package health

// This file: AMD GPUs, from amd-smi static --json, amd-smi metric --json
// and rocm-smi --showallinfo --json (testdata/amd/README.md names the
// real outputs these are read from).
//
// amd-smi prints a list of GPUs, [{"gpu": 0, ...}, ...]; the shape other
// readers of it also expect, {"gpu_data": [...]}, is read too. A value is
// a number, a string ("N/A" when the GPU does not report it, "16 GT/s" in
// some versions' text) or a {"value": V, "unit": U} object; all three are
// read.

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// amdGPUs reads the GPU list of an amd-smi JSON document: a list, or an
// object with a "gpu_data" list. Entries that are not objects are
// skipped.
func amdGPUs(s *section, what string) ([]map[string]any, error) {
	text := strings.TrimSpace(s.text())
	if text == "" {
		return nil, fmt.Errorf("%s: %s printed nothing", s.where(), what)
	}
	var doc any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		return nil, fmt.Errorf("%s: %s: not JSON: %w", s.where(), what, err)
	}
	var list []any
	switch d := doc.(type) {
	case []any:
		list = d
	case map[string]any:
		l, ok := d["gpu_data"].([]any)
		if !ok {
			return nil, fmt.Errorf("%s: %s: an object without a gpu_data list", s.where(), what)
		}
		list = l
	default:
		return nil, fmt.Errorf("%s: %s: neither a list of GPUs nor an object with gpu_data", s.where(), what)
	}
	var out []map[string]any
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// amdIndex is the entry's "gpu" number, else its place in the list.
func amdIndex(m map[string]any, i int) int {
	if v, ok := amdNumber(m["gpu"]); ok && v >= 0 && v < 1<<20 {
		return int(v)
	}
	return i
}

// amdNumber reads a number, a numeric string ("16", "16 GT/s") or a
// {"value": V} object; ok is false for "N/A", absent or anything else.
func amdNumber(v any) (float64, bool) {
	switch t := v.(type) {
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return 0, false
		}
		return t, true
	case string:
		f := strings.Fields(t)
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseFloat(f[0], 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return 0, false
		}
		return n, true
	case map[string]any:
		return amdNumber(t["value"])
	}
	return 0, false
}

// amdCount is a count (uncorrectable errors): a whole number >= 0, -1
// when not reported.
func amdCount(v any) int64 {
	n, ok := amdNumber(v)
	if !ok || n < 0 || n > 1e15 {
		return -1
	}
	return int64(n)
}

// amdString is a string value, "" for absent or "N/A".
func amdString(v any) string {
	s, _ := v.(string)
	s = strings.TrimSpace(s)
	if s == "N/A" {
		return ""
	}
	return s
}

func amdObject(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	return o
}

// pcieGen is the PCIe generation of a link speed in GT/s (2.5: 1, 5: 2,
// 8: 3, 16: 4, 32: 5, 64: 6); -1 for another number. amd-smi gives the
// speed, not the generation.
func pcieGen(gts float64) int {
	for gen, v := range []float64{2.5, 5, 8, 16, 32, 64} {
		if math.Abs(gts-v) < 0.01 {
			return gen + 1
		}
	}
	return -1
}

// amdWidth reads a link width, -1 when not reported.
func amdWidth(v any) int {
	n, ok := amdNumber(v)
	if !ok || n < 0 || n > 64 {
		return -1
	}
	return int(n)
}

func amdSpeedGen(v any) int {
	n, ok := amdNumber(v)
	if !ok {
		return -1
	}
	return pcieGen(n)
}

// parseAMDStatic reads amd-smi static --json: per GPU its market name
// (asic.market_name), bus id (bus.bdf), max PCIe width and speed, driver
// and VBIOS (or, in newer versions, IFWI) version.
func parseAMDStatic(s *section) ([]gpu, error) {
	list, err := amdGPUs(s, "amd-smi static --json")
	if err != nil {
		return nil, err
	}
	var out []gpu
	for i, m := range list {
		g := newGPU(amdIndex(m, i), s.where())
		g.amd = true
		asic, bus := amdObject(m, "asic"), amdObject(m, "bus")
		g.name = amdString(asic["market_name"])
		g.busID = amdString(bus["bdf"])
		g.widthMax = amdWidth(bus["max_pcie_width"])
		g.genMax = amdSpeedGen(bus["max_pcie_speed"])
		g.driver = amdString(amdObject(m, "driver")["version"])
		if v := amdObject(m, "vbios"); v != nil {
			g.vbios = amdString(v["version"])
		} else if v := amdObject(m, "ifwi"); v != nil {
			g.vbios = amdString(v["version"])
		}
		out = append(out, g)
	}
	return out, nil
}

// parseAMDMetric reads amd-smi metric --json (or its --ecc --pcie
// --xgmi-err subset): per GPU the current PCIe width and speed, the
// uncorrectable and deferred ECC counts, the XGMI error status and the
// XGMI_WAFL block's uncorrectable count (where MI300-series GPUs report
// XGMI faults: their xgmi_err is N/A).
func parseAMDMetric(s *section) ([]gpu, error) {
	list, err := amdGPUs(s, "amd-smi metric --json")
	if err != nil {
		return nil, err
	}
	var out []gpu
	for i, m := range list {
		g := newGPU(amdIndex(m, i), s.where())
		g.amd = true
		if p := amdObject(m, "pcie"); p != nil {
			g.widthCur = amdWidth(p["width"])
			g.genCur = amdSpeedGen(p["speed"])
		}
		if e := amdObject(m, "ecc"); e != nil {
			g.amdUncorr = amdCount(e["total_uncorrectable_count"])
			g.amdDeferred = amdCount(e["total_deferred_count"])
		}
		if b := amdObject(m, "ecc_blocks"); b != nil {
			if x := amdObject(b, "XGMI_WAFL"); x != nil {
				g.xgmiUncorr = amdCount(x["uncorrectable_count"])
			}
			names := make([]string, 0, len(b))
			for k := range b {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				if n := amdCount(amdObject(b, k)["uncorrectable_count"]); n >= 0 {
					g.addBlock(k, n)
				}
			}
		}
		g.xgmiErr = amdString(m["xgmi_err"])
		out = append(out, g)
	}
	return out, nil
}

// parseROCmSMI reads rocm-smi --json (--showallinfo, --showproductname):
// an object of "cardN" entries, each with its name under "Card Series"
// (older versions "Card series", else "Device Name") and its bus id
// under "PCI Bus"; "system" holds the driver version. rocm-smi's JSON
// gives no PCIe width or ECC counts.
func parseROCmSMI(s *section) ([]gpu, error) {
	text := strings.TrimSpace(s.text())
	if text == "" {
		return nil, fmt.Errorf("%s: rocm-smi --json printed nothing", s.where())
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		return nil, fmt.Errorf("%s: rocm-smi --json: not a JSON object: %w", s.where(), err)
	}
	driver := amdString(amdObject(doc, "system")["Driver version"])
	var out []gpu
	for k, v := range doc {
		card, ok := v.(map[string]any)
		n, err := strconv.Atoi(strings.TrimPrefix(k, "card"))
		if !ok || !strings.HasPrefix(k, "card") || err != nil || n < 0 || n >= 1<<20 {
			continue
		}
		g := newGPU(n, s.where())
		g.amd = true
		for _, key := range []string{"Card Series", "Card series", "Device Name"} {
			if g.name = amdString(card[key]); g.name != "" {
				break
			}
		}
		g.busID = amdString(card["PCI Bus"])
		g.vbios = amdString(card["VBIOS version"])
		g.driver = driver
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].index < out[j].index })
	return out, nil
}

// mergeAMD joins the GPUs of amd-smi static (names, max link) and metric
// (current link, errors) by index. The static list is the node's GPUs
// where it was read; a GPU only metric lists is added.
func mergeAMD(static, metric []gpu) []gpu {
	out := append([]gpu(nil), static...)
	for _, m := range metric {
		found := false
		for i := range out {
			g := &out[i]
			if g.index != m.index {
				continue
			}
			found = true
			g.widthCur, g.genCur = m.widthCur, m.genCur
			g.amdUncorr, g.amdDeferred = m.amdUncorr, m.amdDeferred
			g.xgmiErr, g.xgmiUncorr = m.xgmiErr, m.xgmiUncorr
			g.blockUncorr, g.badBlocks = m.blockUncorr, m.badBlocks
		}
		if !found {
			out = append(out, m)
		}
	}
	return out
}

// xgmiBad says an amd-smi xgmi_err status is an error:
// AMDSMI_XGMI_STATUS_ERROR or _MULTIPLE_ERRORS (amdsmi_xgmi_status_t;
// the CLI prints the enum's name), in any case, with or without the
// prefix.
func xgmiBad(status string) bool {
	s := strings.TrimPrefix(strings.ToUpper(status), "AMDSMI_XGMI_STATUS_")
	return s == "ERROR" || s == "MULTIPLE_ERRORS"
}

// judgeAMD makes the checks only AMD GPUs give: uncorrectable ECC counts
// and XGMI errors. Count, model, driver and PCIe are judgeGPUs's, on the
// same gpu values.
func judgeAMD(c checks, gs []gpu) {
	var probs, deferred []string
	n := 0
	srcs := map[string]bool{}
	for _, g := range gs {
		if !g.amd || g.uncorr() < 0 {
			continue
		}
		n++
		srcs[g.eccSource()] = true
		if u := g.uncorr(); u > 0 {
			src := "amd-smi total_uncorrectable_count"
			switch {
			case g.amdUncorr < 0:
				src = "the sum of its ECC blocks"
			case g.src == "amd-smi monitor DOUBLE_ECC":
				src = g.src
			}
			if len(g.badBlocks) > 0 {
				src += "; " + strings.Join(g.badBlocks, ", ")
			}
			probs = append(probs, fmt.Sprintf("%s: %d uncorrectable ECC %s (%s)", g.label(), u, result.Noun(int(min(u, 2)), "error"), src))
		}
		if g.amdDeferred > 0 {
			deferred = append(deferred, fmt.Sprintf("%s: %d deferred ECC %s (uncorrectable, poisoned and not yet consumed)", g.label(), g.amdDeferred, result.Noun(int(min(g.amdDeferred, 2)), "error")))
		}
	}
	if n > 0 {
		if len(probs) > 0 {
			c.add("uncorrected ECC", false, "GA-GPU-ECC-UNCORR", strings.Join(probs, "; "))
		} else {
			var names []string
			for k := range srcs {
				names = append(names, k)
			}
			sort.Strings(names)
			c.add("uncorrected ECC", true, "", fmt.Sprintf("no uncorrectable ECC errors on %s (%s)", result.Count(n, "GPU"), strings.Join(names, ", ")))
		}
	}
	if len(deferred) > 0 {
		c.warn("deferred ECC", "GA-GPU-ECC-DEFERRED", strings.Join(deferred, "; "))
	}
	probs = nil
	n = 0
	for _, g := range gs {
		if !g.amd {
			continue
		}
		seen := false
		var p []string
		if g.xgmiErr != "" {
			seen = true
			if xgmiBad(g.xgmiErr) {
				p = append(p, "xgmi_err "+g.xgmiErr)
			}
		}
		if g.xgmiUncorr >= 0 {
			seen = true
			if g.xgmiUncorr > 0 {
				p = append(p, fmt.Sprintf("%d uncorrectable XGMI_WAFL %s", g.xgmiUncorr, result.Noun(int(min(g.xgmiUncorr, 2)), "error")))
			}
		}
		if seen {
			n++
		}
		if len(p) > 0 {
			probs = append(probs, g.label()+": "+strings.Join(p, ", "))
		}
	}
	switch {
	case len(probs) > 0:
		c.add("XGMI", false, "GA-GPU-XGMI", strings.Join(probs, "; "))
	case n > 0:
		c.add("XGMI", true, "", fmt.Sprintf("no XGMI errors on %s", result.Count(n, "GPU")))
	}
}

// addBlock adds one ECC block's uncorrectable count n (>= 0) to g.
func (g *gpu) addBlock(block string, n int64) {
	if g.blockUncorr < 0 {
		g.blockUncorr = 0
	}
	g.blockUncorr += n
	if n > 0 {
		g.badBlocks = append(g.badBlocks, fmt.Sprintf("%s %d", block, n))
	}
}

// uncorr is the GPU's uncorrectable ECC count: the total amd-smi prints,
// else the sum of its blocks' (amd-smi metric --ecc-blocks alone,
// rocm-smi --showrasinfo); -1 where neither is reported.
func (g gpu) uncorr() int64 {
	if g.amdUncorr >= 0 {
		return g.amdUncorr
	}
	return g.blockUncorr
}

// fillGPU sets on g what it lacks and o has: the views of one GPU from
// several outputs (amd-smi static and metric text pasted together).
func fillGPU(g *gpu, o gpu) {
	fs := func(d *string, v string) {
		if *d == "" {
			*d = v
		}
	}
	fi := func(d *int, v int) {
		if *d < 0 {
			*d = v
		}
	}
	fc := func(d *int64, v int64) {
		if *d < 0 {
			*d = v
		}
	}
	fs(&g.name, o.name)
	fs(&g.busID, o.busID)
	fs(&g.driver, o.driver)
	fs(&g.vbios, o.vbios)
	fs(&g.xgmiErr, o.xgmiErr)
	fs(&g.src, o.src)
	fi(&g.genCur, o.genCur)
	fi(&g.genMax, o.genMax)
	fi(&g.widthCur, o.widthCur)
	fi(&g.widthMax, o.widthMax)
	fc(&g.amdUncorr, o.amdUncorr)
	fc(&g.amdDeferred, o.amdDeferred)
	fc(&g.xgmiUncorr, o.xgmiUncorr)
	if g.blockUncorr < 0 {
		g.blockUncorr, g.badBlocks = o.blockUncorr, o.badBlocks
	}
}

// fillAMD joins GPU lists by index with fillGPU; a GPU only more lists
// is added.
func fillAMD(gs, more []gpu) []gpu {
	out := append([]gpu(nil), gs...)
	for _, m := range more {
		found := false
		for i := range out {
			if out[i].index == m.index {
				fillGPU(&out[i], m)
				found = true
			}
		}
		if !found {
			out = append(out, m)
		}
	}
	return out
}

// eccSource names where a GPU's uncorrectable count was read, for the
// passing check's message.
func (g gpu) eccSource() string {
	switch {
	case g.src != "":
		return g.src
	case g.amdUncorr >= 0:
		return "amd-smi metric"
	}
	return "ECC blocks"
}
