package main

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/record"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
	"github.com/gpuaccept/gpuaccept/launchers/k8s"
)

var baselineUsage = help("baseline")

var recordUsage = help("record")

// cmdBaselineRecord is baseline record: flags -> acceptance.RecordBaseline.
func cmdBaselineRecord(args []string, stdout, stderr io.Writer) (int, error) {
	var c cliopts.Common
	o := acceptance.RecordOptions{Record: record.DefaultOptions(), Stdout: stdout, Stderr: stderr}
	opt := &o.Record
	fs := cliopts.NewFlags("baseline record", recordUsage, stderr)
	fs.StringVar(&c.SKU, "sku", "", "SKU whose file the entries go into (gpuaccept list skus)")
	fs.StringVar(&c.Cats.Dir, "baselines", "", cliopts.BaselinesUsage)
	fs.StringVar(&c.PluginPath, "plugin-path", os.Getenv("GPUACCEPT_PLUGIN_PATH"), "folders searched for external plugins")
	fs.StringVar(&o.Out, "out", "", "write the SKU file here (default: standard output)")
	fs.IntVar(&o.Nodes, "nodes", 0, "nodes the raw outputs and logs ran on")
	fs.IntVar(&o.GPUsPerNode, "gpus-per-node", 0, "GPUs per node the raw outputs and logs ran on")
	fs.StringSliceVar(&opt.Metrics, "metric", opt.Metrics, "metrics to record, comma-separated: per message size where the points have one (busbw), else one value per curve (tflops, bw); default: of each test, those its plugin declares recorded by default (gpuaccept list tests)")
	fs.Float64Var(&opt.MinFraction, "min-fraction", opt.MinFraction, "leave out sizes whose median is below this fraction of the curve's highest (latency-bound)")
	fs.Float64Var(&opt.Fail, "fail", opt.Fail, "least fail distance under the median, percent (plateau)")
	fs.Float64Var(&opt.Warn, "warn", opt.Warn, "least warn distance under the median, percent (plateau)")
	fs.Float64Var(&opt.SteepFail, "steep-fail", opt.SteepFail, "least fail distance, percent, for sizes under --steep-fraction of the highest median")
	fs.Float64Var(&opt.SteepWarn, "steep-warn", opt.SteepWarn, "least warn distance, percent, on the steep part")
	fs.Float64Var(&opt.SteepFraction, "steep-fraction", opt.SteepFraction, "sizes whose median is below this fraction of the highest are on the steep part")
	fs.Float64Var(&opt.WarnMax, "warn-max", opt.WarnMax, "warn this many percent above the median (fewer ranks, another path)")
	fs.StringVar(&opt.Basis, "basis", "", "write the entries as this authority: golden (the default: this site's own hardware) or reference (to judge other sites' hardware of the SKU, as the built-in files do)")
	fs.IntVar(&o.Repeat, "repeat", 0, "run the suite this many times and record from those runs (run flags after --)")
	fs.StringVar(&o.Results, "results", "", "with --repeat: folder for the runs' results folders (default gpuaccept-results/record-SKU-TIME)")
	if err := fs.Parse(args); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	if c.SKU == "" {
		return exitUsage, cliopts.Usage(errors.New("baseline record: --sku is required: the entries go into that SKU's file"))
	}
	basis, err := record.ParseBasis(opt.Basis)
	if err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	opt.Basis = basis
	cat, err := c.Catalog(stderr)
	if err != nil {
		return exitUsage, err
	}
	if o.SKU, err = cat.Get(c.SKU); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	if o.File, err = c.Cats.File(o.SKU); err != nil {
		return exitUsage, err
	}
	opt.Now = time.Now().UTC()
	host := c.Host()
	defer host.Close()
	ctx, stop := cliopts.SignalContext()
	defer stop()
	o.Plugins, o.Check, o.Version = host, acceptance.SKUChecker(ctx, host, k8s.CheckSKU), getVersion()
	o.Command = "gpuaccept baseline record " + strings.Join(args, " ")
	o.Inputs, o.RunArgs, o.Baselines = fs.Args(), fs.Args(), c.Cats.Dir
	o.Run = func(args []string) (int, error) { return cmdRun(args, stderr, stderr) }
	if err := acceptance.RecordBaseline(ctx, o); err != nil {
		return exitUsage, err
	}
	return exitOK, nil
}

func cmdBaselineDiff(args []string, stdout, stderr io.Writer) (int, error) {
	var c cliopts.Common
	fs := cliopts.NewFlags("baseline diff", "Usage: gpuaccept baseline diff OLD NEW\n\nShows what changed between two SKU files: suites and tests added or removed, a suite's nodes and params, a test's params, min_gpus, skip and timeout; values per size (with the move in percent), bands, units, entries and points added or removed, and how many values stayed. OLD and NEW are SKU files, or names of SKUs (the built-in ones, or --baselines DIR's). Both must pass baseline validate.\n", stderr)
	fs.StringVar(&c.Cats.Dir, "baselines", "", cliopts.BaselinesUsage+" (for SKU names)")
	fs.StringVar(&c.PluginPath, "plugin-path", os.Getenv("GPUACCEPT_PLUGIN_PATH"), "folders searched for external plugins")
	if err := fs.Parse(args); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	if fs.NArg() != 2 {
		return exitUsage, cliopts.Usage(errors.New("baseline diff: want OLD and NEW (SKU files or SKU names)"))
	}
	host := c.Host()
	defer host.Close()
	ctx := context.Background()
	catalog := func() (*sku.Catalog, error) { return c.Catalog(stderr) }
	skus, err := acceptance.DiffSKUs(ctx, [2]string{fs.Arg(0), fs.Arg(1)}, catalog, host, acceptance.SKUChecker(ctx, host, k8s.CheckSKU))
	if err != nil {
		return exitUsage, err
	}
	changes, unchanged := record.Diff(skus[0], skus[1])
	if err := record.WriteDiff(stdout, changes, unchanged); err != nil {
		return exitUsage, err
	}
	return exitOK, nil
}
