package journal

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
)

// within fails the test when f does not return in 10 s (a FIFO read).
func within(t *testing.T, f func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("did not return within 10 s: it blocks on a file it should refuse")
		return nil
	}
}

const victimContent = "root:$6$secret:19000::\n"

// The journal and the baseline copy planted as links (to a file, to a
// folder outside) or FIFOs: every write refuses by name and leaves the
// target as it was; Read refuses without blocking.
func TestJournalRefusesLinksAndSpecialFiles(t *testing.T) {
	cases := []struct {
		name  string
		plant func(t *testing.T, dir, victim, victimDir string)
		do    func(dir string) error
		want  string
	}{
		{"Create over a dangling link", func(t *testing.T, dir, _, victimDir string) {
			assert.NilError(t, os.Symlink(filepath.Join(victimDir, "new"), filepath.Join(dir, layout.Journal)))
		}, func(dir string) error { _, err := Create(dir, header(), nil); return err }, "a symbolic link"},
		{"AppendLocalisation to a link", func(t *testing.T, dir, victim, _ string) {
			assert.NilError(t, os.Symlink(victim, filepath.Join(dir, layout.Journal)))
		}, func(dir string) error { return AppendLocalisation(dir, localisation("rccl.all_reduce")) }, "a symbolic link"},
		{"SaveBaseline into a linked folder", func(t *testing.T, dir, _, victimDir string) {
			assert.NilError(t, os.Symlink(victimDir, filepath.Join(dir, layout.Baseline)))
		}, func(dir string) error { return SaveBaseline(dir, "h200", []byte("name: h200\n")) }, "baseline is a symbolic link"},
		{"SaveBaseline over a link", func(t *testing.T, dir, victim, _ string) {
			assert.NilError(t, os.MkdirAll(filepath.Join(dir, layout.Baseline), 0o755))
			assert.NilError(t, os.Symlink(victim, filepath.Join(dir, layout.Baseline, "h200.yaml")))
		}, func(dir string) error { return SaveBaseline(dir, "h200", []byte("name: h200\n")) }, "a symbolic link"},
		{"Read a FIFO", func(t *testing.T, dir, _, _ string) {
			assert.NilError(t, syscall.Mkfifo(filepath.Join(dir, layout.Journal), 0o644))
		}, func(dir string) error { _, err := Read(dir); return err }, "a named pipe (FIFO)"},
		{"Read a link out", func(t *testing.T, dir, victim, _ string) {
			assert.NilError(t, os.Symlink(victim, filepath.Join(dir, layout.Journal)))
		}, func(dir string) error { _, err := Read(dir); return err }, "a symbolic link"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "results")
			victimDir := filepath.Join(base, "elsewhere")
			victim := filepath.Join(base, "shadow")
			assert.NilError(t, os.MkdirAll(dir, 0o755))
			assert.NilError(t, os.MkdirAll(victimDir, 0o755))
			assert.NilError(t, os.WriteFile(victim, []byte(victimContent), 0o600))
			c.plant(t, dir, victim, victimDir)
			err := within(t, func() error { return c.do(dir) })
			assert.Assert(t, errors.Is(err, safefs.ErrRefused), "%v", err)
			assert.ErrorContains(t, err, c.want)
			got, _ := os.ReadFile(victim)
			assert.Equal(t, string(got), victimContent)
			ents, _ := os.ReadDir(victimDir)
			assert.Equal(t, len(ents), 0, "wrote into the folder a link points at")
		})
	}
}

// A test carrying NaN or ±Inf is journaled (as 0, the test an error
// naming the number) instead of failing the journal, and reads back.
func TestJournalNonFinite(t *testing.T) {
	for _, v := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
		dir := t.TempDir()
		w, err := Create(dir, header(), []string{"nccl.all_reduce"})
		assert.NilError(t, err)
		tt := test("nccl.all_reduce", result.Pass, time.Second)
		tt.Metrics = []result.Judged{{Metric: result.Metric{Name: "busbw", Value: v, Unit: "GB/s", Size: 4 << 30}, Status: result.Pass}}
		assert.NilError(t, w.Add(tt))
		assert.NilError(t, w.End(time.Second))
		assert.NilError(t, w.Close())
		run, err := Read(dir)
		assert.NilError(t, err)
		assert.Equal(t, run.Tests[0].Status, result.Error)
		assert.Assert(t, strings.Contains(run.Tests[0].Message, "busbw at 4 GiB = "), run.Tests[0].Message)
	}
}
