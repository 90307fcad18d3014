package main

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
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
			listTests(w, d)
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

// listTests writes a plugin's tests, one a line, with their parameters:
// once for the plugin when its tests share them (the built-in plugins), else
// under each test, so that no test is shown another's parameters.
func listTests(w io.Writer, d pluginapi.Description) {
	shared := true
	for _, t := range d.Tests {
		shared = shared && reflect.DeepEqual(t.Params, d.Tests[0].Params)
	}
	params := func(head string, ps []pluginapi.Param) {
		if len(ps) == 0 {
			return
		}
		fmt.Fprintf(w, "\t%s parameters (--param KEY=VALUE):\n", head)
		for _, p := range ps {
			def := ""
			if p.Default != "" {
				def = " (default " + p.Default + ")"
			}
			fmt.Fprintf(w, "\t  %s\t%s%s\n", p.Name, p.Description, def)
		}
	}
	for _, t := range d.Tests {
		fmt.Fprintf(w, "%s.%s\t%s\n", d.Name, t.Name, t.Description)
		if !shared {
			params(d.Name+"."+t.Name, t.Params)
		}
	}
	if shared && len(d.Tests) > 0 {
		params(d.Name, d.Tests[0].Params)
	}
}
