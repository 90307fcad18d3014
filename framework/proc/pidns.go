package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// PidnsEnv names the environment variable that chooses whether steps get a
// pid namespace of their own: "auto" (the default: where this process may
// make one, as root or with CAP_SYS_ADMIN over its user namespace), "user"
// (as auto, else a user namespace too, mapping only this process's uid and
// gid, for a process without the capability) or "off" (for steps that must
// share the host's pid namespace, such as clients of a CUDA MPS daemon
// started outside them).
const PidnsEnv = "GPUACCEPT_PIDNS"

// nsMode is how steps are put in pid namespaces.
type nsMode int

const (
	nsOff  nsMode = iota // no pid namespace: today's holds only
	nsPid                // CLONE_NEWPID
	nsUser               // CLONE_NEWUSER|CLONE_NEWPID, own uid and gid mapped
)

func (m nsMode) String() string {
	switch m {
	case nsPid:
		return "pid namespace"
	case nsUser:
		return "user+pid namespace"
	}
	return "no pid namespace"
}

// initArg0 is argv[0] of a step's init: this program, run again as pid 1
// of the step's namespace. It is also the init's comm (prctl PR_SET_NAME),
// which Clean looks for: /proc/PID/stat shows it without touching the
// process's memory.
const initArg0 = "gpuaccept-init"

// initEnv, in the init's environment (and nowhere else), holds the number
// of its control socket, or "probe" for the session's probe.
const initEnv = "GPUACCEPT_PROC_INIT"

// The init runs before main: every program that starts steps imports this
// package, so the init is this very program, whatever its main does.
func init() {
	if len(os.Args) == 0 || os.Args[0] != initArg0 {
		return
	}
	v, ok := os.LookupEnv(initEnv)
	if !ok {
		return
	}
	os.Exit(stepInit(v))
}

// stepInit is the init of a step's pid namespace. The step's first process
// is its child, not pid 1 itself, because the kernel drops every signal
// pid 1 has no handler for, from gpuaccept too: a plain program or shell
// as pid 1 would ignore the SIGTERM of a timeout and lose its grace (and
// bash, surviving it, would run the next line of its script). As its child
// the first process gets every signal as it would without a namespace; the
// init handles them (and forwards them to its child when the child has
// left the step's process group, to which gpuaccept sends them), reaps
// every orphan, and when its child exits reports how (and whether
// processes were left) on its control socket and exits with the child's
// status (128+N for signal N, as pid 1 cannot die of one it handles): the
// kernel then SIGKILLs everything left in the namespace.
func stepInit(v string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "gpuaccept-init: "+format+"\n", a...)
		return 125
	}
	if os.Getpid() != 1 {
		return fail("not pid 1 of a pid namespace (pid %d)", os.Getpid())
	}
	if v == "probe" {
		if err := privateProc(); err != nil {
			return fail("%v", err)
		}
		return 0
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return fail("%s=%q is no control socket", initEnv, v)
	}
	syscall.CloseOnExec(fd) // the step must not hold it
	ctl := os.NewFile(uintptr(fd), "control")
	name := []byte(initArg0 + "\x00")
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0)
	// Before anything can signal it: the Go runtime's default for SIGTERM,
	// SIGINT and SIGHUP is to exit, which would end the step at once. A
	// signal ignored from the start stays ignored, so the child inherits
	// it ignored (nohup gpuaccept) as it would without the init.
	sigs := make(chan os.Signal, 64)
	for sig := syscall.Signal(1); sig < 32; sig++ {
		switch sig {
		case syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGCHLD, syscall.SIGURG, syscall.SIGWINCH, syscall.SIGCONT:
			continue // cannot be caught, or do nothing to pid 1
		}
		if !signal.Ignored(sig) {
			signal.Notify(sigs, sig)
		}
	}

	sp, err := readSpec(bufio.NewReader(ctl))
	if err != nil {
		return fail("read the step's command: %v", err)
	}
	// The child is pid 2 otherwise, in every step at once: programs that
	// name files by their pid (mpirun's session folder and job family) would
	// collide with a concurrent step's. This process's host pid is no other
	// live process's, so the child takes it as its pid here (root only:
	// the file needs CAP_SYS_ADMIN over the namespace).
	if self, err := os.Readlink("/proc/self"); err == nil {
		if host, err := strconv.Atoi(self); err == nil && host > 2 {
			_ = os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(host-1)), 0)
		}
	}
	// After the host pid is read from the host's /proc: from here /proc
	// is this namespace's.
	if err := privateProc(); err != nil {
		fmt.Fprintf(ctl, "exec %d\n", int(syscall.EPERM))
		return fail("%v", err)
	}
	files := make([]uintptr, fd)
	for i := range files {
		files[i] = uintptr(i)
	}
	child, err := syscall.ForkExec(sp.path, sp.args, &syscall.ProcAttr{Env: sp.env, Files: files})
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EINVAL
		}
		fmt.Fprintf(ctl, "exec %d\n", int(errno))
		return 127
	}
	fmt.Fprintf(ctl, "started\n")

	var mu sync.Mutex // held while child's pid may be signalled or reaped
	reaped := false
	go func() {
		for s := range sigs {
			sig, ok := s.(syscall.Signal)
			if !ok || !forwarded[sig] {
				continue
			}
			mu.Lock()
			if pg, err := syscall.Getpgid(child); !reaped && err == nil && pg != syscall.Getpgrp() {
				_ = syscall.Kill(child, sig)
			}
			mu.Unlock()
		}
	}()
	var ws syscall.WaitStatus
	for {
		pid, err := waitAny()
		if err != nil {
			return fail("wait for the step's first process: %v", err)
		}
		mu.Lock()
		_, _ = syscall.Wait4(pid, &ws, syscall.WALL, nil)
		if pid == child {
			reaped = true
			mu.Unlock()
			break
		}
		mu.Unlock()
	}
	// Any live process here descends from a live child of this one.
	left := false
	for {
		var o syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &o, syscall.WNOHANG|syscall.WALL, nil)
		if err == syscall.EINTR || pid > 0 {
			continue
		}
		left = err == nil // pid 0: children, none exited
		break
	}
	fmt.Fprintf(ctl, "status %d leftover %t\n", uint32(ws), left)
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// forwarded are the signals the init passes to its child when the child is
// out of the step's process group.
var forwarded = map[syscall.Signal]bool{syscall.SIGTERM: true, syscall.SIGINT: true, syscall.SIGHUP: true,
	syscall.SIGQUIT: true, syscall.SIGUSR1: true, syscall.SIGUSR2: true}

// waitAny waits for any child to exit and returns its pid, leaving it to
// be reaped.
func waitAny() (int, error) {
	var info [128]byte // siginfo_t; si_pid follows three ints, pointer-aligned
	off := (3*4 + unsafe.Sizeof(uintptr(0)) - 1) &^ (unsafe.Sizeof(uintptr(0)) - 1)
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT|syscall.WALL, 0, 0)
		switch errno {
		case 0:
			return int(*(*int32)(unsafe.Pointer(&info[off]))), nil
		case syscall.EINTR:
			continue
		}
		return 0, errno
	}
}

// pAll is P_ALL of waitid(2).
const pAll = 0

// spec is what the init starts: exec.Cmd's Path, Args and Env.
type spec struct {
	path string
	args []string
	env  []string
}

// writeSpec sends s as NUL-ended words: path, len(args), args, len(env),
// env (none of them may hold a NUL; execve would not take it either).
func writeSpec(w io.Writer, s spec) error {
	var b strings.Builder
	word := func(v string) error {
		if strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%q holds a NUL byte", v)
		}
		b.WriteString(v)
		b.WriteByte(0)
		return nil
	}
	all := append(append(append([]string{s.path, strconv.Itoa(len(s.args))}, s.args...), strconv.Itoa(len(s.env))), s.env...)
	for _, v := range all {
		if err := word(v); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func readSpec(r *bufio.Reader) (spec, error) {
	word := func() (string, error) {
		v, err := r.ReadString(0)
		if err != nil {
			return "", err
		}
		return v[:len(v)-1], nil
	}
	list := func() ([]string, error) {
		n, err := word()
		if err != nil {
			return nil, err
		}
		k, err := strconv.Atoi(n)
		if err != nil || k < 0 {
			return nil, fmt.Errorf("bad count %q", n)
		}
		out := make([]string, k)
		for i := range out {
			if out[i], err = word(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	var s spec
	var err error
	if s.path, err = word(); err != nil {
		return s, err
	}
	if s.args, err = list(); err != nil {
		return s, err
	}
	s.env, err = list()
	return s, err
}

// privateProc gives the namespace a /proc of its own, in a mount
// namespace of its own (nsAttr asks for one): with the host's /proc,
// /proc/PID of a pid from getpid() is another process (only the step's
// first process has its host pid, ns_last_pid), and the CUDA driver,
// which reads /proc/<getpid()>/..., fails cudaGetDeviceCount with "OS
// call failed" in every MPI rank (seen on a real H200, 2026-12-01:
// testdata/recordings/h200x1-2026-12-01/pidns). The mounts are made
// private first, so the new /proc reaches no other namespace.
func privateProc() error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the step's mounts private: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount the step's own /proc: %w", err)
	}
	return nil
}

// nsAttr adds mode's namespace flags (and, for nsUser, the id maps) to a.
func nsAttr(a *syscall.SysProcAttr, m nsMode) {
	a.Cloneflags |= syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	if m == nsUser {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
}

// probePidns finds, once a session, the namespace mode steps get: it runs
// this program as a namespace's init that only checks it is pid 1. It
// returns the mode and, for nsOff, why.
func probePidns() (nsMode, string) {
	want := os.Getenv(PidnsEnv)
	note := ""
	switch want {
	case "off":
		return nsOff, "no pid namespace: none asked for (" + PidnsEnv + "=off)"
	case "", "auto", "user":
	default:
		note = fmt.Sprintf(" (%s=%q is none of auto, user, off: auto)", PidnsEnv, want)
		want = "auto"
	}
	modes := []nsMode{nsPid}
	if want == "user" {
		modes = append(modes, nsUser)
	}
	var why []string
	for _, m := range modes {
		err := probe(m)
		if err == nil {
			return m, note
		}
		why = append(why, fmt.Sprintf("%s: %v", m, err))
	}
	return nsOff, "no pid namespace (" + strings.Join(why, "; ") + ")" + note
}

func probe(m nsMode) error {
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{initArg0}
	cmd.Env = []string{initEnv + "=probe"}
	cmd.Dir = "/"
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	nsAttr(cmd.SysProcAttr, m)
	cmd.WaitDelay = time.Second
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%v %s", err, strings.TrimSpace(out.String()))
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return errors.New("the probe did not exit within 30 s")
	}
}

// nsReport is what a step's init said when its child exited.
type nsReport struct {
	ok       bool // a report came: the init was not killed first
	status   syscall.WaitStatus
	leftover bool
}

func parseReport(line string) nsReport {
	var st uint32
	var left bool
	if _, err := fmt.Sscanf(strings.TrimSpace(line), "status %d leftover %t", &st, &left); err != nil {
		return nsReport{}
	}
	return nsReport{ok: true, status: syscall.WaitStatus(st), leftover: left}
}

// signalExit is the end of a step whose first process a signal killed in
// its pid namespace: the init exited 128+N (the wrapped *exec.ExitError,
// whose code is the one a shell would report), and Error says it as Wait
// would have without the namespace.
type signalExit struct {
	*exec.ExitError
	sig syscall.Signal
}

func (e *signalExit) Error() string { return "signal: " + e.sig.String() }

func (e *signalExit) Unwrap() error { return e.ExitError }

// nsMembers lists the live processes in the pid namespace whose inode is
// ino, as this process sees them (host pids).
func nsMembers(ino string) []int {
	if ino == "" {
		return nil
	}
	var out []int
	for _, p := range allPids() {
		if l, err := os.Readlink("/proc/" + strconv.Itoa(p) + "/ns/pid"); err == nil && l == ino {
			if st, err := readStat(p); err == nil && st.state != 'Z' {
				out = append(out, p)
			}
		}
	}
	return out
}
