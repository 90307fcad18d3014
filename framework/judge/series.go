package judge

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// matcher decides which measured points a baseline entry judges. It knows
// the labels with a plugin default that vary within the run (type and
// redop under -d all -o all): an entry that leaves such a label out means
// its default, the value the baseline was measured with, not every value.
type matcher struct {
	// varied maps a metric name to its varying labels and their defaults.
	varied map[string]map[string]string
}

// newMatcher finds, per metric name, the labels of defaults whose values
// differ between the points of ms.
func newMatcher(ms []result.Metric, defaults map[string]map[string]string) matcher {
	mt := matcher{varied: map[string]map[string]string{}}
	if len(defaults) == 0 {
		return mt
	}
	values := map[string]map[string]map[string]bool{} // metric -> label -> values
	for _, m := range ms {
		for k := range defaults[m.Name] {
			if values[m.Name] == nil {
				values[m.Name] = map[string]map[string]bool{}
			}
			if values[m.Name][k] == nil {
				values[m.Name][k] = map[string]bool{}
			}
			values[m.Name][k][m.Labels[k]] = true
		}
	}
	for name, labels := range values {
		for k, vs := range labels {
			if len(vs) > 1 {
				if mt.varied[name] == nil {
					mt.varied[name] = map[string]string{}
				}
				mt.varied[name][k] = defaults[name][k]
			}
		}
	}
	return mt
}

// match reports whether entry e judges metric m: same name, every label e
// names equal on m, and for each varying label e leaves out, m has the
// default.
func (mt matcher) match(e *sku.Entry, m result.Metric) bool {
	if !matches(e, m) {
		return false
	}
	for k, def := range mt.varied[m.Name] {
		if _, named := e.Labels[k]; !named && m.Labels[k] != def {
			return false
		}
	}
	return true
}

// seriesKey names the series of a point: its values of the varying labels,
// "redop=avg type=int8"; "" when none vary.
func (mt matcher) seriesKey(m result.Metric) string {
	v := mt.varied[m.Name]
	if len(v) == 0 {
		return ""
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m.Labels[k]
	}
	return strings.Join(parts, " ")
}

// notJudged returns the series (seriesKey) of the metrics entries judge
// that no entry matches, whatever the size, sorted, and whether that is
// every series of those metrics. The skipped points of such a series get
// "not judged: no baseline entry for ..." as their message.
func (mt matcher) notJudged(entries []*sku.Entry, judged []result.Judged) ([]string, bool) {
	if len(mt.varied) == 0 || len(entries) == 0 {
		return nil, false
	}
	named := map[string]bool{}
	for _, e := range entries {
		named[e.Metric] = true
	}
	covered := map[string]bool{}
	all := map[string]bool{}
	for _, j := range judged {
		if !named[j.Name] || len(mt.varied[j.Name]) == 0 {
			continue
		}
		k := mt.seriesKey(j.Metric)
		all[k] = true
		if covered[k] {
			continue
		}
		for _, e := range entries {
			if mt.match(e, j.Metric) {
				covered[k] = true
				break
			}
		}
	}
	var out []string
	for k := range all {
		if !covered[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	for i := range judged {
		j := &judged[i]
		if j.Status == result.Skip && named[j.Name] && len(mt.varied[j.Name]) > 0 && !covered[mt.seriesKey(j.Metric)] {
			j.Message = "not judged: no baseline entry for " + mt.seriesKey(j.Metric)
		}
	}
	return out, len(out) > 0 && len(out) == len(all)
}

// maxSeries bounds the series a note lists by name.
const maxSeries = 4

// seriesNote is the test message's note on series not judged: "59 series
// not judged: redop=avg type=bfloat16, ... (and 55 more), no baseline
// entry for their labels".
func seriesNote(series []string) string {
	shown := series
	tail := ""
	if len(shown) > maxSeries {
		shown, tail = shown[:maxSeries], fmt.Sprintf(" (and %d more)", len(series)-maxSeries)
	}
	what := "no baseline entry for their labels"
	if len(series) == 1 {
		what = "no baseline entry for its labels"
	}
	return fmt.Sprintf("%d series not judged: %s%s, %s", len(series), strings.Join(shown, ", "), tail, what)
}
