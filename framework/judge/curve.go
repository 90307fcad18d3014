package judge

import (
	"fmt"
	"math"
	"sort"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// curve returns the measured per-size points an entry's summary or dip
// check looks at: same metric and labels, size inside the entry's range.
func curve(e *sku.Entry, ms []result.Metric, mt matcher) []result.Metric {
	r := e.CurveRange()
	var out []result.Metric
	for _, m := range ms {
		if m.Size > 0 && mt.match(e, m) && r.Contains(m.Size) {
			out = append(out, m)
		}
	}
	return out
}

// summaryName renders the summary for reports: "peak", "largest",
// "mean 64 MiB..4 GiB".
func summaryName(e *sku.Entry) string {
	if e.Summary != sku.SummaryMean {
		return e.Summary
	}
	r := e.CurveRange()
	if r.To == 0 {
		return fmt.Sprintf("mean %s..", result.FormatBytes(int64(r.From)))
	}
	return fmt.Sprintf("mean %s..%s", result.FormatBytes(int64(r.From)), result.FormatBytes(int64(r.To)))
}

// summary computes and judges the one number a summary entry asks for. It
// returns the judged number, what the run lacks for a fair comparison (a
// mean over a shorter sweep), and how many measured points went into it.
func summary(e *sku.Entry, ms []result.Metric, mt matcher) (result.Judged, []string, int) {
	pts := curve(e, ms, mt)
	if len(pts) == 0 {
		return result.Judged{}, []string{describe(e, 0) + " " + summaryName(e)}, 0
	}
	m := result.Metric{Name: e.Metric, Unit: pts[0].Unit, Labels: map[string]string{}}
	for k, v := range e.Labels {
		m.Labels[k] = v
	}
	var missing []string
	switch e.Summary {
	case sku.SummaryPeak:
		best := pts[0]
		for _, p := range pts[1:] {
			if p.Value > best.Value {
				best = p
			}
		}
		m.Value, m.Size = best.Value, best.Size
	case sku.SummaryLargest:
		// With labels left open (both placements) the lower of the points
		// at the largest size counts: a summary must not hide the worse one.
		best := pts[0]
		for _, p := range pts[1:] {
			if p.Size > best.Size || p.Size == best.Size && p.Value < best.Value {
				best = p
			}
		}
		m.Value, m.Size = best.Value, best.Size
		if r := e.CurveRange(); r.To != 0 && best.Size < int64(r.To) {
			missing = append(missing, fmt.Sprintf("%s: largest size measured is %s, the baseline's is %s", describe(e, 0), result.FormatBytes(best.Size), result.FormatBytes(int64(r.To))))
		}
	case sku.SummaryMean:
		lo, hi, sum := pts[0].Size, pts[0].Size, 0.0
		for _, p := range pts {
			sum += p.Value
			lo, hi = min(lo, p.Size), max(hi, p.Size)
		}
		m.Value = sum / float64(len(pts))
		// A mean over fewer sizes than the baseline's is another number:
		// say so instead of comparing it silently.
		if r := e.CurveRange(); r.To != 0 && hi < int64(r.To) {
			missing = append(missing, fmt.Sprintf("%s %s: measured only up to %s", describe(e, 0), summaryName(e), result.FormatBytes(hi)))
		}
	}
	ref := *e.Value
	j := result.Judged{Metric: m, Summary: summaryName(e), Expected: &ref, Source: e.Source, Basis: e.Kind()}
	// The message names the summary: "busbw peak out-of-place 180.0 GB/s at 8 GiB below ...".
	shown := m
	shown.Name = e.Metric + " " + summaryName(e)
	j.Status, j.Band, j.Message = Value(shown, e.Unit, ref, e.Band)
	return j, missing, len(pts)
}

// dips runs an entry's dip check on each labelled curve it matches (one per
// placement, data type, ...): the worst fall of a point below the highest
// value at a smaller size. It returns one check per curve.
func dips(e *sku.Entry, ms []result.Metric, mt matcher) []result.Check {
	keys, groups := curves(curve(e, ms, mt), func(m result.Metric) string { return sku.LabelText(m.Labels) })
	var out []result.Check
	for _, k := range keys {
		pts := groups[k]
		top := pts[0]
		worst, from, to := 0.0, pts[0], pts[0]
		for _, p := range pts[1:] {
			if top.Value > 0 {
				if d := 100 * (1 - p.Value/top.Value); d > worst {
					worst, from, to = d, top, p
				}
			}
			if p.Value > top.Value {
				top = p
			}
		}
		c := result.Check{Name: dipName(to), OK: true}
		fall := func(limit float64, what string) string {
			return fmt.Sprintf("falls %.1f%% from %s %s at %s to %s %s at %s as size grows (%s above %g%%)",
				worst, num(from.Value), from.Unit, result.FormatBytes(from.Size), num(to.Value), to.Unit, result.FormatBytes(to.Size), what, limit)
		}
		switch {
		case e.Dip.Fail > 0 && worst > e.Dip.Fail:
			c.OK, c.Message = false, fall(e.Dip.Fail, "fail")
		case e.Dip.Warn > 0 && worst > e.Dip.Warn:
			c.OK, c.Warn, c.Message = false, true, fall(e.Dip.Warn, "warn")
		}
		out = append(out, c)
	}
	return out
}

// curveKey names one labelled curve of a metric: "busbw placement=out-of-place".
func curveKey(m result.Metric) string { return m.Name + " " + sku.LabelText(m.Labels) }

// curves groups ms into curves by key, each curve sorted by message size:
// the keys sorted, and the points of each.
func curves(ms []result.Metric, key func(result.Metric) string) ([]string, map[string][]result.Metric) {
	groups := map[string][]result.Metric{}
	var keys []string
	for _, m := range ms {
		k := key(m)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], m)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pts := groups[k]
		sort.SliceStable(pts, func(i, j int) bool { return pts[i].Size < pts[j].Size })
	}
	return keys, groups
}

// dipName is a dip check's name on the curve of p: "dip busbw
// out-of-place", the same for an entry's own dip rule and the default one.
func dipName(p result.Metric) string {
	if pl := p.Labels["placement"]; pl != "" {
		return "dip " + p.Name + " " + pl
	}
	return "dip " + p.Name
}

// dipped marks the curves entry e's own dip check reads (curve: its
// range), so that the default rule (holes) leaves them to it.
func dipped(e *sku.Entry, ms []result.Metric, mt matcher, done map[string]bool) {
	for _, m := range curve(e, ms, mt) {
		done[curveKey(m)] = true
	}
}

// holes runs the default dip rule (sku.DefaultHole) on each labelled curve
// of a bandwidth that entry e judges and no entry's own dip check reads
// (done, which it extends): every measured size, whatever the entry's
// range or points, so that a summary over 1 to 8 GiB still sees a hole at
// 256 MiB. The points read are holeRatio's; the worst ratio under
// DefaultHole percent fails. One check per curve, "dip busbw out-of-place",
// when at least one point was compared.
// holeRatio is the default dip rule's reading of one curve, pts sorted by
// size: the worst ratio of a point to the lower of its neighbours (the
// point before it, at the largest size), its index, and how many points
// were compared (0: none, worst +Inf). Only the bandwidth-bound part is
// read, where latency no longer decides and points no longer scatter:
// from the first size whose value reaches half the curve's peak. Whether
// a point is in that part is decided without the point itself too: one
// whose neighbours' mean reaches half the peak is read, for a hole at the
// knee of the curve (MI355X 1 x 8 all_reduce at 8 MiB, 91 GB/s between
// 153 and 251: half the peak is 180) drops the point under half the peak,
// which would move the part's start past the hole. A point lower in the
// rising part is not read: there healthy curves scatter (a blog's MI300X
// in-place all_reduce: 56.9 GB/s at 4 MiB between 105.4 and 169.4, a mean
// of 137 under half of 316). The first measured point has no lower
// neighbour and is never compared.
func holeRatio(pts []result.Metric) (worst float64, at, compared int) {
	worst = math.Inf(1)
	if len(pts) == 0 {
		return worst, 0, 0
	}
	peak := pts[0].Value
	for _, p := range pts {
		peak = max(peak, p.Value)
	}
	start := 0
	for start < len(pts) && pts[start].Value < peak/2 {
		start++
	}
	for i := 1; i < len(pts); i++ {
		knee := i+1 < len(pts) && (pts[i-1].Value+pts[i+1].Value)/2 >= peak/2
		if i < start && !knee {
			continue
		}
		lower := pts[i-1].Value
		if i+1 < len(pts) {
			lower = min(lower, pts[i+1].Value)
		}
		if lower <= 0 {
			continue
		}
		compared++
		if r := pts[i].Value / lower; r < worst {
			worst, at = r, i
		}
	}
	return worst, at, compared
}

func holes(e *sku.Entry, ms []result.Metric, mt matcher, done map[string]bool, meanings []result.Meaning) []result.Check {
	// A rate rises with the message size to a plateau; a time grows with
	// it. Which one a metric is, its plugin declares.
	if mn, _ := result.MeaningOf(meanings, e.Metric); mn.Better != result.BetterHigher {
		return nil
	}
	var read []result.Metric
	for _, m := range ms {
		if m.Size <= 0 || m.Unit != e.Unit || !mt.match(e, m) || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || done[curveKey(m)] {
			continue
		}
		read = append(read, m)
	}
	keys, groups := curves(read, curveKey)
	var out []result.Check
	for _, k := range keys {
		done[k] = true
		pts := groups[k]
		worst, at, compared := holeRatio(pts)
		if compared == 0 {
			continue
		}
		p := pts[at]
		c := result.Check{Name: dipName(p), OK: 100*worst >= sku.DefaultHole}
		if !c.OK {
			prev := pts[at-1]
			of := fmt.Sprintf("the point before it (%s %s at %s)", num(prev.Value), prev.Unit, result.FormatBytes(prev.Size))
			if at+1 < len(pts) {
				next := pts[at+1]
				of = fmt.Sprintf("the lower of its neighbours (%s %s at %s, %s %s at %s)", num(prev.Value), prev.Unit, result.FormatBytes(prev.Size),
					num(next.Value), next.Unit, result.FormatBytes(next.Size))
			}
			c.Message = fmt.Sprintf("%s %s at %s is %.1f%% of %s: a hole in the curve (the default dip rule fails a point under %g%%)",
				num(p.Value), p.Unit, result.FormatBytes(p.Size), 100*worst, of, sku.DefaultHole)
		}
		out = append(out, c)
	}
	return out
}
