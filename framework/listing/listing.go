// Package listing renders gpuaccept's catalog listings (`gpuaccept list`):
// the SKUs and their suites, the tests the plugins offer with their
// parameters and metrics, the plugins and the launchers, as an aligned
// table or as the JSON array README.md ("Listing the catalog") documents.
package listing

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Flags are the flags each list takes: the SKU lists read SKU files, the
// test lists plugins, and launchers neither.
var Flags = map[string][]string{
	"skus": {"sku", "baselines", "format"}, "suites": {"sku", "baselines", "format"},
	"tests": {"plugin-path", "format"}, "plugins": {"plugin-path", "format"}, "launchers": {"format"},
}

// CheckFlags refuses a flag given (by name, without dashes) to a list
// that would ignore it. An unknown list passes: Write names it.
func CheckFlags(what string, given []string) error {
	allowed, ok := Flags[what]
	if !ok {
		return nil
	}
	for _, f := range given {
		if !slices.Contains(allowed, f) {
			return fmt.Errorf("list %s does not take --%s (it takes: %s)", what, f, flagList(allowed))
		}
	}
	return nil
}

// flagList renders flag names as "--a, --b", or "no flags".
func flagList(names []string) string {
	if len(names) == 0 {
		return "no flags"
	}
	return "--" + strings.Join(names, ", --")
}

// CheckFormat refuses a --format list cannot print.
func CheckFormat(format string) error {
	if format != "table" && format != "json" {
		return fmt.Errorf("list: unknown --format %q (known: table, json)", format)
	}
	return nil
}

// Plugins is what the test and plugin lists read of the plugin host
// (*pluginapi.Host).
type Plugins interface {
	Names() []string
	Describe(ctx context.Context, plugin string) (pluginapi.Description, error)
}

// Sources are what a list reads. Only the ones the list needs are used.
type Sources struct {
	// Catalog loads the SKU files (skus, suites).
	Catalog func() (*sku.Catalog, error)
	// SKU is --sku: list only this SKU's ("": all).
	SKU string
	// Plugins describe the tests (tests, plugins).
	Plugins Plugins
	// Launchers are the launchers' names (launchers).
	Launchers []string
}

// Write writes list what (skus, suites, tests, plugins or launchers) from src to w: format "table"
// (tab-aligned rows) or "json" (an array of the objects of this package,
// [] when empty). A plugin that cannot describe itself is a row naming
// the error, not an error. Errors: an unknown list, a SKU catalog that
// does not load, an unknown --sku, a failed write.
func Write(w io.Writer, what, format string, src Sources) error {
	var rows []any // what json prints
	table := w
	if format == "json" {
		table = io.Discard
	}
	tw := tabwriter.NewWriter(table, 0, 4, 2, ' ', 0)
	switch what {
	case "skus", "suites":
		cat, err := src.Catalog()
		if err != nil {
			return err
		}
		names := cat.Names()
		if src.SKU != "" {
			if _, err := cat.Get(src.SKU); err != nil {
				return err
			}
			names = []string{src.SKU}
		}
		for _, n := range names {
			rows = append(rows, skuRows(tw, what, n, cat.SKUs[n])...)
		}
	case "tests", "plugins":
		for _, p := range src.Plugins.Names() {
			d, err := src.Plugins.Describe(context.Background(), p)
			if err != nil {
				rows = append(rows, Test{Plugin: p, Error: err.Error()})
				fmt.Fprintf(tw, "%s\terror: %v\n", p, err)
				continue
			}
			if what == "plugins" {
				rows = append(rows, Plugin{Name: d.Name, Version: d.Version, Tests: len(d.Tests)})
				fmt.Fprintf(tw, "%s\t%s\t%s\n", d.Name, d.Version, result.Count(len(d.Tests), "test"))
				continue
			}
			for _, t := range d.Tests {
				lt := Test{Test: d.Name + "." + t.Name, Plugin: d.Name, PluginVersion: d.Version, Description: t.Description, Params: []Param{}}
				for _, p := range t.Params {
					lt.Params = append(lt.Params, Param(p))
				}
				lt.Metrics = t.Meanings()
				rows = append(rows, lt)
			}
			Tests(tw, d)
		}
	case "launchers":
		for _, n := range src.Launchers {
			rows = append(rows, Launcher{Name: n})
			fmt.Fprintln(tw, n)
		}
	default:
		return fmt.Errorf("list %q: want skus, suites, tests, plugins or launchers", what)
	}
	if format == "json" {
		if rows == nil {
			rows = []any{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	return tw.Flush()
}

// skuRows writes SKU s (named n) as list skus or list suites shows it,
// and returns its JSON objects.
func skuRows(w io.Writer, what, n string, s *sku.SKU) []any {
	if what == "skus" {
		fmt.Fprintf(w, "%s\t%s\t%s\tsuites: %s\n", n, s.Source, s.Description, strings.Join(s.SuiteNames(), ", "))
		return []any{SKU{Name: n, Description: s.Description, Source: s.Source, File: s.File, GPU: s.GPU, GPUsPerNode: s.GPUsPerNode, Suites: s.SuiteNames()}}
	}
	var rows []any
	for _, sn := range s.SuiteNames() {
		su := s.Suites[sn]
		names := make([]string, len(su.Tests))
		ls := Suite{SKU: n, Suite: sn, Description: su.Description, Nodes: su.Nodes, Params: su.Params, Tests: []SuiteTest{}}
		for i, t := range su.Tests {
			names[i] = t.Test
			ls.Tests = append(ls.Tests, SuiteTest{Test: t.Test, Params: t.Params, MinGPUs: t.MinGPUs, SiteParams: t.SiteParams, Skip: t.Skip, Timeout: t.Timeout.String()})
			if t.Timeout == 0 {
				ls.Tests[i].Timeout = ""
			}
		}
		rows = append(rows, ls)
		fmt.Fprintf(w, "%s\t%s\t%s\n", n, sn, strings.Join(names, " "))
	}
	return rows
}

// The objects list --format json prints, one per row of the table: their
// field names are a contract with scripts (README.md, "Listing the
// catalog"), kept when the table changes. Empty fields are left out.
type (
	// SKU is a SKU of list skus.
	SKU struct {
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
	// Suite is a suite of list suites.
	Suite struct {
		SKU         string            `json:"sku"`
		Suite       string            `json:"suite"`
		Description string            `json:"description,omitempty"`
		Nodes       int               `json:"nodes,omitempty"`
		Params      map[string]string `json:"params,omitempty"`
		Tests       []SuiteTest       `json:"tests"`
	}
	// SuiteTest is one test of a suite, as the SKU file gives it.
	SuiteTest struct {
		Test    string            `json:"test"`
		Params  map[string]string `json:"params,omitempty"`
		MinGPUs int               `json:"min_gpus,omitempty"`
		// SiteParams are the parameters a site may set (site_params).
		SiteParams []string `json:"site_params,omitempty"`
		Skip       string   `json:"skip,omitempty"`
		// Timeout is a Go duration ("45m0s").
		Timeout string `json:"timeout,omitempty"`
	}
	// Test is a test of list tests, or a plugin that could not describe
	// its tests (Plugin and Error only).
	Test struct {
		Test          string  `json:"test,omitempty"`
		Plugin        string  `json:"plugin"`
		PluginVersion string  `json:"plugin_version,omitempty"`
		Description   string  `json:"description,omitempty"`
		Params        []Param `json:"params,omitempty"`
		// Metrics are what the test reports and what each means, as its
		// plugin declares (name, unit, better, plot, record).
		Metrics []result.Meaning `json:"metrics,omitempty"`
		Error   string           `json:"error,omitempty"`
	}
	// Param is a test parameter (--param KEY=VALUE).
	Param struct {
		Name        string `json:"name"`
		Default     string `json:"default,omitempty"`
		Unit        string `json:"unit,omitempty"`
		Description string `json:"description"`
	}
	// Plugin is a plugin of list plugins; Tests counts its tests.
	Plugin struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Tests   int    `json:"tests"`
	}
	// Launcher is a launcher of list launchers.
	Launcher struct {
		Name string `json:"name"`
	}
)

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

// Tests writes a plugin's tests, one a line, with their metrics and
// parameters: the parameters once for the plugin when its tests share
// them (the built-in plugins), else under each test, so that no test is
// shown another's parameters.
func Tests(w io.Writer, d pluginapi.Description) {
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
