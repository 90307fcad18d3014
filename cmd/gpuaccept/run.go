package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
)

var runUsage = help("run")

func cmdRun(args []string, stdout, stderr io.Writer) (int, error) {
	return runOrLocalise(acceptance.CommandRun, args, stdout, stderr)
}

func cmdLocalise(args []string, stdout, stderr io.Writer) (int, error) {
	return runOrLocalise(acceptance.CommandLocalise, args, stdout, stderr)
}

// runOptions are the flags of run, and of localise: the same flags and
// wiring, but no suite run before the localisation of its multi-node
// tests.
type runOptions struct {
	cmd     acceptance.Command
	c       cliopts.Common
	scope   cliopts.ScopeFlags
	lf      cliopts.LocaliseFlags
	bi      cliopts.BurnInFlags
	suite   string
	tests   []string
	dryRun  bool
	retries int
	fs      *pflag.FlagSet
}

func newRunOptions(cmd acceptance.Command, stderr io.Writer) *runOptions {
	o := &runOptions{cmd: cmd}
	// gpuaccept --help lands here: show the commands too.
	fs := cliopts.NewFlags("run", topUsage()+"\n"+runUsage, stderr)
	if cmd == acceptance.CommandLocalise {
		fs = cliopts.NewFlags(string(cmd), localiseUsage, stderr)
	}
	o.fs = fs
	o.c.Add(fs)
	o.c.Version = getVersion()
	o.c.AddSign(fs)
	fs.StringVar(&o.suite, "suite", "", "suite to run (gpuaccept list suites)")
	o.scope.Add(fs, 30*time.Minute)
	fs.StringArrayVar(&o.tests, "test", nil, "run only this test of the suite (repeatable)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the exact commands without running them")
	fs.IntVar(&o.retries, "retries", 0, "run a test that failed or errored up to this many more times; every attempt is reported, a pass on a retry is a warn")
	o.lf.Add(fs, string(cmd))
	if cmd == acceptance.CommandRun {
		o.bi.Add(fs)
	}
	o.scope.Bind()
	return o
}

// Validate checks the flags alone, before anything is read or started.
func (o *runOptions) Validate() error {
	if o.fs.NArg() > 0 {
		return cliopts.Usage(fmt.Errorf("unexpected arguments %q (run takes flags only)", o.fs.Args()))
	}
	if err := o.bi.Validate(o.c.Out, o.dryRun, &o.c, &o.scope); o.cmd == acceptance.CommandRun && err != nil {
		return err
	} else if o.suite == "" {
		o.suite = o.bi.Suite()
	}
	if err := o.scope.Validate(); err != nil {
		return err
	}
	if err := cliopts.ValidFormat(o.c.Format); err != nil {
		return err
	}
	if err := o.c.LoadKey(); err != nil {
		return err
	}
	if o.c.SKU == "" || o.suite == "" {
		return cliopts.Usage(errors.New("--sku and --suite are required (gpuaccept list suites)"))
	}
	if o.retries < 0 || o.retries > acceptance.MaxRetries {
		// Each attempt keeps its raw outputs: no bound fills the disk.
		return cliopts.Usage(fmt.Errorf("--retries %d: want 0 to %d", o.retries, acceptance.MaxRetries))
	}
	return nil
}

// Complete resolves the flags into the run's setup and launcher
// (acceptance.Prepare): the SKU (--sku auto probed the nodes), the
// topology, the parameters, the results folder. sc is left open for the
// caller to close.
func (o *runOptions) Complete(sc *cliopts.Scope, stdout, stderr io.Writer) (acceptance.Prepared, error) {
	p, err := o.scope.Prepare(o.cmd, &o.c, sc, o.suite, o.tests, stdout, stderr)
	if err != nil {
		return acceptance.Prepared{}, err
	}
	p.Localise, p.DryRun = o.lf.LocaliseRequest, o.dryRun
	if o.bi.Resume != "" {
		p.Out, p.Resume = o.bi.Resume, true
	}
	ready, err := p.Setup(sc.Ctx)
	if err != nil {
		return ready, cliopts.Usage(err)
	}
	o.c.Out = ready.Setup.Dir
	return ready, nil
}

// runOrLocalise is the run command, and with cmd localise the localise
// command: flags -> runOptions -> acceptance.Run (or Localise) ->
// signoff.Finish.
func runOrLocalise(cmd acceptance.Command, args []string, stdout, stderr io.Writer) (int, error) {
	o := newRunOptions(cmd, stderr)
	if err := o.fs.Parse(args); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	if err := o.Validate(); err != nil {
		return exitUsage, err
	}
	sc, code, err := o.scope.Complete(&o.c, o.dryRun, 0, stderr)
	if err != nil {
		return code, err
	}
	defer sc.Close()
	ready, err := o.Complete(sc, stdout, stderr)
	if err != nil {
		return exitUsage, err
	}
	setup := ready.Setup
	if cmd == acceptance.CommandLocalise {
		return localiseOnly(sc.Ctx, &o.c, setup, o.tests, stdout, stderr)
	}
	ro := acceptance.RunOptions{Setup: setup, Launcher: ready.Launcher, Only: o.tests, Retries: o.retries,
		LocaliseAll: o.lf.Always, NoLocalise: o.lf.Never, Telemetry: o.bi.Telemetry}
	if o.bi.On() {
		return o.c.BurnIn(sc.Ctx, &o.bi, ro, stdout, stderr)
	}
	res, err := acceptance.Run(sc.Ctx, ro)
	var nothing *acceptance.NothingJudgedError
	switch {
	case errors.As(err, &nothing):
		return exitNothingJudged, err
	case err != nil:
		return exitUsage, cliopts.Usage(err)
	case o.dryRun:
		return exitOK, nil
	}
	code, err = o.c.Finish(res, setup.SKU, stdout, stderr)
	fmt.Fprintf(stderr, "results: %s (report.html, junit.xml, results.json, raw/)\n", o.c.Out)
	return code, err
}
