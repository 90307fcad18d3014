// Package journal keeps a run's results on disk as they happen, so that
// nothing measured is lost when the run stops early (Ctrl-C, a killed
// gpuaccept, a lost node): the results folder gets journal.jsonl, whose
// first line describes the run and the tests it will run, and one line per
// test (and per localisation) as soon as it has ended (synced to disk),
// and baseline/, a copy of the SKU file that judges the run. Read rebuilds
// the run from them; reports are made from that.
package journal

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/strictjson"
)

// record is one line of the journal: the header (Run and Planned) or one
// finished test.
type record struct {
	// Run is the run without tests, on the first line.
	Run *result.Run `json:"run,omitempty"`
	// Planned are the names of the tests the run will run, in order.
	Planned []string `json:"planned,omitempty"`
	// Test is a finished test.
	Test *result.Test `json:"test,omitempty"`
	// Attempt is an attempt of a retried test that ended and is to be run
	// again (its Attempt numbered), written as it ends: the test's own
	// line, when its last attempt ends, lists it again among its
	// Attempts, and verify holds the two to each other. Journals of
	// gpuaccept versions that did not record them have none; versions
	// from before then refuse a journal holding one.
	Attempt *result.Test `json:"attempt,omitempty"`
	// Localisation is a finished localisation of a multi-node test (its
	// sub-runs keep journals of their own in their folders). Journals
	// written before localisations existed have none; gpuaccept versions
	// from before then refuse a journal holding one (neither run nor test).
	Localisation *result.Localisation `json:"localisation,omitempty"`
	// End, on the last line of a run that ended, is its wall time.
	End *time.Duration `json:"end_duration_ns,omitempty"`
}

// Writer appends to a results folder's journal. Every record is masked
// (framework/redact: its strings, then the line) before it is written.
type Writer struct {
	f *os.File
}

// Create starts the journal of run in dir (which must exist): its header
// line with run (its Tests are not written) and the planned test names.
// Errors name the file.
func Create(dir string, run *result.Run, planned []string) (*Writer, error) {
	f, err := safefs.CreateNew(dir, layout.Journal, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create journal: results folder %s already holds a run (%s); give a new or empty folder", dir, layout.Journal)
	}
	if err != nil {
		return nil, fmt.Errorf("create journal: %w", err)
	}
	head := *run.Finite()
	head.Tests = nil
	w := &Writer{f: f}
	if err := w.write(record{Run: &head, Planned: planned}); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// AddAttempt records an attempt of a retried test that ended (t.Attempt
// its number) and syncs it to disk before it returns.
func (w *Writer) AddAttempt(t result.Test) error {
	return w.write(record{Attempt: &t})
}

// Add records a finished test and syncs it to disk before it returns.
func (w *Writer) Add(t result.Test) error {
	return w.write(record{Test: &t})
}

// write journals r; a number JSON cannot hold (NaN, ±Inf) goes in as 0,
// its test an error naming it (result.FiniteTest), so the line is written.
func (w *Writer) write(r record) error {
	if r.Test != nil {
		t := result.FiniteTest(*r.Test)
		r.Test = &t
	}
	if r.Attempt != nil {
		t := result.FiniteTest(*r.Attempt)
		r.Attempt = &t
	}
	if r.Localisation != nil {
		l := result.FiniteLocalisation(*r.Localisation)
		r.Localisation = &l
	}
	red := redact.Env()
	data, err := json.Marshal(redact.Value(red, r))
	if err != nil {
		return fmt.Errorf("write journal %s: %w", w.f.Name(), err)
	}
	if _, err := w.f.Write(red.Bytes(append(data, '\n'))); err != nil {
		return fmt.Errorf("write journal %s: %w", w.f.Name(), err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync journal %s: %w", w.f.Name(), err)
	}
	return nil
}

// AddLocalisation records a finished localisation and syncs it to disk
// before it returns, so a run killed afterwards still reports its
// suspects (gpuaccept report).
func (w *Writer) AddLocalisation(l result.Localisation) error {
	return w.write(record{Localisation: &l})
}

// AppendLocalisation adds a finished localisation to the journal of the
// results folder dir, which must exist (the suite run that wrote it has
// ended and closed its Writer: localisations run after it), and syncs it
// to disk before it returns. Errors name the file.
func AppendLocalisation(dir string, l result.Localisation) error {
	f, err := safefs.OpenAppend(dir, layout.Journal)
	if err != nil {
		return fmt.Errorf("journal the localisation of %s: %w", l.Test, err)
	}
	w := &Writer{f: f}
	if err := w.AddLocalisation(l); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("journal the localisation of %s: %w", l.Test, err)
	}
	return nil
}

// AppendEnd records in the journal of the results folder dir that the run
// ended after wall time d, when it went on after its suite run closed the
// journal (localisations): Read takes the last end recorded, so the
// reports rebuilt from the journal give the duration the run reported.
func AppendEnd(dir string, d time.Duration) error {
	f, err := os.OpenFile(filepath.Join(dir, layout.Journal), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("journal the end of the run: %w", err)
	}
	if err := (&Writer{f: f}).End(d); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("journal the end of the run: %w", err)
	}
	return nil
}

// End records that the run ended, after wall time d.
func (w *Writer) End(d time.Duration) error {
	return w.write(record{End: &d})
}

// Close closes the journal file.
func (w *Writer) Close() error { return w.f.Close() }

// SaveBaseline writes the SKU file content data as dir/baseline/SKU.yaml,
// masked like every file of a results folder (the shipped SKU files pass
// unchanged).
func SaveBaseline(dir, sku string, data []byte) error {
	if err := safefs.WriteFile(dir, layout.Baseline+"/"+sku+".yaml", redact.Env().Bytes(data), 0o644); err != nil {
		return fmt.Errorf("keep baseline copy: %w", err)
	}
	return nil
}

// Interrupted is the message of a planned test the journal has no result
// for.
const Interrupted = result.NotFinished

// Read rebuilds the run journaled in dir: the header, every finished test,
// every finished localisation, and, for a run that stopped early, each planned test that did not finish
// as an Error with the Interrupted message. A last line cut short by a
// crash is ignored; any other bad line is an error naming file and line.
// The run's status and duration are set from the tests.
func Read(dir string) (*result.Run, error) {
	p := filepath.Join(dir, layout.Journal)
	f, err := safefs.Open(dir, layout.Journal)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	var run *result.Run
	var planned []string
	done := map[string]bool{}
	line := 0
	var pending error
	for sc.Scan() {
		line++
		if pending != nil {
			return nil, pending
		}
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			// Only the last line may be cut short (killed mid-write).
			pending = fmt.Errorf("%s line %d: %w", p, line, err)
			continue
		}
		// A key given twice is read as its last value here, as its first
		// by other readers: one line, one reading.
		if err := strictjson.DuplicateKey(sc.Bytes()); errors.Is(err, strictjson.ErrDuplicateKey) {
			return nil, fmt.Errorf("%s line %d: %w", p, line, err)
		}
		switch {
		case line == 1 && r.Run != nil:
			run, planned = r.Run, r.Planned
			run.Tests = []result.Test{}
		case line == 1:
			return nil, fmt.Errorf("%s line 1: not a journal header", p)
		case r.Test != nil:
			run.Tests = append(run.Tests, *r.Test)
			done[r.Test.Name] = true
		case r.Attempt != nil:
			run.Ended = append(run.Ended, *r.Attempt)
		case r.Localisation != nil:
			run.Localisations = append(run.Localisations, *r.Localisation)
		case r.End != nil:
			run.Duration = *r.End
		default:
			return nil, fmt.Errorf("%s line %d: neither run nor test", p, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read journal %s: %w", p, err)
	}
	if run == nil {
		if pending != nil {
			return nil, pending
		}
		return nil, errors.New(p + ": empty journal")
	}
	var total time.Duration
	for _, t := range run.Tests {
		total += t.Duration
	}
	for _, name := range planned {
		if !done[name] {
			t := result.Test{Name: name, Status: result.Error, Scope: run.Scope, Message: Interrupted, Metrics: []result.Judged{}}
			// The attempts that ended before the stop are kept, with
			// their raw outputs; the one cut short is this error.
			for _, a := range run.Ended {
				if a.Name == name {
					t.Attempts = append(t.Attempts, a)
				}
			}
			run.Tests = append(run.Tests, t)
		}
	}
	if run.Duration == 0 {
		run.Duration = total
	}
	run.Finish()
	return run, nil
}

// LastDurations finds, among the results folders directly under root, the
// newest run of the same SKU, suite and scope (skipping the folder
// exclude) and returns how long each of its tests that ended took: what
// the live progress shows as expected. Only tests that ran to a verdict
// (pass, warn, fail) count: one that errored at once says nothing of how
// long the test takes. Folders without a readable journal are passed over;
// nil when there is no such run.
func LastDurations(root, sku, suite string, scope plan.Scope, exclude string) map[string]time.Duration {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var best *result.Run
	for _, e := range ents {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() || filepath.Clean(dir) == filepath.Clean(exclude) {
			continue
		}
		run, err := Read(dir)
		if err != nil || run.SKU != sku || run.Suite != suite || run.Scope != scope {
			continue
		}
		if best == nil || run.Started.After(best.Started) {
			best = run
		}
	}
	if best == nil {
		return nil
	}
	out := map[string]time.Duration{}
	for _, t := range best.Tests {
		// A test Read marks Interrupted is an Error, so it does not count.
		ran := t.Status == result.Pass || t.Status == result.Warn || t.Status == result.Fail
		if ran && t.Duration > 0 {
			out[t.Name] = t.Duration
		}
	}
	return out
}
