// Package proc starts the processes of a step on this host and makes sure
// that nothing they start outlives the step, nor gpuaccept. Every launcher
// starts its local processes through Start (the local launcher the
// benchmark itself; ssh its ssh clients and rank starter; Slurm its
// in-allocation script); what runs on other hosts is stopped by the
// launcher's own remote means (ssh's kill script, scancel).
//
// What a step gets, from the strongest hold to the weakest:
//
//   - A pid namespace of its own where the kernel lets gpuaccept make one
//     (root, or CAP_SYS_ADMIN over its user namespace; with
//     GPUACCEPT_PIDNS=user also a user namespace for anyone else; probed
//     once a session). Its pid 1 is an init, this program run again
//     (stepInit), and the step's program is the init's child. No process
//     can leave a pid namespace, root or not, setsid, double forks and
//     writes to any cgroup's cgroup.procs included, and when the init dies
//     the kernel SIGKILLs everything in it. The init exits when the step's
//     program does, so the step ends with its program; it has SIGKILL as
//     parent-death signal, so the step dies with gpuaccept, kill -9
//     included. The init makes the program's pid inside equal to the
//     init's pid outside (Group.Pid) where it may (root). The namespace
//     has a mount namespace and a /proc of its own (privateProc), so that
//     every process of the step finds itself at /proc/<getpid()>, as the
//     CUDA driver expects; ps in a step shows the step's processes only.
//   - A cgroup of its own where the kernel lets gpuaccept make one: cgroup
//     v2 (the child is cloned straight into it with clone3
//     CLONE_INTO_CGROUP, and cgroup.kill empties it), else the cgroup v1
//     freezer (frozen, killed, thawed), else the v1 pids controller
//     (pids.max 0, then killed). Nothing a step starts leaves its cgroup by
//     itself unless it may write to another cgroup's cgroup.procs (root
//     may: the root cgroup's), so emptying it at the end ends the rest.
//   - Its own process group, SIGKILLed the moment its first process (the
//     program, or the init) exits (before that zombie is reaped, so the
//     group id cannot be another's yet) or is stopped, whether the step
//     passed, failed, timed out or was cancelled; its members are reaped
//     before Close returns. Stop's SIGTERM goes to the group (the init
//     passes it on to its child when the child has left the group).
//   - Re-parented orphans: gpuaccept is a child subreaper
//     (PR_SET_CHILD_SUBREAPER), so a process whose parent dies comes to
//     gpuaccept instead of init (in a pid namespace, to the step's init,
//     which reaps it). Those of a step (same process group, same cgroup,
//     or the step's mark GPUACCEPT_STEP_MARK in their environment) are
//     killed and reaped when it ends; any other is killed once no step is
//     running.
//   - A parent-death signal (SIGKILL) on the step's first process, so it
//     dies with gpuaccept even after kill -9.
//   - A watchdog: a small sh, in a session of its own, that holds a pipe
//     from gpuaccept. When gpuaccept exits, however it exits, the pipe
//     closes and the watchdog kills the process groups (and leaders:
//     inits) of the steps still running, empties and removes gpuaccept's
//     cgroups and removes its temp folder (TempDir).
//   - Clean, run by every gpuaccept before its first step and by gpuaccept
//     clean --local: it kills the inits (and so the namespaces) and
//     empties and removes the cgroups and temp folders that gpuaccept
//     processes no longer alive left.
//
// What remains possible with a pid namespace: a step may still ask a
// service outside it to start a process (systemd-run, at, cron, docker,
// ssh to localhost, a kernel usermode helper such as core_pattern), which
// is no descendant of the step; and root in the step may ptrace the init
// and take its parent-death signal away (Clean, or the watchdog while it
// lives, still kill it). A process stuck in the kernel (uninterruptible
// sleep, e.g. in a GPU driver) outlives everything; it keeps the
// namespace's init from exiting, so the step ends with an error saying so
// and Close names it.
//
// What remains possible without one (GPUACCEPT_PIDNS=off, no
// CAP_SYS_ADMIN as in most containers, clone flags filtered by seccomp,
// /proc/self/exe not runnable): as before the namespaces. With a cgroup, a
// root process that writes itself into another cgroup (the root cgroup's
// cgroup.procs of each hierarchy) and leaves the step's process group
// (setsid) is out of every hold but the subreaper: it is killed at the end
// of its step only when it comes to gpuaccept as an orphan while its step
// is the only one running or still carries the mark, otherwise when the
// last running step ends; after kill -9 of gpuaccept, nothing finds it.
// Without a usable cgroup, the same holds for any process that leaves the
// step's process group (setsid, setpgid), root or not. A process whose
// parent chain leads out of gpuaccept (a nested subreaper such as tini or
// systemd --user, a daemon started through another service) escapes; so
// does one that joins gpuaccept's own process group. If the watchdog dies
// with gpuaccept (kill -9 of the whole session, the OOM killer choosing
// both) or there is no /bin/sh, only the step's first process dies
// (parent-death signal); with a cgroup, the rest runs on in it until the
// next gpuaccept, or gpuaccept clean --local, kills and removes the
// leftover cgroups and temp folders of gpuaccept processes that no longer
// live (Clean); without one, nothing finds the rest.
//
// What a step sees in its pid namespace: getpid() of its program is
// Group.Pid() (as root; a small number in a user namespace without root,
// after the init's threads), getppid() is 1 (the
// init), and $$ and $! are the namespace's pids, as its own /proc names
// them (privateProc): ps, pgrep and kill inside see the step's processes
// only, and the host sees them by other pids (HostPID maps one). A
// program killed by signal N reads as exit status 128+N, as a shell would
// report it (Group.Err says "signal: ..."). A step that must share the
// host's pid namespace with a process started outside it (a CUDA MPS
// daemon, which may need to see its clients' pids) runs with
// GPUACCEPT_PIDNS=off.
//
// Every process gpuaccept starts in a process group or session of its own
// must start through this package: the reaper reaps any child of gpuaccept
// outside gpuaccept's process group that it does not know as a step leader.
package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
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
	// HostPIDs starts the step in gpuaccept's own pid namespace, never
	// one of its own: an evidence step (plan.Evidence) must see the other
	// steps' processes, by their pids here, to dump their stacks.
	HostPIDs bool
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

	ns     nsMode        // the step's namespace; nsOff without one
	ctl    *os.File      // the init's control socket, nil without one
	ctlr   *bufio.Reader // reads ctl
	nsIno  string        // the namespace, as /proc/PID/ns/pid names it
	report nsReport      // what the init said at the end

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
var killWait = 10 * time.Second

// drainWait bounds how long Close waits for the output pipe to close once
// everything it could kill is dead: an escaped process may hold it.
const drainWait = 2 * time.Second

var stepSeq struct {
	sync.Mutex
	n int
}

// Start starts cmd as a step: in its own process group (Setpgid), with
// SIGKILL as its parent-death signal, in a cgroup of its own and in a pid
// namespace of its own (under an init, see stepInit) when the kernel
// allows, with MarkEnv added to its environment (cmd.Env, or os.Environ()
// when nil). cmd.SysProcAttr may be nil; its Setsid must not be set, and
// cmd must not come from exec.CommandContext (end a step with Stop and
// Close). Output written to cmd.Stdout and cmd.Stderr that are not
// *os.File goes through a pipe this package copies from, so waiting for
// the step does not wait for processes that keep the pipe open. The error
// is cmd.Start's (the init reports the exec error of the step's program
// as a *fs.PathError, as exec does). cmd itself is never started: a copy
// is, retried without the cgroup, then without the namespace, when one
// refuses it; use the Group.
func Start(cmd *exec.Cmd, o Options) (*Group, error) {
	return defaultSession().start(cmd, o)
}

func (s *session) start(cmd *exec.Cmd, o Options) (*Group, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	switch {
	case cmd.SysProcAttr.Setsid:
		return nil, fmt.Errorf("start %s: proc: Setsid would take the step out of its process group", cmd.Path)
	case cmd.Cancel != nil:
		return nil, fmt.Errorf("start %s: proc: a command made by exec.CommandContext (Stop and Close end a step)", cmd.Path)
	case cmd.Process != nil:
		return nil, fmt.Errorf("start %s: exec: already started", cmd.Path)
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
	g := &Group{s: s, exited: make(chan struct{}), mark: s.name + "/" + strconv.Itoa(n)}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], MarkEnv+"="+g.mark)

	g.cmd = cmd
	writeEnds, err := g.pipeOutput()
	if err != nil {
		return nil, err
	}

	cg := s.newStepCgroup(o.Name, n)
	if testHookCgroup != nil && cg != nil {
		testHookCgroup(cg.path)
	}
	ns := s.pidns()
	if !nsFits(cmd.SysProcAttr) || o.HostPIDs {
		ns = nsOff
	}
	// What to try, in order: a start that the cgroup or the namespace
	// refuses (clone3 filtered by seccomp, a cgroup gone) is tried
	// without; the one that then works says which was at fault, and no
	// later step tries it.
	type try struct {
		cg *stepCgroup
		ns nsMode
	}
	tries := []try{{cg, ns}}
	if cg != nil {
		tries = append(tries, try{nil, ns})
	}
	if ns != nsOff {
		tries = append(tries, try{nil, nsOff})
	}
	var first error
	for i, t := range tries {
		g.cg, g.ns = t.cg, t.ns
		err = s.startOnStarter(g, cmd)
		if err == nil {
			switch {
			case i == 0:
			case t.ns == ns:
				s.disableCgroups(first)
			default:
				s.disablePidns(first)
			}
			break
		}
		if i == 0 {
			first = err
		}
		var se *stepExecError
		if errors.As(err, &se) {
			// The init ran, in the cgroup and the namespace: the program
			// would not, with or without them.
			first = se.PathError
			break
		}
	}
	if err != nil {
		err = first
	}
	if cg != nil && g.cg == nil {
		_ = cg.remove()
	}
	for _, w := range writeEnds {
		w.Close()
	}
	if err != nil {
		for _, r := range g.pipes {
			r.Close()
		}
		return nil, err
	}
	s.watch(g.pid, true)
	go g.wait()
	return g, nil
}

// nsFits reports whether a step with these attributes can start under a
// namespace's init: none of them may need to apply to the step's program
// itself rather than to the init it inherits them from.
func nsFits(a *syscall.SysProcAttr) bool {
	return a.Chroot == "" && !a.Ptrace && !a.Setctty && !a.Foreground && a.Cloneflags == 0 && a.Unshareflags == 0 &&
		a.UidMappings == nil && a.GidMappings == nil && !a.UseCgroupFD && a.PidFD == nil
}

// wait waits for the leader to exit and, before reaping it, kills its
// process group: while the leader is a zombie no other group can take its
// id, so the kill reaches this group's processes and no one else's. A
// process forking at that moment takes the signal into its child too
// (the kernel holds a fork back while a group signal is pending). Under a
// namespace's init, the init's exit has already killed and reaped all of
// the namespace; its report says how the step's program ended and whether
// it left processes.
func (g *Group) wait() {
	exited := make(chan struct{})
	go func() {
		var info [128]byte // siginfo_t
		for {
			_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(g.pid), uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
			if errno != syscall.EINTR {
				break
			}
		}
		close(exited)
	}()
	if g.ctl != nil {
		// The init writes its report, then exits: its files close (the end
		// of this read) before it waits for the rest of its namespace to
		// die, which a process stuck in the kernel can keep it from.
		rest, _ := io.ReadAll(g.ctlr)
		g.report = parseReport(string(rest))
		if g.report.ok {
			select {
			case <-exited:
			case <-time.After(initExitWait):
				g.stuck(exited)
				return
			}
		}
	}
	<-exited
	g.mu.Lock()
	stopped := g.stopped
	g.mu.Unlock()
	if !stopped {
		g.leftover = g.report.leftover || len(groupMembers(g.pid)) > 0 || (g.cg != nil && len(g.cg.members()) > 0)
	}
	_ = syscall.Kill(-g.pid, syscall.SIGKILL)
	g.err = g.cmd.Wait()
	var ee *exec.ExitError
	if st := g.report.status; g.report.ok && st.Signaled() && errors.As(g.err, &ee) && ee.ExitCode() == 128+int(st.Signal()) {
		g.err = &signalExit{ExitError: ee, sig: st.Signal()}
	}
	untrack(g.pid)
	close(g.exited)
}

// stuck ends the wait for a step whose program has exited (the init said
// so) while its init cannot: processes of its namespace are stuck in the
// kernel. The step is over, its error says so (it is no *exec.ExitError),
// and Close names what is stuck; the init is reaped whenever it ends.
func (g *Group) stuck(exited chan struct{}) {
	st := g.report.status
	how := fmt.Sprintf("exit status %d", st.ExitStatus())
	if st.Signaled() {
		how = "signal: " + st.Signal().String()
	}
	g.mu.Lock()
	g.leftover = !g.stopped
	g.mu.Unlock()
	g.err = fmt.Errorf("%s, but processes it left are stuck in the kernel: its pid namespace (init %d) cannot end", how, g.pid)
	close(g.exited)
	go func() {
		<-exited
		_ = g.cmd.Wait()
		untrack(g.pid)
	}()
}

// initExitWait bounds how long a step's init may take to exit once it has
// said the step's program exited.
var initExitWait = 5 * time.Second

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

// testHookInit, when set, sees each init's command before it starts.
var testHookInit func(*exec.Cmd)

// stepCmd is what starts for cmd: a copy of it, or, under a pid
// namespace, this program as the namespace's init, with the control
// socket (the init's end, to close once started) after cmd's ExtraFiles;
// cmd's Path, Args and Env go to the init over the socket.
func (g *Group) stepCmd(cmd *exec.Cmd) (c *exec.Cmd, ctl, initEnd *os.File, err error) {
	attr := *cmd.SysProcAttr
	c = &exec.Cmd{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir, Stdin: cmd.Stdin, Stdout: cmd.Stdout,
		Stderr: cmd.Stderr, ExtraFiles: cmd.ExtraFiles, SysProcAttr: &attr, WaitDelay: cmd.WaitDelay, Err: cmd.Err}
	if g.ns == nsOff || cmd.Err != nil {
		return c, nil, nil, nil
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("start %s: control socket for its pid namespace's init: %w", cmd.Path, err)
	}
	// Pollable, for deadlines; the init's end stays blocking.
	_ = syscall.SetNonblock(fds[0], true)
	ctl, initEnd = os.NewFile(uintptr(fds[0]), "gpuaccept-init control"), os.NewFile(uintptr(fds[1]), "gpuaccept-init control")
	c.Path = "/proc/self/exe"
	c.Args = []string{initArg0, cmd.Path}
	c.Env = []string{initEnv + "=" + strconv.Itoa(3+len(cmd.ExtraFiles)), MarkEnv + "=" + g.mark}
	c.ExtraFiles = append(cmd.ExtraFiles[:len(cmd.ExtraFiles):len(cmd.ExtraFiles)], initEnd)
	nsAttr(&attr, g.ns)
	if testHookInit != nil {
		testHookInit(c)
	}
	return c, ctl, initEnd, nil
}

// handshake gives a started init its step and waits until it has started
// it: nil, the step's exec error, or what went wrong with the init (which
// is then killed and reaped).
func (g *Group) handshake(c *exec.Cmd, cmd *exec.Cmd, ctl *os.File) error {
	_ = ctl.SetDeadline(time.Now().Add(initWait))
	r := bufio.NewReader(ctl)
	err := writeSpec(ctl, spec{path: cmd.Path, args: cmd.Args, env: cmd.Env})
	var line string
	if err == nil {
		line, err = r.ReadString('\n')
	}
	_ = ctl.SetDeadline(time.Time{})
	var errno int
	switch {
	case err == nil && line == "started\n":
		g.ctlr = r
		return nil
	case err == nil && strings.HasPrefix(line, "exec "):
		if errno, err = strconv.Atoi(strings.TrimSpace(line[5:])); err == nil {
			_ = c.Wait()
			return &stepExecError{&os.PathError{Op: "fork/exec", Path: cmd.Path, Err: syscall.Errno(errno)}}
		}
	case err == nil:
		err = fmt.Errorf("it said %q", line)
	}
	_ = c.Process.Kill()
	werr := c.Wait()
	return fmt.Errorf("start %s: its pid namespace's init: %w (%v)", cmd.Path, err, werr)
}

// stepExecError is the exec error of a step's program, which its init
// could not start: as exec.Cmd.Start would have returned it.
type stepExecError struct{ *os.PathError }

func (e *stepExecError) Unwrap() error { return e.PathError }

// initWait bounds how long an init may take to start its step's program.
const initWait = 30 * time.Second

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

// startOnStarter starts g's command (see stepCmd) on the starter thread,
// in g's cgroup and namespace, and records its leader as tracked (not to
// be reaped by the sweeps) and running, all under the registry lock so a
// sweep never sees it untracked.
func (s *session) startOnStarter(g *Group, cmd *exec.Cmd) error {
	c, ctl, initEnd, err := g.stepCmd(cmd)
	if err != nil {
		return err
	}
	reg.Lock()
	defer reg.Unlock()
	err = onStarter(func() error {
		if g.cg != nil {
			undo, err := g.cg.prepare(c)
			if err != nil {
				return err
			}
			defer undo()
		}
		return c.Start()
	})
	if initEnd != nil {
		initEnd.Close()
	}
	if err == nil && ctl != nil {
		err = g.handshake(c, cmd, ctl)
	}
	if err != nil {
		if ctl != nil {
			ctl.Close()
		}
		return err
	}
	g.cmd, g.ctl = c, ctl
	g.pid = c.Process.Pid
	if ctl != nil {
		g.nsIno, _ = os.Readlink("/proc/" + strconv.Itoa(g.pid) + "/ns/pid")
	}
	reg.tracked[g.pid] = true
	reg.running[g] = true
	return nil
}

// Pid is the leader's process id, which is also the process group id:
// the step's program, or, under a pid namespace, its init (whose host pid
// the program has as its pid inside, where the kernel lets the init choose
// it; see stepInit).
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
// process in the cgroup that the group's signal did not reach: a SIGTERM
// comes once (a second one to a program that handles the first, such as
// mpirun, may hurry it).
func (g *Group) signal(sig syscall.Signal) {
	group := false
	select {
	case <-g.exited:
	default:
		group = syscall.Kill(-g.pid, sig) == nil
	}
	if g.cg == nil {
		return
	}
	for _, p := range g.cg.members() {
		if st, err := readStat(p); group && err == nil && st.pgid == g.pid {
			continue
		}
		_ = syscall.Kill(p, sig)
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
	if g.ctl != nil {
		g.ctl.Close()
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
	for _, p := range nsMembers(g.nsIno) {
		add(p)
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

// ExitCode turns the error of a finished process (exec.Cmd.Wait) into its
// exit status: 0 for nil, the process's code, 128+N when signal N killed it
// (as shells report it), and -1 when it did not run or exit by itself.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}
