// Package record turns good runs into a baseline: it reads results folders
// (results.json as framework/report writes it), takes per message size the
// median of the runs, derives tolerance bands from their spread, and writes
// the entries into a SKU file with the runs' versions, hosts, dates and
// commands as their source. The band formula is documented in
// baselines/README.md ("Recording a baseline") and on Options.
package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Sample is one run of one test, as recorded in a results folder.
type Sample struct {
	// Origin is the results folder (or results.json) it came from.
	Origin string
	// Run names the run the sample belongs to, for the file's provenance
	// block: several samples (the tests of one run, or the logs of one
	// folder) share it. Empty: Origin.
	Run string
	// Test is "plugin.test".
	Test  string
	Scope plan.Scope
	// Metrics are every measured metric of the test, judged or not.
	Metrics []result.Metric
	// Info holds the plugin's facts: tool versions, hosts, GPU model.
	Info     map[string]string
	Commands []string
	Started  time.Time
	Hosts    []string
}

// maxResults bounds the results.json read.
const maxResults = 1 << 30

// Load reads the results.json of a results folder (dir may also name the
// file itself) and returns one sample per test that measured something.
// A test that errored or failed a correctness gate (wrong data, rank count,
// a GPU of another model) is refused with an error naming the folder and
// the test: a baseline recorded from a broken run would pass broken nodes.
// Bandwidth verdicts in the file are ignored: they judged the run against
// whatever baseline existed then.
func Load(dir string) ([]Sample, error) {
	// A FIFO or a link out of the folder is refused, not waited on or read.
	path := dir
	read := func() ([]byte, error) { return safefs.ReadNamed(path, maxResults) }
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		path = filepath.Join(dir, layout.Results)
		read = func() ([]byte, error) { return safefs.ReadFile(dir, layout.Results, maxResults) }
	}
	data, err := read()
	if err != nil {
		return nil, fmt.Errorf("read results folder: %w (record takes folders written by gpuaccept run or gpuaccept check --out)", err)
	}
	var run result.Run
	if err := json.Unmarshal(data, &run); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	out, err := FromRun(&run, func(result.Test) string { return dir })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// FromRun turns the tests of a run into samples; origin names where each
// test's outputs came from. The rules are Load's: errors and failed
// correctness gates are refused, tests that measured nothing left out.
func FromRun(run *result.Run, origin func(result.Test) string) ([]Sample, error) {
	if len(run.Tests) == 0 {
		return nil, errors.New("no tests")
	}
	var out []Sample
	for _, t := range run.Tests {
		if t.Status == result.Error {
			return nil, fmt.Errorf("test %s ended in error (%s): record only good runs", t.Name, t.Message)
		}
		for _, c := range t.Checks {
			if !c.OK && !c.Warn {
				return nil, fmt.Errorf("test %s failed its %s check (%s): record only good runs", t.Name, c.Name, c.Message)
			}
		}
		if len(t.Metrics) == 0 {
			continue // listed but not run (skip, dry run)
		}
		sc := t.Scope
		if sc.IsZero() {
			sc = run.Scope
		}
		if err := sc.Check(); err != nil {
			return nil, fmt.Errorf("test %s: scope %s: %w", t.Name, sc, err)
		}
		name := t.Name
		if i := strings.IndexByte(name, '['); i > 0 {
			name = name[:i] // check names several logs "nccl.all_reduce[a.log]"
		}
		s := Sample{Origin: origin(t), Test: name, Scope: sc, Info: t.Info, Commands: t.Commands, Started: run.Started, Hosts: run.Hosts}
		for _, m := range t.Metrics {
			if m.Summary == "" { // a summary is computed, not measured
				s.Metrics = append(s.Metrics, m.Metric)
			}
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New("no test measured anything")
	}
	return out, nil
}

// Options control how runs become a baseline. Percentages are positive
// numbers (10 means a floor 10% under the median).
type Options struct {
	// Metrics are the metrics recorded ("busbw"; "tflops", "bw"): per
	// message size where the points have one, else one value per curve.
	// Nil: of each test, the metrics its plugin declares recorded by
	// default (Meanings, result.Meaning.Record: nccl-tests' busbw).
	Metrics []string
	// Meanings are, per test (full name), what its plugin declares its
	// metrics mean (pluginapi.MetricInfo, runner.MeaningsOf): which are
	// recorded by default, and which are better higher. Record derives
	// floors, so it records only a metric declared better higher.
	Meanings map[string][]result.Meaning
	// Instance are, per test (full name), the labels naming which GPU,
	// node or pair a point was measured on (pluginapi.MetricInfo's
	// InstanceLabels: "gpu", "host"): their points are pooled into one
	// entry, so a baseline recorded on one node judges every GPU of
	// another. Nil: none.
	Instance map[string][]string
	// MinFraction: sizes whose median is below this fraction of the
	// curve's highest median are latency-bound and not recorded (0.5).
	MinFraction float64
	// SteepFraction: sizes below this fraction of the highest median sit on
	// the steep part of the curve, where NCCL's protocol and channel choices
	// move numbers more between runs; they get the Steep floors (0.8).
	SteepFraction float64
	// Fail and Warn are the least distance of the fail and warn edges from
	// the median on the plateau (10, 5); SteepFail, SteepWarn on the steep
	// part (15, 8). The runs' spread can only widen them.
	Fail, Warn, SteepFail, SteepWarn float64
	// WarnMax is the upper warn edge (50): far above the baseline usually
	// means fewer ranks or another path than the baseline's.
	WarnMax float64
	// Now is the recording time, written into the source.
	Now time.Time
	// Basis is written into every recorded entry: "" (golden, the
	// site's own hardware) or sku.BasisReference for a recording
	// meant to judge other sites' hardware of the SKU (a built-in file).
	Basis string
}

// ParseBasis reads --basis into Options.Basis: golden (or "", the
// default) is "", reference is result.BasisReference; anything else is an
// error naming the flag.
func ParseBasis(basis string) (string, error) {
	switch basis {
	case "", result.BasisGolden:
		return "", nil
	case result.BasisReference:
		return basis, nil
	}
	return "", fmt.Errorf("baseline record: --basis %q: want golden or reference", basis)
}

// DefaultOptions are the values documented in baselines/README.md.
func DefaultOptions() Options {
	return Options{MinFraction: 0.5, SteepFraction: 0.8, Fail: 10, Warn: 5, SteepFail: 15, SteepWarn: 8, WarnMax: 50}
}

// Band is the band record derives for one size from the values of N runs.
// Percentages are distances under the median, rounded up to whole percent.
//
//	m     = median of the values
//	sigma = 1.4826 * median(|v - m|)      robust standard deviation (MAD)
//	worst = 100 * (m - min(v)) / m        the slowest good run, in %
//	warn  = max(floorWarn, 3*sigma/m*100, worst + 1)
//	fail  = max(floorFail, 6*sigma/m*100, warn + 5)
//
// The MAD ignores one odd run that a standard deviation would chase; three
// of its sigmas cover the normal run-to-run noise, so a healthy run seldom
// warns, and fail sits at twice that. No run used to record may warn (worst
// + 1), and the floors stand in for the spread that a handful of runs (or
// one) cannot show. fail is at most 99 and warn at most 94: a wider floor
// could never fail.
func Band(values []float64, floorFail, floorWarn float64) (median, fail, warn float64) {
	m := result.Median(values)
	dev := make([]float64, len(values))
	lowest := m
	for i, v := range values {
		dev[i] = math.Abs(v - m)
		lowest = math.Min(lowest, v)
	}
	sigma := 1.4826 * result.Median(dev)
	worst := 0.0
	if m > 0 {
		worst = 100 * (m - lowest) / m
	}
	rel := 0.0
	if m > 0 {
		rel = 100 * sigma / m
	}
	warn = math.Max(floorWarn, math.Max(math.Ceil(3*rel), math.Ceil(worst+1)))
	fail = math.Max(floorFail, math.Max(math.Ceil(6*rel), warn+5))
	// A floor at -100% or lower cannot fail; runs that far apart make a
	// band that is nearly so, which diff and review will show.
	return m, math.Min(fail, 99), math.Min(warn, 94)
}

// key identifies a curve: test, scope, the metric and its labels.
type curveKey struct {
	test   string
	scope  plan.Scope
	metric string
	labels string
}

// Record turns samples into baseline entries: for every test and scope, one
// entry per labelled curve of each of opt.Metrics (one per placement, ...),
// with one point per bandwidth-bound size, or one value for a metric that
// is not per size (a GPU's matmul TFLOPS), its band from the spread of the
// runs and of the GPUs pooled by opt.Instance. Entries come sorted by
// test, scope, metric and labels. Errors: no sample has the metrics.
//
// A point measured in several cycles (nccl-tests -N: Metric.Cycles) counts
// with its Value, the worst cycle's, not its Median: that is the number
// check and run judge, so a baseline recorded from -N runs is the median of
// the runs' worst cycles and judges like with like. The entry's source
// says so.
func Record(samples []Sample, opt Options) ([]*sku.Entry, error) {
	isRecorded := func(test, metric string) bool {
		if len(opt.Metrics) > 0 {
			return slices.Contains(opt.Metrics, metric)
		}
		m, ok := result.MeaningOf(opt.Meanings[test], metric)
		return ok && m.Record
	}
	instance := func(test, label string) bool { return slices.Contains(opt.Instance[test], label) }
	key := func(test, label string) bool {
		return slices.ContainsFunc(opt.Meanings[test], func(m result.Meaning) bool { return slices.Contains(m.KeyLabels, label) })
	}
	if err := opt.check(); err != nil {
		return nil, err
	}
	type curve struct {
		labels map[string]string
		unit   string
		values map[int64][]float64
		runs   map[string]bool
	}
	curves := map[curveKey]*curve{}
	runsOf := map[curveKey][]Sample{} // per test and scope
	cycles := map[curveKey]int{}      // per test and scope: the most cycles of a point
	// labelVals: per test and scope, the values each label takes.
	labelVals := map[curveKey]map[string]map[string]bool{}
	for _, s := range samples {
		tk := curveKey{test: s.Test, scope: s.Scope}
		runsOf[tk] = append(runsOf[tk], s)
		if labelVals[tk] == nil {
			labelVals[tk] = map[string]map[string]bool{}
		}
		for _, m := range s.Metrics {
			if !isRecorded(s.Test, m.Name) || m.Size < 0 || math.IsNaN(m.Value) {
				continue
			}
			for k, v := range m.Labels {
				if labelVals[tk][k] == nil {
					labelVals[tk][k] = map[string]bool{}
				}
				labelVals[tk][k][v] = true
			}
		}
	}
	// Labels that do not vary within a test (type=float, redop=sum) stay
	// out of the entries, as in hand-written files; those that vary tell
	// its curves apart. A key label its plugin declares always shows
	// (nccl-tests' placement, a training run's model and layers).
	keep := func(tk curveKey, label string) bool {
		return key(tk.test, label) || len(labelVals[tk][label]) > 1 && !instance(tk.test, label)
	}
	for _, s := range samples {
		tk := curveKey{test: s.Test, scope: s.Scope}
		for _, m := range s.Metrics {
			if !isRecorded(s.Test, m.Name) || m.Size < 0 || math.IsNaN(m.Value) {
				continue
			}
			lab := map[string]string{}
			for k, v := range m.Labels {
				if keep(tk, k) {
					lab[k] = v
				}
			}
			ck := curveKey{test: s.Test, scope: s.Scope, metric: m.Name, labels: sku.LabelText(lab)}
			c := curves[ck]
			if c == nil {
				c = &curve{labels: lab, unit: m.Unit, values: map[int64][]float64{}, runs: map[string]bool{}}
				curves[ck] = c
			}
			c.values[m.Size] = append(c.values[m.Size], m.Value)
			c.runs[s.Origin] = true
			cycles[tk] = max(cycles[tk], m.Cycles)
		}
	}
	if len(curves) == 0 {
		var have []string
		for _, smp := range samples {
			for _, m := range smp.Metrics {
				if !slices.Contains(have, m.Name) {
					have = append(have, m.Name)
				}
			}
		}
		sort.Strings(have)
		if len(opt.Metrics) == 0 {
			return nil, fmt.Errorf("record: the plugins of the runs' tests declare no metric recorded by default; the runs measured %s: choose with --metric", strings.Join(have, ", "))
		}
		return nil, fmt.Errorf("record: no run measured %s; the runs measured %s: choose with --metric", strings.Join(opt.Metrics, " or "), strings.Join(have, ", "))
	}
	for k, c := range curves {
		// The band formula puts edges under the median: for a time that
		// would pass any slowdown and fail a faster node; for a metric of
		// unknown sense it would guess.
		switch m, _ := result.MeaningOf(opt.Meanings[k.test], k.metric); m.Better {
		case result.BetterHigher:
		case result.BetterLower:
			return nil, fmt.Errorf("record: %s of %s in %s is better lower, as its plugin declares; record derives floors, for a metric better higher: write its entry by hand with max/warn_max (baselines/README.md)", k.metric, k.test, c.unit)
		default:
			return nil, fmt.Errorf("record: %s of %s in %s: its plugin does not declare it better higher (pluginapi.MetricInfo.Better); record derives floors only for such a metric: write its entry by hand (baselines/README.md)", k.metric, k.test, c.unit)
		}
	}
	keys := make([]curveKey, 0, len(curves))
	for k := range curves {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.test != b.test {
			return a.test < b.test
		}
		if a.scope != b.scope {
			return a.scope.Nodes < b.scope.Nodes || a.scope.Nodes == b.scope.Nodes && a.scope.GPUsPerNode < b.scope.GPUsPerNode
		}
		if a.metric != b.metric {
			return a.metric < b.metric
		}
		// out-of-place before in-place, as nccl-tests prints them
		return a.labels > b.labels
	})
	var out []*sku.Entry
	for _, k := range keys {
		c := curves[k]
		sizes := make([]int64, 0, len(c.values))
		peak := 0.0
		for s, vs := range c.values {
			sizes = append(sizes, s)
			peak = math.Max(peak, result.Median(vs))
		}
		sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
		e := &sku.Entry{Test: k.test, Scope: k.scope, Metric: k.metric, Unit: c.unit, Labels: c.labels, Basis: opt.Basis,
			Source: source(k.test, k.scope, runsOf[curveKey{test: k.test, scope: k.scope}], len(c.runs), cycles[curveKey{test: k.test, scope: k.scope}], opt)}
		e.Band = mustBand(opt.Fail, opt.Warn, opt.WarnMax)
		if vs, ok := c.values[0]; ok && len(sizes) == 1 {
			// Not per size: one value, the median of every run's and
			// every pooled GPU's, its band from their spread.
			med, fail, warn := Band(vs, opt.Fail, opt.Warn)
			if err := tooWide(k, 0, vs, med, fail); err != nil {
				return nil, err
			}
			v := round2(med)
			e.Value = &v
			e.Band = mustBand(fail, warn, opt.WarnMax)
			out = append(out, e)
			continue
		}
		for _, s := range sizes {
			vs := c.values[s]
			med := result.Median(vs)
			if peak <= 0 || med < opt.MinFraction*peak {
				continue
			}
			ff, fw := opt.Fail, opt.Warn
			if med < opt.SteepFraction*peak {
				ff, fw = opt.SteepFail, opt.SteepWarn
			}
			_, fail, warn := Band(vs, ff, fw)
			if err := tooWide(k, s, vs, med, fail); err != nil {
				return nil, err
			}
			p := sku.Point{Size: sku.Size(s), Value: round2(med)}
			if fail != opt.Fail || warn != opt.Warn {
				p.Band = mustBand(fail, warn, 0)
			}
			e.Points = append(e.Points, p)
		}
		if len(e.Points) > 0 {
			out = append(out, e)
		}
	}
	return out, nil
}

// check rejects options that would write a band that cannot work: a warn
// edge outside its fail edge, or a floor at -100% or below.
func (o Options) check() error {
	for _, p := range []struct {
		name       string
		fail, warn float64
	}{{"fail/warn", o.Fail, o.Warn}, {"steep fail/warn", o.SteepFail, o.SteepWarn}} {
		if !(0 < p.warn && p.warn < p.fail && p.fail < 100) {
			return fmt.Errorf("record: %s floors %g%%/%g%%: want 0 < warn < fail < 100", p.name, p.fail, p.warn)
		}
	}
	if o.WarnMax < 0 || o.MinFraction < 0 || o.MinFraction > 1 || o.SteepFraction < 0 || o.SteepFraction > 1 {
		return fmt.Errorf("record: warn-max %g%% must be >= 0 (0: none), min and steep fractions %g, %g between 0 and 1", o.WarnMax, o.MinFraction, o.SteepFraction)
	}
	return nil
}

// mustBand builds a band of relative edges. Its percentages come from
// Band (capped below 100) and from options that check accepted, so a parse
// error here is a bug.
func mustBand(fail, warn, warnMax float64) sku.Band {
	var b sku.Band
	var err error
	if fail > 0 {
		if b.Min, err = sku.ParseBound(fmt.Sprintf("-%g%%", fail), true); err != nil {
			panic(err)
		}
	}
	if warn > 0 {
		if b.WarnMin, err = sku.ParseBound(fmt.Sprintf("-%g%%", warn), true); err != nil {
			panic(err)
		}
	}
	if warnMax > 0 {
		if b.WarnMax, err = sku.ParseBound(fmt.Sprintf("+%g%%", warnMax), false); err != nil {
			panic(err)
		}
	}
	return b
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// source writes where an entry's numbers come from: how they were made and
// the runs, grouped by what they share (date, hosts, GPU, versions,
// command), so that eight runs of one command read as one line. cycles is
// the most cycles a point of the runs was measured in (0 or 1: once).
func source(test string, sc plan.Scope, runs []Sample, n, cycles int, opt Options) string {
	var b strings.Builder
	if n == 1 {
		fmt.Fprintf(&b, "values of one run of %s at %s, band: the floors, as one run has no spread (baselines/README.md, Recording a baseline)", test, sc)
	} else {
		fmt.Fprintf(&b, "median of %d runs of %s at %s, band from their spread (baselines/README.md, Recording a baseline)", n, test, sc)
	}
	if cycles > 1 {
		fmt.Fprintf(&b, ", each run's value per size the worst of its cycles (up to %d)", cycles)
	}
	if !opt.Now.IsZero() {
		fmt.Fprintf(&b, ", recorded %s", opt.Now.UTC().Format("2006-01-02"))
	}
	var order []string
	groups := map[string][]string{}
	for _, r := range runs {
		f := facts(r)
		if _, ok := groups[f]; !ok {
			order = append(order, f)
		}
		groups[f] = append(groups[f], r.Origin)
	}
	b.WriteString("; runs:")
	for i, f := range order {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s", strings.Join(groups[f], ", "))
		if f != "" {
			fmt.Fprintf(&b, " (%s)", f)
		}
	}
	return b.String()
}

// facts renders what a run says about itself besides its folder.
func facts(r Sample) string {
	var fs []string
	if !r.Started.IsZero() {
		fs = append(fs, r.Started.UTC().Format("2006-01-02"))
	}
	hosts := strings.Join(r.Hosts, ",")
	if hosts == "" {
		hosts = r.Info["hosts"]
	}
	if hosts != "" {
		fs = append(fs, "hosts "+hosts)
	}
	if g := r.Info["gpu"]; g != "" {
		fs = append(fs, g)
	}
	var vk []string
	for k := range r.Info {
		if strings.HasSuffix(k, "version") {
			vk = append(vk, k)
		}
	}
	sort.Strings(vk)
	for _, k := range vk {
		fs = append(fs, k+" "+r.Info[k])
	}
	if len(r.Commands) > 0 {
		short := make([]string, len(r.Commands))
		for i, c := range r.Commands {
			short[i] = result.ShortCommand(c)
		}
		fs = append(fs, "command: "+strings.Join(short, " && "))
	}
	return strings.Join(fs, ", ")
}

// MaxFloor is the widest fail edge record derives, in percent under the
// median: runs that spread further apart (a busy or clock-locked GPU among
// good ones) would make a band that passes what it should catch.
const MaxFloor = 50

// tooWide refuses the band of one point of curve k (size 0: not per size)
// whose fail edge lies more than MaxFloor under the median of vs, naming
// the values so the odd run can be found and left out.
func tooWide(k curveKey, size int64, vs []float64, med, fail float64) error {
	if fail <= MaxFloor {
		return nil
	}
	what := k.metric
	if k.labels != "" {
		what += " {" + k.labels + "}"
	}
	if size > 0 {
		what += " at " + result.FormatBytes(size)
	}
	vals := make([]string, len(vs))
	for i, v := range vs {
		vals[i] = strconv.FormatFloat(v, 'f', 1, 64)
	}
	return fmt.Errorf("record: %s of %s at %s: the runs spread so far apart (%s, median %.1f) that the fail edge would lie %.0f%% under the median, past %d%%: a band that wide passes a degraded GPU; record from good runs only", what, k.test, k.scope, strings.Join(vals, ", "), med, fail, MaxFloor)
}
