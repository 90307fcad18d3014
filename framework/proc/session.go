package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/gpuaccept/gpuaccept/framework/safefs"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER of prctl(2).
const prSetChildSubreaper = 36

// session is what one gpuaccept process sets up once, before its first
// step: its name, its cgroup for steps, its temp folder and its watchdog.
type session struct {
	// name is "gpuaccept-PIDNS-PID-START": the pid namespace, pid and
	// start time (clock ticks since boot) of the process, so a cleaner
	// can tell whether its owner still lives (see Clean).
	name string

	mu     sync.Mutex
	cgMode mode
	cgRun  string // the run's cgroup folder, parent of the steps' ones
	cgWhy  string // why cgMode is what it is
	tmp    string
	tmpErr error
	dog    *os.File // write end of the watchdog's pipe; nil without one
	dogPid int
	dogWhy string
	ns     nsMode // the pid namespace steps get
	nsWhy  string // why ns is what it is
}

var (
	defOnce sync.Once
	def     *session
)

// CgroupEnv names the environment variable that chooses how steps are
// held: "auto" (the default: cgroup v2, else the v1 freezer, else v1 pids,
// else none), "v2", "freezer", "pids" (that one or none) or "none" (process
// groups, the subreaper and the watchdog only; for hosts where a service
// manager must not see cgroups appear).
const CgroupEnv = "GPUACCEPT_CGROUP"

// defaultSession is the process's session, made on first use.
func defaultSession() *session {
	defOnce.Do(func() {
		want, note := modeAuto, ""
		switch v := os.Getenv(CgroupEnv); v {
		case "", "auto":
		case "v2":
			want = modeV2
		case "freezer":
			want = modeFreezer
		case "pids":
			want = modePids
		case "none":
			want = modeNone
		default:
			note = fmt.Sprintf(" (%s=%q is none of auto, v2, freezer, pids, none: auto)", CgroupEnv, v)
		}
		def = newSession(want, selfName())
		def.cgWhy += note
	})
	return def
}

// newSession sets the process up as a child subreaper, removes what dead
// gpuaccept processes left, and makes the run's cgroup (in the given mode,
// or the best the kernel allows for modeAuto) and temp folder, both called
// name, and its watchdog.
// None of it is fatal: what cannot be had is recorded with its reason.
func newSession(want mode, name string) *session {
	// Orphans of steps come to gpuaccept, to be killed and reaped, not to
	// init.
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	s := &session{name: name}
	s.ns, s.nsWhy = probePidns()
	_, _ = Clean()
	s.cgMode, s.cgRun, s.cgWhy = makeRunCgroup(want, s.name)
	s.tmp, s.tmpErr = makeTemp(filepath.Join(os.TempDir(), name))
	s.startWatchdog()
	return s
}

// makeTemp makes the run's temp folder p, private to this process. A p
// that exists already is refused: its name holds this process's pid
// namespace, pid and start time, so no earlier gpuaccept made it, and
// another user who did (the name can be read from /proc) could read and
// swap what the steps write there.
func makeTemp(p string) (string, error) {
	err := os.Mkdir(p, 0o700)
	if err == nil {
		return p, nil
	}
	if os.IsExist(err) {
		who := ""
		if fi, lerr := os.Lstat(p); lerr == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				who = fmt.Sprintf(" (%s of uid %d, mode %v)", safefs.Kind(fi.Mode()), st.Uid, fi.Mode().Perm())
			}
		}
		return "", fmt.Errorf("the run's temp folder %s existed before this gpuaccept made it%s: someone else may read or swap what the steps write there; not used (remove it, and find who made it)", p, who)
	}
	return "", fmt.Errorf("create the run's temp folder: %w", err)
}

var (
	nameOnce sync.Once
	name     string
)

// selfName is this process's session name (see session.name).
func selfName() string {
	nameOnce.Do(func() {
		self, err := identify(os.Getpid())
		if err != nil {
			self = ident{pid: os.Getpid()}
		}
		name = self.name()
	})
	return name
}

// TempPath is where TempDir is, without making it (nor anything else):
// for command lines shown before anything runs (--dry-run).
func TempPath() string { return filepath.Join(os.TempDir(), selfName()) }

// TempDir returns this gpuaccept process's temp folder (in os.TempDir(),
// private to it), made on first use. The watchdog removes it when the
// process exits, kill -9 included; failing that, Clean does.
func TempDir() (string, error) {
	s := defaultSession()
	return s.tmp, s.tmpErr
}

// Containment says, in a line, how this process holds its steps: the
// cgroup kind and folder, or why there is none, whether each step gets a
// pid namespace of its own, or why not, and whether a watchdog runs.
func Containment() string {
	s := defaultSession()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cgWhy
	if s.cgMode != modeNone {
		c = s.cgMode.String() + " cgroup " + s.cgRun + s.cgWhy
	}
	if s.ns != nsOff {
		c += "; a " + s.ns.String() + " per step" + s.nsWhy
	} else {
		c += "; " + s.nsWhy
	}
	if s.dog != nil {
		return c + "; watchdog running"
	}
	return c + "; no watchdog: " + s.dogWhy
}

// registry is what every sweep of this process must agree on.
var reg = struct {
	sync.Mutex
	// tracked are the children someone in this process waits for (step
	// leaders, the watchdogs): never reaped or killed by a sweep.
	tracked map[int]bool
	// running are the Groups not closed yet.
	running map[*Group]bool
}{tracked: map[int]bool{}, running: map[*Group]bool{}}

func untrack(pid int) {
	reg.Lock()
	delete(reg.tracked, pid)
	reg.Unlock()
}

// onStarter runs fn on the starter: one goroutine locked to its OS thread
// for the life of the process. Pdeathsig fires when the thread that forked
// the child exits, not the process (go.dev/issue/27505): forked from any
// goroutine's thread, a child could be killed the day the Go runtime ends
// that thread (it does so when a goroutine exits while locked to it). The
// locked starter thread never exits, so the signal comes exactly when
// gpuaccept dies. The cgroup v1 modes need the lock too: the thread joins
// the step's cgroup for the fork, and only that thread may.
func onStarter(fn func() error) error {
	starterOnce.Do(func() {
		starterCh = make(chan func())
		go func() {
			runtime.LockOSThread() // for ever: never unlocked, never returns
			for f := range starterCh {
				f()
			}
		}()
	})
	done := make(chan error, 1)
	starterCh <- func() { done <- fn() }
	return <-done
}

var (
	starterOnce sync.Once
	starterCh   chan func()
)

// watchdogScript is run by sh with $1 the temp folder, $2 the cgroup mode
// and $3 the run's cgroup (empty for none). It reads "+PGID" and "-PGID"
// lines as steps start and end; at end of input, which comes when
// gpuaccept exits however it exits, it kills the groups still listed and
// their leaders (a pid namespace's init, whose death ends the namespace),
// empties and removes the cgroups (bounded: 100 rounds) and the temp
// folder.
const watchdogScript = `tmp=$1 mode=$2 cg=$3 groups=' '
while read -r l; do
  case $l in
  +*) groups="$groups${l#+} " ;;
  -*) id=${l#-}
      case $groups in *" $id "*) groups="${groups%% $id *} ${groups#* $id }" ;; esac ;;
  esac
done
for g in $groups; do kill -9 "-$g" "$g" 2>/dev/null; done
i=0
while [ -n "$cg" ] && [ -d "$cg" ] && [ $i -lt 100 ]; do
  case $mode in
  v2) echo 1 > "$cg/cgroup.kill" ;;
  freezer)
    echo FROZEN > "$cg/freezer.state"
    for p in $(cat "$cg"/cgroup.procs "$cg"/*/cgroup.procs 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    echo THAWED > "$cg/freezer.state" ;;
  pids)
    for d in "$cg"/*/; do [ -d "$d" ] && echo 0 > "$d/pids.max"; done
    for p in $(cat "$cg"/cgroup.procs "$cg"/*/cgroup.procs 2>/dev/null); do kill -9 "$p" 2>/dev/null; done ;;
  esac 2>/dev/null
  for d in "$cg"/*/; do [ -d "$d" ] && rmdir "$d"; done 2>/dev/null
  rmdir "$cg" 2>/dev/null && break
  i=$((i+1))
  sleep 0.1 2>/dev/null || sleep 1
done
[ -n "$tmp" ] && rm -rf "$tmp"
`

// startWatchdog starts the watchdog: sh in a session of its own (a
// Ctrl-C or a hang-up to gpuaccept's group must not end it first), no
// parent-death signal, its stdin the read end of a pipe only gpuaccept
// holds (the write end is close-on-exec, so no step inherits it).
func (s *session) startWatchdog() {
	shell, err := exec.LookPath("/bin/sh")
	if err != nil {
		s.dogWhy = "no /bin/sh: " + err.Error()
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		s.dogWhy = "pipe: " + err.Error()
		return
	}
	cmd := exec.Command(shell, "-c", watchdogScript, "gpuaccept-watchdog", s.tmp, s.cgMode.String(), s.cgRun)
	cmd.Stdin = r
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	reg.Lock()
	err = cmd.Start()
	if err == nil {
		reg.tracked[cmd.Process.Pid] = true
	}
	reg.Unlock()
	r.Close()
	if err != nil {
		w.Close()
		s.dogWhy = "start sh: " + err.Error()
		return
	}
	s.dog, s.dogPid = w, cmd.Process.Pid
	go func() {
		// Reaped if it dies first (killed by hand): there is none then.
		_ = cmd.Wait()
		untrack(cmd.Process.Pid)
		s.mu.Lock()
		s.dog, s.dogWhy = nil, "it exited before gpuaccept"
		s.mu.Unlock()
		w.Close()
	}()
}

// watch tells the watchdog that the process group pgid started (add) or
// ended.
func (s *session) watch(pgid int, add bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dog == nil {
		return
	}
	op := "-"
	if add {
		op = "+"
	}
	if _, err := fmt.Fprintf(s.dog, "%s%d\n", op, pgid); err != nil {
		s.dogWhy = "it stopped reading: " + err.Error()
		s.dog = nil
	}
}

// pidns is the namespace mode the next step gets.
func (s *session) pidns() nsMode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ns
}

// disablePidns stops putting steps in pid namespaces, after err.
func (s *session) disablePidns(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ns != nsOff {
		s.nsWhy = fmt.Sprintf("no pid namespace: stopped after a start failed in one: %v", strings.TrimSpace(err.Error()))
		s.ns = nsOff
	}
}

// disableCgroups stops putting steps in cgroups, after err.
func (s *session) disableCgroups(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cgMode != modeNone {
		s.cgWhy = fmt.Sprintf("%s cgroups stopped after a start failed in one: %v", s.cgMode, strings.TrimSpace(err.Error()))
		s.cgMode = modeNone
	}
}

// Weaker says, in a line, how this process holds its steps less than
// fully, naming what is missing and what can then outlive a step, kill -9
// of gpuaccept and gpuaccept clean --local; "" when each step gets a pid
// namespace (which holds everything it starts). A run prints it once on
// stderr and keeps it in its notes (result.Run.Notes).
func Weaker() string {
	s := defaultSession()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.weaker()
}

// weaker is Weaker for s. Callers hold s.mu.
func (s *session) weaker() string {
	if s.ns != nsOff {
		return ""
	}
	const tail = "; such a process is not killed with its step and outlives kill -9 of gpuaccept and gpuaccept clean --local (framework/proc/README.md, \"What remains possible\")"
	if s.cgMode != modeNone {
		return "weaker containment on this host: steps get " + s.nsWhy + "; it needs root or CAP_SYS_ADMIN (a privileged pod). Each step has a " + s.cgMode.String() + " cgroup, but a root process of a step that writes itself into the root cgroup and calls setsid leaves it" + tail
	}
	return "weaker containment on this host: steps get " + s.nsWhy + "; it needs root or CAP_SYS_ADMIN (a privileged pod); and " + s.cgWhy + ". A process of a step that leaves its process group (setsid, setpgid) is held by nothing but the subreaper" + tail
}
