// Package skucheck checks a parsed SKU file against the plugins that will
// judge it: every suite and baseline test exists, every baseline metric is
// one the test reports, in its unit, with labels it carries, with bands
// bounding the side the plugin declares worse (pluginapi.MetricInfo.Better),
// and every physical ceiling limits a metric better higher that some suite
// test reports. The framework lists no unit: what a unit means is the
// plugin's declaration, so a SKU file parses without plugins (framework/sku
// checks its syntax) and is held to its plugins' meanings here. It reports
// every problem of the file at once, each at the line of the field at fault
// ("line 148: field unit: ..."), as sku.Parse does for the file's own rules.
package skucheck

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Describer is what the check needs of the plugin host.
type Describer interface {
	Describe(ctx context.Context, plugin string) (pluginapi.Description, error)
}

// Check returns nil, or a *sku.Problems listing every problem of s against
// its plugins. s may be what sku.Parse read of a file with problems. A plugin that cannot be described (not found, crashed) is a
// problem of each line naming one of its tests, with the host's error.
func Check(ctx context.Context, d Describer, s *sku.SKU) error {
	descs := map[string]*pluginapi.Description{}
	descErr := map[string]error{}
	test := func(name string) (*pluginapi.TestInfo, error) {
		p, t, ok := strings.Cut(name, ".")
		if !ok || p == "" || t == "" {
			return nil, fmt.Errorf("%q is not plugin.test", name)
		}
		if err, bad := descErr[p]; bad {
			return nil, err
		}
		desc, ok := descs[p]
		if !ok {
			dd, err := d.Describe(ctx, p)
			if err != nil {
				descErr[p] = err
				return nil, err
			}
			desc = &dd
			descs[p] = desc
		}
		var names []string
		for i := range desc.Tests {
			if desc.Tests[i].Name == t {
				return &desc.Tests[i], nil
			}
			names = append(names, p+"."+desc.Tests[i].Name)
		}
		return nil, fmt.Errorf("plugin %s has no test %q (known: %s)", p, t, strings.Join(names, ", "))
	}
	var errs []error
	inSuite := map[string]bool{}
	for _, name := range s.SuiteNames() {
		su := s.Suites[name]
		if su == nil {
			continue // sku.Parse reports it; a file with problems is checked too
		}
		for _, st := range su.Tests {
			if st == nil {
				continue
			}
			inSuite[st.Test] = true
			if st.Skip != "" {
				continue // listed for the report; may have no plugin yet
			}
			ti, err := test(st.Test)
			if err != nil {
				errs = append(errs, problemAt(st.Line, "test", "%v", err))
				continue
			}
			errs = append(errs, checkSiteParams(ti, st)...)
			errs = append(errs, checkDeclared(ti, st)...)
		}
	}
	for _, e := range s.Baselines {
		if e == nil {
			continue
		}
		if !inSuite[e.Test] {
			// Most often a typo naming another real test: the suite's test
			// would then run without its baseline.
			errs = append(errs, problemAt(e.FieldLine("test"), "test", "%s is in no suite of SKU %s (suites list: %s)", e.Test, s.Name, strings.Join(slices.Sorted(maps.Keys(inSuite)), ", ")))
			continue
		}
		ti, err := test(e.Test)
		if err != nil {
			errs = append(errs, problemAt(e.FieldLine("test"), "test", "%v", err))
			continue
		}
		errs = append(errs, checkMetric(withDeclared(ti, s.Declared(e.Test)), e)...)
	}
	for _, c := range s.Ceilings {
		if c == nil || c.Metric == "" {
			continue // sku.Parse reports it
		}
		// A ceiling no test reports (a typo, bits for bytes) would never
		// judge anything, and the impossible would pass.
		var tests []string
		found, notRate := false, ""
		for _, name := range slices.Sorted(maps.Keys(inSuite)) {
			if !c.Applies(name) {
				continue
			}
			ti, err := test(name)
			if err != nil {
				continue // reported at the suite test's line
			}
			tests = append(tests, name)
			for _, m := range withDeclared(ti, s.Declared(name)).Metrics {
				if m.Name == c.Metric && m.Unit == c.Unit {
					found = true
					if m.Better != result.BetterHigher && notRate == "" {
						notRate = name
					}
				}
			}
		}
		switch {
		case len(tests) == 0:
			errs = append(errs, problemAt(c.Line, "ceilings.tests", "the ceiling on %s applies to no test of the SKU's suites", c.Metric))
		case !found:
			errs = append(errs, problemAt(c.Line, "ceilings.metric", "none of %s reports %s in %s: the ceiling would judge nothing", strings.Join(tests, ", "), c.Metric, c.Unit))
		case notRate != "":
			errs = append(errs, problemAt(c.Line, "ceilings.metric", "%s %s in %s is not declared better higher by its plugin: a physical ceiling limits how much a link carries or a GPU computes", notRate, c.Metric, c.Unit))
		}
	}
	return sku.NewProblems(s.File, errs)
}

// checkSiteParams reports each site_params name of st that the test ti
// does not take: a typo would leave the parameter held to the suite's
// value, and a site's own NIC map a verify finding.
func checkSiteParams(ti *pluginapi.TestInfo, st *sku.SuiteTest) []error {
	line := st.SiteParamsLine
	if line == 0 {
		line = st.Line
	}
	var errs []error
	for _, k := range st.SiteParams {
		if name, ok := strings.CutPrefix(k, "env."); ok && plan.EnvName(name) {
			continue // the environment variable NAME, which every test takes
		}
		if !slices.ContainsFunc(ti.Params, func(p pluginapi.Param) bool { return p.Name == k }) {
			names := make([]string, 0, len(ti.Params))
			for _, p := range ti.Params {
				names = append(names, p.Name)
			}
			errs = append(errs, problemAt(line, "site_params", "%s takes no parameter %q (it takes: %s)", st.Test, k, strings.Join(names, ", ")))
		}
	}
	return errs
}

// withDeclared returns ti with the metrics the SKU declares for it
// (sku.SKU.Declared) after its own, as the judge, the reports and baseline
// record read them (sku.SKU.WithDeclared): better higher or lower as
// declared, drawn per label set, labels the pattern's named groups. ti
// itself is not changed.
func withDeclared(ti *pluginapi.TestInfo, ds []*sku.DeclaredMetric) *pluginapi.TestInfo {
	if len(ds) == 0 || !readsDeclared(ti) {
		return ti // checkDeclared reports metrics: on a test that reads none
	}
	out := *ti
	out.Metrics = slices.Clone(ti.Metrics)
	for _, d := range ds {
		if slices.ContainsFunc(ti.Metrics, func(m pluginapi.MetricInfo) bool { return m.Name == d.Name }) {
			continue // checkDeclared reports the clash
		}
		m := d.Meaning()
		_, labels, _ := sku.Compile(d.Pattern)
		out.Metrics = append(out.Metrics, pluginapi.MetricInfo{Name: m.Name, Unit: m.Unit, Better: m.Better, Plot: m.Plot, Record: m.Record,
			Description: "declared by the SKU file: " + d.Pattern, Labels: labels})
	}
	return &out
}

// readsDeclared says ti reads the metrics a SKU file declares: it takes
// the parameter they reach it by.
func readsDeclared(ti *pluginapi.TestInfo) bool {
	return slices.ContainsFunc(ti.Params, func(p pluginapi.Param) bool { return p.Name == sku.DeclaredParam })
}

// checkDeclared (ti: the plugin's own declaration) reports a suite test
// of a test that reports only declared metrics without any, metrics: on a
// test whose plugin reads no declared
// metrics (it takes no parameter sku.DeclaredParam: they would be judged
// and never measured), and a declared metric named as one of the plugin's
// own (two meanings for one name).
func checkDeclared(ti *pluginapi.TestInfo, st *sku.SuiteTest) []error {
	if len(st.Metrics) == 0 {
		if readsDeclared(ti) && len(ti.Metrics) == 0 {
			// It would run and report nothing: its plan refuses it, but
			// only once the run is under way.
			return []error{problemAt(st.Line, "metrics", "%s reports only the metrics the SKU file declares for it, and this suite test declares none (metrics: name, pattern, unit, better)", st.Test)}
		}
		return nil
	}
	if !readsDeclared(ti) {
		return []error{problemAt(st.Line, "metrics", "%s reads no declared metrics (it takes no parameter %s): declare metrics on a test that reads them, such as workload.command", st.Test, sku.DeclaredParam)}
	}
	var errs []error
	for _, d := range st.Metrics {
		if d != nil && slices.ContainsFunc(ti.Metrics, func(m pluginapi.MetricInfo) bool { return m.Name == d.Name }) {
			errs = append(errs, problemAt(d.FieldLine("name"), "metrics.name", "%s reports a metric %s of its own: name the declared one otherwise", st.Test, d.Name))
		}
	}
	return errs
}

// problemAt is the problem of field at line, as sku.Parse reports them.
func problemAt(line int, field, format string, args ...any) sku.Problem {
	return sku.Problem{Line: line, Field: field, Message: fmt.Sprintf(format, args...)}
}

func checkMetric(ti *pluginapi.TestInfo, e *sku.Entry) []error {
	var mi *pluginapi.MetricInfo
	var names []string
	for i := range ti.Metrics {
		if ti.Metrics[i].Name == e.Metric {
			mi = &ti.Metrics[i]
		}
		names = append(names, ti.Metrics[i].Name)
	}
	if mi == nil {
		return []error{problemAt(e.FieldLine("metric"), "metric", "%s reports no metric %q (it reports: %s)", e.Test, e.Metric, strings.Join(names, ", "))}
	}
	var errs []error
	if mi.Unit != e.Unit {
		errs = append(errs, problemAt(e.FieldLine("unit"), "unit", "%s %s is in %s, not %s", e.Test, e.Metric, mi.Unit, e.Unit))
	}
	errs = append(errs, checkDirection(mi, e)...)
	allowed := map[string][]string{}
	for _, l := range mi.Labels {
		k, vs, _ := strings.Cut(l, "=")
		allowed[k] = nil
		if vs != "" {
			allowed[k] = strings.Split(vs, "|")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.Labels)) {
		vals, ok := allowed[k]
		if !ok {
			errs = append(errs, problemAt(e.FieldLine("labels"), "labels", "%s %s has no label %q (its labels: %s)", e.Test, e.Metric, k, strings.Join(slices.Sorted(maps.Keys(allowed)), ", ")))
			continue
		}
		if vals != nil && !slices.Contains(vals, e.Labels[k]) {
			errs = append(errs, problemAt(e.FieldLine("labels"), "labels", "label %s=%q is not one of %s", k, e.Labels[k], strings.Join(vals, ", ")))
		}
	}
	return errs
}

// checkDirection catches a band written for the wrong direction of the
// metric, as its plugin declares it (mi.Better): a time with floors only
// passes any slowdown, a rate with ceilings only passes a dead link. Each
// band that judges something (the entry's, or each point's merged with
// it) must bound the bad side. A dip check reads a value falling as the
// size grows: only a metric better higher has one. A metric of unknown
// direction is judged by the bands as written.
func checkDirection(mi *pluginapi.MetricInfo, e *sku.Entry) []error {
	var errs []error
	for _, b := range e.JudgingBands() {
		switch {
		case mi.Better == result.BetterLower && !b.Max.IsSet() && !b.WarnMax.IsSet():
			errs = append(errs, problemAt(e.FieldLine("band"), "band", "%s is in %s, better lower (as %s declares), and the band has no max or warn_max: it would pass any slowdown (give max: \"+10%%\"; warn_min flags a value far below the baseline)", e.Metric, e.Unit, e.Test))
		case mi.Better == result.BetterHigher && !b.Min.IsSet() && !b.WarnMin.IsSet():
			errs = append(errs, problemAt(e.FieldLine("band"), "band", "%s is in %s, better higher (as %s declares), and the band has no min or warn_min: it would pass a dead link (give min: \"-10%%\")", e.Metric, e.Unit, e.Test))
		default:
			continue
		}
		break // one problem per entry: every band of it is written alike
	}
	if d := e.Dip; d != nil && mi.Better != result.BetterHigher {
		errs = append(errs, problemAt(d.Line, "dip", "%s %s is not declared better higher: the dip check looks for a rate falling as the message size grows (a time grows with it)", e.Test, e.Metric))
	}
	return errs
}

// Unbaselined lists the suite tests of s that have no baseline at any scope
// and are not marked skip: they run, and nothing but the datasheet floors
// (said where there are some) judges their numbers.
func Unbaselined(s *sku.SKU) []string {
	has := map[string]bool{}
	for _, e := range s.Baselines {
		has[e.Test] = true
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range s.SuiteNames() {
		for _, st := range s.Suites[n].Tests {
			if st.Skip == "" && !has[st.Test] && !seen[st.Test] {
				seen[st.Test] = true
				note := fmt.Sprintf("suite %s: %s has no baseline at any scope", n, st.Test)
				if len(s.Floors(st.Test, plan.Scope{Nodes: 1, GPUsPerNode: 1})) > 0 {
					// Per-GPU floors hold at every scope.
					note += ": its datasheet floors judge it"
				}
				out = append(out, note)
			}
		}
	}
	return out
}
