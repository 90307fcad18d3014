package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	gojunit "github.com/joshdk/go-junit"
	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// The localisations below are built by hand the way issue 9's localiser
// fills them; their figures are of the order real runs give (H200 8-GPU
// all_reduce ~480 GB/s busbw in a node, ~360 GB/s over 8x400G between
// nodes; ib_write_bw ~390 Gb/s per 400G HCA pair).

// locTest is the multi-node test a localisation starts from.
func locTest(name, scope string, st result.Status, msg string) result.Test {
	return result.Test{Name: name, Status: st, Scope: mustScope(scope), Message: msg, Duration: 40 * time.Second, Metrics: []result.Judged{}}
}

func locRun(suite, scope string, hosts []string, tests []result.Test, locs ...result.Localisation) *result.Run {
	r := &result.Run{SKU: "h200", Suite: suite, Launcher: "slurm", Scope: mustScope(scope), Hosts: hosts,
		Started: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Duration: 14 * time.Minute, Version: "test",
		Tests: tests, Localisations: locs}
	r.Finish()
	return r
}

// mustScope reads a scope as results.json writes it ("2x8").
func mustScope(text string) plan.Scope {
	s, err := plan.ParseScope(text)
	if err != nil {
		panic(err)
	}
	return s
}

func hostsN(n int) []string {
	w := len(fmt.Sprint(n))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("n%0*d", w, i+1)
	}
	return out
}

// pairRun is one run of a pair stage: figure against reference, slow when
// it falls more than 10% below.
func pairRun(stage string, round int, a, b string, figure, ref float64, test string) result.SubRun {
	r := result.SubRun{Round: round, Test: test, Hosts: []string{a, b}, Status: result.Pass, Figure: figure, FigureName: "busbw", Unit: "GB/s",
		Reference: ref, Dir: fmt.Sprintf("localise/%s/%s/r%d-%s-%s", test, stage, round, a, b)}
	if figure < ref*0.9 {
		r.Slow, r.Status = true, result.Fail
		r.Why = fmt.Sprintf("busbw %.1f GB/s is %.0f%% below the stage median %.1f GB/s", figure, (1-figure/ref)*100, ref)
	}
	return r
}

// perNode2 is a 2-node nccl.all_reduce that failed; the single-node suite
// on each node finds n2 slow.
func perNode2() *result.Run {
	hosts := []string{"n1", "n2"}
	ref := 478.9
	loc := result.Localisation{Test: "nccl.all_reduce", Hosts: hosts, Reason: "failed", Strategy: "pairs", Tolerance: 0.1,
		Stages: []result.Stage{{Name: "per-node", Rounds: 1, Runs: []result.SubRun{
			{Round: 1, Test: "suite singlenode", Hosts: []string{"n1"}, Status: result.Pass, Figure: 481.2, FigureName: "busbw", Unit: "GB/s", Reference: ref, Dir: "localise/nccl.all_reduce/per-node/r1-n1"},
			{Round: 1, Test: "suite singlenode", Hosts: []string{"n2"}, Status: result.Fail, Figure: 171.3, FigureName: "busbw", Unit: "GB/s", Reference: ref, Slow: true,
				Why: "nccl.all_reduce busbw out-of-place 171.3 GB/s at 4 GiB below 431.0 (baseline 478.9 -10%)", Dir: "localise/nccl.all_reduce/per-node/r1-n2"},
		}}},
		Suspects: []result.Suspect{{Kind: "node", Host: "n2", Stage: "per-node", Reason: "the single-node suite failed on n2 and passed on n1",
			Evidence: []string{"per-node round 1 n2: FAIL, busbw 171.3 GB/s against 478.9 GB/s (baseline), localise/nccl.all_reduce/per-node/r1-n2",
				"per-node round 1 n1: PASS, busbw 481.2 GB/s, localise/nccl.all_reduce/per-node/r1-n1"}}},
		Notes: []string{"2 nodes make one pair: the pair stage has nothing to compare"}}
	return locRun("multinode", "2x8", hosts, []result.Test{locTest("nccl.all_reduce", "2x8", result.Fail,
		"busbw out-of-place 168.2 GB/s at 8 GiB below 324.0 (baseline 360.0 -10%)")}, loc)
}

// roundRobin are the rounds of every pair of n hosts (circle method):
// n-1 rounds of n/2 disjoint pairs (n even).
func roundRobin(hosts []string) [][][2]string {
	n := len(hosts)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	var rounds [][][2]string
	for r := 0; r < n-1; r++ {
		var round [][2]string
		for i := 0; i < n/2; i++ {
			a, b := idx[i], idx[n-1-i]
			if a > b {
				a, b = b, a
			}
			round = append(round, [2]string{hosts[a], hosts[b]})
		}
		rounds = append(rounds, round)
		// Keep the first fixed, rotate the rest.
		last := idx[n-1]
		copy(idx[2:], idx[1:n-1])
		idx[1] = last
	}
	return rounds
}

// pairs4 is a 4-node rccl.all_reduce that failed; every pair in 3 rounds
// names n3, in all 3 of its pairs.
func pairs4() *result.Run {
	hosts := hostsN(4)
	const ref = 92.5
	var st result.Stage
	st.Name = "pairs"
	for r, round := range roundRobin(hosts) {
		st.Rounds++
		for _, p := range round {
			fig := 93.1 - float64(r)*0.4
			if p[0] == "n3" || p[1] == "n3" {
				fig = 41.7 + float64(r)*0.3
			}
			st.Runs = append(st.Runs, pairRun("pairs", r+1, p[0], p[1], fig, ref, "rccl.all_reduce"))
		}
	}
	var ev []string
	for _, r := range st.Runs {
		if r.Slow {
			ev = append(ev, fmt.Sprintf("pairs round %d %s: busbw %.1f GB/s against median %.1f GB/s, %s", r.Round, r.Hosts[0]+","+r.Hosts[1], r.Figure, r.Reference, r.Dir))
		}
	}
	loc := result.Localisation{Test: "rccl.all_reduce", Hosts: hosts, Reason: "failed", Strategy: "pairs", Tolerance: 0.1,
		Stages: []result.Stage{{Name: "per-node", Rounds: 1, Runs: func() []result.SubRun {
			var rs []result.SubRun
			for _, h := range hosts {
				rs = append(rs, result.SubRun{Round: 1, Test: "suite singlenode", Hosts: []string{h}, Status: result.Pass, Figure: 301.4, FigureName: "busbw", Unit: "GB/s", Reference: 301.4, Dir: "localise/rccl.all_reduce/per-node/r1-" + h})
			}
			return rs
		}()}, st},
		Suspects: []result.Suspect{{Kind: "node", Host: "n3", Stage: "pairs", Reason: "every pair with n3 was slow (3 of 3), no pair without it", Evidence: ev}}}
	return locRun("multinode", "4x8", hosts, []result.Test{locTest("rccl.all_reduce", "4x8", result.Fail,
		"busbw out-of-place 40.2 GB/s at 8 GiB below 81.0 (baseline 90.0 -10%)")}, loc)
}

// nicPairs2 is ibperf.write_bw between two nodes, localised on request:
// 4 rounds of 4 HCA pairs at once (server HCA i with client HCA i+r); every
// pair through n1's mlx5_2 is slow.
func nicPairs2() *result.Run {
	hosts := []string{"n1", "n2"}
	hcas := []string{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}
	const ref = 391.8
	st := result.Stage{Name: "nic-pairs", Rounds: 4}
	var ev []string
	for r := 0; r < 4; r++ {
		run := result.SubRun{Round: r + 1, Test: "ibperf.write_bw", Hosts: hosts, Status: result.Pass, FigureName: "bw_peak", Unit: "Gb/s",
			Reference: ref, Dir: fmt.Sprintf("localise/ibperf.write_bw/nic-pairs/r%d-n1-n2", r+1), Figure: math.Inf(1)}
		var pairs []string
		for i, s := range hcas {
			c := hcas[(i+r)%4]
			fig := 392.4 - float64(i)*0.3
			if s == "mlx5_2" {
				fig = 183.6 + float64(r)
			}
			nf := result.NICFigure{Server: s, Client: c, Figure: fig, Slow: fig < ref*0.9}
			run.NICFigures = append(run.NICFigures, nf)
			pairs = append(pairs, s+":"+c)
			run.Figure = math.Min(run.Figure, fig)
			if nf.Slow {
				ev = append(ev, fmt.Sprintf("nic-pairs round %d n1:%s -> n2:%s: %.1f Gb/s against %.1f Gb/s, %s", r+1, s, c, fig, ref, run.Dir))
			}
		}
		run.NICs = strings.Join(pairs, ",")
		run.Slow, run.Status = true, result.Fail
		run.Why = fmt.Sprintf("pair mlx5_2:%s %.1f Gb/s is %.0f%% below the stage median %.1f Gb/s", hcas[(2+r)%4], run.Figure, (1-run.Figure/ref)*100, ref)
		st.Runs = append(st.Runs, run)
	}
	loc := result.Localisation{Test: "ibperf.write_bw", Hosts: hosts, Reason: "asked", Strategy: "pairs", Tolerance: 0.1,
		Stages: []result.Stage{st},
		Suspects: []result.Suspect{{Kind: "hca", Host: "n1", HCA: "mlx5_2", Stage: "nic-pairs",
			Reason: "n1 mlx5_2 was slow with all 4 HCAs of n2, every other HCA pair ran at line rate", Evidence: ev}}}
	return locRun("multinode", "2x8", hosts, []result.Test{locTest("ibperf.write_bw", "2x8", result.Pass, "8 pairs inside their bands")}, loc)
}

// noSuspect2 is a localisation asked for on a healthy 2-node run.
func noSuspect2() *result.Run {
	r := perNode2()
	r.Tests[0].Status, r.Tests[0].Message = result.Pass, "busbw out-of-place 361.4 GB/s at 8 GiB inside its band"
	l := &r.Localisations[0]
	l.Reason = "asked"
	l.Suspects = nil
	run := &l.Stages[0].Runs[1]
	run.Status, run.Figure, run.Slow, run.Why = result.Pass, 479.6, false, ""
	r.Finish()
	return r
}

// matching1024 is a 1024-node nccl.all_reduce with three slow nodes:
// random matchings (3 rounds of 512 pairs) and a re-pairing of each suspect
// with two known-good nodes. The table must stay short.
func matching1024() *result.Run {
	hosts := hostsN(1024)
	bad := map[int]bool{99: true, 516: true, 899: true}
	const ref = 358.7
	pairs := result.Stage{Name: "pairs", Rounds: 3}
	for r := 1; r <= 3; r++ {
		for i := 0; i < 1024; i++ {
			j := i ^ r
			if j < i {
				continue
			}
			fig := 359.1 - float64(i%7)*0.2
			if bad[i] || bad[j] {
				fig = 201.5 + float64(r)
			}
			pairs.Runs = append(pairs.Runs, pairRun("pairs", r, hosts[i], hosts[j], fig, ref, "nccl.all_reduce"))
		}
	}
	repair := result.Stage{Name: "re-pair", Rounds: 2}
	var suspects []result.Suspect
	for _, i := range []int{99, 516, 899} {
		var ev []string
		for r, good := range []int{0, 1} {
			run := pairRun("re-pair", r+1, hosts[i], hosts[good], 202.9, ref, "nccl.all_reduce")
			repair.Runs = append(repair.Runs, run)
			ev = append(ev, fmt.Sprintf("re-pair round %d %s,%s: busbw %.1f GB/s against %.1f GB/s, %s", r+1, hosts[i], hosts[good], run.Figure, ref, run.Dir))
		}
		suspects = append(suspects, result.Suspect{Kind: "node", Host: hosts[i], Stage: "re-pair",
			Reason: fmt.Sprintf("slow in all 3 matchings and with 2 known-good nodes (%s, %s)", hosts[0], hosts[1]), Evidence: ev})
	}
	loc := result.Localisation{Test: "nccl.all_reduce", Hosts: hosts, Reason: "failed", Strategy: "matching", Tolerance: 0.1,
		Stages: []result.Stage{pairs, repair}, Suspects: suspects,
		Notes: []string{"1021 nodes were in a pair at the expected speed at least once and are cleared"}}
	return locRun("multinode", "1024x8", hosts, []result.Test{locTest("nccl.all_reduce", "1024x8", result.Fail,
		"busbw out-of-place 199.8 GB/s at 8 GiB below 324.0 (baseline 360.0 -10%)")}, loc)
}

// allErrored is a localisation whose every run errored (the scheduler
// refused the nodes): it names nobody and says it could not localise.
func allErrored() *result.Run {
	r := pairs4()
	l := &r.Localisations[0]
	l.Stages = l.Stages[1:]
	l.Suspects = nil
	l.Notes = []string{"pairs: every run errored; check the launcher and the nodes"}
	for i := range l.Stages[0].Runs {
		run := &l.Stages[0].Runs[i]
		run.Status, run.Slow, run.Figure, run.FigureName, run.Unit, run.Reference = result.Error, true, 0, "", "", 0
		run.Why = "error: sbatch: error: Batch job submission failed: Invalid node name specified"
	}
	r.Finish()
	return r
}

// locCases are the localisation runs every report is tested with.
var locCases = []struct {
	name string
	run  func() *result.Run
}{
	{"per-node-2", perNode2},
	{"pairs-4", pairs4},
	{"nic-pairs-hca", nicPairs2},
	{"no-suspect", noSuspect2},
	{"matching-1024", matching1024},
	{"all-errored", allErrored},
}

// The table names each localisation's suspects and lists the slow runs
// only; the 1024-node one stays a screenful.
func TestTableLocalisation(t *testing.T) {
	for _, c := range locCases {
		t.Run(c.name, func(t *testing.T) {
			run := c.run()
			var b bytes.Buffer
			assert.NilError(t, Table(&b, run))
			golden.Assert(t, b.String(), "localise/"+c.name+".table.golden")
			out := b.String()
			l := run.Localisations[0]
			assert.Assert(t, strings.Contains(out, locHeading(l)), out)
			for _, s := range l.Suspects {
				assert.Assert(t, strings.Contains(out, "│ "+s.Name()+" "), "suspect %s not in the table", s.Name())
			}
			if len(l.Suspects) == 0 {
				assert.Assert(t, strings.Contains(out, "no suspect: "), out)
			}
			for _, st := range l.Stages {
				assert.Assert(t, strings.Contains(out, stageSummary(st)+"\n"), out)
				for _, r := range st.Runs {
					// The slow runs are listed by their figure; the good ones are not.
					line := " " + strings.Join(r.Hosts, ",") + " "
					if r.Slow {
						assert.Assert(t, strings.Contains(out, line), "slow run %s not listed", line)
					} else if len(r.Hosts) == 2 {
						assert.Assert(t, !strings.Contains(out, line), "good run %s listed", line)
					}
				}
			}
			lines := strings.Count(out, "\n")
			assert.Assert(t, lines < 80, "%d lines", lines)
			last := out[strings.LastIndex(out[:len(out)-1], "\n")+1:]
			assert.Equal(t, last, Summary(run)+"\n")
		})
	}
}

func TestSummaryNamesSuspects(t *testing.T) {
	cases := []struct {
		name string
		run  *result.Run
		want string
	}{
		{"per-node", perNode2(), "FAIL: SKU h200, suite multinode, scope 2x8, launcher slurm: 1 fail (14m0s); 1 suspect: n2 (nccl.all_reduce)"},
		{"hca, tests passed", nicPairs2(), "FAIL: SKU h200, suite multinode, scope 2x8, launcher slurm: 1 pass (14m0s); 1 suspect: n1 HCA mlx5_2 (ibperf.write_bw)"},
		{"none", noSuspect2(), "PASS: SKU h200, suite multinode, scope 2x8, launcher slurm: 1 pass (14m0s)"},
		{"three", matching1024(), "FAIL: SKU h200, suite multinode, scope 1024x8, launcher slurm: 1 fail (14m0s); 3 suspects: n0100 (nccl.all_reduce), n0517 (nccl.all_reduce), n0900 (nccl.all_reduce)"},
		{"more than five", func() *result.Run {
			r := matching1024()
			r.Localisations = append(r.Localisations, r.Localisations[0], pairs4().Localisations[0])
			return r
		}(), "FAIL: SKU h200, suite multinode, scope 1024x8, launcher slurm: 1 fail (14m0s); 7 suspects: n0100 (nccl.all_reduce), n0517 (nccl.all_reduce), n0900 (nccl.all_reduce), n0100 (nccl.all_reduce), n0517 (nccl.all_reduce), and 2 more"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, Summary(c.run), c.want)
		})
	}
}

func TestMarkdownLocalisation(t *testing.T) {
	for _, c := range locCases {
		t.Run(c.name, func(t *testing.T) {
			run := c.run()
			var b bytes.Buffer
			assert.NilError(t, Markdown(&b, run))
			golden.Assert(t, b.String(), "localise/"+c.name+".md.golden")
			for _, s := range run.Localisations[0].Suspects {
				assert.Assert(t, strings.Contains(b.String(), "| "+mdEscape(s.Name())+" "), s.Name())
				for _, e := range s.Evidence {
					assert.Assert(t, strings.Contains(b.String(), "- "+mdEscape(e)+"\n"), e)
				}
			}
		})
	}
}

// Each localisation is a JUnit testsuite a CI system shows as failing
// for every suspect, with the properties that say what was localised.
func TestJUnitLocalisation(t *testing.T) {
	for _, c := range locCases {
		t.Run(c.name, func(t *testing.T) {
			run := c.run()
			l := run.Localisations[0]
			p := filepath.Join(t.TempDir(), layout.JUnit)
			assert.NilError(t, WriteJUnit(p, run))
			suites, err := gojunit.IngestFile(p)
			assert.NilError(t, err)
			assert.Equal(t, len(suites), len(run.Tests)+1)
			s := suites[len(suites)-1]
			assert.Equal(t, s.Name, "localise "+l.Test)
			want := map[string]string{"test": l.Test, "hosts": strings.Join(l.Hosts, ","), "strategy": l.Strategy, "tolerance": "10%", "reason": l.Reason, "sku": "h200"}
			for _, st := range l.Stages {
				want["stage."+st.Name] = fmt.Sprintf("%s, %s, %d slow", plural(len(st.Runs), "run"), plural(st.Rounds, "round"), slowRuns(st))
			}
			for i, n := range l.Notes {
				want[fmt.Sprintf("note.%d", i+1)] = n
			}
			for k, v := range want {
				assert.Equal(t, s.Properties[k], v, k)
			}
			if len(l.Suspects) == 0 {
				assert.Equal(t, len(s.Tests), 1)
				assert.Equal(t, s.Tests[0].Name, "no suspect")
				if c.name == "all-errored" {
					// Nothing localised is an error in CI, not a pass.
					assert.Equal(t, s.Tests[0].Status, gojunit.StatusError)
					assert.Equal(t, s.Tests[0].Message, "no suspect: every run errored (6 runs), so nothing could be compared (see the notes)")
					assert.Equal(t, s.Properties["status"], "error")
				} else {
					assert.Equal(t, s.Tests[0].Status, gojunit.StatusPassed)
					assert.Equal(t, s.Properties["status"], "pass")
				}
			} else {
				assert.Equal(t, s.Properties["status"], "fail")
			}
			for i, sp := range l.Suspects {
				tc := s.Tests[i]
				assert.Equal(t, tc.Name, "suspect "+sp.Name())
				assert.Equal(t, tc.Status, gojunit.StatusFailed)
				assert.Equal(t, tc.Message, sp.Reason)
				for _, e := range sp.Evidence {
					assert.Assert(t, strings.Contains(tc.Error.Error(), "- "+e+"\n"), "evidence %q not in %q", e, tc.Error)
				}
			}
			// Every sub-run is listed, one line each.
			n := 0
			for _, st := range l.Stages {
				n += len(st.Runs)
			}
			assert.Equal(t, strings.Count(s.SystemOut, " round "), n)
		})
	}
}

func TestJUnitLocalisationGolden(t *testing.T) {
	doc := JUnit(pairs4())
	var b bytes.Buffer
	assert.NilError(t, doc.WriteXML(&b))
	host, _ := os.Hostname()
	golden.Assert(t, strings.ReplaceAll(b.String(), `hostname="`+host+`"`, `hostname="testhost"`), "localise/pairs-4.junit.golden")
}

// report.html has a section per localisation: suspects with evidence,
// every run linked to its own report, the matrices.
func TestHTMLLocalisation(t *testing.T) {
	cases := []struct {
		name     string
		run      *result.Run
		matrices []string // data-kind of each matrix, in order
		cells    map[string]int
	}{
		// 2 nodes: one pair, no per-node matrix (per-node runs are on one host).
		{"per-node-2", perNode2(), nil, nil},
		// 4x4 matrix, 12 cells off the diagonal: the 6 with n3 slow.
		{"pairs-4", pairs4(), []string{"hosts"}, map[string]int{"fail": 6, "pass": 6}},
		{"nic-pairs-hca", nicPairs2(), []string{"nics"}, map[string]int{"fail": 4, "pass": 12}},
		// Not split per HCA pair: every cell a lower bound, the slow runs'
		// cells marked as maybe slow.
		{"nic-pairs not split", func() *result.Run {
			r := nicPairs2()
			for i := range r.Localisations[0].Stages[0].Runs {
				r.Localisations[0].Stages[0].Runs[i].NICFigures = nil
			}
			return r
		}(), []string{"nics"}, map[string]int{"warn": 16}},
		{"no-suspect", noSuspect2(), nil, nil},
		// A matrix of runs that measured nothing, all slow.
		{"all-errored", allErrored(), []string{"hosts"}, map[string]int{"fail": 12}},
		// 1024 hosts: no matrix of the matchings, the runs capped; the
		// re-pairing of 3 suspects with 2 good nodes has one (5 hosts).
		{"matching-1024", matching1024(), []string{"hosts"}, map[string]int{"fail": 12}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			assert.NilError(t, HTML(&b, c.run, nil))
			page := b.String()
			l := c.run.Localisations[0]
			assert.Assert(t, strings.Contains(page, `<section class="localisation" id="l0">`))
			assert.Assert(t, strings.Contains(page, `<a href="#l0">`+l.Test+`: `))
			for _, s := range l.Suspects {
				assert.Assert(t, strings.Contains(page, `<tr class="fail"><td>`+htmlText(s.Name())+`</td>`), s.Name())
				for _, e := range s.Evidence {
					assert.Assert(t, strings.Contains(page, "<li>"+htmlText(e)+"</li>"), e)
				}
			}
			if len(l.Suspects) == 0 {
				assert.Assert(t, strings.Contains(page, `<p class="nosuspect `+string(l.Verdict())+`">no suspect: `))
			}
			kinds := regexp.MustCompile(`<table class="matrix" data-kind="([a-z]+)">`).FindAllStringSubmatch(page, -1)
			var got []string
			for _, k := range kinds {
				got = append(got, k[1])
			}
			assert.DeepEqual(t, got, c.matrices)
			if c.cells != nil {
				m := page[strings.Index(page, `<table class="matrix"`):]
				m = m[:strings.Index(m, "</table>")]
				cells := map[string]int{}
				for _, k := range regexp.MustCompile(`<td class="([a-z]+)"`).FindAllStringSubmatch(m, -1) {
					cells[k[1]]++
				}
				assert.DeepEqual(t, cells, c.cells)
			}
			rows, slow, total := 0, 0, 0
			for _, st := range l.Stages {
				total += len(st.Runs)
				slow += slowRuns(st)
				for _, r := range st.Runs {
					if r.Slow {
						assert.Assert(t, strings.Contains(page, `<a href="`+r.Dir+`/report.html">`+r.Dir+`</a>`), r.Dir)
					}
				}
			}
			rows = strings.Count(page, `<table class="runs">`)
			assert.Equal(t, rows, len(l.Stages))
			shown := strings.Count(page, `/report.html">`)
			assert.Equal(t, strings.Count(page, `</a></td></tr>`), shown)
			if total > maxHTMLRuns {
				assert.Equal(t, shown, maxHTMLRuns+slowRuns(l.Stages[1]))
				assert.Assert(t, strings.Contains(page, fmt.Sprintf("<p>%d more runs at the expected speed are left out here", total-shown)))
			} else {
				assert.Equal(t, shown, total)
			}
			assert.Equal(t, strings.Count(page, `<tr class="fail"><td>`), slow+len(l.Suspects)+failTests(c.run))
		})
	}
}

func failTests(run *result.Run) int {
	n := 0
	for _, t := range run.Tests {
		if t.Status == result.Fail {
			n++
		}
	}
	return n
}

// htmlText escapes s as html/template writes text.
func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&#39;", `"`, "&#34;", "+", "&#43;").Replace(s)
}

// results.json carries the localisations whole (they round-trip) and
// keeps the CLI contract: a top-level status and a tests list.
func TestJSONLocalisation(t *testing.T) {
	for _, c := range locCases {
		t.Run(c.name, func(t *testing.T) {
			run := c.run()
			var b bytes.Buffer
			assert.NilError(t, JSON(&b, run))
			var back result.Run
			assert.NilError(t, json.Unmarshal(b.Bytes(), &back))
			assert.DeepEqual(t, back.Localisations, run.Localisations)
			var doc struct {
				Status string `json:"status"`
				Tests  []struct {
					Name    string            `json:"name"`
					Status  string            `json:"status"`
					Metrics []json.RawMessage `json:"metrics"`
				} `json:"tests"`
				Localisations []struct {
					Test     string `json:"test"`
					Suspects []struct {
						Kind     string   `json:"kind"`
						Host     string   `json:"host"`
						Evidence []string `json:"evidence"`
					} `json:"suspects"`
				} `json:"localisations"`
			}
			assert.NilError(t, json.Unmarshal(b.Bytes(), &doc))
			assert.Equal(t, doc.Status, string(run.Status))
			assert.Equal(t, len(doc.Tests), len(run.Tests))
			assert.Equal(t, doc.Tests[0].Name, run.Tests[0].Name)
			assert.Equal(t, doc.Tests[0].Status, string(run.Tests[0].Status))
			assert.Assert(t, doc.Tests[0].Metrics != nil, "metrics is a list, never null")
			assert.Equal(t, doc.Localisations[0].Test, run.Localisations[0].Test)
			assert.Equal(t, len(doc.Localisations[0].Suspects), len(run.Localisations[0].Suspects))
			// A suspect fails the run, whatever the tests say.
			if len(run.Localisations[0].Suspects) > 0 {
				assert.Equal(t, doc.Status, "fail")
			}
		})
	}
}

// A localisation that names nobody says why, true to its runs.
func TestNoSuspectWording(t *testing.T) {
	inconclusive := pairs4().Localisations[0]
	inconclusive.Suspects = nil
	inconclusive.Notes = []string{"n3 was slow with n2 only once"}
	empty := noSuspect2().Localisations[0]
	empty.Stages, empty.Notes = nil, nil
	cases := []struct {
		name   string
		l      result.Localisation
		want   string
		status result.Status
	}{
		{"nothing slow", noSuspect2().Localisations[0], "no suspect: every run passed its baseline and came within 10% of its reference", result.Pass},
		{"slow runs, no single part", inconclusive, "no suspect: 3 slow runs name no single node, HCA or link (see the notes)", result.Pass},
		{"every run errored", allErrored().Localisations[0], "no suspect: every run errored (6 runs), so nothing could be compared (see the notes)", result.Error},
		{"no run", empty, "no suspect: the localisation made no run", result.Error},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, noSuspect(c.l), c.want)
			assert.Equal(t, c.l.Verdict(), c.status)
		})
	}
}
