// Package judge compares what a plugin measured with a SKU's baseline and
// turns it into verdicts: per metric, then per test.
package judge

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Test judges one test's parsed output against the baseline entries of its
// scope. entries may be empty: then every metric is Skip and the test is
// Skip with noBaseline as its message. Correctness checks fail the test
// whatever the bandwidth; a parse error makes it Error, keeping the metrics
// that were measured.
func Test(p result.Parsed, entries []*sku.Entry, noBaseline string) result.Test {
	t := result.Test{Diagnostics: append([]result.Diagnostic(nil), p.Diagnostics...), Info: p.Info}
	judged := make([]result.Judged, len(p.Metrics))
	for i, m := range p.Metrics {
		judged[i] = result.Judged{Metric: m, Status: result.Skip}
	}
	var statuses []result.Status
	var problems, unmeasured, unmatched []string
	var summaries []result.Judged
	checks := append([]result.Check(nil), p.Checks...)
	matchedAny := false
	for _, e := range entries {
		var n int
		var missing []string
		if e.Summary != "" {
			var j result.Judged
			if j, missing, n = summary(e, p.Metrics); n > 0 {
				summaries = append(summaries, j)
			}
		} else {
			n, missing = judgeEntry(e, judged)
		}
		if e.Dip != nil {
			checks = append(checks, dips(e, p.Metrics)...)
		}
		if n > 0 {
			matchedAny = true
			unmeasured = append(unmeasured, missing...)
		} else {
			// An entry that matches nothing (a label typo, a metric the run
			// did not report) would silently judge only part of the run.
			unmatched = append(unmatched, fmt.Sprintf("baseline entry at line %d (%s) matches no measured point", e.Line, describe(e, 0)))
		}
	}
	if matchedAny && len(unmatched) > 0 {
		statuses = append(statuses, result.Error)
		problems = append(problems, unmatched...)
	}
	if len(unmeasured) > 0 && matchedAny && p.Error == "" {
		// A sweep that stops short of the baseline's sizes signs off less
		// than the baseline asks for: show it.
		statuses = append(statuses, result.Warn)
		problems = append(problems, "baseline points not measured: "+strings.Join(unmeasured, ", "))
	}
	judged = append(judged, summaries...)
	for _, j := range judged {
		if j.Status != result.Skip {
			statuses = append(statuses, j.Status)
			if j.Status != result.Pass {
				problems = append(problems, j.Message)
			}
		}
	}
	t.Checks = checks
	for _, c := range checks {
		if !c.OK {
			if c.Warn {
				statuses = append(statuses, result.Warn)
			} else {
				statuses = append(statuses, result.Fail)
			}
			problems = append(problems, c.Name+": "+c.Message)
		}
	}
	t.Metrics = judged
	switch {
	case p.Error != "":
		t.Status = result.Error
		t.Message = p.Error
		if len(problems) > 0 {
			t.Message += "; " + strings.Join(problems, "; ")
		}
		return t
	case len(entries) == 0:
		// Failed correctness gates still fail without a baseline; say both.
		// A warning alone does not make a judged test of it: nothing was
		// compared, and a warn would read as signed off (exit 0).
		t.Status = result.Skip
		if w := result.Worst(statuses...); w == result.Fail || w == result.Error {
			t.Status = w
		}
		t.Message = strings.Join(append(problems, noBaseline), "; ")
		return t
	case !matchedAny && len(p.Metrics) > 0:
		// A baseline exists for this scope but judged nothing: the run did
		// not measure what the baseline expects (sizes, metric, labels).
		// That signs nothing off, so it must not read as a skip.
		t.Status = result.Error
		var has []string
		for _, e := range entries {
			for _, pt := range e.Points {
				has = append(has, describe(e, int64(pt.Size)))
			}
			if e.Value != nil {
				has = append(has, describe(e, int64(e.Size)))
			}
		}
		t.Message = "no measured point matches the baseline (it has " + strings.Join(has, ", ") + ")"
		if len(problems) > 0 {
			t.Message = strings.Join(problems, "; ") + "; " + t.Message
		}
		return t
	case len(p.Metrics) == 0:
		t.Status = result.Error
		t.Message = "no metrics in the output"
		return t
	}
	t.Status = result.Worst(statuses...)
	t.Message = summarize(t.Status, problems, judged)
	return t
}

// summarize writes the one-line message of a test: the worst findings first.
func summarize(s result.Status, problems []string, judged []result.Judged) string {
	if s == result.Pass {
		n := 0
		for _, j := range judged {
			if j.Status == result.Pass {
				n++
			}
		}
		return fmt.Sprintf("%d points inside their bands", n)
	}
	const max = 3
	if len(problems) > max {
		return strings.Join(problems[:max], "; ") + fmt.Sprintf("; and %d more", len(problems)-max)
	}
	return strings.Join(problems, "; ")
}

// judgeEntry judges the metrics an entry matches. It returns how many it
// judged and a message for each baseline point with no measurement.
func judgeEntry(e *sku.Entry, judged []result.Judged) (int, []string) {
	n := 0
	var missing []string
	if e.Value != nil {
		for i := range judged {
			if matches(e, judged[i].Metric) && judged[i].Size == int64(e.Size) {
				apply(&judged[i], e, *e.Value, e.Band)
				n++
			}
		}
		if n == 0 {
			missing = append(missing, describe(e, int64(e.Size)))
		}
		return n, missing
	}
	for _, p := range e.Points {
		found := 0
		for i := range judged {
			if matches(e, judged[i].Metric) && judged[i].Size == int64(p.Size) {
				apply(&judged[i], e, p.Value, e.Band.Merge(p.Band))
				found++
			}
		}
		if found == 0 {
			missing = append(missing, describe(e, int64(p.Size)))
		}
		n += found
	}
	return n, missing
}

func describe(e *sku.Entry, size int64) string {
	m := result.Metric{Name: e.Metric, Size: size, Labels: e.Labels}
	k := m.Key()
	if len(e.Labels) > 1 || len(e.Labels) == 1 && e.Labels["placement"] == "" {
		k += " {" + sku.LabelText(e.Labels) + "}"
	}
	return k
}

// matches: same metric name, and every label the entry names has the same
// value on the metric (an entry without a "type" label matches every type).
func matches(e *sku.Entry, m result.Metric) bool {
	if e.Metric != m.Name {
		return false
	}
	for k, v := range e.Labels {
		if m.Labels[k] != v {
			return false
		}
	}
	return true
}

func apply(j *result.Judged, e *sku.Entry, ref float64, b sku.Band) {
	ref64 := ref
	j.Expected = &ref64
	j.Source = e.Source
	j.Status, j.Band, j.Message = Value(j.Metric, e.Unit, ref, b)
}

// Value judges one value v (in unit) against reference ref and band b. It
// returns the status, the band rendered for reports, and for warn or fail a
// message such as "busbw 28.7 GB/s at 4 GiB below 310.9 (baseline 345.5 -10%)".
func Value(m result.Metric, unit string, ref float64, b sku.Band) (result.Status, string, string) {
	v := m.Value
	bandText := renderBand(ref, b)
	what := fmt.Sprintf("%s %s %s", m.Name, num(v), unit)
	if p := m.Labels["placement"]; p != "" {
		what = fmt.Sprintf("%s %s %s %s", m.Name, p, num(v), unit)
	}
	if m.Size > 0 {
		what += " at " + result.FormatBytes(m.Size)
	}
	if math.IsNaN(v) {
		return result.Fail, bandText, what + ": not a number"
	}
	type edge struct {
		bound  sku.Bound
		lower  bool
		status result.Status
	}
	for _, ed := range []edge{{b.Min, true, result.Fail}, {b.Max, false, result.Fail}, {b.WarnMin, true, result.Warn}, {b.WarnMax, false, result.Warn}} {
		if !ed.bound.IsSet() {
			continue
		}
		lim := ed.bound.Limit(ref)
		if ed.lower && v < lim || !ed.lower && v > lim {
			dir := "below"
			if !ed.lower {
				dir = "above"
			}
			return ed.status, bandText, fmt.Sprintf("%s %s %s (%s)", what, dir, num(lim), boundOrigin(ref, ed.bound))
		}
	}
	return result.Pass, bandText, ""
}

func boundOrigin(ref float64, b sku.Bound) string {
	if b.Relative {
		return fmt.Sprintf("baseline %s %s", num(ref), b.Text)
	}
	return fmt.Sprintf("baseline %s, limit %s", num(ref), b.Text)
}

// renderBand renders the pass range for a reference: ">= 310.9 (345.5 -10%)",
// "310.9 .. 691.0".
func renderBand(ref float64, b sku.Band) string {
	var parts []string
	if b.Min.IsSet() {
		parts = append(parts, ">= "+num(b.Min.Limit(ref)))
	}
	if b.Max.IsSet() {
		parts = append(parts, "<= "+num(b.Max.Limit(ref)))
	}
	s := strings.Join(parts, ", ")
	var warn []string
	if b.WarnMin.IsSet() {
		warn = append(warn, "warn < "+num(b.WarnMin.Limit(ref)))
	}
	if b.WarnMax.IsSet() {
		warn = append(warn, "warn > "+num(b.WarnMax.Limit(ref)))
	}
	if len(warn) > 0 {
		s += " (" + strings.Join(warn, ", ") + ")"
	}
	return s
}

// num prints a number with one decimal, or in exponent form when tiny.
func num(v float64) string {
	if v != 0 && math.Abs(v) < 0.05 {
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// SortMetrics orders metrics by name, labels, then size, for stable reports.
func SortMetrics(ms []result.Judged) {
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if la, lb := sku.LabelText(a.Labels), sku.LabelText(b.Labels); la != lb {
			return la < lb
		}
		return a.Size < b.Size
	})
}
