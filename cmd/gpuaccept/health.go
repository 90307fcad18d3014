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
	"github.com/gpuaccept/gpuaccept/framework/drain"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/framework/skuauto"
	"github.com/gpuaccept/gpuaccept/framework/skucheck"
	"github.com/gpuaccept/gpuaccept/launchers/local"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
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

func cmdHealth(args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var suite, launcherName, hostsFlag, hostfile, mpiFlavor string
	var nodes, gpus int
	var timeout time.Duration
	var params, mpiArgs []string
	var slurmCheck, taint, label bool
	fs := newFlags("health", healthUsage, stderr)
	c.add(fs)
	c.addSign(fs)
	fs.StringVar(&suite, "suite", "", "suite whose preflight tests run (default: the SKU's one suite that has them)")
	fs.StringVar(&launcherName, "launcher", "local", "where the checks run: "+strings.Join(launch.Names(), ", "))
	fs.IntVar(&nodes, "nodes", 0, "number of nodes (default: the hosts given, else the suite's)")
	fs.IntVar(&gpus, "gpus-per-node", 0, "GPUs per node (default: the SKU's)")
	fs.StringVar(&hostsFlag, "hosts", "", "comma-separated node names (host or host:slots)")
	fs.StringVar(&hostfile, "hostfile", "", "file with one node per line (Open MPI or MPICH form)")
	fs.StringArrayVar(&params, "param", nil, "KEY=VALUE test parameter, PLUGIN:KEY=VALUE or TEST:KEY=VALUE for one plugin's or test's (repeatable)")
	fs.StringVar(&mpiFlavor, "mpi-flavor", rankstart.FlavorOpenMPI, "rank starter of MPI steps: "+strings.Join(rankstart.MPIFlavors(), ", "))
	fs.StringArrayVar(&mpiArgs, "mpi-arg", nil, "extra argument for mpirun (repeatable)")
	fs.DurationVar(&timeout, "timeout", 10*time.Minute, "time limit per check; on expiry everything it started is stopped")
	fs.BoolVar(&slurmCheck, "slurm-check", false, "Slurm HealthCheckProgram/Prolog/Epilog mode: this node only, one line, the exit code; no results folder unless --out")
	fs.BoolVar(&taint, "taint-on-fail", false, "Kubernetes: taint each failed node "+drain.TaintKey+"="+drain.TaintValue+":NoSchedule (fault codes in annotation "+drain.CodeAnnotation+"), untaint it once it passes")
	fs.BoolVar(&label, "label", false, "Kubernetes: label each checked node "+drain.LabelKey+"="+drain.LabelFailed+" or "+drain.LabelPassed)
	launchers, err := launch.Bind(fs)
	if err != nil {
		return exitUsage, err
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	if fs.NArg() > 0 {
		return exitUsage, usageError{fmt.Errorf("unexpected arguments %q (health takes flags only)", fs.Args())}
	}
	// Marking the nodes reads the k8s launcher's --kubeconfig and
	// --context whatever launcher ran the checks (a DaemonSet's pod runs
	// them with local).
	var marks []string
	if taint || label {
		marks = []string{"kubeconfig", "context"}
	}
	if err := launchers.Check(launcherName, marks...); err != nil {
		return exitUsage, usageError{err}
	}
	if slurmCheck {
		for _, f := range []string{"launcher", "hosts", "hostfile", "nodes", "taint-on-fail", "label"} {
			if fs.Changed(f) {
				return exitUsage, usageError{fmt.Errorf("--slurm-check runs on this node only and marks it through its exit code: --%s does not go with it", f)}
			}
		}
	}
	if timeout <= 0 {
		return exitUsage, usageError{fmt.Errorf("--timeout %s: want a limit above zero", timeout)}
	}
	if nodes < 0 || nodes > plan.MaxNodes || gpus < 0 || gpus > plan.MaxGPUsPerNode {
		return exitUsage, usageError{fmt.Errorf("--nodes %d / --gpus-per-node %d: want 1 to %d nodes of 1 to %d GPUs (or leave them out)", nodes, gpus, plan.MaxNodes, plan.MaxGPUsPerNode)}
	}
	if err := validFormat(c.format); err != nil {
		return exitUsage, err
	}
	if err := c.loadKey(); err != nil {
		return exitUsage, err
	}
	if c.sku == "" {
		return exitUsage, usageError{errors.New("--sku is required (gpuaccept list skus)")}
	}
	hosts, _, err := readHosts(hostsFlag, hostfile)
	if err != nil {
		return exitUsage, err
	}
	host := c.host()
	defer host.Close()
	ctx, stop := signalContext()
	defer stop()
	c.ctx = ctx
	var autoNote []string
	if c.sku == skuauto.Auto {
		probeNodes := nodes
		if slurmCheck {
			probeNodes = 1
		}
		ch, err := c.resolveAuto(ctx, host, autoProbe{launcherName: launcherName, launchers: launchers,
			opts: launch.Options{MPIFlavor: mpiFlavor, MPIArgs: mpiArgs}, hosts: hosts, nodes: probeNodes, gpus: gpus, timeout: timeout}, stderr)
		if err != nil && ctx.Err() != nil {
			return exitInterrupted, fmt.Errorf("--sku auto: interrupted (Ctrl-C or SIGTERM) while %s read the nodes' GPUs", skuauto.ProbeTest)
		}
		if err != nil {
			return exitUsage, err
		}
		gpus, autoNote = ch.GPUsPerNode, []string{ch.Note()}
	}
	s, err := c.getSKU(stderr)
	if err != nil {
		return exitUsage, err
	}
	pm, err := parseParams(params)
	if err != nil {
		return exitUsage, err
	}
	if err := skucheck.Check(ctx, host, s); err != nil {
		return exitUsage, usageError{err}
	}
	suite, _, err = acceptance.HealthSuite(ctx, host, s, suite)
	if err != nil {
		return exitUsage, usageError{err}
	}
	su := s.Suites[suite]
	if err := paramScopes(pm, su); err != nil {
		return exitUsage, err
	}
	topo := plan.Topology{Scope: plan.Scope{Nodes: nodes, GPUsPerNode: gpus}, Hosts: hosts}
	switch {
	case topo.Nodes == 0 && len(hosts) > 0:
		topo.Nodes = len(hosts)
	case topo.Nodes == 0:
		topo.Nodes = max(su.Nodes, 1)
	case len(hosts) > topo.Nodes:
		topo.Hosts = hosts[:topo.Nodes]
	}
	if slurmCheck {
		topo.Nodes = 1
	}
	if topo.GPUsPerNode == 0 {
		topo.GPUsPerNode = s.GPUsPerNode
	}
	if launcherName == local.Name && topo.Nodes > 1 {
		// The launcher would refuse every test at launch (an ERROR, exit
		// 3, and a results folder of nothing): the scope is the mistake.
		var others []string
		for _, n := range launch.Names() {
			if n != local.Name {
				others = append(others, n)
			}
		}
		asked := fmt.Sprintf("suite %s needs %s", suite, result.Count(topo.Nodes, "node"))
		if fs.Changed("nodes") {
			asked = fmt.Sprintf("--nodes %d asks for %s", nodes, result.Count(nodes, "node"))
		} else if len(hosts) > 1 {
			asked = fmt.Sprintf("%s are given", result.Count(len(hosts), "host"))
		}
		return exitUsage, usageError{fmt.Errorf("%s, but launcher local runs on this host only: give --nodes 1 to check this node, or another --launcher (%s) with --hosts or --hostfile to check %s", asked, strings.Join(others, ", "), result.Count(topo.Nodes, "node"))}
	}
	opts := launch.Options{MPIFlavor: mpiFlavor, MPIArgs: mpiArgs, SKU: s}
	newLauncher := func(hosts []string) (launch.Launcher, error) {
		o := opts
		o.Hosts = hosts
		return launchers.New(launcherName, o)
	}
	l, err := newLauncher(topo.Hosts)
	if err != nil {
		return exitUsage, usageError{err}
	}
	baseline, err := c.skuFile(s)
	if err != nil {
		return exitUsage, err
	}
	progress := stderr
	if slurmCheck {
		progress = io.Discard // the one line is all a prolog's log shows
		if c.out == "" {
			tmp, err := os.MkdirTemp("", "gpuaccept-health-")
			if err != nil {
				return exitError, fmt.Errorf("health: scratch folder: %w", err)
			}
			defer os.RemoveAll(tmp)
			c.out, c.outDeleted = filepath.Join(tmp, "results"), true
		}
	}
	dir, err := resultsDir(c.out, fmt.Sprintf("%s-health-%s", s.Name, time.Now().UTC().Format("20060102-150405")))
	if err != nil {
		return exitUsage, err
	}
	c.out = dir
	setup := acceptance.Setup{SKU: s, Suite: suite, Topology: topo, Params: pm, Timeout: timeout, Dir: c.out,
		LauncherName: launcherName, NewLauncher: newLauncher, Plugins: host, Version: getVersion(), Baseline: baseline,
		Stdout: stdout, Stderr: progress, Notes: append(autoNote, containmentNotes(launcherName, progress)...)}
	res, err := acceptance.Health(ctx, acceptance.RunOptions{Setup: setup, Launcher: l})
	if err != nil {
		return exitUsage, usageError{err}
	}
	if slurmCheck {
		return slurmReport(&c, res, s, stdout)
	}
	code, err := c.finish(res, s, stdout, stderr)
	fmt.Fprintf(stderr, "results: %s\n", c.out)
	if taint || label {
		if merr := markNodes(ctx, fs.Lookup("kubeconfig").Value.String(), fs.Lookup("context").Value.String(), res, drain.Options{Taint: taint, Label: label}, stderr); merr != nil {
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
	node := os.Getenv("SLURMD_NODENAME") // what Slurm calls the node, in its prolog
	if node == "" {
		node, _ = os.Hostname()
	}
	line, code := acceptance.HealthLine(res, node)
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
