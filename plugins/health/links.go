package health

// This file: nvidia-smi nvlink --status and the NVRM XID lines of the
// kernel log.

import (
	"regexp"
	"strconv"
	"strings"
)

// nvlinkGPU is one GPU's links as nvidia-smi nvlink --status lists them.
type nvlinkGPU struct {
	index            int
	name             string
	active, inactive []int
	// allInactive: "NVML: Unable to retrieve NVLink information as all
	// links are inactive" (or "inActive") under the GPU.
	allInactive bool
	where       string
}

var (
	nvlinkGPULine = regexp.MustCompile(`^GPU (\d+): (.*?)\s*\(UUID: [^)]*\)\s*$`)
	nvlinkLink    = regexp.MustCompile(`^Link (\d+): (.*)$`)
)

// parseNVLink reads nvidia-smi nvlink --status: "GPU N: NAME (UUID: ...)"
// then "Link K: 25 GB/s" (active) or "Link K: <inactive>" per link. An
// empty output is no GPU with NVLink (a single PCIe GPU).
func parseNVLink(s *section) []nvlinkGPU {
	var out []nvlinkGPU
	for _, l := range s.lines {
		t := strings.TrimSpace(l.text)
		if m := nvlinkGPULine.FindStringSubmatch(t); m != nil {
			i, err := strconv.Atoi(m[1])
			if err != nil || i > 1<<20 {
				continue
			}
			out = append(out, nvlinkGPU{index: i, name: m[2], where: s.file + ":" + strconv.Itoa(l.no)})
			continue
		}
		if len(out) == 0 {
			continue
		}
		g := &out[len(out)-1]
		// Drivers of 2024 on spell it "inActive" (gpud#1085, a B200).
		if strings.Contains(strings.ToLower(t), "all links are inactive") {
			g.allInactive = true
			continue
		}
		if m := nvlinkLink.FindStringSubmatch(t); m != nil {
			k, err := strconv.Atoi(m[1])
			if err != nil || k > 1<<20 {
				continue
			}
			if strings.Contains(strings.ToLower(m[2]), "inactive") {
				g.inactive = append(g.inactive, k)
			} else {
				g.active = append(g.active, k)
			}
		}
	}
	return out
}

// nvlinkSocketed matches the names nvidia-smi gives the GPUs that sit on
// an NVLink baseboard or superchip (SXM and OAM modules, Grace
// superchips): "Tesla V100-SXM2-32GB", "NVIDIA A100-SXM4-80GB", "NVIDIA
// H100 80GB HBM3" (the H100 SXM), "NVIDIA H200", "NVIDIA H800", "NVIDIA
// B200", "NVIDIA GB200", "NVIDIA GH200 480GB"; nvlinkBoard the board parts among them ("NVIDIA
// H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H200 NVL", "NVIDIA A800 80GB
// PCIe"), whose NVLink is a bridge that may not be fitted.
var (
	nvlinkSocketed = regexp.MustCompile(`SXM|HBM3|^NVIDIA (G?B[0-9]{3}|GH[0-9]{3}|H[0-9]{3}|H20|A[0-9]{3})\b`)
	nvlinkBoard    = regexp.MustCompile(`(?i)PCIe|\bNVL\b`)
)

// nvlinkModule says a GPU of that name always has NVLink peers: "all
// links are inactive" on it is a fault whatever the SKU says. On a board
// GPU (an RTX A6000 or an A100 PCIe without its bridge) drivers of 2024
// on print the same line, and only a SKU's nvlinks can tell.
func nvlinkModule(name string) bool {
	return nvlinkSocketed.MatchString(name) && !nvlinkBoard.MatchString(name)
}

// xid is one NVRM Xid line of the kernel log.
type xid struct {
	code  int
	pci   string // "0000:3b:00" as the driver prints it
	text  string
	where string
}

// xidLine is the driver's XID report, "NVRM: Xid (PCI:0000:3b:00): 79,
// pid=..., ..." (pid and name since R470; older drivers print the address
// without "PCI:", as leptonai/gpud's XID matcher lists). An NVRM line
// without "Xid (" is the driver's ordinary chatter, no XID.
var xidLine = regexp.MustCompile(`NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): (\d{1,4})\b`)

func parseXIDs(s *section) []xid {
	var out []xid
	for _, l := range s.lines {
		m := xidLine.FindStringSubmatchIndex(l.text)
		if m == nil {
			continue
		}
		code, _ := strconv.Atoi(l.text[m[4]:m[5]])
		text := strings.TrimSpace(l.text[m[0]:])
		if len(text) > 200 {
			text = text[:200] + "..."
		}
		out = append(out, xid{code: code, pci: strings.ToLower(l.text[m[2]:m[3]]), text: text, where: s.file + ":" + strconv.Itoa(l.no)})
	}
	return out
}

// sameBus says the XID's "0000:3b:00" names the GPU of bus id
// "00000000:3B:00.0" (nvidia-smi pads the domain to 8 digits).
func sameBus(xidPCI, busID string) bool {
	dom, rest, ok := strings.Cut(xidPCI, ":")
	gdom, grest, ok2 := strings.Cut(strings.ToLower(busID), ":")
	if !ok || !ok2 {
		return false
	}
	trim := func(s string) string { return strings.TrimLeft(s, "0") }
	return trim(dom) == trim(gdom) && strings.HasPrefix(grest, rest)
}

// fatalXIDs is azurehpc-health-checks' list of XIDs that fail a node
// (customTests/azure_gpu_xid.nhc, XID_EC).
const fatalXIDs = "48,56,57,58,62,63,64,65,68,69,73,74,79,80,81,92,119,120"

// parseXIDList reads "48,56-58,62" into a set; ok is false for a word
// that is no XID or range.
func parseXIDList(v string) (map[int]bool, bool) {
	out := map[int]bool{}
	for _, w := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
		lo, hi, isRange := strings.Cut(w, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > 9999 {
			return nil, false
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > 9999 {
				return nil, false
			}
		}
		for i := a; i <= b; i++ {
			out[i] = true
		}
	}
	return out, true
}
