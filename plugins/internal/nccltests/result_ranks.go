package nccltests

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// How many ranks and nodes a run had is told by several parts of its
// output, none of them always there: published outputs keep a few rank
// lines (ranks 0, 7, 8 and 15 of 16; rank 127 of 128), NCCL_DEBUG=INFO
// prints the communicator's size, the header the ranks per process, and
// the size, count, algbw and busbw columns follow the rank count by the
// formulas of each test (src/<test>.cu, GetCollByteCount and GetBw). Each
// piece of evidence bounds the count; the scope asked for fails when one
// excludes it, passes when they pin it, and is "not verifiable" (a warn)
// otherwise.

// rankBound is one piece of evidence about a count: lo <= n <= hi (hi 0:
// no upper bound), and n a multiple of mult (0: any).
type rankBound struct {
	lo, hi, mult int
	// says states it for messages: "2 distinct rank lines", "at least 128
	// ranks: rank lines up to rank 127".
	says string
}

func (b rankBound) exact() bool { return b.hi > 0 && b.lo == b.hi }

// admits reports whether n fits the bound.
func (b rankBound) admits(n int) bool {
	return n >= b.lo && (b.hi == 0 || n <= b.hi) && (b.mult <= 1 || n%b.mult == 0)
}

// ntTypeSize is the size in bytes of nccl-tests' and rccl-tests' data types
// by the names they print (test_typenames in src/common.cu, old and new).
var ntTypeSize = map[string]int64{
	"int8": 1, "uint8": 1, "char": 1, "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
	"half": 2, "float16": 2, "bfloat16": 2,
	"int32": 4, "uint32": 4, "int": 4, "float": 4, "float32": 4,
	"int64": 8, "uint64": 8, "double": 8, "float64": 8,
}

// perRankCount lists the tests whose rows print the count of one rank's
// part: size = count x ranks x type size (src/all_gather.cu and the others'
// GetCollByteCount, with the size printed as max(sendBytes,
// expectedBytes)).
var perRankCount = map[string]bool{
	"all_gather": true, "reduce_scatter": true, "alltoall": true, "gather": true, "scatter": true, "hypercube": true,
}

// busFactor gives, per test, busbw/algbw as a function of the rank count
// n and its inverse (GetBw in src/<test>.cu); tests whose factor does not
// depend on n (broadcast, reduce, sendrecv) are not listed.
var busFactor = map[string]struct {
	formula string
	limit   float64 // the factor tends to it as n grows
}{
	"all_reduce":     {"2(n-1)/n", 2},
	"all_gather":     {"(n-1)/n", 1},
	"reduce_scatter": {"(n-1)/n", 1},
	"alltoall":       {"(n-1)/n", 1},
}

// rankEvidence gathers what the outputs say about the rank count: the text
// (rank lines, NCCL INFO, header), the JSON (its device list) and the rows
// of src (the JSON's when there is one: unrounded).
func rankEvidence(test string, src, text, js *Output) []rankBound {
	var bs []rankBound
	lines := text != nil && len(text.Ranks) > 0 // bs[0] is the rank lines'
	if lines {
		ids := map[int]bool{}
		top, cut := 0, false
		for _, r := range text.Ranks {
			ids[r.Rank] = true
			top = max(top, r.Rank)
			cut = cut || strings.HasSuffix(r.DeviceName, "...")
		}
		switch {
		case text.RanksCutAt > 0:
			// The list did not end as nccl-tests ends it: the rest of it
			// may have been cut.
			bs = append(bs, rankBound{lo: top + 1, says: fmt.Sprintf("at least %d ranks: rank lines up to rank %d, the list cut at line %d (not ended by nccl-tests' '#' line)", top+1, top, text.RanksCutAt)})
		case !cut && top+1 == len(ids) && ids[0]:
			bs = append(bs, rankBound{lo: len(ids), hi: len(ids), says: fmt.Sprintf("%d distinct rank lines", len(ids))})
		default:
			bs = append(bs, rankBound{lo: top + 1, says: fmt.Sprintf("at least %d ranks: rank lines up to rank %d", top+1, top)})
		}
	}
	if js != nil && js.RankCount > 0 {
		bs = append(bs, rankBound{lo: js.RankCount, hi: js.RankCount, says: fmt.Sprintf("%d ranks in the JSON", js.RankCount)})
	}
	if text != nil && text.NRanks > 0 {
		bs = append(bs, rankBound{lo: text.NRanks, hi: text.NRanks, says: fmt.Sprintf("%d ranks in NCCL's communicator (NCCL INFO nranks %d)", text.NRanks, text.NRanks)})
	}
	for _, o := range []*Output{text, js} {
		if o != nil && o.NThreads > 0 && o.NGPUs > 0 {
			m := o.NThreads * o.NGPUs
			bs = append(bs, rankBound{lo: m, mult: m, says: fmt.Sprintf("a multiple of %d ranks: nThread %d nGpus %d in the header", m, o.NThreads, o.NGPUs)})
			break
		}
	}
	if b, ok := countEvidence(test, src); ok {
		bs = append(bs, b)
	}
	if src.Groups <= 1 {
		if b, ok := factorEvidence(test, src); ok {
			bs = append(bs, b)
		}
	}
	// Rank lines 0..k-1 prove k only when nothing proves more: a page that
	// quotes the first rank lines of a larger run cuts the others.
	if len(bs) > 0 && lines && bs[0].exact() {
		for _, b := range bs[1:] {
			if b.exact() && b.lo > bs[0].lo {
				bs[0] = rankBound{lo: bs[0].lo, says: fmt.Sprintf("at least %d ranks: rank lines 0-%d", bs[0].lo, bs[0].lo-1)}
				break
			}
		}
	}
	return bs
}

// countEvidence derives the rank count from the size and count columns
// of the tests that print one rank's count; every row with a count must
// agree.
func countEvidence(test string, o *Output) (rankBound, bool) {
	if !perRankCount[test] {
		return rankBound{}, false
	}
	n, first := int64(0), Row{}
	for _, r := range o.Rows {
		ts := ntTypeSize[r.Type]
		// Counts past 2^56 would overflow count x type size (to 0, for a
		// division by zero).
		if r.Count <= 0 || r.Count >= 1<<56 || ts == 0 {
			continue
		}
		per := r.Count * ts
		if r.Size%per != 0 || r.Size/per > 1<<24 {
			return rankBound{}, false
		}
		k := r.Size / per
		if n == 0 {
			n, first = k, r
		} else if k != n {
			return rankBound{}, false
		}
	}
	if n == 0 {
		return rankBound{}, false
	}
	return rankBound{lo: int(n), hi: int(n), says: fmt.Sprintf("%d ranks by the size and count columns (%s is %d %s per rank)",
		n, result.FormatBytes(first.Size), first.Count, first.Type)}, true
}

// factorEvidence bounds the rank count by busbw/algbw, within the
// rounding of both numbers, over every row; the row that bounds most
// tightly is named.
func factorEvidence(test string, o *Output) (rankBound, bool) {
	bf, ok := busFactor[test]
	if !ok {
		return rankBound{}, false
	}
	const eps = 1e-9
	lo, hi := 1, 0
	var loAt, hiAt string
	seen := false
	// nccl-tests before ec1b5e2 (2020-06) printed busbw = algbw for
	// all_gather and reduce_scatter (factor 1, algbw over n-1 ranks'
	// data); their outputs have the old error column. Rows that all
	// admit factor 1 may be of that formula, and prove no count.
	old, one := false, true
	for _, r := range o.Rows {
		for _, pf := range []*Perf{r.OutOfPlace, r.InPlace} {
			if pf == nil || !(pf.AlgBW > 0) || math.IsInf(pf.AlgBW, 0) || math.IsNaN(pf.BusBW) || math.IsInf(pf.BusBW, 0) {
				continue
			}
			ha, hb := pf.Prec.HalfUnit(pf.Prec.AlgBW), pf.Prec.HalfUnit(pf.Prec.BusBW)
			if pf.AlgBW-ha <= 0 {
				continue
			}
			fLo, fHi := max(0, pf.BusBW-hb)/(pf.AlgBW+ha), (pf.BusBW+hb)/(pf.AlgBW-ha)
			seen = true
			old = old || pf.HasMaxError
			one = one && fHi >= 1-eps
			at := fmt.Sprintf("busbw/algbw %s/%s at %s", fmtNum(pf.BusBW), fmtNum(pf.AlgBW), result.FormatBytes(r.Size))
			// factor = limit x (n-1)/n, so n = limit / (limit - factor).
			if fLo >= bf.limit {
				return rankBound{}, false // no count gives it: rows of another formula
			}
			if n := int(math.Ceil(bf.limit/(bf.limit-fLo) - eps)); n > lo {
				lo, loAt = n, at
			}
			if fHi < bf.limit {
				if n := bf.limit / (bf.limit - fHi); n < 1<<30 && (hi == 0 || int(math.Floor(n+eps)) < hi) {
					hi, hiAt = int(math.Floor(n+eps)), at
				}
			}
		}
	}
	if !seen || hi > 0 && lo > hi {
		return rankBound{}, false // none, or rows that no one rank count fits
	}
	if old && one && (test == "all_gather" || test == "reduce_scatter") {
		return rankBound{}, false
	}
	b := rankBound{lo: lo, hi: hi}
	switch {
	case hi > 0 && lo == hi:
		b.says = fmt.Sprintf("%d ranks by %s (%s: %s)", lo, hiAt, test, bf.formula)
	case hi > 0:
		b.says = fmt.Sprintf("%d to %d ranks by busbw/algbw (%s: %s; %s, %s)", lo, hi, test, bf.formula, loAt, hiAt)
	default:
		b.says = fmt.Sprintf("at least %d ranks by %s (%s: %s)", lo, loAt, test, bf.formula)
	}
	return b, true
}

// fmtNum writes a number briefly, as the output printed it.
func fmtNum(v float64) string { return fmt.Sprint(v) }

// rankCheck judges the rank count against the scope: fail when a piece of
// evidence excludes it, pass when the evidence pins it, warn "not
// verifiable" otherwise. It returns the check and the rank count the
// evidence proves (0 when it proves none).
func rankCheck(bs []rankBound, topo plan.Topology) (result.Check, int) {
	want := topo.Ranks()
	c := result.Check{Name: "rank count"}
	for _, b := range bs {
		if !b.admits(want) {
			c.Message = fmt.Sprintf("%s, expected %d (%s)", b.says, want, topo)
			proved := 0
			if b.exact() {
				proved = b.lo
			}
			return c, proved
		}
	}
	lo, hi, mult := 1, 0, 0
	var says []string
	for _, b := range bs {
		lo = max(lo, b.lo)
		if b.hi > 0 && (hi == 0 || b.hi < hi) {
			hi = b.hi
		}
		if b.mult > 1 {
			mult = b.mult
		}
		says = append(says, b.says)
	}
	// Every bound admits want, so want is in [lo, hi]; it is proved when
	// it is the only count there that fits them all.
	if hi > 0 {
		fits := 0
		for n := lo; n <= hi && fits < 2; n++ {
			if mult <= 1 || n%mult == 0 {
				fits++
			}
		}
		if fits == 1 {
			c.OK = true
			return c, want
		}
	}
	c.Warn = true
	if len(says) == 0 {
		c.Message = "not verifiable (no rank lines, NCCL INFO nranks, header or size and count columns tell it)"
	} else {
		c.Message = fmt.Sprintf("not verifiable (%s), expected %d (%s)", strings.Join(says, "; "), want, topo)
	}
	return c, 0
}

// nodeCheck judges the node count: the hosts of the rank lines prove it
// when every rank has its line (proved is the rank count the evidence
// pins, 0 none), NCCL INFO nNodes and the JSON's device list always; else
// the hosts seen are a lower bound.
func nodeCheck(text, js *Output, proved int, topo plan.Topology) result.Check {
	c := result.Check{Name: "node count"}
	want := topo.Nodes
	hostsOf := func(rs []Rank) (int, int) {
		hosts, ids := map[string]bool{}, map[int]bool{}
		for _, r := range rs {
			hosts[r.Host] = true
			ids[r.Rank] = true
		}
		return len(hosts), len(ids)
	}
	fail := func(m string) result.Check { c.Message = m; return c }
	for _, o := range []*Output{text, js} {
		if o != nil && o.NNodes > 0 {
			if o.NNodes != want {
				return fail(fmt.Sprintf("NCCL INFO nNodes %d, expected %s", o.NNodes, result.Count(want, "node")))
			}
			c.OK = true
			return c
		}
	}
	if js != nil && len(js.Ranks) > 0 && js.RankCount > 0 {
		// One device entry per process, every process listed.
		h, _ := hostsOf(js.Ranks)
		if h != want {
			return fail(fmt.Sprintf("ranks ran on %s (the JSON's device list), expected %s", result.Count(h, "host"), result.Count(want, "node")))
		}
		c.OK = true
		return c
	}
	var infoHosts int // hosts of NCCL INFO lines: all of them, or a lower bound
	if text != nil && len(text.InfoHosts) > 0 {
		hosts := map[string]bool{}
		complete := text.NRanks == len(text.InfoHosts)
		for r, h := range text.InfoHosts {
			hosts[h] = true
			complete = complete && r >= 0 && r < text.NRanks
		}
		infoHosts = len(hosts)
		if complete {
			if infoHosts != want {
				return fail(fmt.Sprintf("ranks ran on %s (the NCCL INFO lines of all %s), expected %s", result.Count(infoHosts, "host"), result.Count(text.NRanks, "rank"), result.Count(want, "node")))
			}
			c.OK = true
			return c
		}
	}
	if text == nil || len(text.Ranks) == 0 {
		if infoHosts > want {
			return fail(fmt.Sprintf("ranks ran on at least %s (NCCL INFO lines), expected %s", result.Count(infoHosts, "host"), result.Count(want, "node")))
		}
		c.Warn = true
		c.Message = "not verifiable (no rank lines or NCCL INFO nNodes tell it)"
		if infoHosts > 0 {
			c.Message = fmt.Sprintf("not verifiable (NCCL INFO lines of %d of the ranks name %s: at least %d), expected %s", len(text.InfoHosts), result.Count(infoHosts, "host"), infoHosts, result.Count(want, "node"))
		}
		return c
	}
	h, ids := hostsOf(text.Ranks)
	if proved > 0 && ids == proved {
		if h != want {
			return fail(fmt.Sprintf("ranks ran on %s, expected %s", result.Count(h, "host"), result.Count(want, "node")))
		}
		c.OK = true
		return c
	}
	if h > want {
		return fail(fmt.Sprintf("ranks ran on at least %s (the rank lines of %s), expected %s", result.Count(h, "host"), result.Count(ids, "rank"), result.Count(want, "node")))
	}
	c.Warn = true
	c.Message = fmt.Sprintf("not verifiable (the rank lines of %s name %s: at least %d), expected %s", result.Count(ids, "rank"), result.Count(h, "host"), h, result.Count(want, "node"))
	return c
}

// independentRuns finds the outputs of several processes that each ran
// the test alone, as a binary built without MPI=1 does under mpirun: each
// prints its own header and its own rank 0, and each has fewer ranks than
// the scope. It returns a failed check, or false when the output is one
// run (or several runs of the whole scope one after another).
func independentRuns(text *Output, topo plan.Topology) (result.Check, bool) {
	if text == nil {
		return result.Check{}, false
	}
	type proc struct {
		host string
		pid  int
	}
	zeros := map[proc]bool{}
	top := -1
	for _, r := range text.Ranks {
		if r.Rank == 0 {
			zeros[proc{r.Host, r.Pid}] = true
		}
		top = max(top, r.Rank)
	}
	runs := max(len(zeros), text.Headers)
	if runs < 2 {
		return result.Check{}, false
	}
	// Ranks of one run: the largest any piece of evidence shows.
	per := top + 1
	if text.NThreads > 0 && text.NGPUs > 0 {
		per = max(per, text.NThreads*text.NGPUs)
	}
	per = max(per, text.NRanks)
	want := topo.Ranks()
	if per <= 0 || per >= want {
		return result.Check{}, false
	}
	noun := "runs"
	return result.Check{Name: "independent runs", Error: true, Message: fmt.Sprintf("%d independent %d-rank %s: nccl-tests built without MPI=1 under mpirun (expected one run of %d ranks, %s)",
		runs, per, noun, want, topo)}, true
}
