package localise

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// figureMetric picks the metric runs of a test are compared by: of the
// metrics its plugin declares better higher (result.Test.Meanings: runs
// are compared by their lowest peak, so the slow one is the low one), the
// first the SKU's baseline judges for the test at any scope, else the first
// declared recorded by default, else the first the result holds. "" when
// it holds none: a test whose plugin declares no metric better higher is
// not localised by its numbers.
func figureMetric(s *sku.SKU, t result.Test) (name, unit string) {
	have := map[string]string{}
	for _, mn := range t.Meanings {
		if !mn.Record {
			continue
		}
		for _, m := range t.Metrics {
			if m.Name == mn.Name && m.Unit == mn.Unit && mn.Better == result.BetterHigher && name == "" {
				name, unit = m.Name, m.Unit
			}
		}
	}
	for _, m := range t.Metrics {
		if mn, ok := result.MeaningOf(t.Meanings, m.Name); ok && mn.Better == result.BetterHigher && mn.Unit == m.Unit {
			if _, ok := have[m.Name]; !ok {
				have[m.Name] = m.Unit
			}
			if name == "" {
				name, unit = m.Name, m.Unit
			}
		}
	}
	if s != nil {
		for _, e := range s.Baselines {
			if e.Test == t.Name {
				if u, ok := have[e.Metric]; ok {
					return e.Metric, u
				}
			}
		}
	}
	return name, unit
}

// seriesKey names a series: the metric's labels without the size.
func seriesKey(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s;", k, labels[k])
	}
	return b.String()
}

// figure is the number a run of test t is compared by: for each series of
// the figure metric (one per label set: placement, NIC pair, ...), the peak
// over message sizes; then the lowest of those peaks, so one slow series
// (one NIC pair of eight) makes the run slow. Summary metrics are left out:
// they repeat measured points. ok is false when t measured no bandwidth.
func figure(s *sku.SKU, t result.Test) (v float64, name, unit string, ok bool) {
	name, unit = figureMetric(s, t)
	if name == "" {
		return 0, "", "", false
	}
	peaks := seriesPeaks(t, name, "")
	v = math.Inf(1)
	for _, p := range peaks {
		v = math.Min(v, p)
	}
	return v, name, unit, len(peaks) > 0
}

// seriesPeaks maps each series of metric name (split by label, or by the
// one label key when given) to its peak over sizes.
func seriesPeaks(t result.Test, name, key string) map[string]float64 {
	peaks := map[string]float64{}
	for _, m := range t.Metrics {
		if m.Name != name || m.Summary != "" {
			continue
		}
		k := seriesKey(m.Labels)
		if key != "" {
			k = m.Labels[key]
		}
		if p, ok := peaks[k]; !ok || m.Value > p {
			peaks[k] = m.Value
		}
	}
	return peaks
}

// median of vs (not modified); 0 for none.
func median(vs []float64) float64 { return quantile(vs, 0.5) }

// upperQuartile of vs is the reference runs of a stage are compared with:
// the speed of its healthy runs as long as a quarter of them are healthy.
// The median would not do: two bad nodes of six slow 9 of the 15 pairs,
// and the median pair is then a slow one. It is a measured value (nearest
// rank), not one between two runs: of 2 nodes, the faster one's.
func upperQuartile(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	return s[int(math.Ceil(0.75*float64(len(s))))-1]
}

// quantile of vs at q in [0,1], interpolating between neighbours; 0 for
// none.
func quantile(vs []float64, q float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[lo]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

// failure says why a test's own verdict counts against it: its first
// failing point or check, or its message. "" when it passed, warned or
// skipped.
func failure(t result.Test) string {
	if t.Status != result.Fail && t.Status != result.Error {
		return ""
	}
	for _, m := range t.Metrics {
		if m.Status == result.Fail && m.Message != "" {
			return m.Message
		}
	}
	for _, c := range t.Checks {
		if !c.OK && !c.Warn {
			return c.Name + ": " + c.Message
		}
	}
	if t.Message != "" {
		return t.Message
	}
	return string(t.Status)
}

// fmtFig renders a figure with its unit: "301.2 GB/s".
func fmtFig(v float64, unit string) string {
	return fmt.Sprintf("%.1f %s", v, unit)
}
