package acceptance

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/localise"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// hcaMaps answers, for a test of the suite, the HCA pair map it runs with
// when its plugin declares a parameter that takes one
// (TestInfo.HCAMapParam: ib_write_bw's pairs, SERVER_HCA:CLIENT_HCA,...),
// with that parameter and the pair label. The map is the test's effective
// parameter, suite and command line laid over each other.
func hcaMaps(ctx context.Context, host Plugins, su *sku.Suite, pm map[string]string) func(string) (localise.HCAMap, bool) {
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
// (failed or errored, or all when asked; never a preflight test nor one
// skipped for the bad nodes it found) and adds what it finds to run;
// probe says why the launcher cannot pin runs to hosts, if it cannot.
func localiseTests(ctx context.Context, c *localise.Config, probe func(hosts []string) error, run *result.Run, suite string, topo plan.Topology, always bool, stderr io.Writer) {
	if topo.Nodes < 2 {
		return
	}
	badSkip := result.PreflightSkip(run.BadNodes)
	for _, t := range run.Tests {
		if ctx.Err() != nil {
			return
		}
		// A health test names its node itself, and a test skipped for a
		// bad node ran nowhere: neither has anything to narrow down.
		if t.Preflight || (badSkip != "" && t.Status == result.Skip && t.Message == badSkip) {
			continue
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
