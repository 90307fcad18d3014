package nccltests

import (
	"maps"
	"math"
	"slices"
)

// A size printed again with the same count, type, op and root is another
// cycle of the sweep (nccl-tests -N, rccl-tests' stress cycles): it is
// folded into the row first printed while the output is read, so memory
// grows with the distinct rows, never with the cycles. The folded row
// holds the worst cycle's values (lowest bandwidth, highest time, most
// wrong elements), which is what gets judged, and a Stats per quantity for
// the reports: count, min, median and max.

const (
	// statsExactMax is how many values a Stats keeps, so that its median
	// is exact up to that many cycles.
	statsExactMax = 256
	// statsRelErr bounds the relative error of the median of more values
	// than statsExactMax: they are counted in logarithmic buckets whose
	// edges are a factor statsGamma apart, and a bucket is represented by
	// the value within statsRelErr of all it holds.
	statsRelErr = 0.001
	// statsBucketsMax bounds the buckets (4096 span a factor of about
	// 3600 at statsRelErr, far more than the cycles of one size spread);
	// past it a quarter of them at the end farther from the median are
	// merged into one, which coarsens values far from the median only.
	statsBucketsMax = 4096
)

// statsGamma is the ratio of a bucket's upper edge to its lower edge.
var statsGamma = (1 + statsRelErr) / (1 - statsRelErr)

// statsLnGamma is log(statsGamma).
var statsLnGamma = math.Log(statsGamma)

// Stats summarises one quantity (a time in us, a bandwidth in GB/s) over a
// row's cycles. Values that are not finite (nan, inf) are counted in
// NonFinite only. Its memory is bounded whatever the number of cycles:
// statsExactMax values, then at most statsBucketsMax buckets.
type Stats struct {
	// N is the number of finite values, NonFinite the number of others.
	N, NonFinite int
	// Min and Max are the least and the largest finite value; 0 when N is
	// 0.
	Min, Max float64

	exact  []float64       // every value while N <= statsExactMax, else nil
	hist   map[int32]int64 // bucket index -> values, once past statsExactMax
	nonpos int64           // values <= 0 once past statsExactMax
	lastV  float64         // the last value bucketed, and its bucket
	lastK  int32
	// floor and ceil clamp the bucket index once collapse merged an end.
	floor, ceil int32
}

// Add counts one value.
func (s *Stats) Add(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		s.NonFinite++
		return
	}
	if s.N == 0 || v < s.Min {
		s.Min = v
	}
	if s.N == 0 || v > s.Max {
		s.Max = v
	}
	s.N++
	if s.hist == nil && len(s.exact) < statsExactMax {
		s.exact = append(s.exact, v)
		return
	}
	if s.hist == nil {
		s.hist = map[int32]int64{}
		s.floor, s.ceil = math.MinInt32, math.MaxInt32
		for _, x := range s.exact {
			s.bucket(x)
		}
		s.exact = nil
	}
	s.bucket(v)
}

// Equal reports whether s and o counted the same values (go-cmp and
// gotest.tools' DeepEqual use it: Stats has unexported fields).
func (s Stats) Equal(o Stats) bool {
	return s.N == o.N && s.NonFinite == o.NonFinite && s.Min == o.Min && s.Max == o.Max &&
		slices.Equal(s.exact, o.exact) && maps.Equal(s.hist, o.hist) && s.nonpos == o.nonpos &&
		s.floor == o.floor && s.ceil == o.ceil // lastV, lastK: a cache
}

// bucket counts v in the histogram.
func (s *Stats) bucket(v float64) {
	if v <= 0 || v < math.SmallestNonzeroFloat64*statsGamma {
		s.nonpos++
		return
	}
	// Printed values repeat (two decimals): the last one's bucket saves
	// the logarithm (v > 0 here, lastV starts at 0).
	if v != s.lastV {
		s.lastV, s.lastK = v, int32(math.Ceil(math.Log(v)/statsLnGamma))
	}
	k := min(max(s.lastK, s.floor), s.ceil)
	s.hist[k]++
	if len(s.hist) > statsBucketsMax {
		s.collapse()
	}
}

// collapse merges a quarter of the buckets, at the end farther from the
// median's bucket and never reaching it, into the innermost of them, and
// clamps later values there; the ranks stay exact.
func (s *Stats) collapse() {
	keys := s.keys()
	mid, r := 0, (int64(s.N)-1)/2-s.nonpos
	for i, k := range keys {
		if r < s.hist[k] {
			mid = i
			break
		}
		r -= s.hist[k]
	}
	n := len(keys) / 4
	if int64(keys[mid])-int64(keys[0]) >= int64(keys[len(keys)-1])-int64(keys[mid]) {
		n = min(n, mid)
		into := keys[n]
		for _, k := range keys[:n] {
			s.hist[into] += s.hist[k]
			delete(s.hist, k)
		}
		s.floor = into
		return
	}
	n = min(n, len(keys)-1-mid)
	into := keys[len(keys)-1-n]
	for _, k := range keys[len(keys)-n:] {
		s.hist[into] += s.hist[k]
		delete(s.hist, k)
	}
	s.ceil = into
}

// keys returns the histogram's bucket indexes in increasing order.
func (s *Stats) keys() []int32 {
	keys := make([]int32, 0, len(s.hist))
	for k := range s.hist {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Estimated reports whether Median is an estimate (more than
// statsExactMax values), within statsRelErr of the exact median.
func (s *Stats) Estimated() bool { return s.hist != nil }

// Median returns the median of the finite values: the middle one, or the
// mean of the two middle ones for an even count; 0 when N is 0. Past
// statsExactMax values it is an estimate within statsRelErr (relative) of
// the exact median, clamped to [Min, Max].
func (s *Stats) Median() float64 {
	if s.N == 0 {
		return 0
	}
	if s.hist == nil {
		v := slices.Clone(s.exact)
		slices.Sort(v)
		if n := len(v); n%2 == 1 {
			return v[n/2]
		} else {
			return (v[n/2-1] + v[n/2]) / 2
		}
	}
	keys := s.keys()
	// at returns the representative of the value of rank r (0-based).
	at := func(r int64) float64 {
		if r < s.nonpos {
			return 0
		}
		r -= s.nonpos
		for _, k := range keys {
			if r < s.hist[k] {
				return 2 * math.Pow(statsGamma, float64(k)) / (statsGamma + 1)
			}
			r -= s.hist[k]
		}
		return s.Max
	}
	n := int64(s.N)
	m := at((n - 1) / 2)
	if n%2 == 0 {
		m = (m + at(n/2)) / 2
	}
	return min(max(m, s.Min), s.Max)
}

// PerfStats are a measurement's Stats over the cycles of its row.
type PerfStats struct {
	Time, AlgBW, BusBW Stats
}

// add counts the values of one cycle.
func (ps *PerfStats) add(p *Perf) {
	ps.Time.Add(p.Time)
	ps.AlgBW.Add(p.AlgBW)
	ps.BusBW.Add(p.BusBW)
}

// fold takes one more cycle's measurement into p: Stats counts it, and
// p's values become the worst of the cycles (Go's min and max, so one nan
// makes the value nan: a cycle that measured nothing is not hidden by the
// others).
func (p *Perf) fold(c *Perf) {
	if p.Stats == nil {
		p.Stats = &PerfStats{}
		p.Stats.add(p)
	}
	p.Stats.add(c)
	p.Time = max(p.Time, c.Time)
	p.AlgBW = min(p.AlgBW, c.AlgBW)
	p.BusBW = min(p.BusBW, c.BusBW)
	p.Wrong = max(p.Wrong, c.Wrong)
	p.MaxError = max(p.MaxError, c.MaxError)
	if c.IMin != 0 && (p.IMin == 0 || c.IMin < p.IMin) {
		p.IMin = c.IMin
	}
	p.IMax = max(p.IMax, c.IMax)
	p.IP99 = max(p.IP99, c.IP99)
	p.ICV = max(p.ICV, c.ICV)
}

// rowKey tells the rows of a sweep apart; rows with equal keys are cycles.
type rowKey struct {
	size, count int64
	typ, redop  string
	root        int
}

// RowSet collects result rows in the order first printed, folding each
// row whose size, count, type, op and root were seen before into the row
// first printed (Row.Cycles). Its memory grows with the distinct rows, not
// with the rows added. The zero RowSet is empty and ready to use.
type RowSet struct {
	chunks [][]Row // full chunks; growing one slice would copy rows more
	cur    []Row   // the chunk being filled
	n      int     // distinct rows
	index  map[rowKey]*Row
	// zeros are the kept rows of size 0 by key, in order; zrun counts the
	// rows of each key in the current run of size 0 rows (inZeros).
	zeros   map[rowKey][]*Row
	zrun    map[rowKey]int
	inZeros bool
	// folded holds the row Add was last given when it was folded, so
	// that Last can hand out a row whose edits (a -S timestamp) do not
	// reach the kept one.
	folded Row
	last   *Row
	// NewPerf, when set, gives the Perf values a new row's measurements
	// are copied into (the text parser hands them out in slabs); nil: new.
	NewPerf func() *Perf
}

// Add keeps r as a new row, or folds it into the row of the same key. A
// new row keeps its own Perf values only when NewPerf is nil; otherwise
// they are copied, so the caller may reuse r's.
func (s *RowSet) Add(r Row) {
	k := rowKey{r.Size, r.Count, r.Type, r.Redop, r.Root}
	var kept *Row
	if r.Size == 0 {
		// Requests smaller than one element per rank all print as size 0
		// at the start of a sweep (all_gather at 8 and 16 bytes on 2
		// ranks): the i-th of a run of such rows is a cycle of the i-th of
		// the first run.
		if !s.inZeros {
			clear(s.zrun)
			s.inZeros = true
		}
		i := s.zrun[k]
		if s.zrun == nil {
			s.zrun = map[rowKey]int{}
		}
		s.zrun[k]++
		if i < len(s.zeros[k]) {
			kept = s.zeros[k][i]
		}
	} else {
		s.inZeros = false
		kept = s.index[k]
	}
	if kept != nil {
		kept.Cycles = max(kept.Cycles, 1) + 1
		for _, pl := range [2]struct {
			dst **Perf
			src *Perf
		}{{&kept.OutOfPlace, r.OutOfPlace}, {&kept.InPlace, r.InPlace}} {
			switch {
			case pl.src == nil:
			case *pl.dst == nil:
				// Absent from the earlier cycles: a row whose part was cut
				// (null out-of-place columns) gains it here.
				*pl.dst = s.copyPerf(pl.src)
			default:
				(*pl.dst).fold(pl.src)
			}
		}
		s.folded = r
		s.last = &s.folded
		return
	}
	if s.NewPerf != nil {
		r.OutOfPlace, r.InPlace = s.copyPerf(r.OutOfPlace), s.copyPerf(r.InPlace)
	}
	r.Cycles = 0
	if len(s.cur) == cap(s.cur) {
		if s.cur != nil {
			s.chunks = append(s.chunks, s.cur)
		}
		s.cur = make([]Row, 0, min(max(2*cap(s.cur), 64), 1<<14))
	}
	s.cur = append(s.cur, r)
	s.n++
	s.last = &s.cur[len(s.cur)-1]
	if r.Size == 0 {
		if s.zeros == nil {
			s.zeros = map[rowKey][]*Row{}
		}
		s.zeros[k] = append(s.zeros[k], s.last)
		return
	}
	if s.index == nil {
		s.index = map[rowKey]*Row{}
	}
	s.index[k] = s.last
}

// copyPerf returns a copy of p from NewPerf (or new), nil for nil.
func (s *RowSet) copyPerf(p *Perf) *Perf {
	if p == nil {
		return nil
	}
	var c *Perf
	if s.NewPerf != nil {
		c = s.NewPerf()
	} else {
		c = new(Perf)
	}
	*c = *p
	return c
}

// Last returns the row the last Add kept, or a copy of what it was given
// when it folded it; nil before the first Add.
func (s *RowSet) Last() *Row { return s.last }

// Len is the number of distinct rows.
func (s *RowSet) Len() int { return s.n }

// Rows returns the distinct rows in the order first printed.
func (s *RowSet) Rows() []Row {
	if len(s.chunks) == 0 {
		return s.cur
	}
	out := make([]Row, 0, s.Len())
	for _, c := range s.chunks {
		out = append(out, c...)
	}
	return append(out, s.cur...)
}
