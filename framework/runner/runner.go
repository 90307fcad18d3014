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
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/judge"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/progress"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
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
	// kept in the results folder (journal.BaselineDir) for verification.
	Baseline []byte
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
	run := &result.Run{SKU: r.SKU.Name, Suite: suiteName, Launcher: r.Launcher.Name(), Scope: topo.String(),
		Hosts: topo.Hosts, Started: time.Now().UTC(), Version: r.Version, Dir: r.Dir, Tests: []result.Test{}}
	var planned []string
	for _, st := range su.Tests {
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
		if err := safefs.MkdirAll(r.Dir, "raw"); err != nil {
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
	for _, st := range su.Tests {
		if !r.selected(st.Test) {
			continue
		}
		var t result.Test
		if err := ctx.Err(); err != nil {
			t = result.Test{Name: st.Test, Status: result.Error, Scope: topo.String(),
				Message: "not run: " + err.Error(), Metrics: []result.Judged{}}
		} else {
			t = r.runWithRetries(ctx, su, st, topo)
		}
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
// raw/TEST.attempt-N and are listed in the last attempt's Attempts.
func (r *Runner) runWithRetries(ctx context.Context, su *sku.Suite, st *sku.SuiteTest, topo plan.Topology) result.Test {
	var earlier []result.Test
	// What is recorded and shown of a test (messages and diagnostics
	// quoting its output, commands) is masked with what this test's
	// secrets are.
	red := redact.FromEnv(os.Environ(), Params(su.Params, st.Params, ScopedParams(r.Params, st.Test)))
	for attempt := 1; ; attempt++ {
		t := redact.Value(red, r.runTest(ctx, su, st, topo, attempt))
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
		earlier = append(earlier, t)
	}
}

// attemptDir is the raw-output folder of an earlier attempt of a test.
func attemptDir(test string, attempt int) string { return fmt.Sprintf("%s.attempt-%d", test, attempt) }

// keepAttempt moves an attempt's raw outputs out of the way of the next.
func (r *Runner) keepAttempt(t *result.Test, attempt int) error {
	from := filepath.Join("raw", t.Name)
	to := filepath.Join("raw", attemptDir(t.Name, attempt))
	if _, err := safefs.Lstat(r.Dir, from); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := safefs.Rename(r.Dir, from, to); err != nil {
		return fmt.Errorf("keep raw outputs of attempt %d of %s: %w", attempt, t.Name, err)
	}
	oldPrefix := filepath.Join("raw", t.Name) + string(filepath.Separator)
	newPrefix := filepath.Join("raw", attemptDir(t.Name, attempt)) + string(filepath.Separator)
	for i, p := range t.Raw {
		if strings.HasPrefix(p, oldPrefix) {
			t.Raw[i] = newPrefix + strings.TrimPrefix(p, oldPrefix)
		}
	}
	return nil
}

func (r *Runner) checkOnly(su *sku.Suite) error {
	for _, o := range r.Only {
		found := false
		for _, t := range su.Tests {
			if t.Test == o {
				found = true
			}
		}
		if !found {
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

func (r *Runner) runTest(ctx context.Context, su *sku.Suite, st *sku.SuiteTest, topo plan.Topology, attempt int) result.Test {
	start := time.Now()
	params := Params(su.Params, st.Params, ScopedParams(r.Params, st.Test))
	// What is recorded and printed goes through redaction, which also knows
	// the secret values of the environment and the parameters; the plugin
	// and the launcher get the real values.
	red := redact.FromEnv(os.Environ(), params)
	t := result.Test{Name: st.Test, Scope: topo.String(), Params: red.Params(params), Metrics: []result.Judged{}}
	if st.Skip != "" {
		t.Status, t.Message = result.Skip, st.Skip
		r.progress("%-24s skip  %s", st.Test, st.Skip)
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
	timeout := r.Timeout
	if st.Timeout > 0 {
		timeout = st.Timeout
	}
	dir := filepath.Join(r.Dir, "raw", st.Test)
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
	t = r.judge(ctx, t, pluginName, test, params, topo, outs)
	for _, o := range outs {
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
			return fmt.Sprintf("the run was interrupted (Ctrl-C or SIGTERM) after %s%s", took.Round(time.Millisecond), rest)
		case strings.HasPrefix(head, "timed out"):
			return head + " (limit " + timeout.String() + ")" + rest
		case strings.Contains(o.LaunchError, context.DeadlineExceeded.Error()):
			return fmt.Sprintf("timed out after %s (limit %s); %s", took.Round(time.Millisecond), timeout, o.LaunchError)
		}
	}
	if ctx.Err() != nil {
		return fmt.Sprintf("the run was interrupted (Ctrl-C or SIGTERM) after %s", took.Round(time.Millisecond))
	}
	return ""
}

// stopped makes a stopped test's message say so first: a stop is no parse
// or launch failure of its own. What the plugin said (the step's launch
// error, "context canceled") stays as a diagnostic and what was measured
// before the stop is kept.
func stopped(t result.Test, why string) result.Test {
	msg := "stopped: " + why
	if n := len(t.Metrics); n > 0 {
		msg += fmt.Sprintf("; the %d points measured before the stop are kept", n)
	} else {
		msg += "; nothing was measured before the stop"
	}
	if t.Message != "" {
		t.Diagnostics = append(t.Diagnostics, result.Diagnostic{Level: result.Info, Message: "as judged: " + t.Message})
	}
	if t.Status != result.Error && t.Status != result.Fail {
		// A step cut short is no whole measurement, whatever its points.
		t.Status = result.Error
	}
	t.Message = msg
	return t
}

// parseTimeout bounds parsing a test's outputs after the run was stopped.
const parseTimeout = 2 * time.Minute

// judge parses outputs with the plugin and judges them against the SKU's
// baseline at topo's scope.
func (r *Runner) judge(ctx context.Context, t result.Test, pluginName, test string, params map[string]string, topo plan.Topology, outs []plan.Output) result.Test {
	// What a stopped test printed is still parsed (Ctrl-C, timeout): its
	// numbers are measurements, and verify re-parses them the same way.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), parseTimeout)
	defer cancel()
	parsed, err := r.Plugins.Parse(pctx, pluginName, pluginapi.ParseRequest{Test: test, Params: params, Topology: topo, Outputs: outs})
	if err != nil {
		parsed = result.Parsed{Error: "parse: " + err.Error()}
	}
	j := JudgeWith(r.SKU, t.Name, topo, parsed, LabelDefaults(pctx, r.Plugins, pluginName, test))
	j.Name, j.Scope, j.Params, j.Commands, j.Duration, j.Started = t.Name, t.Scope, t.Params, t.Commands, t.Duration, t.Started
	j.Diagnostics = append(t.Diagnostics, j.Diagnostics...)
	return j
}

// Judge judges parsed output of a test at a topology against a SKU:
// JudgeWith without label defaults.
func Judge(s *sku.SKU, name string, topo plan.Topology, parsed result.Parsed) result.Test {
	return JudgeWith(s, name, topo, parsed, nil)
}

// JudgeWith judges parsed output of a test (full name) at a topology
// against a SKU (judge.SKUTest): the gates (the plugin's checks, the GPU
// model, the SKU's physical ceilings) whatever the baseline, then the
// baseline entries of that scope, or skip naming the scopes that exist.
// defaults are the plugin's label defaults per metric (LabelDefaults).
func JudgeWith(s *sku.SKU, name string, topo plan.Topology, parsed result.Parsed, defaults map[string]map[string]string) result.Test {
	parsed = dropNonFinite(parsed)
	t := judge.SKUTest(s, name, sku.Scope{Nodes: topo.Nodes, GPUsPerNode: topo.GPUsPerNode}, parsed, defaults)
	t.Name, t.Scope = name, topo.String()
	return t
}

// Describer is a Plugins that also describes its plugins (the plugin host
// does); the runner asks it for the label defaults of a test's metrics.
type Describer interface {
	Describe(ctx context.Context, plugin string) (pluginapi.Description, error)
}

// LabelDefaults returns the label defaults per metric name that plugin
// declares for test (short name), when plugins is a Describer; nil when it
// is not, or the plugin declares none or cannot say (an old external
// plugin): entries then match every value of a label they leave out.
func LabelDefaults(ctx context.Context, plugins Plugins, plugin, test string) map[string]map[string]string {
	d, ok := plugins.(Describer)
	if !ok {
		return nil
	}
	desc, err := d.Describe(ctx, plugin)
	if err != nil {
		return nil
	}
	var out map[string]map[string]string
	for _, ti := range desc.Tests {
		if ti.Name != test {
			continue
		}
		for _, m := range ti.Metrics {
			if len(m.LabelDefaults) > 0 {
				if out == nil {
					out = map[string]map[string]string{}
				}
				out[m.Name] = m.LabelDefaults
			}
		}
	}
	return out
}

// Roles returns the step roles plugin declares for test (short name),
// when plugins is a Describer; nil when it is not, or the test declares
// none or the plugin cannot say.
func Roles(ctx context.Context, plugins Plugins, plugin, test string) []string {
	d, ok := plugins.(Describer)
	if !ok {
		return nil
	}
	desc, err := d.Describe(ctx, plugin)
	if err != nil {
		return nil
	}
	ti, _ := desc.Test(test)
	return ti.Roles
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
	if err := safefs.WriteFile(root, filepath.Join(relTo(root, dir), launch.OutputsFile), red.Bytes(append(data, '\n')), 0o644); err != nil {
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

// Check judges existing output files of one test offline, without running
// anything. Files are grouped into runs: a JSON file (nccl-tests -J) joins
// the text log of the same name stem (x.log / x.txt with x.json); the logs
// of a paired test's steps in one folder (ROLE.N.log for the roles the
// test declares, server.N.log and client.N.log for ibperf, as a results
// folder's raw/TEST/ keeps them, or any log its outputs.json gives a role)
// are one run, as the run that made them judged them; every other
// file is a run of its own. Each run is one test result; with several runs
// the test name carries the file name ("nccl.all_reduce[a.log]").
func Check(ctx context.Context, plugins Plugins, s *sku.SKU, name string, topo plan.Topology, files []string, version string) (*result.Run, error) {
	return CheckInto(ctx, plugins, s, name, topo, files, version, "", nil)
}

// CheckInto is Check that, with dir set, also makes dir a results folder
// that gpuaccept verify can check like a run's: each run's files copied
// under raw/TEST/ (raw/TEST.N/ for run N of several) with the outputs.json
// of its steps, baseline (the SKU file content) kept under baseline/, and
// the journal. The files are judged from their copies. Errors name the
// file that could not be read or written.
func CheckInto(ctx context.Context, plugins Plugins, s *sku.SKU, name string, topo plan.Topology, files []string, version, dir string, baseline []byte) (*result.Run, error) {
	pluginName, test, err := SplitName(name)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no log files to check")
	}
	// A .gz or standard input is judged from a plain copy, which lives
	// only while the run is judged (with dir, kept under raw/).
	tmp, err := os.MkdirTemp("", "gpuaccept-check-")
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	defer os.RemoveAll(tmp)
	groups, err := groupFiles(files, tmp, Roles(ctx, plugins, pluginName, test))
	if err != nil {
		return nil, err
	}
	run := &result.Run{SKU: s.Name, Suite: "check", Launcher: "check", Scope: topo.String(), Started: time.Now().UTC(), Version: version, Dir: dir, Tests: []result.Test{}}
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = name
		if len(groups) > 1 {
			names[i] = fmt.Sprintf("%s[%s]", name, g.label)
		}
	}
	var jw *journal.Writer
	if dir != "" {
		if err := safefs.MkdirAll(dir, "raw"); err != nil {
			return nil, fmt.Errorf("create results folder: %w", err)
		}
		if len(baseline) > 0 {
			if err := journal.SaveBaseline(dir, s.Name, baseline); err != nil {
				return nil, err
			}
		}
		if jw, err = journal.Create(dir, run, names); err != nil {
			return nil, err
		}
		defer jw.Close()
	}
	for i, g := range groups {
		start := time.Now()
		raw := g.files
		if dir != "" {
			folder := name
			if len(groups) > 1 {
				folder = fmt.Sprintf("%s.%d", name, i+1)
			}
			if raw, err = keepGroup(dir, folder, &g); err != nil {
				return nil, err
			}
		}
		parsed, err := plugins.Parse(ctx, pluginName, pluginapi.ParseRequest{Test: test, Topology: topo, Outputs: g.outs})
		if err != nil {
			parsed = result.Parsed{Error: "parse: " + err.Error()}
		}
		t := JudgeWith(s, name, topo, parsed, LabelDefaults(ctx, plugins, pluginName, test))
		t.Name = names[i]
		t.Raw = raw
		t.Duration = time.Since(start)
		t = redact.Value(redact.Env(), t) // diagnostics quote the logs
		run.Tests = append(run.Tests, t)
		if jw != nil {
			if err := jw.Add(t); err != nil {
				return nil, err
			}
		}
	}
	run.Duration = time.Since(run.Started)
	run.Finish()
	if jw != nil {
		if err := jw.End(run.Duration); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// keepGroup copies the files of g into dir/raw/folder, the layout of a
// results folder (a step's JSON in STEP.files/), points g's outputs at the
// copies, records them in outputs.json and returns the copies' paths
// relative to dir.
func keepGroup(dir, folder string, g *fileGroup) ([]string, error) {
	into := filepath.Join(dir, "raw", folder)
	var raw []string
	// The copies are masked, and judged and hashed as masked: verify
	// re-judges the same bytes.
	red := redact.Env()
	cp := func(src, dst string) error {
		rel, _ := filepath.Rel(dir, dst)
		// Streamed (a log of 10^7 rows is over a GB), masked, through
		// safefs: no link below the results folder is written through.
		if err := copyInto(dir, rel, src, red); err != nil {
			return fmt.Errorf("keep log file %s: %w", src, err)
		}
		raw = append(raw, filepath.ToSlash(rel))
		return nil
	}
	used := map[string]bool{}
	for i := range g.outs {
		o := &g.outs[i]
		filesDir := into
		if o.Log != "" {
			base := red.String(filepath.Base(o.Log))
			if used[base] {
				base = fmt.Sprintf("%d.%s", i+1, base)
			}
			used[base] = true
			dst := filepath.Join(into, base)
			if err := cp(o.Log, dst); err != nil {
				return nil, err
			}
			o.Log = dst
			filesDir = filepath.Join(into, launch.FilesDir(strings.TrimSuffix(base, filepath.Ext(base))))
		}
		for k, v := range o.Files {
			dst := filepath.Join(filesDir, red.String(filepath.Base(v)))
			if err := cp(v, dst); err != nil {
				return nil, err
			}
			o.Files[k] = dst
		}
	}
	if err := writeOutputs(dir, into, g.outs, red); err != nil {
		return nil, err
	}
	return raw, nil
}

// fileGroup is one run judged by check: the outputs of its steps and the
// files (as given) they came from.
type fileGroup struct {
	label string
	outs  []plan.Output
	files []string
}

// groupFiles groups the files given to check into runs. A .gz and
// standard input ("-") are read into tmp first (inputs); they group as the
// plain file would (x.log.gz with x.json, server.0.log.gz with
// client.0.log.gz), and the outputs point at the readable copies. roles
// are the test's declared step roles (pluginapi.TestInfo.Roles): a log
// named ROLE.N.log is that step of pair N.
func groupFiles(files []string, tmp string, roles []string) ([]fileGroup, error) {
	var groups []fileGroup
	// where finds a file's output: group index and output index.
	type where struct{ g, o int }
	byStem := map[string]where{}
	pairs := map[string]int{} // folder -> group of its paired steps
	opener := &inputs{tmp: tmp}
	// path is where the plugins read each logical path.
	path := map[string]string{}
	for _, f := range files {
		in, err := opener.open(f)
		if err != nil {
			return nil, err
		}
		abs := in.logical
		if prev, ok := path[abs]; ok && prev != in.path {
			return nil, fmt.Errorf("log file %s: %s is given too, compressed or not: give one", f, abs)
		}
		path[abs] = in.path
		base := filepath.Base(f)
		if f == "-" {
			base = StdinName
		}
		stem := strings.TrimSuffix(abs, filepath.Ext(abs))
		isJSON := strings.EqualFold(filepath.Ext(abs), ".json")
		w, ok := byStem[stem]
		if ok && (isJSON && !hasJSON(groups[w.g].outs[w.o]) || !isJSON && groups[w.g].outs[w.o].Log == "") {
			// joins the run of the same stem
		} else if isJSON {
			groups = append(groups, fileGroup{label: base, outs: []plan.Output{{Step: "check"}}})
			w = where{len(groups) - 1, 0}
			byStem[stem] = w
		} else {
			out := plan.Output{Step: "check", Log: abs}
			recorded(&out)
			if role, _, ok := pluginapi.PairedStep(roles, filepath.Base(stem)); out.Role == "" && ok {
				out.Step, out.Role = filepath.Base(stem), role
			}
			gi, paired := pairs[filepath.Dir(abs)]
			if out.Role != "" && paired && !hasStep(groups[gi].outs, out.Step) {
				groups[gi].outs = append(groups[gi].outs, out)
				groups[gi].label += "+" + base
				w = where{gi, len(groups[gi].outs) - 1}
			} else {
				groups = append(groups, fileGroup{label: base, outs: []plan.Output{out}})
				w = where{len(groups) - 1, 0}
				if out.Role != "" {
					pairs[filepath.Dir(abs)] = w.g
				}
			}
			byStem[stem] = w
		}
		g := &groups[w.g]
		o := &g.outs[w.o]
		if isJSON {
			o.Files = map[string]string{filepath.Base(abs): abs}
			g.files = append(g.files, f)
			continue
		}
		if o.Log == "" { // a text log joining its JSON
			o.Log = abs
			g.label = base
			recorded(o)
		}
		g.files = append(g.files, f)
		// A results folder keeps a step's -J file in STEP.files/.
		js := filepath.Join(filepath.Dir(stem), launch.FilesDir(filepath.Base(stem)), filepath.Base(stem)+".json")
		if f != "-" && !hasJSON(*o) && (fileExists(js) || fileExists(js+".gz")) {
			given := js
			if !fileExists(js) {
				given += ".gz"
			}
			in, err := opener.open(given)
			if err != nil {
				return nil, err
			}
			path[in.logical] = in.path
			o.Files = map[string]string{filepath.Base(js): js}
			g.files = append(g.files, given)
		}
	}
	// The plugins read the files where inputs put them.
	for i := range groups {
		for j := range groups[i].outs {
			o := &groups[i].outs[j]
			if o.Log != "" {
				o.Log = path[o.Log]
			}
			for k, v := range o.Files {
				o.Files[k] = path[v]
			}
		}
	}
	// Two logs of the same name from different folders are told apart by
	// the path they were given as.
	count := map[string]int{}
	for _, g := range groups {
		count[g.label]++
	}
	for i := range groups {
		if count[groups[i].label] > 1 {
			groups[i].label = groups[i].files[0]
			if len(groups[i].outs) > 1 {
				groups[i].label = strings.Join(groups[i].files, "+")
			}
		}
	}
	return groups, nil
}

func hasStep(outs []plan.Output, step string) bool {
	for _, o := range outs {
		if o.Step == step {
			return true
		}
	}
	return false
}

// recorded fills how the step of a log from a results folder ended (exit
// code, launch error, host, command) from the outputs.json beside it, so
// checking a crashed run's log does not pass it. A step with a role (one
// side of a paired test) also keeps its step name and role, which the
// plugin pairs the sides by.
func recorded(o *plan.Output) {
	data, err := safefs.ReadNamed(filepath.Join(filepath.Dir(o.Log), launch.OutputsFile), maxOutputsJSON)
	if err != nil {
		return
	}
	var outs []plan.Output
	if json.Unmarshal(data, &outs) != nil {
		return
	}
	for _, r := range outs {
		if r.Log == filepath.Base(o.Log) {
			o.ExitCode, o.LaunchError, o.Host, o.Command = r.ExitCode, r.LaunchError, r.Host, r.Command
			if r.Role != "" {
				o.Step, o.Role = r.Step, r.Role
			}
			return
		}
	}
}

// maxOutputsJSON bounds the outputs.json read beside a log given to
// check: a step record is a few hundred bytes.
const maxOutputsJSON = 64 << 20

// fileExists says p is a regular file: a FIFO or device found beside a
// log (its -J file) is not handed to a plugin.
func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func hasJSON(o plan.Output) bool { return len(o.Files) > 0 }

// Rejudge parses the raw outputs kept in results folder dir again, with the
// plugins, judges them against s, and compares the verdicts with those
// recorded in run: it returns one message per difference (status, message,
// a metric's value, unit, band or status, a metric found or gone, a check,
// an info such as the hosts the output names), naming the test. A test
// with no raw outputs (skipped, not planned, not launched) keeps its
// recorded verdict. A raw output that cannot be read is one of the
// messages. run.Dir is the results folder the run recorded, which
// messages naming its files may quote; dir is where it is now.
func Rejudge(ctx context.Context, plugins Plugins, s *sku.SKU, dir string, run *result.Run) []string {
	var diffs []string
	claimed := map[string]string{} // raw/ folder -> the test it backs
	for _, final := range run.Tests {
		all := append(append([]result.Test(nil), final.Attempts...), final)
		for i, t := range all {
			label := t.Name
			if len(all) > 1 {
				label = fmt.Sprintf("%s (attempt %d of %d)", t.Name, i+1, len(all))
			}
			if len(t.Raw) == 0 {
				// Only a test that never ran has no raw output: a verdict,
				// a number or a check must come from raw/ to be believed.
				if d := unbackedVerdict(t); d != "" {
					diffs = append(diffs, label+": "+d)
				}
				continue
			}
			folder, err := rawFolder(t)
			if err == nil && claimed[folder] != "" {
				err = fmt.Errorf("raw output folder raw/%s is also %s's: one run's outputs cannot back two verdicts", folder, claimed[folder])
			}
			if err != nil {
				diffs = append(diffs, fmt.Sprintf("%s: %v", label, err))
				continue
			}
			claimed[folder] = label
			got, err := rejudgeTest(ctx, plugins, s, dir, run, t)
			if err != nil {
				diffs = append(diffs, fmt.Sprintf("%s: %v", label, err))
				continue
			}
			want := t.Status
			if i == len(all)-1 && len(all) > 1 && want == result.Warn && got.Status == result.Pass {
				want = result.Pass // the warn says it passed only on a retry
			}
			if strings.HasPrefix(t.Message, "stopped: ") && t.Status == result.Error && got.Status != result.Fail {
				want = got.Status // the stop, not the output, made it an error
			}
			if got.Status != want {
				diffs = append(diffs, fmt.Sprintf("%s: recorded %s, re-judged %s (%s)", label, t.Status, got.Status, got.Message))
			}
			diffs = append(diffs, metricDiffs(label, t.Metrics, got.Metrics)...)
			rewritten := strings.HasPrefix(t.Message, "stopped: ") || want != t.Status
			diffs = append(diffs, verdictDiffs(label, t, got, rewritten, run.Dir, dir)...)
		}
	}
	return diffs
}

// unbackedVerdict says what a test with no raw outputs claims that only
// outputs could give: a pass, warn or fail, a metric or a check; "" when
// it claims none (a skip, or an error before anything ran).
func unbackedVerdict(t result.Test) string {
	var claims []string
	if t.Status != result.Skip && t.Status != result.Error {
		claims = append(claims, "a "+string(t.Status))
	}
	if n := len(t.Metrics); n > 0 {
		claims = append(claims, fmt.Sprintf("%d metrics", n))
	}
	if n := len(t.Checks); n > 0 {
		claims = append(claims, fmt.Sprintf("%d checks", n))
	}
	if len(claims) == 0 {
		return ""
	}
	return fmt.Sprintf("recorded %s with no raw output to re-judge them from: only a test that never ran has none", strings.Join(claims, " and "))
}

// rawFolder is the folder under raw/ that holds test t's outputs, which
// must be the one the run or check named after it: raw/TEST, an earlier
// attempt's raw/TEST.attempt-N (attemptDir), or check's raw/TEST.N for
// the Nth of several runs; every raw path of t lies in it.
func rawFolder(t result.Test) (string, error) {
	first := filepath.ToSlash(t.Raw[0])
	parts := strings.Split(first, "/")
	if len(parts) < 3 || parts[0] != "raw" || parts[1] == "." || parts[1] == ".." {
		return "", fmt.Errorf("raw output %s is not under raw/TEST/", first)
	}
	folder := parts[1]
	base, _, _ := strings.Cut(t.Name, "[")
	ok := folder == base
	if rest, found := strings.CutPrefix(folder, base+"."); found && !ok {
		n := strings.TrimPrefix(rest, "attempt-")
		_, err := strconv.Atoi(n)
		ok = err == nil && n != "" && n[0] != '-' && n[0] != '+'
	}
	if !ok {
		return "", fmt.Errorf("raw output %s is not in the folder of test %s (raw/%s/)", first, t.Name, base)
	}
	for _, p := range t.Raw[1:] {
		if !strings.HasPrefix(filepath.ToSlash(p), "raw/"+folder+"/") {
			return "", fmt.Errorf("raw outputs %s and %s are in different folders", first, p)
		}
	}
	return folder, nil
}

// JudgeAgain parses the raw outputs of test t of run (a results folder
// at dir) again and judges them against s, as Rejudge does, returning
// the re-judged test; the error says why its outputs cannot be read (none
// kept, out of its folder, unreadable).
func JudgeAgain(ctx context.Context, plugins Plugins, s *sku.SKU, dir string, run *result.Run, t result.Test) (result.Test, error) {
	if len(t.Raw) == 0 {
		return result.Test{}, errors.New("no raw outputs kept")
	}
	if _, err := rawFolder(t); err != nil {
		return result.Test{}, err
	}
	return rejudgeTest(ctx, plugins, s, dir, run, t)
}

// VerdictDiffs lists how test got differs from test had in its status
// and its metrics (value, unit, band, status; found or gone), each
// difference naming label: what two baselines make of the same outputs.
func VerdictDiffs(label string, had, got result.Test) []string {
	var diffs []string
	if had.Status != got.Status {
		diffs = append(diffs, fmt.Sprintf("%s: %s, not %s (%s)", label, got.Status, had.Status, got.Message))
	}
	return append(diffs, metricDiffs(label, had.Metrics, got.Metrics)...)
}

func rejudgeTest(ctx context.Context, plugins Plugins, s *sku.SKU, dir string, run *result.Run, t result.Test) (result.Test, error) {
	first := filepath.ToSlash(t.Raw[0])
	parts := strings.Split(first, "/")
	if len(parts) < 3 || parts[0] != "raw" || parts[1] == "." || parts[1] == ".." {
		return result.Test{}, fmt.Errorf("raw output %s is not under raw/TEST/", first)
	}
	folder := filepath.Join(dir, "raw", parts[1])
	data, err := safefs.ReadFile(dir, path.Join("raw", parts[1], launch.OutputsFile), maxOutputsFile)
	if err != nil {
		return result.Test{}, fmt.Errorf("read how the steps ended: %w", err)
	}
	var outs []plan.Output
	if err := json.Unmarshal(data, &outs); err != nil {
		return result.Test{}, fmt.Errorf("read %s: %w", filepath.Join(folder, launch.OutputsFile), err)
	}
	// The plugin opens what it is handed, out of process: only regular
	// files of this test's folder, reached through no link (safefs).
	inFolder := func(p string) (string, error) {
		if !filepath.IsLocal(p) {
			return "", fmt.Errorf("raw output of step: %w", &safefs.RefusedError{Path: p, What: "outside the folder " + folder})
		}
		if err := safefs.Check(dir, filepath.Join("raw", parts[1], p)); err != nil {
			return "", fmt.Errorf("raw output of step: %w", err)
		}
		return filepath.Join(folder, p), nil
	}
	for i := range outs {
		if outs[i].Log != "" {
			if outs[i].Log, err = inFolder(outs[i].Log); err != nil {
				return result.Test{}, err
			}
		}
		for k, v := range outs[i].Files {
			if outs[i].Files[k], err = inFolder(v); err != nil {
				return result.Test{}, err
			}
		}
	}
	topo, err := plan.ParseTopology(t.Scope)
	if err != nil {
		return result.Test{}, err
	}
	topo.Hosts = run.Hosts
	// check names run N of several "TEST[FILE]"; the baseline knows TEST.
	name, _, _ := strings.Cut(t.Name, "[")
	pluginName, test, err := SplitName(name)
	if err != nil {
		return result.Test{}, err
	}
	parsed, err := plugins.Parse(ctx, pluginName, pluginapi.ParseRequest{Test: test, Params: t.Params, Topology: topo, Outputs: outs})
	if err != nil {
		parsed = result.Parsed{Error: "parse: " + err.Error()}
	}
	got := JudgeWith(s, name, topo, parsed, LabelDefaults(ctx, plugins, pluginName, test))
	got.Name = t.Name
	return got, nil
}

// maxOutputsFile bounds the outputs.json read back: a few steps' worth.
const maxOutputsFile = 16 << 20

// dropNonFinite takes the metrics a plugin reported as NaN or ±Inf out of
// parsed and makes that its error, naming them (the first 5): no tool
// measures such a number, the rest of the output cannot be trusted to
// judge, and JSON cannot hold one.
func dropNonFinite(parsed result.Parsed) result.Parsed {
	var bad []string
	var kept []result.Metric
	for i, m := range parsed.Metrics {
		if !math.IsNaN(m.Value) && !math.IsInf(m.Value, 0) {
			if kept != nil {
				kept = append(kept, m)
			}
			continue
		}
		if kept == nil {
			kept = append([]result.Metric{}, parsed.Metrics[:i]...)
		}
		bad = append(bad, fmt.Sprintf("%s = %v", m.Key(), m.Value))
	}
	if len(bad) == 0 {
		return parsed
	}
	parsed.Metrics = kept
	more := ""
	if len(bad) > 5 {
		bad, more = bad[:5], fmt.Sprintf(" and %d more", len(bad)-5)
	}
	msg := fmt.Sprintf("%s: the plugin reported %s%s", result.NonFinite, strings.Join(bad, ", "), more)
	if parsed.Error != "" {
		msg = parsed.Error + "; " + msg
	}
	parsed.Error = msg
	return parsed
}

func metricDiffs(label string, recorded, got []result.Judged) []string {
	// Every label takes part in the key: Mori-EP reports one bw per phase,
	// stat and rank, which differ only in labels. A key that still repeats
	// (a plugin reporting the same point twice) is told apart by its order.
	keys := func(ms []result.Judged) []string {
		out := make([]string, len(ms))
		n := map[string]int{}
		for i, m := range ms {
			k := m.Key()
			names := make([]string, 0, len(m.Labels))
			for l := range m.Labels {
				if l != "placement" {
					names = append(names, l)
				}
			}
			sort.Strings(names)
			for _, l := range names {
				k += " " + l + "=" + m.Labels[l]
			}
			n[k]++
			if n[k] > 1 {
				k += fmt.Sprintf(" #%d", n[k])
			}
			out[i] = k
		}
		return out
	}
	gotKeys, recKeys := keys(got), keys(recorded)
	index := map[string]result.Judged{}
	for i, m := range got {
		index[gotKeys[i]] = m
	}
	var diffs []string
	seen := map[string]bool{}
	for i, r := range recorded {
		k := recKeys[i]
		seen[k] = true
		g, ok := index[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: %s recorded as %g %s, not in the raw output", label, k, r.Value, r.Unit))
		case g.Value != r.Value:
			diffs = append(diffs, fmt.Sprintf("%s: %s recorded as %g %s, raw output says %g", label, k, r.Value, r.Unit, g.Value))
		case g.Status != r.Status:
			diffs = append(diffs, fmt.Sprintf("%s: %s recorded %s, re-judged %s", label, k, r.Status, g.Status))
		default:
			diffs = append(diffs, judgedDiffs(label, k, r, g)...)
		}
	}
	for _, k := range gotKeys {
		if !seen[k] {
			diffs = append(diffs, fmt.Sprintf("%s: %s in the raw output but not recorded", label, k))
		}
	}
	return diffs
}
