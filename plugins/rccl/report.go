package rccl

import (
	"bytes"
	"fmt"
	"io"
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
// and in-place parts. It never panics; it returns an error when the file
// holds no result object, together with what was read.
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
		cycle, size int64
		typ, redop  string
	}
	index := map[key]int{}
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
		k := key{int64(cycle), int64(size), f["type"], f["redop"]}
		ri, seen := index[k]
		if !seen || placed(out.Rows[ri], inPlace != 0) {
			out.Rows = append(out.Rows, nccltests.Row{Size: int64(size), Type: f["type"], Redop: f["redop"], Root: -1})
			ri = len(out.Rows) - 1
			index[k] = ri
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
			out.Rows[ri].InPlace = pf
		} else {
			out.Rows[ri].OutOfPlace = pf
		}
		if n, ok := num("ranks"); ok && out.RankCount == 0 && n > 0 && n < 1<<30 {
			out.RankCount = int(n)
		}
		if c := collective(f["name"]); c != "" && out.Collective == "" {
			out.Collective = c
		}
	}
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
