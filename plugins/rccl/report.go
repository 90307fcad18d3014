package rccl

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/nccltests"
	"github.com/gpuaccept/gpuaccept/plugins/internal/textdiag"
)

// reportMax bounds the report file read, in bytes: a sweep of every size,
// type and op of many cycles is well below it.
const reportMax = 64 << 20

// ParseReport reads the file rccl-tests' Reporter writes with "-x FILE -Z
// json" (-X FILE in later versions): a JSON list with one flat object per
// message size and placement, e.g.
//
//	{"numCycle":0, "name":"AllReduce", "nodes":2, "ranks":16, "ranksPerNode":8,
//	 "gpusPerRank":1, "size":1024, "type":"float", "redop":"sum", "inPlace":0,
//	 "time":42.140000, "algBw":0.020000, "busBw":0.050000, "wrong":"0"}
//
// (src/common.cu Reporter::addResult; builds without MPI write "gpus"
// instead of the four scope fields). Numbers are written with
// std::to_string, so "nan" and "inf" occur and the file is not always valid
// JSON: objects are read pair by pair, not with encoding/json. Objects of
// the same cycle, size, type and op become one Row with its out-of-place
// and in-place parts, and the rows of later cycles are folded into the
// first cycle's as they are read (nccltests.RowSet: the worst cycle's
// values, Stats over all). It never panics; it returns an error when the
// file holds no result object, together with what was read.
func ParseReport(r io.Reader, name string) (*nccltests.Output, error) {
	out := &nccltests.Output{Format: "rccl-json", OutOfBounds: -1, AvgBusBW: -1}
	data, err := io.ReadAll(io.LimitReader(r, reportMax+1))
	if err != nil {
		return out, fmt.Errorf("read rccl-tests report %s: %w", name, err)
	}
	if len(data) > reportMax {
		out.Errors = append(out.Errors, nccltests.Diag{Text: fmt.Sprintf("report larger than %d bytes: the rest was not read", reportMax)})
		data = data[:reportMax]
	}
	type key struct {
		size       int64
		typ, redop string
	}
	// pending are the rows of the cycle being read, by key: a row goes to
	// set once its cycle is over or both its parts are in.
	type pend struct {
		row   nccltests.Row
		cycle int64
		seq   int
	}
	pending := map[key]*pend{}
	var set nccltests.RowSet
	seq := 0
	objects := 0
	for len(data) > 0 {
		i := bytes.IndexByte(data, '{')
		if i < 0 {
			break
		}
		j := bytes.IndexByte(data[i:], '}')
		if j < 0 {
			out.Errors = append(out.Errors, nccltests.Diag{Text: fmt.Sprintf("%s: object %d is cut short: report truncated", name, objects+1)})
			break
		}
		obj := data[i+1 : i+j]
		data = data[i+j+1:]
		objects++
		f := reportFields(obj)
		num := func(k string) (float64, bool) {
			v, ok := f[k]
			if !ok {
				return 0, false
			}
			x, err := strconv.ParseFloat(v, 64)
			return x, err == nil
		}
		size, okSize := num("size")
		inPlace, okPlace := num("inPlace")
		tm, okT := num("time")
		alg, okA := num("algBw")
		bus, okB := num("busBw")
		if !okSize || !okPlace || !okT || !okA || !okB || size < 0 || size > 1<<62 {
			out.Warnings = append(out.Warnings, nccltests.Diag{Text: fmt.Sprintf("%s: object %d not understood (want size, inPlace, time, algBw, busBw): %s", name, objects, clip(string(obj)))})
			continue
		}
		cycle, _ := num("numCycle")
		k := key{int64(size), f["type"], f["redop"]}
		p := pending[k]
		if p != nil && (p.cycle != int64(cycle) || placed(p.row, inPlace != 0)) {
			set.Add(p.row)
			p = nil
		}
		if p == nil {
			p = &pend{row: nccltests.Row{Size: int64(size), Type: f["type"], Redop: f["redop"], Root: -1}, cycle: int64(cycle), seq: seq}
			seq++
			pending[k] = p
		}
		pf := &nccltests.Perf{Time: tm, AlgBW: alg, BusBW: bus, Wrong: -1}
		if w, ok := f["wrong"]; ok && w != "N/A" {
			if n, err := strconv.ParseInt(w, 10, 64); err == nil {
				pf.Wrong = n
			} else {
				out.Warnings = append(out.Warnings, nccltests.Diag{Text: fmt.Sprintf("%s: object %d: wrong %q is no count", name, objects, clip(w))})
			}
		}
		if inPlace != 0 {
			p.row.InPlace = pf
		} else {
			p.row.OutOfPlace = pf
		}
		if n, ok := num("ranks"); ok && out.RankCount == 0 && n > 0 && n < 1<<30 {
			out.RankCount = int(n)
		}
		if c := collective(f["name"]); c != "" && out.Collective == "" {
			out.Collective = c
		}
	}
	left := make([]*pend, 0, len(pending))
	for _, p := range pending {
		left = append(left, p)
	}
	sort.Slice(left, func(i, j int) bool { return left[i].seq < left[j].seq })
	for _, p := range left {
		set.Add(p.row)
	}
	out.Rows = set.Rows()
	if len(out.Rows) == 0 {
		return out, fmt.Errorf("rccl-tests report %s: no result object", name)
	}
	return out, nil
}

// placed reports whether the row already holds the placement's part.
func placed(r nccltests.Row, inPlace bool) bool {
	if inPlace {
		return r.InPlace != nil
	}
	return r.OutOfPlace != nil
}

// reportFields splits the inside of one flat object into its key/value
// pairs, strings unquoted.
func reportFields(obj []byte) map[string]string {
	f := map[string]string{}
	for _, pair := range strings.Split(string(obj), ",") {
		k, v, ok := strings.Cut(pair, ":")
		if !ok {
			continue
		}
		f[unquote(k)] = unquote(v)
	}
	return f
}

func unquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

func clip(s string) string { return textdiag.Clip(s, 200) }

// collective maps the report's name ("AllReduce", "all_reduce_perf",
// "allreduce") to the test name, or "" when it names none of Collectives.
func collective(name string) string {
	n := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), "_perf"))
	n = strings.NewReplacer("_", "", "-", "", " ", "").Replace(n)
	for _, c := range Collectives {
		if strings.ReplaceAll(c, "_", "") == n {
			return c
		}
	}
	return ""
}
