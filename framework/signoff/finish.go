package signoff

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/report"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// FinishOptions are how Finish writes and signs off a run.
type FinishOptions struct {
	// Recorded is the results folder the run recorded, for a folder read
	// back (gpuaccept report); "" for the run's own.
	Recorded string
	// JUnit and HTML, when set, are files to write those reports to as
	// well (--junit, --html).
	JUnit, HTML string
	// Format is the report printed on Stdout: one of report.Formats.
	Format string
	// Key, when set, signs manifest.json (--sign-key).
	Key *manifest.Key
	// OutDeleted says the results folder is removed when the command ends
	// (the demo without --out): no message may send the user to it.
	OutDeleted bool
	// Stdout receives the report, Stderr the sign-off digest and notes.
	Stdout, Stderr io.Writer
	// Plugins parse the raw outputs again for the hardware list
	// (layout.Hardware) written at sign-off; nil writes none.
	Plugins runner.Plugins
}

// Finish writes the reports of a finished run (s judged it; nil when
// unknown) into its results folder and where o says, prints the report
// in o.Format, and returns the run's exit code (result.ExitCode; the
// interrupted code when ctx was cancelled and nothing failed). A results
// folder holding a journal is signed off: its manifest written unless it
// has one, signed with o.Key, and its digest printed on o.Stderr. An
// error (a report that cannot be written, a key that cannot sign) comes
// with result.ExitUsage; a run stopped, that judged nothing, or that
// measured a benchmark without judging it (result.Run.Unjudged) comes
// with its code and an error saying so.
func Finish(ctx context.Context, run *result.Run, s *sku.SKU, o FinishOptions) (int, error) {
	stdout := o.Stdout
	if err := writeHardware(ctx, run, o); err != nil {
		return result.ExitUsage, err
	}
	if err := WriteReports(run, s, o.Recorded); err != nil {
		return result.ExitUsage, err
	}
	if run.Dir != "" {
		if kept, err := resultsdir.KeptBaseline(run.Dir, run.SKU); err == nil {
			s = kept // what the folder's own report.html shows
		}
	}
	if o.JUnit != "" {
		if err := report.WriteJUnit(o.JUnit, run); err != nil {
			return result.ExitUsage, err
		}
	}
	if o.HTML != "" {
		if err := report.WriteHTML(o.HTML, run, s); err != nil {
			return result.ExitUsage, err
		}
	}
	if run.Dir != "" {
		if _, err := os.Stat(filepath.Join(run.Dir, layout.Journal)); err == nil {
			if err := signOff(run, o); err != nil {
				return result.ExitUsage, err
			}
		}
	}
	if err := report.Write(stdout, o.Format, run); err != nil {
		return result.ExitUsage, err
	}
	code := Interrupted(ctx, run.ExitCode())
	if code == result.ExitInterrupted {
		return code, errors.New("interrupted (Ctrl-C or SIGTERM): the tests not finished are errors; gpuaccept report rebuilds the reports")
	}
	if report.Verdict(run) == report.NotSignedOff {
		// What passed beside them signs nothing off (README, Exit codes).
		return code, fmt.Errorf("not signed off: %s; record the site's baseline at that scope (gpuaccept baseline record), or check --sku, --nodes and --gpus-per-node", run.NotJudgedText())
	}
	if run.Status == result.Skip && len(run.Tests) > 0 {
		return code, fmt.Errorf("nothing was judged: every test skipped (%s); check --sku, --nodes and --gpus-per-node against gpuaccept baseline show %s", run.Tests[0].Message, run.SKU)
	}
	return code, nil
}

// writeHardware writes the hardware list of a results folder about to be
// signed off (a journal, no manifest yet): the devices its raw outputs
// show, as the plugins read them (runner.Hardware), which the reports
// then show and verify re-derives. A folder already signed off keeps the
// list it has; outputs that cannot be read again are said on o.Stderr
// and left out of it.
func writeHardware(ctx context.Context, run *result.Run, o FinishOptions) error {
	if run.Dir == "" || o.Plugins == nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(run.Dir, layout.Journal)); err != nil {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(run.Dir, layout.Manifest)); !errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	// The context of a run stopped by Ctrl-C is done: the list is still
	// made, from the outputs already on disk.
	if ctx == nil {
		ctx = context.Background()
	}
	devices, problems := runner.Hardware(context.WithoutCancel(ctx), o.Plugins, run.Dir, run)
	for _, p := range problems {
		fmt.Fprintf(o.Stderr, "warning: hardware list: %s\n", p)
	}
	return resultsdir.WriteHardware(run.Dir, devices)
}

// signOff writes the manifest of the results folder run.Dir when it has
// none (it never replaces one), signs it with --sign-key and prints the
// sign-off digest. A folder that no longer matches the manifest it has is
// not signed.
func signOff(run *result.Run, o FinishOptions) error {
	stderr := o.Stderr
	dir := run.Dir
	mismatched := false
	if _, err := os.Lstat(filepath.Join(dir, layout.Manifest)); errors.Is(err, iofs.ErrNotExist) {
		if _, err := manifest.Write(dir, run.Version, run.SKU); err != nil {
			return err
		}
	} else {
		m, err := manifest.Read(dir)
		if err != nil {
			return err
		}
		problems, err := manifest.Check(dir, m)
		if err != nil {
			return err
		}
		if len(problems) > 0 {
			var ps []string
			for _, p := range problems {
				ps = append(ps, p.String())
			}
			err := fmt.Errorf("%s no longer matches the %s it has: %s (gpuaccept verify %s names every difference)", dir, layout.Manifest, strings.Join(ps, "; "), dir)
			if o.Key != nil {
				return fmt.Errorf("not signed: %w", err)
			}
			fmt.Fprintf(stderr, "warning: %v\n", err)
			mismatched = true
		}
	}
	if o.Key != nil {
		if err := o.Key.Sign(dir); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "signed: %s (%s %s; ssh-keygen -Y verify -f ALLOWED_SIGNERS -I ID -n %s -s %s < %s checks it)\n",
			filepath.Join(dir, layout.SigFile), o.Key.Type(), o.Key.Fingerprint(), manifest.Namespace, filepath.Join(dir, layout.SigFile), filepath.Join(dir, layout.Manifest))
	}
	d, err := manifest.Digest(dir)
	if err != nil {
		return err
	}
	if mismatched {
		// The digest is the manifest's, which the folder no longer
		// matches: printed so it can be compared, not as a sign-off.
		fmt.Fprintf(stderr, "digest of the manifest it has: %s (not a sign-off: the folder no longer matches it)\n", d)
		return nil
	}
	if o.OutDeleted {
		fmt.Fprintf(stderr, "sign-off digest: %s (the results folder is deleted on exit; pass --out DIR to keep it and check it with gpuaccept verify DIR --digest %s)\n", d, d)
	} else {
		fmt.Fprintf(stderr, "sign-off digest: %s (gpuaccept verify %s --digest %s checks the folder against it)\n", d, dir, d)
	}
	return nil
}

// Interrupted is the exit code of a command whose context ctx may have
// been cancelled by Ctrl-C or SIGTERM: result.ExitInterrupted then, unless
// code says a test failed (a failure found before the stop is still a
// failure).
func Interrupted(ctx context.Context, code int) int {
	if ctx != nil && ctx.Err() != nil && code != result.ExitFail {
		return result.ExitInterrupted
	}
	return code
}
