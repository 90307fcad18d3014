package proc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// stat is what /proc/PID/stat says of a process.
type stat struct {
	comm  string
	state byte
	ppid  int
	pgid  int
	sid   int
	start uint64 // clock ticks after boot
}

// readStat reads /proc/PID/stat. The command name may hold spaces and
// parentheses, so the fields are read after its last ')'.
func readStat(pid int) (stat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("read /proc/%d/stat: no ')' in %q", pid, data)
	}
	f := strings.Fields(string(data[i+1:]))
	// state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
	// cmajflt utime stime cutime cstime priority nice num_threads
	// itrealvalue starttime
	if len(f) < 20 || len(f[0]) != 1 {
		return stat{}, fmt.Errorf("read /proc/%d/stat: %d fields after the name", pid, len(f))
	}
	var st stat
	if j := bytes.IndexByte(data, '('); j >= 0 && j < i {
		st.comm = string(data[j+1 : i])
	}
	st.state = f[0][0]
	var errs [4]error
	st.ppid, errs[0] = strconv.Atoi(f[1])
	st.pgid, errs[1] = strconv.Atoi(f[2])
	st.sid, errs[2] = strconv.Atoi(f[3])
	st.start, errs[3] = strconv.ParseUint(f[19], 10, 64)
	for _, e := range errs {
		if e != nil {
			return stat{}, fmt.Errorf("read /proc/%d/stat: %w", pid, e)
		}
	}
	return st, nil
}

// children lists this process's children, from the children files of its
// threads (an orphan goes to one of its threads), or from every process's
// parent where the kernel has no such file.
func children() []int {
	self := os.Getpid()
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", self))
	if len(files) == 0 {
		var out []int
		for _, p := range allPids() {
			if st, err := readStat(p); err == nil && st.ppid == self {
				out = append(out, p)
			}
		}
		return out
	}
	var out []int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, w := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(w); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// allPids lists every process in /proc.
func allPids() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// owns reports whether the live process pid, with its stat st, belongs
// to g: in its process group, in its cgroup, or marked as its own in its
// environment.
func (g *Group) owns(pid int, st stat) bool {
	if st.pgid == g.pid {
		return true
	}
	if g.cg != nil {
		for _, p := range g.cg.members() {
			if p == pid {
				return true
			}
		}
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	mark := []byte(MarkEnv + "=" + g.mark + "\x00")
	return bytes.HasPrefix(env, mark) || bytes.Contains(env, append([]byte{0}, mark...))
}

// sweep kills and reaps the children of this process that g left: the
// orphans of its processes, re-parented here. It reaps every zombie child
// that nobody here waits for and that is outside this process's group
// (gpuaccept starts nothing in a group of its own but through Start, whose
// leaders are tracked), and kills what orphans returns. It returns how
// many it killed, still to be reaped. Their pids are safe to signal: they
// are children of this process, not reaped yet.
func sweep(g *Group) int {
	reg.Lock()
	defer reg.Unlock()
	self, selfPgid := os.Getpid(), syscall.Getpgrp()
	for _, pid := range children() {
		if reg.tracked[pid] {
			continue
		}
		if st, err := readStat(pid); err == nil && st.state == 'Z' && st.ppid == self && st.pgid != selfPgid {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
	}
	live := orphans(g)
	for _, pid := range live {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(live)
}

// orphans lists the live children of this process that g owns (see owns),
// or, when g is the only Group running, every live child nobody here waits
// for outside this process's group: no other step's they could be. The
// caller holds reg.
func orphans(g *Group) []int {
	self, selfPgid := os.Getpid(), syscall.Getpgrp()
	alone := len(reg.running) == 1 && reg.running[g]
	var out []int
	for _, pid := range children() {
		if reg.tracked[pid] {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.state == 'Z' || st.ppid != self || st.pgid == selfPgid {
			continue
		}
		if alone || g.owns(pid, st) {
			out = append(out, pid)
		}
	}
	return out
}

// ident names a process across pid namespaces and pid reuse.
type ident struct {
	pidns uint64
	pid   int
	start uint64
}

func (i ident) name() string { return fmt.Sprintf("gpuaccept-%d-%d-%d", i.pidns, i.pid, i.start) }

// identify reads pid's identity in this process's pid namespace.
func identify(pid int) (ident, error) {
	st, err := readStat(pid)
	if err != nil {
		return ident{}, err
	}
	ns, err := pidNamespace()
	if err != nil {
		return ident{}, err
	}
	return ident{pidns: ns, pid: pid, start: st.start}, nil
}

// pidNamespace is the inode of this process's pid namespace. It fails
// when /proc is another namespace's (then no pid read there is this
// process's to judge).
func pidNamespace() (uint64, error) {
	if self, err := os.Readlink("/proc/self"); err != nil || self != strconv.Itoa(os.Getpid()) {
		return 0, fmt.Errorf("/proc is not this process's pid namespace's (/proc/self is %q, pid %d): %v", self, os.Getpid(), err)
	}
	l, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return 0, fmt.Errorf("read pid namespace: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(l, "pid:["), "]"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read pid namespace %q: %w", l, err)
	}
	return n, nil
}

// HostPID finds the pid, as this process's /proc names it, of the live
// process that is pid in the pid namespace ns ("pid:[INODE]", as
// readlink /proc/self/ns/pid gives it): what a process in a step, whose
// /proc is its namespace's own, can say of itself ($$ and that link). ok
// is false when no live process is that one.
func HostPID(ns string, pid int) (host int, ok bool) {
	if own, err := os.Readlink("/proc/self/ns/pid"); err == nil && own == ns {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		return pid, err == nil
	}
	for _, p := range nsMembers(ns) {
		if ids := nsPids(p); len(ids) > 0 && ids[len(ids)-1] == strconv.Itoa(pid) {
			return p, true
		}
	}
	return 0, false
}
