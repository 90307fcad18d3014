package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/listing"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

var listUsage = help("list")

// cmdList is the list command: flags -> listing.Write.
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
	var given []string
	fs.Visit(func(f *pflag.Flag) { given = append(given, f.Name) })
	if err := listing.CheckFlags(what, given); err != nil {
		return exitUsage, usageError{err}
	}
	if err := listing.CheckFormat(c.format); err != nil {
		return exitUsage, usageError{err}
	}
	host := c.host()
	defer host.Close()
	catalog := func() (*sku.Catalog, error) { return c.catalog(stderr) }
	err := listing.Write(stdout, what, c.format, listing.Sources{Catalog: catalog, SKU: c.sku, Plugins: host, Launchers: launch.Names()})
	if err != nil {
		return exitUsage, usageError{err}
	}
	return exitOK, nil
}
