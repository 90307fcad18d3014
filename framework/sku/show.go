package sku

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// Show writes s's baseline to out as "gpuaccept baseline show" prints it:
// a table of every entry (per size, a summary or a dip check, with its
// band as written and its basis), the datasheet floors that judge what no
// entry judges (showFloors), then every entry's source wrapped to
// ShowWidth.
func Show(out io.Writer, s *SKU) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TEST\tSCOPE\tMETRIC\tLABELS\tSIZE\tVALUE\tUNIT\tBAND\tBASIS")
	var sources []string
	for _, e := range s.Baselines {
		labels := LabelText(e.Labels)
		sources = append(sources, fmt.Sprintf("%s %s %s %s: %s", e.Test, e.Scope, e.Metric, labels, e.Source))
		if e.Value != nil {
			size := sizeText(int64(e.Size))
			if e.Summary != "" {
				size = summaryText(e)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\n", e.Test, e.Scope, e.Metric, labels, size, *e.Value, e.Unit, bandText(e.Band), e.Kind())
		}
		for _, p := range e.Points {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\n", e.Test, e.Scope, e.Metric, labels, sizeText(int64(p.Size)), p.Value, e.Unit, bandText(e.Band.Merge(p.Band)), e.Kind())
		}
		if d := e.Dip; d != nil {
			r := e.CurveRange()
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t-\t%%\t%s\t%s\n", e.Test, e.Scope, e.Metric, labels, "dip "+rangeText(r), dipText(d), e.Kind())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := showFloors(out, s); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nSources:")
	for _, src := range sources {
		fmt.Fprint(out, wrap(src, ShowWidth, "  ", "      "))
	}
	return nil
}

// showFloors lists the SKU's datasheet floors (Ceiling.Floor): what
// judges a per-GPU benchmark no entry judges, at any scope.
func showFloors(out io.Writer, s *SKU) error {
	var floors []*Ceiling
	for _, c := range s.Ceilings {
		if c.PerGPU && c.Floor > 0 {
			floors = append(floors, c)
		}
	}
	if len(floors) == 0 {
		return nil
	}
	fmt.Fprintln(out, "\nDatasheet floors (basis floor: where no entry judges a point, at any scope; baselines/README.md, Datasheet floors):")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TESTS\tMETRIC\tLABELS\tAT LEAST\tUNIT\tOF THE DATASHEET")
	for _, c := range floors {
		ref, link := c.Figure()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\t%g x %g (%s)\n", strings.Join(c.Tests, ","), c.Metric, LabelText(c.Labels), c.Floor*ref, c.Unit, c.Floor, ref, link)
	}
	return tw.Flush()
}

// ShowWidth is the width Show wraps sources to, in bytes: a terminal's 80
// columns.
const ShowWidth = 80

// wrap breaks text at spaces into lines of at most width bytes, the first
// behind first, the others behind indent, each ended by a line break. A
// word longer than a line (a long path) is not broken: its line is longer.
func wrap(text string, width int, first, indent string) string {
	var b strings.Builder
	line := first
	empty := true
	for _, w := range strings.Fields(text) {
		if !empty && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	b.WriteString(line + "\n")
	return b.String()
}

// bandText renders a band's edges as written: "min -10%, warn_min -5%".
func bandText(b Band) string {
	var parts []string
	for _, e := range []struct {
		name string
		b    Bound
	}{{"min", b.Min}, {"warn_min", b.WarnMin}, {"max", b.Max}, {"warn_max", b.WarnMax}} {
		if e.b.IsSet() {
			parts = append(parts, e.name+" "+e.b.Text)
		}
	}
	return strings.Join(parts, ", ")
}

func sizeText(n int64) string {
	if n == 0 {
		return "-"
	}
	return result.FormatBytes(n)
}

// summaryText names a summary and the sizes it covers: "peak 64 MiB..",
// "largest 64 MiB..8 GiB".
func summaryText(e *Entry) string {
	r := e.CurveRange()
	if r.From == 0 && r.To == 0 {
		return e.Summary
	}
	return e.Summary + " " + rangeText(r)
}

// rangeText renders the sizes of a range, "64 MiB..8 GiB"; an open end is
// left empty ("64 MiB..", "..8 GiB").
func rangeText(r SizeRange) string {
	var from, to string
	if r.From != 0 {
		from = result.FormatBytes(int64(r.From))
	}
	if r.To != 0 {
		to = result.FormatBytes(int64(r.To))
	}
	return from + ".." + to
}

// dipText renders a dip check's edges: "fall > 5% warns, > 15% fails".
func dipText(d *Dip) string {
	var parts []string
	if d.Warn > 0 {
		parts = append(parts, fmt.Sprintf("fall > %g%% warns", d.Warn))
	}
	if d.Fail > 0 {
		parts = append(parts, fmt.Sprintf("fall > %g%% fails", d.Fail))
	}
	return strings.Join(parts, ", ")
}
