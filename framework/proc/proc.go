// Package proc starts the processes of a step on this host and makes sure
// that nothing they start outlives the step, nor gpuaccept. Every launcher
// starts its local processes through Start (the local launcher the
// benchmark itself; ssh its ssh clients and rank starter; Slurm its
// in-allocation script); what runs on other hosts is stopped by the
// launcher's own remote means (ssh's kill script, scancel).
//
// What a step gets, from the strongest hold to the weakest:
//
//   - A cgroup of its own where the kernel lets gpuaccept make one: cgroup
//     v2 (the child is cloned straight into it with clone3
//     CLONE_INTO_CGROUP, and cgroup.kill empties it), else the cgroup v1
//     freezer (frozen, killed, thawed), else the v1 pids controller
//     (pids.max 0, then killed). Nothing a step starts leaves its cgroup by
//     itself, setsid and double forks included, so emptying it at the end
//     ends everything.
//   - Its own process group, SIGKILLed the moment its first process exits
//     (before that zombie is reaped, so the group id cannot be another's
//     yet) or is stopped, whether the step passed, failed, timed out or was
//     cancelled; its members are reaped before Close returns.
//   - Re-parented orphans: gpuaccept is a child subreaper
//     (PR_SET_CHILD_SUBREAPER), so a process whose parent dies comes to
//     gpuaccept instead of init. Those of a step (same process group, same
//     cgroup, or the step's mark GPUACCEPT_STEP_MARK in their environment)
//     are killed and reaped when it ends; any other is killed once no step
//     is running.
//   - A parent-death signal (SIGKILL) on the step's first process, so it
//     dies with gpuaccept even after kill -9.
//   - A watchdog: a small sh, in a session of its own, that holds a pipe
//     from gpuaccept. When gpuaccept exits, however it exits, the pipe
//     closes and the watchdog kills the process groups of the steps still
//     running, empties and removes gpuaccept's cgroups and removes its temp
//     folder (TempDir).
//
// What remains possible: without a usable cgroup, a process that leaves the
// step's process group (setsid, setpgid) AND whose parent chain leads out
// of gpuaccept (a nested subreaper such as tini or systemd --user, or a
// daemon started through another service: systemd-run, at, docker, ssh to
// localhost) escapes; so does one that joins gpuaccept's own process group.
// After kill -9 of gpuaccept the watchdog still runs, but a setsid'd
// grandchild, out of the step's group and with no cgroup to find it by, is
// left running. If the watchdog dies with gpuaccept (kill -9 of the whole
// session, the OOM killer choosing both) or there is no /bin/sh, only the
// step's first process dies (parent-death signal); with a cgroup, the rest
// runs on in it until the next gpuaccept, or gpuaccept clean --local, kills
// and removes the leftover cgroups and temp folders of gpuaccept processes
// that no longer live (Clean); without one, nothing finds the rest.
//
// Every process gpuaccept starts in a process group or session of its own
// must start through this package: the reaper reaps any child of gpuaccept
// outside gpuaccept's process group that it does not know as a step leader.
package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// MarkEnv is the environment variable every process of a step inherits:
// its value names the step (gpuaccept run and step number), so that the
// step's orphans are known by it when they have left its process group and
// there is no cgroup. It is no secret.
const MarkEnv = "GPUACCEPT_STEP_MARK"

// Options configure Start.
type Options struct {
	// Name is the step's name, used in its cgroup's name.
	Name string
}

// Group is a started step: its first process (the leader), the process
// group it leads, the cgroup it runs in where there is one, and its
// output. Call Close when the step ends, always.
type Group struct {
	s      *session
	cmd    *exec.Cmd
	pid    int
	mark   string
	cg     *stepCgroup
	exited chan struct{}
	err    error

	pipes    []*os.File    // read ends of the output pipes
	copyDone chan struct{} // closed when every output copy ended

	mu       sync.Mutex
	stopped  bool
	leftover bool // the group or cgroup had members when the leader exited

	once   sync.Once
	ending Ending
}

// Ending says how a Group's processes ended (see Close).
type Ending struct {
	// Leftover is true when the leader exited by itself while processes
	// it started were still running (they were killed).
	Leftover bool
	// Survivors are the pids still alive when Close stopped waiting for
	// them (stuck in the kernel, or escaped; see the package doc), where
	// they could be seen.
	Survivors []int
	// Cgroup is the step's cgroup, empty when it had none.
	Cgroup string
	// Err collects problems cleaning up (a cgroup that would not go).
	Err error
}

// killWait bounds how long Close keeps killing and reaping.
const killWait = 10 * time.Second

// drainWait bounds how long Close waits for the output pipe to close once
// everything it could kill is dead: an escaped process may hold it.
const drainWait = 2 * time.Second

var stepSeq struct {
	sync.Mutex
	n int
}

// Start starts cmd as a step: in its own process group (Setpgid), with
// SIGKILL as its parent-death signal, in a cgroup of its own when the
// kernel allows, with MarkEnv added to its environment (cmd.Env, or
// os.Environ() when nil). cmd.SysProcAttr may be nil; its Setsid must not
// be set. Output written to cmd.Stdout and cmd.Stderr that are not
// *os.File goes through a pipe this package copies from, so waiting for
// the step does not wait for processes that keep the pipe open. The error
// is cmd.Start's. After Start, use the Group, not cmd: a start that failed
// in a cgroup is retried with a copy of cmd.
func Start(cmd *exec.Cmd, o Options) (*Group, error) {
	return defaultSession().start(cmd, o)
}

func (s *session) start(cmd *exec.Cmd, o Options) (*Group, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cmd.SysProcAttr.Setsid {
		return nil, fmt.Errorf("start %s: proc: Setsid would take the step out of its process group", cmd.Path)
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	// The kernel sends it when the thread that forked the child exits, not
	// the process: children are forked from the starter's locked thread,
	// which lives as long as gpuaccept (see onStarter).
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL

	stepSeq.Lock()
	stepSeq.n++
	n := stepSeq.n
	stepSeq.Unlock()
	g := &Group{s: s, cmd: cmd, exited: make(chan struct{}), mark: s.name + "/" + strconv.Itoa(n)}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], MarkEnv+"="+g.mark)

	writeEnds, err := g.pipeOutput()
	if err != nil {
		return nil, err
	}

	g.cg = s.newStepCgroup(o.Name, n)
	if testHookCgroup != nil && g.cg != nil {
		testHookCgroup(g.cg.path)
	}
	err = s.startOnStarter(g)
	if err != nil && g.cg != nil {
		// clone3 refused (seccomp filters answer ENOSYS) or the cgroup
		// would not take the child: a Cmd starts once, so a copy starts
		// without; if it does, the cgroups were at fault, and no later
		// step tries them.
		cg := g.cg
		g.cg, g.cmd = nil, retryCmd(cmd)
		if err2 := s.startOnStarter(g); err2 == nil {
			s.disableCgroups(err)
			err = nil
		} else {
			g.cmd = cmd
		}
		_ = cg.remove()
	}
	for _, w := range writeEnds {
		w.Close()
	}
	if err != nil {
		for _, r := range g.pipes {
			r.Close()
		}
		if g.cg != nil {
			g.cg.remove()
		}
		return nil, err
	}
	s.watch(g.pid, true)
	go g.wait()
	return g, nil
}

// wait waits for the leader to exit and, before reaping it, kills its
// process group: while the leader is a zombie no other group can take its
// id, so the kill reaches this group's processes and no one else's. A
// process forking at that moment takes the signal into its child too
// (the kernel holds a fork back while a group signal is pending).
func (g *Group) wait() {
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(g.pid), uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			break
		}
	}
	g.mu.Lock()
	stopped := g.stopped
	g.mu.Unlock()
	if !stopped {
		g.leftover = len(groupMembers(g.pid)) > 0 || (g.cg != nil && len(g.cg.members()) > 0)
	}
	_ = syscall.Kill(-g.pid, syscall.SIGKILL)
	g.err = g.cmd.Wait()
	untrack(g.pid)
	close(g.exited)
}

// pPID is P_PID of waitid(2).
const pPID = 1

// groupMembers lists the processes in process group pgid but its leader,
// zombies included.
func groupMembers(pgid int) []int {
	var out []int
	for _, p := range allPids() {
		if st, err := readStat(p); err == nil && st.pgid == pgid && p != pgid {
			out = append(out, p)
		}
	}
	return out
}

// testHookCgroup, when set, sees each step cgroup before its step starts.
var testHookCgroup func(path string)

// retryCmd is a fresh copy of cmd, which failed to start in a cgroup, to
// start without one.
func retryCmd(cmd *exec.Cmd) *exec.Cmd {
	attr := *cmd.SysProcAttr
	attr.UseCgroupFD, attr.CgroupFD = false, 0
	return &exec.Cmd{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir, Stdin: cmd.Stdin,
		Stdout: cmd.Stdout, Stderr: cmd.Stderr, ExtraFiles: cmd.ExtraFiles, SysProcAttr: &attr}
}

// pipeOutput puts a pipe of its own between cmd and each of its output
// writers that is not a file (one for both when they are the same), and
// copies from it; it returns the write ends, for the caller to close once
// the child has them.
func (g *Group) pipeOutput() ([]*os.File, error) {
	cmd := g.cmd
	var writeEnds []*os.File
	var wg sync.WaitGroup
	attach := func(dst io.Writer) (*os.File, error) {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range append(writeEnds, g.pipes...) {
				f.Close()
			}
			return nil, fmt.Errorf("start %s: output pipe: %w", cmd.Path, err)
		}
		g.pipes = append(g.pipes, r)
		writeEnds = append(writeEnds, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(dst, r)
		}()
		return w, nil
	}
	same := sameWriter(cmd.Stdout, cmd.Stderr)
	if needsPipe(cmd.Stdout) {
		w, err := attach(cmd.Stdout)
		if err != nil {
			return nil, err
		}
		cmd.Stdout = w
		if same {
			cmd.Stderr = w
		}
	}
	if needsPipe(cmd.Stderr) {
		w, err := attach(cmd.Stderr)
		if err != nil {
			return nil, err
		}
		cmd.Stderr = w
	}
	g.copyDone = make(chan struct{})
	go func() {
		wg.Wait()
		close(g.copyDone)
	}()
	return writeEnds, nil
}

// sameWriter reports whether a and b are one writer, as exec.Cmd decides
// it (values of types that cannot be compared are not the same).
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

func needsPipe(w io.Writer) bool {
	if w == nil {
		return false
	}
	_, isFile := w.(*os.File)
	return !isFile
}

// startOnStarter starts g's command on the starter thread, in g's cgroup,
// and records its leader as tracked (not to be reaped by the sweeps) and
// running, all under the registry lock so a sweep never sees it untracked.
func (s *session) startOnStarter(g *Group) error {
	reg.Lock()
	defer reg.Unlock()
	err := onStarter(func() error {
		if g.cg != nil {
			undo, err := g.cg.prepare(g.cmd)
			if err != nil {
				return err
			}
			defer undo()
		}
		return g.cmd.Start()
	})
	if err != nil {
		return err
	}
	g.pid = g.cmd.Process.Pid
	reg.tracked[g.pid] = true
	reg.running[g] = true
	return nil
}

// Pid is the leader's process id, which is also the process group id.
func (g *Group) Pid() int { return g.pid }

// Exited is closed when the leader has exited and been reaped; Err then
// says how (exec.Cmd.Wait's error).
func (g *Group) Exited() <-chan struct{} { return g.exited }

// Err is the leader's exit (nil, or an *exec.ExitError); valid once Exited
// is closed.
func (g *Group) Err() error {
	<-g.exited
	return g.err
}

// Stop asks the step to end: SIGTERM to its process group and its cgroup,
// then waits up to grace for the leader to exit. Close then kills what is
// left.
func (g *Group) Stop(grace time.Duration) {
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	g.signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(grace):
	}
}

// signal sends sig to the group while its leader lives (after that, wait
// has killed the group, and its id may be another's), and to every
// process in the cgroup.
func (g *Group) signal(sig syscall.Signal) {
	select {
	case <-g.exited:
	default:
		_ = syscall.Kill(-g.pid, sig)
	}
	if g.cg != nil {
		g.cg.signal(sig)
	}
}

// Close ends the step for good: SIGKILL to its process group, its cgroup
// (emptied and removed) and its re-parented orphans, all of them reaped,
// over and over until none is left or killWait has passed; then it reads
// what is left of the output (at most drainWait once all is dead). It
// waits for the leader. Calling it again returns the first Ending.
func (g *Group) Close() Ending {
	g.once.Do(func() { g.ending = g.close() })
	return g.ending
}

func (g *Group) close() Ending {
	var e Ending
	if g.cg != nil {
		e.Cgroup = g.cg.path
	}
	select {
	case <-g.exited:
		g.mu.Lock()
		stopped := g.stopped
		g.mu.Unlock()
		if !stopped {
			e.Leftover = g.leftover || g.anyOrphans()
		}
	default:
	}
	deadline := time.Now().Add(killWait)
	for wait := 2 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		g.signal(syscall.SIGKILL)
		if g.cg != nil {
			g.cg.kill()
		}
		pending := sweep(g)
		select {
		case <-g.exited:
			if pending == 0 && !groupAlive(g.pid) && (g.cg == nil || g.cg.empty()) {
				goto clean
			}
		default:
		}
		if time.Now().After(deadline) {
			e.Survivors = g.survivors()
			goto clean
		}
		time.Sleep(wait)
	}
clean:
	g.drain(len(e.Survivors) > 0)
	if g.cg != nil {
		if err := g.cg.remove(); err != nil {
			e.Err = err
		}
	}
	g.s.watch(g.pid, false)
	reg.Lock()
	delete(reg.running, g)
	reg.Unlock()
	return e
}

// anyOrphans reports whether the step left orphans here that sweep would
// kill.
func (g *Group) anyOrphans() bool {
	reg.Lock()
	defer reg.Unlock()
	return len(orphans(g)) > 0
}

// drain waits for the output copy to end: at once when every writer is
// dead, or drainWait when something may still hold the pipe; then it
// closes the pipe so the copy ends anyway.
func (g *Group) drain(survivors bool) {
	wait := drainWait
	if survivors {
		wait = 100 * time.Millisecond
	}
	select {
	case <-g.copyDone:
	case <-time.After(wait):
	}
	for _, r := range g.pipes {
		r.Close()
	}
	<-g.copyDone
}

// survivors lists what Close could not end: the leader, the cgroup's
// members, the group's members and the step's orphans.
func (g *Group) survivors() []int {
	seen := map[int]bool{}
	var out []int
	add := func(pid int) {
		if pid > 0 && pid != os.Getpid() && !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
		}
	}
	select {
	case <-g.exited:
	default:
		add(g.pid)
	}
	if g.cg != nil {
		for _, p := range g.cg.members() {
			add(p)
		}
	}
	for _, p := range allPids() {
		if st, err := readStat(p); err == nil && st.state != 'Z' && (st.pgid == g.pid || (st.ppid == os.Getpid() && g.owns(p, st))) {
			add(p)
		}
	}
	return out
}

// groupAlive reports whether the process group pgid has a member, zombies
// included.
func groupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}
