package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/argmask"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
)

var checkUsage = help("check")

// checkOptions are the flags of check.
type checkOptions struct {
	c           cliopts.Common
	test        string
	nodes, gpus int
	args        []string
	fs          *pflag.FlagSet
}

func newCheckOptions(stderr io.Writer) *checkOptions {
	o := &checkOptions{}
	fs := cliopts.NewFlags("check", checkUsage, stderr)
	o.fs = fs
	o.c.Add(fs)
	o.c.AddSign(fs)
	fs.StringVar(&o.test, "test", "", "test the logs are output of, e.g. nccl.all_reduce (gpuaccept list tests)")
	fs.IntVar(&o.nodes, "nodes", 0, "number of nodes the logs ran on (required)")
	fs.IntVar(&o.gpus, "gpus-per-node", 0, "GPUs per node the logs ran on (required)")
	return o
}

// Validate checks the flags alone, before anything is read.
func (o *checkOptions) Validate() error {
	if err := cliopts.ValidFormat(o.c.Format); err != nil {
		return err
	}
	if o.c.SKU == "" || o.test == "" {
		return cliopts.Usage(errors.New("--sku and --test are required"))
	}
	if n := len(argmask.FlagValues(o.args, "test")); n > 1 {
		// A string flag keeps its last value: the logs of the others
		// would be judged as that test's.
		return cliopts.Usage(fmt.Errorf("--test given %d times: check judges the logs of one test; run it once per test", n))
	}
	if o.fs.NArg() == 0 {
		return cliopts.Usage(errors.New("no LOGFILE given"))
	}
	if o.c.SignKey != "" && o.c.Out == "" {
		return cliopts.Usage(errors.New("--sign-key signs a results folder: give --out DIR"))
	}
	return o.c.LoadKey()
}

// cmdCheck is the check command: flags -> checkOptions ->
// acceptance.Check -> signoff.Finish.
func cmdCheck(args []string, stdout, stderr io.Writer) (int, error) {
	o := newCheckOptions(stderr)
	if err := o.fs.Parse(args); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	o.args = args
	if err := o.Validate(); err != nil {
		return exitUsage, err
	}
	c := &o.c
	s, err := c.Cats.SKU(stderr, c.SKU)
	if err != nil {
		return exitUsage, err
	}
	baseline, err := c.Cats.File(s)
	if err != nil {
		return exitUsage, err
	}
	host := c.Host()
	defer host.Close()
	ctx, stop := cliopts.SignalContext()
	defer stop()
	c.Ctx = ctx
	res, err := acceptance.Check(ctx, acceptance.CheckOptions{SKU: s, Test: o.test, Nodes: o.nodes, GPUsPerNode: o.gpus, Files: o.fs.Args(),
		Out: c.Out, Baseline: baseline, Plugins: host, Version: getVersion()})
	if err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	return c.Finish(res, s, stdout, stderr)
}
