package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/proc"
	"github.com/gpuaccept/gpuaccept/framework/skucheck"
	"github.com/gpuaccept/gpuaccept/launchers/local"
)

const runUsage = `Usage: gpuaccept [run] --sku SKU|auto --suite SUITE [flags]

Runs the SKU's suite through a launcher, judges every number against the
SKU's baseline, prints a table and writes a results folder (raw outputs,
results.json, junit.xml, report.html, summary.md, table.txt, the journal of
finished tests, a copy of the baseline and the sign-off manifest.json).
`

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
	c       common
	scope   scopeFlags
	lf      localiseFlags
	suite   string
	tests   []string
	dryRun  bool
	retries int
	fs      *pflag.FlagSet
}

func newRunOptions(cmd acceptance.Command, stderr io.Writer) *runOptions {
	o := &runOptions{cmd: cmd}
	// gpuaccept --help lands here: show the commands too.
	fs := newFlags("run", topUsage()+"\n"+runUsage, stderr)
	if cmd == acceptance.CommandLocalise {
		fs = newFlags(string(cmd), localiseUsage, stderr)
	}
	o.fs = fs
	o.c.add(fs)
	o.c.addSign(fs)
	fs.StringVar(&o.suite, "suite", "", "suite to run (gpuaccept list suites)")
	o.scope.add(fs, 30*time.Minute)
	fs.StringArrayVar(&o.tests, "test", nil, "run only this test of the suite (repeatable)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the exact commands without running them")
	fs.IntVar(&o.retries, "retries", 0, "run a test that failed or errored up to this many more times; every attempt is reported, a pass on a retry is a warn")
	o.lf.add(fs, string(cmd))
	o.scope.bind()
	return o
}

// Validate checks the flags alone, before anything is read or started.
func (o *runOptions) Validate() error {
	if o.fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q (run takes flags only)", o.fs.Args())}
	}
	if err := o.scope.validate(); err != nil {
		return err
	}
	if err := validFormat(o.c.format); err != nil {
		return err
	}
	if err := o.c.loadKey(); err != nil {
		return err
	}
	if o.c.sku == "" || o.suite == "" {
		return usageError{errors.New("--sku and --suite are required (gpuaccept list suites)")}
	}
	if o.retries < 0 || o.retries > acceptance.MaxRetries {
		// Each attempt keeps its raw outputs: no bound fills the disk.
		return usageError{fmt.Errorf("--retries %d: want 0 to %d", o.retries, acceptance.MaxRetries)}
	}
	return nil
}

// Complete resolves the flags into the run's setup and launcher: the
// SKU (--sku auto probes the nodes), the topology, the parameters, the
// results folder. sc is left open for the caller to close.
func (o *runOptions) Complete(sc *scope, stdout, stderr io.Writer) (acceptance.Setup, launch.Launcher, error) {
	c := &o.c
	s, err := c.getSKU(stderr)
	if err != nil {
		return acceptance.Setup{}, nil, err
	}
	r, err := o.scope.resolve(o.scope.request(o.cmd, sc, s, o.suite, o.tests), stderr)
	if err != nil {
		return acceptance.Setup{}, nil, err
	}
	ls, err := o.lf.Resolve(s)
	if err != nil {
		return acceptance.Setup{}, nil, usageError{err}
	}
	// The run's launcher, on its hosts; a localisation's runs build
	// theirs from the same options, each on its own hosts.
	newLauncher := o.scope.newLauncher(s, sc.site, o.dryRun)
	l, err := newLauncher(r.Topology.Hosts)
	if err != nil {
		if o.cmd == acceptance.CommandLocalise {
			err = fmt.Errorf("launcher %s cannot run a test on the nodes given, so it cannot localise: %w", o.scope.launcher, err)
		}
		return acceptance.Setup{}, nil, usageError{err}
	}
	if err := skucheck.Check(sc.ctx, sc.host, s); err != nil {
		return acceptance.Setup{}, nil, usageError{err}
	}
	// A dry run names the folder a run would write (batch scripts and
	// manifests hold its paths) but creates nothing; given a folder a run
	// would refuse, it still names that folder, and says so.
	switch dir, err := resultsDir(c.out, acceptance.DirName(s.Name, o.suite, time.Now())); {
	case err == nil:
		c.out = dir
	case !o.dryRun:
		return acceptance.Setup{}, nil, err
	default:
		fmt.Fprintf(stderr, "note: %v: the run itself would stop here\n", err)
	}
	baseline, err := c.skuFile(s)
	if err != nil {
		return acceptance.Setup{}, nil, err
	}
	setup := acceptance.Setup{SKU: s, Suite: o.suite, Topology: r.Topology, Params: r.Params, Timeout: o.scope.timeout, DryRun: o.dryRun, Dir: c.out,
		LauncherName: o.scope.launcher, NewLauncher: newLauncher, Plugins: sc.host, Version: getVersion(), Baseline: baseline,
		Localise: ls, Stdout: stdout, Stderr: stderr}
	if !o.dryRun {
		setup.Notes = append(sc.autoNote, containmentNotes(o.scope.launcher, stderr)...)
	}
	return setup, l, nil
}

// runOrLocalise is the run command, and with cmd localise the localise
// command: flags -> runOptions -> acceptance.Run (or Localise) ->
// signoff.Finish.
func runOrLocalise(cmd acceptance.Command, args []string, stdout, stderr io.Writer) (int, error) {
	o := newRunOptions(cmd, stderr)
	if err := o.fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	if err := o.Validate(); err != nil {
		return exitUsage, err
	}
	sc, code, err := o.scope.complete(&o.c, o.dryRun, 0, stderr)
	if err != nil {
		return code, err
	}
	defer sc.close()
	setup, l, err := o.Complete(sc, stdout, stderr)
	if err != nil {
		return exitUsage, err
	}
	if cmd == acceptance.CommandLocalise {
		return localiseOnly(sc.ctx, &o.c, setup, o.tests, stdout, stderr)
	}
	res, err := acceptance.Run(sc.ctx, acceptance.RunOptions{Setup: setup, Launcher: l, Only: o.tests, Retries: o.retries,
		LocaliseAll: o.lf.Always, NoLocalise: o.lf.Never})
	var nothing *acceptance.NothingJudgedError
	switch {
	case errors.As(err, &nothing):
		return exitNothingJudged, err
	case err != nil:
		return exitUsage, usageError{err}
	case o.dryRun:
		return exitOK, nil
	}
	code, err = o.c.finish(res, setup.SKU, stdout, stderr)
	fmt.Fprintf(stderr, "results: %s (report.html, junit.xml, results.json, raw/)\n", o.c.out)
	return code, err
}

// containmentNotes says, once on w and as the run's notes, that the steps
// the local launcher starts on this host are held less than fully
// (proc.Weaker: no pid namespace, as in a pod without CAP_SYS_ADMIN),
// naming what is missing; none when they are held fully or run elsewhere.
func containmentNotes(launcherName string, w io.Writer) []string {
	if launcherName != local.Name {
		return nil
	}
	n := proc.Weaker()
	if n == "" {
		return nil
	}
	fmt.Fprintf(w, "warning: %s\n", n)
	return []string{n}
}
