package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/proc"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// maxParallel bounds the ssh clients one launcher runs at once for checks
// and cleanup: sshd's MaxStartups (default 10:30:100) starts refusing
// unauthenticated connections beyond 10, and many nodes behind one bastion
// would otherwise see them all at once.
const maxParallel = 10

// fanOut takes one of maxParallel slots and returns its release; a
// Launcher not made by New has no limit.
func (l *Launcher) fanOut() func() {
	if l.sem == nil {
		return func() {}
	}
	l.sem <- struct{}{}
	return func() { <-l.sem }
}

// pgidFile is where a single-host step's remote shell records its process
// group, inside the step's folder.
const pgidFile = ".gpuaccept.pgid"

// Check connects to every host at once, each with the connect timeout,
// and runs "true" there. It returns an error naming every host that did not
// answer, with ssh's own reason (refused, timed out, host key mismatch,
// permission denied). A launcher checks once; later calls return the first
// answer.
func (l *Launcher) Check(ctx context.Context) error {
	l.checkOnce.Do(func() { l.checkErr = l.check(ctx) })
	return l.checkErr
}

func (l *Launcher) check(ctx context.Context) error {
	type answer struct {
		host string
		err  error
	}
	answers := make([]answer, len(l.Hosts))
	var wg sync.WaitGroup
	for i, h := range l.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer l.fanOut()()
			// Authentication and the remote shell get a few seconds beyond
			// the TCP connect.
			cctx, cancel := context.WithTimeout(ctx, l.connectTimeout()+5*time.Second)
			defer cancel()
			_, err := l.remote(cctx, h, "true\n")
			answers[i] = answer{h, err}
		}()
	}
	wg.Wait()
	var bad []string
	for _, a := range answers {
		if a.err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", a.host, a.err))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("launcher ssh: %d of %d host(s) unreachable, nothing was started (checked with %s HOST true):\n  %s",
			len(bad), len(l.Hosts), rankstart.ShellJoin(l.SSHArgs()), strings.Join(bad, "\n  "))
	}
	return nil
}

// remote runs a shell script on host over ssh (fed to "sh -s" on stdin, so
// nothing of it shows in process listings) and returns its stdout. The
// error carries ssh's or the script's last stderr line.
func (l *Launcher) remote(ctx context.Context, host, script string) ([]byte, error) {
	argv := append(l.SSHArgs(), host, "sh", "-s")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader(script)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	within := "before it was cancelled"
	if dl, ok := ctx.Deadline(); ok {
		within = "within " + time.Until(dl).Round(time.Second).String()
	}
	// No grace: SIGKILL to the client and anything it started.
	end, err := launch.RunGroup(ctx, cmd, launch.GroupStop{Name: "ssh"})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	if end.Stopped != "" {
		return out.Bytes(), fmt.Errorf("no answer %s", within)
	}
	if end.Err != nil {
		return out.Bytes(), fmt.Errorf("%w: %s", end.Err, lastLine(errb.String()))
	}
	return out.Bytes(), nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "(ssh printed nothing)"
	}
	return strings.TrimSpace(s)
}

// q quotes one word for the remote POSIX shell.
func q(s string) string { return rankstart.ShellQuote(s) }

// mkdirScript creates a step's folder, private to the remote user.
func mkdirScript(wd string) string {
	return "umask 077\nmkdir -p " + q(wd) + "\n"
}

// stepScript is what a single-host step runs on its host: a fresh folder,
// the process group recorded there, the step's environment exported (not
// on a command line, so values do not show in process listings), then the
// program in place of the shell, so the recorded group is the program's.
// sshd starts every session in its own session and process group, which
// all the program's children share unless they leave it.
func stepScript(wd string, env map[string]string, argv []string) string {
	var b strings.Builder
	b.WriteString("umask 077\n")
	fmt.Fprintf(&b, "mkdir -p %s && cd %s || { echo \"gpuaccept: cannot create working folder %s on $(hostname)\" >&2; exit 125; }\n", q(wd), q(wd), wd)
	// Field 5 of /proc/PID/stat is the process group; sh's name holds no
	// space, so plain field splitting finds it.
	b.WriteString("pg=$$; if [ -r /proc/$$/stat ]; then set -- $(cat /proc/$$/stat); pg=$5; fi\n")
	fmt.Fprintf(&b, "echo \"$pg\" > %s\n", pgidFile)
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "export %s=%s\n", k, q(env[k]))
	}
	fmt.Fprintf(&b, "exec %s </dev/null\n", rankstart.ShellJoin(argv))
	return b.String()
}

// killScript stops everything a step left on a host: the process group in
// its pid file (TERM, then KILL after grace), then any process still
// working in the step's folder (ranks of a killed mpirun, a daemon that
// left the group); with rm it also removes the folder.
func killScript(wd string, grace time.Duration, rm bool) string {
	tenths := int(grace / (100 * time.Millisecond))
	var b strings.Builder
	fmt.Fprintf(&b, "wd=%s\n", q(wd))
	fmt.Fprintf(&b, "pg=$(cat \"$wd/%s\" 2>/dev/null)\n", pgidFile)
	b.WriteString(`case "$pg" in ''|*[!0-9]*) pg=0;; esac
if [ "$pg" -gt 1 ] && kill -0 -$pg 2>/dev/null; then
	kill -TERM -$pg 2>/dev/null
	i=0
	while kill -0 -$pg 2>/dev/null && [ $i -lt ` + strconv.Itoa(tenths) + ` ]; do sleep 0.1; i=$((i+1)); done
	kill -KILL -$pg 2>/dev/null
	# Gone, not merely signalled, before the launcher reports the step over.
	i=0
	while kill -0 -$pg 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
fi
for p in /proc/[0-9]*; do
	c=$(readlink "$p/cwd" 2>/dev/null) || continue
	case "$c" in "$wd"|"$wd"/*) kill -KILL "${p#/proc/}" 2>/dev/null;; esac
done
`)
	if rm {
		b.WriteString("rm -rf \"$wd\"\nrmdir \"${wd%/*}\" 2>/dev/null\n")
	}
	b.WriteString("exit 0\n")
	return b.String()
}

// collectScript prints one file of the step's folder, or exits 3 when the
// step did not write it.
func collectScript(wd, name string) string {
	return fmt.Sprintf("f=%s/%s\n[ -f \"$f\" ] || exit 3\nexec cat \"$f\"\n", q(wd), q(name))
}

// errAbsent says a step did not write a file it was to write.
var errAbsent = errors.New("not written")

// fetch returns a file of a step's folder on host. The files steps write
// (nccl-tests' -J JSON) are small, so they are held in memory.
func (l *Launcher) fetch(ctx context.Context, host, wd, name string) ([]byte, error) {
	out, err := l.remote(ctx, host, collectScript(wd, name))
	if proc.ExitCode(err) == 3 {
		return nil, errAbsent
	}
	if err != nil {
		return nil, fmt.Errorf("copy %s from %s:%s: %w", name, host, wd, err)
	}
	return out, nil
}
