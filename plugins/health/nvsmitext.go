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
// banner), or by its "Product Name" line flush left (such a page that
// lost its indentation too): what sniff takes for -q text.
var smiTextHead = regexp.MustCompile(`(?m)^(==============NVSMI LOG==============|GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7][ \t\r]*\n([ \t]+[A-Za-z][^:\n]*|Product Name[ \t]*):)`)

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

// smiTextParents are the headers of nvidia-smi -q that sit under another
// header (the values of either): how a paste that lost its indentation
// is still read (smiFlat). A header not named here opens a section of
// the GPU itself. From -q of drivers 450-580 (testdata): "PCI" > "GPU
// Link Info" > "PCIe Generation" / "Link Width"; "ECC Errors" >
// "Volatile" / "Aggregate" > "Single Bit" / "Double Bit" (older drivers).
var smiTextParents = map[string][]string{
	"gpu link info":   {"pci"},
	"pcie generation": {"gpu link info"},
	"link width":      {"gpu link info"},
	"volatile":        {"ecc errors"},
	"aggregate":       {"ecc errors"},
	"single bit":      {"volatile", "aggregate"},
	"double bit":      {"volatile", "aggregate"},
}

// smiTextTopKeys are the "Key : value" lines nvidia-smi -q prints at the
// GPU's own level (driver 580's -q, testdata/field/health): in a flat
// paste such a line closes the section before it.
var smiTextTopKeys = map[string]bool{
	"product name": true, "product brand": true, "product architecture": true, "display mode": true,
	"display attached": true, "display active": true, "persistence mode": true, "addressing mode": true,
	"accounting mode": true, "accounting mode buffer size": true, "serial number": true, "gpu uuid": true,
	"gpu pdi": true, "minor number": true, "vbios version": true, "multigpu board": true, "board id": true,
	"board part number": true, "gpu part number": true, "fru part number": true, "gpu c2c mode": true,
	"gpu recovery action": true, "gsp firmware version": true, "fan speed": true, "performance state": true,
	"sparse operation mode": true, "compute mode": true, "processes": true, "power smoothing": true,
}

// smiTextSeen are the headers whose values a GPU's checks need: where
// the text prints one but the value under it was not read, a warning
// says so (a check missing in silence reads as a pass).
var smiTextSeen = map[string]string{
	"ecc errors":    "ECC error counters (ECC Errors)",
	"remapped rows": "remapped rows (Remapped Rows)",
	"gpu link info": "PCIe link (PCI > GPU Link Info)",
}

// parseSMIText reads nvidia-smi -q (or -q -d SECTION) text: "GPU BUSID"
// opens a GPU, "Key : value" lines nest by their indentation. Keys are
// compared without case (pages print "Retired pages" and "Retired
// Pages"). Lines that are neither (a page's "[...]") are skipped. The
// error names the file when no GPU is found.
func parseSMIText(s *section) ([]gpu, error) {
	gs, _, err := parseSMITextNotes(s)
	return gs, err
}

// parseSMITextNotes is parseSMIText with its notes: per GPU, each value
// a check needs whose section the text prints but whose value was not
// read. Text whose GPU lines lost their indentation (a chat or web
// paste strips leading blanks) is read by the known headers
// (smiTextParents, smiTextTopKeys) instead.
func parseSMITextNotes(s *section) ([]gpu, []string, error) {
	var doc smiLog
	type level struct {
		indent int
		key    string
	}
	flat := smiFlat(s)
	var stack []level
	var g *smiGPU
	seen := map[int]map[string]bool{}
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
			seen[len(doc.GPUs)-1] = map[string]bool{}
			stack = stack[:0]
			continue
		}
		key, value, hasColon := strings.Cut(content, ":")
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.TrimSpace(value)
		if g != nil {
			if _, ok := smiTextSeen[key]; ok && value == "" {
				seen[len(doc.GPUs)-1][key] = true
			}
		}
		header := !hasColon || value == ""
		if flat && g != nil {
			// Depth from what the key is: a header under its known parent
			// (where that parent is open), any other header at the GPU's
			// level; a value under the open header, unless it is one of
			// the GPU's own.
			switch {
			case header:
				depth := 0
				for _, parent := range smiTextParents[key] {
					for i := len(stack) - 1; i >= 0; i-- {
						if stack[i].key == parent {
							depth = i + 1
							break
						}
					}
					if depth > 0 {
						break
					}
				}
				indent = depth + 1
			case smiTextTopKeys[key]:
				indent = 1
			default:
				indent = 1 << 20
			}
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		path := make([]string, 0, len(stack)+1)
		for _, lv := range stack {
			path = append(path, lv.key)
		}
		path = append(path, key)
		if len(stack) < 16 && !(flat && g != nil && !header) {
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
		return nil, nil, fmt.Errorf("%s: no \"GPU BUSID\" line in the nvidia-smi -q output", s.where())
	}
	gs := gpusOf(doc, s.where())
	var notes []string
	for i, g := range gs {
		var miss []string
		for _, k := range []string{"ecc errors", "remapped rows", "gpu link info"} {
			if !seen[i][k] {
				continue
			}
			read := false
			switch k {
			case "ecc errors":
				read = doc.GPUs[i].ECC.Volatile != (smiECC{}) || doc.GPUs[i].ECC.Aggregate != (smiECC{})
			case "remapped rows":
				read = doc.GPUs[i].Remap.Pending != "" || doc.GPUs[i].Remap.Failure != ""
			case "gpu link info":
				read = doc.GPUs[i].PCI.Width.Cur != "" || doc.GPUs[i].PCI.Gen.Max != ""
			}
			if !read {
				miss = append(miss, smiTextSeen[k])
			}
		}
		if len(miss) > 0 {
			notes = append(notes, fmt.Sprintf("%s: the nvidia-smi -q text prints %s, but no value under it was read (indentation lost?): its check is not made", g.label(), strings.Join(miss, ", ")))
		}
	}
	return gs, notes, nil
}

// smiFlat says the -q text lost its indentation: after the first GPU
// line, no key line starts with a blank, though -q indents every line
// of a GPU.
func smiFlat(s *section) bool {
	inGPU, lines := false, 0
	for _, l := range s.lines {
		raw := strings.TrimRight(l.text, " \t\r")
		content := strings.TrimLeft(raw, " \t")
		if content == "" {
			continue
		}
		if smiTextGPU.MatchString(content) {
			inGPU = true
			continue
		}
		if !inGPU {
			continue
		}
		if len(content) < len(raw) {
			return false
		}
		lines++
	}
	return lines > 0
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
