package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/proc"
	"gotest.tools/v3/assert"
)

// procGone waits (bounded) until pid no longer exists, not even as a
// zombie. This test process is a subreaper once a run in it has started a
// step: orphans of the killed run may come to it, and it reaps them here.
func procGone(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if os.IsNotExist(err) {
			return true
		}
		if rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:]); strings.HasPrefix(rest, " Z "+strconv.Itoa(os.Getpid())+" ") {
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill -9 of gpuaccept while a benchmark hangs leaves nothing behind: not
// the benchmark (a direct child), not a grandchild that left the process
// group with setsid, and not the step's working folder in TMPDIR.
func TestKilledRunLeavesNothing(t *testing.T) {
	bin := standin(t)
	// all_gather_perf becomes a wrapper that starts a setsid'd grandchild,
	// then execs the stand-in in its place.
	real := filepath.Join(t.TempDir(), "real")
	assert.NilError(t, os.Mkdir(real, 0o755))
	assert.NilError(t, os.Rename(filepath.Join(bin, "all_gather_perf"), filepath.Join(real, "all_gather_perf")))
	// The grandchild records its pid with its pid namespace: the step
	// may run in one of its own, with a /proc of its own.
	wrapper := "#!/bin/sh\nsetsid sh -c 'echo $$ $(readlink /proc/self/ns/pid) >> \"$STANDIN_PIDFILE\"; exec sleep 600' >/dev/null 2>&1 &\nexec " + filepath.Join(real, "all_gather_perf") + " \"$@\"\n"
	assert.NilError(t, os.WriteFile(filepath.Join(bin, "all_gather_perf"), []byte(wrapper), 0o755))

	rec, _ := filepath.Abs(healthy)
	out := filepath.Join(t.TempDir(), "results")
	tmp := t.TempDir()
	pidfile := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command(os.Args[0], "--sku", "h200", "--suite", "stops", "--baselines", standinSuite(t), "--launcher", "local",
		"--gpus-per-node", "2", "--param", "bindir="+bin, "--param", "env.STANDIN_PIDFILE="+pidfile, "--out", out)
	cmd.Env = append(os.Environ(), "GPUACCEPT_TEST_AS_CLI=1", "STANDIN_RECORDINGS="+rec, "TMPDIR="+tmp)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	assert.NilError(t, cmd.Start())
	// all_reduce's stand-in, then all_gather's grandchild and stand-in.
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(readIfExists(pidfile), "\n") < 3 || !fileExists(filepath.Join(out, "raw/nccl.all_gather/all_gather.log")) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the run did not get to all_gather: %s %s", stdout.String(), stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	work, _ := filepath.Glob(filepath.Join(tmp, "*"))
	assert.Assert(t, len(work) > 0, "the run has no working folder in TMPDIR")
	assert.NilError(t, cmd.Process.Signal(syscall.SIGKILL))
	assert.Assert(t, cmd.Wait() != nil)

	for _, l := range strings.Split(strings.TrimSpace(readIfExists(pidfile)), "\n") {
		// The stand-in writes its pid (a step's first process has its
		// host pid in its namespace too), the grandchild its pid and
		// namespace.
		f := strings.Fields(l)
		pid, err := strconv.Atoi(f[0])
		assert.NilError(t, err)
		if len(f) == 2 {
			h, ok := proc.HostPID(f[1], pid)
			if !ok {
				continue // gone, with its namespace
			}
			pid = h
		}
		if !procGone(pid, 10*time.Second) {
			syscall.Kill(pid, syscall.SIGKILL)
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			t.Errorf("pid %d (%s) outlived its killed gpuaccept", pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		left, _ := filepath.Glob(filepath.Join(tmp, "*"))
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the killed run left %v in TMPDIR", left)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gpuaccept clean --local removes the temp folder of a gpuaccept process
// that no longer lives, and leaves those of a live one and of another pid
// namespace (whose owner it cannot check) alone.
func TestCleanLocal(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	nsLink, err := os.Readlink("/proc/self/ns/pid")
	assert.NilError(t, err)
	ns, err := strconv.ParseUint(strings.Trim(nsLink, "pid:[]"), 10, 64)
	assert.NilError(t, err)
	stat := readFile(t, "/proc/self/stat")
	start := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])[19]
	// A process that has exited and been reaped: its pid names nobody, or
	// somebody else, started later.
	dead := exec.Command("true")
	assert.NilError(t, dead.Run())
	names := map[string]bool{ // name -> removed
		fmt.Sprintf("gpuaccept-%d-%d-%s", ns, dead.Process.Pid, start):       true,
		fmt.Sprintf("gpuaccept-%d-%d-%s", ns, os.Getpid(), start):            false,
		fmt.Sprintf("gpuaccept-%d-%d-%s", ns+1, dead.Process.Pid, start):     false,
		fmt.Sprintf("gpuaccept-%d-%d-%s-extra", ns, dead.Process.Pid, start): false,
	}
	for n := range names {
		assert.NilError(t, os.MkdirAll(filepath.Join(tmp, n, "all_reduce-1"), 0o700))
	}
	code, out, errs := cli(t, "clean", "--local")
	assert.Equal(t, code, 0, out+errs)
	for n, removed := range names {
		_, err := os.Stat(filepath.Join(tmp, n))
		assert.Equal(t, os.IsNotExist(err), removed, n)
		assert.Equal(t, strings.Contains(out, "removed temp folder "+filepath.Join(tmp, n)+"\n"), removed, out)
	}
	code, out, errs = cli(t, "clean", "--local")
	assert.Equal(t, code, 0, out+errs)
	assert.Assert(t, strings.Contains(out, "nothing left on this host"), out)
}
