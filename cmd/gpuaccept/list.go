package main

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

func cmdList(args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	fs := newFlags("list", listUsage, stderr)
	c.addOnly(fs, "sku", "baselines", "plugin-path")
	fs.Lookup("sku").Usage = "list skus, list suites: only this SKU's"
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	what := "skus"
	if fs.NArg() > 0 {
		what = fs.Arg(0)
	}
	if fs.NArg() > 1 {
		return exitUsage, usageError{fmt.Errorf("list: unexpected arguments %q (want one of skus, suites, tests, plugins, launchers)", fs.Args()[1:])}
	}
	if err := listFlagsUsed(fs, what); err != nil {
		return exitUsage, err
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	defer w.Flush()
	switch what {
	case "skus", "suites":
		cat, err := c.catalog()
		if err != nil {
			return exitUsage, err
		}
		names := cat.Names()
		if c.sku != "" {
			if _, err := cat.Get(c.sku); err != nil {
				return exitUsage, usageError{err}
			}
			names = []string{c.sku}
		}
		for _, n := range names {
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
				fmt.Fprintf(w, "%s\t%s\t%s\n", d.Name, d.Version, result.Count(len(d.Tests), "test"))
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

const listUsage = `Usage: gpuaccept list [skus|suites|tests|plugins|launchers] [flags]

Lists the SKUs (the default) with their suites, each SKU's suites with
their tests, the tests plugins offer with their parameters, the plugins,
or the launchers.
`

// listFlags are the flags each list takes: the SKU lists read SKU files,
// the test lists plugins, and launchers neither.
var listFlags = map[string][]string{
	"skus": {"sku", "baselines"}, "suites": {"sku", "baselines"},
	"tests": {"plugin-path"}, "plugins": {"plugin-path"}, "launchers": nil,
}

// listFlagsUsed refuses a flag given to a list that would ignore it.
func listFlagsUsed(fs *pflag.FlagSet, what string) error {
	allowed, ok := listFlags[what]
	if !ok {
		return nil // the unknown list is named below
	}
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err == nil && !slices.Contains(allowed, f.Name) {
			err = usageError{fmt.Errorf("list %s does not take --%s (it takes: %s)", what, f.Name, flagList(allowed))}
		}
	})
	return err
}

// flagList renders flag names as "--a, --b", or "no flags".
func flagList(names []string) string {
	if len(names) == 0 {
		return "no flags"
	}
	return "--" + strings.Join(names, ", --")
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
