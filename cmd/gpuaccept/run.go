package main

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/hosts"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/proc"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/framework/skuauto"
	"github.com/gpuaccept/gpuaccept/framework/skucheck"
	"github.com/gpuaccept/gpuaccept/launchers/local"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

const runUsage = `Usage: gpuaccept [run] --sku SKU|auto --suite SUITE [flags]

Runs the SKU's suite through a launcher, judges every number against the
SKU's baseline, prints a table and writes a results folder (raw outputs,
results.json, junit.xml, report.html, summary.md, table.txt, the journal of
finished tests, a copy of the baseline and the sign-off manifest.json).
`

func cmdRun(args []string, stdout, stderr io.Writer) (int, error) {
	return runOrLocalise("run", args, stdout, stderr)
}

func cmdLocalise(args []string, stdout, stderr io.Writer) (int, error) {
	return runOrLocalise("localise", args, stdout, stderr)
}

// runOrLocalise is the run command, and with cmd "localise" the localise
// command: the same flags and wiring, but no suite run before the
// localisation of its multi-node tests.
func runOrLocalise(cmd string, args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var lf localiseFlags
	var suite, launcherName, hostsFlag, hostfile, mpiFlavor, siteFile string
	var nodes, gpus int
	var dryRun bool
	var retries int
	var timeout time.Duration
	var params, tests, mpiArgs []string
	// gpuaccept --help lands here: show the commands too.
	fs := newFlags("run", topUsage()+"\n"+runUsage, stderr)
	if cmd == "localise" {
		fs = newFlags(cmd, localiseUsage, stderr)
	}
	c.add(fs)
	c.addSign(fs)
	fs.StringVar(&suite, "suite", "", "suite to run (gpuaccept list suites)")
	fs.StringVar(&launcherName, "launcher", "local", "where the steps run: "+strings.Join(launch.Names(), ", "))
	fs.IntVar(&nodes, "nodes", 0, "number of nodes (default: the suite's)")
	fs.IntVar(&gpus, "gpus-per-node", 0, "GPUs per node (default: the SKU's)")
	fs.StringVar(&hostsFlag, "hosts", "", "comma-separated node names (host or host:slots)")
	fs.StringVar(&hostfile, "hostfile", "", "file with one node per line (Open MPI or MPICH form)")
	fs.StringArrayVar(&params, "param", nil, "KEY=VALUE test parameter for every test, overriding the suite's; PLUGIN:KEY=VALUE or TEST:KEY=VALUE for one plugin's or one test's (repeatable; gpuaccept list tests shows them)")
	fs.StringArrayVar(&tests, "test", nil, "run only this test of the suite (repeatable)")
	fs.StringVar(&mpiFlavor, "mpi-flavor", rankstart.FlavorOpenMPI, "rank starter of MPI steps, under every launcher: "+strings.Join(rankstart.MPIFlavors(), ", ")+" (with --launcher slurm: the mpirun of --slurm-mpi mpirun)")
	fs.StringArrayVar(&mpiArgs, "mpi-arg", nil, "extra argument for mpirun (repeatable), e.g. --mpi-arg=--mca --mpi-arg=btl_tcp_if_include --mpi-arg=lo")
	fs.StringVar(&siteFile, "site", "", "site file: what makes a launch work on this cluster (image, binaries, env scripts, MPI options, pod shape; framework/site, examples/sites/)")
	fs.BoolVar(&dryRun, "dry-run", false, "print the exact commands without running them")
	fs.DurationVar(&timeout, "timeout", 30*time.Minute, "time limit per test; on expiry everything the test started is stopped")
	fs.IntVar(&retries, "retries", 0, "run a test that failed or errored up to this many more times; every attempt is reported, a pass on a retry is a warn")
	lf.add(fs, cmd)
	launchers, err := launch.Bind(fs)
	if err != nil {
		return exitUsage, err
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	if fs.NArg() > 0 {
		return exitUsage, usageError{fmt.Errorf("unexpected arguments %q (run takes flags only)", fs.Args())}
	}
	if err := launchers.Check(launcherName); err != nil {
		return exitUsage, usageError{err}
	}
	// A negative count would slice the host list out of range; a limit of
	// zero or less would let a hung test (and what it started) run forever.
	// One too large overflows the rank count.
	for _, f := range []struct {
		name   string
		n, max int
	}{{"nodes", nodes, plan.MaxNodes}, {"gpus-per-node", gpus, plan.MaxGPUsPerNode}} {
		if f.n < 0 || f.n > f.max {
			return exitUsage, usageError{fmt.Errorf("--%s %d: want 1 to %d (or leave it out for the default)", f.name, f.n, f.max)}
		}
	}
	if timeout <= 0 {
		return exitUsage, usageError{fmt.Errorf("--timeout %s: want a limit above zero, such as 30m: a test without one could hang the run, and what it started, for ever", timeout)}
	}
	if err := validFormat(c.format); err != nil {
		return exitUsage, err
	}
	if err := c.loadKey(); err != nil {
		return exitUsage, err
	}
	if c.sku == "" || suite == "" {
		return exitUsage, usageError{errors.New("--sku and --suite are required (gpuaccept list suites)")}
	}
	st, err := loadSite(siteFile)
	if err != nil {
		return exitUsage, err
	}
	if err := st.CheckScopes(c.host().Names()); err != nil {
		return exitUsage, usageError{err}
	}
	if !fs.Changed("mpi-flavor") {
		mpiFlavor = "" // the site's mpi.flavor, else Open MPI
	}
	hosts, slots, err := readHosts(hostsFlag, hostfile)
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
		ch, err := c.resolveAuto(ctx, host, autoProbe{launcherName: launcherName, launchers: launchers,
			opts: launch.Options{MPIFlavor: mpiFlavor, MPIArgs: mpiArgs, Site: st}, hosts: hosts, nodes: nodes, gpus: gpus,
			timeout: timeout, dryRun: dryRun}, stderr)
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
	su, ok := s.Suites[suite]
	if !ok {
		return exitUsage, usageError{fmt.Errorf("SKU %s has no suite %q (known: %s)", s.Name, suite, strings.Join(s.SuiteNames(), ", "))}
	}
	if err := lf.check(s); err != nil {
		return exitUsage, err
	}
	pm, err := parseParams(params)
	if err != nil {
		return exitUsage, err
	}
	if err := paramScopes(pm, su); err != nil {
		return exitUsage, err
	}
	if err := suiteHas(su, suite, tests); err != nil {
		return exitUsage, err
	}
	pm = withSiteParams(pm, st, su)
	topo := plan.Topology{Scope: plan.Scope{Nodes: nodes, GPUsPerNode: gpus}, Hosts: hosts}
	if topo.Nodes == 0 {
		topo.Nodes = su.Nodes
		if len(hosts) > 0 {
			// The hosts given are the cluster under test: all of them take
			// part, whatever node count the suite names by default.
			if su.Nodes > 0 && su.Nodes != len(hosts) && cmd == "run" {
				fmt.Fprintf(stderr, "note: suite %s runs on %s by default; running on the %s given (--nodes sets the count)\n", suite, result.Count(su.Nodes, "node"), result.Count(len(hosts), "host"))
			}
			topo.Nodes = len(hosts)
		}
	} else if len(hosts) > topo.Nodes {
		fmt.Fprintf(stderr, "note: --nodes %d: using the first %d of the %s given (%s)\n", topo.Nodes, topo.Nodes, result.Count(len(hosts), "host"), strings.Join(hosts[:topo.Nodes], ","))
		topo.Hosts = hosts[:topo.Nodes]
	}
	if topo.Nodes == 0 {
		topo.Nodes = 1
	}
	gpusFrom := "--gpus-per-node"
	if autoNote != nil && !fs.Changed("gpus-per-node") {
		gpusFrom = "the GPUs --sku auto counted"
	}
	if topo.GPUsPerNode == 0 {
		topo.GPUsPerNode = s.GPUsPerNode
		gpusFrom = "SKU " + s.Name + "'s GPUs per node"
	}
	if n := slotsIgnored(slots, topo.GPUsPerNode); n != "" {
		fmt.Fprintf(stderr, "note: the slots given (%s) are not used: every node runs %s (%s)\n", n, result.Count(topo.GPUsPerNode, "GPU"), gpusFrom)
	}
	if topo.Nodes < 1 || topo.GPUsPerNode < 1 {
		return exitUsage, usageError{fmt.Errorf("--nodes %d / --gpus-per-node %d: both must be >= 1", topo.Nodes, topo.GPUsPerNode)}
	}
	if cmd == "localise" && len(topo.Hosts) < 2 {
		return exitUsage, usageError{fmt.Errorf("localise needs the nodes to narrow down: --hosts or --hostfile with 2 or more")}
	}
	// The run's launcher, on its hosts; a localisation's runs build
	// theirs from the same options, each on its own hosts.
	opts := launch.Options{MPIFlavor: mpiFlavor, MPIArgs: mpiArgs, SKU: s, DryRun: dryRun, Site: st}
	newLauncher := func(hosts []string) (launch.Launcher, error) {
		o := opts
		o.Hosts = hosts
		return launchers.New(launcherName, o)
	}
	l, err := newLauncher(topo.Hosts)
	if err != nil {
		if cmd == "localise" {
			err = fmt.Errorf("launcher %s cannot run a test on the nodes given, so it cannot localise: %w", launcherName, err)
		}
		return exitUsage, usageError{err}
	}
	if err := skucheck.Check(ctx, host, s); err != nil {
		return exitUsage, usageError{err}
	}
	// A dry run names the folder a run would write (batch scripts and
	// manifests hold its paths) but creates nothing; given a folder a run
	// would refuse, it still names that folder, and says so.
	switch dir, err := resultsDir(c.out, fmt.Sprintf("%s-%s-%s", s.Name, suite, time.Now().UTC().Format("20060102-150405"))); {
	case err == nil:
		c.out = dir
	case !dryRun:
		return exitUsage, err
	default:
		fmt.Fprintf(stderr, "note: %v: the run itself would stop here\n", err)
	}
	if retries < 0 || retries > acceptance.MaxRetries {
		// Each attempt keeps its raw outputs: no bound fills the disk.
		return exitUsage, usageError{fmt.Errorf("--retries %d: want 0 to %d", retries, acceptance.MaxRetries)}
	}
	baseline, err := c.skuFile(s)
	if err != nil {
		return exitUsage, err
	}
	ls, err := lf.settings(s)
	if err != nil {
		return exitUsage, err
	}
	setup := acceptance.Setup{SKU: s, Suite: suite, Topology: topo, Params: pm, Timeout: timeout, DryRun: dryRun, Dir: c.out,
		LauncherName: launcherName, NewLauncher: newLauncher, Plugins: host, Version: getVersion(), Baseline: baseline,
		Localise: ls, Stdout: stdout, Stderr: stderr}
	if !dryRun {
		setup.Notes = append(autoNote, containmentNotes(launcherName, stderr)...)
	}
	if cmd == "localise" {
		return localiseOnly(ctx, &c, setup, tests, stdout, stderr)
	}
	res, err := acceptance.Run(ctx, acceptance.RunOptions{Setup: setup, Launcher: l, Only: tests, Retries: retries,
		LocaliseAll: lf.always, NoLocalise: lf.never})
	var nothing *acceptance.NothingJudgedError
	switch {
	case errors.As(err, &nothing):
		return exitNothingJudged, err
	case err != nil:
		return exitUsage, usageError{err}
	case dryRun:
		return exitOK, nil
	}
	code, err := c.finish(res, s, stdout, stderr)
	fmt.Fprintf(stderr, "results: %s (report.html, junit.xml, results.json, raw/)\n", c.out)
	return code, err
}

// resultsDir picks the results folder: out when given, which must not hold
// files already (a folder mixing two runs would replay and verify as one);
// else gpuaccept-results/NAME, with -2, -3, ... when two runs start in the
// same second.
func resultsDir(out, name string) (string, error) {
	if out != "" {
		if fi, err := os.Lstat(out); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			// Nothing is written through a link: root in a pod would write
			// the results wherever the link's owner points it.
			return "", usageError{fmt.Errorf("results folder %s is a symbolic link; give a real folder as --out", out)}
		}
		if ents, err := os.ReadDir(out); err == nil && len(ents) > 0 {
			return "", usageError{fmt.Errorf("results folder %s already holds files; give a new or empty --out", out)}
		}
		return out, nil
	}
	if err := resultsParent(); err != nil {
		return "", err
	}
	base := filepath.Join(resultsParentDir, name)
	dir := base
	for i := 2; ; i++ {
		// Lstat: a name a link holds, even one pointing nowhere, is taken.
		_, err := os.Lstat(dir)
		if errors.Is(err, iofs.ErrNotExist) {
			return dir, nil
		}
		if err != nil {
			return "", usageError{fmt.Errorf("results folder %s: %w", dir, err)}
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
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

// resultsParentDir is the folder, in the working directory, that holds
// the results folders of runs given no --out.
const resultsParentDir = "gpuaccept-results"

// resultsParent refuses a resultsParentDir that is a symbolic link or not
// a folder: one planted in a shared working directory would have root
// write its results (and the raw outputs, the journal) wherever its owner
// points it. A usage error (exit 2); nothing is followed.
func resultsParent() error {
	fi, err := os.Lstat(resultsParentDir)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return nil
	case err != nil:
		return usageError{fmt.Errorf("results parent %s: %w", resultsParentDir, err)}
	case fi.Mode()&os.ModeSymlink != 0:
		to, _ := os.Readlink(resultsParentDir)
		return usageError{fmt.Errorf("%s in the working directory is a symbolic link (to %s): results are not written through a link; remove it, or give a real folder as --out", resultsParentDir, to)}
	case !fi.IsDir():
		return usageError{fmt.Errorf("%s in the working directory is not a folder; remove it, or give a folder as --out", resultsParentDir)}
	}
	return nil
}

func parseParams(kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError{fmt.Errorf("--param %q: want KEY=VALUE", kv)}
		}
		m[k] = v
	}
	return m, nil
}

// slotsIgnored lists the hosts given slot counts other than gpus, the
// GPUs every node runs ("node2:4"), for the note that says so: a rank
// count per node differing between nodes is not what a run does. ""
// when every count given is gpus.
func slotsIgnored(hs []hosts.Host, gpus int) string {
	var odd []string
	for _, h := range hs {
		if h.Slots != 0 && h.Slots != gpus {
			odd = append(odd, fmt.Sprintf("%s:%d", h.Name, h.Slots))
		}
	}
	return strings.Join(odd, ", ")
}

// suiteHas checks that every --test names a test of the suite, and
// suggests the names a mistyped one could have meant.
func suiteHas(su *sku.Suite, suite string, tests []string) error {
	names := make([]string, len(su.Tests))
	for i, t := range su.Tests {
		names[i] = t.Test
	}
	for _, t := range tests {
		if !su.Has(t) {
			return usageError{fmt.Errorf("--test %s: not a test of suite %s%s (its tests: %s)", t, suite, didYouMean(t, names), strings.Join(names, ", "))}
		}
	}
	return nil
}

// paramScopes checks that every "SCOPE:KEY" parameter names a plugin or a
// test of the suite, so a typo does not silently drop the parameter.
func paramScopes(pm map[string]string, su *sku.Suite) error {
	known := map[string]bool{}
	var names []string
	for _, st := range su.Tests {
		plugin, _, _ := strings.Cut(st.Test, ".")
		for _, n := range []string{plugin, st.Test} {
			if !known[n] {
				known[n] = true
				names = append(names, n)
			}
		}
	}
	for k := range pm {
		if scope, _, ok := strings.Cut(k, ":"); ok && !known[scope] {
			return usageError{fmt.Errorf("--param %s: %q is neither a plugin nor a test of the suite (known: %s)", k, scope, strings.Join(names, ", "))}
		}
	}
	return nil
}

// readHosts reads --hosts and --hostfile into node names, and the hosts
// as given. The slot counts people write (host:8, host slots=8) are
// accepted, but GPUs per node come from --gpus-per-node (slotsIgnored).
func readHosts(list, file string) ([]string, []hosts.Host, error) {
	var hs []hosts.Host
	if list != "" {
		l, err := hosts.ParseList(list)
		if err != nil {
			return nil, nil, usageError{err}
		}
		hs = append(hs, l...)
	}
	if file != "" {
		data, err := safefs.ReadNamed(file, 64<<20)
		if err != nil {
			return nil, nil, usageError{fmt.Errorf("read --hostfile: %w", err)}
		}
		l, err := hosts.ParseFile(data, file)
		if err != nil {
			return nil, nil, usageError{err}
		}
		hs = append(hs, l...)
	}
	names := hosts.Names(hs)
	seen := map[string]bool{}
	for _, h := range names {
		if seen[h] {
			// Every launcher would run two ranks' worth on it, or pair it
			// with itself in a localisation.
			return nil, nil, usageError{fmt.Errorf("host %s is listed twice in --hosts/--hostfile; give each node once (its ranks come from --gpus-per-node)", h)}
		}
		seen[h] = true
	}
	return names, hs, nil
}
