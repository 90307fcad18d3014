package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"strings"
	"text/tabwriter"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/framework/skucheck"
	"github.com/gpuaccept/gpuaccept/launchers/k8s"
)

// checkSKU parses a SKU file (name is for messages) and checks it against
// its plugins. The error lists every problem found by both, one a line in
// line order, each with file, line and field.

// maxSKUFile bounds a SKU file read from a path the user gives.
const maxSKUFile = 64 << 20

func checkSKU(ctx context.Context, d skucheck.Describer, data []byte, name string) (*sku.SKU, error) {
	s, err := sku.Parse(data, name)
	if s == nil {
		return nil, err // not YAML: nothing to check further
	}
	// The kubernetes section is checked as the k8s launcher checks it at
	// every run, so that a file validate passes no run rejects.
	if err := sku.NewProblems(name, []error{err, skucheck.Check(ctx, d, s), k8s.CheckSKU(s)}); err != nil {
		return nil, err
	}
	return s, nil
}

func cmdBaseline(args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		return exitUsage, usageError{errors.New("baseline: want validate [FILE...], show SKU, record or diff OLD NEW")}
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stderr, baselineUsage)
		return exitOK, nil
	case "record":
		return cmdBaselineRecord(args[1:], stdout, stderr)
	case "diff":
		return cmdBaselineDiff(args[1:], stdout, stderr)
	case "validate":
		var c common
		fs := newFlags("baseline validate", "Usage: gpuaccept baseline validate [--baselines DIR] [FILE...]\n\nChecks SKU files (default: every built-in one, or with --baselines every file of DIR, the site's) and lists every problem, up to 20 a file, each with its file, line and field.\n", stderr)
		c.addOnly(fs, "baselines", "plugin-path")
		if err := fs.Parse(args[1:]); err != nil {
			return exitUsage, usageError{err}
		}
		host := c.host()
		defer host.Close()
		ctx := context.Background()
		var fsys iofs.FS
		var dir string
		files := fs.Args()
		if len(files) == 0 {
			// Each file on its own, so that one bad file does not hide the
			// problems of the others, as loading the catalog would.
			if err := c.baselinesFolder(); err != nil {
				return exitUsage, err
			}
			fsys, dir = c.skuFiles()
			names, err := iofs.Glob(fsys, "*.yaml")
			if err != nil || len(names) == 0 {
				return exitUsage, usageError{fmt.Errorf("baseline validate: no SKU files (*.yaml) in %s", dir)}
			}
			files = names
		}
		bad := 0
		for _, f := range files {
			var data []byte
			var err error
			name := f
			if fsys != nil {
				data, err = iofs.ReadFile(fsys, f)
				name = path.Join(dir, f)
			} else {
				data, err = safefs.ReadNamed(f, maxSKUFile)
			}
			var s *sku.SKU
			if err == nil {
				s, err = checkSKU(ctx, host, data, name)
			}
			if err != nil {
				bad++
				for _, l := range strings.Split(err.Error(), "\n") {
					fmt.Fprintf(stdout, "BAD %s\n", l)
				}
				continue
			}
			fmt.Fprintf(stdout, "ok  %s: sku %s, %s, %s\n", name, s.Name, result.Count(len(s.Suites), "suite"), result.Count(len(s.Baselines), "baseline entry", "baseline entries"))
			for _, n := range skucheck.Unbaselined(s) {
				fmt.Fprintf(stdout, "    note: %s\n", n)
			}
		}
		if bad > 0 {
			return exitUsage, fmt.Errorf("%d of %s %s malformed", bad, result.Count(len(files), "file"), result.Noun(bad, "is", "are"))
		}
		if fsys != nil {
			// Names matching files, no SKU twice: the catalog's own rules.
			if _, err := sku.Load(fsys, dir); err != nil {
				return exitUsage, usageError{err}
			}
		}
		return exitOK, nil
	case "show":
		var c common
		fs := newFlags("baseline show", "Usage: gpuaccept baseline show SKU [--yaml] [--baselines DIR]\n\nShows a SKU's baseline, entry by entry, with the sources; --yaml prints its SKU file instead, byte for byte (the built-in one, or --baselines DIR's that replaces it), to start a site's own from.\n", stderr)
		c.addOnly(fs, "baselines")
		asYAML := fs.Bool("yaml", false, "print the SKU file itself, as gpuaccept carries it (or as --baselines DIR holds it)")
		if err := fs.Parse(args[1:]); err != nil {
			return exitUsage, usageError{err}
		}
		if fs.NArg() != 1 {
			return exitUsage, usageError{errors.New("baseline show: want one SKU")}
		}
		cat, err := c.catalog(stderr)
		if err != nil {
			return exitUsage, err
		}
		s, err := cat.Get(fs.Arg(0))
		if err != nil {
			return exitUsage, usageError{err}
		}
		if *asYAML {
			data, err := cat.File(s.Name)
			if err != nil {
				return exitError, err
			}
			_, err = stdout.Write(data)
			return exitOK, err
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "TEST\tSCOPE\tMETRIC\tLABELS\tSIZE\tVALUE\tUNIT\tBAND\tBASIS")
		var sources []string
		for _, e := range s.Baselines {
			labels := sku.LabelText(e.Labels)
			sources = append(sources, fmt.Sprintf("%s %s %s %s: %s", e.Test, e.Scope, e.Metric, labels, e.Source))
			if e.Value != nil {
				size := sizeText(int64(e.Size))
				if e.Summary != "" {
					size = summaryText(e)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\n", e.Test, e.Scope, e.Metric, labels, size, *e.Value, e.Unit, bandText(e.Band), e.Kind())
			}
			for _, p := range e.Points {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\n", e.Test, e.Scope, e.Metric, labels, sizeText(int64(p.Size)), p.Value, e.Unit, bandText(e.Band.Merge(p.Band)), e.Kind())
			}
			if d := e.Dip; d != nil {
				r := e.CurveRange()
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t-\t%%\t%s\t%s\n", e.Test, e.Scope, e.Metric, labels, "dip "+rangeText(r), dipText(d), e.Kind())
			}
		}
		if err := w.Flush(); err != nil {
			return exitUsage, err
		}
		if err := showFloors(stdout, s); err != nil {
			return exitUsage, err
		}
		fmt.Fprintln(stdout, "\nSources:")
		for _, src := range sources {
			fmt.Fprint(stdout, wrap(src, sourceWidth, "  ", "      "))
		}
		return exitOK, nil
	}
	return exitUsage, usageError{fmt.Errorf("baseline %q: want validate, show, record or diff", args[0])}
}

// showFloors lists the SKU's datasheet floors (sku.Ceiling.Floor): what
// judges a per-GPU benchmark no entry judges, at any scope.
func showFloors(stdout io.Writer, s *sku.SKU) error {
	var floors []*sku.Ceiling
	for _, c := range s.Ceilings {
		if c.PerGPU && c.Floor > 0 {
			floors = append(floors, c)
		}
	}
	if len(floors) == 0 {
		return nil
	}
	fmt.Fprintln(stdout, "\nDatasheet floors (basis floor: where no entry judges a point, at any scope; baselines/README.md, Datasheet floors):")
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TESTS\tMETRIC\tLABELS\tAT LEAST\tUNIT\tOF THE DATASHEET")
	for _, c := range floors {
		ref, link := c.Figure()
		fmt.Fprintf(w, "%s\t%s\t%s\t%.2f\t%s\t%g x %g (%s)\n", strings.Join(c.Tests, ","), c.Metric, sku.LabelText(c.Labels), c.Floor*ref, c.Unit, c.Floor, ref, link)
	}
	return w.Flush()
}

// sourceWidth is the width baseline show wraps sources to, in bytes: a
// terminal's 80 columns.
const sourceWidth = 80

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
func bandText(b sku.Band) string {
	var parts []string
	for _, e := range []struct {
		name string
		b    sku.Bound
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
func summaryText(e *sku.Entry) string {
	r := e.CurveRange()
	if r.From == 0 && r.To == 0 {
		return e.Summary
	}
	return e.Summary + " " + rangeText(r)
}

// rangeText renders the sizes of a range, "64 MiB..8 GiB"; an open end is
// left empty ("64 MiB..", "..8 GiB").
func rangeText(r sku.SizeRange) string {
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
func dipText(d *sku.Dip) string {
	var parts []string
	if d.Warn > 0 {
		parts = append(parts, fmt.Sprintf("fall > %g%% warns", d.Warn))
	}
	if d.Fail > 0 {
		parts = append(parts, fmt.Sprintf("fall > %g%% fails", d.Fail))
	}
	return strings.Join(parts, ", ")
}
