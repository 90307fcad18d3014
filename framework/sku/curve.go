package sku

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The summaries an entry may judge instead of single points. Each reduces
// the measured curve of the entry's metric and labels (inside Range) to one
// number, judged against the entry's value and band.
const (
	// SummaryPeak is the highest value of the curve: what a link can do at
	// best, whatever size gets there.
	SummaryPeak = "peak"
	// SummaryLargest is the value at the largest measured size: the number
	// people quote from nccl-tests ("189 GB/s at 8 GiB").
	SummaryLargest = "largest"
	// SummaryMean is the average over Range, which must start above the
	// latency-bound sizes: nccl-tests' own "Avg bus bandwidth" averages every
	// size from 8 B up and moves with the sweep, not with the hardware.
	SummaryMean = "mean"
)

// Summaries lists the summary names an entry may use.
var Summaries = []string{SummaryPeak, SummaryLargest, SummaryMean}

// SizeRange bounds the message sizes (bytes, both ends included) that a
// summary or a dip check looks at. To 0 means no upper end.
type SizeRange struct {
	From Size `yaml:"from"`
	To   Size `yaml:"to"`
	Line int  `yaml:"-"`
}

// Contains reports whether size (bytes) is inside the range.
func (r SizeRange) Contains(size int64) bool {
	return size >= int64(r.From) && (r.To == 0 || size <= int64(r.To))
}

// UnmarshalYAML reads a range strictly, so a typo ("form:") is an error.
func (r *SizeRange) UnmarshalYAML(n *yaml.Node) error {
	type raw SizeRange
	r.Line = n.Line
	return strictDecode(n, (*raw)(r))
}

// Dip configures the dip check along a curve: as the message size grows,
// bandwidth should not fall. A point more than Warn percent below the
// highest value at any smaller size (inside the range) warns, more than Fail
// percent fails, even when every point is above its own floor: a curve that
// climbs to 450 GB/s at 1 GiB and sinks to 380 GB/s at 4 GiB has a problem
// (a congested link, a protocol switch, a throttling GPU) that per-point
// floors set 20% low would never show. Either may be 0 (not checked).
type Dip struct {
	// Warn and Fail are percentages (5 means 5%).
	Warn float64
	Fail float64
	Line int
}

// DefaultHole is the dip rule every judged bandwidth curve gets where no
// entry judging it sets dip: a point of the curve's bandwidth-bound part
// (from the first size whose value reaches half the curve's peak, and a
// point whose neighbours' mean reaches it: a hole at the knee) below
// DefaultHole percent of the lower of its two neighbours (of the one
// before it, at the largest size) fails. The lower neighbour, not the
// highest point before: a curve that steps down and stays down (NCCL
// moving from one algorithm or protocol to another) is no hole, and
// neither is a curve that keeps rising. 60 sits under every healthy real
// curve in the repository (the worst, 0.69, is OCI's published 32 x 4
// GB200 all_reduce at 1 GiB: 284.6 GB/s between 411.0 and 549.3) and over
// a point at 45% of its neighbours (baselines/README.md, rule 8a, lists
// the curves and their worst ratios).
const DefaultHole = 60.0

// UnmarshalYAML reads {warn: "5%", fail: "15%"}.
func (d *Dip) UnmarshalYAML(n *yaml.Node) error {
	var r struct {
		Warn string `yaml:"warn"`
		Fail string `yaml:"fail"`
	}
	if err := strictDecode(n, &r); err != nil {
		return err
	}
	d.Line = n.Line
	var errs []error
	for _, f := range []struct {
		name, text string
		dst        *float64
	}{{"warn", r.Warn, &d.Warn}, {"fail", r.Fail, &d.Fail}} {
		if f.text == "" {
			continue
		}
		v, err := parsePercent(f.text)
		if err != nil {
			errs = append(errs, problemAt(lineOf(n, f.name), "dip."+f.name, "%v", err))
			continue
		}
		*f.dst = v
	}
	return asTypeError(errs...)
}

// parsePercent reads "5%" (or "5") as 5; it must be inside (0, 100).
func parsePercent(s string) (float64, error) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q: want a percentage like 10%%", s)
	}
	if v <= 0 || v >= 100 {
		return 0, fmt.Errorf("%q: a drop must be more than 0%% and less than 100%%", s)
	}
	return v, nil
}

// validateCurve checks the summary, range and dip fields of an entry and
// returns every problem, each with the line of its field.
func (e *Entry) validateCurve() []error {
	var errs []error
	add := func(line int, field, format string, args ...any) {
		errs = append(errs, problemAt(line, field, format, args...))
	}
	if e.Summary != "" {
		ok := false
		for _, s := range Summaries {
			ok = ok || s == e.Summary
		}
		switch {
		case !ok:
			add(e.FieldLine("summary"), "summary", "%q is not one of %s", e.Summary, strings.Join(Summaries, ", "))
		case e.Value == nil:
			add(e.FieldLine("summary"), "summary", "a summary is one number: give value, not points")
		case e.Size != 0:
			add(e.FieldLine("size"), "size", "a %s summary is over the curve; drop size or use points", e.Summary)
		case e.Summary == SummaryMean && (e.Range == nil || e.Range.From == 0):
			add(e.FieldLine("range"), "range", "a mean needs range.from above the latency-bound sizes (e.g. 64M); nccl-tests' average over every size is what misleads")
		}
	}
	if e.Range != nil {
		if e.Summary == "" && e.Dip == nil {
			add(e.Range.Line, "range", "only a summary or a dip check uses a range")
		}
		if e.Range.To != 0 && e.Range.To < e.Range.From {
			add(e.Range.Line, "range", "to %d is below from %d: no size is inside", e.Range.To, e.Range.From)
		}
	}
	if d := e.Dip; d != nil {
		switch {
		case d.Warn == 0 && d.Fail == 0:
			add(d.Line, "dip", "give warn, fail or both")
		case d.Warn != 0 && d.Fail != 0 && d.Warn >= d.Fail:
			add(d.Line, "dip", "warn %g%% is not below fail %g%%: the warn zone would never be reached", d.Warn, d.Fail)
		case len(e.Points) == 0 && e.Range == nil:
			add(d.Line, "dip", "needs points or a range to know which sizes form the curve")
		}
	}
	return errs
}

// CurveRange is the size range a summary or dip check of e looks at: its
// Range, else the span of its points, else every size.
func (e *Entry) CurveRange() SizeRange {
	if e.Range != nil {
		return *e.Range
	}
	if len(e.Points) == 0 {
		return SizeRange{}
	}
	r := SizeRange{From: e.Points[0].Size, To: e.Points[0].Size}
	for _, p := range e.Points {
		r.From = min(r.From, p.Size)
		r.To = max(r.To, p.Size)
	}
	return r
}
