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

// Options are what a test is judged by besides its parsed output.
type Options struct {
	// Entries are the baseline entries at the test's scope. None: nothing
	// is compared, and the test is skip unless a gate fails.
	Entries []*sku.Entry
	// NoBaseline says why there are no entries ("no baseline for ... at
	// scope 1x8 ...; it has 1x2"), for the message.
	NoBaseline string
	// Gates are correctness gates made outside the plugin (Gates: GPU
	// model, physical ceilings); they count as the plugin's checks.
	Gates []result.Check
	// Floors are the SKU's datasheet floors at the test's scope
	// (sku.SKU.Floors): each judges the points of its metric and labels
	// that no entry judged, so a benchmark with no baseline is still
	// judged, on the authority of the datasheet (result.BasisFloor). A
	// floor that matches nothing is no finding: it is no baseline.
	Floors []*sku.Entry
	// Defaults are the plugin's label defaults per metric name
	// (pluginapi.MetricInfo.LabelDefaults: busbw -> type=float,
	// redop=sum). Where a run's points differ in such a label (-d all -o
	// all), an entry that does not name it judges only the points with the
	// default, and series no entry names are reported as not judged. Nil:
	// an entry matches every value of a label it leaves out.
	Defaults map[string]map[string]string
	// Meanings are what the plugin declares its metrics mean
	// (pluginapi.MetricInfo): an entry without dip: on a metric declared
	// better higher gets the default dip rule (sku.DefaultHole) over its
	// sizes; others are judged by their bands alone.
	Meanings []result.Meaning
}

// ContextKey is the Info key in which a plugin says, in words, what the
// host showed while it measured ("placement: GPU0 on NUMA node 1, ...").
// The judge adds it to the message of a test a measured point warns or
// fails ("; " + context), so the verdict says what a low figure may owe
// to the host; the judge reads nothing in it.
const ContextKey = "context"

// Test judges one test's parsed output against the baseline entries of its
// scope: Judge with Options{Entries: entries, NoBaseline: noBaseline}.
func Test(p result.Parsed, entries []*sku.Entry, noBaseline string) result.Test {
	return Judge(p, Options{Entries: entries, NoBaseline: noBaseline})
}

// Judge judges one test's parsed output. The gates come first and hold
// whatever the baseline: a failed check marked Error (result.Check) makes the test Error; a
// failed correctness check (the plugin's, or o.Gates) makes it Fail, also
// without a baseline and also when the output is otherwise unusable (a
// hardware fault is not hidden by a cut-short log). Then a parse error
// makes it Error, keeping the metrics that were measured. Without entries
// the test is Skip (a gate that could not be made, a warn check, does not
// make a judged test of it: a warn would read as signed off). With entries,
// the worst point, summary, dip or warn check decides (a curve of a metric
// declared better higher that an entry judges gets its entry's dip check,
// or else the default one, sku.DefaultHole, over every measured size),
// except that a
// point outside its band wins over an entry that matches no measured
// point (which is an error otherwise: a label typo, or a run that
// measured less than the baseline asks for). The message puts
// what decided the verdict first, then the rest from worst to least;
// "baseline points not measured" and skip notes come last; no finding is
// said twice. When a point warns or fails, the plugin's Info context
// (ContextKey) ends the message.
func Judge(p result.Parsed, o Options) result.Test {
	t := result.Test{Diagnostics: append([]result.Diagnostic(nil), p.Diagnostics...), Info: p.Info}
	judged := make([]result.Judged, len(p.Metrics))
	for i, m := range p.Metrics {
		judged[i] = result.Judged{Metric: m, Status: result.Skip}
	}
	mt := newMatcher(p.Metrics, o.Defaults)
	var ps problems
	var unmeasured, unmatched []string
	var summaries []result.Judged
	gates := append(append([]result.Check(nil), o.Gates...), p.Checks...)
	checks := append([]result.Check(nil), gates...)
	matchedAny := false
	// The curves an entry's own dip check reads; the others an entry
	// judges get the default rule, once each (holes).
	dipDone := map[string]bool{}
	for _, e := range o.Entries {
		if e.Dip != nil {
			dipped(e, p.Metrics, mt, dipDone)
		}
	}
	for _, e := range o.Entries {
		var n int
		var missing []string
		if e.Summary != "" {
			var j result.Judged
			if j, missing, n = summary(e, p.Metrics, mt); n > 0 {
				summaries = append(summaries, j)
			}
		} else {
			n, missing = judgeEntry(e, judged, mt)
		}
		if e.Dip != nil {
			checks = append(checks, dips(e, p.Metrics, mt)...)
		} else {
			checks = append(checks, holes(e, p.Metrics, mt, dipDone, o.Meanings)...)
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
	floored := 0
	for _, f := range o.Floors {
		floored += judgeFloor(f, judged)
	}
	errGate, failGate := false, false
	for _, c := range gates {
		switch {
		case c.OK:
		case c.Warn:
			ps.add(result.Warn, catWarnGate, c.Name+": "+c.Message)
		case c.Error:
			errGate = true
			ps.add(result.Error, catErrGate, c.Name+": "+c.Message)
		default:
			failGate = true
			ps.add(result.Fail, catGate, c.Name+": "+c.Message)
		}
	}
	for _, c := range checks[len(gates):] { // the dips: part of the baseline's judgement
		if !c.OK {
			st := result.Fail
			if c.Warn {
				st = result.Warn
			}
			ps.add(st, catDip, c.Name+": "+c.Message)
		}
	}
	if p.Error != "" {
		ps.add(result.Error, catParse, p.Error)
	}
	if matchedAny {
		for _, u := range unmatched {
			ps.add(result.Error, catBaseline, u)
		}
		if len(unmeasured) > 0 && p.Error == "" {
			// A sweep that stops short of the baseline's sizes signs off
			// less than the baseline asks for: show it.
			ps.add(result.Warn, catUnmeasured, "baseline points not measured: "+strings.Join(unmeasured, ", "))
		}
	}
	judged = append(judged, summaries...)
	passed := 0
	for _, j := range judged {
		switch j.Status {
		case result.Skip:
		case result.Pass:
			passed++
		default:
			ps.add(j.Status, catPoint, j.Message)
		}
	}
	series, allUnjudged := mt.notJudged(o.Entries, judged[:len(p.Metrics)])
	if len(series) > 0 {
		ps.add(result.Skip, catSeries, seriesNote(series))
	}
	t.Checks = checks
	t.Metrics = judged
	switch {
	case errGate:
		t.Status = result.Error
	case failGate:
		t.Status = result.Fail
	case p.Error != "":
		t.Status = result.Error
	case len(o.Entries) == 0 && floored == 0:
		t.Status = result.Skip
	case len(p.Metrics) == 0:
		t.Status = result.Error
		ps.add(result.Error, catParse, "no metrics in the output")
	case len(o.Entries) > 0 && !matchedAny && allUnjudged && floored == 0:
		// The baseline has entries here, but none for the labels this run
		// measured: nothing compared, as without a baseline.
		t.Status = result.Skip
	case len(o.Entries) > 0 && !matchedAny && !allUnjudged:
		// A baseline exists for this scope but judged nothing: the run did
		// not measure what the baseline expects (sizes, metric, labels).
		// That signs nothing off, so it must not read as a skip.
		t.Status = result.Error
		var has []string
		for _, e := range o.Entries {
			for _, pt := range e.Points {
				has = append(has, describe(e, int64(pt.Size)))
			}
			if e.Value != nil {
				has = append(has, describe(e, int64(e.Size)))
			}
		}
		ps.add(result.Error, catBaseline, "no measured point matches the baseline (it has "+strings.Join(has, ", ")+"; the run measured "+measuredSizes(p.Metrics, o.Entries)+")")
	default:
		t.Status = ps.worst()
		if t.Status == result.Error && ps.failOverBaseline() {
			// A point outside its band is a measured fault; an entry that
			// matched nothing only says the baseline asks for more than the
			// run measured. The failure wins (README, Exit codes: an error
			// must not hide a hardware fault), and leads the message.
			t.Status = result.Fail
		}
	}
	if len(o.Entries) == 0 && o.NoBaseline != "" {
		note := o.NoBaseline
		if floored > 0 {
			note = "judged against the datasheet floor only (" + note + ")"
		}
		ps.add(result.Skip, catNoBaseline, note)
	}
	t.Basis = result.Bases(judged)
	t.Message = ps.message(t.Status, passed)
	if c := p.Info[ContextKey]; c != "" && ps.pointOutside() {
		t.Message += "; " + c
	}
	return t
}

// pointOutside says a measured point (or dip) warns or fails.
func (ps problems) pointOutside() bool {
	for _, p := range ps {
		if p.cat == catPoint && (p.status == result.Warn || p.status == result.Fail) {
			return true
		}
	}
	return false
}

// The kinds of finding, in the order a message lists findings of the same
// status.
const (
	catErrGate = iota
	catParse
	catGate
	catWarnGate
	catPoint
	// catDip: a curve's shape (its dip check) after its points, so that a
	// point below its floor, the plainer finding, is named first.
	catDip
	catBaseline
	catUnmeasured
	catSeries
	catNoBaseline
)

type problem struct {
	status result.Status
	cat    int
	text   string
}

// problems are a test's findings, each with the status it would give.
type problems []problem

func (ps *problems) add(s result.Status, cat int, text string) {
	*ps = append(*ps, problem{s, cat, text})
}

// failOverBaseline says a finding fails and every error is one of the
// baseline's (an entry that matches no measured point): then the failure
// decides the verdict.
func (ps problems) failOverBaseline() bool {
	fail := false
	for _, p := range ps {
		switch {
		case p.status == result.Fail:
			fail = true
		case p.status == result.Error && p.cat != catBaseline:
			return false
		}
	}
	return fail
}

// worst is the worst status a finding gives; Pass when none does.
func (ps problems) worst() result.Status {
	w := result.Pass
	for _, p := range ps {
		w = result.Worst(w, p.status)
	}
	return w
}

// maxFindings bounds the warn, fail and error findings a message lists;
// the notes of a skip (no baseline, series not judged) are always kept.
const maxFindings = 3

// message renders the findings for a test of status s: those of status s
// first (what decided the verdict), then the others from worst to least,
// each kind in its order; repeats dropped. A pass leads with how many
// points passed.
func (ps problems) message(s result.Status, passed int) string {
	rank := func(p problem) int {
		if p.status == s {
			return 0
		}
		return 5 - map[result.Status]int{result.Error: 4, result.Fail: 3, result.Warn: 2, result.Pass: 1}[p.status]
	}
	sorted := append(problems(nil), ps...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if ri, rj := rank(sorted[i]), rank(sorted[j]); ri != rj {
			return ri < rj
		}
		return sorted[i].cat < sorted[j].cat
	})
	var out, notes []string
	seen := map[string]bool{}
	listed, more := 0, 0
	if s == result.Pass {
		out = append(out, result.Count(passed, "point")+" inside "+result.Noun(passed, "its band", "their bands"))
	}
	for _, p := range sorted {
		if p.text == "" || seen[p.text] {
			continue
		}
		seen[p.text] = true
		switch {
		case p.status == result.Skip && s != result.Skip:
			notes = append(notes, p.text)
		case p.status == result.Skip:
			out = append(out, p.text)
		case listed < maxFindings:
			listed++
			out = append(out, p.text)
		default:
			more++
		}
	}
	if more > 0 {
		out = append(out, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(append(out, notes...), "; ")
}

// judgeEntry judges the metrics an entry matches. It returns how many it
// judged and a message for each baseline point with no measurement.
func judgeEntry(e *sku.Entry, judged []result.Judged, mt matcher) (int, []string) {
	n := 0
	var missing []string
	ctx := contextOf(e, judged, mt)
	if e.Value != nil {
		for i := range judged {
			if mt.match(e, judged[i].Metric) && judged[i].Size == int64(e.Size) {
				apply(&judged[i], e, *e.Value, e.Band, ctx.labels(judged[i].Metric))
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
			if mt.match(e, judged[i].Metric) && judged[i].Size == int64(p.Size) {
				apply(&judged[i], e, p.Value, e.Band.Merge(p.Band), ctx.labels(judged[i].Metric))
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

// judgeFloor judges, against floor f (sku.SKU.Floors), the points of its
// metric and labels that no entry judged, whatever their size and the
// plugin's label defaults; it returns how many.
func judgeFloor(f *sku.Entry, judged []result.Judged) int {
	// A floor holds for every value of a label it leaves out, defaults or
	// not (the HBM floor judges triad as well as copy): a datasheet figure
	// is the GPU's, whatever the plugin's default series.
	var mt matcher
	n := 0
	ctx := contextOf(f, judged, mt)
	for i := range judged {
		if judged[i].Status == result.Skip && judged[i].Expected == nil && mt.match(f, judged[i].Metric) {
			apply(&judged[i], f, *f.Value, f.Band, ctx.labels(judged[i].Metric))
			n++
		}
	}
	return n
}

// pointContext names, in the finding of a point an entry judged, what
// the entry is of and which point it is where one entry judges many: the
// entry's labels beyond placement (dtype=bf16) and the labels that differ
// among its points (gpu=3 host=node7), so "tflops {dtype=bf16 gpu=3}
// 312.2 TFLOPS below 668.5" says which matmul on which GPU.
type pointContext struct {
	fixed   map[string]string
	varying []string
}

func contextOf(e *sku.Entry, judged []result.Judged, mt matcher) pointContext {
	c := pointContext{fixed: map[string]string{}}
	for k, v := range e.Labels {
		if k != "placement" {
			c.fixed[k] = v
		}
	}
	seen := map[string]map[string]bool{}
	for _, j := range judged {
		if !mt.match(e, j.Metric) {
			continue
		}
		for k, v := range j.Labels {
			if _, named := e.Labels[k]; named || k == "placement" {
				continue
			}
			if seen[k] == nil {
				seen[k] = map[string]bool{}
			}
			seen[k][v] = true
		}
	}
	for k, vs := range seen {
		if len(vs) > 1 {
			c.varying = append(c.varying, k)
		}
	}
	return c
}

// labels are the context of point m as "k=v k=v": the entry's fixed
// labels and m's values of the varying ones; "" for none.
func (c pointContext) labels(m result.Metric) string {
	labels := map[string]string{}
	for k, v := range c.fixed {
		labels[k] = v
	}
	for _, k := range c.varying {
		labels[k] = m.Labels[k]
	}
	return result.LabelText(labels, nil)
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

// apply judges j against entry e's reference ref and band b; labels, when
// not empty, name the point's series in the finding (pointContext).
func apply(j *result.Judged, e *sku.Entry, ref float64, b sku.Band, labels string) {
	ref64 := ref
	j.Expected = &ref64
	j.Source = e.Source
	j.Basis = e.Kind()
	j.Status, j.Band, j.Message = against(labelledText(j.Metric, e.Unit, labels), j.Value, ref, b, result.FigureName(e.Kind()))
	switch {
	case ref == 0:
	case b.Min.IsSet():
		j.Tolerance = (ref - b.Min.Limit(ref)) / ref
	case b.Max.IsSet():
		j.Tolerance = (b.Max.Limit(ref) - ref) / ref
	}
}

// Value judges one value v (in unit) against reference ref and band b. It
// returns the status, the band rendered for reports, and for warn or fail a
// message such as "busbw 28.7 GB/s at 4 GiB below 310.9 (baseline 345.5 -10%)".
func Value(m result.Metric, unit string, ref float64, b sku.Band) (result.Status, string, string) {
	return against(valueText(m, unit), m.Value, ref, b, "baseline")
}

// against is Value of v, named what in the finding, the reference named
// by its origin ("baseline", or "datasheet" for a floor).
func against(what string, v, ref float64, b sku.Band, origin string) (result.Status, string, string) {
	bandText := renderBand(ref, b)
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
			return ed.status, bandText, fmt.Sprintf("%s %s %s (%s)", what, dir, num(lim), boundOrigin(origin, ref, ed.bound))
		}
	}
	return result.Pass, bandText, ""
}

// valueText renders a measured value for messages: "busbw out-of-place
// 28.7 GB/s at 4 GiB".
func valueText(m result.Metric, unit string) string { return labelledText(m, unit, "") }

// labelledText is valueText with labels ("dtype=bf16") after the metric's
// name: "tflops {dtype=bf16} 312.2 TFLOPS".
func labelledText(m result.Metric, unit, labels string) string {
	name := m.Name
	if labels != "" {
		name += " {" + labels + "}"
	}
	what := fmt.Sprintf("%s %s %s", name, num(m.Value), unit)
	if p := m.Labels["placement"]; p != "" {
		what = fmt.Sprintf("%s %s %s %s", name, p, num(m.Value), unit)
	}
	if m.Size > 0 {
		what += " at " + result.FormatBytes(m.Size)
	}
	return what
}

func boundOrigin(origin string, ref float64, b sku.Bound) string {
	if b.Relative {
		return fmt.Sprintf("%s %s %s", origin, num(ref), b.Text)
	}
	return fmt.Sprintf("%s %s, limit %s", origin, num(ref), b.Text)
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

// measuredSizes names the message sizes a run measured, smallest to
// largest ("8 GiB, 16 GiB"), or, when none is per size, the metric names
// with the values of the labels entries name ("tflops {dtype=unknown}"),
// so that a baseline judging nothing says what it was given.
func measuredSizes(ms []result.Metric, entries []*sku.Entry) string {
	keys := map[string]map[string]bool{}
	for _, e := range entries {
		for k := range e.Labels {
			if keys[e.Metric] == nil {
				keys[e.Metric] = map[string]bool{}
			}
			keys[e.Metric][k] = true
		}
	}
	seen := map[int64]bool{}
	var sizes []int64
	names := map[string]bool{}
	var nameList []string
	for _, m := range ms {
		if m.Size > 0 && !seen[m.Size] {
			seen[m.Size] = true
			sizes = append(sizes, m.Size)
		}
		if m.Size != 0 {
			continue
		}
		ls := map[string]string{}
		for k := range keys[m.Name] {
			ls[k] = m.Labels[k]
			if ls[k] == "" {
				ls[k] = "(none)"
			}
		}
		n := m.Name
		if len(ls) > 0 {
			n += " {" + sku.LabelText(ls) + "}"
		}
		if !names[n] {
			names[n] = true
			nameList = append(nameList, n)
		}
	}
	if len(sizes) == 0 {
		if len(nameList) > 8 {
			nameList = append(nameList[:8], fmt.Sprintf("and %d more", len(nameList)-8))
		}
		return strings.Join(nameList, ", ")
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
	var out []string
	for _, s := range sizes {
		out = append(out, result.FormatBytes(s))
	}
	if len(out) > 8 {
		out = append(out[:3], fmt.Sprintf("... (%d sizes) ...", len(out)-6), out[len(out)-3], out[len(out)-2], out[len(out)-1])
	}
	return strings.Join(out, ", ")
}
