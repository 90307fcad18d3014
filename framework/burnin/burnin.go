// Package burnin runs a suite over and over for a time or a number of
// cycles (gpuaccept run --duration / --cycles), each cycle a whole results
// folder of its own (cycle-0001/, signed off as it ends, so that Ctrl-C, a
// timeout or kill -9 loses no finished cycle), and judges the run across
// its cycles (Judge: drift, spread, new errors). The burn-in folder holds
// the cycles, burnin.json (the plan, the cycles, the findings: written
// again after every cycle) and, once it ends, its own report and a
// manifest over everything. It never knows a tool's output: what it reads
// of a cycle is its result.Run.
package burnin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/strictjson"
)

// File is the burn-in's record in its folder; cycles are the folders
// CycleDir names.
const File = "burnin.json"

// MaxCycles bounds --cycles and the cycles a folder may hold: 10^5 cycles
// of a minute each are ten weeks.
const MaxCycles = 100000

// CycleDir is cycle n's folder name in the burn-in folder: cycle-0001.
func CycleDir(n int) string { return fmt.Sprintf("cycle-%04d", n) }

var cycleName = regexp.MustCompile(`^cycle-([0-9]{4,6})$`)

// Plan is what the burn-in was asked to do.
type Plan struct {
	// Duration is how long cycles start for (0: Cycles alone); the cycle
	// running when it is up runs to its end.
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Cycles is how many cycles run at most (0: Duration alone).
	Cycles int `json:"cycles,omitempty"`
	// Drift is the fall, a fraction, that fails a point (RuleDrift).
	Drift float64 `json:"drift"`
}

// Cycle is one cycle as the burn-in keeps it.
type Cycle struct {
	// N counts from 1; Dir is its folder, relative to the burn-in's.
	N   int    `json:"n"`
	Dir string `json:"dir"`
	// Status is the cycle's verdict (result.Run.Status), Message its first
	// failed or errored test's message.
	Status  result.Status `json:"status"`
	Message string        `json:"message,omitempty"`
	Started time.Time     `json:"started"`
	// Duration is the cycle's run time in nanoseconds.
	Duration time.Duration `json:"duration_ns"`
	// Interrupted says the cycle was cut short (Ctrl-C, a timeout, kill):
	// kept, and not judged.
	Interrupted bool `json:"interrupted,omitempty"`
	// lastOnly: listed only as the last cycle so far.
	lastOnly bool
}

// MaxListed bounds the cycles a record lists by name beside the first
// and the last: every cycle that did not pass, up to this many. A burn-in
// of 10^4 cycles keeps its record, and its memory, the size of its
// failures, not of its length; every cycle stays in its folder.
const MaxListed = 200

// Record is burnin.json: the burn-in's plan, cycles and verdict.
type Record struct {
	// ID ties the cycles to this burn-in: each cycle's run carries
	// CycleNote(ID, n, drift) among its notes, so that a cycle copied,
	// renumbered or taken from another burn-in is told apart.
	ID       string     `json:"id"`
	SKU      string     `json:"sku"`
	Suite    string     `json:"suite"`
	Scope    plan.Scope `json:"scope"`
	Launcher string     `json:"launcher"`
	Plan     Plan       `json:"plan"`
	Started  time.Time  `json:"started"`
	// Ran is how many cycles ran, Spent their run time in nanoseconds,
	// ByStatus how many ended with each verdict (interrupted ones under
	// "interrupted").
	Ran      int            `json:"ran"`
	Spent    time.Duration  `json:"spent_ns"`
	ByStatus map[string]int `json:"by_status"`
	// Listed are the first cycle, every cycle that did not pass (up to
	// MaxListed) and the last, in order.
	Listed []Cycle `json:"listed"`
	// Unlisted counts the cycles that did not pass beyond MaxListed.
	Unlisted int `json:"unlisted,omitempty"`
	// Findings are the cross-cycle rules' (Judge.Findings).
	Findings []Finding `json:"findings,omitempty"`
	// WorstDrift is the largest fall of any point (a fraction) and
	// WorstPoint what fell.
	WorstDrift float64 `json:"worst_drift"`
	WorstPoint string  `json:"worst_point,omitempty"`
	// Status is the burn-in's verdict: the worst of its judged cycles' and
	// of its findings; skip when no cycle was judged.
	Status result.Status `json:"status"`
	// Notes say what the verdict leaves out (interrupted cycles).
	Notes []string `json:"notes,omitempty"`
}

// interrupted is ByStatus's key for cycles cut short.
const interrupted = "interrupted"

// add counts cycle c into the record.
func (rec *Record) add(c Cycle) {
	rec.Ran++
	rec.Spent += c.Duration
	if rec.ByStatus == nil {
		rec.ByStatus = map[string]int{}
	}
	key := string(c.Status)
	if c.Interrupted {
		key = interrupted
		if len(rec.Notes) < MaxListed {
			rec.Notes = append(rec.Notes, fmt.Sprintf("cycle %d was interrupted: kept in %s, not judged", c.N, c.Dir))
		}
	}
	rec.ByStatus[key]++
	// The last cycle listed is kept only while it is the last, unless it
	// is listed for its own sake.
	if n := len(rec.Listed); n > 0 && rec.Listed[n-1].lastOnly {
		rec.Listed = rec.Listed[:n-1]
	}
	notable := c.Interrupted || c.Status != result.Pass
	switch {
	case rec.Ran == 1 || (notable && len(rec.Listed) < MaxListed+1):
		rec.Listed = append(rec.Listed, c)
	default:
		if notable {
			rec.Unlisted++
		}
		c.lastOnly = true
		rec.Listed = append(rec.Listed, c)
	}
}

// Options are a burn-in's settings.
type Options struct {
	Plan
	// Dir is the burn-in folder: created fresh, or an earlier burn-in's
	// with Resume.
	Dir string
	// Resume continues the burn-in in Dir: its plan, start and cycles
	// are read back, and the cycles left (by count, or the time left of
	// Duration, counted as the sum of the cycles' run times) run on.
	Resume bool
	// SKU, Suite, Scope and Launcher are recorded.
	SKU, Suite, Launcher string
	Scope                plan.Scope
	// RunCycle runs cycle n into dir (created by it) with note among its
	// run's notes (result.Run.Notes, CycleNote) and signs it off, Ctrl-C
	// included; the error is for a cycle that could not run at all.
	RunCycle func(ctx context.Context, n int, dir, note string) (*result.Run, error)
	// Load reads a finished cycle's folder back (resultsdir.Load).
	Load func(dir string) (*result.Run, error)
	// Progress receives one line per cycle.
	Progress io.Writer
}

// Run runs (or, with Resume, continues) the burn-in and returns its
// record, written to Dir/File after every cycle. The error is for a
// burn-in that cannot go on (a folder not writable, a cycle that could
// not start); the record then holds every cycle that ended.
func Run(ctx context.Context, o Options) (*Record, error) {
	rec, j, err := open(o)
	if err != nil {
		return nil, err
	}
	for ctx.Err() == nil {
		n := rec.Ran + 1
		if (rec.Plan.Cycles > 0 && n > rec.Plan.Cycles) || (rec.Plan.Duration > 0 && rec.Spent >= rec.Plan.Duration) || n > MaxCycles {
			break
		}
		dir := CycleDir(n)
		run, err := o.RunCycle(ctx, n, filepath.Join(o.Dir, dir), CycleNote(rec.ID, n, rec.Plan.Drift))
		if err != nil {
			// What the cycle left (Ctrl-C during its sign-off) is kept as
			// it reads back, so that the record is what its folders show.
			if back, lerr := o.Load(filepath.Join(o.Dir, dir)); lerr == nil {
				c := summarise(n, dir, back)
				j.Add(c, back)
				rec.add(c)
				conclude(rec, j)
				if serr := Save(o.Dir, rec); serr != nil {
					err = errors.Join(err, serr)
				}
			}
			if ctx.Err() != nil {
				return rec, nil
			}
			return rec, fmt.Errorf("burn-in cycle %d: %w", n, err)
		}
		c := summarise(n, dir, run)
		j.Add(c, run)
		rec.add(c)
		conclude(rec, j)
		if err := Save(o.Dir, rec); err != nil {
			return rec, err
		}
		if o.Progress != nil {
			fmt.Fprintln(o.Progress, Line(rec))
		}
	}
	return rec, nil
}

// open starts the record, or reads an earlier one back with its cycles
// judged again.
func open(o Options) (*Record, *Judge, error) {
	if o.Drift <= 0 || o.Drift >= 1 {
		return nil, nil, fmt.Errorf("burn-in drift band %g: want a fraction between 0 and 1", o.Drift)
	}
	if !o.Resume {
		if o.Cycles < 0 || o.Cycles > MaxCycles || o.Duration < 0 || (o.Cycles == 0 && o.Duration == 0) {
			return nil, nil, fmt.Errorf("burn-in: want a duration or 1 to %d cycles", MaxCycles)
		}
		if err := safefs.MkdirAll(o.Dir, "."); err != nil {
			return nil, nil, fmt.Errorf("create burn-in folder: %w", err)
		}
		id := make([]byte, 8)
		if _, err := rand.Read(id); err != nil {
			return nil, nil, fmt.Errorf("burn-in id: %w", err)
		}
		rec := &Record{ID: hex.EncodeToString(id), SKU: o.SKU, Suite: o.Suite, Scope: o.Scope, Launcher: o.Launcher, Plan: o.Plan, Started: time.Now().UTC(),
			ByStatus: map[string]int{}, Listed: []Cycle{}, Status: result.Skip}
		return rec, NewJudge(o.Drift, rec.Started), Save(o.Dir, rec)
	}
	rec, err := Read(o.Dir)
	if err != nil {
		return nil, nil, err
	}
	if rec.SKU != o.SKU || rec.Suite != o.Suite || rec.Scope != o.Scope {
		return nil, nil, fmt.Errorf("resume %s: it is a burn-in of SKU %s suite %s at %s, not of %s %s at %s", o.Dir, rec.SKU, rec.Suite, rec.Scope, o.SKU, o.Suite, o.Scope)
	}
	if rec.Launcher != o.Launcher {
		return nil, nil, fmt.Errorf("resume %s: it ran with launcher %s, not %s: give --launcher %s and its flags", o.Dir, rec.Launcher, o.Launcher, rec.Launcher)
	}
	if err := CheckSealed(o.Dir); err != nil {
		return nil, nil, fmt.Errorf("resume %s: %w", o.Dir, err)
	}
	again, j, err := Rederive(o.Dir, rec, o.Load)
	if err != nil {
		return nil, nil, err
	}
	return again, j, Save(o.Dir, again)
}

// Rederive reads the cycles of the burn-in folder dir back in order
// (load: resultsdir.Load) and judges them as the burn-in did, from what
// rec says it was (its id, SKU, suite, scope, launcher, plan and start):
// the record verify, report and --resume compare with burnin.json. An
// error names a cycle that is not that burn-in's cycle of its number
// (another burn-in's, a copy, renumbered, of another SKU or scope) or
// that started before the one before it ended.
func Rederive(dir string, rec *Record, load func(string) (*result.Run, error)) (*Record, *Judge, error) {
	names, err := Cycles(dir)
	if err != nil {
		return nil, nil, err
	}
	j := NewJudge(rec.Plan.Drift, rec.Started)
	again := &Record{ID: rec.ID, SKU: rec.SKU, Suite: rec.Suite, Scope: rec.Scope, Launcher: rec.Launcher, Plan: rec.Plan, Started: rec.Started,
		ByStatus: map[string]int{}, Listed: []Cycle{}}
	var ended time.Time
	for i, name := range names {
		n := i + 1
		if Unstarted(filepath.Join(dir, name)) {
			// Killed as it began: nothing to judge, its number kept.
			again.add(Cycle{N: n, Dir: name, Status: result.Error, Message: "killed before it recorded anything", Interrupted: true})
			continue
		}
		run, err := load(filepath.Join(dir, name))
		if err != nil {
			return nil, nil, fmt.Errorf("read burn-in cycle %s: %w", name, err)
		}
		if err := belongs(rec, n, run); err != nil {
			return nil, nil, fmt.Errorf("burn-in %s: %s: %w", dir, name, err)
		}
		if run.Started.Before(ended) || run.Started.Before(rec.Started) {
			return nil, nil, fmt.Errorf("burn-in %s: %s started at %s, before the cycle before it ended (%s) or the burn-in began", dir, name,
				run.Started.Format(time.RFC3339Nano), ended.Format(time.RFC3339Nano))
		}
		ended = run.Started.Add(run.Duration)
		c := summarise(n, name, run)
		j.Add(c, run)
		again.add(c)
	}
	conclude(again, j)
	return again, j, nil
}

// CycleNote is the note every cycle's run carries: "burn-in ID: cycle N
// (drift band 0.05)".
func CycleNote(id string, n int, drift float64) string {
	return fmt.Sprintf("burn-in %s: cycle %d (drift band %g)", id, n, drift)
}

// belongs says why run is not cycle n of the burn-in rec; nil when it is.
func belongs(rec *Record, n int, run *result.Run) error {
	if !slices.Contains(run.Notes, CycleNote(rec.ID, n, rec.Plan.Drift)) {
		return fmt.Errorf("not cycle %d of burn-in %s (drift band %g): its run has no note %q", n, rec.ID, rec.Plan.Drift, CycleNote(rec.ID, n, rec.Plan.Drift))
	}
	if run.SKU != rec.SKU || run.Suite != rec.Suite || run.Scope != rec.Scope || run.Launcher != rec.Launcher {
		return fmt.Errorf("a run of SKU %s suite %s at %s via %s, not the burn-in's SKU %s suite %s at %s via %s",
			run.SKU, run.Suite, run.Scope, run.Launcher, rec.SKU, rec.Suite, rec.Scope, rec.Launcher)
	}
	return nil
}

// Unstarted says the cycle folder dir holds neither a journal nor
// results.json: the burn-in was killed as the cycle began.
func Unstarted(dir string) bool {
	for _, f := range []string{layout.Journal, layout.Results} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			return false
		}
	}
	return true
}

// Cycles lists the cycle folders of dir in order; an error names a gap
// (cycle-0003 without cycle-0002) or a cycle folder that is a link.
func Cycles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list the cycles of %s: %w", dir, err)
	}
	var ns []int
	for _, e := range ents {
		m := cycleName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		if e.Type()&fs.ModeType != fs.ModeDir {
			return nil, fmt.Errorf("burn-in %s: %s is %s, not a folder", dir, e.Name(), safefs.Kind(e.Type()))
		}
		n, _ := strconv.Atoi(m[1])
		ns = append(ns, n)
	}
	sort.Ints(ns)
	names := make([]string, len(ns))
	for i, n := range ns {
		if n != i+1 {
			return nil, fmt.Errorf("burn-in %s: %s follows cycle %d", dir, CycleDir(n), i)
		}
		names[i] = CycleDir(n)
	}
	return names, nil
}

// summarise is cycle n (its folder dir) as the burn-in keeps it.
func summarise(n int, dir string, run *result.Run) Cycle {
	c := Cycle{N: n, Dir: dir, Status: run.Status, Started: run.Started, Duration: run.Duration, Interrupted: Interrupted(run)}
	if c.Interrupted {
		// What its tests that were not cut short showed still counts: a
		// failure is no less one for a Ctrl-C after it.
		c.Status = result.Skip
		for _, t := range run.Tests {
			if !result.CutShort(t) {
				c.Status = result.Worst(c.Status, t.Status)
			}
		}
	}
	for _, t := range run.Tests {
		if c.Message == "" && (t.Status == result.Fail || t.Status == result.Error) && !(c.Interrupted && result.CutShort(t)) {
			c.Message = t.Name + ": " + t.Message
		}
	}
	return c
}

// Interrupted says run was cut short (Ctrl-C or SIGTERM, the run's time
// limit, or killed and rebuilt from its journal): one of its tests was
// stopped, not started or not finished for that reason. Such a cycle
// is kept; its other tests' verdicts count, its cut ones do not.
func Interrupted(run *result.Run) bool {
	return slices.ContainsFunc(run.Tests, result.CutShort)
}

// conclude sets the record's verdict from its cycles and j.
func conclude(rec *Record, j *Judge) {
	rec.Findings = j.Findings()
	rec.WorstDrift, rec.WorstPoint = j.WorstDrift()
	st := result.Skip
	for k, n := range rec.ByStatus {
		if k != interrupted && n > 0 {
			st = result.Worst(st, result.Status(k))
		}
	}
	if st != result.Skip {
		for _, f := range rec.Findings {
			st = result.Worst(st, f.Status)
		}
	}
	if !Done(rec) && rec.Ran > 0 {
		// A burn-in stopped short of its plan is no burn-in of that
		// plan, whatever its cycles showed.
		st = result.Worst(st, result.Error)
	}
	rec.Status = st
}

// Done says the burn-in ran its plan: its cycles, or its duration.
func Done(rec *Record) bool {
	return (rec.Plan.Cycles > 0 && rec.Ran >= rec.Plan.Cycles) || (rec.Plan.Duration > 0 && rec.Spent >= rec.Plan.Duration) || rec.Ran >= MaxCycles
}

// Line is the progress line after each cycle: the cycle, the time or
// cycles left, the last cycle's verdict and the worst drift so far.
func Line(rec *Record) string {
	n := rec.Ran
	var b strings.Builder
	fmt.Fprintf(&b, "burn-in cycle %d", n)
	if rec.Plan.Cycles > 0 {
		fmt.Fprintf(&b, " of %d", rec.Plan.Cycles)
	}
	if rec.Plan.Duration > 0 {
		left := max(rec.Plan.Duration-rec.Spent, 0)
		fmt.Fprintf(&b, ", %s of %s left", left.Round(time.Second), rec.Plan.Duration)
	}
	if l := len(rec.Listed); l > 0 {
		fmt.Fprintf(&b, ": %s", rec.Listed[l-1].Status)
	}
	fmt.Fprintf(&b, "; worst drift %.1f%%", 100*rec.WorstDrift)
	if rec.WorstPoint != "" {
		fmt.Fprintf(&b, " (%s)", rec.WorstPoint)
	}
	if f := len(rec.Findings); f > 0 {
		fmt.Fprintf(&b, "; %s", result.Count(f, "finding"))
	}
	return b.String()
}

// Save writes rec to dir/File (replaced whole, never through a link).
func Save(dir string, rec *Record) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", File, err)
	}
	if err := safefs.WriteFile(dir, File, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", File, err)
	}
	return nil
}

// maxRecord bounds burnin.json read back: 10^5 cycles of ~300 bytes.
const maxRecord = 64 << 20

// Read reads dir/File back; an error says the folder is no burn-in's or
// its record does not read.
func Read(dir string) (*Record, error) {
	data, err := safefs.ReadFile(dir, File, maxRecord)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is no burn-in folder (no %s)", dir, File)
		}
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, File), err)
	}
	if err := strictjson.DuplicateKey(data); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, File), err)
	}
	var rec Record
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, File), err)
	}
	return &rec, nil
}

// IsBurnIn says whether dir is a burn-in folder (holds File).
func IsBurnIn(dir string) bool {
	_, err := safefs.Lstat(dir, File)
	return err == nil
}
