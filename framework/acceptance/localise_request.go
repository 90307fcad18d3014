package acceptance

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/localise"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// LocaliseRequest are the localisation flags as given (--localise,
// --no-localise, --localise-*, --nics); Resolve checks them against the
// SKU into LocaliseSettings. Errors name the flags.
type LocaliseRequest struct {
	// Always and Never are --localise and --no-localise.
	Always, Never bool
	// Strategy is one of localise.Strategies.
	Strategy string
	// Tolerance is a fraction between 0 and 1, exclusive.
	Tolerance float64
	// Matchings is 1 or more.
	Matchings int
	// Seed seeds the random matchings (--localise-seed).
	Seed uint64
	// Suite is --localise-suite: "" for the SKU's default single-node
	// suite, "none" for no per-node stage.
	Suite string
	// Tests are --localise-test: tests of that suite.
	Tests []string
	// NICs is --nics, comma-separated HCA names.
	NICs string
	// Parallel is 0 (a whole round) or more.
	Parallel int
}

// Resolve checks r against s and resolves it into the localisation's
// settings: the per-node stage's suite (the SKU's "singlenode" when it
// runs on 1 node, else its first 1-node suite) and the NICs listed.
func (r LocaliseRequest) Resolve(s *sku.SKU) (LocaliseSettings, error) {
	if r.Always && r.Never {
		return LocaliseSettings{}, errors.New("--localise and --no-localise contradict each other")
	}
	ok := false
	for _, st := range localise.Strategies {
		ok = ok || r.Strategy == st
	}
	if !ok {
		return LocaliseSettings{}, fmt.Errorf("--localise-strategy %q: want one of %s", r.Strategy, strings.Join(localise.Strategies, ", "))
	}
	if !(r.Tolerance > 0 && r.Tolerance < 1) { // NaN too
		return LocaliseSettings{}, fmt.Errorf("--localise-tolerance %g: want a fraction between 0 and 1 (0.1 is 10%%)", r.Tolerance)
	}
	if r.Matchings < 1 {
		return LocaliseSettings{}, fmt.Errorf("--localise-matchings %d: want 1 or more", r.Matchings)
	}
	if r.Parallel < 0 {
		return LocaliseSettings{}, fmt.Errorf("--localise-parallel %d: want 0 or more", r.Parallel)
	}
	name, err := r.nodeSuite(s)
	if err != nil {
		return LocaliseSettings{}, err
	}
	if len(r.Tests) > 0 && name == "" {
		return LocaliseSettings{}, fmt.Errorf("--localise-test: SKU %s has no single-node suite to take it from", s.Name)
	}
	for _, t := range r.Tests {
		if !s.Suites[name].Has(t) {
			return LocaliseSettings{}, fmt.Errorf("--localise-test %s: not a test of suite %s", t, name)
		}
	}
	ls := LocaliseSettings{Strategy: r.Strategy, Tolerance: r.Tolerance, Matchings: r.Matchings, Seed: r.Seed,
		NodeSuite: name, NodeTests: r.Tests, Parallel: r.Parallel}
	for _, n := range strings.Split(r.NICs, ",") {
		if n = strings.TrimSpace(n); n != "" {
			ls.NICs = append(ls.NICs, n)
		}
	}
	return ls, nil
}

// nodeSuite is the single-node suite of the per-node stage; "" for none.
func (r LocaliseRequest) nodeSuite(s *sku.SKU) (string, error) {
	switch r.Suite {
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
	su, ok := s.Suites[r.Suite]
	if !ok {
		return "", fmt.Errorf("--localise-suite %q: SKU %s has no such suite (known: %s)", r.Suite, s.Name, strings.Join(s.SuiteNames(), ", "))
	}
	if su.Nodes > 1 {
		return "", fmt.Errorf("--localise-suite %s runs on %s by default; the per-node stage needs a single-node suite", r.Suite, result.Count(su.Nodes, "node"))
	}
	return r.Suite, nil
}

// LocaliseTests picks the tests of suite (of s) that gpuaccept localise
// narrows down: those of only (--test), else every test not skipped. The
// suite must be a multi-node one.
func LocaliseTests(s *sku.SKU, suite string, only []string) ([]string, error) {
	su := s.Suites[suite]
	if su == nil {
		return nil, fmt.Errorf("SKU %s has no suite %q", s.Name, suite)
	}
	if su.Nodes < 2 {
		return nil, fmt.Errorf("suite %s runs on 1 node: localise narrows down multi-node tests (the per-node stage of a multi-node suite runs %s on every node)", suite, suite)
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
	for _, t := range only {
		if want[t] {
			return nil, fmt.Errorf("--test %s: not a test of suite %s", t, suite)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("suite %s has no test to localise", suite)
	}
	return names, nil
}
