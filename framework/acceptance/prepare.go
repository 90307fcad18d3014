package acceptance

// This file: what run, localise and health resolve their command line
// into before anything runs (Prepare): the SKU checked against its
// plugins, the suite, the topology, the parameters, the launcher, the
// results folder and the notes, in the order each command has always
// refused a bad line, so that the first problem named is the same.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/proc"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/framework/skucheck"
)

// Prepare is a run, localise or health command line as its flags give it,
// with the SKU's catalog and the plugins: what Setup resolves.
type Prepare struct {
	// Request is the command's request; Prepare sets its SKU (from
	// SKUName) and, for health, its Suite (HealthSuite).
	Request
	// Catalog holds the SKU named SKUName (--sku, or the one --sku auto
	// picked) and its file, kept in the results folder.
	Catalog *sku.Catalog
	SKUName string
	// Localise are run's and localise's --localise-* flags.
	Localise LocaliseRequest
	// DryRun is run's and localise's --dry-run.
	DryRun bool
	// Out is --out ("": gpuaccept-results/NAME); Timeout is --timeout.
	Out string
	// Resume says Out is an earlier burn-in's folder (run --resume),
	// taken as it is.
	Resume  bool
	Timeout time.Duration
	// Plugins plan, parse and describe the tests.
	Plugins Plugins
	// Launchers builds the command's launcher for SKU s (with the site,
	// the MPI flags): each run's, pinned to its hosts.
	Launchers func(s *sku.SKU, dryRun bool) NewLauncher
	// OnThisHost says the launcher starts the steps on this host (local),
	// whose containment is then said (proc.Weaker).
	OnThisHost bool
	// AutoNote is --sku auto's note for the run (skuauto.Choice.Note).
	AutoNote []string
	// Version is gpuaccept's; Stdout and Stderr the command's.
	Version        string
	Stdout, Stderr io.Writer
	// Now names a results folder made for the run.
	Now time.Time
}

// Prepared is a Setup ready to run, with its launcher.
type Prepared struct {
	Setup    Setup
	Launcher launch.Launcher
	// Scratch says the results folder is a scratch one (health
	// --slurm-check without --out), removed by Cleanup: no message may
	// send the user to it.
	Scratch bool
	// Cleanup removes what Prepare made for the command alone; always
	// set, to be called once the command ends.
	Cleanup func()
}

// Setup resolves p (Resolve and the rules of each command) into the
// Setup and launcher of the command, saying Resolve's notes, a dry run's
// folder it would refuse and the steps' containment on Stderr. Every
// error is the command line's or the configuration's (a usage error).
func (p Prepare) Setup(ctx context.Context) (Prepared, error) {
	out := Prepared{Cleanup: func() {}}
	s, err := p.Catalog.Get(p.SKUName)
	if err != nil {
		return out, err
	}
	p.SKU = s
	if p.Command == CommandHealth {
		// Health checks the SKU first: its suite is picked by what the
		// plugins declare preflight.
		if err := skucheck.Check(ctx, p.Plugins, s); err != nil {
			return out, err
		}
		if p.Suite, _, err = HealthSuite(ctx, p.Plugins, s, p.Suite); err != nil {
			return out, err
		}
	}
	r, err := Resolve(p.Request)
	if err != nil {
		return out, err
	}
	for _, n := range r.Notes {
		fmt.Fprintf(p.Stderr, "note: %s\n", n)
	}
	var ls LocaliseSettings
	if p.Command != CommandHealth {
		if ls, err = p.Localise.Resolve(s); err != nil {
			return out, err
		}
	}
	// The run's launcher, on its hosts; a localisation's runs build
	// theirs from the same options, each on its own hosts.
	newLauncher := p.Launchers(s, p.DryRun)
	if out.Launcher, err = newLauncher(r.Topology.Hosts); err != nil {
		if p.Command == CommandLocalise {
			err = fmt.Errorf("launcher %s cannot run a test on the nodes given, so it cannot localise: %w", p.Launcher, err)
		}
		return out, err
	}
	if p.Command != CommandHealth {
		if err := skucheck.Check(ctx, p.Plugins, s); err != nil {
			return out, err
		}
	}
	progress := p.Stderr
	kind := p.Suite
	if p.Command == CommandHealth {
		kind = "health"
	}
	if p.SlurmCheck {
		progress = io.Discard // the one line is all a prolog's log shows
	}
	var dir string
	var baseline []byte
	if p.Command == CommandHealth {
		if baseline, err = p.Catalog.File(s.Name); err != nil {
			return out, err
		}
		if p.SlurmCheck && p.Out == "" {
			tmp, err := os.MkdirTemp("", "gpuaccept-health-")
			if err != nil {
				return out, fmt.Errorf("health: scratch folder: %w", err)
			}
			out.Cleanup = func() { os.RemoveAll(tmp) }
			p.Out, out.Scratch = filepath.Join(tmp, "results"), true
		}
	}
	// A dry run names the folder a run would write (batch scripts and
	// manifests hold its paths) but creates nothing; given a folder a run
	// would refuse, it still names that folder, and says so.
	switch dir, err = ResultsDir(p.Out, DirName(s.Name, kind, p.Now)); {
	case p.Resume:
		dir, err = p.Out, nil
	case err == nil:
	case !p.DryRun:
		return out, err
	default:
		dir = p.Out
		fmt.Fprintf(p.Stderr, "note: %v: the run itself would stop here\n", err)
	}
	if p.Command != CommandHealth {
		if baseline, err = p.Catalog.File(s.Name); err != nil {
			return out, err
		}
	}
	out.Setup = Setup{SKU: s, Suite: p.Suite, Topology: r.Topology, Params: r.Params, Timeout: p.Timeout, DryRun: p.DryRun, Dir: dir,
		LauncherName: p.Launcher, NewLauncher: newLauncher, Plugins: p.Plugins, Version: p.Version, Baseline: baseline,
		Localise: ls, Stdout: p.Stdout, Stderr: progress}
	if !p.DryRun {
		out.Setup.Notes = append(p.AutoNote, ContainmentNotes(p.OnThisHost, progress)...)
	}
	return out, nil
}

// ContainmentNotes says, once on w and as the run's notes, that the steps
// a launcher starts on this host (onThisHost: the local launcher) are
// held less than fully (proc.Weaker: no pid namespace, as in a pod
// without CAP_SYS_ADMIN), naming what is missing; none when they are held
// fully or run elsewhere.
func ContainmentNotes(onThisHost bool, w io.Writer) []string {
	if !onThisHost {
		return nil
	}
	n := proc.Weaker()
	if n == "" {
		return nil
	}
	fmt.Fprintf(w, "warning: %s\n", n)
	return []string{n}
}
