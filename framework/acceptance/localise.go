package acceptance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/localise"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/signoff"
)

// LocaliseOptions are the settings of Localise.
type LocaliseOptions struct {
	Setup
	// Tests are the multi-node tests of the suite to localise, in order;
	// at least one, none marked skip. Topology.Hosts are the nodes, at
	// least 2.
	Tests []string
}

// Validate checks the options, naming the field at fault.
func (o LocaliseOptions) Validate() error {
	if err := o.Setup.validate(); err != nil {
		return err
	}
	if len(o.Topology.Hosts) < 2 {
		return fmt.Errorf("LocaliseOptions.Topology.Hosts: %d hosts, want 2 or more to narrow down", len(o.Topology.Hosts))
	}
	if len(o.Tests) == 0 {
		return errors.New("LocaliseOptions.Tests: empty")
	}
	su := o.SKU.Suites[o.Suite]
	for _, t := range o.Tests {
		if !su.Has(t) {
			return fmt.Errorf("LocaliseOptions.Tests %s: not a test of suite %s", t, o.Suite)
		}
	}
	return nil
}

// Localise localises each of the tests on the hosts given, without a
// suite run before: the results folder holds the journal (no test
// planned), the baseline copy and each localisation's runs, so that
// gpuaccept report rebuilds it and verify checks it. It returns the run,
// its Localisations filled in, for signoff.Finish.
//
// A dry run prints each test's schedule and what one of its runs
// launches (the k8s manifests, the mpirun line), and returns nil, nil.
// Errors: invalid options, a results folder that cannot be written, a
// dry run that cannot be planned.
func Localise(ctx context.Context, o LocaliseOptions) (*result.Run, error) {
	o.writers()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	topo, stdout, stderr := o.Topology, o.Stdout, o.Stderr
	sr := newSubRunner(o.Setup)
	lc := sr.config(ctx)
	if o.DryRun {
		for _, n := range o.Tests {
			if err := lc.Schedule(n, topo.Hosts).Write(stdout, 0); err != nil {
				return nil, err
			}
			// What one of those runs launches, pinned to its nodes as
			// every run is (the k8s manifests, the mpirun line, ...).
			pair := plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: topo.GPUsPerNode}, Hosts: topo.Hosts[:2]}
			if err := sr.show(ctx, o.Suite, n, pair, filepath.Join(o.Dir, layout.Localise), stdout); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	if err := safefs.MkdirAll(o.Dir, "."); err != nil {
		return nil, fmt.Errorf("create results folder: %w", err)
	}
	run := &result.Run{SKU: o.SKU.Name, SKUSource: o.SKU.Source, Suite: o.Suite, Launcher: o.LauncherName, Scope: topo.Scope, Hosts: topo.Hosts,
		Started: time.Now().UTC(), Version: o.Version, Dir: o.Dir, Tests: []result.Test{}}
	// The journal (no test planned) and the baseline copy make the folder
	// one that gpuaccept report rebuilds and gpuaccept verify checks.
	if err := journal.SaveBaseline(o.Dir, o.SKU.Name, o.Baseline); err != nil {
		return nil, err
	}
	jw, err := journal.Create(o.Dir, run, nil)
	if err != nil {
		return nil, err
	}
	for _, n := range o.Tests {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(stderr, "localise %s on %d nodes (%s)\n", n, len(topo.Hosts), lc.StrategyFor(len(topo.Hosts)))
		l := lc.Localise(ctx, o.Suite, n, topo, "asked")
		run.Localisations = append(run.Localisations, l)
		if err := jw.AddLocalisation(l); err != nil {
			fmt.Fprintf(stderr, "warning: %v\n", err)
		}
	}
	// One duration for the journal and the reports: verify re-derives
	// the reports from the journal.
	run.Duration = time.Since(run.Started)
	if err := jw.End(run.Duration); err != nil {
		fmt.Fprintf(stderr, "warning: %v\n", err)
	}
	if err := jw.Close(); err != nil {
		fmt.Fprintf(stderr, "warning: %v\n", err)
	}
	run.Finish()
	return run, nil
}

// subRunner is what a localisation's runs need to run: the run's own
// wiring, pinned to other hosts for each run.
type subRunner struct {
	Setup
}

func newSubRunner(s Setup) *subRunner { return &subRunner{Setup: s} }

// probe checks that the launcher can be pinned to hosts: a launcher that
// cannot run a test on the nodes given refuses them when it is built (k8s
// pins its pods to the nodes named; it refuses a name no node can have).
func (sr *subRunner) probe(hosts []string) error {
	_, err := sr.launcherFor(hosts)
	return err
}

// launcherFor builds the launcher of one run, pinned to hosts.
func (sr *subRunner) launcherFor(hosts []string) (launch.Launcher, error) {
	l, err := sr.NewLauncher(hosts)
	if err != nil {
		return nil, fmt.Errorf("launcher %s for %s: %w", sr.LauncherName, strings.Join(hosts, ","), err)
	}
	return l, nil
}

// show prints, for a dry run, what one run of a localisation launches
// (test at topo, pinned to its hosts): the k8s manifests, the batch
// script, the mpirun line. Errors: the launcher refuses the hosts, or the
// run cannot be planned (said above the error, as run's dry run does).
func (sr *subRunner) show(ctx context.Context, suite, test string, topo plan.Topology, dir string, w io.Writer) error {
	l, err := sr.launcherFor(topo.Hosts)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "# a run of the localisation: %s on %s\n", test, strings.Join(topo.Hosts, ","))
	r := &runner.Runner{Plugins: sr.Plugins, Launcher: l, SKU: sr.SKU, Dir: dir, Timeout: sr.Timeout, Params: sr.Params,
		Only: []string{test}, DryRun: true, Progress: w, Version: sr.Version, Baseline: sr.Baseline}
	res, err := r.Run(ctx, suite, topo)
	if err != nil {
		return fmt.Errorf("dry run of %s on %s: %w", test, strings.Join(topo.Hosts, ","), err)
	}
	if res.Status == result.Error {
		return fmt.Errorf("dry run: %s on %s could not be planned (see above)", test, strings.Join(topo.Hosts, ","))
	}
	return nil
}

// exec runs a localisation's request with a launcher of its own, pinned to
// the request's hosts, and writes the run's own results folder.
func (sr *subRunner) exec(ctx context.Context, req localise.Request) (*result.Run, error) {
	l, err := sr.launcherFor(req.Topology.Hosts)
	if err != nil {
		return nil, err
	}
	params := runner.Params(sr.Params, req.Params)
	r := &runner.Runner{Plugins: sr.Plugins, Launcher: l, SKU: sr.SKU, Dir: req.Dir, Timeout: sr.Timeout, Params: params,
		Only: req.Tests, Progress: &prefixWriter{w: sr.Stderr, prefix: "  [" + req.Label + "] "}, Version: sr.Version, Baseline: sr.Baseline, Notes: sr.Notes}
	run, err := r.Run(ctx, req.Suite, req.Topology)
	if err != nil {
		return nil, err
	}
	if err := signoff.WriteReports(run, sr.SKU, ""); err != nil {
		return run, fmt.Errorf("write the reports of %s: %w", req.Dir, err)
	}
	return run, nil
}

// config builds the localisation settings of the run: its runs go
// through exec, its HCA maps come from the plugins' declarations.
func (sr *subRunner) config(ctx context.Context) *localise.Config {
	ls := sr.Localise
	return &localise.Config{SKU: sr.SKU, Exec: sr.exec, Dir: sr.Dir, Strategy: ls.Strategy, Tolerance: ls.Tolerance,
		Matchings: ls.Matchings, Seed: ls.Seed, NodeSuite: ls.NodeSuite, NodeTests: ls.NodeTests,
		HCAMap: hcaMaps(ctx, sr.Plugins, sr.SKU.Suites[sr.Suite], sr.Params), NICs: ls.NICs,
		Parallel: ls.Parallel, Progress: sr.Stderr}
}

// prefixWriter writes whole lines to w, each after prefix; w is shared by
// runs in flight at once, so lines are written under one lock.
type prefixWriter struct {
	w      io.Writer
	prefix string
	buf    []byte
}

var prefixMu sync.Mutex

func (p *prefixWriter) Write(b []byte) (int, error) {
	prefixMu.Lock()
	defer prefixMu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i]); err != nil {
			return len(b), err
		}
		p.buf = p.buf[i+1:]
	}
}
