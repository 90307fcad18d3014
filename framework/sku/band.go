package sku

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bound is one edge of a tolerance band, written in a SKU file as
// "-10%" (at least 90% of the reference), "+100%" (at most twice the
// reference), ">= 310" or ">= 310 GB/s" (absolute floor), "<= 20 us"
// (absolute ceiling).
type Bound struct {
	// Relative is true for "±N%" bounds; Percent holds N with its sign.
	Relative bool
	Percent  float64
	// Abs is the absolute limit for ">=" / "<=" bounds, in Unit.
	Abs  float64
	Unit string
	// Text is the bound as written, for messages.
	Text string
	set  bool
	// line is where the bound is written; 0 when built in code.
	line int
}

// lineOr is the bound's line, or fallback when it has none.
func (b Bound) lineOr(fallback int) int {
	if b.line > 0 {
		return b.line
	}
	return fallback
}

// IsSet reports whether the bound was given.
func (b Bound) IsSet() bool { return b.set }

// Limit is the bound's limit for a reference value: ref×(1+Percent/100) for
// relative bounds, Abs otherwise.
func (b Bound) Limit(ref float64) float64 {
	if b.Relative {
		return ref * (1 + b.Percent/100)
	}
	return b.Abs
}

// ParseBound parses a bound as written in a SKU file. lower says whether the
// bound is a floor (min, warn_min) or a ceiling (max, warn_max); a relative
// floor must be negative ("-10%"), a relative ceiling positive ("+50%"), and
// an absolute one must use ">=" for floors and "<=" for ceilings, so a band
// cannot be written backwards by accident.
func ParseBound(s string, lower bool) (Bound, error) {
	t := strings.TrimSpace(s)
	b := Bound{Text: t, set: true}
	switch {
	case strings.HasSuffix(t, "%"):
		v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "%")), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return Bound{}, fmt.Errorf("bound %q: want a percentage like -10%% or +50%%", s)
		}
		if lower && v > 0 || !lower && v < 0 {
			return Bound{}, fmt.Errorf("bound %q: a %s must be %s", s, side(lower), map[bool]string{true: "negative (-10%)", false: "positive (+50%)"}[lower])
		}
		if lower && v <= -100 {
			return Bound{}, fmt.Errorf("bound %q: a floor of -100%% or less can never fail", s)
		}
		b.Relative, b.Percent = true, v
		return b, nil
	case strings.HasPrefix(t, ">=") || strings.HasPrefix(t, "<="):
		if lower != strings.HasPrefix(t, ">=") {
			return Bound{}, fmt.Errorf("bound %q: a %s is written with %s", s, side(lower), map[bool]string{true: ">=", false: "<="}[lower])
		}
		f := strings.Fields(t[2:])
		if len(f) == 0 || len(f) > 2 {
			return Bound{}, fmt.Errorf("bound %q: want %s NUMBER [UNIT]", s, t[:2])
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return Bound{}, fmt.Errorf("bound %q: %q is not a number", s, f[0])
		}
		b.Abs = v
		if len(f) == 2 {
			b.Unit = f[1]
		}
		return b, nil
	}
	return Bound{}, fmt.Errorf("bound %q: want -N%%, +N%%, >= N [UNIT] or <= N [UNIT]", s)
}

func side(lower bool) string {
	if lower {
		return "floor (min, warn_min)"
	}
	return "ceiling (max, warn_max)"
}

// Band is a tolerance band: below Min or above Max fails; between Min and
// WarnMin (or WarnMax and Max) warns. Any edge may be absent.
type Band struct {
	Min     Bound
	WarnMin Bound
	Max     Bound
	WarnMax Bound
}

// rawBand is the YAML form of a Band.
type rawBand struct {
	Min     string `yaml:"min"`
	WarnMin string `yaml:"warn_min"`
	Max     string `yaml:"max"`
	WarnMax string `yaml:"warn_max"`
}

// Merge returns b with every edge that o sets taken from o.
func (b Band) Merge(o Band) Band {
	if o.Min.set {
		b.Min = o.Min
	}
	if o.WarnMin.set {
		b.WarnMin = o.WarnMin
	}
	if o.Max.set {
		b.Max = o.Max
	}
	if o.WarnMax.set {
		b.WarnMax = o.WarnMax
	}
	return b
}

// IsZero reports whether no edge is set.
func (b Band) IsZero() bool { return !b.Min.set && !b.WarnMin.set && !b.Max.set && !b.WarnMax.set }

// check reports every way a band cannot work for a reference value ref: a
// warn zone outside its failure edge, a floor above a ceiling (a band no
// measurement can pass). Each error names the line and field of the edge
// at fault (line when the edge has no line). Messages about absolute edges
// do not depend on ref, so the points that inherit one broken band repeat
// the same message, which Parse reports once; where a relative edge takes
// part, the computed limits are given for this ref.
func (b Band) check(ref float64, line int) []error {
	var errs []error
	lo, hi := math.Inf(-1), math.Inf(1)
	if b.Min.set {
		lo = b.Min.Limit(ref)
	}
	if b.Max.set {
		hi = b.Max.Limit(ref)
	}
	limits := func(x, y Bound, lx, ly float64) string {
		if !x.Relative && !y.Relative {
			return ""
		}
		return fmt.Sprintf(" (%.4g and %.4g for the reference %.4g)", lx, ly, ref)
	}
	if lo > hi {
		errs = append(errs, problemAt(b.Min.lineOr(line), "band.min", "min %s is above max %s%s: no value can pass", b.Min.Text, b.Max.Text, limits(b.Min, b.Max, lo, hi)))
	}
	if b.WarnMin.set && b.Min.set && b.WarnMin.Limit(ref) < lo {
		errs = append(errs, problemAt(b.WarnMin.lineOr(line), "band.warn_min", "warn_min %s is below min %s%s: the warn zone would never be reached", b.WarnMin.Text, b.Min.Text, limits(b.WarnMin, b.Min, b.WarnMin.Limit(ref), lo)))
	}
	if b.WarnMax.set && b.Max.set && b.WarnMax.Limit(ref) > hi {
		errs = append(errs, problemAt(b.WarnMax.lineOr(line), "band.warn_max", "warn_max %s is above max %s%s: the warn zone would never be reached", b.WarnMax.Text, b.Max.Text, limits(b.WarnMax, b.Max, b.WarnMax.Limit(ref), hi)))
	}
	return errs
}
