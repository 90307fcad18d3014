package localise

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/schedule"
)

// perNode runs the single-node suite on every node at once and names the
// nodes where a test fails its single-node baseline or falls below the
// other nodes' upper quartile.
func (j *job) perNode(ctx context.Context) {
	const stage = "per-node"
	hosts := j.topo.Hosts
	j.progress("%s: suite %s on %d nodes at once", stage, j.c.NodeSuite, len(hosts))
	ps := make([]*pending, len(hosts))
	for i, h := range hosts {
		ps[i] = j.request(stage, 1, j.c.NodeSuite, j.c.NodeTests, []string{h}, h, nil)
	}
	// One run per node holds several tests: split them into one sub-run
	// per (node, test), compared test by test.
	byTest := map[string][]*pending{}
	var names []string
	j.runAll(ctx, ps, func(p *pending, run *result.Run, err error) {
		tests := []string{"suite " + j.c.NodeSuite}
		if run != nil && len(run.Tests) > 0 {
			tests = tests[:0]
			for _, t := range run.Tests {
				tests = append(tests, t.Name)
			}
		}
		for _, name := range tests {
			q := &pending{req: p.req, sub: p.sub}
			j.fill(q, run, err, name)
			if q.test.Status == result.Skip && len(q.test.Metrics) == 0 {
				// A test the suite skips (no plugin yet) says nothing.
				continue
			}
			if err == nil && strings.HasPrefix(name, "suite ") {
				q.sub.Status, q.sub.Why = result.Error, "the run has no test"
				q.test = result.Test{Name: name, Status: result.Error, Message: q.sub.Why}
			}
			if _, ok := byTest[name]; !ok {
				names = append(names, name)
			}
			byTest[name] = append(byTest[name], q)
			j.logRun(q)
		}
	})
	sort.Strings(names)
	var all []*pending
	for _, name := range names {
		group := byTest[name]
		sort.Slice(group, func(a, b int) bool {
			return indexOf(hosts, group[a].sub.Hosts[0]) < indexOf(hosts, group[b].sub.Hosts[0])
		})
		j.judge(group, 0)
		all = append(all, group...)
	}
	j.addStage(stage, 1, all)
	slow := map[string]bool{}
	for _, p := range all {
		if p.sub.Slow {
			slow[p.sub.Hosts[0]] = true
		}
	}
	if len(slow) == len(hosts) && len(hosts) > 1 {
		j.note("per-node: every node is slow on its own, so no one node explains it: look for what they share (driver, firmware, settings, the launcher, the baseline)")
		return
	}
	for _, p := range all {
		if p.sub.Slow {
			j.nameNode(p.sub.Hosts[0], stage, "slow on its own (single-node suite)", evidence(stage, p.sub))
		}
	}
}

func indexOf(hs []string, h string) int {
	for i, x := range hs {
		if x == h {
			return i
		}
	}
	return -1
}

// pairRounds runs the test on the node pairs of rounds, one round after the
// other, and returns the runs in order.
func (j *job) pairRounds(ctx context.Context, stage string, rounds []schedule.Round, first int) []*pending {
	hosts := j.topo.Hosts
	var all []*pending
	for r, round := range rounds {
		if ctx.Err() != nil {
			break
		}
		ps := make([]*pending, len(round))
		var names []string
		for i, pr := range round {
			hs := []string{hosts[pr.A], hosts[pr.B]}
			ps[i] = j.request(stage, first+r, j.suite, []string{j.test}, hs, fmt.Sprintf("r%d-%s-%s", first+r, hs[0], hs[1]), nil)
			names = append(names, hs[0]+"+"+hs[1])
		}
		j.progress("%s round %d: %s", stage, first+r, strings.Join(names, " "))
		j.runAll(ctx, ps, func(p *pending, run *result.Run, err error) {
			j.fill(p, run, err, j.test)
			j.logRun(p)
		})
		all = append(all, ps...)
	}
	return all
}

// tally counts each host's pair runs that measured (errored runs count
// for nothing) and the slow ones.
func tally(ps []*pending) (runs, slow map[string]int) {
	runs, slow = map[string]int{}, map[string]int{}
	for _, p := range ps {
		if p.sub.Status == result.Error {
			continue
		}
		for _, h := range p.sub.Hosts {
			runs[h]++
			if p.sub.Slow {
				slow[h]++
			}
		}
	}
	return runs, slow
}

// allPairs runs every pair and names the nodes every one of whose pairs is
// slow.
func (j *job) allPairs(ctx context.Context) {
	const stage = "pairs"
	rounds := schedule.RoundRobin(len(j.topo.Hosts))
	ps := j.pairRounds(ctx, stage, rounds, 1)
	j.judge(ps, 0)
	j.addStage(stage, len(rounds), ps)
	j.nameAlwaysSlow(stage, ps, 2)
}

// nameAlwaysSlow names the hosts in at least min runs of ps, all slow;
// when that is every host, it names none: the fault is not in one node.
func (j *job) nameAlwaysSlow(stage string, ps []*pending, min int) []string {
	runs, slow := tally(ps)
	var bad []string
	for _, h := range j.topo.Hosts {
		if runs[h] >= min && slow[h] == runs[h] {
			bad = append(bad, h)
		}
	}
	if len(bad) > 0 && len(bad) == len(runs) {
		j.note(fmt.Sprintf("%s: every run is slow, so no one node explains it (the fabric, or every node)", stage))
		return nil
	}
	for _, h := range bad {
		var ev []string
		for _, p := range ps {
			if indexOf(p.sub.Hosts, h) >= 0 {
				ev = append(ev, evidence(stage, p.sub))
			}
		}
		j.nameNode(h, stage, fmt.Sprintf("slow in all %d of its node-pair runs", runs[h]), ev...)
	}
	return bad
}

// matching runs random matchings, then re-pairs the nodes that were slow
// in every matching with nodes that never were.
func (j *job) matching(ctx context.Context) {
	const stage = "pairs"
	hosts := j.topo.Hosts
	rng := rand.New(rand.NewPCG(j.c.Seed, uint64(len(hosts))))
	rounds := schedule.Matchings(len(hosts), j.c.matchings(), rng)
	ps := j.pairRounds(ctx, stage, rounds, 1)
	j.judge(ps, 0)
	j.addStage(stage, len(rounds), ps)
	runs, slow := tally(ps)
	var cand, good []int
	var goodFigs []float64
	for i, h := range hosts {
		switch {
		case runs[h] > 0 && slow[h] == runs[h]:
			cand = append(cand, i)
		case slow[h] < runs[h]:
			// One run at speed clears both its nodes: a slow node slows
			// every run it is in.
			good = append(good, i)
		}
	}
	for _, p := range ps {
		if !p.sub.Slow && p.sub.Figure > 0 {
			goodFigs = append(goodFigs, p.sub.Figure)
		}
	}
	if len(cand) == 0 || ctx.Err() != nil {
		return
	}
	if len(good) == 0 {
		j.note("pairs: no pair ran at speed, so the suspects could not be re-paired with a known-good node")
		return
	}
	j.repair(ctx, cand, good, median(goodFigs), ps)
}

// repair runs each candidate with a known-good node and names those still
// slow; earlier are the runs that made them candidates (evidence).
func (j *job) repair(ctx context.Context, cand, good []int, ref float64, earlier []*pending) {
	const stage = "re-pair"
	rounds := schedule.Repair(cand, good)
	ps := j.pairRounds(ctx, stage, rounds, 1)
	j.judge(ps, ref)
	j.addStage(stage, len(rounds), ps)
	for _, p := range ps {
		if !p.sub.Slow {
			continue
		}
		h := p.sub.Hosts[0]
		var ev []string
		for _, q := range earlier {
			if indexOf(q.sub.Hosts, h) >= 0 && q.sub.Slow {
				ev = append(ev, evidence(q.req.Stage, q.sub))
			}
		}
		ev = append(ev, evidence(stage, p.sub))
		j.nameNode(h, stage, "slow in every run, also beside the known-good node "+p.sub.Hosts[1], ev...)
	}
}

// half is a half of a node set that bisection ran the test on.
type half struct {
	set      []int
	run      *pending
	level    int
	parent   int // index of the parent half; -1 for the whole set
	expanded bool
}

// bisect halves the slow node set level by level, following the halves
// that are slow, and re-pairs the nodes of the slow small halves (3 nodes
// or fewer) with nodes of halves that ran at speed.
//
// Without a baseline at every half's scope, "slow" is relative: a half is
// slow when it runs more than the tolerance below the fastest run seen so
// far (halves and re-pairs). That reference grows as runs find healthy
// nodes, so everything is judged again after each round: a half that only
// looked fast beside a worse one is split after all, and a re-pair whose
// "known-good" partner turns out slow proves nothing and is run again with
// another partner. Slow only ever grows, so this ends.
func (j *job) bisect(ctx context.Context) {
	const stage = "bisect"
	hosts := j.topo.Hosts
	all := make([]int, len(hosts))
	for i := range all {
		all[i] = i
	}
	var halves []*half
	type split struct {
		set    []int
		level  int
		parent int
	}
	frontier := []split{{all, 1, -1}}
	levels := 0
	best := 0.0
	var repairs []*pending
	repairRound := 1
	// partner[c] is the node candidate c was last re-paired with.
	partner := map[int]int{}
	rejudge := func() {
		for _, p := range append(halfRuns(halves), repairs...) {
			if failure(p.test) == "" {
				best = max(best, p.sub.Figure)
			}
		}
		for _, p := range append(halfRuns(halves), repairs...) {
			p.sub.Slow, p.sub.Why = false, ""
			j.judge([]*pending{p}, best)
		}
	}
	// Good nodes: those of halves and re-pairs that ran at speed.
	goodNodes := func() (good []int, isGood map[int]bool) {
		isGood = map[int]bool{}
		add := func(xs []int) {
			for _, x := range xs {
				if !isGood[x] {
					isGood[x] = true
					good = append(good, x)
				}
			}
		}
		for _, h := range halves {
			if !h.run.sub.Slow && h.run.sub.Status != result.Error {
				add(h.set)
			}
		}
		for _, p := range repairs {
			if !p.sub.Slow && p.sub.Status != result.Error {
				add([]int{indexOf(hosts, p.sub.Hosts[0]), indexOf(hosts, p.sub.Hosts[1])})
			}
		}
		return good, isGood
	}
	for ctx.Err() == nil {
		for len(frontier) > 0 && ctx.Err() == nil {
			var ps []*pending
			var names []string
			for _, sp := range frontier {
				a, b := schedule.Halves(sp.set)
				for _, set := range [][]int{a, b} {
					hs := pick(hosts, set)
					p := j.request(stage, sp.level, j.suite, []string{j.test}, hs, fmt.Sprintf("l%d-%s-%dnodes", sp.level, hs[0], len(hs)), nil)
					halves = append(halves, &half{set: set, run: p, level: sp.level, parent: sp.parent})
					ps = append(ps, p)
					names = append(names, span(hs))
				}
				levels = max(levels, sp.level)
			}
			j.progress("%s level %d: %s", stage, frontier[0].level, strings.Join(names, " | "))
			j.runAll(ctx, ps, func(p *pending, run *result.Run, err error) {
				j.fill(p, run, err, j.test)
				j.logRun(p)
			})
			rejudge()
			frontier = nil
			for i, h := range halves {
				if h.run.sub.Slow && !h.expanded && len(h.set) > 3 {
					h.expanded = true
					frontier = append(frontier, split{h.set, h.level + 1, i})
				}
			}
		}
		// Candidates: nodes of slow small halves not yet re-paired with a
		// node that is still good.
		good, isGood := goodNodes()
		var cand []int
		seen := map[int]bool{}
		for _, h := range halves {
			if !h.run.sub.Slow || len(h.set) > 3 {
				continue
			}
			for _, x := range h.set {
				if pr, ok := partner[x]; (!ok || !isGood[pr]) && !seen[x] && !isGood[x] {
					seen[x] = true
					cand = append(cand, x)
				}
			}
		}
		if len(cand) == 0 || len(good) == 0 || ctx.Err() != nil {
			if len(cand) > 0 && len(good) == 0 {
				j.note(fmt.Sprintf("bisect: no half ran at full speed, so %s could not be re-paired with a known-good node", span(pick(hosts, cand))))
			}
			break
		}
		rounds := schedule.Repair(cand, good)
		ps := j.pairRounds(ctx, "re-pair", rounds, repairRound)
		repairRound += len(rounds)
		for _, p := range ps {
			partner[indexOf(hosts, p.sub.Hosts[0])] = indexOf(hosts, p.sub.Hosts[1])
		}
		repairs = append(repairs, ps...)
		rejudge()
		for i, h := range halves {
			if h.run.sub.Slow && !h.expanded && len(h.set) > 3 {
				h.expanded = true
				frontier = append(frontier, split{h.set, h.level + 1, i})
			}
		}
	}
	j.addStage(stage, levels, halfRuns(halves))
	if len(repairs) > 0 {
		j.addStage("re-pair", repairRound-1, repairs)
	}
	if ctx.Err() != nil {
		return
	}
	// A slow set whose halves both run at speed needs the whole set.
	children := map[int][]*half{}
	for _, h := range halves {
		children[h.parent] = append(children[h.parent], h)
	}
	for parent := -1; parent < len(halves); parent++ {
		kids := children[parent]
		if len(kids) == 2 && !kids[0].run.sub.Slow && !kids[1].run.sub.Slow {
			what := fmt.Sprintf("all %d nodes", len(hosts))
			if parent >= 0 {
				what = span(pick(hosts, halves[parent].set))
			}
			j.note(fmt.Sprintf("bisect: the halves of %s run alike, so the slowness needs the whole set (the fabric between them, or a fault only load shows)", what))
		}
	}
	// A candidate is named by its last re-pair: slow beside a node that is
	// good at the end.
	_, isGood := goodNodes()
	last := map[string]*pending{}
	for _, p := range repairs {
		last[p.sub.Hosts[0]] = p
	}
	for _, h := range hosts {
		p, ok := last[h]
		if !ok || !p.sub.Slow || !isGood[indexOf(hosts, p.sub.Hosts[1])] {
			continue
		}
		var ev []string
		for _, q := range halfRuns(halves) {
			if indexOf(q.sub.Hosts, h) >= 0 && q.sub.Slow {
				ev = append(ev, evidence(stage, q.sub))
			}
		}
		ev = append(ev, evidence("re-pair", p.sub))
		j.nameNode(h, "re-pair", "slow in every run, also beside the known-good node "+p.sub.Hosts[1], ev...)
	}
}

func halfRuns(hs []*half) []*pending {
	out := make([]*pending, len(hs))
	for i, h := range hs {
		out[i] = h.run
	}
	return out
}

func pick(hosts []string, idx []int) []string {
	out := make([]string, len(idx))
	for i, x := range idx {
		out[i] = hosts[x]
	}
	return out
}

// span renders a node set briefly: "n1,n2" or "n1..n512 (512 nodes)".
func span(hs []string) string {
	if len(hs) <= 3 {
		return strings.Join(hs, ",")
	}
	return fmt.Sprintf("%s..%s (%d nodes)", hs[0], hs[len(hs)-1], len(hs))
}
