// Package runner drives a suite: for each test it asks the plugin for a
// plan, hands the plan to the launcher, gives the raw outputs back to the
// plugin to parse, and judges the result against the SKU's baseline. It is
// the one place where the data-flow chain suite → plan → launch → parse →
// judge is wired.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/progress"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Plugins is what the runner needs of the plugin host.
type Plugins interface {
	Plan(ctx context.Context, plugin string, req pluginapi.PlanRequest) (plan.Plan, error)
	Parse(ctx context.Context, plugin string, req pluginapi.ParseRequest) (result.Parsed, error)
}

// Runner runs a suite of a SKU through one launcher.
type Runner struct {
	Plugins  Plugins
	Launcher launch.Launcher
	SKU      *sku.SKU
	// Dir is the results folder; raw outputs go to Dir/raw/TEST/.
	Dir string
	// Timeout bounds each test that has no timeout of its own; zero: none.
	Timeout time.Duration
	// Params override suite and test parameters. A plain KEY applies to
	// every test; a key "SCOPE:KEY", where SCOPE is a plugin ("rccl") or a
	// full test name ("rccl.all_reduce"), only to the tests it names, so a
	// suite mixing plugins can be given one plugin's parameters.
	Params map[string]string
	// Only, when set, restricts the run to these test names.
	Only []string
	// DryRun prints the exact commands to Progress instead of running.
	DryRun bool
	// Progress receives one line per test as it starts and ends.
	Progress io.Writer
	// Version is gpuaccept's version, recorded in the result.
	Version string
	// Notes are recorded as the run's (result.Run.Notes), in its journal
	// from the start.
	Notes []string
	// Events, when set, is told when each test starts and ends (live
	// progress); Progress lines are then not written, except in a dry run.
	// Left nil with Progress set, Run writes plain progress lines to
	// Progress (progress.New(Progress, false)), the lines a run shows in a
	// CI log. An Events that is also a Planner is told the planned tests
	// first.
	Events Events
	// Retries is how many more times a test that failed or errored is run;
	// every attempt is kept in the result (Test.Attempts) and a test that
	// passes only on a retry ends as Warn.
	Retries int
	// Baseline is the content of the SKU file that judges the run; it is
	// kept in the results folder (layout.Baseline) for verification.
	Baseline []byte
	// Telemetry samples every node's GPUs beside each test (the telemetry
	// plugin's monitor steps, about 1 Hz): kept in the test's result
	// (result.Test.Telemetry), its samples in raw/TEST/, and a slow
	// number explained by them (judge.Explain).
	Telemetry bool
}

// Events receives a run's progress as it happens.
type Events interface {
	// Started: test began on where (the scope and launcher, in words),
	// bounded by timeout (zero: none); attempt counts from 1.
	Started(test, where string, timeout time.Duration, attempt int)
	// Finished: test ended with this verdict (written to the journal).
	Finished(t result.Test)
}

// Planner is an Events told the names of the tests a run will run before
// the first starts (to size its columns).
type Planner interface {
	Planned(names []string)
}

// SplitName splits "nccl.all_reduce" into plugin and test.
func SplitName(name string) (plugin, test string, err error) {
	p, t, ok := strings.Cut(name, ".")
	if !ok || p == "" || t == "" {
		return "", "", fmt.Errorf("test name %q is not plugin.test", name)
	}
	return p, t, nil
}

// Run runs the named suite at topology topo. The returned error is for
// problems that prevent the run as a whole (unknown suite, results folder
// not writable); problems of single tests end as their Error results.
func (r *Runner) Run(ctx context.Context, suiteName string, topo plan.Topology) (*result.Run, error) {
	su, ok := r.SKU.Suites[suiteName]
	if !ok {
		return nil, fmt.Errorf("SKU %s has no suite %q (known: %s)", r.SKU.Name, suiteName, strings.Join(r.SKU.SuiteNames(), ", "))
	}
	if err := r.checkOnly(su); err != nil {
		return nil, err
	}
	retries := max(r.Retries, 0)
	run := &result.Run{SKU: r.SKU.Name, SKUSource: r.SKU.Source, Suite: suiteName, Launcher: r.Launcher.Name(), Scope: topo.Scope,
		Hosts: topo.Hosts, Started: time.Now().UTC(), Version: r.Version, Dir: r.Dir, Tests: []result.Test{}, Notes: r.Notes, Retries: &retries}
	if len(r.Only) > 0 {
		run.Selected = append([]string(nil), r.Only...)
		sort.Strings(run.Selected)
	}
	// Preflight tests run first, whatever their place in the suite.
	pre := map[string]bool{}
	for _, n := range PreflightOf(ctx, r.Plugins, su) {
		pre[n] = true
	}
	tests := preflightFirst(su.Tests, pre)
	var planned []string
	for _, st := range tests {
		if r.selected(st.Test) {
			planned = append(planned, st.Test)
		}
	}
	if r.Events == nil && r.Progress != nil && !r.DryRun {
		r.Events = progress.New(r.Progress, false)
	}
	if p, ok := r.Events.(Planner); ok && !r.DryRun {
		p.Planned(planned)
	}
	var jw *journal.Writer
	if !r.DryRun {
		if err := safefs.MkdirAll(r.Dir, layout.Raw); err != nil {
			return nil, fmt.Errorf("create results folder: %w", err)
		}
		if len(r.Baseline) > 0 {
			if err := journal.SaveBaseline(r.Dir, r.SKU.Name, r.Baseline); err != nil {
				return nil, err
			}
		}
		var err error
		if jw, err = journal.Create(r.Dir, run, planned); err != nil {
			return nil, err
		}
		defer jw.Close()
	}
	// A journal that cannot be written loses nothing yet (the run goes on
	// and the reports are written at the end), but it must be said.
	journalErr := func(err error) {
		if err != nil && r.Progress != nil {
			fmt.Fprintf(r.Progress, "warning: %v\n", err)
		}
	}
	for _, st := range tests {
		if !r.selected(st.Test) {
			continue
		}
		var t result.Test
		// With one scope for the suite every test runs on every node:
		// once a preflight test found a node bad, no later test runs, so
		// that its slow collectives are not blamed on the fabric.
		bad := ""
		if !pre[st.Test] && st.Skip == "" {
			bad = result.PreflightSkip(result.BadNodesOf(run.Tests))
		}
		switch err := ctx.Err(); {
		case err != nil:
			t = result.Test{Name: st.Test, Status: result.Error, Scope: topo.Scope,
				Message: result.NotRun + notRunWhy(err), Metrics: []result.Judged{}}
		case bad != "":
			t = skippedForBadNodes(result.Test{Name: st.Test, Scope: topo.Scope, Metrics: []result.Judged{}}, bad)
			r.progress("%-24s skip  %s", st.Test, bad)
		default:
			t = r.runWithRetries(ctx, su, st, topo, pre[st.Test], func(a result.Test) {
				if jw != nil {
					journalErr(jw.AddAttempt(a))
				}
			})
		}
		t.Preflight = pre[st.Test]
		run.Tests = append(run.Tests, t)
		if jw != nil {
			journalErr(jw.Add(t))
		}
		if r.Events != nil && !r.DryRun {
			r.Events.Finished(t)
		}
	}
	run.Duration = time.Since(run.Started)
	run.Finish()
	if jw != nil {
		journalErr(jw.End(run.Duration))
	}
	return run, nil
}

// runWithRetries runs a test, and again up to r.Retries times while it
// fails or errors. Earlier attempts keep their raw outputs under
// raw/TEST.attempt-N and are listed in the last attempt's Attempts;
// ended is told each of them as it ends (the journal records it then).
// Every attempt is numbered (result.Test.Attempt).
func (r *Runner) runWithRetries(ctx context.Context, su *sku.Suite, st *sku.SuiteTest, topo plan.Topology, preflight bool, ended func(result.Test)) result.Test {
	var earlier []result.Test
	// What is recorded and shown of a test (messages and diagnostics
	// quoting its output, commands) is masked with what this test's
	// secrets are.
	red := redact.FromEnv(os.Environ(), Params(su.Params, st.Params, ScopedParams(r.Params, st.Test)))
	for attempt := 1; ; attempt++ {
		t := redact.Value(red, r.runTest(ctx, su, st, topo, attempt, preflight))
		if !r.DryRun {
			t.Attempt = attempt
		}
		again := attempt <= r.Retries && (t.Status == result.Fail || t.Status == result.Error) && ctx.Err() == nil && !r.DryRun
		if !again {
			if len(earlier) > 0 {
				t.Attempts = earlier
				if t.Status == result.Pass {
					// Passing only on a retry signs off a flaky system: say so.
					t.Status = result.Warn
					t.Message = fmt.Sprintf("passed on attempt %d of %d; attempt 1: %s", attempt, attempt, earlier[0].Message)
				}
			}
			return t
		}
		if err := r.keepAttempt(&t, attempt); err != nil {
			t.Diagnostics = append(t.Diagnostics, result.Diagnostic{Level: result.Warning, Message: err.Error()})
		}
		ended(t)
		earlier = append(earlier, t)
	}
}

// keepAttempt moves an attempt's raw outputs out of the way of the next.
func (r *Runner) keepAttempt(t *result.Test, attempt int) error {
	from := resultsdir.TestDir(t.Name)
	to := resultsdir.AttemptDir(t.Name, attempt)
	if _, err := safefs.Lstat(r.Dir, from); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := safefs.Rename(r.Dir, from, to); err != nil {
		return fmt.Errorf("keep raw outputs of attempt %d of %s: %w", attempt, t.Name, err)
	}
	oldPrefix := from + string(filepath.Separator)
	newPrefix := to + string(filepath.Separator)
	for i, p := range t.Raw {
		if strings.HasPrefix(p, oldPrefix) {
			t.Raw[i] = newPrefix + strings.TrimPrefix(p, oldPrefix)
		}
	}
	return nil
}

func (r *Runner) checkOnly(su *sku.Suite) error {
	for _, o := range r.Only {
		if !su.Has(o) {
			names := make([]string, len(su.Tests))
			for i, t := range su.Tests {
				names[i] = t.Test
			}
			return fmt.Errorf("test %q is not in the suite (its tests: %s)", o, strings.Join(names, ", "))
		}
	}
	return nil
}

func (r *Runner) selected(name string) bool {
	if len(r.Only) == 0 {
		return true
	}
	for _, o := range r.Only {
		if o == name {
			return true
		}
	}
	return false
}

// Params merges suite, test and command-line parameters, later ones winning.
func Params(layers ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, l := range layers {
		for k, v := range l {
			out[k] = v
		}
	}
	return out
}

// ScopedParams returns the parameters of params that apply to test (full
// name, "nccl.all_reduce"): plain keys, and "SCOPE:KEY" keys whose SCOPE is
// the test's plugin or the test itself, with the scope removed. A scoped key
// wins over the plain one.
func ScopedParams(params map[string]string, test string) map[string]string {
	plugin, _, _ := strings.Cut(test, ".")
	out := map[string]string{}
	for k, v := range params {
		if !strings.Contains(k, ":") {
			out[k] = v
		}
	}
	for k, v := range params {
		if scope, key, ok := strings.Cut(k, ":"); ok && (scope == plugin || scope == test) {
			out[key] = v
		}
	}
	return out
}

func (r *Runner) progress(format string, a ...any) {
	if r.Progress != nil && (r.Events == nil || r.DryRun) {
		fmt.Fprintf(r.Progress, format+"\n", a...)
	}
}

func (r *Runner) runTest(ctx context.Context, su *sku.Suite, st *sku.SuiteTest, topo plan.Topology, attempt int, preflight bool) result.Test {
	start := time.Now()
	params := Params(su.Params, st.Params, ScopedParams(r.Params, st.Test))
	// What is recorded and printed goes through redaction, which also knows
	// the secret values of the environment and the parameters; the plugin
	// and the launcher get the real values.
	red := redact.FromEnv(os.Environ(), params)
	t := result.Test{Name: st.Test, Scope: topo.Scope, Params: red.Params(params), Metrics: []result.Judged{}, Preflight: preflight}
	if reason := st.SkipReason(topo.Scope); reason != "" {
		t.Status, t.Message = result.Skip, reason
		r.progress("%-24s skip  %s", st.Test, reason)
		return t
	}
	pluginName, test, err := SplitName(st.Test)
	if err != nil {
		t.Status, t.Message = result.Error, err.Error()
		return t
	}
	pl, err := r.Plugins.Plan(ctx, pluginName, pluginapi.PlanRequest{Test: test, Params: params, Topology: topo})
	if err != nil {
		t.Status, t.Message = result.Error, "plan: "+err.Error()
		r.progress("%-24s error %s", st.Test, t.Message)
		return t
	}
	if r.Telemetry {
		var note string
		if pl, note = withMonitors(ctx, r.Plugins, pl, topo, nil); note != "" {
			t.Diagnostics = append(t.Diagnostics, result.Diagnostic{Level: result.Warning, Message: note})
		}
	}
	timeout := r.Timeout
	if st.Timeout > 0 {
		timeout = st.Timeout
	}
	dir := filepath.Join(r.Dir, resultsdir.TestDir(st.Test))
	req := launch.Request{Test: st.Test, Plan: pl, Topology: topo, Dir: dir, Root: r.Dir, Timeout: timeout, Redactor: red}
	if r.DryRun {
		cmds, err := r.Launcher.Commands(req)
		if err != nil {
			t.Status, t.Message = result.Error, err.Error()
			r.progress("%-24s error %s", st.Test, t.Message)
			return t
		}
		// A shell (and YAML) comment heads each test's commands: they
		// stay copy-pasteable, and say which test they belong to.
		r.progress("# %s", st.Test)
		for _, c := range cmds {
			t.Commands = append(t.Commands, red.String(c))
			r.progress("%s", red.String(c))
		}
		t.Status, t.Message = result.Skip, "dry run"
		return t
	}
	t.Started = start.UTC()
	if r.Events != nil {
		where := fmt.Sprintf("%s via %s", topo, r.Launcher.Name())
		if len(topo.Hosts) > 0 {
			where = fmt.Sprintf("%s on %s via %s", topo, strings.Join(topo.Hosts, ","), r.Launcher.Name())
		}
		r.Events.Started(st.Test, where, timeout, attempt)
	}
	outs, err := r.Launcher.Launch(ctx, req)
	if err != nil {
		t.Status, t.Message = result.Error, "launch: "+err.Error()
		t.Duration = time.Since(start)
		r.progress("%-24s error %s", st.Test, t.Message)
		return t
	}
	for i := range outs {
		outs[i].Command = red.String(outs[i].Command)
		if outs[i].Command != "" {
			t.Commands = append(t.Commands, outs[i].Command)
		}
	}
	if err := writeOutputs(r.Dir, dir, outs, red); err != nil {
		t.Diagnostics = append(t.Diagnostics, result.Diagnostic{Level: result.Warning, Message: err.Error()})
	}
	work, monitors := splitMonitors(outs)
	work = evidenceRun(work)
	t = r.judge(ctx, t, pluginName, test, params, topo, work)
	// Parsed as verify parses them again: whether or not the run was
	// stopped (Ctrl-C), within the time parsing is given.
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), parseTimeout)
	t = withTelemetry(t, telemetryOf(tctx, r.Plugins, topo, monitors))
	cancel()
	for _, o := range work {
		if len(o.RankHosts) > 0 {
			if t.RankHosts == nil {
				t.RankHosts = map[string][]string{}
			}
			t.RankHosts[o.Step] = o.RankHosts
		}
	}
	if why := stopReason(ctx, timeout, outs, time.Since(start)); why != "" {
		t = stopped(t, why)
	}
	t.Duration = time.Since(start)
	t.Raw = rawPaths(r.Dir, outs)
	r.progress("%-24s %-5s %s (%s)", st.Test, t.Status, t.Message, t.Duration.Round(time.Millisecond))
	return t
}

// evidenceRun drops the evidence steps that did not run (the test ended
// in time: launch.EvidenceNotRun) from a test's outputs: its plugin is
// handed the evidence only of a test that timed out. They stay in
// outputs.json, which says they were planned and why they did not run.
func evidenceRun(outs []plan.Output) []plan.Output {
	kept := outs[:0:0]
	for _, o := range outs {
		if o.Role == plan.Evidence && o.LaunchError == launch.EvidenceNotRun {
			continue
		}
		kept = append(kept, o)
	}
	return kept
}

// notRunWhy says, for a test that was not started because the run's
// context ended (err, its Err), what happened: in words a user knows, not
// "context canceled".
func notRunWhy(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return result.RunTimeUp + " before this test started"
	}
	return result.RunInterrupted + " before this test started"
}

// stopReason says why a test was stopped before its steps ended: the run
// was interrupted (ctx done: Ctrl-C, SIGTERM) or a step hit the test's time
// limit, with what the launcher did about it ("process group killed");
// "" when it was not stopped.
func stopReason(ctx context.Context, timeout time.Duration, outs []plan.Output, took time.Duration) string {
	for _, o := range outs {
		head, rest, _ := strings.Cut(o.LaunchError, "; ")
		if rest != "" {
			rest = "; " + rest
		}
		switch {
		case ctx.Err() != nil && strings.HasPrefix(head, "cancelled"):
			return fmt.Sprintf("%s after %s%s", result.RunInterrupted, took.Round(time.Millisecond), rest)
		case strings.HasPrefix(head, "timed out"):
			return head + " (limit " + timeout.String() + ")" + rest
		case strings.Contains(o.LaunchError, context.DeadlineExceeded.Error()):
			return fmt.Sprintf("timed out after %s (limit %s); %s", took.Round(time.Millisecond), timeout, o.LaunchError)
		}
	}
	if ctx.Err() != nil {
		return fmt.Sprintf("%s after %s", result.RunInterrupted, took.Round(time.Millisecond))
	}
	return ""
}

// stopped makes a stopped test's message say so first: a stop is no parse
// or launch failure of its own. What the plugin said (the step's launch
// error, "context canceled") stays as a diagnostic, unless the test failed
// (its message names what failed, after the stop), and what was measured
// before the stop is kept.
func stopped(t result.Test, why string) result.Test {
	msg := result.Stopped + why
	if n := len(t.Metrics); n > 0 {
		msg += fmt.Sprintf("; the %s measured before the stop %s kept", result.Count(n, "point"), result.Noun(n, "is", "are"))
	} else {
		msg += "; nothing was measured before the stop"
	}
	if t.Status == result.Fail && t.Message != "" {
		// A fail names what failed (the node a hung test's evidence
		// names): the verdict, not a footnote of the stop.
		msg = "stopped: " + why + "; " + unsaid(t.Message, why)
	} else if t.Message != "" {
		t.Diagnostics = append(t.Diagnostics, result.Diagnostic{Level: result.Info, Message: "as judged: " + t.Message})
	}
	if t.Status != result.Error && t.Status != result.Fail {
		// A step cut short is no whole measurement, whatever its points.
		t.Status = result.Error
	}
	t.Message = msg
	return t
}

// unsaid is msg without the "; "-separated parts why says already (a
// plugin that quotes its step's launch error, "timed out after 3.7s;
// process group killed", would say the stop twice); why's "(limit D)"
// is not part of what it says.
func unsaid(msg, why string) string {
	said := map[string]bool{}
	for _, p := range strings.Split(why, "; ") {
		said[p] = true
		if head, _, ok := strings.Cut(p, " (limit "); ok {
			said[head] = true
		}
	}
	var kept []string
	for _, p := range strings.Split(msg, "; ") {
		if !said[p] {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "; ")
}

// writeOutputs records the outputs of a test with paths relative to dir,
// a folder of results folder root, masked by red (launch errors and
// commands quote what ran).
func writeOutputs(root, dir string, outs []plan.Output, red *redact.Redactor) error {
	rel := make([]plan.Output, len(outs))
	for i, o := range outs {
		rel[i] = o
		rel[i].Log = relTo(dir, o.Log)
		if len(o.Files) > 0 {
			rel[i].Files = map[string]string{}
			for k, v := range o.Files {
				rel[i].Files[k] = relTo(dir, v)
			}
		}
	}
	data, err := json.MarshalIndent(redact.Value(red, rel), "", "  ")
	if err != nil {
		return fmt.Errorf("record outputs: %w", err)
	}
	if err := safefs.WriteFile(root, filepath.Join(relTo(root, dir), layout.Outputs), red.Bytes(append(data, '\n')), 0o644); err != nil {
		return fmt.Errorf("record outputs: %w", err)
	}
	return nil
}

func relTo(base, p string) string {
	if p == "" {
		return ""
	}
	if r, err := filepath.Rel(base, p); err == nil {
		return r
	}
	return p
}

func rawPaths(root string, outs []plan.Output) []string {
	var ps []string
	for _, o := range outs {
		if o.Log != "" {
			ps = append(ps, relTo(root, o.Log))
		}
		for _, f := range o.Files {
			ps = append(ps, relTo(root, f))
		}
	}
	sort.Strings(ps)
	return ps
}
