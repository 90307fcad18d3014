// Package result is gpuaccept's result model: what a plugin measured
// (Parsed), how each number was judged (Metric with a Status), and the
// verdict per test and per run.
package result

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// Status is a verdict. The order of the constants is their severity:
// Worst of several statuses is the one declared last.
type Status string

// The verdicts, from best to worst severity for aggregation.
const (
	// Skip: not judged (no baseline at this scope, not applicable). A
	// run that is Skip is not signed off: it judged nothing, or measured
	// a benchmark it did not judge (Run.Finish).
	Skip Status = "skip"
	// Pass: inside the band.
	Pass Status = "pass"
	// Warn: inside the warn zone before failure, or a finding that does not
	// fail the test.
	Warn Status = "warn"
	// Fail: outside the band, or a correctness gate failed.
	Fail Status = "fail"
	// Error: could not run, or its output could not be parsed.
	Error Status = "error"
)

func (s Status) rank() int {
	switch s {
	case Pass:
		return 1
	case Warn:
		return 2
	case Fail:
		return 3
	case Error:
		return 4
	}
	return 0
}

// Worst returns the most severe of the statuses; Skip when given none.
// Pass outranks Skip, so a test with one judged, passing metric passes.
func Worst(ss ...Status) Status {
	w := Skip
	for _, s := range ss {
		if s.rank() > w.rank() {
			w = s
		}
	}
	return w
}

// Metric is one measured number. Bandwidth is in GB/s (1e9 bytes/s) for
// collectives and Gb/s for NICs; times in us; sizes in bytes.
type Metric struct {
	// Name is the quantity: "busbw", "algbw", "time", ...
	Name string `json:"name"`
	// Value is the measured number in Unit.
	Value float64 `json:"value"`
	// Unit is "GB/s", "Gb/s", "us", "count", ...
	Unit string `json:"unit"`
	// Size is the message size in bytes for a point of a curve; 0 for a
	// metric that is not per size.
	Size int64 `json:"size,omitempty"`
	// Labels tell points of the same name and size apart, e.g.
	// placement=out-of-place|in-place, type=float, redop=sum.
	Labels map[string]string `json:"labels,omitempty"`
	// Cycles is how many times the point was measured when more than once
	// (nccl-tests -N, rccl-tests' stress cycles); 0 for a point measured
	// once, which then has no Min, Median or Max. Value is the worst of the
	// cycles (the lowest bandwidth, the highest time): that is what is
	// judged and recorded.
	Cycles int `json:"cycles,omitempty"`
	// Min, Median and Max summarise the cycles' values, in Unit; set only
	// with Cycles. Median is the middle value (the mean of the two middle
	// ones for an even count); the plugin says where it is an estimate
	// (nccl-tests: past 256 cycles, within 0.1%).
	Min    float64 `json:"min,omitempty"`
	Median float64 `json:"median,omitempty"`
	Max    float64 `json:"max,omitempty"`
}

// CyclesText says how a point measured in several cycles was summarised,
// for reports: "min of 20 cycles (median 340.12, max 345.20)" when Value is
// the lowest (a bandwidth), "max of 20 cycles (min 12.10, median 12.50)"
// when it is the highest (a time), "worst of ..." with all three when it
// is neither (a cycle measured nan); "" for a point measured once.
func (m Metric) CyclesText() string {
	if m.Cycles < 2 {
		return ""
	}
	switch m.Value {
	case m.Min:
		return fmt.Sprintf("min of %d cycles (median %.2f, max %.2f)", m.Cycles, m.Median, m.Max)
	case m.Max:
		return fmt.Sprintf("max of %d cycles (min %.2f, median %.2f)", m.Cycles, m.Min, m.Median)
	}
	return fmt.Sprintf("worst of %d cycles (min %.2f, median %.2f, max %.2f)", m.Cycles, m.Min, m.Median, m.Max)
}

// Key renders name, size and labels for messages: "busbw[in-place] at 4 GiB".
func (m Metric) Key() string {
	s := m.Name
	if p := m.Labels["placement"]; p != "" {
		s += "[" + p + "]"
	}
	if m.Size > 0 {
		s += " at " + FormatBytes(m.Size)
	}
	return s
}

// Check is a correctness gate a plugin evaluated on the output: data
// validation (#wrong), out-of-bounds values, rank count. A failed check fails
// the test whatever its bandwidth.
type Check struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
	// Warn makes a failed check warn instead of fail: the check could not
	// be made (validation turned off, footer missing), which a sign-off
	// must show but which proves nothing wrong.
	Warn bool `json:"warn,omitempty"`
	// Error makes a failed check an error of the test instead of a fail:
	// the output is no measurement of the scope at all (independent
	// one-rank runs of a binary built without MPI=1), a broken build or
	// launch to fix rather than bad hardware. The plugin, which knows the
	// tool, sets it.
	Error bool `json:"error,omitempty"`
	// Host is the node the check is about (a health check of one node),
	// as the launcher named it; empty: the check is about the whole
	// output. A failed check naming a host marks that node bad for the
	// rest of a suite run (a preflight test's).
	Host string `json:"host,omitempty"`
	// Code is gpuaccept's fault code of a failed check, one of
	// framework/faults' table (docs/FAULTS.md), whose remediation the
	// reports print; empty: no code.
	Code string `json:"code,omitempty"`
}

// Level is a diagnostic's weight.
type Level string

// Diagnostic levels.
const (
	Info    Level = "info"
	Warning Level = "warning"
	// Problem diagnostics make the test an error when no metric was found.
	Problem Level = "error"
)

// Diagnostic is a note about the output: an NCCL WARN line, a tool error, a
// line the parser did not understand. Source is "file:line" where known.
type Diagnostic struct {
	Level   Level  `json:"level"`
	Message string `json:"message"`
	Source  string `json:"source,omitempty"`
}

// Parsed is what a plugin's Parse returns for the outputs of one test.
type Parsed struct {
	Metrics     []Metric     `json:"metrics,omitempty"`
	Checks      []Check      `json:"checks,omitempty"`
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
	// Error, when set, says why the outputs could not be turned into a
	// measurement (empty, truncated, another tool's output, tool exit code).
	// The test ends as Error, but Metrics found before it are kept.
	Error string `json:"error,omitempty"`
	// Info holds facts for reports: tool and library versions (keys ending
	// in "version" become JUnit properties), "hosts" (comma-separated, the
	// hosts of the ranks the output lists), "ranks", "gpu", the device
	// model the output names, and "device", a device name that names no
	// model (HIP's "AMD Radeon Graphics"). The judge compares gpu or device
	// with the SKU's gpu and gpu_variant (judge.GPUChecks); hosts without
	// either means the ranks' devices went unnamed.
	Info map[string]string `json:"info,omitempty"`
}

// Judged is a metric with its verdict against the baseline.
type Judged struct {
	Metric
	Status Status `json:"status"`
	// Expected is the baseline reference value, when there is one.
	Expected *float64 `json:"expected,omitempty"`
	// Band renders the tolerance band, e.g. ">= 310.9 (baseline 345.5 -10%)".
	Band string `json:"band,omitempty"`
	// Message explains a warn or fail, e.g.
	// "busbw 28.7 GB/s at 4 GiB below 310.9 (baseline 345.5 -10%)".
	Message string `json:"message,omitempty"`
	// Source is where the baseline number came from.
	Source string `json:"source,omitempty"`
	// Basis is what judged the point, "" for a point nothing judged:
	// "golden" (the site's own recorded baseline), "reference" (a cited
	// public measurement) or "floor" (a fraction of the datasheet figure)
	// (framework/sku, BasisGolden ...).
	Basis string `json:"basis,omitempty"`
	// Tolerance is how far the band lets the point fall from Expected
	// before it fails, a fraction of it (0.19 for "-19%"): under it for a
	// floor, over it for a ceiling; 0 where no band edge bounds it. A
	// burn-in's drift rule allows a point at least this much.
	Tolerance float64 `json:"tolerance,omitempty"`
	// Summary, when set, says this is not a measured point but one number
	// computed from the curve: "peak", "largest" or "mean 64 MiB..4 GiB"
	// (see the baseline semantics in baselines/README.md). Size is then the
	// size the number was found at (peak, largest), or 0 for a mean.
	Summary string `json:"summary,omitempty"`
}

// Test is the verdict of one test of a suite.
type Test struct {
	// Name is "plugin.test", e.g. "nccl.all_reduce".
	Name    string            `json:"name"`
	Status  Status            `json:"status"`
	Message string            `json:"message,omitempty"`
	Scope   plan.Scope        `json:"scope"`
	Params  map[string]string `json:"params,omitempty"`
	// Commands are the exact command lines that ran, one per step.
	Commands    []string          `json:"commands,omitempty"`
	Metrics     []Judged          `json:"metrics"`
	Checks      []Check           `json:"checks,omitempty"`
	Diagnostics []Diagnostic      `json:"diagnostics,omitempty"`
	Info        map[string]string `json:"info,omitempty"`
	// Basis lists what judged the test's points (Bases): the
	// authority of each verdict, strongest first ("golden", "reference",
	// "floor"); none for a test nothing judged by a baseline or floor.
	Basis []string `json:"basis,omitempty"`
	// Efficiency is how close the test came to its SKU's datasheet
	// figures, one per ceiling that limits its points (reports show it
	// whatever the verdict; none when the SKU gives no ceiling for it).
	Efficiency []Efficiency `json:"efficiency,omitempty"`
	// RankHosts maps a step name to the host each of its ranks ran on,
	// index = rank (plan.Output.RankHosts), for the steps whose launcher
	// knows them (slurm).
	RankHosts map[string][]string `json:"rank_hosts,omitempty"`
	// Raw are the paths of the raw outputs, relative to the results folder.
	Raw []string `json:"raw,omitempty"`
	// Started is when the test began (UTC); zero for tests that did not run.
	Started  time.Time     `json:"started,omitzero"`
	Duration time.Duration `json:"duration_ns"`
	// Attempts are the earlier runs of a test that was retried (--retries),
	// oldest first, each with its own verdict and raw outputs; the Test
	// itself is the last attempt.
	Attempts []Test `json:"attempts,omitempty"`
	// Attempt is which attempt this is (1-based; of a test that ran, the
	// last is 1 + len(Attempts)); 0 for tests that did not run and in runs
	// made before it was recorded.
	Attempt int `json:"attempt,omitempty"`
	// Preflight says the test's plugin declares it a health check
	// (pluginapi.TestInfo.Preflight): it ran before the others, and its
	// failed checks naming a host make Run.BadNodes.
	Preflight bool `json:"preflight,omitempty"`
	// Meanings are what the test's plugin declares its metrics mean
	// (unit, better higher or lower, plot kind, recorded by default),
	// kept so that reports render from the results folder without the
	// plugin. None in folders made before plugins declared them, or for a
	// plugin that declares none: such a test's metrics are not plotted.
	Meanings []Meaning `json:"meanings,omitempty"`
	// Telemetry is what the test's GPUs did while it ran, sampled beside
	// it (the telemetry plugin's monitor steps, raw/TEST/telemetry.N.log);
	// nil when nothing was sampled.
	Telemetry *Telemetry `json:"telemetry,omitempty"`
}

// Run is the verdict of a whole suite run.
type Run struct {
	Status Status `json:"status"`
	SKU    string `json:"sku"`
	// SKUSource is where the SKU file that judged the run came from:
	// "built-in" (a file gpuaccept carries), or the path of a site's file
	// given with --baselines. Empty in results folders written before it
	// was kept.
	SKUSource string     `json:"sku_source,omitempty"`
	Suite     string     `json:"suite"`
	Launcher  string     `json:"launcher"`
	Scope     plan.Scope `json:"scope"`
	Hosts     []string   `json:"hosts,omitempty"`
	Started   time.Time  `json:"started"`
	// Duration is the wall time of the whole run.
	Duration time.Duration `json:"duration_ns"`
	Version  string        `json:"gpuaccept_version"`
	// Selected are the tests --test chose from the suite (sorted); none:
	// every test of the suite. verify holds the run's tests to the suite
	// of the kept baseline and this choice.
	Selected []string `json:"selected,omitempty"`
	Tests    []Test   `json:"tests"`
	// Dir is the results folder, when one was written.
	Dir string `json:"results_dir,omitempty"`
	// Notes say what the verdicts do not about how the run was made: that
	// its steps were held less than fully on this host (proc.Weaker). Each
	// is one line; the text reports show them under the table.
	Notes []string `json:"notes,omitempty"`
	// Localisations are the narrowing-down of failing multi-node tests
	// (or of every multi-node test, with --localise), one per test.
	Localisations []Localisation `json:"localisations,omitempty"`
	// BadNodes are the nodes the run's preflight tests failed, one entry
	// per failed check naming a host, in test then check order; Finish
	// derives them from Tests (BadNodesOf), so a journal read back has
	// them too.
	BadNodes []BadNode `json:"bad_nodes,omitempty"`
	// Hardware are the GPUs and NICs the raw outputs show, as the results
	// folder's hardware.json lists them (framework/resultsdir/layout.Hardware),
	// for the reports to show; not part of results.json nor the journal
	// (verify re-derives the file itself). Nil: no list.
	Hardware []Device `json:"-"`
	// Retries is how many more attempts --retries allowed each failed or
	// errored test, recorded in the journal's first line so that verify
	// can find an attempt taken out; nil in runs made before it was
	// recorded.
	Retries *int `json:"retries,omitempty"`
	// Ended are the earlier attempts of retried tests as the journal
	// recorded each when it ended (before the test's last attempt), in
	// journal order, for verify to hold the tests' Attempts to; not part
	// of results.json.
	Ended []Test `json:"-"`
}

// BadNode is a node a preflight test found unhealthy: one failed check
// (not a warning) that names the node.
type BadNode struct {
	// Host is the node as the check named it (result.Check.Host).
	Host string `json:"host"`
	// Code is the check's fault code (framework/faults), "" when it has
	// none.
	Code string `json:"code,omitempty"`
	// Check is the check's name; Message what it found.
	Check   string `json:"check"`
	Message string `json:"message,omitempty"`
	// Test is the preflight test that made the check ("health.node").
	Test string `json:"test"`
}

// BadNodesOf lists the bad nodes of tests: every failed check (not a
// warning: a check that could not be made proves nothing wrong) naming a
// host, of the tests marked Preflight, in order; nil when there is none.
func BadNodesOf(tests []Test) []BadNode {
	var out []BadNode
	for _, t := range tests {
		if !t.Preflight {
			continue
		}
		for _, c := range t.Checks {
			if !c.OK && !c.Warn && c.Host != "" {
				out = append(out, BadNode{Host: c.Host, Code: c.Code, Check: c.Name, Message: c.Message, Test: t.Name})
			}
		}
	}
	return out
}

// PreflightSkip is the reason a test that needs the nodes of bad is
// skipped: "node HOST failed health: CODE MESSAGE" for the first failed
// check of each node, joined by "; ", with "(and N more checks)" for a
// node that failed several; "" when bad is empty. verify accepts a skip
// with no raw output only when its message is this reason made from the
// preflight tests' raw outputs, judged again.
func PreflightSkip(bad []BadNode) string {
	var parts []string
	more := map[string]int{}
	at := map[string]int{}
	for _, b := range bad {
		if _, ok := at[b.Host]; ok {
			more[b.Host]++
			continue
		}
		at[b.Host] = len(parts)
		// A message that starts with the node (health.node's do, for
		// tables) would name it twice.
		what := strings.TrimPrefix(b.Message, b.Host+": ")
		if what == "" {
			what = b.Check
		}
		if b.Code != "" {
			what = b.Code + " " + what
		}
		parts = append(parts, "node "+b.Host+" failed health: "+what)
	}
	for h, n := range more {
		parts[at[h]] += " (and " + Count(n, "more check", "more checks") + ")"
	}
	return strings.Join(parts, "; ")
}

// Unjudged says the test ran and measured but nothing it measured was
// judged: it is Skip, left raw outputs or metrics, and is no preflight
// test. A skip that ran nothing (the suite's skip: or min_gpus at the
// run's scope, the bad nodes a preflight test found, a dry run) is not
// unjudged, nor is a test --test left out (it has no result at all).
// Derived from what verify re-derives from the raw outputs (verdict and
// metrics judged again, raw outputs held to the suite, the preflight mark
// held to the plugin), so no flag of the record can turn it off.
func (t Test) Unjudged() bool {
	return t.Status == Skip && !t.Preflight && (len(t.Raw) > 0 || len(t.Metrics) > 0)
}

// Unjudged lists the tests of the run that measured and were not judged
// (Test.Unjudged), in run order, leaving out those a localisation judged
// instead (one of the test with a verdict of its own, pass or fail: its
// runs were judged at their scopes). Any keeps the run from being signed
// off (Finish); nil when there is none.
func (r *Run) Unjudged() []string {
	byLoc := map[string]bool{}
	for _, l := range r.Localisations {
		if v := l.Verdict(); v == Pass || v == Fail {
			byLoc[l.Test] = true
		}
	}
	var out []string
	for _, t := range r.Tests {
		if t.Unjudged() && !byLoc[t.Name] {
			out = append(out, t.Name)
		}
	}
	return out
}

// NotJudgedText says, for reports and messages, which tests measured
// without being judged: "measured, not judged: gemm.matmul, hbm.bandwidth
// (no baseline entry judges them at scope 1x1 in SKU h100-sxm: gpuaccept
// baseline show h100-sxm)", the first 5 named then how many more; "" when
// the run has none. The dry run says the same of the tests it would run
// (NotJudgedNote).
func (r *Run) NotJudgedText() string {
	return NotJudgedNote(r.Unjudged(), r.Scope, r.SKU)
}

// NotJudgedNote is NotJudgedText for the test names given, at scope of
// SKU sku; "" for none.
func NotJudgedNote(tests []string, scope plan.Scope, sku string) string {
	if len(tests) == 0 {
		return ""
	}
	names := tests
	more := ""
	if len(names) > 5 {
		names, more = names[:5], fmt.Sprintf(" and %d more", len(tests)-5)
	}
	them := Noun(len(tests), "it", "them")
	return fmt.Sprintf("measured, not judged: %s%s (no baseline entry judges %s at scope %s in SKU %s: gpuaccept baseline show %s)",
		strings.Join(names, ", "), more, them, scope, sku, sku)
}

// Finish sets the run's bad nodes (BadNodesOf) and its status from its
// tests and localisations: a bad node fails the run; a named
// suspect fails the run even when the tests passed (the per-node stage can
// find a slow node that a passing collective hides). A run that judged no
// benchmark (the localise command, or a scope without baseline; a
// preflight test's pass judges none) takes its localisations' verdicts. A
// failure wins over an error: a run in which one test failed and another
// could not run is a Fail, so that neither its verdict nor its exit code
// hides the hardware fault found. A run that would pass or warn but holds
// a test that measured and was not judged (Unjudged) is Skip: not signed
// off, whatever passed beside it; a fail or an error still wins over it.
func (r *Run) Finish() {
	r.BadNodes = BadNodesOf(r.Tests)
	ss := make([]Status, 0, len(r.Tests)+1)
	judged := false
	for _, t := range r.Tests {
		ss = append(ss, t.Status)
		judged = judged || (t.Status != Skip && !t.Preflight)
	}
	if len(r.BadNodes) > 0 {
		// A node known bad signs nothing off, even when its check was an
		// error of the tool rather than a fail.
		ss = append(ss, Fail)
	}
	for _, l := range r.Localisations {
		switch {
		case len(l.Suspects) > 0:
			ss = append(ss, Fail)
		case !judged:
			// The localise command runs no test, and a run at a scope
			// without baseline judges none: the localisations, whose
			// runs were judged at theirs, are the verdict.
			ss = append(ss, l.Verdict())
		}
	}
	r.Status = Worst(ss...)
	for _, s := range ss {
		if s == Fail {
			r.Status = Fail
		}
	}
	if (r.Status == Pass || r.Status == Warn) && len(r.Unjudged()) > 0 {
		r.Status = Skip
	}
}

// The exit codes of the CLI contract (README.md, "Exit codes").
const (
	// ExitPass: every test passed, or passed with warnings, and every test
	// that measured was judged (tests the scope does not apply to, and
	// those --test left out, may have skipped).
	ExitPass = 0
	// ExitFail: a test failed (outside its band, a correctness gate, a
	// suspect named), whatever else happened in the run.
	ExitFail = 1
	// ExitUsage: the command could not start: bad flags, a malformed SKU
	// file, an unknown test, a results folder that holds files, a dry run
	// that cannot be planned.
	ExitUsage = 2
	// ExitError: a test errored (could not run, its output could not be
	// judged, a broken build) and none failed.
	ExitError = 3
	// ExitNothingJudged: the run is not signed off because something it
	// measured was not judged: every test skipped (no baseline at the
	// scope, a series or test without entries), or some benchmark
	// measured without a baseline entry at the scope while the rest
	// passed or warned (Run.Unjudged; a preflight test's pass judges no
	// benchmark). A fail (ExitFail) or an error (ExitError) wins over it.
	ExitNothingJudged = 4
	// ExitInterrupted: stopped by Ctrl-C or SIGTERM (128 + SIGINT) before
	// it could finish, and nothing had failed.
	ExitInterrupted = 130
)

// ExitCode maps a run's status to the CLI contract: ExitPass for pass and
// warn, ExitFail when a test failed (Finish makes a failure win over an
// error), ExitError when a test errored, ExitNothingJudged when the run is
// Skip (every test skipped, or a benchmark measured and was not judged:
// Finish): a run that is not signed off must not read as green in CI. An
// interruption is the CLI's to add (ExitInterrupted).
func (r *Run) ExitCode() int {
	switch r.Status {
	case Fail:
		return ExitFail
	case Error:
		return ExitError
	case Skip:
		return ExitNothingJudged
	}
	return ExitPass
}

// FormatBytes renders a message size the way people read nccl-tests sizes:
// powers of two as "4 GiB", "512 KiB"; other sizes in bytes ("1000000 B").
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, u := n, 0
	for u < len(units)-1 && v >= 1024 && v%1024 == 0 {
		v /= 1024
		u++
	}
	return fmt.Sprintf("%d %s", v, units[u])
}

// ParseBytes parses a message size as people and nccl-tests' -b/-e write
// it: "4294967296", "4G", "4GiB", "4 GiB", "512K", "8 MiB". Suffixes are
// binary (K = 1024). Errors name the text; negative and overflowing sizes
// are rejected.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "i")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M', 'm':
			mult = 1 << 20
		case 'G', 'g':
			mult = 1 << 30
		case 'T', 't':
			mult = 1 << 40
		}
		if mult > 1 {
			t = strings.TrimSpace(t[:n-1])
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("size %q: want bytes, or a number with K, M, G or T (binary)", s)
	}
	return v * mult, nil
}

// The authorities a judged point can rest on (Judged.Basis), the
// strongest first.
const (
	// BasisGolden: a baseline the site recorded from good runs of its
	// own hardware (gpuaccept baseline record).
	BasisGolden = "golden"
	// BasisReference: a cited public measurement of healthy hardware
	// of the SKU (vendor pages, papers, public nccl-tests outputs, runs of
	// this project), not of the site's own nodes.
	BasisReference = "reference"
	// BasisFloor: no baseline entry judged the point; the SKU's
	// datasheet floor did (at least a stated fraction of the datasheet
	// figure: framework/sku, Ceiling.Floor).
	BasisFloor = "floor"
)

// FigureName names the figure a point of basis b was judged against, as
// findings and reports say it: "datasheet" for a floor, else "baseline".
func FigureName(b string) string {
	if b == BasisFloor {
		return "datasheet"
	}
	return "baseline"
}

// basisOrder ranks the authorities, the strongest first.
var basisOrder = []string{BasisGolden, BasisReference, BasisFloor}

// Bases are the authorities the judged points of ms rest on, each
// once, strongest first; an authority not in that order comes last.
func Bases(ms []Judged) []string {
	seen := map[string]bool{}
	for _, m := range ms {
		if m.Basis != "" && m.Status != Skip {
			seen[m.Basis] = true
		}
	}
	var out []string
	for _, a := range basisOrder {
		if seen[a] {
			out = append(out, a)
			delete(seen, a)
		}
	}
	var rest []string
	for a := range seen {
		rest = append(rest, a)
	}
	sort.Strings(rest)
	return append(out, rest...)
}
