package telemetry

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

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
}

// ReadLog reads one log of sample.sh (the lines of one node, or of
// several interleaved) into the telemetry of its GPUs. sampler is false
// when no line of r is the sampler's ("HOST|SECTION|TEXT"): then r is
// read as a tool's own output (ReadTool). The error is r's.
func ReadLog(r io.Reader) (t result.Telemetry, sampler bool, err error) {
	nodes := map[string]*node{}
	var order []string
	var raw strings.Builder // the lines, should r be no sampler's log
	tagged, n := 0, 0
	get := func(h string) *node {
		nd, ok := nodes[h]
		if !ok {
			nd = &node{host: h, interval: 1}
			nodes[h] = nd
			order = append(order, h)
		}
		return nd
	}
	err = lines.Each(r, maxLine, func(l []byte, no int, _ bool) {
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
		get(h).line(sec, text, no)
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
		nd.notes = append(nd.notes, nd.host+": "+text)
	case "kernel-log":
		why := text
		if w, ok := strings.CutPrefix(text, "@absent "); ok {
			why = "no " + w + " on PATH"
		} else if w, ok := strings.CutPrefix(text, "@refused "); ok {
			why = w + " (refused: not root, or kernel.dmesg_restrict)"
		}
		nd.notes = append(nd.notes, nd.host+": kernel log not read, new XIDs unknown: "+why)
	case "xid":
		nd.xids = append(nd.xids, text)
	case "replay-start", "replay-end":
		nd.replay(sec, text)
	case secNvsmi, secDCGM, secAMD:
		if strings.HasPrefix(text, "@exit ") {
			nd.notes = append(nd.notes, fmt.Sprintf("%s: %s stopped sampling by itself (%s) before the test's steps ended", nd.host, toolOf(sec), strings.TrimPrefix(text, "@")))
			return
		}
		switch sec {
		case secNvsmi:
			if nd.nvsmi == nil {
				nd.nvsmi = &nvsmiReader{host: nd.host, start: nd.start, interval: nd.interval}
			}
			nd.nvsmi.line(text, no)
		case secDCGM:
			if nd.dcgm == nil {
				nd.dcgm = &dcgmReader{host: nd.host, ids: nd.fields, start: nd.start, interval: nd.interval}
			}
			nd.dcgm.line(text, no)
		case secAMD:
			if nd.amd == nil {
				nd.amd = &amdReader{host: nd.host, start: nd.start, interval: nd.interval}
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
	for _, x := range []struct {
		rd   *Reading
		tool string
	}{{rdOf(nd.nvsmi), "nvidia-smi"}, {rdOfD(nd.dcgm), "dcgmi"}, {rdOfA(nd.amd), "amd-smi"}} {
		if x.rd != nil && x.rd.Unparsed > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d lines of %s output could not be read (first: %s)", nd.host, x.rd.Unparsed, x.tool, x.rd.FirstUnparsed))
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
			notes = append(notes, fmt.Sprintf("%s: GPU at %s: %s", nd.host, k, msg))
		}
	}
	for _, x := range nd.xids {
		k := xidBus(x)
		if g := gpu(bus[k]); k != "" && bus[k] != "" && g != nil {
			g.NewErrors = append(g.NewErrors, "kernel log: "+strings.TrimSpace(x))
		} else {
			notes = append(notes, nd.host+": kernel log, naming no GPU sampled: "+strings.TrimSpace(x))
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
				said = " (it printed: " + r.Before + ")"
			}
		}
		notes = append(notes, nd.host+": the sampler read no sample"+said)
	}
	if !nd.ended {
		notes = append(notes, nd.host+": the log ends without the sampler's end line (it was killed, not stopped by TERM, or its log was cut): errors at the end unknown")
	}
	return notes
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
		t.Notes = append(t.Notes, fmt.Sprintf("%d lines of %s output could not be read (first: %s)", best.Unparsed, bestTool, best.FirstUnparsed))
	}
	return t, nil
}
