package acceptance

// This file: gpuaccept baseline record from its runs to the SKU file
// written (framework/record makes and merges the entries), and the two
// SKUs baseline diff compares.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/record"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/framework/skucheck"
)

// RecordOptions are what baseline record records from and into.
type RecordOptions struct {
	// Plugins parse the runs and describe their tests.
	Plugins RecordPlugins
	// SKU is the SKU recorded, File the content of its SKU file.
	SKU  *sku.SKU
	File []byte
	// Inputs are the RUN arguments (RecordSamples); Nodes and GPUsPerNode
	// the scope raw folders and logs ran at (0: not given).
	Inputs             []string
	Nodes, GPUsPerNode int
	// Record are the recording's options (record.Options, Now set).
	Record record.Options
	// Command is the command line, written into the file's note and
	// header.
	Command, Version string
	// Check validates the recorded file as baseline validate does
	// (SKUChecker).
	Check CheckSKUFile
	// Repeat, when above 0, runs the suite that many times (Run, with
	// RunArgs: --sku and --baselines are added) each into its own
	// results folder under Results (default
	// gpuaccept-results/record-SKU-TIME), and records from those runs
	// instead of Inputs. Baselines is --baselines.
	Repeat    int
	Results   string
	RunArgs   []string
	Baselines string
	// Run runs gpuaccept run with args; an exit code of
	// result.ExitUsage means the run could not run.
	Run func(args []string) (int, error)
	// Out is the file to write (""), else the file goes to Stdout.
	// Progress and what was recorded are said on Stderr.
	Out            string
	Stdout, Stderr io.Writer
}

// RecordBaseline records the SKU's baseline entries from its runs, merges
// them into its file (record.Merge: everything else stays), stamps the
// file's provenance, validates it and writes it. Every error names what
// was being done: a run that could not run, a RUN that cannot be read, a
// recording refused (record.Record), a file that no longer validates.
func RecordBaseline(ctx context.Context, o RecordOptions) error {
	inputs, err := repeatRuns(o)
	if err != nil {
		return err
	}
	if len(inputs) == 0 {
		return errors.New("baseline record: no runs given (results folders, raw folders or TEST=LOGFILE), and no --repeat")
	}
	if (o.Nodes != 0 || o.GPUsPerNode != 0) && plan.CheckCounts(o.Nodes, o.GPUsPerNode) != nil {
		return fmt.Errorf("--nodes and --gpus-per-node: %w", plan.CheckCounts(o.Nodes, o.GPUsPerNode))
	}
	topo := plan.Topology{Scope: plan.Scope{Nodes: o.Nodes, GPUsPerNode: o.GPUsPerNode}}
	samples, runs, err := RecordSamples(ctx, o.Plugins, o.SKU, topo, inputs, o.Version)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	var tests []string
	for _, smp := range samples {
		tests = append(tests, smp.Test)
	}
	opt := o.Record
	opt.Instance = runner.InstanceLabels(ctx, o.Plugins, tests)
	opt.Meanings = runner.MeaningsOfSKU(ctx, o.Plugins, o.SKU, tests)
	entries, err := record.Record(samples, opt)
	if err != nil {
		return err
	}
	out, err := record.Merge(o.File, o.SKU.File, entries, record.Note(opt.Now, o.Command))
	if err != nil {
		return err
	}
	// The header must describe this recording, not the one before it.
	out = record.SetProvenance(out, record.Provenance(samples, o.Command, opt.Now))
	if _, err := o.Check(out, o.SKU.File); err != nil {
		return fmt.Errorf("record: the recorded file does not validate: %w", err)
	}
	fmt.Fprintf(o.Stderr, "record: %s from %s of %s\n", result.Count(len(entries), "entry"), result.Count(runs, "run"), result.Count(CountTests(samples), "test"))
	if o.Out == "" {
		_, err = o.Stdout.Write(out)
		return err
	}
	// The recorded command line and the runs' provenance can hold what
	// the runs were given (--param env.HF_TOKEN=...).
	if err := safefs.WriteNamed(o.Out, redact.Env().Bytes(out), 0o644); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	fmt.Fprintf(o.Stderr, "record: wrote %s\n", o.Out)
	return nil
}

// repeatRuns runs --repeat's runs and returns their results folders, or
// the RUN arguments without --repeat.
func repeatRuns(o RecordOptions) ([]string, error) {
	if o.Repeat <= 0 {
		return o.Inputs, nil
	}
	root := o.Results
	if root == "" {
		if err := CheckResultsParent(); err != nil {
			return nil, err
		}
		root = filepath.Join(ResultsParent, "record-"+DirName(o.SKU.Name, "", o.Record.Now))
	}
	runArgs := append([]string{"--sku", o.SKU.Name}, o.RunArgs...)
	if o.Baselines != "" {
		runArgs = append(runArgs, "--baselines", o.Baselines)
	}
	var dirs []string
	for i := 1; i <= o.Repeat; i++ {
		dir := filepath.Join(root, fmt.Sprintf("run-%d", i))
		fmt.Fprintf(o.Stderr, "record: run %d of %d into %s\n", i, o.Repeat, dir)
		code, err := o.Run(append(runArgs, "--out", dir))
		if code == result.ExitUsage {
			if err == nil {
				err = errors.New("could not run")
			}
			return nil, fmt.Errorf("record: run %d of %d: %w", i, o.Repeat, err)
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

// DiffSKUs reads the OLD and NEW of baseline diff: each a SKU file's path,
// or a SKU's name (no "/" or ".", and no file of that name) looked up in
// the catalog. Both must pass check (a SKU of the catalog: skucheck.Check
// against d): a diff against a file no run could use would show moves
// that mean nothing (a unit slip reads as an 8x move), so every problem of
// both is one error.
func DiffSKUs(ctx context.Context, args [2]string, catalog func() (*sku.Catalog, error), d skucheck.Describer, check CheckSKUFile) ([2]*sku.SKU, error) {
	var skus [2]*sku.SKU
	var problems []string
	for i, f := range args {
		if fi, err := os.Stat(f); !strings.ContainsAny(f, "/.") && (err != nil || fi.IsDir()) { // a SKU's name, not a file
			cat, err := catalog()
			if err != nil {
				return skus, err
			}
			if skus[i], err = cat.Get(f); err != nil {
				return skus, fmt.Errorf("baseline diff: %w", err)
			}
			if err := skucheck.Check(ctx, d, skus[i]); err != nil {
				problems = append(problems, err.Error())
			}
			continue
		}
		data, err := safefs.ReadNamed(f, MaxSKUFile)
		if err != nil {
			return skus, fmt.Errorf("baseline diff: %w", err)
		}
		if skus[i], err = check(data, f); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return skus, fmt.Errorf("baseline diff: fix these first (gpuaccept baseline validate FILE):\n%s", strings.Join(problems, "\n"))
	}
	return skus, nil
}
