package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/argmask"
)

var checkUsage = help("check")

// checkOptions are the flags of check.
type checkOptions struct {
	c           common
	test        string
	nodes, gpus int
	args        []string
	fs          *pflag.FlagSet
}

func newCheckOptions(stderr io.Writer) *checkOptions {
	o := &checkOptions{}
	fs := newFlags("check", checkUsage, stderr)
	o.fs = fs
	o.c.add(fs)
	o.c.addSign(fs)
	fs.StringVar(&o.test, "test", "", "test the logs are output of, e.g. nccl.all_reduce (gpuaccept list tests)")
	fs.IntVar(&o.nodes, "nodes", 0, "number of nodes the logs ran on (required)")
	fs.IntVar(&o.gpus, "gpus-per-node", 0, "GPUs per node the logs ran on (required)")
	return o
}

// Validate checks the flags alone, before anything is read.
func (o *checkOptions) Validate() error {
	if err := validFormat(o.c.format); err != nil {
		return err
	}
	if o.c.sku == "" || o.test == "" {
		return usageError{errors.New("--sku and --test are required")}
	}
	if n := len(argmask.FlagValues(o.args, "test")); n > 1 {
		// A string flag keeps its last value: the logs of the others
		// would be judged as that test's.
		return usageError{fmt.Errorf("--test given %d times: check judges the logs of one test; run it once per test", n)}
	}
	if o.fs.NArg() == 0 {
		return usageError{errors.New("no LOGFILE given")}
	}
	if o.c.signKey != "" && o.c.out == "" {
		return usageError{errors.New("--sign-key signs a results folder: give --out DIR")}
	}
	return o.c.loadKey()
}

// cmdCheck is the check command: flags -> checkOptions ->
// acceptance.Check -> signoff.Finish.
func cmdCheck(args []string, stdout, stderr io.Writer) (int, error) {
	o := newCheckOptions(stderr)
	if err := o.fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	o.args = args
	if err := o.Validate(); err != nil {
		return exitUsage, err
	}
	c := &o.c
	s, err := c.cats.SKU(stderr, c.sku)
	if err != nil {
		return exitUsage, err
	}
	baseline, err := c.cats.File(s)
	if err != nil {
		return exitUsage, err
	}
	host := c.host()
	defer host.Close()
	ctx, stop := signalContext()
	defer stop()
	c.ctx = ctx
	res, err := acceptance.Check(ctx, acceptance.CheckOptions{SKU: s, Test: o.test, Nodes: o.nodes, GPUsPerNode: o.gpus, Files: o.fs.Args(),
		Out: c.out, Baseline: baseline, Plugins: host, Version: getVersion()})
	if err != nil {
		return exitUsage, usageError{err}
	}
	return c.finish(res, s, stdout, stderr)
}
