package health

// This file: nvidia-smi -q as text, read into the same document as -q -x
// (smiLog), so that gpusOf makes the same GPUs, and so the same checks,
// from either view of one GPU.

import (
	"fmt"
	"regexp"
	"strings"
)

// smiTextGPU is the line that opens a GPU in nvidia-smi -q: its bus id.
var smiTextGPU = regexp.MustCompile(`^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])$`)

// smiTextHead is nvidia-smi -q's banner, or a GPU line followed by an
// indented "key : value" line (a page that kept the GPU but not the
// banner): what sniff takes for -q text.
var smiTextHead = regexp.MustCompile(`(?m)^(==============NVSMI LOG==============|GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7][ \t\r]*\n[ \t]+[A-Za-z][^:\n]*:)`)

// smiTextReasons maps -q's clock event reason labels to the names -q -x
// gives them after its clocks_event_reason_ prefix (reasonBits' keys).
var smiTextReasons = map[string]string{
	"idle":                        "gpu_idle",
	"applications clocks setting": "applications_clocks_setting",
	"sw power cap":                "sw_power_cap",
	"hw slowdown":                 "hw_slowdown",
	"sync boost":                  "sync_boost",
	"sw thermal slowdown":         "sw_thermal_slowdown",
	"hw thermal slowdown":         "hw_thermal_slowdown",
	"hw power brake slowdown":     "hw_power_brake_slowdown",
	"display clock setting":       "display_clocks_setting",
}

// parseSMIText reads nvidia-smi -q (or -q -d SECTION) text: "GPU BUSID"
// opens a GPU, "Key : value" lines nest by their indentation. Keys are
// compared without case (pages print "Retired pages" and "Retired
// Pages"). Lines that are neither (a page's "[...]") are skipped. The
// error names the file when no GPU is found.
func parseSMIText(s *section) ([]gpu, error) {
	var doc smiLog
	type level struct {
		indent int
		key    string
	}
	var stack []level
	var g *smiGPU
	for _, l := range s.lines {
		raw := strings.TrimRight(l.text, " \t\r")
		content := strings.TrimLeft(raw, " \t")
		if content == "" {
			continue
		}
		indent := 0
		for _, c := range raw[:len(raw)-len(content)] {
			if c == '\t' {
				indent += 8
			} else {
				indent++
			}
		}
		if m := smiTextGPU.FindStringSubmatch(content); m != nil {
			doc.GPUs = append(doc.GPUs, smiGPU{ID: m[1]})
			g = &doc.GPUs[len(doc.GPUs)-1]
			stack = stack[:0]
			continue
		}
		key, value, _ := strings.Cut(content, ":")
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.TrimSpace(value)
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		path := make([]string, 0, len(stack)+1)
		for _, lv := range stack {
			path = append(path, lv.key)
		}
		path = append(path, key)
		if len(stack) < 16 {
			stack = append(stack, level{indent, key})
		}
		if g == nil {
			if key == "driver version" {
				doc.Driver = value
			}
			continue
		}
		setSMIText(g, path, value)
	}
	if len(doc.GPUs) == 0 {
		return nil, fmt.Errorf("%s: no \"GPU BUSID\" line in the nvidia-smi -q output", s.where())
	}
	return gpusOf(doc, s.where()), nil
}

// setSMIText puts the value at path (lower-case keys from the GPU line
// down) where -q -x would have it.
func setSMIText(g *smiGPU, path []string, v string) {
	p := strings.Join(path, "/")
	if len(path) >= 2 && (path[0] == "clocks event reasons" || path[0] == "clocks throttle reasons") {
		if name, ok := smiTextReasons[path[len(path)-1]]; ok {
			g.Events.Items = append(g.Events.Items, smiReason{Value: v})
			g.Events.Items[len(g.Events.Items)-1].XMLName.Local = name
		}
		return
	}
	switch p {
	case "product name":
		g.Name = v
	case "gpu uuid":
		g.UUID = v
	case "serial number":
		g.Serial = v
	case "vbios version":
		g.VBIOS = v
	case "persistence mode":
		g.Persistence = v
	case "pci/bus id":
		g.PCI.BusID = v
	case "pci/gpu link info/pcie generation/max":
		g.PCI.Gen.Max = v
	case "pci/gpu link info/pcie generation/current":
		g.PCI.Gen.Cur = v
	case "pci/gpu link info/link width/max":
		g.PCI.Width.Max = v
	case "pci/gpu link info/link width/current":
		g.PCI.Width.Cur = v
	case "ecc mode/current":
		g.ECCMode.Current = v
	case "retired pages/pending page blacklist":
		g.Retired.Blacklist = v
	case "retired pages/pending", "retired pages/pending page retirement":
		g.Retired.Pending = v
	case "remapped rows/pending":
		g.Remap.Pending = v
	case "remapped rows/remapping failure occurred":
		g.Remap.Failure = v
	}
	for _, kind := range []struct {
		name string
		ecc  *smiECC
	}{{"ecc errors/volatile/", &g.ECC.Volatile}, {"ecc errors/aggregate/", &g.ECC.Aggregate}} {
		rest, ok := strings.CutPrefix(p, kind.name)
		if !ok {
			continue
		}
		switch rest {
		case "dram uncorrectable":
			kind.ecc.DRAMUncorr = v
		case "sram uncorrectable":
			kind.ecc.SRAMUncorr = v
		case "sram uncorrectable parity":
			kind.ecc.SRAMParity = v
		case "sram uncorrectable sec-ded":
			kind.ecc.SRAMSECDED = v
		case "double bit/total":
			kind.ecc.DoubleBitTot = v
		}
	}
}
