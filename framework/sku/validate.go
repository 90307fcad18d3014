package sku

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// A SKU file is read without the plugins: this package checks its syntax
// and the rules that hold whatever a metric means. What a unit means (which
// way is better, whether a band bounds the right side, whether a ceiling
// limits a rate) is the plugin's declaration (pluginapi.MetricInfo), which
// framework/skucheck holds an entry to: the framework lists no unit.

// unitProblem says why unit cannot be an entry's unit: missing, or not one
// word-like line ("GB/s", "tokens/s"). "" when it can.
func unitProblem(unit string) string {
	switch {
	case unit == "":
		return "missing (the metric's unit, as its plugin declares it: gpuaccept list tests)"
	case strings.TrimSpace(unit) != unit || strings.ContainsAny(unit, "\r\n\t"):
		return fmt.Sprintf("%q: want the unit on one line, without surrounding spaces", unit)
	}
	return ""
}

// validate returns every problem of the file, each naming its line where
// the field has one.
func (s *SKU) validate() []error {
	var errs []error
	if s.Name == "" && !s.nameUnreadable {
		errs = append(errs, problemAt(0, "sku", "missing"))
	}
	if s.Name == Auto {
		errs = append(errs, problemAt(s.lines["sku"], "sku", "%q is --sku auto's (the SKU picked from the nodes' GPUs): name the SKU after its hardware", s.Name))
	}
	if s.GPUsPerNode < 0 {
		errs = append(errs, problemAt(s.lines["gpus_per_node"], "gpus_per_node", "%d is negative", s.GPUsPerNode))
	}
	if s.Instance != "" && (strings.TrimSpace(s.Instance) == "" || strings.ContainsAny(s.Instance, "\r\n")) {
		// --sku auto prints it in one line naming the SKU.
		errs = append(errs, problemAt(s.lines["instance"], "instance", "%q: want the instance type on one line (\"Azure NDm A100 v4\"), or leave it out", s.Instance))
	}
	for _, name := range s.SuiteNames() {
		su := s.Suites[name]
		if su == nil || len(su.Tests) == 0 {
			line := s.lines["suite "+name]
			if su != nil {
				line = su.Line
			}
			errs = append(errs, problemAt(line, "", "suite %q: no tests", name))
			continue
		}
		if _, ok := su.Params[DeclaredParam]; ok {
			errs = append(errs, problemAt(su.Line, "params."+DeclaredParam, "suite %q: the parameter %s is set from a test's metrics: list; declare the metrics there", name, DeclaredParam))
		}
		for i, t := range su.Tests {
			if t == nil {
				errs = append(errs, problemAt(su.Line, "", "suite %q: test %d is empty", name, i+1))
				continue
			}
			if _, _, ok := strings.Cut(t.Test, "."); !ok {
				errs = append(errs, problemAt(t.Line, "test", "%q is not plugin.test", t.Test))
			}
			if t.MinGPUs < 0 || t.MinGPUs > plan.MaxNodes*plan.MaxGPUsPerNode {
				errs = append(errs, problemAt(t.Line, "min_gpus", "%d: want a GPU count, 0 (any) or more", t.MinGPUs))
			}
			errs = append(errs, t.validateSiteParams()...)
			errs = append(errs, t.validateDeclared()...)
		}
	}
	errs = append(errs, s.checkDeclaredAgree()...)
	for i, e := range s.Baselines {
		if e == nil {
			errs = append(errs, problemAt(s.lines[fmt.Sprintf("entry %d", i+1)], "baselines", "entry %d is empty", i+1))
			continue
		}
		errs = append(errs, e.validate()...)
	}
	errs = append(errs, s.validateHardware()...)
	return errs
}

// validate returns every problem of an entry, each as "line N: field F:
// ...", N being the line of the field itself.
func (e *Entry) validate() []error {
	errs := append([]error(nil), e.unknown...)
	add := func(line int, field, format string, args ...any) {
		errs = append(errs, problemAt(line, field, format, args...))
	}
	if !strings.Contains(e.Test, ".") {
		add(e.FieldLine("test"), "test", "%q is not plugin.test", e.Test)
	}
	switch err := e.Scope.Check(); {
	case e.Scope.Nodes < 1 || e.Scope.GPUsPerNode < 1:
		add(e.FieldLine("scope"), "scope", "nodes and gpus_per_node must be >= 1, got %s", e.Scope)
	case err != nil:
		// Beyond plan's limits: no run has the scope, --nodes refuses it.
		add(e.FieldLine("scope"), "scope", "%s: %v", e.Scope, err)
	}
	if e.Metric == "" {
		add(e.Line, "metric", "missing")
	}
	if p := unitProblem(e.Unit); p != "" {
		add(e.FieldLine("unit"), "unit", "%s", p)
	}
	if e.Source == "" {
		add(e.Line, "source", "missing (say where the numbers come from)")
	}
	if e.Kind() == result.BasisReference && e.Source != "" && !CitesMeasurement(e.Source) {
		add(e.FieldLine("source"), "source", "a reference entry judges other sites' hardware on its source's authority: name where the number can be read again (a URL, an issue, a repository file at a commit, a seed, a recording under testdata/), or leave basis out (golden: this site's own recording)")
	}
	if a := e.Basis; a != "" && a != result.BasisGolden && a != result.BasisReference {
		add(e.FieldLine("basis"), "basis", "%q is not golden (recorded on this site's hardware) or reference (a cited public measurement)", a)
	}
	if (e.Value == nil) == (len(e.Points) == 0) {
		add(e.Line, "", "fields value/points: give exactly one of a single value or a list of points")
	}
	if e.Band.IsZero() && !e.pointsHaveBands() {
		add(e.Line, "band", "missing (give at least min or max)")
	}
	errs = append(errs, e.validateCurve()...)
	errs = append(errs, e.checkUnits(e.Band, e.FieldLine("band"))...)
	for _, p := range e.Points {
		errs = append(errs, e.checkUnits(p.Band, p.Line)...)
	}
	if e.Ceiling < 0 {
		add(e.FieldLine("ceiling"), "ceiling", "%g is negative", e.Ceiling)
	}
	if e.Value != nil {
		errs = append(errs, e.checkValue(*e.Value, e.Band, e.FieldLine("value"))...)
	}
	seen := map[Size]bool{}
	for _, p := range e.Points {
		if seen[p.Size] {
			add(p.Line, "size", "%d listed twice", p.Size)
		}
		seen[p.Size] = true
		errs = append(errs, e.checkValue(p.Value, e.Band.Merge(p.Band), p.Line)...)
	}
	return errs
}

// JudgingBands returns the bands that judge something of e: the entry's,
// or with points each point's merged with it. Empty bands (reported as
// missing) are left out. skucheck holds each to the direction the
// metric's plugin declares.
func (e *Entry) JudgingBands() []Band {
	bands := []Band{e.Band}
	if len(e.Points) > 0 {
		bands = bands[:0]
		for _, p := range e.Points {
			bands = append(bands, e.Band.Merge(p.Band))
		}
	}
	out := bands[:0]
	for _, b := range bands {
		if !b.IsZero() {
			out = append(out, b)
		}
	}
	return out
}

// checkValue checks one reference value, written at line, against its band
// and the entry's ceiling. A reference that fails its own band, or that is
// above the physical ceiling, is almost always a slip: most often GB/s and
// Gb/s mixed up (8x), which the message says when the ratio is near 8. A
// broken band and a reference failing it are both reported: fixing one
// alone would not make the file right.
func (e *Entry) checkValue(ref float64, b Band, line int) []error {
	if math.IsNaN(ref) || math.IsInf(ref, 0) {
		return []error{problemAt(line, "value", "%g is not a number", ref)}
	}
	errs := b.check(ref, line)
	if ref == 0 {
		var rel []string
		for _, x := range []struct {
			name string
			b    Bound
		}{{"min", b.Min}, {"warn_min", b.WarnMin}} {
			if x.b.IsSet() && x.b.Relative {
				rel = append(rel, x.name+" "+x.b.Text)
			}
		}
		if len(rel) > 0 {
			errs = append(errs, problemAt(line, "value", "0 with a relative floor (%s): the floor is 0 and can never fail", strings.Join(rel, ", ")))
		}
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	if b.Min.IsSet() {
		lo = b.Min.Limit(ref)
	}
	if b.Max.IsSet() {
		hi = b.Max.Limit(ref)
	}
	if lo <= hi && (ref < lo || ref > hi) {
		edge, lim := b.Min, lo
		if ref > hi {
			edge, lim = b.Max, hi
		}
		errs = append(errs, problemAt(line, "value", "the reference %.4g %s fails its own band (%s %s): a healthy system could never pass%s", ref, e.Unit, map[bool]string{true: "min", false: "max"}[ref < lo], edge.Text, unitHint(ref, lim)))
	}
	if e.Ceiling > 0 && ref > e.Ceiling*1.0001 {
		errs = append(errs, problemAt(line, "value", "%.4g %s is above the entry's ceiling %.4g %s, the physical limit%s", ref, e.Unit, e.Ceiling, e.Unit, unitHint(ref, e.Ceiling)))
	}
	return errs
}

// unitHint names the bits/bytes slip when two numbers are about 8x apart.
func unitHint(a, b float64) string {
	if a <= 0 || b <= 0 {
		return ""
	}
	r := a / b
	if r < 1 {
		r = 1 / r
	}
	if r > 7 && r < 9 {
		return fmt.Sprintf(" (the two differ by %.1fx: GB/s (bytes) and Gb/s (bits) mixed up?)", r)
	}
	return ""
}

// checkUnits catches a bound written in another unit than the entry's, the
// classic GB/s (bytes) vs Gb/s (bits) slip that is off by 8x. line is where
// the band is written, for bounds that carry no line of their own.
func (e *Entry) checkUnits(b Band, line int) []error {
	var errs []error
	for _, x := range []struct {
		name string
		b    Bound
	}{{"min", b.Min}, {"warn_min", b.WarnMin}, {"max", b.Max}, {"warn_max", b.WarnMax}} {
		if x.b.IsSet() && !x.b.Relative && x.b.Unit != "" && x.b.Unit != e.Unit {
			errs = append(errs, problemAt(x.b.lineOr(line), "band."+x.name, "bound %q is in %s but the entry's unit is %s", x.b.Text, x.b.Unit, e.Unit))
		}
	}
	return errs
}

func (e *Entry) pointsHaveBands() bool {
	if len(e.Points) == 0 {
		return false
	}
	for _, p := range e.Points {
		if p.Band.IsZero() {
			return false
		}
	}
	return true
}

// validateSiteParams checks the names of site_params as names alone:
// that each is one the test's plugin declares needs the plugin
// (skucheck).
func (t *SuiteTest) validateSiteParams() []error {
	var errs []error
	line := t.SiteParamsLine
	if line == 0 {
		line = t.Line
	}
	for i, k := range t.SiteParams {
		switch {
		case k == "" || strings.ContainsAny(k, ":= \t\n"):
			errs = append(errs, problemAt(line, "site_params", "%q is not a parameter name (pairs, gpus)", k))
		case slices.Contains(t.SiteParams[:i], k):
			errs = append(errs, problemAt(line, "site_params", "%s listed twice", k))
		}
	}
	return errs
}
