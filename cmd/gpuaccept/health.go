package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/drain"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/framework/skucheck"
)

const healthUsage = `Usage: gpuaccept health --sku SKU|auto [--suite SUITE] [flags]

Runs only the preflight tests (health checks) of the SKU's suite on every
node through a launcher, judges them, prints a table and writes a results
folder like a run (gpuaccept verify checks it); exit 0 healthy, 1 a node
failed, 2 usage (a scope the launcher cannot give too), 3 a check could
not run. Without --suite: the one suite of the SKU that has preflight
tests (h200 has two: --suite node checks each node on its own).

--slurm-check runs them on this node only (no launcher, no scheduler
call), prints one line ("gpuaccept health: OK"; "gpuaccept health: FAIL
NODE CODE: REASON", exit 1; "gpuaccept health: ERROR NODE: MESSAGE", exit
3) and sets the exit code, for Slurm's HealthCheckProgram, Prolog or
Epilog (gpuaccept health --sku h200 --suite node --slurm-check); it
writes a results folder only with --out. --taint-on-fail and --label mark the Kubernetes nodes checked
(--kubeconfig, --context; deploy/health-rbac.yaml).
`

// healthOptions are the flags of health.
type healthOptions struct {
	c                        common
	scope                    scopeFlags
	suite                    string
	slurmCheck, taint, label bool
	fs                       *pflag.FlagSet
}

func newHealthOptions(stderr io.Writer) *healthOptions {
	o := &healthOptions{}
	fs := newFlags("health", healthUsage, stderr)
	o.fs = fs
	o.c.add(fs)
	o.c.addSign(fs)
	fs.StringVar(&o.suite, "suite", "", "suite whose preflight tests run (default: the SKU's one suite that has them)")
	o.scope.add(fs, 10*time.Minute)
	fs.BoolVar(&o.slurmCheck, "slurm-check", false, "Slurm HealthCheckProgram/Prolog/Epilog mode: this node only, one line, the exit code; no results folder unless --out")
	fs.BoolVar(&o.taint, "taint-on-fail", false, "Kubernetes: taint each failed node "+drain.TaintKey+"="+drain.TaintValue+":NoSchedule (fault codes in annotation "+drain.CodeAnnotation+"), untaint it once it passes")
	fs.BoolVar(&o.label, "label", false, "Kubernetes: label each checked node "+drain.LabelKey+"="+drain.LabelFailed+" or "+drain.LabelPassed)
	o.scope.bind()
	return o
}

// marks are the k8s launcher's flags that marking the nodes reads
// (--kubeconfig, --context) whatever launcher ran the checks (a
// DaemonSet's pod runs them with local): accepted with --taint-on-fail or
// --label.
func (o *healthOptions) marks() []string {
	if o.taint || o.label {
		return []string{"kubeconfig", "context"}
	}
	return nil
}

// Validate checks the flags alone, before anything is read or started.
func (o *healthOptions) Validate() error {
	if o.fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q (health takes flags only)", o.fs.Args())}
	}
	if o.slurmCheck {
		for _, f := range []string{"launcher", "hosts", "hostfile", "nodes", "taint-on-fail", "label"} {
			if o.fs.Changed(f) {
				return usageError{fmt.Errorf("--slurm-check runs on this node only and marks it through its exit code: --%s does not go with it", f)}
			}
		}
	}
	if err := o.scope.validate(o.marks()...); err != nil {
		return err
	}
	if err := validFormat(o.c.format); err != nil {
		return err
	}
	if err := o.c.loadKey(); err != nil {
		return err
	}
	if o.c.sku == "" {
		return usageError{errors.New("--sku is required (gpuaccept list skus)")}
	}
	return nil
}

// Complete resolves the flags into the health check's setup and
// launcher: the SKU (--sku auto probes the nodes), the suite with
// preflight tests, the topology, the parameters and the results folder
// (with --slurm-check and no --out, a scratch one removed at the end:
// cleanup removes it).
func (o *healthOptions) Complete(sc *scope, stdout, stderr io.Writer) (setup acceptance.Setup, l launch.Launcher, cleanup func(), err error) {
	c := &o.c
	cleanup = func() {}
	s, err := c.getSKU(stderr)
	if err != nil {
		return setup, nil, cleanup, err
	}
	if err := skucheck.Check(sc.ctx, sc.host, s); err != nil {
		return setup, nil, cleanup, usageError{err}
	}
	suite, _, err := acceptance.HealthSuite(sc.ctx, sc.host, s, o.suite)
	if err != nil {
		return setup, nil, cleanup, usageError{err}
	}
	req := o.scope.request(acceptance.CommandHealth, sc, s, suite, nil)
	req.SlurmCheck = o.slurmCheck
	r, err := o.scope.resolve(req, stderr)
	if err != nil {
		return setup, nil, cleanup, err
	}
	newLauncher := o.scope.newLauncher(s, sc.site, false)
	if l, err = newLauncher(r.Topology.Hosts); err != nil {
		return setup, nil, cleanup, usageError{err}
	}
	baseline, err := c.skuFile(s)
	if err != nil {
		return setup, nil, cleanup, err
	}
	progress := stderr
	if o.slurmCheck {
		progress = io.Discard // the one line is all a prolog's log shows
		if c.out == "" {
			tmp, err := os.MkdirTemp("", "gpuaccept-health-")
			if err != nil {
				return setup, nil, cleanup, fmt.Errorf("health: scratch folder: %w", err)
			}
			cleanup = func() { os.RemoveAll(tmp) }
			c.out, c.outDeleted = filepath.Join(tmp, "results"), true
		}
	}
	dir, err := resultsDir(c.out, acceptance.DirName(s.Name, "health", time.Now()))
	if err != nil {
		return setup, nil, cleanup, err
	}
	c.out = dir
	setup = acceptance.Setup{SKU: s, Suite: suite, Topology: r.Topology, Params: r.Params, Timeout: o.scope.timeout, Dir: c.out,
		LauncherName: o.scope.launcher, NewLauncher: newLauncher, Plugins: sc.host, Version: getVersion(), Baseline: baseline,
		Stdout: stdout, Stderr: progress, Notes: append(sc.autoNote, containmentNotes(o.scope.launcher, progress)...)}
	return setup, l, cleanup, nil
}

// cmdHealth is the health command: flags -> healthOptions ->
// acceptance.Health -> signoff.Finish, or the one line of --slurm-check.
func cmdHealth(args []string, stdout, stderr io.Writer) (int, error) {
	o := newHealthOptions(stderr)
	if err := o.fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	if err := o.Validate(); err != nil {
		return exitUsage, err
	}
	probeNodes := 0
	if o.slurmCheck {
		probeNodes = 1
	}
	sc, code, err := o.scope.complete(&o.c, false, probeNodes, stderr)
	if err != nil {
		return code, err
	}
	defer sc.close()
	setup, l, cleanup, err := o.Complete(sc, stdout, stderr)
	defer cleanup()
	if err != nil {
		return exitUsage, err
	}
	res, err := acceptance.Health(sc.ctx, acceptance.RunOptions{Setup: setup, Launcher: l})
	if err != nil {
		return exitUsage, usageError{err}
	}
	c := &o.c
	if o.slurmCheck {
		return slurmReport(c, res, setup.SKU, stdout)
	}
	code, err = c.finish(res, setup.SKU, stdout, stderr)
	fmt.Fprintf(stderr, "results: %s\n", c.out)
	if o.taint || o.label {
		if merr := markNodes(sc.ctx, o.fs.Lookup("kubeconfig").Value.String(), o.fs.Lookup("context").Value.String(), res, drain.Options{Taint: o.taint, Label: o.label}, stderr); merr != nil {
			err = errors.Join(err, merr)
			if code == exitOK {
				code = exitError
			}
		}
	}
	return code, err
}

// slurmReport prints the one line of --slurm-check and returns its exit
// code; the results folder is written (and signed off) only when --out
// asked for it.
func slurmReport(c *common, res *result.Run, s *sku.SKU, stdout io.Writer) (int, error) {
	line, code := acceptance.HealthLine(res, acceptance.SlurmNode())
	fmt.Fprintln(stdout, line)
	if !c.outDeleted {
		if _, err := c.finish(res, s, io.Discard, io.Discard); err != nil {
			return exitUsage, err
		}
	}
	return code, nil
}

// markNodes taints and labels the Kubernetes nodes the health check
// judged (drain.Kubernetes), saying each on stderr.
func markNodes(ctx context.Context, kubeconfig, kubeContext string, res *result.Run, o drain.Options, stderr io.Writer) error {
	client, err := drain.Dial(kubeconfig, kubeContext)
	if err != nil {
		return err
	}
	done, err := drain.Kubernetes(ctx, client, drain.VerdictsOf(res), o)
	for _, d := range done {
		fmt.Fprintln(stderr, d)
	}
	return err
}
