package health

// This file: nvidia-smi's views of the GPUs, -q -x (XML) and --query-gpu
// (CSV), both into gpu.

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// gpu is what nvidia-smi says of one GPU. Strings are as printed ("" when
// not printed); numbers are -1 when not printed or N/A.
type gpu struct {
	index                   int
	name, busID             string
	uuid, serial            string // as printed; "" or "N/A" when not
	driver, vbios           string
	persistence, eccMode    string
	uncorrVol, uncorrAgg    int64
	retiredPending          string // "Yes", "No" or ""
	remapPending, remapFail string // "Yes", "No" or ""
	reasons                 uint64
	hasReasons              bool
	genCur, genMax          int
	widthCur, widthMax      int
	where                   string
	// amd: read from amd-smi or rocm-smi. amdUncorr, amdDeferred: amd-smi
	// metric's total uncorrectable and deferred ECC counts; xgmiErr its
	// xgmi_err status ("" for N/A); xgmiUncorr the XGMI_WAFL block's
	// uncorrectable count; -1 where not reported.
	amd                    bool
	amdUncorr, amdDeferred int64
	xgmiErr                string
	xgmiUncorr             int64
	// blockUncorr sums the ECC blocks' uncorrectable counts (-1: no block
	// reported); badBlocks names the blocks with any ("UMC 3").
	blockUncorr int64
	badBlocks   []string
	// src names the AMD tool view the GPU was read from where it is not
	// amd-smi's JSON ("amd-smi monitor", "rocm-smi --showrasinfo").
	src string
}

func newGPU(i int, where string) gpu {
	return gpu{index: i, uncorrVol: -1, uncorrAgg: -1, genCur: -1, genMax: -1, widthCur: -1, widthMax: -1, where: where, amdUncorr: -1, amdDeferred: -1, xgmiUncorr: -1, blockUncorr: -1}
}

// label names the GPU in messages: "GPU 0 (00000000:3B:00.0)".
func (g gpu) label() string {
	if g.busID == "" {
		return fmt.Sprintf("GPU %d", g.index)
	}
	return fmt.Sprintf("GPU %d (%s)", g.index, g.busID)
}

// The clock event reasons (nvml.h nvmlClocksEventReason*, the bits of
// clocks_event_reasons.active), by the name -q -x gives them after its
// clocks_event_reason_ (older: clocks_throttle_reason_) prefix.
var reasonBits = map[string]uint64{
	"gpu_idle":                    0x1,
	"applications_clocks_setting": 0x2,
	"sw_power_cap":                0x4,
	"hw_slowdown":                 0x8,
	"sync_boost":                  0x10,
	"sw_thermal_slowdown":         0x20,
	"hw_thermal_slowdown":         0x40,
	"hw_power_brake_slowdown":     0x80,
	"display_clocks_setting":      0x100,
}

// badReasons are the reasons a health check fails on: the hardware or
// thermal slowdowns. Idle, the applications-clocks setting, the software
// power cap (a GPU at its power limit under load: azurehpc-health-checks
// passes it too), sync boost and the display setting are how a healthy GPU
// runs; DCGM too fails only on the slowdowns (DCGM_FR_CLOCKS_EVENT_THERMAL,
// DCGM_FR_CLOCKS_EVENT_VIOLATION for the non-benign ones).
const badReasons = 0x8 | 0x20 | 0x40 | 0x80

// reasonNames names the bits of v, lowest first.
func reasonNames(v uint64) string {
	var out []string
	for bit := uint64(1); bit <= 0x100; bit <<= 1 {
		if v&bit == 0 {
			continue
		}
		name := fmt.Sprintf("0x%x", bit)
		for n, b := range reasonBits {
			if b == bit {
				name = n
			}
		}
		out = append(out, name)
	}
	return strings.Join(out, ", ")
}

type smiLog struct {
	Driver string   `xml:"driver_version"`
	GPUs   []smiGPU `xml:"gpu"`
}

type smiGPU struct {
	ID          string `xml:"id,attr"`
	Name        string `xml:"product_name"`
	UUID        string `xml:"uuid"`
	Serial      string `xml:"serial"`
	VBIOS       string `xml:"vbios_version"`
	Persistence string `xml:"persistence_mode"`
	PCI         struct {
		BusID string `xml:"pci_bus_id"`
		Gen   struct {
			Max string `xml:"max_link_gen"`
			Cur string `xml:"current_link_gen"`
		} `xml:"pci_gpu_link_info>pcie_gen"`
		Width struct {
			Max string `xml:"max_link_width"`
			Cur string `xml:"current_link_width"`
		} `xml:"pci_gpu_link_info>link_widths"`
	} `xml:"pci"`
	ECCMode struct {
		Current string `xml:"current_ecc"`
	} `xml:"ecc_mode"`
	ECC struct {
		Volatile  smiECC `xml:"volatile"`
		Aggregate smiECC `xml:"aggregate"`
	} `xml:"ecc_errors"`
	Retired struct {
		Pending   string `xml:"pending_retirement"`
		Blacklist string `xml:"pending_blacklist"`
	} `xml:"retired_pages"`
	Remap struct {
		Pending    string `xml:"remapped_row_pending"`
		Failure    string `xml:"remapped_row_failure"`
		OldPending string `xml:"pending"`
		OldFailure string `xml:"remapping_failure_occurred"`
	} `xml:"remapped_rows"`
	Events   smiReasons `xml:"clocks_event_reasons"`
	Throttle smiReasons `xml:"clocks_throttle_reasons"`
}

// smiECC holds the shapes of an ECC counter block: per memory kind
// (drivers of Hopper's time: dram_uncorrectable, sram_uncorrectable_*;
// the 510-535 drivers of A100/H100 one sram_uncorrectable, as
// stas00/ml-engineering's A100 -q output prints "SRAM Uncorrectable") and
// per bit count (older: double_bit/total).
type smiECC struct {
	DRAMUncorr   string `xml:"dram_uncorrectable"`
	SRAMUncorr   string `xml:"sram_uncorrectable"`
	SRAMParity   string `xml:"sram_uncorrectable_parity"`
	SRAMSECDED   string `xml:"sram_uncorrectable_secded"`
	DoubleBitTot string `xml:"double_bit>total"`
}

func (e smiECC) uncorrected() int64 {
	if e.DRAMUncorr == "" && e.SRAMUncorr == "" && e.SRAMParity == "" && e.SRAMSECDED == "" {
		return num(e.DoubleBitTot)
	}
	var sum int64 = -1
	for _, v := range []string{e.DRAMUncorr, e.SRAMUncorr, e.SRAMParity, e.SRAMSECDED} {
		if n := num(v); n >= 0 {
			sum = max(sum, 0) + n
		}
	}
	return sum
}

type smiReasons struct {
	Items []smiReason `xml:",any"`
}

// smiReason is one clocks_event_reason_NAME element ("Active" or "Not
// Active").
type smiReason struct {
	XMLName xml.Name
	Value   string `xml:",chardata"`
}

// num reads a count as nvidia-smi prints it; -1 for N/A, [N/A], Not
// Supported or anything else that is no number.
func num(s string) int64 {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(s, "x") // link widths: "16x"
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// yesNo is "Yes", "No" or "" (N/A, unknown).
func yesNo(s string) string {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(s), "[]")) {
	case "yes":
		return "Yes"
	case "no":
		return "No"
	}
	return ""
}

// parseXML reads nvidia-smi -q -x. The error names the file.
func parseXML(s *section) ([]gpu, error) {
	var doc smiLog
	if err := xml.Unmarshal([]byte(s.text()), &doc); err != nil {
		return nil, fmt.Errorf("%s: nvidia-smi -q -x output is not XML: %w", s.where(), err)
	}
	return gpusOf(doc, s.where()), nil
}

// gpusOf turns nvidia-smi's document, read from -q -x (parseXML) or from
// -q text (parseSMIText), into gpu: both views go through here, so that
// the same GPU gives the same checks whichever was handed over.
func gpusOf(doc smiLog, where string) []gpu {
	out := make([]gpu, 0, len(doc.GPUs))
	for i, x := range doc.GPUs {
		g := newGPU(i, where)
		g.name, g.busID = strings.TrimSpace(x.Name), strings.TrimSpace(x.PCI.BusID)
		g.uuid, g.serial = strings.TrimSpace(x.UUID), strings.TrimSpace(x.Serial)
		if g.busID == "" {
			g.busID = strings.TrimSpace(x.ID)
		}
		g.driver, g.vbios = strings.TrimSpace(doc.Driver), strings.TrimSpace(x.VBIOS)
		g.persistence, g.eccMode = strings.TrimSpace(x.Persistence), strings.TrimSpace(x.ECCMode.Current)
		g.uncorrVol, g.uncorrAgg = x.ECC.Volatile.uncorrected(), x.ECC.Aggregate.uncorrected()
		g.retiredPending = yesNo(x.Retired.Pending)
		if g.retiredPending == "" {
			g.retiredPending = yesNo(x.Retired.Blacklist)
		}
		g.remapPending, g.remapFail = yesNo(x.Remap.Pending), yesNo(x.Remap.Failure)
		if g.remapPending == "" {
			g.remapPending = yesNo(x.Remap.OldPending)
		}
		if g.remapFail == "" {
			g.remapFail = yesNo(x.Remap.OldFailure)
		}
		for _, r := range [2]smiReasons{x.Events, x.Throttle} {
			for _, it := range r.Items {
				name := strings.TrimPrefix(strings.TrimPrefix(it.XMLName.Local, "clocks_event_reason_"), "clocks_throttle_reason_")
				bit, known := reasonBits[name]
				if !known {
					continue
				}
				g.hasReasons = true
				if strings.TrimSpace(it.Value) == "Active" {
					g.reasons |= bit
				}
			}
		}
		g.genCur, g.genMax = int(num(x.PCI.Gen.Cur)), int(num(x.PCI.Gen.Max))
		g.widthCur, g.widthMax = int(num(x.PCI.Width.Cur)), int(num(x.PCI.Width.Max))
		out = append(out, g)
	}
	return out
}

// parseCSV reads nvidia-smi --query-gpu=... --format=csv (with or without
// units in the header), any fields in any order. Rows whose cell count is
// not the header's are an error naming the line.
func parseCSV(s *section) ([]gpu, error) {
	var cols []string
	var out []gpu
	for _, l := range s.lines {
		t := strings.TrimSpace(l.text)
		if t == "" {
			continue
		}
		cells := strings.Split(t, ",")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if cols == nil {
			if !csvHeader(t) {
				return nil, fmt.Errorf("%s:%d: not the header of nvidia-smi --query-gpu CSV: %.80q", s.file, l.no, t)
			}
			for _, c := range cells {
				name, _, _ := strings.Cut(c, " [")
				cols = append(cols, name)
			}
			continue
		}
		if len(cells) != len(cols) {
			return out, fmt.Errorf("%s:%d: %d cells, the header has %d", s.file, l.no, len(cells), len(cols))
		}
		g := newGPU(len(out), fmt.Sprintf("%s:%d", s.file, l.no))
		for i, c := range cols {
			v := cells[i]
			switch c {
			case "index":
				if n := num(v); n >= 0 && n < 1<<20 {
					g.index = int(n)
				}
			case "name":
				g.name = v
			case "pci.bus_id":
				g.busID = v
			case "uuid":
				g.uuid = v
			case "serial":
				g.serial = v
			case "driver_version":
				g.driver = v
			case "vbios_version":
				g.vbios = v
			case "persistence_mode":
				g.persistence = v
			case "ecc.mode.current":
				g.eccMode = v
			case "ecc.errors.uncorrected.volatile.total":
				g.uncorrVol = num(v)
			case "ecc.errors.uncorrected.aggregate.total":
				g.uncorrAgg = num(v)
			case "retired_pages.pending":
				g.retiredPending = yesNo(v)
			case "remapped_rows.pending":
				g.remapPending = yesNo(v)
			case "remapped_rows.failure":
				g.remapFail = yesNo(v)
			case "clocks_event_reasons.active", "clocks_throttle_reasons.active":
				if x, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64); err == nil && strings.HasPrefix(v, "0x") {
					g.reasons, g.hasReasons = x, true
				}
			case "pcie.link.gen.current":
				g.genCur = int(num(v))
			case "pcie.link.gen.max":
				g.genMax = int(num(v))
			case "pcie.link.width.current":
				g.widthCur = int(num(v))
			case "pcie.link.width.max":
				g.widthMax = int(num(v))
			}
		}
		out = append(out, g)
	}
	if cols == nil {
		return nil, fmt.Errorf("%s: empty nvidia-smi --query-gpu output", s.where())
	}
	return out, nil
}

// merge fills what xmlGPUs lack from csvGPUs of the same bus id (else the
// same index); either may be nil.
func merge(xmlGPUs, csvGPUs []gpu) []gpu {
	if len(xmlGPUs) == 0 {
		return csvGPUs
	}
	out := append([]gpu(nil), xmlGPUs...)
	for i := range out {
		g := &out[i]
		for _, c := range csvGPUs {
			if !(c.busID != "" && strings.EqualFold(c.busID, g.busID) || c.busID == "" && c.index == g.index) {
				continue
			}
			fillS := func(dst *string, v string) {
				if *dst == "" {
					*dst = v
				}
			}
			fillN := func(dst *int64, v int64) {
				if *dst < 0 {
					*dst = v
				}
			}
			fillI := func(dst *int, v int) {
				if *dst < 0 {
					*dst = v
				}
			}
			fillS(&g.name, c.name)
			fillS(&g.driver, c.driver)
			fillS(&g.vbios, c.vbios)
			fillS(&g.persistence, c.persistence)
			fillS(&g.eccMode, c.eccMode)
			fillS(&g.retiredPending, c.retiredPending)
			fillS(&g.remapPending, c.remapPending)
			fillS(&g.remapFail, c.remapFail)
			fillN(&g.uncorrVol, c.uncorrVol)
			fillN(&g.uncorrAgg, c.uncorrAgg)
			fillI(&g.genCur, c.genCur)
			fillI(&g.genMax, c.genMax)
			fillI(&g.widthCur, c.widthCur)
			fillI(&g.widthMax, c.widthMax)
			if !g.hasReasons && c.hasReasons {
				g.reasons, g.hasReasons = c.reasons, true
			}
		}
	}
	return out
}
