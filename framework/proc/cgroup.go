package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// mode is how steps are held in cgroups.
type mode int

const (
	modeAuto    mode = iota // the best the kernel allows (only asked for)
	modeNone                // no cgroup: process group, subreaper, mark
	modeV2                  // cgroup v2: clone3 into it, cgroup.kill
	modeFreezer             // cgroup v1 freezer: freeze, kill, thaw
	modePids                // cgroup v1 pids: pids.max 0, kill
)

func (m mode) String() string {
	switch m {
	case modeV2:
		return "v2"
	case modeFreezer:
		return "freezer"
	case modePids:
		return "pids"
	case modeAuto:
		return "auto"
	}
	return "none"
}

// hierarchy is a mounted cgroup hierarchy and this process's cgroup in it.
type hierarchy struct {
	mode  mode
	mount string // where it is mounted
	own   string // this process's cgroup folder in it, "" when not seen
}

var mountinfoPath = "/proc/self/mountinfo"

// hierarchies finds the cgroup v2 hierarchy and the v1 freezer and pids
// ones in /proc/self/mountinfo, with this process's cgroup in each from
// /proc/self/cgroup.
func hierarchies() []hierarchy {
	var out []hierarchy
	mi, err := os.ReadFile(mountinfoPath)
	if err != nil {
		return nil
	}
	own := ownCgroups()
	seen := map[mode]bool{}
	for _, line := range strings.Split(string(mi), "\n") {
		// id parent major:minor root mountpoint opts... - fstype source superopts
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		root, mnt := unescape(f[3]), unescape(f[4])
		var m mode
		var key string
		switch {
		case g[0] == "cgroup2":
			m, key = modeV2, ""
		case g[0] == "cgroup" && hasOpt(g[2], "freezer"):
			m, key = modeFreezer, "freezer"
		case g[0] == "cgroup" && hasOpt(g[2], "pids"):
			m, key = modePids, "pids"
		default:
			continue
		}
		if seen[m] {
			continue
		}
		seen[m] = true
		h := hierarchy{mode: m, mount: mnt}
		if p, ok := own[key]; ok {
			// The mount shows the hierarchy from root: our path below it.
			if rel, ok := strings.CutPrefix(p, strings.TrimSuffix(root, "/")); ok && (rel == "" || rel[0] == '/') {
				h.own = filepath.Join(mnt, rel)
			}
		}
		out = append(out, h)
	}
	return out
}

func hasOpt(opts, o string) bool {
	for _, x := range strings.Split(opts, ",") {
		if x == o {
			return true
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroups maps "" (v2) and each v1 controller to this process's cgroup
// path, from /proc/self/cgroup.
func ownCgroups() map[string]string {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		// hierarchy-id:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// makeRunCgroup makes the run's cgroup, NAME under this process's own, in
// the first of v2, v1 freezer, v1 pids that works (or in want only). It
// returns the mode, the folder and, for modeNone, why.
func makeRunCgroup(want mode, name string) (mode, string, string) {
	if want == modeNone {
		return modeNone, "", "no cgroup: none asked for"
	}
	var why []string
	hs := hierarchies()
	for _, m := range []mode{modeV2, modeFreezer, modePids} {
		if want != modeAuto && want != m {
			continue
		}
		var h *hierarchy
		for i := range hs {
			if hs[i].mode == m {
				h = &hs[i]
			}
		}
		switch {
		case h == nil:
			why = append(why, m.String()+": not mounted")
			continue
		case h.own == "":
			why = append(why, m.String()+": this process's cgroup is outside the mount at "+h.mount)
			continue
		}
		dir := filepath.Join(h.own, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			why = append(why, fmt.Sprintf("%s: %v", m, err))
			continue
		}
		// What each mode kills with; the v1 files are in every child.
		need := map[mode]string{modeV2: "cgroup.kill", modeFreezer: "freezer.state", modePids: "pids.max"}[m]
		if _, err := os.Stat(filepath.Join(dir, need)); err != nil {
			_ = os.Remove(dir)
			why = append(why, fmt.Sprintf("%s: no %s in %s (cgroup.kill needs Linux 5.14)", m, need, dir))
			continue
		}
		return m, dir, ""
	}
	return modeNone, "", "no cgroup (" + strings.Join(why, "; ") + ")"
}

// stepCgroup is one step's cgroup.
type stepCgroup struct {
	mode mode
	path string
	fd   *os.File // the folder, open, for clone3 (v2)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// newStepCgroup makes step n's cgroup in the run's, or returns nil when
// the session has none (or this one cannot be made: the step then runs
// without).
func (s *session) newStepCgroup(name string, n int) *stepCgroup {
	s.mu.Lock()
	m, run := s.cgMode, s.cgRun
	s.mu.Unlock()
	if m == modeNone {
		return nil
	}
	dir := filepath.Join(run, fmt.Sprintf("%d-%s", n, unsafeName.ReplaceAllString(name, "_")))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil
	}
	c := &stepCgroup{mode: m, path: dir}
	if m == modeV2 {
		f, err := os.Open(dir)
		if err != nil {
			_ = os.Remove(dir)
			return nil
		}
		c.fd = f
	}
	return c
}

// prepare readies cmd to start inside the cgroup, on the starter thread.
// v2: clone3 puts the child there (CLONE_INTO_CGROUP). v1 knows no such
// flag, but a child starts in its forking thread's cgroup: the starter
// thread joins the cgroup (its tid to tasks), and undo takes it back to the
// process's own (the run cgroup's parent) once the child is forked.
func (c *stepCgroup) prepare(cmd *exec.Cmd) (undo func(), err error) {
	if c.mode == modeV2 {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(c.fd.Fd())
		return func() {}, nil
	}
	tid := strconv.Itoa(syscall.Gettid())
	if err := os.WriteFile(filepath.Join(c.path, "tasks"), []byte(tid), 0); err != nil {
		return nil, fmt.Errorf("move the starter thread into cgroup %s: %w", c.path, err)
	}
	back := filepath.Join(filepath.Dir(filepath.Dir(c.path)), "tasks")
	return func() {
		if err := os.WriteFile(back, []byte(tid), 0); err != nil {
			// The thread would fork every later step into this one's
			// cgroup, and killing it would kill gpuaccept: give up.
			panic(fmt.Sprintf("proc: move the starter thread back to cgroup %s: %v", filepath.Dir(back), err))
		}
	}, nil
}

// members lists the processes in the cgroup, never this process.
func (c *stepCgroup) members() []int { return cgroupProcs(c.path) }

func cgroupProcs(dir string) []int {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

// empty reports whether no process is left in the cgroup (zombies do not
// count: the kernel takes a process out at exit).
func (c *stepCgroup) empty() bool {
	if c.mode == modeV2 {
		if ev, err := os.ReadFile(filepath.Join(c.path, "cgroup.events")); err == nil {
			return strings.Contains(string(ev), "populated 0")
		}
	}
	_, err := os.Stat(c.path)
	return os.IsNotExist(err) || len(c.members()) == 0
}

// kill kills everything in the cgroup, new forks included.
func (c *stepCgroup) kill() { killCgroup(c.mode, c.path) }

func killCgroup(m mode, dir string) {
	switch m {
	case modeV2:
		_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	case modeFreezer:
		// Frozen, nothing forks while the list is killed; the kills land
		// at the thaw.
		state := filepath.Join(dir, "freezer.state")
		if os.WriteFile(state, []byte("FROZEN"), 0) == nil {
			for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				if st, _ := os.ReadFile(state); strings.TrimSpace(string(st)) == "FROZEN" {
					break
				}
			}
		}
		for _, p := range cgroupProcs(dir) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		_ = os.WriteFile(state, []byte("THAWED"), 0)
	case modePids:
		// No fork succeeds once pids.max is 0.
		_ = os.WriteFile(filepath.Join(dir, "pids.max"), []byte("0"), 0)
		for _, p := range cgroupProcs(dir) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
}

// remove removes the cgroup once empty (bounded: a process stuck in the
// kernel keeps it busy).
func (c *stepCgroup) remove() error {
	if c.fd != nil {
		c.fd.Close()
		c.fd = nil
	}
	var err error
	for end := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err = os.Remove(c.path)
		if err == nil || os.IsNotExist(err) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(end) {
			return fmt.Errorf("remove step cgroup %s: %w", c.path, err)
		}
		killCgroup(c.mode, c.path)
	}
}
