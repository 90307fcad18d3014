package hostlink

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/plugins/internal/textdiag"
)

// tbTitleRE reads the title above each table of TransferBench's p2p
// preset (PeerToPeerPreset in client/include/Presets/PeerToPeer.hpp, and
// RunPeerToPeerBenchmarks in src/TransferBench.cpp before the client
// split): "Unidirectional copy peak bandwidth GB/s [Local read / Remote
// write] (GPU-Executor: GFX)". rocm_bandwidth_test's "Unidirectional copy
// peak bandwidth GB/s" has no bracket and is not matched.
var tbTitleRE = regexp.MustCompile(`^(Uni|Bi)directional copy peak bandwidth GB/s \[(Local|Remote) read / (?:Local|Remote) write\](?: \(GPU-Executor: (GFX|DMA)\))?`)

// tbVersionRE reads the banner "TransferBench v1.62.00" (also
// "TransferBench v1.66.02 (with NIC support)").
var tbVersionRE = regexp.MustCompile(`^TransferBench (v\d+(?:\.\d+)*\S*)`)

// tbDevRE splits a header's or row's device names: "CPU 00", "GPU 07".
var tbDevRE = regexp.MustCompile(`(CPU|GPU) (\d{1,4})`)

// sniffTransferBench says whether head, the first KiB or so of a file,
// looks like TransferBench's p2p preset output: its banner, the "Bytes
// Per Direction" line or a p2p table title.
func sniffTransferBench(head []byte) bool {
	for _, l := range strings.Split(string(head), "\n") {
		l = strings.TrimSpace(l[textdiag.PrefixLen(l):])
		switch {
		case tbVersionRE.MatchString(l),
			strings.HasPrefix(l, "Bytes Per Direction"),
			tbTitleRE.MatchString(l),
			strings.HasPrefix(l, "[P2P Related]"):
			return true
		}
	}
	return false
}

// tbTable is one table being read.
type tbTable struct {
	bidir    bool
	executor string // "gfx" | "dma"
	line     int
	cols     []tbDev
	rows     int // data rows read
	want     int // data rows a complete table has (0: unknown)
	lastLine int
	na       hlCells
}

type tbDev struct {
	kind string // "CPU" | "GPU"
	idx  string // "0", "7": without the leading zeros, as nvbandwidth and the GPU labels of other plugins
}

// parseTransferBench reads TransferBench's p2p preset output (text, or
// its OUTPUT_TO_CSV form) and returns one metric per cell (see metricBW):
// rows are the source, columns the destination. A unidirectional table's
// "SRC ->" row gives "bw" with mode=unidirectional; a bidirectional
// table's "SRC ->" row the forward copy (stream=1) and its "SRC <-" row
// the copy from the column back to the row that ran with it (stream=2),
// both "bw" with mode=bidirectional, and its "SRC <->" row their sum,
// "bw_total". CPU -> GPU cells are
// direction=h2d, GPU -> CPU direction=d2h (with gpu and cpu, the NUMA
// node), GPU -> GPU src and dst, a GPU's copy within its own memory
// direction=local, CPU -> CPU direction=h2h with cpu and dst_cpu. Size is
// the "Bytes Per Direction". SHOW_ITERATIONS's min/max/sd rows and the
// Averages lines give no metric.
//
// Checks: "p2p paths <mode>" fails when a GPU -> GPU cell off the
// diagonal is N/A (TransferBench prints N/A for a bandwidth of zero; it
// never skips a GPU pair), naming the pairs. N/A on a bidirectional
// table's diagonal is no measurement; N/A in a CPU row or column is a
// note (TransferBench skips a NUMA node without CPUs, and CPU executors
// on NVIDIA builds). A table cut short (fewer rows than its devices) or a
// file without any table sets Error with a diagnostic naming file:line;
// what was parsed is kept. The returned error is for a file that cannot
// be read.
func parseTransferBench(path string) (result.Parsed, error) {
	data, err := hlReadFile(path)
	if err != nil {
		return result.Parsed{Error: err.Error()}, err
	}
	return tbParse(data, filepath.Base(path)), nil
}

func tbParse(data []byte, file string) result.Parsed {
	s := newNvbState(file)
	br := bufio.NewReaderSize(bytes.NewReader(data), 64<<10)
	var (
		line   int
		size   int64
		tab    *tbTable
		tables int
	)
	closeTable := func(at int) {
		if tab == nil {
			return
		}
		mode := tbMode(tab.bidir)
		if tab.rows == 0 {
			s.problem(nvbMax(tab.lastLine, tab.line), fmt.Sprintf("the %s table (line %d) has no rows: the output was cut short or garbled", mode, tab.line))
		} else if tab.want > 0 && tab.rows < tab.want {
			s.problem(tab.lastLine, fmt.Sprintf("the %s table (line %d) has %d of its %d rows: the output was cut short", mode, tab.line, tab.rows, tab.want))
		} else {
			ck := result.Check{Name: "p2p paths " + mode, OK: len(tab.na.items) == 0}
			if !ck.OK {
				ck.Message = fmt.Sprintf("%s: no bandwidth (N/A) for %s in the %s table (line %d)", tab.na.at(file, tab.line), tab.na.list(16), mode, tab.line)
			}
			if tbGPUs(tab.cols) > 1 {
				s.p.Checks = append(s.p.Checks, ck)
			} else if !ck.OK {
				s.p.Checks = append(s.p.Checks, ck)
			}
		}
		tab = nil
	}
	for {
		raw, read, err := textdiag.ReadLine(br, hlLineMax)
		if read {
			line++
			l := strings.ToValidUTF8(raw[textdiag.PrefixLen(raw):], "?")
			t := strings.TrimSpace(l)
			switch {
			case t == "":
			case tbVersionRE.MatchString(t):
				s.info("transferbenchversion", tbVersionRE.FindStringSubmatch(t)[1])
			case strings.HasPrefix(t, "Bytes Per Direction"):
				v := strings.Trim(strings.TrimSpace(strings.TrimPrefix(t, "Bytes Per Direction")), ",")
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
					size = n
				} else {
					s.problem(line, fmt.Sprintf("bytes per direction %q is not a size", textdiag.Clip(v, 40)))
				}
			case tbTitleRE.MatchString(t):
				closeTable(line)
				m := tbTitleRE.FindStringSubmatch(t)
				tab = &tbTable{bidir: m[1] == "Bi", executor: strings.ToLower(nvbOr(m[3], "GFX")), line: line}
				tables++
			case tab != nil && tab.cols == nil && strings.Contains(t, "\\"):
				// "SRC+EXE\DST    CPU 00 ... GPU 07" (or "SRC\DST").
				for _, m := range tbDevRE.FindAllStringSubmatch(t, 4096) {
					tab.cols = append(tab.cols, tbDev{m[1], tbIdx(m[2])})
				}
				if len(tab.cols) == 0 {
					s.problem(line, "p2p table header names no CPU or GPU")
					tab = nil
					break
				}
				tab.want = len(tab.cols)
				if tab.bidir {
					tab.want *= 3
				}
			case tab != nil && tab.cols != nil && (strings.HasPrefix(t, "CPU ") || strings.HasPrefix(t, "GPU ")):
				s.tbRow(tab, t, line, size)
			case strings.HasPrefix(t, "Averages") || strings.HasPrefix(t, "CPU->CPU"):
				// The averages under a table: its end.
				closeTable(line)
			case strings.HasPrefix(t, "[ERROR]") || strings.Contains(t, "HIP Error") || strings.HasPrefix(t, "[WARN]"):
				if strings.HasPrefix(t, "[WARN]") {
					s.warns.Add(line, t)
					break
				}
				closeTable(line)
				s.problem(line, "TransferBench stopped: "+t)
			}
		}
		if err != nil {
			break
		}
	}
	closeTable(line)
	if (tables == 0 || len(s.p.Metrics) == 0 && len(s.p.Checks) == 0) && s.errs.Len() == 0 {
		s.problem(0, "no TransferBench p2p table (\"Unidirectional copy peak bandwidth GB/s [...]\") in the output")
	}
	return s.done()
}

func tbMode(bidir bool) string {
	if bidir {
		return "bidirectional"
	}
	return "unidirectional"
}

func tbIdx(s string) string {
	if n, err := strconv.Atoi(s); err == nil {
		return strconv.Itoa(n)
	}
	return s
}

func tbGPUs(devs []tbDev) int {
	n := 0
	for _, d := range devs {
		if d.kind == "GPU" {
			n++
		}
	}
	return n
}

// tbRow reads "GPU 03  ->  53.83 ... N/A ..." (or "<-", "<->", and
// SHOW_ITERATIONS's "min", "max", "sd" rows, which are skipped).
func (s *nvbState) tbRow(tab *tbTable, t string, line int, size int64) {
	f := strings.FieldsFunc(t, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' })
	if len(f) < 3 {
		s.problem(line, "p2p table row cut short: "+textdiag.Clip(t, 80))
		return
	}
	src := tbDev{f[0], tbIdx(f[1])}
	if _, err := strconv.Atoi(f[1]); err != nil {
		s.problem(line, "p2p table row names no device: "+textdiag.Clip(t, 80))
		return
	}
	kind := f[2]
	switch kind {
	case "->", "<-", "<->":
	case "min", "max", "sd":
		return
	default:
		s.problem(line, "p2p table row not understood: "+textdiag.Clip(t, 80))
		return
	}
	cells := f[3:]
	if len(cells) != len(tab.cols) {
		s.problem(line, fmt.Sprintf("p2p table row %s %s %s has %d cells for %d columns: cut short or garbled", f[0], f[1], kind, len(cells), len(tab.cols)))
		return
	}
	tab.rows++
	tab.lastLine = line
	for i, c := range cells {
		v, ok := hlCell(c)
		if !ok {
			s.problem(line, fmt.Sprintf("p2p table cell %q is not a number or N/A", textdiag.Clip(c, 40)))
			continue
		}
		dst := tab.cols[i]
		from, to := src, dst
		if kind == "<-" {
			from, to = dst, src
		}
		name := metricBW
		if kind == "<->" {
			name = metricBWTotal
		}
		labels := map[string]string{"mode": tbMode(tab.bidir), "executor": tab.executor}
		// Both rows of a device pair's bidirectional run, and the other
		// pair's, measure the same direction: the stream tells them apart.
		switch kind {
		case "->":
			if tab.bidir {
				labels["stream"] = "1"
			}
		case "<-":
			labels["stream"] = "2"
		}
		switch {
		case from.kind == "CPU" && to.kind == "GPU":
			labels["direction"], labels["gpu"], labels["cpu"] = "h2d", to.idx, from.idx
		case from.kind == "GPU" && to.kind == "CPU":
			labels["direction"], labels["gpu"], labels["cpu"] = "d2h", from.idx, to.idx
		case from.kind == "GPU" && from == to:
			labels["direction"], labels["gpu"] = "local", from.idx
		case from.kind == "GPU":
			labels["src"], labels["dst"] = from.idx, to.idx
		default:
			labels["direction"], labels["cpu"], labels["dst_cpu"] = "h2h", from.idx, to.idx
		}
		if math.IsNaN(v) {
			switch {
			case src == dst:
				// A device with itself in a bidirectional table: skipped.
			case src.kind == "GPU" && dst.kind == "GPU":
				if kind != "<->" {
					tab.na.add(line, fmt.Sprintf("GPU %s %s GPU %s", src.idx, kind, dst.idx))
				}
			default:
				s.infos.Add(line, fmt.Sprintf("%s %s %s %s %s: N/A (TransferBench skipped it: a NUMA node without CPUs, or a CPU executor on an NVIDIA build)", src.kind, src.idx, kind, dst.kind, dst.idx))
			}
			continue
		}
		s.addMetric(result.Metric{Name: name, Value: v, Unit: unitGBs, Size: size, Labels: labels})
	}
}

func nvbMax(a, b int) int {
	if a > b {
		return a
	}
	return b
}
