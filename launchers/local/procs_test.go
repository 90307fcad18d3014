package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/proc"
	"gotest.tools/v3/assert"
)

// gone waits (bounded) until pid no longer exists: not running and not a
// zombie either, so whoever became its parent has reaped it.
func gone(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readPids reads the pids a step's script wrote, one a line.
func readPids(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	assert.NilError(t, err, "the step did not record its children")
	var pids []int
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(l)
		assert.Assert(t, len(f) == 2, "record %q", l)
		pid, err := strconv.Atoi(f[0])
		assert.NilError(t, err)
		if h, ok := proc.HostPID(f[1], pid); ok {
			pids = append(pids, h)
		}
		// Not found: gone already, with its namespace.
	}
	assert.Assert(t, strings.TrimSpace(string(data)) != "")
	return pids
}

// Nothing a step started outlives it, however it tries to stay: a
// background child after the step passed, one holding the step's log open,
// nohup, setsid at a timeout, setsid with a double fork, and the same with
// the environment cleared. Every process is looked for by pid once Launch
// has returned.
func TestNothingOutlivesAStep(t *testing.T) {
	cases := []struct {
		name     string
		script   string // {rec} CMD records CMD's pid and runs it in its place; {upto} waits for one
		timeout  time.Duration
		timedOut bool
	}{
		{"background child after a pass", `{rec} sleep 300 >/dev/null 2>&1 & {upto}; echo ok`, 0, false},
		{"background child holding the log", `{rec} sleep 300 & {upto}; echo ok`, 0, false},
		{"nohup child after a pass", `nohup {rec} sleep 300 >/dev/null 2>&1 & {upto}; echo ok`, 0, false},
		{"setsid child at a timeout", `setsid {rec} sleep 300 >/dev/null 2>&1 & {upto}; exec {rec} sleep 300`, 500 * time.Millisecond, true},
		{"setsid double fork after a pass", `setsid sh -c '{rec} sleep 300 >/dev/null 2>&1 &' >/dev/null 2>&1 & wait; {upto}; echo ok`, 0, false},
		{"setsid double fork with no environment", `env -i /bin/sh -c 'setsid sh -c "{rec} sleep 300 >/dev/null 2>&1 &" >/dev/null 2>&1 & wait'; {upto}; echo ok`, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "pids")
			// Each pid with its pid namespace: the step may run in one of
			// its own, with a /proc of its own (proc.HostPID names it here).
			rec := filepath.Join(filepath.Dir(p), "rec")
			assert.NilError(t, os.WriteFile(rec, []byte("#!/bin/sh\necho $$ $(readlink /proc/self/ns/pid) >> "+p+"\nexec \"$@\"\n"), 0o755))
			script := strings.ReplaceAll(c.script, "{rec}", rec)
			script = strings.ReplaceAll(script, "{upto}", "until [ -s "+p+" ]; do sleep 0.01; done")
			r := req(t, sh("s", script))
			// Bounds a launcher that waits for the child to close the log.
			r.Timeout = 8 * time.Second
			if c.timeout > 0 {
				r.Timeout = c.timeout
			}
			start := time.Now()
			outs, err := (&Launcher{KillGrace: 200 * time.Millisecond}).Launch(context.Background(), r)
			assert.NilError(t, err)
			took := time.Since(start)
			pids := readPids(t, p)
			for _, pid := range pids {
				if !gone(pid, 5*time.Second) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("pid %d outlived its step (%s)", pid, c.name)
				}
			}
			if c.timedOut {
				assert.Assert(t, strings.HasPrefix(outs[0].LaunchError, "timed out after"), outs[0].LaunchError)
				return
			}
			assert.Equal(t, outs[0].LaunchError, "")
			assert.Equal(t, outs[0].ExitCode, 0)
			assert.Assert(t, took < 5*time.Second, "the step took %s: its leftover child held it", took)
		})
	}
}
