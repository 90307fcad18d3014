package acceptance

// This file: the health check on its own (gpuaccept health): a suite's
// preflight tests, and nothing else, through the run's launcher; and the
// one line a Slurm HealthCheckProgram, Prolog or Epilog prints.

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// HealthSuite picks the suite whose preflight tests a health check runs:
// suite when given (an error when it has none), else the one suite of s
// that has preflight tests (an error naming them when several do, or
// saying none does). It returns the suite and its preflight tests, in
// suite order.
func HealthSuite(ctx context.Context, plugins runner.Plugins, s *sku.SKU, suite string) (string, []string, error) {
	if suite != "" {
		su, ok := s.Suites[suite]
		if !ok {
			return "", nil, fmt.Errorf("SKU %s has no suite %q (known: %s)", s.Name, suite, strings.Join(s.SuiteNames(), ", "))
		}
		tests := runner.PreflightOf(ctx, plugins, su)
		if len(tests) == 0 {
			return "", nil, fmt.Errorf("suite %s of SKU %s has no preflight test (a test whose plugin declares it one, such as health.node)", suite, s.Name)
		}
		return suite, tests, nil
	}
	var found []string
	var tests []string
	names := s.SuiteNames()
	sort.Strings(names)
	for _, n := range names {
		if t := runner.PreflightOf(ctx, plugins, s.Suites[n]); len(t) > 0 {
			found = append(found, n)
			tests = t
		}
	}
	switch len(found) {
	case 0:
		return "", nil, fmt.Errorf("no suite of SKU %s has a preflight test (a test whose plugin declares it one, such as health.node)", s.Name)
	case 1:
		return found[0], tests, nil
	}
	return "", nil, fmt.Errorf("suites %s of SKU %s all have preflight tests: choose one with --suite", strings.Join(found, ", "), s.Name)
}

// Health runs only the preflight tests of o.Suite (o.Only is set to
// them; HealthSuite finds them) and localises nothing: the health check
// of gpuaccept health, whose results folder verify holds to the suite
// like any run's (its other tests left out as a --test choice).
func Health(ctx context.Context, o RunOptions) (*result.Run, error) {
	if o.SKU == nil || o.Plugins == nil {
		return nil, fmt.Errorf("health: Setup.SKU and Setup.Plugins are needed")
	}
	_, tests, err := HealthSuite(ctx, o.Plugins, o.SKU, o.Suite)
	if err != nil {
		return nil, err
	}
	o.Only, o.NoLocalise, o.LocaliseAll = tests, true, false
	return Run(ctx, o)
}

// HealthLine is the one line a Slurm health program prints, and the exit
// code it sets (result.Run.ExitCode): "gpuaccept health: OK" for a run
// that passed (warnings included); "gpuaccept health: FAIL NODE CODE:
// REASON" naming the first bad node (and how many more), "gpuaccept
// health: FAIL NODE: MESSAGE" for a failed check that names no node;
// "gpuaccept health: ERROR NODE: MESSAGE" for a check that could not run
// and "gpuaccept health: SKIP NODE: MESSAGE" when nothing was checked.
// host names the node where a check names none. Slurm drains a node on
// any exit code but 0 and shows the reason it is given; the line is for
// the log (slurmd's, or the prolog's), on one line whatever the messages
// held.
func HealthLine(run *result.Run, host string) (string, int) {
	oneLine := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	code := run.ExitCode()
	if code == result.ExitPass {
		return "gpuaccept health: OK", code
	}
	if len(run.BadNodes) > 0 {
		b := run.BadNodes[0]
		hosts := map[string]bool{}
		for _, o := range run.BadNodes {
			hosts[o.Host] = true
		}
		// The line names the node: a message that starts with it too
		// (health.node's do, for tables) would say it twice.
		what := strings.TrimPrefix(b.Message, b.Host+": ")
		if what == "" {
			what = b.Check
		}
		if b.Code != "" {
			b.Host += " " + b.Code
		}
		more := ""
		if len(hosts) > 1 {
			more = fmt.Sprintf(" (and %s)", result.Count(len(hosts)-1, "more node", "more nodes"))
		}
		if n := len(run.BadNodes) - 1; n > 0 && len(hosts) == 1 {
			more = fmt.Sprintf(" (and %s)", result.Count(n, "more check", "more checks"))
		}
		return oneLine(fmt.Sprintf("gpuaccept health: FAIL %s: %s%s", b.Host, what, more)), code
	}
	msg := "no test ran"
	for _, t := range run.Tests {
		if t.Status == run.Status {
			msg = t.Name + ": " + t.Message
			break
		}
	}
	word := map[result.Status]string{result.Fail: "FAIL", result.Error: "ERROR", result.Skip: "SKIP"}[run.Status]
	if word == "" {
		word = strings.ToUpper(string(run.Status))
	}
	return oneLine(fmt.Sprintf("gpuaccept health: %s %s: %s", word, host, msg)), code
}

// SlurmNode is the name of this node for HealthLine under Slurm: what
// slurmd calls it (SLURMD_NODENAME, set in a prolog, an epilog and the
// HealthCheckProgram), else the host name, else "".
func SlurmNode() string {
	if node := os.Getenv("SLURMD_NODENAME"); node != "" {
		return node
	}
	node, _ := os.Hostname()
	return node
}
