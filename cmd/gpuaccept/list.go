package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/listing"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
)

var listUsage = help("list")

// cmdList is the list command: flags -> listing.Write.
func cmdList(args []string, stdout, stderr io.Writer) (int, error) {
	var c cliopts.Common
	fs := cliopts.NewFlags("list", listUsage, stderr)
	c.AddOnly(fs, "sku", "baselines", "plugin-path")
	fs.Lookup("sku").Usage = "list skus, list suites: only this SKU's"
	fs.StringVar(&c.Format, "format", "table", "table, or json (an array of objects, the fields README.md lists)")
	if err := fs.Parse(args); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	what := "skus"
	if fs.NArg() > 0 {
		what = fs.Arg(0)
	}
	if fs.NArg() > 1 {
		return exitUsage, cliopts.Usage(fmt.Errorf("list: unexpected arguments %q (want one of skus, suites, tests, plugins, launchers)", fs.Args()[1:]))
	}
	var given []string
	fs.Visit(func(f *pflag.Flag) { given = append(given, f.Name) })
	if err := listing.CheckFlags(what, given); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	if err := listing.CheckFormat(c.Format); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	host := c.Host()
	defer host.Close()
	catalog := func() (*sku.Catalog, error) { return c.Catalog(stderr) }
	err := listing.Write(stdout, what, c.Format, listing.Sources{Catalog: catalog, SKU: c.SKU, Plugins: host, Launchers: launch.Names()})
	if err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	return exitOK, nil
}
