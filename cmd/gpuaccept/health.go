package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/drain"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
)

var healthUsage = help("health")

// healthOptions are the flags of health.
type healthOptions struct {
	c                        cliopts.Common
	scope                    cliopts.ScopeFlags
	suite                    string
	slurmCheck, taint, label bool
	fs                       *pflag.FlagSet
}

func newHealthOptions(stderr io.Writer) *healthOptions {
	o := &healthOptions{}
	fs := cliopts.NewFlags("health", healthUsage, stderr)
	o.fs = fs
	o.c.Add(fs)
	o.c.Version = getVersion()
	o.c.AddSign(fs)
	fs.StringVar(&o.suite, "suite", "", "suite whose preflight tests run (default: the SKU's one suite that has them)")
	o.scope.Add(fs, 10*time.Minute)
	fs.BoolVar(&o.slurmCheck, "slurm-check", false, "Slurm HealthCheckProgram/Prolog/Epilog mode: this node only, one line, the exit code; no results folder unless --out")
	fs.BoolVar(&o.taint, "taint-on-fail", false, "Kubernetes: taint each failed node "+drain.TaintKey+"="+drain.TaintValue+":NoSchedule (fault codes in annotation "+drain.CodeAnnotation+"), untaint it once it passes")
	fs.BoolVar(&o.label, "label", false, "Kubernetes: label each checked node "+drain.LabelKey+"="+drain.LabelFailed+" or "+drain.LabelPassed)
	o.scope.Bind()
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
		return cliopts.Usage(fmt.Errorf("unexpected arguments %q (health takes flags only)", o.fs.Args()))
	}
	if o.slurmCheck {
		for _, f := range []string{"launcher", "hosts", "hostfile", "nodes", "taint-on-fail", "label"} {
			if o.fs.Changed(f) {
				return cliopts.Usage(fmt.Errorf("--slurm-check runs on this node only and marks it through its exit code: --%s does not go with it", f))
			}
		}
	}
	if err := o.scope.Validate(o.marks()...); err != nil {
		return err
	}
	if err := cliopts.ValidFormat(o.c.Format); err != nil {
		return err
	}
	if err := o.c.LoadKey(); err != nil {
		return err
	}
	if o.c.SKU == "" {
		return cliopts.Usage(errors.New("--sku is required (gpuaccept list skus)"))
	}
	return nil
}

// Complete resolves the flags into the health check's setup and
// launcher (acceptance.Prepare): the SKU (--sku auto probed the nodes),
// the suite with preflight tests, the topology, the parameters and the
// results folder (with --slurm-check and no --out, a scratch one that
// the Prepared's Cleanup removes).
func (o *healthOptions) Complete(sc *cliopts.Scope, stdout, stderr io.Writer) (acceptance.Prepared, error) {
	p, err := o.scope.Prepare(acceptance.CommandHealth, &o.c, sc, o.suite, nil, stdout, stderr)
	if err != nil {
		return acceptance.Prepared{Cleanup: func() {}}, err
	}
	p.SlurmCheck = o.slurmCheck
	ready, err := p.Setup(sc.Ctx)
	if err != nil {
		return ready, cliopts.Usage(err)
	}
	o.c.Out, o.c.OutDeleted = ready.Setup.Dir, ready.Scratch
	return ready, nil
}

// cmdHealth is the health command: flags -> healthOptions ->
// acceptance.Health -> signoff.Finish, or the one line of --slurm-check.
func cmdHealth(args []string, stdout, stderr io.Writer) (int, error) {
	o := newHealthOptions(stderr)
	if err := o.fs.Parse(args); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	if err := o.Validate(); err != nil {
		return exitUsage, err
	}
	probeNodes := 0
	if o.slurmCheck {
		probeNodes = 1
	}
	sc, code, err := o.scope.Complete(&o.c, false, probeNodes, stderr)
	if err != nil {
		return code, err
	}
	defer sc.Close()
	ready, err := o.Complete(sc, stdout, stderr)
	defer ready.Cleanup()
	if err != nil {
		return exitUsage, err
	}
	setup := ready.Setup
	res, err := acceptance.Health(sc.Ctx, acceptance.RunOptions{Setup: setup, Launcher: ready.Launcher})
	if err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	c := &o.c
	if o.slurmCheck {
		return c.SlurmReport(res, setup.SKU, stdout)
	}
	code, err = c.Finish(res, setup.SKU, stdout, stderr)
	fmt.Fprintf(stderr, "results: %s\n", c.Out)
	if o.taint || o.label {
		if merr := drain.Mark(sc.Ctx, o.fs.Lookup("kubeconfig").Value.String(), o.fs.Lookup("context").Value.String(), res, drain.Options{Taint: o.taint, Label: o.label}, stderr); merr != nil {
			err = errors.Join(err, merr)
			if code == exitOK {
				code = exitError
			}
		}
	}
	return code, err
}
