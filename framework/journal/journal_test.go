package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

func header() *result.Run {
	return &result.Run{SKU: "h200", Suite: "singlenode", Launcher: "local", Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}, Version: "test",
		Started: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC), Tests: []result.Test{{Name: "ignored"}}}
}

func test(name string, s result.Status, d time.Duration) result.Test {
	return result.Test{Name: name, Status: s, Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}, Duration: d, Metrics: []result.Judged{}}
}

func TestReadBack(t *testing.T) {
	planned := []string{"nccl.all_reduce", "nccl.all_gather", "nccl.alltoall"}
	cases := []struct {
		name    string
		write   func(w *Writer)
		tail    string // bytes appended after the writer closed (a crash mid-line)
		status  result.Status
		tests   []string
		lastMsg string
		dur     time.Duration
	}{
		{"finished", func(w *Writer) {
			w.Add(test("nccl.all_reduce", result.Pass, time.Second))
			w.Add(test("nccl.all_gather", result.Pass, time.Second))
			w.Add(test("nccl.alltoall", result.Warn, time.Second))
			w.End(5 * time.Second)
		}, "", result.Warn, planned, "", 5 * time.Second},
		// The failure found before the kill wins over the tests it left
		// unfinished (errors): result.Run.Finish.
		{"killed after one test", func(w *Writer) {
			w.Add(test("nccl.all_reduce", result.Fail, 2*time.Second))
		}, "", result.Fail, planned, Interrupted, 2 * time.Second},
		{"killed while writing the second", func(w *Writer) {
			w.Add(test("nccl.all_reduce", result.Pass, time.Second))
		}, `{"test":{"name":"nccl.all_gather","sta`, result.Error, planned, Interrupted, time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := written(t, planned, c.write, c.tail)
			var names []string
			for _, tt := range run.Tests {
				names = append(names, tt.Name)
			}
			assert.DeepEqual(t, names, c.tests)
			assert.Equal(t, run.Status, c.status)
			assert.Equal(t, run.Tests[2].Message, c.lastMsg)
			assert.Equal(t, run.Duration, c.dur)
			assert.Equal(t, run.SKU, "h200")
			assert.Equal(t, run.Tests[0].Scope, plan.Scope{Nodes: 1, GPUsPerNode: 2})
		})
	}
}

// written reads back a journal of the planned tests that write filled and
// whose file then got tail appended (a run killed in the middle of a line).
func written(t *testing.T, planned []string, write func(*Writer), tail string) *result.Run {
	t.Helper()
	dir := t.TempDir()
	w, err := Create(dir, header(), planned)
	assert.NilError(t, err)
	write(w)
	assert.NilError(t, w.Close())
	if tail != "" {
		f, err := os.OpenFile(filepath.Join(dir, layout.Journal), os.O_APPEND|os.O_WRONLY, 0)
		assert.NilError(t, err)
		_, err = f.WriteString(tail)
		assert.NilError(t, err)
		assert.NilError(t, f.Close())
	}
	run, err := Read(dir)
	assert.NilError(t, err)
	return run
}

func TestReadErrors(t *testing.T) {
	cases := map[string]struct{ content, want string }{
		"empty":           {"", "empty journal"},
		"no header":       {`{"test":{"name":"a"}}` + "\n", "line 1: not a journal header"},
		"bad middle line": {`{"run":{"sku":"h200"}}` + "\n" + "garbage\n" + `{"test":{"name":"a"}}` + "\n", "line 2:"},
		// Go keeps the last value, other readers the first (issue 29, F5).
		"key given twice": {`{"run":{"sku":"h200"}}` + "\n" + `{"test":{"name":"a","status":"pass","status":"fail"}}` + "\n", `line 2: duplicate key "status" in test`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			assert.NilError(t, os.WriteFile(filepath.Join(dir, layout.Journal), []byte(c.content), 0o644))
			_, err := Read(dir)
			assert.ErrorContains(t, err, c.want)
			assert.Assert(t, strings.Contains(err.Error(), layout.Journal), err)
		})
	}
	_, err := Read(t.TempDir())
	assert.ErrorContains(t, err, "read journal")
}

// A results folder holds one run: a second journal is refused.
func TestCreateRefusesSecondJournal(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, header(), nil)
	assert.NilError(t, err)
	w.Close()
	_, err = Create(dir, header(), nil)
	assert.ErrorContains(t, err, "already holds a run (journal.jsonl); give a new or empty folder")
}

// Read parses files a crash or a person may have mangled: never a panic.
func FuzzRead(f *testing.F) {
	dir := f.TempDir()
	w, err := Create(dir, header(), []string{"nccl.all_reduce", "nccl.all_gather"})
	if err != nil {
		f.Fatal(err)
	}
	w.Add(test("nccl.all_reduce", result.Pass, time.Second))
	w.End(time.Second)
	w.Close()
	good, err := os.ReadFile(filepath.Join(dir, layout.Journal))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"run":null}` + "\n" + `{"test":{}}`))
	f.Add([]byte(`{"run":{}}` + "\n" + `{"end_duration_ns":-5}`))
	f.Add([]byte(`{"run":{}}` + "\n" + `{"localisation":{"suspects":[{}],"stages":[{"runs":[{"nic_figures":[{}]}]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, layout.Journal), data, 0o644); err != nil {
			t.Fatal(err)
		}
		run, err := Read(d)
		if err == nil && run == nil {
			t.Fatal("no run and no error")
		}
	})
}

func TestLastDurations(t *testing.T) {
	root := t.TempDir()
	mk := func(name, suite string, started time.Time, d time.Duration) {
		dir := filepath.Join(root, name)
		assert.NilError(t, os.MkdirAll(dir, 0o755))
		h := header()
		h.Suite, h.Started = suite, started
		w, err := Create(dir, h, []string{"nccl.all_reduce", "nccl.all_gather", "nccl.alltoall"})
		assert.NilError(t, err)
		assert.NilError(t, w.Add(test("nccl.all_reduce", result.Pass, d)))
		// An error at once (could not start) says nothing of its duration.
		assert.NilError(t, w.Add(test("nccl.alltoall", result.Error, 18*time.Millisecond)))
		w.Close()
	}
	t0 := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	mk("old", "singlenode", t0, 10*time.Second)
	mk("new", "singlenode", t0.Add(time.Hour), 12*time.Second)
	mk("other-suite", "multinode", t0.Add(2*time.Hour), time.Minute)
	mk("current", "singlenode", t0.Add(3*time.Hour), time.Second)
	assert.NilError(t, os.MkdirAll(filepath.Join(root, "not-a-run"), 0o755))
	got := LastDurations(root, "h200", "singlenode", plan.Scope{Nodes: 1, GPUsPerNode: 2}, filepath.Join(root, "current"))
	// The newest matching run; its unfinished test has no expectation.
	assert.DeepEqual(t, got, map[string]time.Duration{"nccl.all_reduce": 12 * time.Second})
	assert.Assert(t, LastDurations(root, "h200", "singlenode", plan.Scope{Nodes: 1, GPUsPerNode: 8}, "") == nil)
	assert.Assert(t, LastDurations(filepath.Join(root, "missing"), "h200", "singlenode", plan.Scope{Nodes: 1, GPUsPerNode: 2}, "") == nil)
}

func localisation(test string, suspects ...string) result.Localisation {
	l := result.Localisation{Test: test, Hosts: []string{"n1", "n2", "n3", "n4"}, Reason: "failed", Strategy: "pairs", Tolerance: 0.1,
		Stages: []result.Stage{{Name: "pairs", Rounds: 3, Runs: []result.SubRun{{Round: 1, Test: test, Hosts: []string{"n1", "n3"},
			Status: result.Fail, Figure: 41.7, FigureName: "busbw", Unit: "GB/s", Reference: 92.5, Slow: true,
			Why: "busbw 41.7 GB/s is 55% below the stage median 92.5 GB/s", Dir: "localise/" + test + "/pairs/r1-n1-n3"}}}}}
	for _, s := range suspects {
		l.Suspects = append(l.Suspects, result.Suspect{Kind: "node", Host: s, Stage: "pairs", Reason: "every pair with " + s + " was slow",
			Evidence: []string{"pairs round 1 n1,n3: busbw 41.7 GB/s against median 92.5 GB/s, localise/" + test + "/pairs/r1-n1-n3"}})
	}
	return l
}

// A localisation journaled as it ends is in the rebuilt run (gpuaccept
// report after a kill), and its suspects fail it; journals from before
// localisations existed read as they did.
func TestReadLocalisations(t *testing.T) {
	planned := []string{"nccl.all_reduce", "rccl.all_reduce"}
	cases := []struct {
		name   string
		write  func(w *Writer)
		tail   string
		want   []result.Localisation
		status result.Status
	}{
		{"none (an old journal)", func(w *Writer) {
			w.Add(test("nccl.all_reduce", result.Pass, time.Second))
			w.Add(test("rccl.all_reduce", result.Pass, time.Second))
			w.End(3 * time.Second)
		}, "", nil, result.Pass},
		{"suspect fails a run whose tests passed", func(w *Writer) {
			w.Add(test("nccl.all_reduce", result.Pass, time.Second))
			w.AddLocalisation(localisation("nccl.all_reduce", "n3"))
			w.Add(test("rccl.all_reduce", result.Pass, time.Second))
			w.End(3 * time.Second)
		}, "", []result.Localisation{localisation("nccl.all_reduce", "n3")}, result.Fail},
		{"two, killed before the end", func(w *Writer) {
			w.Add(test("nccl.all_reduce", result.Fail, time.Second))
			w.AddLocalisation(localisation("nccl.all_reduce", "n3"))
			w.Add(test("rccl.all_reduce", result.Pass, time.Second))
			w.AddLocalisation(localisation("rccl.all_reduce"))
		}, "", []result.Localisation{localisation("nccl.all_reduce", "n3"), localisation("rccl.all_reduce")}, result.Fail},
		{"killed while writing the localisation", func(w *Writer) {
			w.Add(test("nccl.all_reduce", result.Pass, time.Second))
		}, `{"localisation":{"test":"nccl.all_reduce","hosts":["n1"`, nil, result.Error},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := written(t, planned, c.write, c.tail)
			assert.DeepEqual(t, run.Localisations, c.want)
			assert.Equal(t, run.Status, c.status)
		})
	}
}

// Localisations run after the suite run has closed its journal; they are
// appended to it, after its end line, and read back.
func TestAppendLocalisation(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, header(), []string{"nccl.all_reduce"})
	assert.NilError(t, err)
	assert.NilError(t, w.Add(test("nccl.all_reduce", result.Fail, time.Second)))
	assert.NilError(t, w.End(2*time.Second))
	assert.NilError(t, w.Close())
	assert.NilError(t, AppendLocalisation(dir, localisation("nccl.all_reduce", "n3")))
	run, err := Read(dir)
	assert.NilError(t, err)
	assert.DeepEqual(t, run.Localisations, []result.Localisation{localisation("nccl.all_reduce", "n3")})
	assert.Equal(t, run.Duration, 2*time.Second)

	err = AppendLocalisation(t.TempDir(), localisation("nccl.all_reduce"))
	assert.ErrorContains(t, err, "journal the localisation of nccl.all_reduce: ")
	assert.ErrorContains(t, err, layout.Journal)
}

// A run that goes on after its suite (localisations) records when it
// ended at last: the reports rebuilt from the journal show the duration
// the run printed.
func TestAppendEnd(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, header(), []string{"nccl.all_reduce"})
	assert.NilError(t, err)
	assert.NilError(t, w.Add(test("nccl.all_reduce", result.Fail, time.Second)))
	assert.NilError(t, w.End(2*time.Second))
	assert.NilError(t, w.Close())
	assert.NilError(t, AppendLocalisation(dir, localisation("nccl.all_reduce", "n3")))
	assert.NilError(t, AppendEnd(dir, 9*time.Second))
	run, err := Read(dir)
	assert.NilError(t, err)
	assert.Equal(t, run.Duration, 9*time.Second)
	assert.Equal(t, len(run.Localisations), 1)

	err = AppendEnd(t.TempDir(), time.Second)
	assert.ErrorContains(t, err, "journal the end of the run: ")
}

// An attempt of a retried test is journalled as it ends: read back, it is
// among the run's Ended, and a run stopped during the next attempt keeps
// it as the attempt of its interrupted test (its raw folder is backed).
func TestReadAttempts(t *testing.T) {
	for _, c := range []struct {
		name     string
		last     *result.Test
		want     result.Status
		attempts int
	}{
		{"retried to a pass", &result.Test{Name: "nccl.all_reduce", Status: result.Warn, Attempt: 2, Attempts: []result.Test{{Name: "nccl.all_reduce", Status: result.Error, Attempt: 1}}}, result.Warn, 1},
		{"stopped during the retry", nil, result.Error, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := Create(dir, header(), []string{"nccl.all_reduce"})
			assert.NilError(t, err)
			assert.NilError(t, w.AddAttempt(result.Test{Name: "nccl.all_reduce", Status: result.Error, Attempt: 1, Raw: []string{"raw/nccl.all_reduce.attempt-1/all_reduce.log"}}))
			if c.last != nil {
				assert.NilError(t, w.Add(*c.last))
			}
			assert.NilError(t, w.Close())
			run, err := Read(dir)
			assert.NilError(t, err)
			assert.Equal(t, len(run.Ended), 1)
			assert.Equal(t, run.Ended[0].Attempt, 1)
			assert.Equal(t, run.Tests[0].Status, c.want)
			assert.Equal(t, len(run.Tests[0].Attempts), c.attempts)
		})
	}
}
