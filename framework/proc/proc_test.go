package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

func TestMain(m *testing.M) {
	if p := os.Getenv("PROC_TEST_OWNER"); p != "" {
		// A stand-in for gpuaccept, for the tests that kill it.
		owner(p)
		return
	}
	os.Exit(m.Run())
}

// owner starts one step that leaves a background child and a setsid'd
// grandchild, writes their pids to the file pidfile, prints what the test
// needs, and waits to be killed.
func owner(pidfile string) {
	cmd := exec.Command("/bin/sh", "-c", `sleep 300 >/dev/null 2>&1 & echo child $! >> "$1"
setsid sleep 300 >/dev/null 2>&1 & echo escapee $! >> "$1"
echo leader $$ >> "$1"; exec sleep 300`, "sh", pidfile)
	g, err := Start(cmd, Options{Name: "owned"})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	s := defaultSession()
	fmt.Printf("mode %s\ncgroup %s\nrun %s\ntmp %s\nwatchdog %d\nleader %d\nready\n", s.cgMode, g.cg.pathOrEmpty(), s.cgRun, s.tmp, s.dogPid, g.Pid())
	select {}
}

func (c *stepCgroup) pathOrEmpty() string {
	if c == nil {
		return "-"
	}
	return c.path
}

// gone waits, bounded, until pid has no /proc entry: dead and reaped.
// The test process is a subreaper too (its session made it one): the
// processes of a killed owner come to it, and it reaps them here.
func gone(pid int, within time.Duration) bool {
	for end := time.Now().Add(within); ; time.Sleep(10 * time.Millisecond) {
		st, err := readStat(pid)
		if os.IsNotExist(err) {
			return true
		}
		if err == nil && st.state == 'Z' && st.ppid == os.Getpid() {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// absent waits, bounded, until path does not exist.
func absent(path string, within time.Duration) bool {
	for end := time.Now().Add(within); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

func pidsIn(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	assert.NilError(t, err, "the step recorded no pids")
	var out []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		assert.NilError(t, err)
		out = append(out, pid)
	}
	return out
}

// checkMode fails a test run in a forced mode (GPUACCEPT_CGROUP, see
// TestModes) that the session did not get.
func checkMode(t *testing.T) mode {
	t.Helper()
	s := defaultSession()
	if want := os.Getenv(CgroupEnv); want != "" && want != "auto" {
		assert.Equal(t, s.cgMode.String(), want, Containment())
	}
	return s.cgMode
}

// Every way a step's processes try to stay ends with the step: each pid it
// recorded is gone (not even a zombie) once Close returns, and so is its
// cgroup.
func TestSteps(t *testing.T) {
	m := checkMode(t)
	t.Logf("containment: %s", Containment())
	cases := []struct {
		name     string
		script   string        // P is the pid file
		stop     time.Duration // Stop after this long; 0: the step ends by itself
		out      string
		leftover bool
	}{
		{name: "exits cleanly", script: `echo $$ > P; echo hello`, out: "hello\n"},
		{name: "background child", script: `sleep 300 >/dev/null 2>&1 & echo $! > P; echo hello`, out: "hello\n", leftover: true},
		{name: "background child holding the output", script: `sleep 300 & echo $! > P; echo hello`, out: "hello\n", leftover: true},
		{name: "nohup child", script: `nohup sleep 300 >/dev/null 2>&1 & echo $! > P`, leftover: true},
		{name: "setsid child", script: `setsid sleep 300 >/dev/null 2>&1 & echo $! > P; echo hello`, out: "hello\n", leftover: true},
		{name: "setsid double fork", script: `setsid sh -c 'sleep 300 >/dev/null 2>&1 & echo $! > P' >/dev/null 2>&1 & wait`, leftover: true},
		{name: "setsid double fork, environment cleared", script: `env -i /bin/sh -c 'setsid sh -c "sleep 300 >/dev/null 2>&1 & echo \$! > P" >/dev/null 2>&1 & wait'`, leftover: true},
		{name: "setsid child at a stop", script: `setsid sleep 300 >/dev/null 2>&1 & echo $! > P; echo $$ >> P; wait`, stop: 300 * time.Millisecond},
		{name: "ignores SIGTERM at a stop", script: `trap '' TERM; sleep 300 & echo $! > P; echo $$ >> P; wait`, stop: 300 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "pids")
			var out bytes.Buffer
			cmd := exec.Command("/bin/sh", "-c", strings.ReplaceAll(c.script, "P", p))
			cmd.Stdout, cmd.Stderr = &out, &out
			g, err := Start(cmd, Options{Name: "t"})
			assert.NilError(t, err)
			stop := c.stop
			if stop == 0 {
				stop = 10 * time.Second // bounds a step that does not end
			}
			select {
			case <-g.Exited():
				assert.Assert(t, c.stop == 0, "the step ended before its stop")
			case <-time.After(stop):
				assert.Assert(t, c.stop > 0, "the step did not end")
				g.Stop(200 * time.Millisecond)
			}
			start := time.Now()
			e := g.Close()
			assert.Assert(t, time.Since(start) < drainWait, "Close took %s", time.Since(start))
			assert.NilError(t, e.Err)
			assert.Equal(t, len(e.Survivors), 0, "%v", e.Survivors)
			assert.Equal(t, e.Leftover, c.leftover)
			if c.stop == 0 {
				assert.Equal(t, out.String(), c.out)
			}
			for _, pid := range pidsIn(t, p) {
				if !gone(pid, 2*time.Second) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("pid %d outlived the step", pid)
				}
			}
			if m == modeNone {
				assert.Equal(t, e.Cgroup, "")
			} else {
				assert.Assert(t, e.Cgroup != "", "no cgroup in mode %s", m)
				_, err := os.Stat(e.Cgroup)
				assert.Assert(t, os.IsNotExist(err), "cgroup %s left: %v", e.Cgroup, err)
			}
		})
	}
}

// The step's first process gets SIGKILL when the thread that forked it
// exits (Pdeathsig): a goroutine that starts a step while locked to its
// thread and then ends ends that thread, and must not take the step with
// it.
func TestStepOutlivesTheThreadThatStartedIt(t *testing.T) {
	type started struct {
		g   *Group
		tid int
		err error
	}
	ch := make(chan started)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		g, err := Start(exec.Command("sleep", "300"), Options{Name: "t"})
		ch <- started{g, syscall.Gettid(), err}
	}()
	s := <-ch
	assert.NilError(t, s.err)
	defer s.g.Close()
	assert.Assert(t, absent(fmt.Sprintf("/proc/%d/task/%d", os.Getpid(), s.tid), 5*time.Second), "the locked thread did not end")
	// Pdeathsig is sent as the thread exits: had it fired, the leader
	// would be dying now.
	select {
	case <-s.g.Exited():
		t.Fatalf("the step died with the thread that started it: %v", s.g.Err())
	case <-time.After(500 * time.Millisecond):
	}
}

// runOwner starts the owner stand-in and reads what it prints.
func runOwner(t *testing.T, pidfile string) (*exec.Cmd, map[string]string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PROC_TEST_OWNER="+pidfile)
	stdout, err := cmd.StdoutPipe()
	assert.NilError(t, err)
	cmd.Stderr = os.Stderr
	assert.NilError(t, cmd.Start())
	info := map[string]string{}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok || strings.HasPrefix(l, "error") {
				cmd.Process.Kill()
				t.Fatalf("the owner stand-in failed: %q", l)
			}
			if l == "ready" {
				// The script writes its pids after it forks: wait for all three.
				for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
					if d, _ := os.ReadFile(pidfile); strings.Count(string(d), "\n") == 3 {
						break
					}
					if time.Now().After(end) {
						cmd.Process.Kill()
						t.Fatal("the owner's step did not record its pids")
					}
				}
				return cmd, info
			}
			k, v, _ := strings.Cut(l, " ")
			info[k] = v
		case <-timeout:
			cmd.Process.Kill()
			t.Fatal("the owner stand-in did not get ready")
		}
	}
}

// stepPids reads the owner's pid file: role -> pid.
// It waits (bounded) until the escapee has left the step's session: $!
// is known before the child has run setsid.
func stepPids(t *testing.T, pidfile string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(must(os.ReadFile(pidfile)))), "\n") {
		k, v, _ := strings.Cut(l, " ")
		pid, err := strconv.Atoi(v)
		assert.NilError(t, err, l)
		out[k] = pid
	}
	e := out["escapee"]
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st, err := readStat(e); err == nil && st.sid == e {
			return out
		}
		if time.Now().After(end) {
			t.Fatalf("the escapee %d did not leave the step's session", e)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// kill -9 of gpuaccept: its step's leader dies of its parent-death
// signal; the watchdog kills the step's process group (the background
// child), empties the cgroup (the setsid'd grandchild, where there is
// one) and removes the cgroups and the temp folder.
func TestKilledOwnerLeavesNothing(t *testing.T) {
	m := checkMode(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	cmd, info := runOwner(t, pidfile)
	pids := stepPids(t, pidfile)
	assert.Equal(t, info["mode"], m.String())
	assert.NilError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	for _, role := range []string{"leader", "child"} {
		if !gone(pids[role], 10*time.Second) {
			syscall.Kill(pids[role], syscall.SIGKILL)
			t.Errorf("the step's %s (%d) outlived its killed owner", role, pids[role])
		}
	}
	if m == modeNone {
		// What the package doc says stays: out of the group, no cgroup.
		assert.Assert(t, !gone(pids["escapee"], 500*time.Millisecond), "a setsid'd grandchild died without a cgroup: update the package doc")
		syscall.Kill(pids["escapee"], syscall.SIGKILL)
	} else if !gone(pids["escapee"], 10*time.Second) {
		syscall.Kill(pids["escapee"], syscall.SIGKILL)
		t.Errorf("the setsid'd grandchild (%d) outlived its killed owner", pids["escapee"])
	}
	assert.Assert(t, absent(info["tmp"], 10*time.Second), "temp folder %s left", info["tmp"])
	if m != modeNone {
		assert.Assert(t, absent(info["run"], 10*time.Second), "cgroup %s left", info["run"])
	}
}

// When the watchdog died with its gpuaccept, Clean (the next gpuaccept, or
// gpuaccept clean --local) finds the leftover cgroup by its name, kills
// what is in it and removes it, and the temp folder.
func TestCleanRemovesWhatAKilledRunLeft(t *testing.T) {
	m := checkMode(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	pidfile := filepath.Join(t.TempDir(), "pids")
	cmd, info := runOwner(t, pidfile)
	pids := stepPids(t, pidfile)
	dog, err := strconv.Atoi(info["watchdog"])
	assert.NilError(t, err)
	assert.NilError(t, syscall.Kill(dog, syscall.SIGKILL))
	assert.Assert(t, !stillRunning(dog, 5*time.Second), "the watchdog did not die")
	assert.NilError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	assert.Assert(t, gone(pids["leader"], 10*time.Second), "the leader outlived its owner")
	_, err = os.Stat(info["tmp"])
	assert.NilError(t, err, "the temp folder should be left, with no watchdog")
	if m != modeNone {
		_, err = os.Stat(info["run"])
		assert.NilError(t, err, "the cgroup should be left, with no watchdog")
	}

	done, err := Clean()
	assert.NilError(t, err)
	text := strings.Join(done, "\n")
	assert.Assert(t, strings.Contains(text, "removed temp folder "+info["tmp"]), text)
	assert.Assert(t, absent(info["tmp"], time.Second))
	if m == modeNone {
		for _, role := range []string{"child", "escapee"} {
			syscall.Kill(pids[role], syscall.SIGKILL)
		}
		return
	}
	assert.Assert(t, strings.Contains(text, fmt.Sprintf("removed %s cgroup %s (2 processes killed)", m, info["run"])), text)
	assert.Assert(t, absent(info["run"], time.Second))
	// This process lives: its own cgroup stays.
	_, err = os.Stat(defaultSession().cgRun)
	assert.NilError(t, err, "Clean removed a live process's cgroup")
	for _, role := range []string{"child", "escapee"} {
		if !gone(pids[role], 10*time.Second) {
			syscall.Kill(pids[role], syscall.SIGKILL)
			t.Errorf("the step's %s (%d) survived Clean", role, pids[role])
		}
	}
}

// stillRunning waits, bounded, for pid to exit (a zombie counts as
// exited) and reports whether it still runs.
func stillRunning(pid int, within time.Duration) bool {
	for end := time.Now().Add(within); ; time.Sleep(10 * time.Millisecond) {
		st, err := readStat(pid)
		if err != nil || st.state == 'Z' {
			return false
		}
		if time.Now().After(end) {
			return true
		}
	}
}

// Each cgroup mode the kernel has runs the tests above in a process of its
// own (the mode is the process's, chosen once).
func TestModes(t *testing.T) {
	if os.Getenv(CgroupEnv) != "" {
		t.Skipf("already in forced mode %s", os.Getenv(CgroupEnv))
	}
	for _, m := range []mode{modeV2, modeFreezer, modePids, modeNone} {
		t.Run(m.String(), func(t *testing.T) {
			if m != modeNone {
				got, dir, why := makeRunCgroup(m, fmt.Sprintf("gpuaccept-probe-%d", os.Getpid()))
				if got == modeNone {
					t.Skipf("the kernel gives this process no %s cgroup: %s", m, why)
				}
				assert.NilError(t, os.Remove(dir))
			}
			cmd := exec.Command(os.Args[0], "-test.run", "^(TestSteps|TestKilledOwnerLeavesNothing|TestCleanRemovesWhatAKilledRunLeft)$", "-test.count=1")
			cmd.Env = append(os.Environ(), CgroupEnv+"="+m.String())
			out, err := cmd.CombinedOutput()
			assert.NilError(t, err, "%s", out)
			assert.Assert(t, !bytes.Contains(out, []byte("no tests to run")), "%s", out)
		})
	}
}

// A step whose cgroup refuses it (clone3 filtered out, a cgroup gone)
// still starts, without one, and later steps do not try cgroups again.
func TestStartWithoutTheCgroupThatRefused(t *testing.T) {
	for _, m := range []mode{modeV2, modeFreezer, modePids} {
		t.Run(m.String(), func(t *testing.T) {
			s := newSession(m, selfName()+"-refused-"+m.String())
			t.Cleanup(func() {
				if s.cgRun != "" {
					os.Remove(s.cgRun)
				}
				os.RemoveAll(s.tmp)
			})
			if s.cgMode != m {
				t.Skipf("the kernel gives this process no %s cgroup: %s", m, s.cgWhy)
			}
			// The step's cgroup goes between its making and the start.
			testHookCgroup = func(p string) { assert.NilError(t, os.Remove(p)) }
			defer func() { testHookCgroup = nil }()
			var out bytes.Buffer
			cmd := exec.Command("/bin/sh", "-c", "echo started")
			cmd.Stdout = &out
			g, err := s.start(cmd, Options{Name: "t"})
			assert.NilError(t, err)
			<-g.Exited()
			e := g.Close()
			assert.NilError(t, g.Err())
			assert.Equal(t, out.String(), "started\n")
			assert.Equal(t, e.Cgroup, "")
			assert.Equal(t, s.cgMode, modeNone)
			assert.Assert(t, strings.HasPrefix(s.cgWhy, m.String()+" cgroups stopped after a start failed in one: "), s.cgWhy)
		})
	}
}
