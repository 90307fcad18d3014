// Package launch defines the launcher boundary: where a plan's steps run
// (this host, a recording, nodes over ssh, Slurm, Kubernetes) and how their
// outputs reach the results folder. A launcher never knows what the output
// means; it only runs steps, writes what they print through redaction, and
// cleans up what it started.
//
// The boundary is closed: a launcher sees a Request per test, the
// Options every launcher is built with, and its own typed Config, bound
// from its own flags (Config, Register, Bind); nothing else of the command
// line. What launchers share lives here, written once: the order in which
// a plan's steps run and what a failing step does to the others
// (Sequence), how a step's local processes are stopped (RunGroup), and the
// raw output files (CreateLog, CollectFile). How ranks start (mpirun of
// each MPI, srun) is launchers/rankstart's registry, which every launcher
// uses.
//
// Every process of every step a launcher starts sees plan.HostsEnv
// (GPUACCEPT_HOSTS): the names of the test's nodes, comma-separated, in
// node order, node i being the name plan.HostRef(i) resolves to under that
// launcher. Launchers set it with plan.Plan.WithHostsEnv and resolve it
// with the HostRefs, so rank starters forward it like any step Env.
package launch

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
)

// Request is one test's plan, handed to a launcher.
type Request struct {
	// Test is the full test name ("nccl.all_reduce").
	Test     string
	Plan     plan.Plan
	Topology plan.Topology
	// Dir is the folder for this test's raw outputs; the launcher writes
	// each step's log and files there with CreateLog, CollectFile and
	// CreateRaw.
	Dir string
	// Root is the results folder Dir lies in (RESULTS for
	// RESULTS/raw/TEST): no folder below it is followed if it is a link,
	// so a link planted at raw/ cannot send the raw outputs elsewhere.
	// Empty: Dir itself is the root.
	Root string
	// Timeout bounds the whole test; steps may have their own, shorter.
	Timeout time.Duration
	// Redactor masks secrets in everything written to Dir; nil masks the
	// patterns only (no known values).
	Redactor *redact.Redactor
}

// Launcher runs plans. Launch returns one Output per step that was started
// or that could not be started (with LaunchError set); the error is for
// problems that stop the whole test before any step (bad configuration).
// On ctx cancellation or timeout a launcher stops everything it started
// before it returns. Every process it starts has plan.HostsEnv set to the
// test's nodes (see the package doc), whatever the step's Env says.
type Launcher interface {
	// Name is the --launcher value.
	Name() string
	// Launch runs the request's steps.
	Launch(ctx context.Context, req Request) ([]plan.Output, error)
	// Commands renders what Launch would run, exactly, for --dry-run.
	Commands(req Request) ([]string, error)
}

// CreateLog creates the log file of a step in req.Dir behind req's
// redacting writer. Close the returned writer to flush it and close the
// file. A link or special file at its name, or a link among the folders
// below req.Root, is refused by name (safefs.Create).
func CreateLog(req Request, step string) (io.WriteCloser, string, error) {
	f, p, err := CreateRaw(req, layout.StepLog(step))
	if err != nil {
		return nil, "", fmt.Errorf("create log of step %s: %w", step, err)
	}
	return &redactedFile{w: req.Redactor.NewWriter(f), f: f}, p, nil
}

// CreateRaw creates (or replaces) the file name, a path relative to
// req.Dir, making its folders as needed, without following a link below
// req.Root (safefs.Create); it returns the file and its path. For what a
// launcher keeps beside the logs (a batch script, the ranks' hosts): write
// it through req.Redactor.
func CreateRaw(req Request, name string) (*os.File, string, error) {
	root, rel := rawRoot(req)
	f, err := safefs.Create(root, filepath.Join(rel, name), 0o644)
	if err != nil {
		return nil, "", fmt.Errorf("create raw output %s: %w", name, err)
	}
	return f, filepath.Join(req.Dir, name), nil
}

// MkdirRaw makes the folder name, relative to req.Dir ("." for req.Dir
// itself), and the folders above it up to req.Root, refusing a link on the
// way (safefs.MkdirAll); it returns its path.
func MkdirRaw(req Request, name string) (string, error) {
	root, rel := rawRoot(req)
	if err := safefs.MkdirAll(root, filepath.Join(rel, name)); err != nil {
		return "", fmt.Errorf("create raw output folder %s: %w", filepath.Join(req.Dir, name), err)
	}
	return filepath.Join(req.Dir, name), nil
}

// rawRoot splits req.Dir into req.Root and the path below it; req.Dir
// itself and "." when req.Root is empty or does not hold req.Dir.
func rawRoot(req Request) (root, rel string) {
	if r, err := filepath.Rel(req.Root, req.Dir); req.Root != "" && err == nil && filepath.IsLocal(r) {
		return req.Root, r
	}
	return req.Dir, "."
}

// MaxCollect is the most a collected file may hold, bytes (1 GiB): a
// workload writing without end (a link to /dev/zero) must not fill the
// disk the results folder is on. What a file holds past it is cut, and the
// step's output says so.
const MaxCollect = 1 << 30

// CollectFile copies a file a step wrote (read from src) into req.Dir,
// masking secrets, and returns its path there. A file over MaxCollect is
// kept cut at that size, and the error says so.
func CollectFile(req Request, step, name string, src io.Reader) (string, error) {
	if name == "" || strings.Contains(name, "..") || filepath.IsAbs(name) {
		return "", fmt.Errorf("collect file %q of step %s: not a plain relative name", name, step)
	}
	f, p, err := CreateRaw(req, filepath.Join(layout.StepFiles(step), filepath.Base(name)))
	if err != nil {
		return "", fmt.Errorf("collect file %s of step %s: %w", name, step, err)
	}
	lim := &io.LimitedReader{R: src, N: MaxCollect}
	if _, err := req.Redactor.Copy(f, lim); err != nil {
		f.Close()
		return "", fmt.Errorf("collect file %s of step %s: %w", name, step, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("collect file %s of step %s: %w", name, step, err)
	}
	if lim.N == 0 {
		if n, _ := src.Read(make([]byte, 1)); n > 0 {
			return p, fmt.Errorf("collect file %s of step %s: larger than %d bytes: kept cut at that size", name, step, MaxCollect)
		}
	}
	return p, nil
}

type redactedFile struct {
	w    *redact.Writer
	f    *os.File
	once sync.Once
	err  error
}

func (r *redactedFile) Write(p []byte) (int, error) { return r.w.Write(p) }

func (r *redactedFile) Close() error {
	r.once.Do(func() {
		r.err = r.w.Close()
		if err := r.f.Close(); r.err == nil {
			r.err = err
		}
	})
	return r.err
}
