package report

import (
	"bytes"
	"encoding/json"
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
	"github.com/gpuaccept/gpuaccept/framework/safefs"
)

// within fails the test when f does not return in 10 s (a FIFO read).
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("did not return within 10 s: it blocks on a file it should refuse")
	}
}

const victimContent = "root:$6$secret:19000::\n"

func victimFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "shadow")
	assert.NilError(t, os.WriteFile(p, []byte(victimContent), 0o600))
	return p
}

// The files named to WriteJUnit and WriteHTML replaced by a link: refused
// by name, the link's target intact (the reports of a results folder:
// framework/signoff's TestReportsNeverWriteThroughALink).
func TestReportsNeverWriteThroughALink(t *testing.T) {
	cases := []struct {
		name  string
		write func(run *result.Run, p string) error
	}{
		{"WriteJUnit FILE", func(run *result.Run, p string) error { return WriteJUnit(p, run) }},
		{"WriteHTML FILE", func(run *result.Run, p string) error { return WriteHTML(p, run, nil) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run, _ := realRun(t, "single")
			run.Dir = t.TempDir()
			victim := victimFile(t)
			p := filepath.Join(run.Dir, c.name)
			if strings.Contains(c.name, " ") {
				p = filepath.Join(t.TempDir(), "out")
			}
			assert.NilError(t, os.Symlink(victim, p))
			err := c.write(run, p)
			assert.Assert(t, errors.Is(err, safefs.ErrRefused), "%v", err)
			assert.ErrorContains(t, err, "a symbolic link")
			got, _ := os.ReadFile(victim)
			assert.Equal(t, string(got), victimContent)
		})
	}
}

// The JUnit system-out quotes the raw outputs: only regular files inside
// the results folder, never a file a path or a link leads out to, never a
// FIFO (which would block).
func TestJUnitQuotesOnlyTheFolder(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.log")
	assert.NilError(t, os.WriteFile(outside, []byte("OUTSIDE-THE-FOLDER\n"), 0o644))
	cases := []struct {
		name  string
		raw   string
		plant func(t *testing.T, dir string)
		want  string
	}{
		{"absolute path", outside, func(*testing.T, string) {}, "outside the folder"},
		{"dot-dot path", "REL", func(*testing.T, string) {}, "outside the folder"},
		{"link out", "raw/t/step.log", func(t *testing.T, dir string) {
			assert.NilError(t, os.MkdirAll(filepath.Join(dir, "raw/t"), 0o755))
			assert.NilError(t, os.Symlink(outside, filepath.Join(dir, "raw/t/step.log")))
		}, "a symbolic link"},
		{"FIFO", "raw/t/step.log", func(t *testing.T, dir string) {
			assert.NilError(t, os.MkdirAll(filepath.Join(dir, "raw/t"), 0o755))
			assert.NilError(t, syscall.Mkfifo(filepath.Join(dir, "raw/t/step.log"), 0o644))
		}, "a named pipe (FIFO)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "results")
			assert.NilError(t, os.MkdirAll(dir, 0o755))
			c.plant(t, dir)
			if c.raw == "REL" {
				rel, err := filepath.Rel(dir, outside)
				assert.NilError(t, err)
				c.raw = rel
			}
			run := &result.Run{Dir: dir, Status: result.Fail, Tests: []result.Test{{Name: "nccl.all_reduce", Status: result.Fail, Raw: []string{c.raw}}}}
			var b bytes.Buffer
			within(t, func() { doc := JUnit(run); assert.NilError(t, doc.WriteXML(&b)) })
			assert.Assert(t, !strings.Contains(b.String(), "OUTSIDE-THE-FOLDER"), b.String())
			assert.Assert(t, strings.Contains(b.String(), c.want), b.String())
		})
	}
}

// A number JSON cannot hold (NaN, ±Inf), which no judged run should carry,
// still leaves a results.json that reads back: the number written as 0, the
// test an error naming it.
func TestJSONWritesNonFiniteNumbers(t *testing.T) {
	for _, v := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
		run, _ := realRun(t, "single")
		run.Tests[0].Metrics[0].Value = v
		var b bytes.Buffer
		assert.NilError(t, JSON(&b, run))
		var back result.Run
		assert.NilError(t, json.Unmarshal(b.Bytes(), &back))
		assert.Equal(t, back.Tests[0].Status, result.Error)
		assert.Assert(t, strings.Contains(back.Tests[0].Message, "not a number"), back.Tests[0].Message)
		assert.Equal(t, back.Status, result.Error)
		// The run given is not changed.
		assert.Assert(t, run.Tests[0].Status != result.Error)
	}
}
