package runner

// This file: preflight tests (pluginapi.TestInfo.Preflight), which run
// first and mark the nodes their failed checks name bad for the rest of
// the run, and how verify re-derives those nodes from raw outputs.

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/judge"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// IsPreflight says whether plugin declares test (short name) a preflight
// test, when plugins is a Describer; false when it is not or the plugin
// cannot say (then the test runs in its place, like any other).
func IsPreflight(ctx context.Context, plugins Plugins, plugin, test string) bool {
	d, ok := plugins.(Describer)
	if !ok {
		return false
	}
	desc, err := d.Describe(ctx, plugin)
	if err != nil {
		return false
	}
	ti, ok := desc.Test(test)
	return ok && ti.Preflight
}

// PreflightOf lists the tests of su (full names, in suite order) that
// their plugins declare preflight tests.
func PreflightOf(ctx context.Context, plugins Plugins, su *sku.Suite) []string {
	var out []string
	for _, st := range su.Tests {
		if p, t, err := SplitName(st.Test); err == nil && IsPreflight(ctx, plugins, p, t) {
			out = append(out, st.Test)
		}
	}
	return out
}

// preflightFirst orders the suite's tests: the preflight ones first, each
// group in suite order, so a node known bad is known before any benchmark
// runs on it.
func preflightFirst(tests []*sku.SuiteTest, pre map[string]bool) []*sku.SuiteTest {
	out := make([]*sku.SuiteTest, 0, len(tests))
	for _, st := range tests {
		if pre[st.Test] {
			out = append(out, st)
		}
	}
	for _, st := range tests {
		if !pre[st.Test] {
			out = append(out, st)
		}
	}
	return out
}

// preflightVerdict judges a preflight test that the baseline has no entry
// for by its checks: a health check measures nothing a band could hold,
// so its checks are its verdict (judge.ByChecks). All passed: pass; some
// could not be made (warnings): warn. A failed check already failed it (the judge's gates),
// and its message then names the nodes and fault codes first; a test
// with no check at all stays as judged (a skip says nothing was
// checked). The run and verify both call it, so both judge alike.
func preflightVerdict(s *sku.SKU, name string, scope plan.Scope, t result.Test) result.Test {
	failed := 0
	for _, c := range t.Checks {
		if !c.OK && !c.Warn {
			failed++
		}
	}
	withHost := t
	withHost.Preflight = true
	if bad := result.PreflightSkip(result.BadNodesOf([]result.Test{withHost})); bad != "" && t.Status == result.Fail {
		// The judge's message names the check, not its node nor code:
		// the node is what the reader must act on.
		t.Message = fmt.Sprintf("%s (%d of %d checks failed)", bad, failed, len(t.Checks))
		return t
	}
	if len(s.Entries(name, scope)) > 0 {
		return t // a site that baselines its health test judges it so
	}
	return judge.ByChecks(t, judge.NoBaseline(s, name, scope))
}

// skippedForBadNodes is the verdict of a test not run because of the bad
// nodes a preflight found (reason: result.PreflightSkip).
func skippedForBadNodes(t result.Test, reason string) result.Test {
	t.Status, t.Message = result.Skip, reason
	return t
}

// PreflightCheck re-derives from a results folder's raw outputs what its
// preflight tests found: it judges each test of run that its plugin
// declares preflight again from raw/ (against s) and returns the skip
// reason its bad nodes give (result.PreflightSkip; "" for none), with one
// message per way the run's record disagrees: a test marked Preflight
// that its plugin does not declare, or the reverse (a skip "for a bad
// node" must not hide a benchmark behind a forged health test), and a
// preflight test whose raw outputs cannot be judged again. Rejudge
// compares the verdicts themselves.
func PreflightCheck(ctx context.Context, plugins Plugins, s *sku.SKU, dir string, run *result.Run) (reason string, diffs []string) {
	var judged []result.Test
	for _, t := range run.Tests {
		name, _, _ := strings.Cut(t.Name, "[")
		p, test, err := SplitName(name)
		if err != nil {
			continue
		}
		declared := IsPreflight(ctx, plugins, p, test)
		switch {
		case t.Preflight && !declared:
			diffs = append(diffs, fmt.Sprintf("%s: recorded as a preflight test, but plugin %s does not declare it one", t.Name, p))
			continue
		case declared && !t.Preflight && t.Message != journal.Interrupted:
			// A test the run never finished (killed, rebuilt from its
			// journal) recorded no flag at all.
			diffs = append(diffs, fmt.Sprintf("%s: plugin %s declares it a preflight test, but the run did not record it as one", t.Name, p))
		}
		if !declared || len(t.Raw) == 0 {
			continue
		}
		got, err := rejudgeTest(ctx, plugins, s, dir, run, t)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: preflight test: %v", t.Name, err))
			continue
		}
		got.Preflight = true
		judged = append(judged, got)
	}
	return result.PreflightSkip(result.BadNodesOf(judged)), diffs
}
