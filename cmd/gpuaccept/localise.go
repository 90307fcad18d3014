package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/localise"
	"github.com/gpuaccept/gpuaccept/framework/result"
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
		for _, t := range lf.tests {
			if !s.Suites[name].Has(t) {
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
		return "", usageError{fmt.Errorf("--localise-suite %s runs on %s by default; the per-node stage needs a single-node suite", lf.suite, result.Count(su.Nodes, "node"))}
	}
	return lf.suite, nil
}

// settings resolves the localisation flags against the SKU (its default
// single-node suite) into the localisation's settings.
func (lf *localiseFlags) settings(s *sku.SKU) (acceptance.LocaliseSettings, error) {
	ns, err := lf.nodeSuite(s)
	if err != nil {
		return acceptance.LocaliseSettings{}, err
	}
	ls := acceptance.LocaliseSettings{Strategy: lf.strategy, Tolerance: lf.tolerance, Matchings: lf.matchings, Seed: lf.seed,
		NodeSuite: ns, NodeTests: lf.tests, Parallel: lf.parallel}
	for _, n := range strings.Split(lf.nics, ",") {
		if n = strings.TrimSpace(n); n != "" {
			ls.NICs = append(ls.NICs, n)
		}
	}
	return ls, nil
}

// localiseOnly is the localise command after its flags: it picks the
// suite's multi-node tests to localise (--test, or all not skipped), then
// localises them on the hosts given (acceptance.Localise) without a suite
// run before, and signs the folder off.
func localiseOnly(ctx context.Context, c *common, setup acceptance.Setup, only []string, stdout, stderr io.Writer) (int, error) {
	suite, su := setup.Suite, setup.SKU.Suites[setup.Suite]
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
	run, err := acceptance.Localise(ctx, acceptance.LocaliseOptions{Setup: setup, Tests: names})
	if err != nil {
		return exitUsage, err
	}
	if setup.DryRun {
		return exitOK, nil
	}
	code, err := c.finish(run, setup.SKU, stdout, stderr)
	fmt.Fprintf(stderr, "results: %s (report.html, junit.xml, results.json, localise/)\n", c.out)
	return code, err
}
