package health

// This file: a GPU the driver lost or never took, as the kernel log says
// it without an XID line: "NVRM: GPU at 0000:01:00.0 has fallen off the
// bus." (old drivers), "NVRM: GPU 0000:3b:00.0: GPU has fallen off the
// bus.", "NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)",
// "nvidia: probe of 0000:01:00.0 failed with error -1", and the driver's
// messages of several NVRM lines ("NVRM: The NVIDIA GPU 0000:02:00.0 (PCI
// ID: 10de:2235)" then "NVRM: installed in this system is not supported
// by the ..."), whose continuation lines have no time stamp of their own.

import (
	"regexp"
	"strconv"
	"strings"
)

// lostGPU is a GPU the kernel log says is off the bus or not initialised.
type lostGPU struct {
	pci    string // "0000:01:00.0" as printed, lower case; "" where none is
	offBus bool   // fallen off the bus (else: not initialised)
	what   string
	where  string
}

var (
	lostPCI    = `((?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])`
	lostOffBus = regexp.MustCompile(`NVRM: GPU (?:at )?(?:PCI:)?` + lostPCI + `:? (?:GPU )?has fallen off the bus`)
	lostInit   = regexp.MustCompile(`NVRM: GPU (?:at )?(?:PCI:)?` + lostPCI + `: (RmInitAdapter failed|rm_init_adapter failed)`)
	lostProbe  = regexp.MustCompile(`nvidia(?: ` + lostPCI + `:|:) probe (?:of ` + lostPCI + ` )?(?:with driver nvidia )?failed with error (-?\d+)`)
	lostTheGPU = regexp.MustCompile(`NVRM: The NVIDIA GPU ` + lostPCI + `(?: \(PCI ID: ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{4})\))?`)
	lostNone   = regexp.MustCompile(`NVRM: (The NVIDIA probe routine (?:failed|was not called) for \d+ device\(s\)|None of the NVIDIA (?:devices|graphics adapters) (?:were|was) initialized)`)
)

// lostWords are what the driver says of a lost GPU, whatever else the
// line holds: a line with them that no address pattern read is still a
// lost GPU (lostUnread).
var lostWords = regexp.MustCompile(`(?i)(fallen off the bus)|(rm_?init_?adapter failed)|\bprobe\b.*\bfailed\b`)

// lostUnread says a kernel line holds lostWords: what it says, and
// whether that is off the bus (else not initialised).
func lostUnread(t string) (what string, offBus, ok bool) {
	m := lostWords.FindStringSubmatch(t)
	switch {
	case m == nil:
		return "", false, false
	case m[1] != "":
		return "has fallen off the bus", true, true
	case m[2] != "":
		return "RmInitAdapter failed", false, true
	}
	return "probe failed", false, true
}

// parseLostGPUs finds the GPUs the kernel log says were lost or not
// initialised, one entry per bus address (the first line that says so);
// a probe failure that names no address is kept only when no line names
// one. A line with the driver's words of a lost GPU (lostWords) that no
// pattern read is a lost GPU whose address was not read (at most 8 such).
func parseLostGPUs(s *section) []lostGPU {
	var out []lostGPU
	seen := map[string]int{}
	var anon *lostGPU
	addAt := func(pci string, offBus bool, what string, no int) {
		pci = strings.ToLower(pci)
		where := s.file + ":" + strconv.Itoa(no)
		if i, ok := seen[pci]; ok {
			// Off the bus is the worst news; a failed probe the least
			// telling (the driver says why on other lines).
			if offBus && !out[i].offBus || !out[i].offBus && strings.HasPrefix(out[i].what, "probe failed") && !strings.HasPrefix(what, "probe failed") {
				out[i].offBus, out[i].what, out[i].where = offBus, what, where
			}
			return
		}
		seen[pci] = len(out)
		out = append(out, lostGPU{pci: pci, offBus: offBus, what: what, where: where})
	}
	read := -1 // the last continuation line of a multi-line message read
	unread := 0
	for i, l := range s.lines {
		t := l.text
		if !strings.Contains(t, "NVRM") && !strings.Contains(t, "nvidia") {
			continue
		}
		if i <= read {
			continue
		}
		if xidLine.MatchString(t) {
			continue // an XID: judgeXIDs' (79 is off the bus)
		}
		if m := lostOffBus.FindStringSubmatch(t); m != nil {
			addAt(m[1], true, "has fallen off the bus", l.no)
			continue
		}
		if m := lostInit.FindStringSubmatch(t); m != nil {
			what := "RmInitAdapter failed"
			if k := strings.Index(t, "RmInitAdapter failed!"); k >= 0 {
				what = clip(strings.TrimSpace(t[k:]))
			}
			addAt(m[1], false, what, l.no)
			continue
		}
		if m := lostProbe.FindStringSubmatch(t); m != nil {
			pci := m[1]
			if pci == "" {
				pci = m[2]
			}
			addAt(pci, false, "probe failed with error "+m[3], l.no)
			continue
		}
		if m := lostTheGPU.FindStringSubmatch(t); m != nil {
			// The reason is on this line or the next NVRM lines
			// ("NVRM: The NVIDIA GPU 0000:18:00.0" then "NVRM: ...
			// fallen off the bus and is not responding to commands.",
			// as leptonai/gpud's RegexNVRMFallenOffBusMultiline reads).
			rest := t
			for j := i + 1; j < len(s.lines) && j <= i+3; j++ {
				rest += " " + s.lines[j].text
			}
			if strings.Contains(rest, "fallen off the bus") || strings.Contains(rest, "is not supported") {
				read = min(i+3, len(s.lines)-1)
			}
			switch {
			case strings.Contains(rest, "fallen off the bus"):
				addAt(m[1], true, "has fallen off the bus", l.no)
			case strings.Contains(rest, "is not supported"):
				id := ""
				if m[2] != "" {
					id = " (PCI ID " + m[2] + ")"
				}
				addAt(m[1], false, "the GPU"+id+" is not supported by the installed driver", l.no)
			}
			continue
		}
		if m := lostNone.FindStringSubmatch(t); m != nil {
			if anon == nil {
				anon = &lostGPU{what: m[1], where: s.file + ":" + strconv.Itoa(l.no)}
			}
			continue
		}
		if what, offBus, ok := lostUnread(t); ok && unread < 8 {
			// The driver's words for a lost GPU in a form the patterns
			// above do not read ("GPU at PCI:0000:3b:00: GPU has fallen
			// off the bus", no function): still a lost GPU, never a pass.
			unread++
			out = append(out, lostGPU{offBus: offBus, what: what + " (address not read): " + clip(strings.TrimSpace(t)), where: s.file + ":" + strconv.Itoa(l.no)})
		}
	}
	if len(out) == 0 && anon != nil {
		out = append(out, *anon)
	}
	return out
}
