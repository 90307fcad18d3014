package localise

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/plugins/ibperf"
	"github.com/gpuaccept/gpuaccept/plugins/nccl"
)

// cluster simulates nodes by speed: a run's busbw is the base bandwidth
// times the slowest factor among its nodes (and, for ib_write_bw runs,
// among the HCAs of each NIC pair), as a collective runs at the pace of its
// slowest member. It stands in for Exec so the stages' arithmetic is tested
// on every shape; the real launchers run it in cmd/gpuaccept's tests.
type cluster struct {
	mu     sync.Mutex
	speed  map[string]float64 // host -> factor (default 1)
	hca    map[string]float64 // "host:hca" -> factor
	link   map[string]float64 // "a:hca-b:hca" -> factor
	fail   float64            // figures below this are judged fail (0: not judged)
	broken map[string]bool    // hosts where nothing starts
	hcaMap string             // the HCA map ibperf tests run with unless given one
	// param and label are the HCA map parameter and the pair label the
	// simulated plugin declares; "": "pairs" and "pair", as ibperf's.
	param, label string
	reqs         []Request
	busy         map[string]bool
	clash        string
}

func (c *cluster) factor(h string) float64 {
	if f, ok := c.speed[h]; ok {
		return f
	}
	return 1
}

func (c *cluster) exec(ctx context.Context, req Request) (*result.Run, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	for _, h := range req.Topology.Hosts {
		if c.busy[h] {
			c.clash = fmt.Sprintf("%s ran twice at once (%s)", h, req.Label)
		}
		c.busy[h] = true
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		for _, h := range req.Topology.Hosts {
			c.busy[h] = false
		}
		c.mu.Unlock()
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f := 1.0
	for _, h := range req.Topology.Hosts {
		if c.broken[h] {
			return nil, errors.New("launch on " + h + ": connection refused")
		}
		f = min(f, c.factor(h))
	}
	run := &result.Run{Suite: req.Suite}
	names := req.Tests
	if req.Suite == "singlenode" {
		names = []string{"nccl.all_reduce", "nccl.all_gather"}
	}
	for _, name := range names {
		t := result.Test{Name: name, Status: result.Skip, Meanings: declared(name)}
		param, label := "pairs", "pair"
		if c.param != "" {
			param, label = c.param, c.label
		}
		m, ok := req.Params[name+":"+param]
		if !ok && strings.HasPrefix(name, "ibperf.") {
			m, ok = c.hcaMap, true
		}
		if ok {
			a, b := req.Topology.Hosts[0], req.Topology.Hosts[1]
			for _, p := range strings.Split(m, ",") {
				s, cl, _ := strings.Cut(p, ":")
				pf := f * c.hcaF(a+":"+s) * c.hcaF(b+":"+cl)
				if lf, ok := c.link[a+":"+s+"-"+b+":"+cl]; ok {
					pf *= lf
				}
				for _, size := range []int64{65536, 1 << 20, 8 << 20} {
					t.Metrics = append(t.Metrics, result.Judged{Metric: result.Metric{Name: "bw_avg", Unit: "Gb/s", Size: size,
						Value: 390 * pf * float64(size) / (8 << 20), Labels: map[string]string{label: p}}, Status: result.Skip})
				}
			}
		} else {
			for _, size := range []int64{1 << 20, 1 << 30} {
				v := 350 * f * float64(size) / (1 << 30)
				st := result.Skip
				if c.fail > 0 {
					st = result.Pass
					if size == 1<<30 && v < c.fail {
						st = result.Fail
					}
				}
				t.Metrics = append(t.Metrics,
					result.Judged{Metric: result.Metric{Name: "algbw", Unit: "GB/s", Size: size, Value: v / 2}, Status: st},
					result.Judged{Metric: result.Metric{Name: "busbw", Unit: "GB/s", Size: size, Value: v}, Status: st,
						Message: fmt.Sprintf("busbw %.1f GB/s below %.1f", v, c.fail)})
				t.Status = result.Worst(t.Status, st)
			}
		}
		run.Tests = append(run.Tests, t)
	}
	return run, nil
}

func (c *cluster) hcaF(k string) float64 {
	if f, ok := c.hca[k]; ok {
		return f
	}
	return 1
}

func hostsN(n int) []string {
	hs := make([]string, n)
	for i := range hs {
		hs[i] = fmt.Sprintf("n%d", i+1)
	}
	return hs
}

// testSKU judges busbw of the collectives, so runs are compared by it.
var testSKU = func() *sku.SKU {
	s, err := sku.Parse([]byte(`sku: t
gpus_per_node: 8
suites:
  multinode: {nodes: 2, tests: [{test: nccl.all_reduce}]}
baselines:
  - {test: nccl.all_reduce, scope: {nodes: 2, gpus_per_node: 8}, metric: busbw, unit: GB/s, value: 350, size: 1G, band: {min: "-10%"}, source: test}
`), "t.yaml")
	if err != nil {
		panic(err)
	}
	return s
}()

func localise(t *testing.T, cl *cluster, cfg Config, test string, hosts []string) result.Localisation {
	t.Helper()
	cfg.SKU = testSKU
	cl.busy = map[string]bool{}
	cfg.Exec = cl.exec
	cfg.Dir = "/results"
	loc := cfg.Localise(context.Background(), "multinode", test, planTopo(hosts), "failed")
	assert.Equal(t, cl.clash, "", "a round put a node in two runs at once")
	return loc
}

func suspects(l result.Localisation) []string {
	var out []string
	for _, s := range l.Suspects {
		out = append(out, s.Kind+" "+s.Name()+" ("+s.Stage+")")
	}
	return out
}

func TestLocaliseNamesTheSlowNode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n        int
		speed    map[string]float64
		strategy string
		fail     float64
		perNode  bool
		want     []string
		notes    []string
		stages   []string
	}{
		{name: "healthy 4 nodes name nobody", n: 4, perNode: true, stages: []string{"per-node", "pairs"}},
		{name: "4 nodes: per-node and pairs agree", n: 4, perNode: true, speed: map[string]float64{"n3": 0.5},
			want: []string{"node n3 (per-node, pairs)"}, stages: []string{"per-node", "pairs"}},
		{name: "4 nodes, pairs alone (slow only across nodes)", n: 4, speed: map[string]float64{"n2": 0.6},
			want: []string{"node n2 (pairs)"}, notes: []string{"no single-node suite"}},
		{name: "2 nodes: per-node names it, pairs cannot", n: 2, perNode: true, speed: map[string]float64{"n2": 0.5},
			want: []string{"node n2 (per-node)"}, notes: []string{"2 nodes make one pair"}, stages: []string{"per-node"}},
		{name: "6 nodes, two bad", n: 6, speed: map[string]float64{"n2": 0.5, "n5": 0.7},
			want: []string{"node n2 (pairs)", "node n5 (pairs)"}},
		{name: "everyone slow against the baseline: no one node", n: 4, fail: 300, speed: map[string]float64{"n1": 0.5, "n2": 0.5, "n3": 0.5, "n4": 0.5},
			notes: []string{"every run is slow"}},
		{name: "every node slow on its own: no one node", n: 4, perNode: true, fail: 300, speed: map[string]float64{"n1": 0.5, "n2": 0.5, "n3": 0.5, "n4": 0.5},
			notes: []string{"every node is slow on its own", "every run is slow"}},
		{name: "40 nodes by matching and re-pair", n: 40, speed: map[string]float64{"n17": 0.5},
			want: []string{"node n17 (re-pair)"}, stages: []string{"pairs", "re-pair"}},
		{name: "300 nodes by bisection", n: 300, speed: map[string]float64{"n222": 0.5},
			want: []string{"node n222 (re-pair)"}, stages: []string{"bisect", "re-pair"}},
		{name: "bisection with two bad nodes in different halves", n: 64, strategy: Bisect, speed: map[string]float64{"n5": 0.5, "n60": 0.5}, fail: 300,
			want: []string{"node n5 (re-pair)", "node n60 (re-pair)"}},
		{name: "bisection, one bad, asked for", n: 16, strategy: Bisect, speed: map[string]float64{"n9": 0.4},
			want: []string{"node n9 (re-pair)"}},
		{name: "slow only when both halves run (fabric)", n: 8, strategy: Bisect, fail: 400,
			notes: []string{"no half ran at full speed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := &cluster{speed: tc.speed, fail: tc.fail}
			cfg := Config{Strategy: tc.strategy, Seed: 7}
			if tc.perNode {
				cfg.NodeSuite = "singlenode"
			}
			loc := localise(t, cl, cfg, "nccl.all_reduce", hostsN(tc.n))
			assert.DeepEqual(t, suspects(loc), tc.want)
			for _, want := range tc.notes {
				assert.Assert(t, strings.Contains(strings.Join(loc.Notes, "\n"), want), "notes %q lack %q", loc.Notes, want)
			}
			var stages []string
			for _, s := range loc.Stages {
				stages = append(stages, s.Name)
				for _, r := range s.Runs {
					assert.Assert(t, strings.HasPrefix(r.Dir, "localise/nccl.all_reduce/"+s.Name+"/"), r.Dir)
				}
			}
			if tc.stages != nil {
				assert.DeepEqual(t, stages, tc.stages)
			}
			for _, s := range loc.Suspects {
				assert.Assert(t, len(s.Evidence) > 0, "suspect %s has no evidence", s.Name())
			}
		})
	}
}

// The bisection's cost: O(log n) levels of 2 runs per slow set, plus the
// re-pairing of the last few nodes.
func TestBisectionIsLogarithmic(t *testing.T) {
	cl := &cluster{speed: map[string]float64{"n700": 0.5}}
	loc := localise(t, cl, Config{}, "nccl.all_reduce", hostsN(1024))
	assert.DeepEqual(t, suspects(loc), []string{"node n700 (re-pair)"})
	assert.Equal(t, loc.Strategy, Bisect)
	assert.Equal(t, loc.Stages[0].Rounds, 9)
	assert.Equal(t, len(loc.Stages[0].Runs), 18)
	assert.Assert(t, len(cl.reqs) <= 18+3, "%d runs", len(cl.reqs))
}

func TestEvidenceNamesRunsAndNumbers(t *testing.T) {
	cl := &cluster{speed: map[string]float64{"n3": 0.5}}
	loc := localise(t, cl, Config{NodeSuite: "singlenode"}, "nccl.all_reduce", hostsN(4))
	assert.Equal(t, len(loc.Suspects), 1)
	ev := strings.Join(loc.Suspects[0].Evidence, "\n")
	for _, want := range []string{
		"per-node round 1, nccl.all_reduce on n3: peak busbw 175.0 GB/s is 50% below the reference 350.0 GB/s (localise/nccl.all_reduce/per-node/n3)",
		"pairs round 1, nccl.all_reduce on n2+n3: peak busbw 175.0 GB/s",
	} {
		assert.Assert(t, strings.Contains(ev, want), "evidence lacks %q:\n%s", want, ev)
	}
	// Every pair run of n3 is slow, none of the others'.
	for _, r := range loc.Stages[1].Runs {
		assert.Equal(t, r.Slow, strings.Contains(strings.Join(r.Hosts, "+"), "n3"), "%v", r.Hosts)
		assert.Equal(t, r.Reference, 350.0) // upper quartile of 3 pairs at 350 and 3 at 175
	}
}

// A run that could not start (a host outside the partition, a bad
// parameter) measured nothing: its nodes are not named for it, the
// localisation says so and ends as an error, not a hardware failure.
func TestErroredRunsNameNobody(t *testing.T) {
	cl := &cluster{broken: map[string]bool{"n4": true}}
	loc := localise(t, cl, Config{NodeSuite: "singlenode"}, "nccl.all_reduce", hostsN(4))
	assert.Assert(t, len(loc.Suspects) == 0, "%v", suspects(loc))
	notes := strings.Join(loc.Notes, "\n")
	assert.Assert(t, strings.Contains(notes, "4 run(s) could not run or be parsed and count for nothing; every one of them ran on n4 (first: error: launch on n4: connection refused)"), notes)
	assert.Equal(t, loc.Verdict(), result.Error)
	assert.Equal(t, loc.Incomplete(), "4 of 13 runs could not run or be parsed and count for nothing")

	// A slow node is still named beside a node whose runs error.
	cl = &cluster{broken: map[string]bool{"n4": true}, speed: map[string]float64{"n2": 0.5}}
	loc = localise(t, cl, Config{NodeSuite: "singlenode"}, "nccl.all_reduce", hostsN(5))
	assert.DeepEqual(t, suspects(loc), []string{"node n2 (per-node, pairs)"})
	assert.Equal(t, loc.Verdict(), result.Fail)
}

func TestNICPairs(t *testing.T) {
	hcas := []string{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}
	hcaMap := func(test string) (HCAMap, bool) {
		return HCAMap{Map: "mlx5_0:mlx5_0", Param: "pairs", Label: "pair"}, test == "ibperf.write_bw"
	}
	for _, tc := range []struct {
		name      string
		hca       map[string]float64
		link      map[string]float64
		want      []string
		slowCells int
	}{
		{name: "healthy"},
		{name: "a bad HCA on the client node", hca: map[string]float64{"n2:mlx5_1": 0.3}, want: []string{"hca n2 HCA mlx5_1 (nic-pairs)"}, slowCells: 4},
		{name: "a bad HCA on the server node", hca: map[string]float64{"n1:mlx5_3": 0.5}, want: []string{"hca n1 HCA mlx5_3 (nic-pairs)"}, slowCells: 4},
		{name: "one bad path", link: map[string]float64{"n1:mlx5_2-n2:mlx5_0": 0.5}, want: []string{"link n1:mlx5_2 <-> n2:mlx5_0 (nic-pairs)"}, slowCells: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := &cluster{hca: tc.hca, link: tc.link}
			loc := localise(t, cl, Config{HCAMap: hcaMap, NICs: hcas}, "ibperf.write_bw", hostsN(2))
			assert.DeepEqual(t, suspects(loc), tc.want)
			st := loc.Stages[len(loc.Stages)-1]
			assert.Equal(t, st.Name, "nic-pairs")
			assert.Equal(t, st.Rounds, 4)
			assert.Equal(t, st.Runs[1].NICs, "mlx5_0:mlx5_1,mlx5_1:mlx5_2,mlx5_2:mlx5_3,mlx5_3:mlx5_0")
			assert.Equal(t, cl.reqs[1].Params["ibperf.write_bw:pairs"], st.Runs[1].NICs)
			slowCells := 0
			for _, r := range st.Runs {
				assert.Equal(t, len(r.NICFigures), 4)
				for _, f := range r.NICFigures {
					if f.Slow {
						slowCells++
					}
				}
			}
			assert.Equal(t, slowCells, tc.slowCells)
		})
	}
	// Without --nics, a one-pair map cannot be compared HCA by HCA.
	loc := localise(t, &cluster{}, Config{HCAMap: hcaMap}, "ibperf.write_bw", hostsN(2))
	assert.Assert(t, strings.Contains(strings.Join(loc.Notes, "\n"), "give every node's HCAs (--nics)"), "%q", loc.Notes)
}

// The nic-pairs stage sets the parameter and reads the label the plugin
// declares, whatever their names: a plugin whose map parameter is
// "nic_map" and whose pair label is "link" is localised HCA by HCA too.
func TestNICPairsUseTheDeclaredNames(t *testing.T) {
	cl := &cluster{hca: map[string]float64{"n2:mlx5_1": 0.3}, param: "nic_map", label: "link"}
	hcaMap := func(string) (HCAMap, bool) {
		return HCAMap{Map: "mlx5_0:mlx5_0", Param: "nic_map", Label: "link"}, true
	}
	loc := localise(t, cl, Config{HCAMap: hcaMap, NICs: []string{"mlx5_0", "mlx5_1"}}, "other.bw", hostsN(2))
	assert.DeepEqual(t, suspects(loc), []string{"hca n2 HCA mlx5_1 (nic-pairs)"})
	last := cl.reqs[len(cl.reqs)-1]
	assert.Equal(t, last.Params["other.bw:nic_map"], "mlx5_0:mlx5_1,mlx5_1:mlx5_0")
	assert.Equal(t, len(loc.Stages[len(loc.Stages)-1].Runs[0].NICFigures), 2)
}

// A node named by the pairs stage is then examined HCA by HCA beside a node
// that was not named.
func TestNICPairsFollowTheNamedNode(t *testing.T) {
	cl := &cluster{hca: map[string]float64{"n3:mlx5_1": 0.3}, hcaMap: "mlx5_0:mlx5_0,mlx5_1:mlx5_1"}
	hcaMap := func(string) (HCAMap, bool) {
		return HCAMap{Map: "mlx5_0:mlx5_0,mlx5_1:mlx5_1", Param: "pairs", Label: "pair"}, true
	}
	loc := localise(t, cl, Config{HCAMap: hcaMap}, "ibperf.write_bw", hostsN(4))
	assert.DeepEqual(t, suspects(loc), []string{"node n3 (pairs)", "hca n3 HCA mlx5_1 (nic-pairs)"})
}

func TestCancelKeepsWhatWasFound(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cl := &cluster{speed: map[string]float64{"n2": 0.5}, busy: map[string]bool{}}
	cfg := Config{NodeSuite: "singlenode", Dir: "/r", Exec: func(c context.Context, req Request) (*result.Run, error) {
		run, err := cl.exec(c, req)
		if req.Stage == "per-node" {
			cancel()
		}
		return run, err
	}}
	loc := cfg.Localise(ctx, "multinode", "nccl.all_reduce", planTopo(hostsN(4)), "failed")
	assert.Assert(t, strings.Contains(strings.Join(loc.Notes, "\n"), "stopped early (interrupted"), "%q", loc.Notes)
	assert.Equal(t, loc.Stages[0].Name, "per-node")
	assert.Equal(t, len(loc.Stages), 1)
}

func TestScheduleText(t *testing.T) {
	var b bytes.Buffer
	c := Config{NodeSuite: "singlenode", HCAMap: func(string) (HCAMap, bool) { return HCAMap{Map: "mlx5_0:mlx5_0", Param: "pairs", Label: "pair"}, true }}
	assert.NilError(t, c.Schedule("ibperf.write_bw", hostsN(4)).Write(&b, 0))
	assert.NilError(t, c.Schedule("nccl.all_reduce", hostsN(40)).Write(&b, 2))
	assert.NilError(t, c.Schedule("nccl.all_reduce", hostsN(1024)).Write(&b, 0))
	assert.NilError(t, c.Schedule("nccl.all_reduce", hostsN(2)).Write(&b, 0))
	// --nics: the rounds are over every node's HCAs, as the stage runs
	// them, not the test's one-pair map (which alone compares nothing).
	c.NICs = []string{"mlx5_0", "mlx5_1", "mlx5_2"}
	assert.NilError(t, c.Schedule("ibperf.write_bw", hostsN(2)).Write(&b, 0))
	golden.Assert(t, b.String(), "schedule.golden")
}

// The schedule's nic-pairs rounds are the maps the stage sets, round by
// round: --nics honoured (before, the schedule named the test's map only).
func TestScheduleNICRoundsAreTheStage(t *testing.T) {
	hcas := []string{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}
	hcaMap := func(string) (HCAMap, bool) { return HCAMap{Map: "mlx5_0:mlx5_0", Param: "pairs", Label: "pair"}, true }
	cl := &cluster{}
	loc := localise(t, cl, Config{HCAMap: hcaMap, NICs: hcas}, "ibperf.write_bw", hostsN(2))
	var ran []string
	for _, st := range loc.Stages {
		if st.Name == "nic-pairs" {
			for _, r := range st.Runs {
				ran = append(ran, r.NICs)
			}
		}
	}
	s := (&Config{HCAMap: hcaMap, NICs: hcas}).Schedule("ibperf.write_bw", hostsN(2))
	assert.Assert(t, len(ran) == 4, "%v", ran)
	assert.DeepEqual(t, s.NICRounds, ran)
	assert.Assert(t, s.NICsGiven)
}

// The target: the schedule of 1024 nodes in well under a second.
// Every pair of 1024 nodes (asked for: --localise-strategy pairs) is the
// largest schedule; go test -bench Schedule ./framework/localise.
func BenchmarkSchedule1024(b *testing.B) {
	hosts := hostsN(1024)
	for _, strategy := range []string{Pairs, Matching, Bisect} {
		c := Config{Strategy: strategy, NodeSuite: "singlenode"}
		b.Run(strategy, func(b *testing.B) {
			for b.Loop() {
				s := c.Schedule("nccl.all_reduce", hosts)
				if err := s.Write(&bytes.Buffer{}, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func planTopo(hosts []string) plan.Topology {
	return plan.Topology{Scope: plan.Scope{Nodes: len(hosts), GPUsPerNode: 8}, Hosts: hosts}
}

// One node at half speed is named, alone, whatever the node count and the
// strategy.
func TestOneBadNodeAnySize(t *testing.T) {
	for _, strategy := range []string{Pairs, Matching, Bisect} {
		for n := 3; n <= 24; n++ {
			for _, bad := range []int{1, n/2 + 1, n} {
				h := fmt.Sprintf("n%d", bad)
				cl := &cluster{speed: map[string]float64{h: 0.5}}
				loc := localise(t, cl, Config{Strategy: strategy, Seed: uint64(n)}, "nccl.all_reduce", hostsN(n))
				got := suspects(loc)
				if len(got) != 1 || !strings.HasPrefix(got[0], "node "+h+" ") {
					t.Errorf("%s, %d nodes, %s slow: named %q, notes %q", strategy, n, h, got, loc.Notes)
				}
			}
		}
	}
}

// An HCA map's sides, in order of first mention; a lone name pairs with
// itself, as ibperf's pairs parameter takes it.
func TestHCASides(t *testing.T) {
	for _, c := range []struct {
		m                string
		servers, clients []string
	}{
		{"ionic_7:ionic_1", []string{"ionic_7"}, []string{"ionic_1"}},
		{"ionic_0,ionic_1", []string{"ionic_0", "ionic_1"}, []string{"ionic_0", "ionic_1"}},
		{"mlx5_0:mlx5_1, mlx5_2", []string{"mlx5_0", "mlx5_2"}, []string{"mlx5_1", "mlx5_2"}},
		{":,a:,:b,,", nil, nil},
	} {
		s, cl := hcaSides(c.m)
		assert.DeepEqual(t, s, c.servers)
		assert.DeepEqual(t, cl, c.clients)
	}
}

func FuzzHCASides(f *testing.F) {
	f.Add("ionic_7:ionic_1")
	f.Add("mlx5_0:mlx5_0,mlx5_1:mlx5_1, mlx5_2:mlx5_3")
	f.Add(":,a:,:b,,")
	f.Fuzz(func(t *testing.T, m string) {
		s, c := hcaSides(m)
		for _, x := range append(s, c...) {
			if x == "" || strings.ContainsAny(x, ",") {
				t.Fatalf("%q: side %q", m, x)
			}
		}
	})
}

// Two slow nodes of unequal speed (0.5 and 0.6) are both named under every
// strategy: the slower one must not hide the other (bisection once took the
// 0.6 node's half for healthy beside the 0.5 node's).
func TestTwoBadNodesAnySize(t *testing.T) {
	for _, strategy := range []string{Pairs, Matching, Bisect} {
		for n := 6; n <= 40; n++ {
			for _, bad := range [][2]int{{1, 2}, {1, n}, {n / 3, 2 * n / 3}} {
				a, b := fmt.Sprintf("n%d", bad[0]), fmt.Sprintf("n%d", bad[1])
				cl := &cluster{speed: map[string]float64{a: 0.5, b: 0.6}}
				loc := localise(t, cl, Config{Strategy: strategy, Seed: uint64(n)}, "nccl.all_reduce", hostsN(n))
				var got []string
				for _, s := range loc.Suspects {
					got = append(got, s.Host)
				}
				if fmt.Sprint(got) != fmt.Sprint([]string{a, b}) {
					t.Errorf("%s, %d nodes, %s and %s slow: named %q, notes %q", strategy, n, a, b, got, loc.Notes)
				}
			}
		}
	}
}

// declared returns what the built-in plugin of test (full name) declares
// its metrics mean, as a run keeps it (runner.Meanings): the figure runs
// are compared by is read from it.
func declared(test string) []result.Meaning {
	if test == "other.bw" {
		// TestNICPairsUseTheDeclaredNames' plugin of other names.
		return []result.Meaning{{Name: "bw_avg", Unit: "Gb/s", Better: result.BetterHigher}}
	}
	for _, p := range []pluginapi.Plugin{nccl.Plugin{}, ibperf.Plugin{}} {
		d, err := p.Describe(context.Background())
		if err != nil {
			panic(err)
		}
		for _, ti := range d.Tests {
			if d.Name+"."+ti.Name == test {
				return ti.Meanings()
			}
		}
	}
	return nil
}

// Runs are compared by a metric its plugin declares better higher,
// whatever its unit: tokens/s is one the framework never saw, and a GB/s
// metric whose plugin declares no direction is no figure.
func TestFigureFollowsDeclarations(t *testing.T) {
	point := func(name, unit string, v float64, labels map[string]string) result.Judged {
		return result.Judged{Metric: result.Metric{Name: name, Unit: unit, Value: v, Labels: labels}}
	}
	ms := []result.Judged{
		point("step_time", "s", 0.9, nil),
		point("tokens", "tokens/s", 1500, map[string]string{"model": "a"}),
		point("tokens", "tokens/s", 700, map[string]string{"model": "b"}),
		point("bw", "GB/s", 300, nil),
	}
	for _, c := range []struct {
		name     string
		meanings []result.Meaning
		want     string
		value    float64
	}{
		{"declared better higher", []result.Meaning{{Name: "step_time", Unit: "s", Better: result.BetterLower}, {Name: "tokens", Unit: "tokens/s", Better: result.BetterHigher, Record: true}}, "tokens", 700},
		{"recorded one first", []result.Meaning{{Name: "bw", Unit: "GB/s", Better: result.BetterHigher}, {Name: "tokens", Unit: "tokens/s", Better: result.BetterHigher, Record: true}}, "tokens", 700},
		{"a time is no figure", []result.Meaning{{Name: "step_time", Unit: "s", Better: result.BetterLower}}, "", 0},
		{"nothing declared", nil, "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, name, _, ok := figure(nil, result.Test{Name: "train.step", Metrics: ms, Meanings: c.meanings})
			assert.Equal(t, name, c.want)
			assert.Equal(t, ok, c.want != "")
			assert.Equal(t, v, c.value, "the lowest series' peak")
		})
	}
}
