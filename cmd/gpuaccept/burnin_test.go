package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/burnin"
	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// A burn-in killed outright (kill -9) keeps every finished cycle:
// gpuaccept report rebuilds it (the cycle cut short signed off from its
// journal), verify finds it whole, and --resume continues it to its
// plan; Ctrl-C ends it with 130 and its folder sealed. The cycles replay
// a real H100 node run (testdata/recordings/h100x1-2026-12-07/issue28/
// node-1) through the replay launcher.
func TestBurnInKilledReportResume(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			rec, err := filepath.Abs("../../testdata/recordings/h100x1-2026-12-07/issue28/node-1")
			assert.NilError(t, err)
			out := filepath.Join(t.TempDir(), "burnin")
			args := []string{"run", "--sku", "h100", "--suite", "node", "--launcher", "replay", "--replay-dir", rec, "--gpus-per-node", "1"}
			cmd := exec.Command(os.Args[0], append(args, "--duration", "2s", "--out", out)...)
			cmd.Env = append(os.Environ(), "GPUACCEPT_TEST_AS_CLI=1")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			assert.NilError(t, cmd.Start())
			deadline := time.Now().Add(60 * time.Second)
			for {
				if _, err := os.Stat(filepath.Join(out, burnin.CycleDir(4))); err == nil {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("no fourth cycle: %s", stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			assert.NilError(t, cmd.Process.Signal(sig))
			err = cmd.Wait()
			assert.Assert(t, err != nil, "the burn-in ended well after %s", sig)
			if sig == syscall.SIGINT {
				assert.Equal(t, cmd.ProcessState.ExitCode(), 130, stderr.String())
			} else {
				// Stopped short of its plan: an ERROR, whatever its
				// cycles showed, until --resume completes it.
				code, stdout, errs := cli(t, "report", out)
				assert.Equal(t, code, exitError, "%s%s", stdout, errs)
				assert.Assert(t, strings.Contains(stdout, "BURN-IN ERROR (stopped short of its plan, for 2s: --resume continues it)"), stdout)
			}
			code, stdout, errs := cli(t, "verify", out)
			assert.Equal(t, code, 0, "%s%s", stdout, errs)
			kept, err := burnin.Read(out)
			assert.NilError(t, err)
			assert.Assert(t, kept.Ran >= 3, "%d cycles kept", kept.Ran)
			assert.Assert(t, kept.Spent < 2*time.Second)

			// The burn-in's own SKU, launcher and scope: only the
			// launcher's flags are given again.
			code, stdout, errs = cli(t, "run", "--replay-dir", rec, "--resume", out)
			assert.Equal(t, code, 0, "%s%s", stdout, errs)
			done, err := burnin.Read(out)
			assert.NilError(t, err)
			assert.Assert(t, done.Ran > kept.Ran && done.Spent >= 2*time.Second, "%d cycles, %s", done.Ran, done.Spent)
			assert.Equal(t, done.Started, kept.Started)
			assert.Equal(t, done.Status, result.Pass)
			code, stdout, errs = cli(t, "verify", out)
			assert.Equal(t, code, 0, "%s%s", stdout, errs)
			assert.Assert(t, strings.Contains(stdout, "verify: OK"), stdout)
		})
	}
}

// Bad burn-in flags are usage errors (exit 2) naming the flag, before
// anything runs.
func TestBurnInFlags(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--cycles", "-1"}, "--cycles -1: want 1 to 100000"},
		{[]string{"--duration", "1h", "--drift", "0"}, "--drift 0: want a percentage above 0 and below 100"},
		{[]string{"--resume", dir}, "--resume: " + dir + " is no burn-in folder (no burnin.json)"},
		{[]string{"--resume", dir, "--cycles", "3"}, "--resume takes the burn-in's own --duration, --cycles and --drift"},
		{[]string{"--cycles", "3", "--dry-run"}, "--dry-run prints one cycle's commands"},
		{[]string{"--cycles", "0"}, "--cycles 0: want 1 to 100000"},
		{[]string{"--duration", "0s"}, "--duration 0s: want a time above zero"},
		{[]string{"--drift", "3"}, "--drift judges a burn-in: give it with --duration or --cycles"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, errs := cli(t, append([]string{"run", "--sku", "h100", "--launcher", "replay", "--replay-dir", dir}, c.args...)...)
			assert.Equal(t, code, exitUsage, errs)
			assert.Assert(t, strings.Contains(errs, c.want), errs)
		})
	}
}

// A burn-in folder forged after the fact: verify fails it, and report
// (which re-seals a burn-in it rebuilds) refuses to bless it. The cycles
// are genuine: three replayed cycles of a real H100 node run.
func TestBurnInForged(t *testing.T) {
	rec, err := filepath.Abs("../../testdata/recordings/h100x1-2026-12-07/issue28/node-1")
	assert.NilError(t, err)
	base := filepath.Join(t.TempDir(), "made")
	code, out, errs := cli(t, "run", "--sku", "h100", "--suite", "node", "--launcher", "replay", "--replay-dir", rec, "--gpus-per-node", "1", "--cycles", "3", "--out", base)
	assert.Equal(t, code, 0, "%s%s", out, errs)
	reseal := func(t *testing.T, dir string) {
		assert.NilError(t, os.Remove(filepath.Join(dir, "manifest.json")))
		_, err := manifest.WriteWith(dir, "dev", "h100", "cycle-0001/baseline/h100.yaml")
		assert.NilError(t, err)
	}
	cases := []struct {
		name     string
		tamper   func(t *testing.T, dir string)
		verify   string // in verify's output
		noReport bool   // report refuses too
	}{
		{"a cycle copied over another, re-sealed", func(t *testing.T, dir string) {
			assert.NilError(t, os.RemoveAll(filepath.Join(dir, "cycle-0003")))
			assert.NilError(t, os.CopyFS(filepath.Join(dir, "cycle-0003"), os.DirFS(filepath.Join(dir, "cycle-0001"))))
			reseal(t, dir)
		}, "cycle-0003: not cycle 3 of burn-in", false},
		{"the drift band eased in the record, re-sealed", func(t *testing.T, dir string) {
			p := filepath.Join(dir, burnin.File)
			data, err := os.ReadFile(p)
			assert.NilError(t, err)
			assert.NilError(t, os.WriteFile(p, []byte(strings.Replace(string(data), `"drift": 0.05`, `"drift": 0.0549`, 1)), 0o644))
			reseal(t, dir)
		}, "not cycle 1 of burn-in", false},
		{"a cycle's result edited", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "cycle-0002", "results.json")
			data, err := os.ReadFile(p)
			assert.NilError(t, err)
			assert.NilError(t, os.WriteFile(p, []byte(strings.Replace(string(data), `"status": "pass"`, `"status": "fail"`, 1)), 0o644))
		}, "cycle-0002/results.json: edited since the run", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			assert.NilError(t, os.CopyFS(dir, os.DirFS(base)))
			c.tamper(t, dir)
			code, out, errs := cli(t, "verify", dir)
			assert.Assert(t, code != 0, "verify passed a forged burn-in:\n%s", out)
			assert.Assert(t, strings.Contains(out+errs, c.verify), "%s%s", out, errs)
			if c.noReport {
				code, out, errs = cli(t, "report", dir)
				assert.Equal(t, code, exitUsage, "%s%s", out, errs)
				assert.Assert(t, strings.Contains(errs, "the folder changed since it was sealed"), errs)
			}
		})
	}
	// report of a sealed burn-in that nothing changed keeps its seal.
	before, err := os.ReadFile(filepath.Join(base, "manifest.json"))
	assert.NilError(t, err)
	code, out, errs = cli(t, "report", base)
	assert.Equal(t, code, 0, "%s%s", out, errs)
	after, err := os.ReadFile(filepath.Join(base, "manifest.json"))
	assert.NilError(t, err)
	assert.Equal(t, string(after), string(before))
}
