// Package acceptance runs an acceptance: a SKU's suite through a launcher,
// judged against the SKU's baseline, then the localisation of the
// multi-node tests that call for it (Run); or the localisation alone
// (Localise). It is the orchestration that "gpuaccept run" and "gpuaccept
// localise" call once their flags are parsed into options, and that
// anything else driving a run (a test, another front end) calls the same
// way: flags -> RunOptions -> Run(ctx, opts) -> signoff.Finish.
//
// It owns the sequence and the wiring between the packages that do the
// work: framework/runner runs and judges one suite run, framework/localise
// decides which runs narrow a failure down (this package runs them, each
// with a launcher of its own pinned to its hosts), framework/journal and
// framework/resultsdir keep the results folder. It never parses a flag and
// never picks an exit code: options arrive parsed and validated (Validate
// checks them again, naming fields, for callers without a command line),
// and the finished run goes to signoff.Finish for its reports and
// sign-off.
package acceptance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/localise"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/progress"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// MaxRetries bounds RunOptions.Retries: a test that needs more retries
// than this to pass is broken, and every attempt's raw outputs are kept,
// so no bound would fill the disk.
const MaxRetries = 10

// Plugins is what a run needs of the plugin host (*pluginapi.Host): plan
// and parse for the runner, describe for the HCA maps of the localisation.
type Plugins interface {
	runner.Plugins
	Describe(ctx context.Context, plugin string) (pluginapi.Description, error)
}

// NewLauncher builds the launcher of one run pinned to hosts (in node
// order; empty: the launcher finds them). An error says the launcher
// cannot run a test on those nodes. A localisation calls it once per set
// of hosts, so it must not change what it was built from.
type NewLauncher func(hosts []string) (launch.Launcher, error)

// Setup is what a run and a localisation share: what is under test,
// where it runs, and where its results and messages go.
type Setup struct {
	// SKU is the SKU under test, whose baseline judges every run.
	SKU *sku.SKU
	// Suite names the suite of SKU that runs (or whose tests are
	// localised).
	Suite string
	// Topology is the run's scope (nodes >= 1, GPUs per node >= 1) and
	// its hosts, which are the nodes a localisation narrows down.
	Topology plan.Topology
	// Params are the command line's test parameters (KEY, PLUGIN:KEY or
	// TEST:KEY to VALUE), laid over the suite's.
	Params map[string]string
	// Timeout is each test's time limit; above zero.
	Timeout time.Duration
	// DryRun prints the commands (and a localisation's schedule) on
	// Stdout instead of running anything; nothing is written.
	DryRun bool
	// Dir is the results folder, chosen by the caller; a run creates it.
	// A dry run only names it.
	Dir string
	// LauncherName is the launcher's name (--launcher), for messages and
	// the run's record.
	LauncherName string
	// NewLauncher builds the launcher of each localisation run, pinned to
	// its hosts.
	NewLauncher NewLauncher
	// Plugins plans, parses and describes the tests.
	Plugins Plugins
	// Version is gpuaccept's version, recorded in every run.
	Version string
	// Notes are recorded in the run (result.Run.Notes): how its steps are
	// held, when less than fully (proc.Weaker).
	Notes []string
	// Baseline is the content of the SKU file, kept in every results
	// folder so that it verifies against what judged it.
	Baseline []byte
	// Localise are the localisation's settings.
	Localise LocaliseSettings
	// Stdout receives what a dry run prints (commands, schedules, notes).
	Stdout io.Writer
	// Stderr receives progress, notes and warnings.
	Stderr io.Writer
}

// LocaliseSettings are a localisation's settings (the --localise-* flags
// and --nics), resolved against the SKU; see localise.Config.
type LocaliseSettings struct {
	// Strategy is one of localise.Strategies; "" is localise.Auto.
	Strategy string
	// Tolerance is the fraction (0 to 1, exclusive) below the reference
	// that makes a run slow; 0 is localise.DefaultTolerance.
	Tolerance float64
	// Matchings is the number of random matchings; 0 is
	// localise.DefaultMatchings.
	Matchings int
	// Seed seeds the random matchings.
	Seed uint64
	// NodeSuite is the single-node suite of the per-node stage, already
	// chosen (the SKU's default resolved); "" skips the stage.
	NodeSuite string
	// NodeTests restricts NodeSuite to these tests; empty: all.
	NodeTests []string
	// NICs are the HCA names of every node (mlx5_0, ...); empty: those
	// of the test's own HCA map.
	NICs []string
	// Parallel bounds the localisation runs in flight; 0: a whole round.
	Parallel int
}

// RunOptions are the settings of Run.
type RunOptions struct {
	Setup
	// Launcher is the run's launcher, built by NewLauncher for
	// Topology.Hosts (the caller builds it first, so that a launcher that
	// refuses the hosts stops the command before anything starts).
	Launcher launch.Launcher
	// Only restricts the run to these tests of the suite; empty: all.
	Only []string
	// Retries runs a test that failed or errored up to this many more
	// times, 0 to MaxRetries.
	Retries int
	// LocaliseAll localises every multi-node test after the run, not
	// only those that failed or errored; NoLocalise none. At most one.
	LocaliseAll, NoLocalise bool
	// Telemetry samples every node's GPUs beside each test
	// (runner.Runner.Telemetry).
	Telemetry bool
}

// NothingJudgedError is a dry run's answer when the run would not be
// signed off for want of baseline entries (exit code
// result.ExitNothingJudged, as the run would exit): the baseline judges
// none of the benchmarks at the run's scope (health tests are judged by
// their checks, so "no benchmark", not "nothing"), or some benchmark would measure
// with no entry at it while others would be judged (the run's rule,
// result.Run.Finish).
type NothingJudgedError struct {
	Scope plan.Scope
	SKU   string
	// NotJudged are the benchmarks that would run without a baseline
	// entry at Scope while others would be judged; nil when none would be
	// judged at all.
	NotJudged []string
}

func (e *NothingJudgedError) Error() string {
	if len(e.NotJudged) > 0 {
		return "dry run: the run would not be signed off: " + result.NotJudgedNote(e.NotJudged, e.Scope, e.SKU)
	}
	return fmt.Sprintf("dry run: no benchmark would be judged at scope %s (gpuaccept baseline show %s)", e.Scope, e.SKU)
}

// Validate checks the options, naming the field at fault. The command
// line checks its flags before (naming the flags); this is for callers
// without one.
func (o RunOptions) Validate() error {
	if err := o.Setup.validate(); err != nil {
		return err
	}
	if o.Launcher == nil {
		return errors.New("RunOptions.Launcher: nil")
	}
	if o.Retries < 0 || o.Retries > MaxRetries {
		return fmt.Errorf("RunOptions.Retries %d: want 0 to %d", o.Retries, MaxRetries)
	}
	if o.LocaliseAll && o.NoLocalise {
		return errors.New("RunOptions.LocaliseAll and NoLocalise contradict each other")
	}
	return nil
}

func (s Setup) validate() error {
	if s.SKU == nil {
		return errors.New("Setup.SKU: nil")
	}
	if _, ok := s.SKU.Suites[s.Suite]; !ok {
		return fmt.Errorf("Setup.Suite %q: SKU %s has no such suite", s.Suite, s.SKU.Name)
	}
	t := s.Topology
	if t.Nodes < 1 || t.Nodes > plan.MaxNodes || t.GPUsPerNode < 1 || t.GPUsPerNode > plan.MaxGPUsPerNode {
		return fmt.Errorf("Setup.Topology %s: want 1 to %d nodes of 1 to %d GPUs", t.Scope, plan.MaxNodes, plan.MaxGPUsPerNode)
	}
	if s.Timeout <= 0 {
		return fmt.Errorf("Setup.Timeout %s: want a limit above zero", s.Timeout)
	}
	if !s.DryRun && s.Dir == "" {
		return errors.New("Setup.Dir: empty (a run needs a results folder)")
	}
	if s.NewLauncher == nil || s.Plugins == nil {
		return errors.New("Setup.NewLauncher and Setup.Plugins: both are needed")
	}
	return s.Localise.validate(s.SKU)
}

func (l LocaliseSettings) validate(s *sku.SKU) error {
	known := l.Strategy == ""
	for _, st := range localise.Strategies {
		known = known || l.Strategy == st
	}
	if !known {
		return fmt.Errorf("LocaliseSettings.Strategy %q: want one of %v", l.Strategy, localise.Strategies)
	}
	if math.IsNaN(l.Tolerance) || l.Tolerance < 0 || l.Tolerance >= 1 {
		return fmt.Errorf("LocaliseSettings.Tolerance %g: want a fraction between 0 and 1", l.Tolerance)
	}
	if l.Matchings < 0 || l.Parallel < 0 {
		return fmt.Errorf("LocaliseSettings.Matchings %d / Parallel %d: want 0 or more", l.Matchings, l.Parallel)
	}
	if l.NodeSuite == "" {
		if len(l.NodeTests) > 0 {
			return errors.New("LocaliseSettings.NodeTests: no NodeSuite to take them from")
		}
		return nil
	}
	su, ok := s.Suites[l.NodeSuite]
	if !ok || su.Nodes > 1 {
		return fmt.Errorf("LocaliseSettings.NodeSuite %q: not a single-node suite of SKU %s", l.NodeSuite, s.Name)
	}
	for _, t := range l.NodeTests {
		if !su.Has(t) {
			return fmt.Errorf("LocaliseSettings.NodeTests %s: not a test of suite %s", t, l.NodeSuite)
		}
	}
	return nil
}

// writers fills in the writers a caller left nil.
func (s *Setup) writers() {
	if s.Stdout == nil {
		s.Stdout = io.Discard
	}
	if s.Stderr == nil {
		s.Stderr = io.Discard
	}
}

// Run runs the suite, then localises its multi-node tests that failed or
// errored (all of them with LocaliseAll; none with NoLocalise), each
// localisation kept in the run and its journal as it ends. It returns the
// finished run, whose reports and sign-off signoff.Finish writes.
//
// A dry run prints each test's commands and, for a multi-node run, the
// localisation schedule; it returns the planned run, or a
// *NothingJudgedError when the run would not be signed off for want of
// baseline entries (none judged, or a benchmark without one). Errors:
// invalid options, a run that cannot start (a results folder not
// writable), tests that cannot be planned in a dry run.
func Run(ctx context.Context, o RunOptions) (*result.Run, error) {
	o.writers()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s, topo := o.SKU, o.Topology
	sr := newSubRunner(o.Setup)
	lc := sr.config(ctx)
	r := &runner.Runner{Plugins: o.Plugins, Launcher: o.Launcher, SKU: s, Dir: o.Dir, Timeout: o.Timeout, Params: o.Params, Only: o.Only,
		DryRun: o.DryRun, Progress: o.Stderr, Version: o.Version, Retries: o.Retries, Baseline: o.Baseline, Notes: o.Notes,
		Telemetry: o.Telemetry}
	if o.DryRun {
		r.Progress = o.Stdout
	} else {
		disp := progress.For(o.Stderr)
		disp.Expected = journal.LastDurations(filepath.Dir(filepath.Clean(o.Dir)), s.Name, o.Suite, topo.Scope, o.Dir)
		defer disp.Close()
		r.Events = disp
	}
	res, err := r.Run(ctx, o.Suite, topo)
	if err != nil {
		return nil, err
	}
	if o.DryRun {
		return res, dryRunLocalisation(o, sr, lc, res)
	}
	if d, ok := r.Events.(*progress.Display); ok {
		d.Close()
	}
	if !o.NoLocalise {
		localiseTests(ctx, lc, sr.probe, res, o.Suite, topo, o.LocaliseAll, o.Stderr)
		res.Duration = time.Since(res.Started)
		res.Finish()
		// The reports, and verify, take the duration from the journal.
		if err := journal.AppendEnd(res.Dir, res.Duration); err != nil {
			fmt.Fprintf(o.Stderr, "warning: %v\n", err)
		}
	}
	return res, nil
}

// dryRunLocalisation says, after a dry run's commands, what the baseline
// could not judge and how each multi-node test would be localised.
func dryRunLocalisation(o RunOptions, sr *subRunner, lc *localise.Config, res *result.Run) error {
	s, topo, stdout := o.SKU, o.Topology, o.Stdout
	if res.Status == result.Error {
		return errors.New("dry run: some tests could not be planned (see above)")
	}
	// Say before anything runs when the baseline could not judge it.
	scope := topo.Scope
	judged := 0
	var unjudged []string
	for _, t := range res.Tests {
		if len(s.Entries(t.Name, scope)) > 0 {
			judged++
		} else if t.Message == "dry run" && !t.Preflight { // a health test is judged by its checks
			fmt.Fprintf(stdout, "note: %s has no baseline at scope %s in SKU %s: it would not be judged\n", t.Name, scope, s.Name)
			unjudged = append(unjudged, t.Name)
		}
	}
	// With LocaliseAll a run nothing judges at its own scope still signs
	// off through its localisations' runs, judged at theirs (every
	// multi-node test is localised: result.Run.Unjudged).
	byLocalisation := o.LocaliseAll && topo.Nodes >= 2
	switch {
	case byLocalisation:
	case judged == 0:
		return &NothingJudgedError{Scope: scope, SKU: s.Name}
	case len(unjudged) > 0:
		// A benchmark measured and not judged keeps the run from being
		// signed off, whatever is judged beside it.
		return &NothingJudgedError{Scope: scope, SKU: s.Name, NotJudged: unjudged}
	}
	if topo.Nodes < 2 || o.NoLocalise {
		return nil
	}
	when := "if it fails"
	if o.LocaliseAll {
		when = "--localise"
	}
	var pinErr error
	if len(topo.Hosts) >= 2 {
		pinErr = sr.probe(topo.Hosts)
	}
	for _, t := range res.Tests {
		if pinErr != nil {
			fmt.Fprintf(stdout, "# %s: would not be localised: launcher %s cannot run a test on nodes it is given: %v\n", t.Name, o.LauncherName, pinErr)
			continue
		}
		fmt.Fprintf(stdout, "# %s: then localised (%s)\n", t.Name, when)
		if err := lc.Schedule(t.Name, topo.Hosts).Write(stdout, 0); err != nil {
			return err
		}
	}
	return nil
}
