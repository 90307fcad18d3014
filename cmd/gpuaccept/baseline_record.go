package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/record"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/framework/skucheck"
)

const baselineUsage = `Usage: gpuaccept baseline validate [--baselines DIR] [FILE...]
  gpuaccept baseline show SKU [--yaml]     (--yaml: the SKU file itself, to start a site's own)
  gpuaccept baseline record --sku SKU [--out FILE] [--nodes N --gpus-per-node G] RUN...
  gpuaccept baseline record --sku SKU --repeat N [--out FILE] [--results DIR] -- RUN-FLAGS...
  gpuaccept baseline diff OLD NEW          (SKU files, or SKU names)
`

const recordUsage = `Usage: gpuaccept baseline record --sku SKU [flags] RUN...
       gpuaccept baseline record --sku SKU --repeat N [flags] -- RUN-FLAGS...

Writes the SKU's file with the baseline entries of the recorded tests and
scopes replaced by new ones: per message size the median of the runs, and
fail/warn edges from their spread (baselines/README.md, Recording a
baseline). Everything else in the file stays. A RUN is
  - a results folder (its results.json: gpuaccept run, or check --out),
  - a folder of raw outputs laid out as a results folder's raw/ (one
    folder per test, e.g. nccl.all_reduce/all_reduce.log), or
  - TEST=LOGFILE or TEST@NxG=LOGFILE, e.g. nccl.all_reduce=run1/all_reduce.log
    or nccl.all_gather@8x4=big.log (a LOGFILE.json beside it, nccl-tests -J,
    joins it);
raw folders and logs need the scope they ran at: --nodes and
--gpus-per-node, or @NxG on the log. Runs that errored
or failed a correctness check are refused.

With --repeat N, record runs the suite N times itself (gpuaccept run with
RUN-FLAGS, each into its own results folder under --results) and records
from those runs.
`

func cmdBaselineRecord(args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var nodes, gpus, repeat int
	var outFile, resultsRoot string
	opt := record.DefaultOptions()
	fs := newFlags("baseline record", recordUsage, stderr)
	fs.StringVar(&c.sku, "sku", "", "SKU whose file the entries go into (gpuaccept list skus)")
	fs.StringVar(&c.baselinesDir, "baselines", "", baselinesUsage)
	fs.StringVar(&c.pluginPath, "plugin-path", os.Getenv("GPUACCEPT_PLUGIN_PATH"), "folders searched for external plugins")
	fs.StringVar(&outFile, "out", "", "write the SKU file here (default: standard output)")
	fs.IntVar(&nodes, "nodes", 0, "nodes the raw outputs and logs ran on")
	fs.IntVar(&gpus, "gpus-per-node", 0, "GPUs per node the raw outputs and logs ran on")
	fs.StringSliceVar(&opt.Metrics, "metric", opt.Metrics, "metrics to record, comma-separated: per message size where the points have one (busbw), else one value per curve (tflops, bw); default: of each test, those its plugin declares recorded by default (gpuaccept list tests)")
	fs.Float64Var(&opt.MinFraction, "min-fraction", opt.MinFraction, "leave out sizes whose median is below this fraction of the curve's highest (latency-bound)")
	fs.Float64Var(&opt.Fail, "fail", opt.Fail, "least fail distance under the median, percent (plateau)")
	fs.Float64Var(&opt.Warn, "warn", opt.Warn, "least warn distance under the median, percent (plateau)")
	fs.Float64Var(&opt.SteepFail, "steep-fail", opt.SteepFail, "least fail distance, percent, for sizes under --steep-fraction of the highest median")
	fs.Float64Var(&opt.SteepWarn, "steep-warn", opt.SteepWarn, "least warn distance, percent, on the steep part")
	fs.Float64Var(&opt.SteepFraction, "steep-fraction", opt.SteepFraction, "sizes whose median is below this fraction of the highest are on the steep part")
	fs.Float64Var(&opt.WarnMax, "warn-max", opt.WarnMax, "warn this many percent above the median (fewer ranks, another path)")
	fs.StringVar(&opt.Basis, "basis", "", "write the entries as this authority: golden (the default: this site's own hardware) or reference (to judge other sites' hardware of the SKU, as the built-in files do)")
	fs.IntVar(&repeat, "repeat", 0, "run the suite this many times and record from those runs (run flags after --)")
	fs.StringVar(&resultsRoot, "results", "", "with --repeat: folder for the runs' results folders (default gpuaccept-results/record-SKU-TIME)")
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	if c.sku == "" {
		return exitUsage, usageError{errors.New("baseline record: --sku is required: the entries go into that SKU's file")}
	}
	switch opt.Basis {
	case "", result.BasisGolden:
		opt.Basis = ""
	case result.BasisReference:
	default:
		return exitUsage, usageError{fmt.Errorf("baseline record: --basis %q: want golden or reference", opt.Basis)}
	}
	cat, err := c.catalog(stderr)
	if err != nil {
		return exitUsage, err
	}
	s, err := cat.Get(c.sku)
	if err != nil {
		return exitUsage, usageError{err}
	}
	data, err := c.skuFile(s)
	if err != nil {
		return exitUsage, err
	}
	opt.Now = time.Now().UTC()
	command := "gpuaccept baseline record " + strings.Join(args, " ")
	host := c.host()
	defer host.Close()
	ctx, stop := signalContext()
	defer stop()

	inputs := fs.Args()
	if repeat > 0 {
		if resultsRoot == "" {
			if err := acceptance.CheckResultsParent(); err != nil {
				return exitUsage, usageError{err}
			}
			resultsRoot = filepath.Join(acceptance.ResultsParent, "record-"+acceptance.DirName(s.Name, "", opt.Now))
		}
		runArgs := append([]string{"--sku", s.Name}, fs.Args()...)
		if c.baselinesDir != "" {
			runArgs = append(runArgs, "--baselines", c.baselinesDir)
		}
		inputs = nil
		for i := 1; i <= repeat; i++ {
			dir := filepath.Join(resultsRoot, fmt.Sprintf("run-%d", i))
			fmt.Fprintf(stderr, "record: run %d of %d into %s\n", i, repeat, dir)
			code, err := cmdRun(append(runArgs, "--out", dir), stderr, stderr)
			if code == exitUsage {
				return exitUsage, fmt.Errorf("record: run %d of %d: %w", i, repeat, errOr(err, "could not run"))
			}
			inputs = append(inputs, dir)
		}
	}
	if len(inputs) == 0 {
		return exitUsage, usageError{errors.New("baseline record: no runs given (results folders, raw folders or TEST=LOGFILE), and no --repeat")}
	}
	if (nodes != 0 || gpus != 0) && plan.CheckCounts(nodes, gpus) != nil {
		return exitUsage, usageError{fmt.Errorf("--nodes and --gpus-per-node: %w", plan.CheckCounts(nodes, gpus))}
	}
	topo := plan.Topology{Scope: plan.Scope{Nodes: nodes, GPUsPerNode: gpus}}
	samples, runs, err := acceptance.RecordSamples(ctx, host, s, topo, inputs, getVersion())
	if err != nil {
		return exitUsage, fmt.Errorf("record: %w", err)
	}
	var tests []string
	for _, smp := range samples {
		tests = append(tests, smp.Test)
	}
	opt.Instance = runner.InstanceLabels(ctx, host, tests)
	opt.Meanings = runner.MeaningsOfSKU(ctx, host, s, tests)
	entries, err := record.Record(samples, opt)
	if err != nil {
		return exitUsage, err
	}
	note := record.Note(opt.Now, command)
	out, err := record.Merge(data, s.File, entries, note)
	if err != nil {
		return exitUsage, err
	}
	// The header must describe this recording, not the one before it.
	out = record.SetProvenance(out, record.Provenance(samples, command, opt.Now))
	if _, err := checkSKU(ctx, host, out, s.File); err != nil {
		return exitUsage, fmt.Errorf("record: the recorded file does not validate: %w", err)
	}
	fmt.Fprintf(stderr, "record: %s from %s of %s\n", result.Count(len(entries), "entry"), result.Count(runs, "run"), result.Count(acceptance.CountTests(samples), "test"))
	if outFile == "" {
		_, err = stdout.Write(out)
		return exitOK, err
	}
	// The recorded command line and the runs' provenance can hold what
	// the runs were given (--param env.HF_TOKEN=...).
	if err := safefs.WriteNamed(outFile, redact.Env().Bytes(out), 0o644); err != nil {
		return exitUsage, fmt.Errorf("record: %w", err)
	}
	fmt.Fprintf(stderr, "record: wrote %s\n", outFile)
	return exitOK, nil
}

func errOr(err error, s string) error {
	if err != nil {
		return err
	}
	return errors.New(s)
}

func cmdBaselineDiff(args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	fs := newFlags("baseline diff", "Usage: gpuaccept baseline diff OLD NEW\n\nShows what changed between two SKU files: suites and tests added or removed, a suite's nodes and params, a test's params, min_gpus, skip and timeout; values per size (with the move in percent), bands, units, entries and points added or removed, and how many values stayed. OLD and NEW are SKU files, or names of SKUs (the built-in ones, or --baselines DIR's). Both must pass baseline validate.\n", stderr)
	fs.StringVar(&c.baselinesDir, "baselines", "", baselinesUsage+" (for SKU names)")
	fs.StringVar(&c.pluginPath, "plugin-path", os.Getenv("GPUACCEPT_PLUGIN_PATH"), "folders searched for external plugins")
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	if fs.NArg() != 2 {
		return exitUsage, usageError{errors.New("baseline diff: want OLD and NEW (SKU files or SKU names)")}
	}
	host := c.host()
	defer host.Close()
	ctx := context.Background()
	var skus [2]*sku.SKU
	var problems []string
	for i, f := range fs.Args() {
		if fi, err := os.Stat(f); !strings.ContainsAny(f, "/.") && (err != nil || fi.IsDir()) { // a SKU's name, not a file
			cat, err := c.catalog(stderr)
			if err != nil {
				return exitUsage, err
			}
			if skus[i], err = cat.Get(f); err != nil {
				return exitUsage, usageError{fmt.Errorf("baseline diff: %w", err)}
			}
			if err := skucheck.Check(ctx, host, skus[i]); err != nil {
				problems = append(problems, err.Error())
			}
			continue
		}
		data, err := safefs.ReadNamed(f, acceptance.MaxSKUFile)
		if err != nil {
			return exitUsage, fmt.Errorf("baseline diff: %w", err)
		}
		if skus[i], err = checkSKU(ctx, host, data, f); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		// A diff against a file that no run could use would show moves
		// that mean nothing (a unit slip reads as an 8x move).
		return exitUsage, fmt.Errorf("baseline diff: fix these first (gpuaccept baseline validate FILE):\n%s", strings.Join(problems, "\n"))
	}
	changes, unchanged := record.Diff(skus[0], skus[1])
	if err := record.WriteDiff(stdout, changes, unchanged); err != nil {
		return exitUsage, err
	}
	return exitOK, nil
}
