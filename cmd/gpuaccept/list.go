package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gpuaccept/gpuaccept/framework/launch"
)

func cmdList(args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	fs := newFlags("list", "Usage: gpuaccept list [skus|suites|tests|plugins|launchers]\n", stderr)
	c.add(fs)
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	what := "skus"
	if fs.NArg() > 0 {
		what = fs.Arg(0)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	defer w.Flush()
	switch what {
	case "skus", "suites":
		cat, err := c.catalog()
		if err != nil {
			return exitUsage, err
		}
		for _, n := range cat.Names() {
			s := cat.SKUs[n]
			if what == "skus" {
				fmt.Fprintf(w, "%s\t%s\tsuites: %s\n", n, s.Description, strings.Join(s.SuiteNames(), ", "))
				continue
			}
			for _, sn := range s.SuiteNames() {
				su := s.Suites[sn]
				names := make([]string, len(su.Tests))
				for i, t := range su.Tests {
					names[i] = t.Test
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", n, sn, strings.Join(names, " "))
			}
		}
	case "tests", "plugins":
		host := c.host()
		defer host.Close()
		for _, p := range host.Names() {
			d, err := host.Describe(context.Background(), p)
			if err != nil {
				fmt.Fprintf(w, "%s\terror: %v\n", p, err)
				continue
			}
			if what == "plugins" {
				fmt.Fprintf(w, "%s\t%s\t%d tests\n", d.Name, d.Version, len(d.Tests))
				continue
			}
			for _, t := range d.Tests {
				fmt.Fprintf(w, "%s.%s\t%s\n", d.Name, t.Name, t.Description)
			}
			// Parameters once per plugin when its tests share them.
			if len(d.Tests) > 0 {
				fmt.Fprintf(w, "\t%s parameters (--param KEY=VALUE):\n", d.Name)
				for _, p := range d.Tests[0].Params {
					def := ""
					if p.Default != "" {
						def = " (default " + p.Default + ")"
					}
					fmt.Fprintf(w, "\t  %s\t%s%s\n", p.Name, p.Description, def)
				}
			}
		}
	case "launchers":
		for _, n := range launch.Names() {
			fmt.Fprintln(w, n)
		}
	default:
		return exitUsage, usageError{fmt.Errorf("list %q: want skus, suites, tests, plugins or launchers", what)}
	}
	return exitOK, nil
}
