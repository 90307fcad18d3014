package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
	"github.com/gpuaccept/gpuaccept/launchers/k8s"
)

func cmdBaseline(args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		return exitUsage, cliopts.Usage(errors.New("baseline: want validate [FILE...], show SKU, record or diff OLD NEW"))
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
		var c cliopts.Common
		fs := cliopts.NewFlags("baseline validate", "Usage: gpuaccept baseline validate [--baselines DIR] [FILE...]\n\nChecks SKU files (default: every built-in one, or with --baselines every file of DIR, the site's) and lists every problem, up to 20 a file, each with its file, line and field.\n", stderr)
		c.AddOnly(fs, "baselines", "plugin-path")
		if err := fs.Parse(args[1:]); err != nil {
			return exitUsage, cliopts.Usage(err)
		}
		host := c.Host()
		defer host.Close()
		check := acceptance.SKUChecker(context.Background(), host, k8s.CheckSKU)
		if err := acceptance.ValidateSKUs(stdout, &c.Cats, fs.Args(), check); err != nil {
			return exitUsage, err
		}
		return exitOK, nil
	case "show":
		var c cliopts.Common
		fs := cliopts.NewFlags("baseline show", "Usage: gpuaccept baseline show SKU [--yaml] [--baselines DIR]\n\nShows a SKU's baseline, entry by entry, with the sources; --yaml prints its SKU file instead, byte for byte (the built-in one, or --baselines DIR's that replaces it), to start a site's own from.\n", stderr)
		c.AddOnly(fs, "baselines")
		asYAML := fs.Bool("yaml", false, "print the SKU file itself, as gpuaccept carries it (or as --baselines DIR holds it)")
		if err := fs.Parse(args[1:]); err != nil {
			return exitUsage, cliopts.Usage(err)
		}
		if fs.NArg() != 1 {
			return exitUsage, cliopts.Usage(errors.New("baseline show: want one SKU"))
		}
		cat, err := c.Catalog(stderr)
		if err != nil {
			return exitUsage, err
		}
		s, err := cat.Get(fs.Arg(0))
		if err != nil {
			return exitUsage, cliopts.Usage(err)
		}
		if *asYAML {
			data, err := cat.File(s.Name)
			if err != nil {
				return exitError, err
			}
			_, err = stdout.Write(data)
			return exitOK, err
		}
		if err := sku.Show(stdout, s); err != nil {
			return exitUsage, err
		}
		return exitOK, nil
	}
	return exitUsage, cliopts.Usage(fmt.Errorf("baseline %q: want validate, show, record or diff", args[0]))
}
