package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runName matches a session's name: gpuaccept-PIDNS-PID-START.
var runName = regexp.MustCompile(`^gpuaccept-([0-9]+)-([0-9]+)-([0-9]+)$`)

// Clean kills and removes what gpuaccept processes that no longer live
// left behind, as their watchdog would have (it may have died with them):
// their steps' pid namespaces still alive (their inits, which should have
// died of their parent-death signal, are killed, and the kernel kills the
// rest), their cgroups, in every cgroup hierarchy mounted (v2, v1 freezer
// and pids), with every process still in them, and their temp folders in
// os.TempDir(). A folder is theirs by its name, and an init by the mark in
// its environment (MarkEnv), both of which hold the pid namespace, pid and
// start time of its gpuaccept; those of another pid namespace are left
// alone, as their owner cannot be checked from here. Every gpuaccept runs
// it before its first step; gpuaccept clean --local runs it on demand. It
// returns what it removed, one line each; the error joins what it could
// not.
func Clean() ([]string, error) {
	ns, err := pidNamespace()
	if err != nil {
		return nil, fmt.Errorf("clean leftovers: %w", err)
	}
	var done []string
	var errs []error
	done = append(done, killDeadInits(ns)...)
	ents, _ := os.ReadDir(os.TempDir())
	for _, e := range ents {
		if e.IsDir() && ownerDead(e.Name(), ns) {
			p := filepath.Join(os.TempDir(), e.Name())
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, fmt.Errorf("remove leftover temp folder: %w", err))
				continue
			}
			done = append(done, "removed temp folder "+p)
		}
	}
	for _, h := range hierarchies() {
		_ = filepath.WalkDir(h.mount, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() || !runName.MatchString(d.Name()) {
				return nil
			}
			if ownerDead(d.Name(), ns) {
				n, err := removeRunCgroup(h.mode, p)
				if err != nil {
					errs = append(errs, err)
				} else {
					done = append(done, fmt.Sprintf("removed %s cgroup %s (%d processes killed)", h.mode, p, n))
				}
			}
			return fs.SkipDir
		})
	}
	return done, errors.Join(errs...)
}

// ownerDead reports whether name is a session's name, of this pid
// namespace, whose process no longer lives (or lives as another process:
// its start time differs).
func ownerDead(name string, ns uint64) bool {
	m := runName.FindStringSubmatch(name)
	if m == nil {
		return false
	}
	if n, _ := strconv.ParseUint(m[1], 10, 64); n != ns {
		return false
	}
	pid, _ := strconv.Atoi(m[2])
	start, _ := strconv.ParseUint(m[3], 10, 64)
	st, err := readStat(pid)
	return err != nil || st.start != start
}

// removeRunCgroup kills everything in a run's cgroup and its step
// cgroups, then removes them; it returns how many processes it found.
func removeRunCgroup(m mode, dir string) (int, error) {
	var steps []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			steps = append(steps, filepath.Join(dir, e.Name()))
		}
	}
	found := len(cgroupProcs(dir))
	for _, s := range steps {
		found += len(cgroupProcs(s))
	}
	var err error
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m == modeV2 {
			killCgroup(m, dir) // the whole tree
		} else {
			for _, s := range append(steps, dir) {
				killCgroup(m, s)
			}
		}
		err = nil
		for _, s := range steps {
			if e := os.Remove(s); e != nil && !os.IsNotExist(e) {
				err = e
			}
		}
		if e := os.Remove(dir); e != nil && !os.IsNotExist(e) {
			err = e
		}
		if err == nil {
			return found, nil
		}
		if time.Now().After(end) {
			return found, fmt.Errorf("remove leftover cgroup %s: %w", dir, err)
		}
	}
}

// killDeadInits SIGKILLs the pid-namespace inits of steps whose gpuaccept
// no longer lives, and waits (bounded) for them to go: their namespaces go
// with them. An init is known by its name in /proc/PID/stat and by being
// pid 1 of its namespace, read without touching its memory, before its
// environment is read for the mark (reading another process's memory can
// hang on one stuck in the kernel; an init is this program, never stuck).
func killDeadInits(ns uint64) []string {
	var done []string
	var killed []int
	for _, p := range allPids() {
		st, err := readStat(p)
		if err != nil || st.comm != initArg0 || st.state == 'Z' || !nsInit(p) {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			mark, ok := strings.CutPrefix(kv, MarkEnv+"=")
			run, _, _ := strings.Cut(mark, "/")
			if ok && ownerDead(run, ns) && syscall.Kill(p, syscall.SIGKILL) == nil {
				killed = append(killed, p)
				done = append(done, fmt.Sprintf("killed the pid namespace of step %s (its init, pid %d)", mark, p))
				break
			}
		}
	}
	for end := time.Now().Add(5 * time.Second); len(killed) > 0 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if st, err := readStat(killed[0]); err != nil || st.state == 'Z' {
			killed = killed[1:]
		}
	}
	return done
}

// nsInit reports whether pid is pid 1 of a pid namespace below this one's
// (the last of its NSpid numbers is 1).
func nsInit(pid int) bool {
	ids := nsPids(pid)
	return len(ids) > 1 && ids[len(ids)-1] == "1"
}

// nsPids are pid's numbers in each pid namespace from this one's down
// (the NSpid line of /proc/PID/status); nil when it cannot be read.
func nsPids(pid int) []string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "NSpid:"); ok {
			return strings.Fields(v)
		}
	}
	return nil
}
