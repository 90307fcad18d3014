package signoff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/strictjson"
)

// maxDiffs is how many differences of one file are listed; the rest are
// counted.
const maxDiffs = 20

// reDerived is how a difference names the value verify expects.
const reDerived = "re-derived from raw/ and the journal"

// valueDiffs compares the JSON document have (a results.json as found)
// with want (re-derived), value by value: one line per difference, naming
// its path: tests[nccl.all_reduce].metrics[busbw[in-place] at 4 GiB
// redop=sum type=float].value. Lists of named things (tests, metrics,
// checks, localisations, runs, suspects) are matched by name, others by
// position.
func valueDiffs(have, want []byte) ([]string, error) {
	decode := func(data []byte) (any, error) {
		// A key given twice: Go keeps the last value, other readers the
		// first.
		if err := strictjson.DuplicateKey(data); errors.Is(err, strictjson.ErrDuplicateKey) {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("not JSON: %w", err)
		}
		// A second document appended is read by some readers and not by
		// others: one file, one run.
		end := dec.InputOffset()
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("more than one JSON document: something follows the first, at byte %d", end)
		}
		return v, nil
	}
	h, err := decode(have)
	if err != nil {
		return nil, err
	}
	w, err := decode(want)
	if err != nil {
		return nil, fmt.Errorf("re-derived results are not JSON: %w", err)
	}
	var out []string
	walk("", h, w, &out)
	return capped(out), nil
}

func capped(out []string) []string {
	if len(out) > maxDiffs {
		n := len(out) - maxDiffs
		out = append(out[:maxDiffs:maxDiffs], fmt.Sprintf("and %d more differences", n))
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func walk(path string, have, want any, out *[]string) {
	switch h := have.(type) {
	case map[string]any:
		w, ok := want.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range h {
			keys[k] = true
		}
		for k := range w {
			keys[k] = true
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			hv, hok := h[k]
			wv, wok := w[k]
			switch {
			case !wok:
				*out = append(*out, fmt.Sprintf("%s is %s, the re-derived run has none", join(path, k), show(hv)))
			case !hok:
				*out = append(*out, fmt.Sprintf("%s is missing, %s: %s", join(path, k), reDerived, show(wv)))
			default:
				walk(join(path, k), hv, wv, out)
			}
		}
		return
	case []any:
		w, ok := want.([]any)
		if !ok {
			break
		}
		hl, wl := labels(h), labels(w)
		if hl == nil || wl == nil {
			for i := 0; i < len(h) || i < len(w); i++ {
				p := fmt.Sprintf("%s[%d]", path, i)
				switch {
				case i >= len(w):
					*out = append(*out, fmt.Sprintf("%s is %s, the re-derived run has none", p, show(h[i])))
				case i >= len(h):
					*out = append(*out, fmt.Sprintf("%s is missing, %s: %s", p, reDerived, show(w[i])))
				default:
					walk(p, h[i], w[i], out)
				}
			}
			return
		}
		at := map[string]int{}
		for i, l := range wl {
			at[l] = i
		}
		seen := map[string]bool{}
		for i, l := range hl {
			seen[l] = true
			p := path + "[" + l + "]"
			if j, ok := at[l]; ok {
				walk(p, h[i], w[j], out)
			} else {
				*out = append(*out, p+" is not in the re-derived run")
			}
		}
		for j, l := range wl {
			if !seen[l] {
				*out = append(*out, fmt.Sprintf("%s[%s] is missing, %s: %s", path, l, reDerived, show(w[j])))
			}
		}
		return
	}
	if !sameScalar(have, want) {
		*out = append(*out, fmt.Sprintf("%s is %s, %s: %s", path, show(have), reDerived, show(want)))
	}
}

func sameScalar(a, b any) bool {
	an, aok := a.(json.Number)
	bn, bok := b.(json.Number)
	if aok && bok {
		af, aerr := strconv.ParseFloat(string(an), 64)
		bf, berr := strconv.ParseFloat(string(bn), 64)
		if aerr == nil && berr == nil {
			return af == bf
		}
		return an == bn
	}
	return reflect.DeepEqual(a, b)
}

// show renders a value as compact JSON, cut at 120 bytes.
func show(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return cut(string(data), 120)
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// labels names each element of a list of named things: a metric by its
// name, placement, size and labels ("busbw[in-place] at 4 GiB redop=sum
// type=float"), a test or check by its name, a localisation by its test,
// a localisation's run by round and hosts, a suspect by host and HCA; a
// repeated name gets " #2", ... nil when some element has no name (the
// list is then compared by position).
func labels(list []any) []string {
	out := make([]string, len(list))
	n := map[string]int{}
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil
		}
		l := label(m)
		if l == "" {
			return nil
		}
		n[l]++
		if n[l] > 1 {
			l += fmt.Sprintf(" #%d", n[l])
		}
		out[i] = l
	}
	return out
}

func label(m map[string]any) string {
	str := func(k string) string { s, _ := m[k].(string); return s }
	switch {
	case str("name") != "":
		l := str("name")
		ls, _ := m["labels"].(map[string]any)
		if p, ok := ls["placement"].(string); ok {
			l += "[" + p + "]"
		}
		if n, ok := m["size"].(json.Number); ok {
			if size, err := n.Int64(); err == nil && size > 0 {
				l += " at " + result.FormatBytes(size)
			}
		}
		keys := make([]string, 0, len(ls))
		for k := range ls {
			if k != "placement" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			l += fmt.Sprintf(" %s=%v", k, ls[k])
		}
		return l
	case str("test") != "":
		l := str("test")
		if r, ok := m["round"].(json.Number); ok {
			l += " round " + string(r)
		}
		if hs, ok := m["hosts"].([]any); ok && m["round"] != nil {
			var names []string
			for _, h := range hs {
				names = append(names, fmt.Sprint(h))
			}
			l += " on " + strings.Join(names, ",")
		}
		if nics := str("nics"); nics != "" {
			l += " nics " + nics
		}
		return l
	case str("host") != "" && str("kind") != "":
		l := str("kind") + " " + str("host")
		if h := str("hca"); h != "" {
			l += " " + h
		}
		if p := str("peer"); p != "" {
			l += " <-> " + p
		}
		return l
	}
	return ""
}

// byteDiff says where two renderings of a report part: the first line
// that differs, as found and as re-rendered; "" when they are equal.
func byteDiff(have, want []byte) string {
	if bytes.Equal(have, want) {
		return ""
	}
	hl, wl := bytes.Split(have, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; ; i++ {
		var h, w []byte
		if i < len(hl) {
			h = hl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if i >= len(hl) || i >= len(wl) || !bytes.Equal(h, w) {
			return fmt.Sprintf("from line %d: %q, re-rendered %q", i+1, cut(string(h), 100), cut(string(w), 100))
		}
	}
}
