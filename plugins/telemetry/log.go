package telemetry

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/plugins/internal/lines"
)

// ReadyMarker is the line fragment sample.sh prints once its sampler runs
// (or once it found none to run): the launcher starts the test's steps
// after it.
const ReadyMarker = "gpuaccept-telemetry: sampling"

// sections of sample.sh's output, by the tool whose lines they hold.
const (
	secNvsmi = "nvsmi"
	secDCGM  = "dcgmi"
	secAMD   = "amdsmi"
)

// node is what one node's lines of a sampler log said.
type node struct {
	host                   string
	nvsmi                  *nvsmiReader
	dcgm                   *dcgmReader
	amd                    *amdReader
	start                  float64
	interval               float64
	fields                 []int
	replayStart, replayEnd map[string]int64 // by busKey
	replayBus              string           // the GPU whose replay line comes next
	xids                   []string
	notes                  []string
	ended, none            bool
	// cont: the section's last line was a piece cut by sample.sh's fold
	// (or by the reader's bound), so its next line continues it; cut and
	// partial count the lines cut and the streams that ended mid-line,
	// by section; dropped counts notes and XID lines past their bounds.
	cont         map[string]bool
	cut, partial map[string]int
	droppedNotes int
	droppedXIDs  int
	badHost      bool // the log's host name was refused (cleanHost)
}

// cutWidth is the width sample.sh's fold cuts a line at: a line of the
// tool of this many bytes or more is a piece of a longer one.
const cutWidth = 4096

// maxNotes and maxXIDs bound what one node's lines may add to the notes
// and to its XID lines: a hostile log of millions of such lines is
// counted, not held.
const (
	maxNotes = 100
	maxXIDs  = 1000
)

// maxNodes bounds the nodes one log may name: a run's log is one node's,
// a merged one of a cluster's few thousand at most.
const maxNodes = 4096

func (nd *node) note(s string) {
	if len(nd.notes) >= maxNotes {
		nd.droppedNotes++
		return
	}
	nd.notes = append(nd.notes, s)
}

// ReadLog reads one log of sample.sh (the lines of one node, or of
// several interleaved) into the telemetry of its GPUs. sampler is false
// when no line of r is the sampler's ("HOST|SECTION|TEXT"): then r is
// read as a tool's own output (ReadTool). The error is r's.
func ReadLog(r io.Reader) (t result.Telemetry, sampler bool, err error) {
	nodes := map[string]*node{}
	var order []string
	var raw strings.Builder // the lines, should r be no sampler's log
	tagged, n, tooMany := 0, 0, 0
	get := func(h string) *node {
		nd, ok := nodes[h]
		if !ok {
			if len(nodes) >= maxNodes {
				return nil
			}
			host, good := cleanHost(h)
			nd = &node{host: host, interval: 1, badHost: !good}
			nodes[h] = nd
			order = append(order, h)
		}
		return nd
	}
	err = lines.Each(r, maxLine, func(l []byte, no int, cut bool) {
		n++
		line := string(l)
		h, rest, ok1 := strings.Cut(line, "|")
		sec, text, ok2 := strings.Cut(rest, "|")
		if !ok1 || !ok2 || h == "" || !knownSection(sec) {
			if tagged == 0 && raw.Len() < 64<<20 {
				raw.WriteString(line)
				raw.WriteByte('\n')
			}
			return
		}
		tagged++
		nd := get(h)
		if nd == nil {
			tooMany++
			return
		}
		nd.piece(sec, text, no, cut)
	})
	if err != nil {
		return t, tagged > 0, err
	}
	if tagged == 0 {
		if n == 0 {
			return result.Telemetry{Notes: []string{"the sampler printed nothing"}}, false, nil
		}
		t, err = ReadTool(strings.NewReader(raw.String()), "")
		return t, false, err
	}
	var samples []Sample
	for _, h := range order {
		samples = append(samples, nodes[h].samples()...)
	}
	t.GPUs = Summarise(samples)
	for _, h := range order {
		t.Notes = append(t.Notes, nodes[h].finish(&t, samples)...)
	}
	if tooMany > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d lines of nodes past the first %d named in the log not read", tooMany, maxNodes))
	}
	return t, true, nil
}

func knownSection(s string) bool {
	switch s {
	case "begin", "end", "none", "kernel-log", "xid", "replay-start", "replay-end", secNvsmi, secDCGM, secAMD:
		return true
	}
	return false
}

var (
	startRe    = regexp.MustCompile(`\bstart=(\d+)`)
	intervalRe = regexp.MustCompile(`\binterval_ms=(\d+)`)
)

// piece reads one tagged line of sec: a line sample.sh cut (cutWidth
// bytes or more, or cut by the reader's bound) and the pieces that
// continue it are counted, not read; "@partial TEXT", the last line of a
// stream that ended without its line end, likewise.
func (nd *node) piece(sec, text string, no int, cut bool) {
	if sec == "begin" || sec == "end" {
		nd.line(sec, text, no)
		return
	}
	long := cut || len(text) >= cutWidth
	if _, ok := strings.CutPrefix(text, "@partial "); ok && !long {
		if nd.partial == nil {
			nd.partial = map[string]int{}
		}
		nd.partial[sec]++
		delete(nd.cont, sec)
		return
	}
	if nd.cont[sec] {
		if !long {
			delete(nd.cont, sec)
		}
		return
	}
	if long {
		if nd.cont == nil {
			nd.cont, nd.cut = map[string]bool{}, map[string]int{}
		}
		nd.cont[sec] = true
		nd.cut[sec]++
		return
	}
	nd.line(sec, text, no)
}

func (nd *node) line(sec, text string, no int) {
	switch sec {
	case "begin":
		if m := startRe.FindStringSubmatch(text); m != nil {
			if v, err := strconv.ParseFloat(m[1], 64); err == nil {
				nd.start = v
			}
		}
		if m := intervalRe.FindStringSubmatch(text); m != nil {
			if v, err := strconv.Atoi(m[1]); err == nil && v > 0 {
				nd.interval = float64(v) / 1000
			}
		}
		if f, ok := strings.CutPrefix(text, "@fields "); ok {
			nd.fields = nil
			for _, x := range strings.Split(f, ",") {
				if id, err := strconv.Atoi(strings.TrimSpace(x)); err == nil {
					nd.fields = append(nd.fields, id)
				}
			}
		}
	case "end":
		nd.ended = true
	case "none":
		nd.none = true
		nd.note(nd.name() + ": " + clean(text))
	case "kernel-log":
		why := text
		if w, ok := strings.CutPrefix(text, "@absent "); ok {
			why = "no " + w + " on PATH"
		} else if w, ok := strings.CutPrefix(text, "@refused "); ok {
			why = w + " (refused: not root, or kernel.dmesg_restrict)"
		}
		nd.note(nd.name() + ": kernel log not read, new XIDs unknown: " + clean(why))
	case "xid":
		if len(nd.xids) >= maxXIDs {
			nd.droppedXIDs++
			return
		}
		nd.xids = append(nd.xids, text)
	case "replay-start", "replay-end":
		nd.replay(sec, text)
	case secNvsmi, secDCGM, secAMD:
		if strings.HasPrefix(text, "@exit ") {
			nd.note(fmt.Sprintf("%s: %s stopped sampling by itself (%s) before the test's steps ended", nd.name(), toolOf(sec), clean(strings.TrimPrefix(text, "@"))))
			return
		}
		switch sec {
		case secNvsmi:
			if nd.nvsmi == nil {
				nd.nvsmi = &nvsmiReader{host: nd.host, rounds: rounds{start: nd.start, interval: nd.interval}}
			}
			nd.nvsmi.line(text, no)
		case secDCGM:
			if nd.dcgm == nil {
				nd.dcgm = &dcgmReader{host: nd.host, ids: nd.fields, rounds: rounds{start: nd.start, interval: nd.interval}}
			}
			nd.dcgm.line(text, no)
		case secAMD:
			if nd.amd == nil {
				nd.amd = &amdReader{host: nd.host, rounds: rounds{start: nd.start, interval: nd.interval}}
			}
			nd.amd.line(text, no)
		}
	}
}

func toolOf(sec string) string {
	switch sec {
	case secNvsmi:
		return "nvidia-smi"
	case secAMD:
		return "amd-smi"
	}
	return "dcgmi"
}

// replay reads nvidia-smi -q -d PCIE's lines: "GPU 00000000:3B:00.0" then
// "Replays Since Reset : 0".
func (nd *node) replay(sec, text string) {
	t := strings.TrimSpace(text)
	if b, ok := strings.CutPrefix(t, "GPU "); ok {
		nd.replayBus = busKey(b)
		return
	}
	_, v, ok := strings.Cut(t, ":")
	if !ok || nd.replayBus == "" || !strings.HasPrefix(t, "Replays Since Reset") {
		return
	}
	c, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return
	}
	m := &nd.replayStart
	if sec == "replay-end" {
		m = &nd.replayEnd
	}
	if *m == nil {
		*m = map[string]int64{}
	}
	(*m)[nd.replayBus] = c
}

func (nd *node) readings() []Reading {
	var out []Reading
	if nd.nvsmi != nil {
		out = append(out, nd.nvsmi.out)
	}
	if nd.dcgm != nil {
		out = append(out, nd.dcgm.out)
	}
	if nd.amd != nil {
		out = append(out, nd.amd.out)
	}
	return out
}

func (nd *node) samples() []Sample {
	var out []Sample
	for _, r := range nd.readings() {
		out = append(out, r.Samples...)
	}
	return out
}

// finish adds what the node's end says to t's GPUs (replays, XIDs) and
// returns its notes.
func (nd *node) finish(t *result.Telemetry, samples []Sample) []string {
	notes := nd.notes
	if nd.droppedNotes > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d more notes of the sampler not kept", nd.name(), nd.droppedNotes))
	}
	if nd.badHost {
		notes = append(notes, nd.name()+": the log's host name is not letters, digits and -_.: (at most 253 bytes): refused, its GPUs are the planned node's")
	}
	for _, sec := range []string{secNvsmi, secDCGM, secAMD, "replay-start", "replay-end", "xid", "kernel-log", "none"} {
		what := sec
		if sec == secNvsmi || sec == secDCGM || sec == secAMD {
			what = toolOf(sec) + " output"
		}
		if c := nd.cut[sec]; c > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d lines of %s of %d bytes or more cut and not read (a stream without line ends?)", nd.name(), c, what, cutWidth))
		}
		if c := nd.partial[sec]; c > 0 {
			notes = append(notes, fmt.Sprintf("%s: %s ended mid-line: its last line not read", nd.name(), what))
		}
	}
	if nd.droppedXIDs > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d kernel-log XID lines past the first %d not read", nd.name(), nd.droppedXIDs, maxXIDs))
	}
	for _, x := range []struct {
		rd   *Reading
		tool string
	}{{rdOf(nd.nvsmi), "nvidia-smi"}, {rdOfD(nd.dcgm), "dcgmi"}, {rdOfA(nd.amd), "amd-smi"}} {
		if x.rd != nil && x.rd.Unparsed > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d lines of %s output could not be read (first: %s)", nd.name(), x.rd.Unparsed, x.tool, clean(x.rd.FirstUnparsed)))
		}
		if x.rd != nil && x.rd.Dropped > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d samples of %s past the first %d not kept: ranges, counts and series are of the first", nd.name(), x.rd.Dropped, x.tool, maxSamples))
		}
		if x.rd != nil && x.rd.Refused > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d values of %s output dropped (first: %s)", nd.name(), x.rd.Refused, x.tool, x.rd.FirstRefused))
		}
	}
	bus := map[string]string{} // busKey -> GPU of this host
	for _, s := range samples {
		if s.Host == nd.host && s.BusID != "" {
			bus[busKey(s.BusID)] = s.GPU
		}
	}
	gpu := func(g string) *result.GPUTelemetry {
		for i := range t.GPUs {
			if t.GPUs[i].Host == nd.host && t.GPUs[i].GPU == g {
				return &t.GPUs[i]
			}
		}
		return nil
	}
	keys := make([]string, 0, len(nd.replayEnd))
	for k := range nd.replayEnd {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		end := nd.replayEnd[k]
		start, ok := nd.replayStart[k]
		if !ok || end <= start {
			continue
		}
		msg := fmt.Sprintf("PCIe replays rose from %d to %d", start, end)
		if g := gpu(bus[k]); g != nil && bus[k] != "" {
			g.NewErrors = append(g.NewErrors, msg)
		} else {
			notes = append(notes, fmt.Sprintf("%s: GPU at %s: %s", nd.name(), k, msg))
		}
	}
	for _, x := range nd.xids {
		k := xidBus(x)
		if g := gpu(bus[k]); k != "" && bus[k] != "" && g != nil {
			g.NewErrors = append(g.NewErrors, "kernel log: "+clean(x))
		} else {
			notes = append(notes, nd.name()+": kernel log, naming no GPU sampled: "+clean(x))
		}
	}
	sampled := false
	for _, r := range nd.readings() {
		sampled = sampled || len(r.Samples) > 0
	}
	if !sampled && !nd.none {
		said := ""
		for _, r := range nd.readings() {
			if r.Before != "" && said == "" {
				said = " (it printed: " + clean(r.Before) + ")"
			}
		}
		notes = append(notes, nd.name()+": the sampler read no sample"+said)
	}
	if !nd.ended {
		notes = append(notes, nd.name()+": the log ends without the sampler's end line (it was killed, not stopped by TERM, or its log was cut): errors at the end unknown")
	}
	return notes
}

// name is how notes name the node: its host, or a stand-in for a host
// name refused.
func (nd *node) name() string {
	if nd.badHost {
		return "(host name refused)"
	}
	return nd.host
}

// maxHost bounds a host name: DNS's 253 bytes.
const maxHost = 253

// cleanHost returns h when it is a host name results may carry (1 to
// maxHost bytes of letters, digits and -_.:), ok false and "" else: the
// name a node gives itself is a value of the node, not to be trusted with
// escape sequences or markup in results.json and the reports.
func cleanHost(h string) (string, bool) {
	if len(h) > maxHost || !identOK(h) {
		return "", false
	}
	return h, true
}

// identOK reports whether v is a non-empty identity value (host, uuid,
// serial, PCI address) of letters, digits and -_.: only.
func identOK(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// maxQuoted bounds a tool's text quoted in a note or an error.
const maxQuoted = 300

// clean makes a tool's text fit for a note: blanks around it trimmed, at
// most maxQuoted bytes, control characters (ESC of a terminal sequence,
// CR, BEL) as Go escapes ("\x1b"), invalid UTF-8 as U+FFFD.
func clean(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxQuoted {
		s = s[:maxQuoted] + "..."
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if unicode.IsGraphic(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRuneToGraphic(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func rdOf(r *nvsmiReader) *Reading {
	if r == nil {
		return nil
	}
	return &r.out
}

func rdOfD(r *dcgmReader) *Reading {
	if r == nil {
		return nil
	}
	return &r.out
}

func rdOfA(r *amdReader) *Reading {
	if r == nil {
		return nil
	}
	return &r.out
}

// busKey normalises a PCI address to domain:bus:device in lower-case hex
// without leading zeros of the domain: nvidia-smi prints
// "00000000:3B:00.0", the kernel's XID lines "PCI:0000:3b:00".
func busKey(a string) string {
	a = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(a), "PCI:")))
	a, _, _ = strings.Cut(a, ".")
	parts := strings.Split(a, ":")
	if len(parts) == 2 {
		parts = append([]string{"0"}, parts...)
	}
	if len(parts) != 3 {
		return ""
	}
	var v [3]uint64
	for i, p := range parts {
		x, err := strconv.ParseUint(p, 16, 32)
		if err != nil {
			return ""
		}
		v[i] = x
	}
	return fmt.Sprintf("%x:%02x:%02x", v[0], v[1], v[2])
}

// xidRe finds the GPU of a kernel XID line: "NVRM: Xid (PCI:0000:3b:00):
// 79, pid=..., GPU has fallen off the bus."
var xidRe = regexp.MustCompile(`Xid \((PCI:[0-9A-Fa-f:.]+)\)`)

func xidBus(line string) string {
	m := xidRe.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return busKey(m[1])
}

// ReadTool reads a tool's own output as people keep it (nvidia-smi
// --query-gpu CSV, dcgmi dmon's table, amd-smi monitor's table), of host:
// whichever of ReadNvidiaSMI, ReadDCGM and ReadAMDSMI reads samples from
// it. A Telemetry without GPUs, and a note saying so, when none does. The
// error is r's.
func ReadTool(r io.Reader, host string) (result.Telemetry, error) {
	data, err := io.ReadAll(io.LimitReader(r, 256<<20))
	if err != nil {
		return result.Telemetry{}, err
	}
	type try struct {
		tool string
		read func() (Reading, error)
	}
	best, bestTool := Reading{}, ""
	for _, t := range []try{
		{"nvidia-smi", func() (Reading, error) { return ReadNvidiaSMI(strings.NewReader(string(data)), host) }},
		{"dcgmi", func() (Reading, error) { return ReadDCGM(strings.NewReader(string(data)), host, nil) }},
		{"amd-smi", func() (Reading, error) { return ReadAMDSMI(strings.NewReader(string(data)), host) }},
	} {
		rd, err := t.read()
		if err != nil {
			return result.Telemetry{}, err
		}
		if len(rd.Samples) > len(best.Samples) {
			best, bestTool = rd, t.tool
		}
	}
	if bestTool == "" {
		return result.Telemetry{Notes: []string{"no sample of nvidia-smi, dcgmi or amd-smi in it"}}, nil
	}
	t := result.Telemetry{GPUs: Summarise(best.Samples)}
	if best.Unparsed > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d lines of %s output could not be read (first: %s)", best.Unparsed, bestTool, clean(best.FirstUnparsed)))
	}
	if best.Dropped > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d samples of %s past the first %d not kept: ranges, counts and series are of the first", best.Dropped, bestTool, maxSamples))
	}
	if best.Refused > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d values of %s output dropped (first: %s)", best.Refused, bestTool, best.FirstRefused))
	}
	return t, nil
}
