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
				code, stdout, errs := cli(t, "report", out)
				assert.Equal(t, code, 0, "%s%s", stdout, errs)
				assert.Assert(t, strings.Contains(stdout, "BURN-IN PASS"), stdout)
			}
			code, stdout, errs := cli(t, "verify", out)
			assert.Equal(t, code, 0, "%s%s", stdout, errs)
			kept, err := burnin.Read(out)
			assert.NilError(t, err)
			assert.Assert(t, kept.Ran >= 3, "%d cycles kept", kept.Ran)
			assert.Assert(t, kept.Spent < 2*time.Second)

			code, stdout, errs = cli(t, "run", "--sku", "h100", "--launcher", "replay", "--replay-dir", rec, "--gpus-per-node", "1", "--resume", out)
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
		{[]string{"--duration", "1h", "--drift", "0"}, "--drift 0: want a percentage between 0 and 100"},
		{[]string{"--resume", dir}, "--resume: " + dir + " is no burn-in folder (no burnin.json)"},
		{[]string{"--resume", dir, "--cycles", "3"}, "--resume takes the burn-in's own --duration, --cycles and --drift"},
		{[]string{"--cycles", "3", "--dry-run"}, "--dry-run prints one cycle's commands"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, errs := cli(t, append([]string{"run", "--sku", "h100", "--launcher", "replay", "--replay-dir", dir}, c.args...)...)
			assert.Equal(t, code, exitUsage, errs)
			assert.Assert(t, strings.Contains(errs, c.want), errs)
		})
	}
}
