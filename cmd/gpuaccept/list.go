package main

import (
	"context"
	"encoding/json"
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
	fs.StringVar(&c.format, "format", "table", "table, or json (an array of objects, the fields README.md lists)")
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
	if c.format != "table" && c.format != "json" {
		return exitUsage, usageError{fmt.Errorf("list: unknown --format %q (known: table, json)", c.format)}
	}
	var rows []any // what --format json prints
	table := stdout
	if c.format == "json" {
		table = io.Discard
	}
	w := tabwriter.NewWriter(table, 0, 4, 2, ' ', 0)
	switch what {
	case "skus", "suites":
		cat, err := c.catalog(stderr)
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
				rows = append(rows, listedSKU{Name: n, Description: s.Description, Source: s.Source, File: s.File, GPU: s.GPU, GPUsPerNode: s.GPUsPerNode, Suites: s.SuiteNames()})
				fmt.Fprintf(w, "%s\t%s\t%s\tsuites: %s\n", n, s.Source, s.Description, strings.Join(s.SuiteNames(), ", "))
				continue
			}
			for _, sn := range s.SuiteNames() {
				su := s.Suites[sn]
				names := make([]string, len(su.Tests))
				ls := listedSuite{SKU: n, Suite: sn, Description: su.Description, Nodes: su.Nodes, Params: su.Params, Tests: []listedSuiteTest{}}
				for i, t := range su.Tests {
					names[i] = t.Test
					ls.Tests = append(ls.Tests, listedSuiteTest{Test: t.Test, Params: t.Params, MinGPUs: t.MinGPUs, SiteParams: t.SiteParams, Skip: t.Skip, Timeout: t.Timeout.String()})
					if t.Timeout == 0 {
						ls.Tests[i].Timeout = ""
					}
				}
				rows = append(rows, ls)
				fmt.Fprintf(w, "%s\t%s\t%s\n", n, sn, strings.Join(names, " "))
			}
		}
	case "tests", "plugins":
		host := c.host()
		defer host.Close()
		for _, p := range host.Names() {
			d, err := host.Describe(context.Background(), p)
			if err != nil {
				rows = append(rows, listedTest{Plugin: p, Error: err.Error()})
				fmt.Fprintf(w, "%s\terror: %v\n", p, err)
				continue
			}
			if what == "plugins" {
				rows = append(rows, listedPlugin{Name: d.Name, Version: d.Version, Tests: len(d.Tests)})
				fmt.Fprintf(w, "%s\t%s\t%s\n", d.Name, d.Version, result.Count(len(d.Tests), "test"))
				continue
			}
			for _, t := range d.Tests {
				lt := listedTest{Test: d.Name + "." + t.Name, Plugin: d.Name, PluginVersion: d.Version, Description: t.Description, Params: []listedParam{}}
				for _, p := range t.Params {
					lt.Params = append(lt.Params, listedParam(p))
				}
				lt.Metrics = t.Meanings()
				rows = append(rows, lt)
			}
			listTests(w, d)
		}
	case "launchers":
		for _, n := range launch.Names() {
			rows = append(rows, listedLauncher{Name: n})
			fmt.Fprintln(w, n)
		}
	default:
		return exitUsage, usageError{fmt.Errorf("list %q: want skus, suites, tests, plugins or launchers", what)}
	}
	if c.format == "json" {
		if rows == nil {
			rows = []any{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return exitOK, enc.Encode(rows)
	}
	return exitOK, w.Flush()
}

// The objects list --format json prints, one per row of the table: their
// field names are a contract with scripts (README.md, "Listing the
// catalog"), kept when the table changes. Empty fields are left out.
type (
	// listedSKU is a SKU of list skus.
	listedSKU struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		// Source is "built-in" or the path of the site's file (--baselines).
		Source string `json:"source"`
		// File names the file as messages do (baselines/h200.yaml for a
		// built-in one).
		File        string   `json:"file"`
		GPU         string   `json:"gpu,omitempty"`
		GPUsPerNode int      `json:"gpus_per_node"`
		Suites      []string `json:"suites"`
	}
	// listedSuite is a suite of list suites.
	listedSuite struct {
		SKU         string            `json:"sku"`
		Suite       string            `json:"suite"`
		Description string            `json:"description,omitempty"`
		Nodes       int               `json:"nodes,omitempty"`
		Params      map[string]string `json:"params,omitempty"`
		Tests       []listedSuiteTest `json:"tests"`
	}
	// listedSuiteTest is one test of a suite, as the SKU file gives it.
	listedSuiteTest struct {
		Test    string            `json:"test"`
		Params  map[string]string `json:"params,omitempty"`
		MinGPUs int               `json:"min_gpus,omitempty"`
		// SiteParams are the parameters a site may set (site_params).
		SiteParams []string `json:"site_params,omitempty"`
		Skip       string   `json:"skip,omitempty"`
		// Timeout is a Go duration ("45m0s").
		Timeout string `json:"timeout,omitempty"`
	}
	// listedTest is a test of list tests, or a plugin that could not
	// describe its tests (Plugin and Error only).
	listedTest struct {
		Test          string        `json:"test,omitempty"`
		Plugin        string        `json:"plugin"`
		PluginVersion string        `json:"plugin_version,omitempty"`
		Description   string        `json:"description,omitempty"`
		Params        []listedParam `json:"params,omitempty"`
		// Metrics are what the test reports and what each means, as its
		// plugin declares (name, unit, better, plot, record).
		Metrics []result.Meaning `json:"metrics,omitempty"`
		Error   string           `json:"error,omitempty"`
	}
	// listedParam is a test parameter (--param KEY=VALUE).
	listedParam struct {
		Name        string `json:"name"`
		Default     string `json:"default,omitempty"`
		Unit        string `json:"unit,omitempty"`
		Description string `json:"description"`
	}
	// listedPlugin is a plugin of list plugins; Tests counts its tests.
	listedPlugin struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Tests   int    `json:"tests"`
	}
	// listedLauncher is a launcher of list launchers.
	listedLauncher struct {
		Name string `json:"name"`
	}
)

const listUsage = `Usage: gpuaccept list [skus|suites|tests|plugins|launchers] [flags]

Lists the SKUs (the default) with where each comes from (built-in, or the
file of --baselines DIR) and their suites, each SKU's suites with their
tests, the tests plugins offer with their parameters, the plugins, or the
launchers. --format json prints the same as a JSON array of objects.
`

// listFlags are the flags each list takes: the SKU lists read SKU files,
// the test lists plugins, and launchers neither.
var listFlags = map[string][]string{
	"skus": {"sku", "baselines", "format"}, "suites": {"sku", "baselines", "format"},
	"tests": {"plugin-path", "format"}, "plugins": {"plugin-path", "format"}, "launchers": {"format"},
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
// metricsText renders what a test's metrics mean, as baselines and
// baseline record read it: "busbw GB/s (higher, curve, recorded), time us
// (lower, curve)"; "unknown" for a metric declared neither way.
func metricsText(ms []pluginapi.MetricInfo) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		what := []string{string(m.Better)}
		if m.Better == result.BetterUnknown {
			what[0] = "unknown"
		}
		if m.Plot != result.PlotNone {
			what = append(what, string(m.Plot))
		}
		if m.Record {
			what = append(what, "recorded")
		}
		parts[i] = fmt.Sprintf("%s %s (%s)", m.Name, m.Unit, strings.Join(what, ", "))
	}
	return strings.Join(parts, ", ")
}

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
		if len(t.Metrics) > 0 {
			fmt.Fprintf(w, "\tmetrics: %s\n", metricsText(t.Metrics))
		}
		if !shared {
			params(d.Name+"."+t.Name, t.Params)
		}
	}
	if shared && len(d.Tests) > 0 {
		params(d.Name, d.Tests[0].Params)
	}
}
