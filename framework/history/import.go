package history

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/burnin"
	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// Imported says what Import did with one results folder.
type Imported struct {
	// Folder is the results folder, absolute.
	Folder string
	// Digest is its sign-off digest (manifest.Digest).
	Digest string
	// Added is false when a run of that digest was already in the store
	// (nothing was written).
	Added bool
	// Points is how many points the folder holds.
	Points int
	// NoHardware says the folder has no hardware.json: its points carry
	// no GPU serial or UUID and no NIC GUID (none is guessed), so --by
	// gpu and --serial do not find them.
	NoHardware bool
	// Unstarted says the folder is a burn-in cycle killed before it
	// wrote anything (burnin.Unstarted): nothing to import, nothing done.
	Unstarted bool
}

// String says it in one line: "imported DIR: 23 points (sha256:...)",
// "imported DIR: 9 points, no GPU serial: the folder has no
// hardware.json (sha256:...)", "skipped DIR: already in the store
// (sha256:...)" or "skipped DIR: a burn-in cycle killed before it wrote
// anything".
func (i Imported) String() string {
	switch {
	case i.Unstarted:
		return fmt.Sprintf("skipped %s: a burn-in cycle killed before it wrote anything", i.Folder)
	case !i.Added:
		return fmt.Sprintf("skipped %s: already in the store (%s)", i.Folder, i.Digest)
	case i.NoHardware:
		return fmt.Sprintf("imported %s: %s, no GPU serial: the folder has no %s (%s)", i.Folder, result.Count(i.Points, "point"), layout.Hardware, i.Digest)
	}
	return fmt.Sprintf("imported %s: %s (%s)", i.Folder, result.Count(i.Points, "point"), i.Digest)
}

// Verifier checks the results folder dir as gpuaccept verify does
// (signoff.Verify: seal, re-parse, re-judge; the command sets it, as
// this package does not know the plugins); an error says why the folder
// is not what its manifest describes, naming its first findings.
type Verifier func(ctx context.Context, dir string) error

// ImportVerified is gpuaccept history import of dir: each results folder
// verified first (verify; nil refuses every folder: an unverified
// folder could be a forged one, its numbers hand-written) and imported
// (Import) only without findings. A burn-in folder (burnin.IsBurnIn)
// imports each of its cycles so, in order; a cycle killed before it
// wrote anything (burnin.Unstarted) is skipped (Imported.Unstarted). The
// error joins those of every folder that was not imported; the others
// are imported still.
func ImportVerified(ctx context.Context, s Store, dir string, verify Verifier) ([]Imported, error) {
	dirs := []string{dir}
	isBurnIn := burnin.IsBurnIn(dir)
	if isBurnIn {
		cycles, err := burnin.Cycles(dir)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", dir, err)
		}
		if len(cycles) == 0 {
			return nil, fmt.Errorf("import %s: a burn-in folder without a cycle-NNNN folder", dir)
		}
		dirs = dirs[:0]
		for _, c := range cycles {
			dirs = append(dirs, filepath.Join(dir, c))
		}
	}
	var out []Imported
	var errs []error
	for _, d := range dirs {
		if isBurnIn && burnin.Unstarted(d) {
			abs, _ := filepath.Abs(d)
			out = append(out, Imported{Folder: cmpOr(abs, d), Unstarted: true})
			continue
		}
		if verify == nil {
			errs = append(errs, fmt.Errorf("import %s: no verifier: a folder is imported only once gpuaccept verify finds nothing", d))
			continue
		}
		if err := verify(ctx, d); err != nil {
			errs = append(errs, fmt.Errorf("import %s: %w", d, err))
			continue
		}
		im, err := Import(ctx, s, d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, im)
	}
	return out, errors.Join(errs...)
}

// maxProblems is how many files a refusal of a folder that does not match
// its manifest names.
const maxProblems = 3

// Import adds the results folder dir to s: its run (Run, keyed by the
// folder's sign-off digest) and every judged metric point of its tests'
// last attempts (Points). Only a sealed folder is imported: one with a
// manifest.json that every file matches (manifest.Check, the cheap part
// of gpuaccept verify: no re-judging); the error names the files that do
// not. A folder whose digest is already in the store is skipped
// (Imported.Added false): importing twice adds nothing, and the folder
// is never changed. Import does not re-judge the folder: gpuaccept
// history import goes through ImportVerified; Append, of a folder this
// process has just written, does not.
func Import(ctx context.Context, s Store, dir string) (Imported, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Imported{}, fmt.Errorf("import %s: %w", dir, err)
	}
	out := Imported{Folder: abs}
	m, err := manifest.Read(abs)
	if err != nil {
		return out, fmt.Errorf("import %s: not a sealed results folder: %w", abs, err)
	}
	problems, err := manifest.Check(abs, m)
	if err != nil {
		return out, fmt.Errorf("import %s: %w", abs, err)
	}
	if len(problems) > 0 {
		var ps []string
		for _, p := range problems[:min(len(problems), maxProblems)] {
			ps = append(ps, p.String())
		}
		if len(problems) > maxProblems {
			ps = append(ps, fmt.Sprintf("and %d more", len(problems)-maxProblems))
		}
		return out, fmt.Errorf("import %s: the folder does not match its manifest (gpuaccept verify %s says more): %s", abs, abs, strings.Join(ps, "; "))
	}
	if out.Digest, err = manifest.Digest(abs); err != nil {
		return out, fmt.Errorf("import %s: %w", abs, err)
	}
	run, _, err := resultsdir.LoadFolder(abs)
	if err != nil {
		return out, fmt.Errorf("import %s: %w", abs, err)
	}
	devices, ok, err := resultsdir.ReadHardware(abs)
	if err != nil {
		return out, fmt.Errorf("import %s: %w", abs, err)
	}
	run.Hardware, out.NoHardware = devices, !ok
	r := RunOf(run, out.Digest, abs)
	points := PointsOf(run)
	out.Points = len(points)
	if out.Added, err = s.Insert(ctx, r, points); err != nil {
		return out, fmt.Errorf("import %s: %w", abs, err)
	}
	return out, nil
}

// appendTimeout bounds Append: a store that does not answer must not hold
// up the command that ran.
const appendTimeout = time.Minute

// Append adds the finished results folder dir to the store loc names (a
// --history value, Open): what run, check, health and localise call after
// sealing their folder. It returns nil when the store is off (loc Off) or
// already holds the folder. It does not verify the folder (Import, not
// ImportVerified): the folder was written and sealed by this process a
// moment before, from outputs it read itself; re-judging it would double
// the run's end for nothing a forger could use. An error (the store unreachable, full, or
// the folder unsealed) is for the caller to print as a warning and not
// to fail the run on: the folder can be imported later with gpuaccept
// history import. It gives up after a minute.
func Append(ctx context.Context, loc, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, appendTimeout)
	defer cancel()
	s, err := Open(ctx, loc)
	if errors.Is(err, ErrOff) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("history not recorded (gpuaccept history import %s later): %w", dir, err)
	}
	defer s.Close()
	if _, err := Import(ctx, s, dir); err != nil {
		return fmt.Errorf("history not recorded (gpuaccept history import %s later): %w", dir, err)
	}
	return nil
}

// oneModel is the name every GPU of gpus has, "" when they differ or
// none is named.
func oneModel(gpus []result.Device) string {
	model := ""
	for _, g := range gpus {
		if g.Name == "" || model != "" && g.Name != model {
			return ""
		}
		model = g.Name
	}
	return model
}

// CommandOf says which command made run: "check" (gpuaccept check's
// suite and launcher are both "check"), "localise" (it holds
// localisations), "health" (every test is a preflight test), else "run".
func CommandOf(run *result.Run) string {
	switch {
	case run.Suite == "check" || run.Launcher == "check":
		return "check"
	case len(run.Localisations) > 0:
		return "localise"
	}
	health := len(run.Tests) > 0
	for _, t := range run.Tests {
		health = health && t.Preflight
	}
	if health {
		return "health"
	}
	return "run"
}

// RunOf is the store's record of run, read from the results folder
// folder (absolute) of sign-off digest digest.
func RunOf(run *result.Run, digest, folder string) Run {
	return Run{Digest: digest, Folder: folder, SKU: run.SKU, Suite: run.Suite, Scope: run.Scope.String(), Launcher: run.Launcher,
		Status: string(run.Status), Started: run.Started, Version: run.Version, Command: CommandOf(run), Imported: time.Now()}
}

// PointsOf lists the judged metric points of run's tests (the last
// attempt of each, whose verdict stands), with the hardware each was
// measured on (run.Hardware, hardware.json's devices):
//   - Host: the point's label "host"; else the run's only host (its one
//     Hosts entry, or for a single-node run the one host its devices
//     name); else empty.
//   - GPU UUID and serial: the GPU of the host whose UUID, serial or bus
//     id the label "gpu" gives; else the host's only GPU when the point
//     has a "gpu" label or its test ran on one GPU (scope 1x1); else
//     empty (which of several GPUs an index is, is not in the outputs).
//   - GPU model: that GPU's name; else the name every GPU of the host
//     shares; else empty.
//   - NIC: the label "hca" or "nic" (the adapter's name), else "pair"
//     (ibperf's "SERVER_HCA:CLIENT_HCA", two adapters); NIC GUID: the
//     GUID of the adapter of that name on the host, only for a point that
//     names one adapter.
//
// A device a single-node output lists without a host name is taken as
// the host's when the run has one node. A summary point (peak, mean)
// carries its summary as the label "summary".
func PointsOf(run *result.Run) []Point {
	// The run's only host: the one it names, else, for a single-node
	// run, the one its devices name. A run of several nodes whose
	// outputs named only one is not taken for that one.
	oneNode := run.Scope.Nodes <= 1
	onlyHost := ""
	if len(run.Hosts) == 1 {
		onlyHost = run.Hosts[0]
	} else if len(run.Hosts) == 0 && oneNode {
		hosts := map[string]bool{}
		for _, d := range run.Hardware {
			if d.Host != "" {
				hosts[d.Host] = true
			}
		}
		if len(hosts) == 1 {
			for h := range hosts {
				onlyHost = h
			}
		}
	}
	devicesOf := func(host, kind string) []result.Device {
		var out []result.Device
		for _, d := range run.Hardware {
			if d.Kind == kind && (d.Host == host || d.Host == "" && oneNode) {
				out = append(out, d)
			}
		}
		return out
	}
	var out []Point
	for _, t := range run.Tests {
		at := t.Started
		if at.IsZero() {
			at = run.Started
		}
		for _, m := range t.Metrics {
			p := Point{Test: t.Name, Metric: m.Name, Size: m.Size, Value: m.Value, Unit: m.Unit, Band: m.Band, Expected: m.Expected,
				Status: string(m.Status), Basis: m.Basis, At: at, Labels: m.Labels}
			if m.Summary != "" {
				p.Labels = map[string]string{"summary": m.Summary}
				for k, v := range m.Labels {
					p.Labels[k] = v
				}
			}
			p.Host = m.Labels["host"]
			if p.Host == "" {
				p.Host = onlyHost
			}
			gpus := devicesOf(p.Host, result.GPUDevice)
			g, named := m.Labels["gpu"]
			var gpu *result.Device
			for i, d := range gpus {
				if g != "" && (g == d.UUID || g == d.Serial || g == d.BusID) {
					gpu = &gpus[i]
				}
			}
			if gpu == nil && len(gpus) == 1 && (named || t.Scope.Ranks() == 1) {
				gpu = &gpus[0]
			}
			if gpu != nil {
				p.GPUUUID, p.GPUSerial, p.GPUModel = gpu.UUID, gpu.Serial, gpu.Name
			} else {
				p.GPUModel = oneModel(gpus)
			}
			p.NIC = m.Labels["hca"]
			if p.NIC == "" {
				p.NIC = m.Labels["nic"]
			}
			one := p.NIC != ""
			if !one {
				p.NIC = m.Labels["pair"]
			}
			if one {
				for _, d := range devicesOf(p.Host, result.NICDevice) {
					if d.Name == p.NIC || d.GUID == p.NIC {
						p.NICGUID = d.GUID
					}
				}
			}
			out = append(out, p)
		}
	}
	return out
}
