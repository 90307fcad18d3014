package health

// This file: turning the outputs handed to Parse into nodes and sections.
// A planned run's log holds every node's lines, each "HOST|SECTION|TEXT"
// (collect.sh), interleaved by the rank starter; a file given to
// gpuaccept check may instead be one tool's own output (nvidia-smi -q -x,
// a --query-gpu CSV, nvlink --status, dmesg, dcgmi diag -j, ibstat), which
// is sniffed.

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/lines"
	"github.com/gpuaccept/gpuaccept/plugins/internal/textdiag"
)

// maxLine bounds one line kept from a log (a hostile log of gigabytes on
// one line must not be held whole); the rest of such a line is dropped.
const maxLine = 1 << 20

// maxLines bounds the lines kept per section.
const maxLines = 1 << 20

// maxNodeBytes bounds the text kept of one node (a real collection of an
// 8-GPU node is about 1 MB: nvidia-smi -q -x is most of it), so that a
// hostile log of gigabytes under one host name is not held whole; the
// rest is dropped and the node's output is an error (overflow).
const maxNodeBytes = 16 << 20

// line is one line of a section and where it was in its file.
type line struct {
	text string
	no   int
}

// section is one tool's output on one node.
type section struct {
	name  string
	file  string
	lines []line
	// absent names the tool that is not installed ("@absent TOOL").
	absent string
	// exit is the tool's exit status ("@exit N"); -1: not printed.
	exit int
}

// text is the section's lines joined, for the parsers of whole documents
// (XML, JSON).
func (s *section) text() string {
	var b strings.Builder
	for _, l := range s.lines {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// where is "FILE:LINE" of the section's first line.
func (s *section) where() string {
	if len(s.lines) == 0 {
		return s.file
	}
	return fmt.Sprintf("%s:%d", s.file, s.lines[0].no)
}

// nodeInput is what one node's collection printed.
type nodeInput struct {
	host     string
	sections map[string]*section
	order    []string
	begun    bool
	ended    bool
	// bytes counts the text kept of the node; overflow says some was
	// dropped past maxNodeBytes.
	bytes    int
	overflow bool
}

func (n *nodeInput) section(name, file string) *section {
	if s, ok := n.sections[name]; ok {
		return s
	}
	s := &section{name: name, file: file, exit: -1}
	n.sections[name] = s
	n.order = append(n.order, name)
	return s
}

// lineKinds are the sections whose parts may be joined line by line: a
// paste of two dmesg greps, or of ibstat twice, reads as one output.
var lineKinds = map[string]bool{"kernel-log": true, "ibstat": true, "ibdevinfo": true, "nvlink": true, "rocmsmi-text": true, "amdsmi-text": true}

// addPart adds one part of a pasted file, sniffed as kind, to n. A kind
// already read is joined: line by line where its reader reads lines
// (lineKinds), else as a further section "KIND#N" whose document
// readNode merges with the first (nvidia-smi -q twice: one GPU list,
// the worse of each value).
func (n *nodeInput) addPart(kind, file string, lines []line) {
	name := kind
	if s, ok := n.sections[kind]; ok {
		if lineKinds[kind] {
			s.lines = append(s.lines, lines...)
			return
		}
		for i := 2; ; i++ {
			name = fmt.Sprintf("%s#%d", kind, i)
			if _, ok := n.sections[name]; !ok {
				break
			}
		}
	}
	n.section(name, file).lines = lines
}

// kindOf is the section kind of a section name: "nvsmi-text" of
// "nvsmi-text#2" (addPart).
func kindOf(name string) string {
	k, _, _ := strings.Cut(name, "#")
	return k
}

// readLines calls fn for each line of r (no line end, at most maxLine
// bytes kept of it), numbered from 1.
func readLines(r io.Reader, fn func(text string, no int)) error {
	return lines.Each(r, maxLine, func(line []byte, no int, _ bool) { fn(string(line), no) })
}

var tagged = regexp.MustCompile(`^([^|]{1,255})\|([a-z0-9-]{1,32})\|`)

// splitTagged regroups the lines of a collect.sh log by host and section,
// in the order the hosts first appear. Lines without the tag (a rank
// starter's own messages) are returned as strays. ok is false when the
// log holds no collect.sh begin line: it is no tagged log.
func splitTagged(r io.Reader, file string) (nodes []*nodeInput, strays []line, ok bool, err error) {
	byHost := map[string]*nodeInput{}
	err = readLines(r, func(text string, no int) {
		t := strings.TrimSuffix(text, "\r")
		t = t[textdiag.PrefixLen(t):]
		m := tagged.FindStringSubmatch(t)
		if m == nil {
			if strings.TrimSpace(t) != "" && len(strays) < 1000 {
				strays = append(strays, line{t, no})
			}
			return
		}
		host, name, rest := m[1], m[2], t[len(m[0]):]
		n := byHost[host]
		if n == nil {
			n = &nodeInput{host: host, sections: map[string]*section{}}
			byHost[host] = n
			nodes = append(nodes, n)
		}
		switch {
		case name == "begin" && strings.HasPrefix(rest, "@begin gpuaccept-health"):
			n.begun, ok = true, true
			return
		case name == "end" && rest == "@end":
			n.ended = true
			return
		}
		s := n.section(name, file)
		switch {
		case strings.HasPrefix(rest, "@absent "):
			s.absent = strings.TrimSpace(strings.TrimPrefix(rest, "@absent "))
		case strings.HasPrefix(rest, "@exit "):
			fmt.Sscanf(strings.TrimPrefix(rest, "@exit "), "%d", &s.exit)
		case n.bytes+len(rest) > maxNodeBytes:
			n.overflow = true
		case len(s.lines) < maxLines:
			n.bytes += len(rest)
			s.lines = append(s.lines, line{rest, no})
		}
	})
	return nodes, strays, ok, err
}

// sniff says which section a tool's own output is, from its content:
// "nvsmi-xml", "nvsmi-text", "nvsmi-table", "nvsmi-csv", "nvlink", "kernel-log", "dcgm",
// "dcgm-text", "ibstat", "amdsmi-static", "amdsmi-metric", "rocmsmi"; ""
// for none of them.
func sniff(head []byte) string {
	t := bytes.TrimLeft(head, " \t\r\n\ufeff")
	first, _, _ := bytes.Cut(t, []byte("\n"))
	switch {
	case bytes.Contains(head, []byte("<nvidia_smi_log")):
		return "nvsmi-xml"
	case bytes.Contains(head, []byte(`"DCGM GPU Diagnostic"`)) || bytes.Contains(head, []byte(`"DCGM Diagnostic"`)):
		return "dcgm"
	case dcgmTableHead.Match(head) || dcgmRunError.Match(head):
		return "dcgm-text"
	case smiTextHead.Match(head):
		return "nvsmi-text"
	case smiTableBanner.Match(head):
		return "nvsmi-table"
	case bytes.Contains(head, []byte(`"market_name"`)) && bytes.Contains(head, []byte(`"asic"`)):
		return "amdsmi-static"
	case bytes.HasPrefix(t, []byte("[")) || bytes.HasPrefix(t, []byte("{")) && bytes.Contains(head, []byte(`"gpu_data"`)):
		if amdMetricKey.Match(head) {
			return "amdsmi-metric"
		}
	case rocmCard.Match(head):
		return "rocmsmi"
	}
	switch {
	case csvHeader(string(first)):
		return "nvsmi-csv"
	case nvlinkHead.Match(head) || bytes.Contains(head, []byte("Unable to retrieve NVLink information")):
		return "nvlink"
	case ibTextMark.Match(head):
		return "ibdevinfo"
	case bytes.Contains(head, []byte("CA '")) && bytes.Contains(head, []byte("Port ")):
		return "ibstat"
	case amdsmiTextMark.Match(head):
		return "amdsmi-text"
	case rocmsmiTextMark.Match(head):
		return "rocmsmi-text"
	case bytes.Contains(head, []byte("NVRM:")):
		return "kernel-log"
	}
	return ""
}

// ibTextMark is a line of ibv_devinfo ("hca_id:\tmlx5_0") or of
// ibstatus ("Infiniband device 'mlx5_0' port 1 status:").
var ibTextMark = regexp.MustCompile(`(?m)(^|\s)hca_id:\s+\S|Infiniband device '[^']+' port \d+ status:`)

// amdsmiTextMark is amd-smi's text view: a "GPU: N" block with one of its
// sections or keys, monitor's table header, or the error amd-smi prints
// instead of a GPU.
var amdsmiTextMark = regexp.MustCompile(`(?ms)^\S*\s*GPU: \d+\s*$.*^\S*\s+(ASIC|BUS|BDF|ECC|ECC_BLOCKS|PCIE|XGMI_ERR|DRIVER|VBIOS|IFWI|BOARD|RAS|UUID|MARKET_NAME):|\bGPU\s+(POWER|GPU_T|GPU_TEMP|GFX_UTIL|SINGLE_ECC|DOUBLE_ECC|VRAM_USED|PCIE_BW)\s|AMDSMI_STATUS_|Can not find a device: GPU`)

// rocmsmiTextMark is rocm-smi's text view: its banner, its "GPU[N]\t\t:"
// lines, or a line it prints instead of data.
var rocmsmiTextMark = regexp.MustCompile(`ROCm System Management Interface|(?m)^\S*\s*(ERROR: )?(\d+ )?GPU\[\d+\]\s*:|RSMI_STATUS_|No JSON data to report`)

// amdMetricKey is a key only amd-smi metric --json prints per GPU.
var amdMetricKey = regexp.MustCompile(`"(pcie|ecc|xgmi_err|ecc_blocks)"\s*:`)

// rocmCard is rocm-smi --json's per-GPU key ("card0": {) with one of
// the keys it names the GPU or its bus by.
var rocmCard = regexp.MustCompile(`(?s)^\s*\{\s*"card\d+"\s*:\s*\{.*"(Card Series|Card series|Device Name|PCI Bus)"`)

var nvlinkHead = regexp.MustCompile(`(?m)^GPU \d+: .*\(UUID: [^)]*\)[ \t\r]*\n\s*Link \d+:`)

// queryField is one header cell of nvidia-smi --query-gpu CSV: a field
// name, with its unit in brackets when nounits was not asked for.
var queryField = regexp.MustCompile(`^[a-z_]+(\.[a-z_]+)*( \[[^\]]*\])?$`)

// csvHeader says line is the header of nvidia-smi --query-gpu
// --format=csv output: comma-separated field names, one of them index or
// a dotted one.
func csvHeader(line string) bool {
	cells := strings.Split(strings.TrimSpace(line), ",")
	if len(cells) < 2 {
		return false
	}
	dotted := false
	for _, c := range cells {
		c = strings.TrimSpace(c)
		if !queryField.MatchString(c) {
			return false
		}
		dotted = dotted || strings.Contains(c, ".") || c == "index"
	}
	return dotted
}
