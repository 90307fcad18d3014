// Package localise narrows a slow multi-node test down to what to pull:
// it runs the single-node suite on every node, the test on node pairs
// (every pair in round-robin rounds, or random matchings with a re-pairing
// of suspects, or halves of the node set for bisection) and, for tests that
// take an HCA map, on every HCA pair between two nodes, then names the
// nodes, HCAs and links that every run they take part in finds slow.
//
// It sits after the runner in the data flow: it asks an Exec (the CLI's
// wiring of runner, plugins and a launcher pinned to the chosen hosts) for
// runs on parts of the node set and reads their results; it never knows a
// tool's output, only results' bandwidth metrics and verdicts.
package localise

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// The strategies of the node-pair stage (Config.Strategy).
const (
	// Auto picks Pairs up to AllPairsMax nodes, Matching up to
	// MatchingMax, Bisect above.
	Auto = "auto"
	// Pairs runs every pair of nodes, n-1 rounds of n/2 pairs.
	Pairs = "pairs"
	// Matching runs Config.Matchings random matchings, then re-pairs the
	// suspects with known-good nodes.
	Matching = "matching"
	// Bisect halves the node set and follows the half that stays slow.
	Bisect = "bisect"
)

// Strategies lists the values Config.Strategy takes.
var Strategies = []string{Auto, Pairs, Matching, Bisect}

// Limits of the Auto strategy, in nodes: every pair while the rounds stay
// few (16 nodes: 15 rounds of 8 pairs), random matchings while n/2
// concurrent pair runs per round are affordable, bisection above (2 runs
// per level, log2(n) levels).
const (
	AllPairsMax = 16
	MatchingMax = 128
)

// DefaultTolerance is how far, as a fraction, a run's figure may fall below
// its reference before it counts as slow, when Config.Tolerance is 0: the
// -10% band the shipped baselines use most.
const DefaultTolerance = 0.10

// DefaultMatchings is how many random matchings the Matching strategy
// draws when Config.Matchings is 0.
const DefaultMatchings = 3

// Request is one run a localisation asks for: some tests of a suite on a
// part of the node set.
type Request struct {
	// Stage is the stage asking ("per-node", "pairs", ...).
	Stage string
	// Suite is the suite the tests come from; Tests restricts it (empty:
	// the whole suite).
	Suite string
	Tests []string
	// Topology holds the node count, GPUs per node and the hosts to pin the
	// run to.
	Topology plan.Topology
	// Params are laid over the run's own parameters; keys may be scoped
	// ("ibperf.write_bw:pairs").
	Params map[string]string
	// Dir is the run's own results folder.
	Dir string
	// Label names the run in progress lines ("pairs r1 n1+n3").
	Label string
}

// HCAMap is the HCA pair map a test runs with and the names its plugin
// declares for it (pluginapi.TestInfo.HCAMapParam and PairLabel).
type HCAMap struct {
	// Map is the map, "SERVER_HCA:CLIENT_HCA,...".
	Map string
	// Param is the test's parameter that takes a map: the nic-pairs stage
	// sets it ("TEST:PARAM") to run chosen HCA pairs.
	Param string
	// Label is the metric label whose value names the HCA pair of a point,
	// "SERVER_HCA:CLIENT_HCA".
	Label string
}

// Exec runs a request to its end and returns its results; the error is
// for a run that could not start at all, which counts as an error run. It
// must write nothing outside req.Dir and stop everything it started when
// ctx ends.
type Exec func(ctx context.Context, req Request) (*result.Run, error)

// Config is how a localisation runs.
type Config struct {
	SKU  *sku.SKU
	Exec Exec
	// Dir is the main results folder; runs go to Dir/localise/TEST/STAGE/.
	Dir string
	// Strategy is one of Strategies; "" is Auto.
	Strategy string
	// Tolerance is the fraction below the reference that makes a run slow;
	// 0 is DefaultTolerance.
	Tolerance float64
	// Matchings is the number of random matchings; 0 is DefaultMatchings.
	Matchings int
	// Seed seeds the random matchings, so a localisation can be repeated.
	Seed uint64
	// NodeSuite is the single-node suite run on every node; "" skips the
	// per-node stage. NodeTests restricts it (empty: all its tests).
	NodeSuite string
	NodeTests []string
	// HCAMap returns the HCA pair map the test runs with and how the test
	// takes it, and true when the test takes one (its plugin declares
	// TestInfo.HCAMapParam); nil: no test does.
	HCAMap func(test string) (HCAMap, bool)
	// NICs are the HCA names of every node, for the nic-pairs stage; empty:
	// the HCAs the test's own map names.
	NICs []string
	// Parallel bounds the runs in flight at once; 0: a whole round.
	Parallel int
	// Progress receives a line as each round starts and each run ends.
	Progress io.Writer
}

func (c *Config) tolerance() float64 {
	if c.Tolerance > 0 {
		return c.Tolerance
	}
	return DefaultTolerance
}

func (c *Config) matchings() int {
	if c.Matchings > 0 {
		return c.Matchings
	}
	return DefaultMatchings
}

// StrategyFor is the strategy c uses on n nodes. Below 4 nodes it is
// always Pairs: 3 nodes make 3 pairs, and neither a matching nor halves
// leave a known-good node to compare with.
func (c *Config) StrategyFor(n int) string {
	switch {
	case n < 4:
		return Pairs
	case c.Strategy != "" && c.Strategy != Auto:
		return c.Strategy
	case n <= AllPairsMax:
		return Pairs
	case n <= MatchingMax:
		return Matching
	}
	return Bisect
}

// job is one localisation in progress.
type job struct {
	c     *Config
	suite string
	test  string
	topo  plan.Topology
	loc   *result.Localisation
	mu    sync.Mutex
	// named collects node suspects by host, so several stages add evidence
	// to one suspect.
	named map[string]*result.Suspect
	order []string
}

// Localise narrows test (a test of suite, run at topo, whose Hosts must be
// set) down and returns what it found. reason is "failed" or "asked".
// Cancelling ctx stops the run in flight (Exec's duty) and ends the
// localisation with what was found so far, noted.
func (c *Config) Localise(ctx context.Context, suite, test string, topo plan.Topology, reason string) result.Localisation {
	n := len(topo.Hosts)
	loc := result.Localisation{Test: test, Hosts: topo.Hosts, Reason: reason, Strategy: c.StrategyFor(n),
		Tolerance: c.tolerance(), Stages: []result.Stage{}, Suspects: []result.Suspect{}}
	j := &job{c: c, suite: suite, test: test, topo: topo, loc: &loc, named: map[string]*result.Suspect{}}
	if n < 2 {
		loc.Notes = append(loc.Notes, fmt.Sprintf("%s known: localisation needs the hosts of a multi-node run (--hosts)", plural(n, "host")))
		return loc
	}
	if c.NodeSuite != "" {
		j.perNode(ctx)
	} else {
		j.note("no single-node suite: the per-node stage was not run")
	}
	switch {
	case ctx.Err() != nil:
	case n == 2:
		j.note("2 nodes make one pair, the run that was localised: the pair stage has nothing to compare")
	case loc.Strategy == Pairs:
		j.allPairs(ctx)
	case loc.Strategy == Matching:
		j.matching(ctx)
	case loc.Strategy == Bisect:
		j.bisect(ctx)
	}
	if ctx.Err() == nil && c.HCAMap != nil {
		if m, ok := c.HCAMap(test); ok {
			j.nicPairs(ctx, m)
		}
	}
	if ctx.Err() != nil {
		j.note("stopped early (interrupted, or the run's time ran out): only what the runs above found is reported")
	}
	j.noteErrors()
	for _, h := range j.order {
		loc.Suspects = append(loc.Suspects, *j.named[h])
	}
	// HCA and link suspects were appended as found; keep node suspects
	// first, in host order.
	sort.SliceStable(loc.Suspects, func(a, b int) bool {
		return loc.Suspects[a].Kind == "node" && loc.Suspects[b].Kind != "node"
	})
	return loc
}

func (j *job) note(s string) { j.loc.Notes = append(j.loc.Notes, s) }

// noteErrors says how many runs could not run or be parsed (they count
// for nothing) and, when they share nodes, which: the place to look.
func (j *job) noteErrors() {
	count := map[string]int{}
	n, first := 0, ""
	for _, st := range j.loc.Stages {
		for _, r := range st.Runs {
			if r.Status != result.Error {
				continue
			}
			n++
			if first == "" {
				first = r.Why
			}
			for _, h := range r.Hosts {
				count[h]++
			}
		}
	}
	if n == 0 {
		return
	}
	var common []string
	for _, h := range j.topo.Hosts {
		if count[h] == n {
			common = append(common, h)
		}
	}
	where := ""
	if len(common) > 0 && len(common) < len(j.topo.Hosts) {
		where = "; every one of them ran on " + strings.Join(common, ", ")
	}
	j.note(fmt.Sprintf("%d run(s) could not run or be parsed and count for nothing%s (first: %s)", n, where, first))
}

func (j *job) progress(format string, a ...any) {
	if j.c.Progress != nil {
		fmt.Fprintf(j.c.Progress, "localise %s: "+format+"\n", append([]any{j.test}, a...)...)
	}
}

// nameNode adds evidence against host, creating its suspect on first use.
func (j *job) nameNode(host, stage, reason string, evidence ...string) {
	s, ok := j.named[host]
	if !ok {
		s = &result.Suspect{Kind: "node", Host: host, Stage: stage, Reason: reason}
		j.named[host] = s
		j.order = append(j.order, host)
	} else if !strings.Contains(s.Stage, stage) {
		s.Stage += ", " + stage
		s.Reason += "; " + reason
	}
	s.Evidence = append(s.Evidence, evidence...)
}

var unsafePath = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// dir is a run's folder, relative to the main results folder.
func (j *job) dir(stage, label string) string {
	return filepath.Join(layout.Localise, unsafePath.ReplaceAllString(j.test, "_"), stage, unsafePath.ReplaceAllString(label, "_"))
}

// pending is a request with the sub-run it becomes.
type pending struct {
	req  Request
	sub  result.SubRun
	test result.Test
}

// request builds the pending run of tests on hosts.
func (j *job) request(stage string, round int, suite string, tests []string, hosts []string, label string, params map[string]string) *pending {
	rel := j.dir(stage, label)
	topo := plan.Topology{Scope: plan.Scope{Nodes: len(hosts), GPUsPerNode: j.topo.GPUsPerNode}, Hosts: hosts}
	return &pending{
		req: Request{Stage: stage, Suite: suite, Tests: tests, Topology: topo, Params: params,
			Dir: filepath.Join(j.c.Dir, rel), Label: stage + " " + label},
		sub: result.SubRun{Round: round, Test: j.test, Hosts: hosts, Dir: rel},
	}
}

// runAll runs the pending runs (one round: disjoint nodes) at once, at most
// Config.Parallel at a time, and fills in their results. A per-node run
// returns several tests; the caller splits it (tests of pending.run).
func (j *job) runAll(ctx context.Context, ps []*pending, each func(p *pending, run *result.Run, err error)) {
	limit := j.c.Parallel
	if limit <= 0 || limit > len(ps) {
		limit = len(ps)
	}
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for _, p := range ps {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			run, err := j.c.Exec(ctx, p.req)
			j.mu.Lock()
			defer j.mu.Unlock()
			each(p, run, err)
		}()
	}
	wg.Wait()
}

// fill sets p.sub from the test's result in run.
func (j *job) fill(p *pending, run *result.Run, err error, test string) {
	p.sub.Test = test
	if err != nil {
		p.sub.Status, p.sub.Why = result.Error, err.Error()
		p.test = result.Test{Name: test, Status: result.Error, Message: err.Error()}
		return
	}
	t, ok := findTest(run, test)
	if !ok {
		p.sub.Status, p.sub.Why = result.Error, "the run has no result for "+test
		p.test = result.Test{Name: test, Status: result.Error, Message: p.sub.Why}
		return
	}
	p.test = t
	p.sub.Status = t.Status
	if v, name, unit, ok := figure(j.c.SKU, t); ok {
		p.sub.Figure, p.sub.FigureName, p.sub.Unit = v, "peak "+name, unit
	}
}

func findTest(run *result.Run, name string) (result.Test, bool) {
	if run == nil {
		return result.Test{}, false
	}
	for _, t := range run.Tests {
		if t.Name == name {
			return t, true
		}
	}
	return result.Test{}, false
}

// judge marks the runs of one comparison group slow: those whose own
// verdict failed or errored, and those whose figure falls more than the
// tolerance below ref (the group's upper quartile when ref is 0).
func (j *job) judge(ps []*pending, ref float64) {
	if ref == 0 {
		var figs []float64
		for _, p := range ps {
			if p.sub.Figure > 0 {
				figs = append(figs, p.sub.Figure)
			}
		}
		ref = upperQuartile(figs)
	}
	tol := j.c.tolerance()
	for _, p := range ps {
		s := &p.sub
		s.Reference = ref
		if why := failure(p.test); why != "" {
			// A run that could not run or be parsed measured nothing
			// about its nodes (a host outside the partition, a bad
			// parameter, Ctrl-C): it is kept, with why, but is no
			// evidence of slowness. A failed run is.
			s.Slow, s.Why = p.test.Status == result.Fail, string(p.test.Status)+": "+why
			continue
		}
		if s.Figure > 0 && ref > 0 && s.Figure < (1-tol)*ref {
			s.Slow = true
			s.Why = fmt.Sprintf("%s %s is %.0f%% below the reference %s", s.FigureName, fmtFig(s.Figure, s.Unit), 100*(1-s.Figure/ref), fmtFig(ref, s.Unit))
		}
	}
}

// evidence renders a run for a suspect's evidence list.
func evidence(stage string, s result.SubRun) string {
	what := s.Why
	if what == "" {
		what = string(s.Status)
		if s.Figure > 0 {
			what += ", " + s.FigureName + " " + fmtFig(s.Figure, s.Unit)
		}
	}
	nics := ""
	if s.NICs != "" {
		nics = " HCAs " + s.NICs
	}
	return fmt.Sprintf("%s round %d, %s on %s%s: %s (%s)", stage, s.Round, s.Test, strings.Join(s.Hosts, "+"), nics, what, s.Dir)
}

// addStage records a stage's runs.
func (j *job) addStage(name string, rounds int, ps []*pending) {
	st := result.Stage{Name: name, Rounds: rounds, Runs: make([]result.SubRun, len(ps))}
	for i, p := range ps {
		st.Runs[i] = p.sub
	}
	j.loc.Stages = append(j.loc.Stages, st)
}

func (j *job) logRun(p *pending) {
	state := string(p.sub.Status)
	if p.sub.Figure > 0 {
		state += ", " + p.sub.FigureName + " " + fmtFig(p.sub.Figure, p.sub.Unit)
	}
	what := ""
	if p.sub.Test != j.test {
		what = " " + p.sub.Test
	}
	j.progress("%s %s%s: %s", p.req.Stage, strings.Join(p.sub.Hosts, "+"), what, state)
}
