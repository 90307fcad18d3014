package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/localise"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/signoff"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

const localiseUsage = `Usage: gpuaccept localise --sku SKU --suite SUITE --hosts H1,H2,... [flags]

Narrows the multi-node tests of a suite down to the node, HCA or link to
pull, without running the suite first: the single-node suite on every node,
the test on node pairs (or halves), and for ib_write_bw every HCA pair
between two nodes. "gpuaccept run" does the same by itself after a
multi-node test fails, or always with --localise. Exit code: 0 no suspect,
1 suspects named, 2 usage, configuration or infrastructure error.
`

// localiseFlags are the flags of localisation, shared by run and localise.
type localiseFlags struct {
	always, never bool
	strategy      string
	tolerance     float64
	matchings     int
	seed          uint64
	suite         string
	tests         []string
	nics          string
	parallel      int
}

func (lf *localiseFlags) add(fs *pflag.FlagSet, cmd string) {
	if cmd == "run" {
		fs.BoolVar(&lf.always, "localise", false, "localise every multi-node test after the run, not only those that failed")
		fs.BoolVar(&lf.never, "no-localise", false, "do not localise multi-node tests that fail")
	}
	fs.StringVar(&lf.strategy, "localise-strategy", localise.Auto, fmt.Sprintf("how node pairs are chosen: %s (auto: every pair up to %d nodes, random matchings up to %d, bisection above)",
		strings.Join(localise.Strategies, ", "), localise.AllPairsMax, localise.MatchingMax))
	fs.Float64Var(&lf.tolerance, "localise-tolerance", localise.DefaultTolerance, "fraction below the reference (the upper quartile of a stage's runs) that makes a run slow")
	fs.IntVar(&lf.matchings, "localise-matchings", localise.DefaultMatchings, "random matchings drawn by the matching strategy")
	fs.Uint64Var(&lf.seed, "localise-seed", 0, "seed of the random matchings (the same seed repeats the same pairs)")
	fs.StringVar(&lf.suite, "localise-suite", "", `single-node suite run on every node (default: the SKU's "singlenode", else its first 1-node suite; "none" skips the stage)`)
	fs.StringArrayVar(&lf.tests, "localise-test", nil, "run only this test of the single-node suite on every node (repeatable)")
	fs.StringVar(&lf.nics, "nics", "", "comma-separated HCAs of every node (mlx5_0,...): ib_write_bw tests are then localised HCA pair by HCA pair")
	fs.IntVar(&lf.parallel, "localise-parallel", 0, "most localisation runs in flight at once (0: a whole round)")
}

// check validates the flags against the SKU.
func (lf *localiseFlags) check(s *sku.SKU) error {
	if lf.always && lf.never {
		return usageError{fmt.Errorf("--localise and --no-localise contradict each other")}
	}
	ok := false
	for _, st := range localise.Strategies {
		ok = ok || lf.strategy == st
	}
	if !ok {
		return usageError{fmt.Errorf("--localise-strategy %q: want one of %s", lf.strategy, strings.Join(localise.Strategies, ", "))}
	}
	if !(lf.tolerance > 0 && lf.tolerance < 1) { // NaN too
		return usageError{fmt.Errorf("--localise-tolerance %g: want a fraction between 0 and 1 (0.1 is 10%%)", lf.tolerance)}
	}
	if lf.matchings < 1 {
		return usageError{fmt.Errorf("--localise-matchings %d: want 1 or more", lf.matchings)}
	}
	if lf.parallel < 0 {
		return usageError{fmt.Errorf("--localise-parallel %d: want 0 or more", lf.parallel)}
	}
	name, err := lf.nodeSuite(s)
	if err != nil {
		return err
	}
	if len(lf.tests) > 0 {
		if name == "" {
			return usageError{fmt.Errorf("--localise-test: SKU %s has no single-node suite to take it from", s.Name)}
		}
		have := map[string]bool{}
		for _, t := range s.Suites[name].Tests {
			have[t.Test] = true
		}
		for _, t := range lf.tests {
			if !have[t] {
				return usageError{fmt.Errorf("--localise-test %s: not a test of suite %s", t, name)}
			}
		}
	}
	return nil
}

// nodeSuite is the single-node suite of the per-node stage; "" for none.
func (lf *localiseFlags) nodeSuite(s *sku.SKU) (string, error) {
	switch lf.suite {
	case "none":
		return "", nil
	case "":
		if su, ok := s.Suites["singlenode"]; ok && su.Nodes <= 1 {
			return "singlenode", nil
		}
		for _, n := range s.SuiteNames() {
			if s.Suites[n].Nodes == 1 {
				return n, nil
			}
		}
		return "", nil
	}
	su, ok := s.Suites[lf.suite]
	if !ok {
		return "", usageError{fmt.Errorf("--localise-suite %q: SKU %s has no such suite (known: %s)", lf.suite, s.Name, strings.Join(s.SuiteNames(), ", "))}
	}
	if su.Nodes > 1 {
		return "", usageError{fmt.Errorf("--localise-suite %s runs on %d nodes by default; the per-node stage needs a single-node suite", lf.suite, su.Nodes)}
	}
	return lf.suite, nil
}

// subRunner is what a localisation's runs need to run: the run command's
// own wiring, pinned to other hosts for each run.
type subRunner struct {
	host     *pluginapi.Host
	sku      *sku.SKU
	launcher string
	opts     launch.Options
	params   map[string]string
	timeout  time.Duration
	baseline []byte
	stderr   io.Writer

	// launchers holds every launcher's Config as the command line set it.
	launchers *launch.Configs
}

// probe checks that the launcher can be pinned to hosts: a launcher that
// cannot run a test on the nodes given refuses them when it is built (k8s
// pins its pods to the nodes named; it refuses a name no node can have).
func (sr *subRunner) probe(hosts []string) error {
	_, err := sr.launcherFor(hosts)
	return err
}

// launcherFor builds the launcher of one run, pinned to hosts.
func (sr *subRunner) launcherFor(hosts []string) (launch.Launcher, error) {
	o := sr.opts
	o.Hosts = hosts
	l, err := sr.launchers.New(sr.launcher, o)
	if err != nil {
		return nil, fmt.Errorf("launcher %s for %s: %w", sr.launcher, strings.Join(hosts, ","), err)
	}
	return l, nil
}

// show prints, for a dry run, what one run of a localisation launches
// (test at topo, pinned to its hosts): the k8s manifests, the batch
// script, the mpirun line. Errors: the launcher refuses the hosts, or the
// run cannot be planned (said above the error, as run --dry-run does).
func (sr *subRunner) show(ctx context.Context, suite, test string, topo plan.Topology, dir string, w io.Writer) error {
	l, err := sr.launcherFor(topo.Hosts)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "# a run of the localisation: %s on %s\n", test, strings.Join(topo.Hosts, ","))
	r := &runner.Runner{Plugins: sr.host, Launcher: l, SKU: sr.sku, Dir: dir, Timeout: sr.timeout, Params: sr.params,
		Only: []string{test}, DryRun: true, Progress: w, Version: getVersion(), Baseline: sr.baseline}
	res, err := r.Run(ctx, suite, topo)
	if err != nil {
		return fmt.Errorf("dry run of %s on %s: %w", test, strings.Join(topo.Hosts, ","), err)
	}
	if res.Status == result.Error {
		return fmt.Errorf("dry run: %s on %s could not be planned (see above)", test, strings.Join(topo.Hosts, ","))
	}
	return nil
}

// exec runs a localisation's request with a launcher of its own, pinned to
// the request's hosts, and writes the run's own results folder.
func (sr *subRunner) exec(ctx context.Context, req localise.Request) (*result.Run, error) {
	l, err := sr.launcherFor(req.Topology.Hosts)
	if err != nil {
		return nil, err
	}
	params := runner.Params(sr.params, req.Params)
	r := &runner.Runner{Plugins: sr.host, Launcher: l, SKU: sr.sku, Dir: req.Dir, Timeout: sr.timeout, Params: params,
		Only: req.Tests, Progress: &prefixWriter{w: sr.stderr, prefix: "  [" + req.Label + "] "}, Version: getVersion(), Baseline: sr.baseline}
	run, err := r.Run(ctx, req.Suite, req.Topology)
	if err != nil {
		return nil, err
	}
	if err := signoff.WriteReports(run, sr.sku, ""); err != nil {
		return run, fmt.Errorf("write the reports of %s: %w", req.Dir, err)
	}
	return run, nil
}

// prefixWriter writes whole lines to w, each after prefix; w is shared by
// runs in flight at once, so lines are written under one lock.
type prefixWriter struct {
	w      io.Writer
	prefix string
	buf    []byte
}

var prefixMu sync.Mutex

func (p *prefixWriter) Write(b []byte) (int, error) {
	prefixMu.Lock()
	defer prefixMu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i]); err != nil {
			return len(b), err
		}
		p.buf = p.buf[i+1:]
	}
}

// config builds the localisation settings of a run.
func (lf *localiseFlags) config(s *sku.SKU, dir string, sr *subRunner, hcaMap func(string) (localise.HCAMap, bool)) (*localise.Config, error) {
	ns, err := lf.nodeSuite(s)
	if err != nil {
		return nil, err
	}
	c := &localise.Config{SKU: s, Exec: sr.exec, Dir: dir, Strategy: lf.strategy, Tolerance: lf.tolerance,
		Matchings: lf.matchings, Seed: lf.seed, NodeSuite: ns, NodeTests: lf.tests, HCAMap: hcaMap,
		Parallel: lf.parallel, Progress: sr.stderr}
	for _, n := range strings.Split(lf.nics, ",") {
		if n = strings.TrimSpace(n); n != "" {
			c.NICs = append(c.NICs, n)
		}
	}
	return c, nil
}

// hcaMaps answers, for a test of the suite, the HCA pair map it runs with
// when its plugin declares a parameter that takes one
// (TestInfo.HCAMapParam: ib_write_bw's pairs, SERVER_HCA:CLIENT_HCA,...),
// with that parameter and the pair label. The map is the test's effective
// parameter, suite and command line laid over each other.
func hcaMaps(ctx context.Context, host *pluginapi.Host, su *sku.Suite, pm map[string]string) func(string) (localise.HCAMap, bool) {
	takes := map[string]localise.HCAMap{}
	for _, st := range su.Tests {
		pluginName, test, err := runner.SplitName(st.Test)
		if err != nil {
			continue
		}
		d, err := host.Describe(ctx, pluginName)
		if err != nil {
			continue
		}
		if ti, ok := d.Test(test); ok && ti.HCAMapParam != "" {
			takes[st.Test] = localise.HCAMap{Param: ti.HCAMapParam, Label: ti.PairLabel}
		}
	}
	return func(test string) (localise.HCAMap, bool) {
		m, ok := takes[test]
		if !ok {
			return localise.HCAMap{}, false
		}
		for _, st := range su.Tests {
			if st.Test == test {
				params := runner.Params(su.Params, st.Params, runner.ScopedParams(pm, test))
				m.Map = params[m.Param]
				return m, true
			}
		}
		return localise.HCAMap{}, false
	}
}

// testHosts are the nodes a test ran on: the hosts given, else the hosts
// its ranks reported (a Slurm job's nodes), in rank order.
func testHosts(topo plan.Topology, t result.Test) []string {
	if len(topo.Hosts) > 0 {
		return topo.Hosts
	}
	var steps []string
	for s := range t.RankHosts {
		steps = append(steps, s)
	}
	sort.Strings(steps)
	seen := map[string]bool{}
	var hs []string
	for _, s := range steps {
		for _, h := range t.RankHosts[s] {
			if h != "" && !seen[h] {
				seen[h] = true
				hs = append(hs, h)
			}
		}
	}
	return hs
}

// localiseTests localises the multi-node tests of run that call for it
// (failed or errored, or all when asked) and adds what it finds to run;
// probe says why the launcher cannot pin runs to hosts, if it cannot.
func localiseTests(ctx context.Context, c *localise.Config, probe func(hosts []string) error, run *result.Run, suite string, topo plan.Topology, always bool, stderr io.Writer) {
	if topo.Nodes < 2 {
		return
	}
	for _, t := range run.Tests {
		if ctx.Err() != nil {
			return
		}
		reason := "asked"
		if t.Status == result.Fail || t.Status == result.Error {
			reason = "failed"
		} else if !always {
			continue
		}
		hs := testHosts(topo, t)
		if len(hs) < 2 {
			fmt.Fprintf(stderr, "note: %s %s, but its nodes are not known; give them with --hosts to localise it (the ssh, slurm and k8s launchers run tests on the nodes given)\n", t.Name, t.Status)
			continue
		}
		if err := probe(hs); err != nil {
			fmt.Fprintf(stderr, "note: %s %s, but it cannot be localised: %v\n", t.Name, t.Status, err)
			keep(stderr, run, result.Localisation{Test: t.Name, Hosts: hs, Reason: reason,
				Stages: []result.Stage{}, Suspects: []result.Suspect{}, Notes: []string{"not localised: " + err.Error()}})
			continue
		}
		fmt.Fprintf(stderr, "localise %s on %d nodes (%s)\n", t.Name, len(hs), c.StrategyFor(len(hs)))
		tt := topo
		tt.Hosts, tt.Nodes = hs, len(hs)
		keep(stderr, run, c.Localise(ctx, suite, t.Name, tt, reason))
	}
}

// keep adds a finished localisation to run and to its journal at once, so a
// run killed during the next one loses nothing found (gpuaccept report
// rebuilds from the journal).
func keep(stderr io.Writer, run *result.Run, l result.Localisation) {
	run.Localisations = append(run.Localisations, l)
	if run.Dir == "" {
		return
	}
	if err := journal.AppendLocalisation(run.Dir, l); err != nil {
		fmt.Fprintf(stderr, "warning: %v\n", err)
	}
}

// localiseOnly is the localise command after its flags: the localisation of
// the suite's selected multi-node tests on the hosts given, without the
// suite run before it.
func localiseOnly(ctx context.Context, c *common, lc *localise.Config, sr *subRunner, s *sku.SKU, baseline []byte, suite string, su *sku.Suite, only []string,
	topo plan.Topology, launcherName string, dryRun bool, stdout, stderr io.Writer) (int, error) {
	if su.Nodes < 2 {
		return exitUsage, usageError{fmt.Errorf("suite %s runs on 1 node: localise narrows down multi-node tests (the per-node stage of a multi-node suite runs %s on every node)", suite, suite)}
	}
	want := map[string]bool{}
	for _, t := range only {
		want[t] = true
	}
	var names []string
	for _, st := range su.Tests {
		if (len(only) == 0 || want[st.Test]) && st.Skip == "" {
			names = append(names, st.Test)
			delete(want, st.Test)
		}
	}
	for t := range want {
		return exitUsage, usageError{fmt.Errorf("--test %s: not a test of suite %s", t, suite)}
	}
	if len(names) == 0 {
		return exitUsage, usageError{fmt.Errorf("suite %s has no test to localise", suite)}
	}
	if dryRun {
		for _, n := range names {
			if err := lc.Schedule(n, topo.Hosts).Write(stdout, 0); err != nil {
				return exitUsage, err
			}
			// What one of those runs launches, pinned to its nodes as
			// every run is (the k8s manifests, the mpirun line, ...).
			pair := plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: topo.GPUsPerNode}, Hosts: topo.Hosts[:2]}
			if err := sr.show(ctx, suite, n, pair, filepath.Join(c.out, "localise"), stdout); err != nil {
				return exitUsage, err
			}
		}
		return exitOK, nil
	}
	if err := safefs.MkdirAll(c.out, "."); err != nil {
		return exitUsage, fmt.Errorf("create results folder: %w", err)
	}
	run := &result.Run{SKU: s.Name, Suite: suite, Launcher: launcherName, Scope: topo.Scope, Hosts: topo.Hosts,
		Started: time.Now().UTC(), Version: getVersion(), Dir: c.out, Tests: []result.Test{}}
	// The journal (no test planned) and the baseline copy make the folder
	// one that gpuaccept report rebuilds and gpuaccept verify checks.
	if err := journal.SaveBaseline(c.out, s.Name, baseline); err != nil {
		return exitUsage, err
	}
	jw, err := journal.Create(c.out, run, nil)
	if err != nil {
		return exitUsage, err
	}
	for _, n := range names {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(stderr, "localise %s on %d nodes (%s)\n", n, len(topo.Hosts), lc.StrategyFor(len(topo.Hosts)))
		l := lc.Localise(ctx, suite, n, topo, "asked")
		run.Localisations = append(run.Localisations, l)
		if err := jw.AddLocalisation(l); err != nil {
			fmt.Fprintf(stderr, "warning: %v\n", err)
		}
	}
	// One duration for the journal and the reports: verify re-derives
	// the reports from the journal.
	run.Duration = time.Since(run.Started)
	if err := jw.End(run.Duration); err != nil {
		fmt.Fprintf(stderr, "warning: %v\n", err)
	}
	if err := jw.Close(); err != nil {
		fmt.Fprintf(stderr, "warning: %v\n", err)
	}
	run.Finish()
	code, err := c.finish(run, s, stdout, stderr)
	fmt.Fprintf(stderr, "results: %s (report.html, junit.xml, results.json, localise/)\n", c.out)
	return code, err
}
