package cliopts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/burnin"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/signoff"
)

// BurnInFlags are run's burn-in and telemetry flags: --duration,
// --cycles, --drift, --resume, --telemetry.
type BurnInFlags struct {
	Duration  time.Duration
	Cycles    int
	DriftPct  float64
	Resume    string
	Telemetry bool
	fs        *pflag.FlagSet
	resumed   *burnin.Record
}

// Add declares the flags on fs.
func (b *BurnInFlags) Add(fs *pflag.FlagSet) {
	b.fs = fs
	fs.DurationVar(&b.Duration, "duration", 0, "burn-in: run the suite cycle after cycle for this long (4h); each cycle is judged and kept, and the run is judged across cycles")
	fs.IntVar(&b.Cycles, "cycles", 0, "burn-in: run the suite this many cycles (with --duration: whichever ends first)")
	fs.Float64Var(&b.DriftPct, "drift", 100*burnin.DefaultDrift, "burn-in: a point that falls by more than this percentage over the cycles fails")
	fs.StringVar(&b.Resume, "resume", "", "continue the burn-in in this folder (its plan, cycles and start are its own)")
	fs.BoolVar(&b.Telemetry, "telemetry", false, "sample every node's GPUs (clocks, power, temperatures, slowdowns, errors) beside each test; always on in a burn-in")
}

// On says a burn-in was asked for.
func (b *BurnInFlags) On() bool { return b.Duration > 0 || b.Cycles > 0 || b.Resume != "" }

// Validate checks the flags alone; out is --out and dryRun --dry-run.
// With --resume, the burn-in's own SKU, launcher and scope fill in what
// the command line leaves out (c's --sku, scope's --launcher, --nodes,
// --gpus-per-node), so that `run --resume DIR` continues it as it ran.
func (b *BurnInFlags) Validate(out string, dryRun bool, c *Common, scope *ScopeFlags) error {
	if b.fs == nil {
		return nil // a command without the flags (localise)
	}
	changed := b.fs.Changed
	switch {
	case b.Duration < 0 || (changed("duration") && b.Duration == 0):
		return Usage(fmt.Errorf("--duration %s: want a time above zero", b.Duration))
	case b.Cycles < 0 || b.Cycles > burnin.MaxCycles || (changed("cycles") && b.Cycles == 0):
		return Usage(fmt.Errorf("--cycles %d: want 1 to %d", b.Cycles, burnin.MaxCycles))
	case math.IsNaN(b.DriftPct) || b.DriftPct <= 0 || b.DriftPct >= 100:
		return Usage(fmt.Errorf("--drift %g: want a percentage above 0 and below 100", b.DriftPct))
	case changed("drift") && !b.On():
		return Usage(errors.New("--drift judges a burn-in: give it with --duration or --cycles"))
	case b.Resume != "" && (b.Duration > 0 || b.Cycles > 0 || b.fs.Changed("drift")):
		return Usage(errors.New("--resume takes the burn-in's own --duration, --cycles and --drift: give none of them"))
	case b.Resume != "" && out != "":
		return Usage(errors.New("--resume names the burn-in folder: give no --out"))
	case b.On() && dryRun:
		return Usage(errors.New("--dry-run prints one cycle's commands: give it without --duration, --cycles or --resume"))
	}
	if b.Resume != "" {
		rec, err := burnin.Read(b.Resume)
		if err != nil {
			return Usage(fmt.Errorf("--resume: %w", err))
		}
		b.resumed = rec
		if c.SKU == "" {
			c.SKU = rec.SKU
		}
		if !changed("launcher") {
			scope.launcher = rec.Launcher
		}
		if !changed("nodes") {
			scope.nodes = rec.Scope.Nodes
		}
		if !changed("gpus-per-node") {
			scope.gpus = rec.Scope.GPUsPerNode
		}
	}
	return nil
}

// Suite is the suite a burn-in runs when --suite names none: the resumed
// burn-in's, else the SKU's burnin suite; "" for no burn-in.
func (b *BurnInFlags) Suite() string {
	switch {
	case b.resumed != nil:
		return b.resumed.Suite
	case b.On():
		return "burnin"
	}
	return ""
}

// Plan is the burn-in's plan from the flags.
func (b *BurnInFlags) Plan() burnin.Plan {
	return burnin.Plan{Duration: b.Duration, Cycles: b.Cycles, Drift: b.DriftPct / 100}
}

// BurnIn runs the suite cycle after cycle (acceptance.BurnIn), each
// cycle signed off quietly (Finish), then prints the burn-in's report
// and digest; it returns the exit code.
func (c *Common) BurnIn(ctx context.Context, b *BurnInFlags, ro acceptance.RunOptions, stdout, stderr io.Writer) (int, error) {
	rec, digest, code, err := acceptance.BurnIn(ctx, acceptance.BurnInOptions{RunOptions: ro, Plan: b.Plan(), Resume: b.Resume != "", Key: c.Key,
		FinishCycle: func(ctx context.Context, run *result.Run) error {
			_, err := c.Finish(run, ro.SKU, io.Discard, io.Discard)
			return err
		}})
	if rec != nil {
		sayBurnIn(rec, ro.Dir, digest, stdout, stderr)
	}
	return code, err
}

// RebuildBurnIn is gpuaccept report on a burn-in folder: a cycle left
// unsigned (kill -9) signed off from its journal as report does a run,
// the record re-derived from the cycles, the reports written again and
// the folder sealed again.
func (c *Common) RebuildBurnIn(dir string, stdout, stderr io.Writer) (int, error) {
	ctx, stop := SignalContext()
	defer stop()
	rec, digest, err := acceptance.RebuildBurnIn(ctx, dir, c.Version, c.Key, func(ctx context.Context, d string) error {
		run, err := c.LoadRun(d)
		if err != nil {
			return err
		}
		s, _ := resultsdir.KeptBaseline(d, run.SKU)
		// As report does: a cycle whose raw outputs no longer give its
		// verdicts is not signed off.
		if _, err := c.MayRebuild(d, run, s, stderr); err != nil {
			return err
		}
		_, err = c.Finish(run, s, io.Discard, io.Discard)
		return err
	}, stderr)
	if err != nil {
		return result.ExitUsage, err
	}
	sayBurnIn(rec, dir, digest, stdout, stderr)
	return burnin.ExitCode(rec), nil
}

// VerifyBurnIn is gpuaccept verify on a burn-in folder
// (signoff.VerifyBurnIn); it returns verify's exit code.
func VerifyBurnIn(ctx context.Context, dir string, o signoff.Options, stdout io.Writer) (int, error) {
	failed, err := signoff.VerifyBurnIn(ctx, dir, o, stdout)
	switch {
	case err != nil:
		return result.ExitUsage, err
	case ctx.Err() != nil:
		return result.ExitInterrupted, errors.New("verify: interrupted (Ctrl-C or SIGTERM) before every cycle was verified")
	case failed:
		return result.ExitFail, nil
	}
	return result.ExitPass, nil
}

func sayBurnIn(rec *burnin.Record, dir, digest string, stdout, stderr io.Writer) {
	fmt.Fprint(stdout, burnin.Text(rec))
	fmt.Fprintln(stderr, redact.PrintableLine(redact.String(fmt.Sprintf("sign-off digest: %s (gpuaccept verify %s --digest %s checks the folder against it)", digest, dir, digest))))
	fmt.Fprintln(stderr, redact.PrintableLine(redact.String(fmt.Sprintf("results: %s (%s, %s, cycle-NNNN/)", dir, burnin.HTMLReport, burnin.TextReport))))
}
