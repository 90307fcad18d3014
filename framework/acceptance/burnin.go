package acceptance

// This file: a burn-in (run --duration / --cycles): the suite run cycle
// after cycle, each cycle a results folder signed off as it ends, judged
// across cycles by framework/burnin.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/gpuaccept/gpuaccept/framework/burnin"
	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
)

// BurnInOptions are the settings of BurnIn.
type BurnInOptions struct {
	RunOptions
	// Plan is the duration or cycle count and the drift band.
	Plan burnin.Plan
	// Resume continues the burn-in in Setup.Dir.
	Resume bool
	// FinishCycle writes one cycle's reports and signs it off
	// (signoff.Finish), quietly: the burn-in prints its own line per
	// cycle.
	FinishCycle func(ctx context.Context, run *result.Run) error
	// Key signs the burn-in folder's manifest; nil: none.
	Key *manifest.Key
}

// BurnIn runs the suite cycle after cycle into Setup.Dir (burnin.Run):
// telemetry beside every test, no localisation inside a cycle (a
// cycle's failure is a finding of the burn-in). Once it ends, whether
// its plan was done or ctx ended (Ctrl-C, a timeout), the burn-in
// folder gets its reports and a manifest over every cycle, and the
// record, the digest and the exit code come back.
func BurnIn(ctx context.Context, o BurnInOptions) (*burnin.Record, string, int, error) {
	o.writers()
	if err := o.RunOptions.Validate(); err != nil {
		return nil, "", result.ExitUsage, err
	}
	if o.Resume {
		// Every cycle is judged by the baseline the first was: a resume
		// with another SKU file would mix two verdicts in one burn-in.
		first, err := safefs.ReadFile(filepath.Join(o.Dir, burnin.CycleDir(1)), filepath.Join(layout.Baseline, o.SKU.Name+".yaml"), 64<<20)
		if err == nil && !bytes.Equal(first, o.Baseline) {
			return nil, "", result.ExitUsage, fmt.Errorf("resume %s: its cycles were judged by another %s baseline than this one (%s): give the same --baselines", o.Dir, o.SKU.Name, o.SKU.Source)
		}
	}
	cycle := o.RunOptions
	// Telemetry beside every test, but a replay runs nothing to sample.
	cycle.NoLocalise, cycle.LocaliseAll, cycle.Telemetry = true, false, o.LauncherName != result.ReplayLauncher
	rec, err := burnin.Run(ctx, burnin.Options{Plan: o.Plan, Dir: o.Dir, Resume: o.Resume, SKU: o.SKU.Name, Suite: o.Suite,
		Scope: o.Topology.Scope, Launcher: o.LauncherName, Progress: o.Stderr, Load: loadRun,
		RunCycle: func(ctx context.Context, n int, dir, note string) (*result.Run, error) {
			c := cycle
			c.Dir = dir
			c.Notes = append(append([]string(nil), cycle.Notes...), note)
			run, err := Run(ctx, c)
			if err != nil {
				return nil, err
			}
			if err := o.FinishCycle(ctx, run); err != nil {
				return nil, fmt.Errorf("sign off %s: %w", dir, err)
			}
			return run, nil
		}})
	if rec == nil {
		return nil, "", result.ExitUsage, err
	}
	digest, ferr := burnin.Finish(o.Dir, rec, o.Version, o.Key)
	if err == nil {
		err = ferr
	}
	code := burnin.ExitCode(rec)
	if ctx.Err() != nil && code != result.ExitFail {
		code = result.ExitInterrupted
	}
	if err != nil && code == result.ExitPass {
		code = result.ExitError
	}
	return rec, digest, code, err
}

// loadRun reads a finished cycle back (resultsdir.Load).
func loadRun(dir string) (*result.Run, error) {
	run, _, err := resultsdir.Load(dir)
	return run, err
}

// RebuildBurnIn re-derives a burn-in folder's record from its cycles
// (after kill -9: the record of the last cycle that ended), each cycle
// left unsigned first signed off from its journal by rebuildCycle
// (gpuaccept report DIR's own path), then writes its reports and seals
// it again; it returns the record and digest.
func RebuildBurnIn(ctx context.Context, dir, version string, key *manifest.Key, rebuildCycle func(ctx context.Context, dir string) error, w io.Writer) (*burnin.Record, string, error) {
	rec, err := burnin.Read(dir)
	if err != nil {
		return nil, "", err
	}
	if err := burnin.CheckSealed(dir); err != nil {
		return nil, "", err
	}
	names, err := burnin.Cycles(dir)
	if err != nil {
		return nil, "", err
	}
	for _, n := range names {
		if burnin.Unstarted(filepath.Join(dir, n)) {
			continue // killed as it began: nothing to rebuild
		}
		if _, err := manifest.Read(filepath.Join(dir, n)); err != nil {
			fmt.Fprintf(w, "burn-in %s: %s was not signed off (interrupted): rebuilding it from its journal\n", dir, n)
			if err := rebuildCycle(ctx, filepath.Join(dir, n)); err != nil {
				return nil, "", fmt.Errorf("rebuild %s: %w", n, err)
			}
		}
	}
	again, _, err := burnin.Rederive(dir, rec, loadRun)
	if err != nil {
		return nil, "", err
	}
	if err := burnin.Save(dir, again); err != nil {
		return nil, "", err
	}
	digest, err := burnin.Finish(dir, again, version, key)
	return again, digest, err
}
