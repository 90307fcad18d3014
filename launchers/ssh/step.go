package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/proc"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// stepRun is a step with everything decided: its hosts, folders and the
// command that starts it.
type stepRun struct {
	step  plan.Step
	hosts []string
	// wd is the step's folder on its hosts, local the folder of the rank
	// starter on this machine (collective steps only).
	wd, local string
	// starter is the rank starter's argv (collective steps); nil for a
	// single-host step, which runs stepScript over ssh.
	starter []string
	// starterEnv is added to the rank starter's environment.
	starterEnv []string
	// wrapper is the remote shell script MPICH's -launcher-exec runs;
	// empty when not needed.
	wrapper string
	command string
}

func validTest(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// prepare decides how every step of req runs, or says why it cannot.
func (l *Launcher) prepare(req launch.Request) ([]stepRun, error) {
	if !validTest(req.Test) {
		return nil, fmt.Errorf("launcher ssh: test name %q is not a plain word", req.Test)
	}
	if err := req.Plan.Validate(); err != nil {
		return nil, fmt.Errorf("launcher ssh: test %s: %w", req.Test, err)
	}
	hs, err := l.hostsFor(req)
	if err != nil {
		return nil, err
	}
	// A plugin that planned without host names (server address, rendezvous)
	// left HostRefs: node i is the i-th host this test runs on. Every step
	// sees them all in plan.HostsEnv.
	if req.Plan, err = req.Plan.WithHostsEnv(len(hs)).ResolveHostRefs(plan.TopologyHosts(plan.Topology{Scope: plan.Scope{Nodes: len(hs), GPUsPerNode: req.Topology.GPUsPerNode}, Hosts: hs})); err != nil {
		return nil, fmt.Errorf("launcher ssh: test %s: %w", req.Test, err)
	}
	flavor, err := rankstart.ParseFlavor(string(l.Flavor))
	if err != nil {
		return nil, err
	}
	runs := make([]stepRun, len(req.Plan.Steps))
	for i, s := range req.Plan.Steps {
		sh, err := stepHosts(s, hs)
		if err != nil {
			return nil, fmt.Errorf("launcher ssh: test %s: %w", req.Test, err)
		}
		if err := rankstart.CheckEnvNames(s); err != nil {
			return nil, fmt.Errorf("launcher ssh: test %s: %w", req.Test, err)
		}
		for _, f := range s.Files {
			if f == "" || strings.HasPrefix(f, "/") || strings.Contains(f, "..") || strings.ContainsAny(f, "\n\x00") {
				return nil, fmt.Errorf("launcher ssh: test %s: step %s: file %q is not a plain relative name", req.Test, s.Name, f)
			}
		}
		r := stepRun{step: s, hosts: sh, wd: l.workDir(req.Test, s.Name)}
		if !rankstart.NeedsStarter(s) {
			line := "cd " + q(r.wd) + " && "
			if env := rankstart.EnvPrefix(s); env != "" {
				line += env + " "
			}
			line += "exec " + rankstart.ShellJoin(s.Argv)
			r.command = rankstart.ShellJoin(append(l.SSHArgs(), sh[0])) + " " + q(line)
			runs[i] = r
			continue
		}
		// In the process's temp folder, which goes even after kill -9.
		r.local = filepath.Join(proc.TempPath(), "ssh-"+l.RunID, req.Test+"."+s.Name)
		o := rankstart.Options{Hosts: sh, AllowRoot: os.Geteuid() == 0, ExtraArgs: l.MPIArgs, Environ: l.environ(),
			RemoteShell: l.SSHArgs(), WorkDir: r.wd, DisableHCOLL: flavor != rankstart.FlavorMPICH}
		if flavor == rankstart.FlavorMPICH {
			r.wrapper = filepath.Join(r.local, "gpuaccept-rsh")
			o.RemoteShellExec = r.wrapper
		}
		if r.starter, err = rankstart.MPIRun(flavor, s, o); err != nil {
			return nil, fmt.Errorf("launcher ssh: test %s: %w", req.Test, err)
		}
		r.starterEnv = rankstart.StarterEnv(flavor, o)
		r.command = rankstart.CommandLine(s, rankstart.ShellJoin(r.starter))
		for i := len(r.starterEnv) - 1; i >= 0; i-- {
			k, v, _ := strings.Cut(r.starterEnv[i], "=")
			r.command = k + "=" + q(v) + " " + r.command
		}
		runs[i] = r
	}
	return runs, nil
}

// Commands implements launch.Launcher: a single-host step as the ssh
// command with the remote command line it amounts to (the launcher feeds
// it to sh on stdin, so values stay out of process listings), a collective
// step as the rank starter's line with its environment in front.
func (l *Launcher) Commands(req launch.Request) ([]string, error) {
	runs, err := l.prepare(req)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.command
	}
	return out, nil
}

// Launch implements launch.Launcher. It checks once that every host
// answers, then runs the steps in order: a step with a ReadyMarker starts
// and, once the marker shows in its output, lets the next step start while
// it keeps running (a server); consecutive client steps start together, so
// several server/client pairs run at once; any other step is waited for,
// with everything still running, before the next starts. A step whose
// server ended without its marker, or that comes after a timeout, is not
// started and says why.
func (l *Launcher) Launch(ctx context.Context, req launch.Request) ([]plan.Output, error) {
	runs, err := l.prepare(req)
	if err != nil {
		return nil, err
	}
	if err := l.Check(ctx); err != nil {
		return nil, err
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	outs := make([]plan.Output, len(runs))
	var wg sync.WaitGroup
	start := func(i int) chan bool {
		ready := make(chan bool, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = l.run(ctx, req, runs[i], ready)
		}()
		return ready
	}
	blocked := ""
	for i := 0; i < len(runs); {
		s := runs[i].step
		if blocked == "" && ctx.Err() != nil {
			blocked = "not started: the test " + stopReason(ctx) + " first"
		}
		if blocked != "" {
			outs[i] = plan.Output{Step: s.Name, Role: s.Role, Host: runs[i].hosts[0], ExitCode: -1, LaunchError: blocked, Command: runs[i].command}
			i++
			continue
		}
		if s.ReadyMarker != "" {
			ready := start(i)
			select {
			case ok := <-ready:
				if !ok {
					blocked = fmt.Sprintf("not started: step %s ended before its readiness line %q showed", s.Name, s.ReadyMarker)
				}
			case <-ctx.Done():
			}
			i++
			continue
		}
		j := i + 1
		if s.Role == "client" {
			for j < len(runs) && runs[j].step.Role == "client" && runs[j].step.ReadyMarker == "" {
				j++
			}
		}
		for k := i; k < j; k++ {
			start(k)
		}
		wg.Wait()
		i = j
	}
	wg.Wait()
	return outs, nil
}

func stopReason(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "timed out"
	}
	return "cancelled"
}

// run runs one step to its end; it sends true on ready when the step's
// marker shows, false when the step ended without it. The result is named:
// the deferred cleanup adds collected files and its own problems to it.
func (l *Launcher) run(ctx context.Context, req launch.Request, r stepRun, ready chan<- bool) (out plan.Output) {
	s := r.step
	var once sync.Once
	signal := func(ok bool) { once.Do(func() { ready <- ok }) }
	defer signal(false)

	out = plan.Output{Step: s.Name, Role: s.Role, Host: r.hosts[0], ExitCode: -1, Command: r.command}
	logw, logPath, err := launch.CreateLog(req, s.Name)
	if err != nil {
		out.LaunchError = err.Error()
		return out
	}
	out.Log = logPath
	defer logw.Close()

	sctx := ctx
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	var sink io.Writer = logw
	if s.ReadyMarker != "" {
		sink = &launch.MarkerWriter{W: logw, Marker: []byte(s.ReadyMarker), Found: func() { signal(true) }}
	}
	sw := &launch.SyncWriter{W: sink}
	defer l.cleanup(req, r, &out, logw)

	var cmd *exec.Cmd
	if r.starter == nil {
		argv := append(l.SSHArgs(), r.hosts[0], "sh", "-s")
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.Stdin = strings.NewReader(stepScript(r.wd, s.Env, s.Argv))
	} else {
		if err := l.makeFolders(sctx, r); err != nil {
			out.LaunchError = err.Error()
			fmt.Fprintf(logw, "gpuaccept: %s\n", out.LaunchError)
			return out
		}
		cmd = exec.Command(r.starter[0], r.starter[1:]...)
		cmd.Dir = r.local
		cmd.Env = append(rankstart.Environ(l.environ(), s), r.starterEnv...)
	}
	cmd.Stdout, cmd.Stderr = sw, sw

	began := time.Now()
	g, err := proc.Start(cmd, proc.Options{Name: s.Name})
	if err != nil {
		out.LaunchError = fmt.Sprintf("start %s: %v", cmd.Args[0], err)
		fmt.Fprintf(logw, "gpuaccept: %s\n", out.LaunchError)
		return out
	}
	var werr error
	select {
	case <-g.Exited():
		werr = g.Err()
	case <-sctx.Done():
		why := stopReason(sctx)
		if why == "timed out" {
			why = fmt.Sprintf("timed out after %s", time.Since(began).Round(time.Millisecond))
		}
		var errs []error
		if r.starter == nil {
			// Closing the connection does not stop a command without a
			// terminal: stop its process group on the host first.
			errs = l.stopRemote(r, l.killGrace())
			g.Stop(5 * time.Second)
			out.LaunchError = why + "; remote process group killed"
		} else {
			g.Stop(l.killGrace())
			errs = l.stopRemote(r, 0)
			out.LaunchError = why + "; rank starter and remote ranks killed"
		}
		g.Close() // the local side (ssh client, rank starter) and what it left
		if err := errors.Join(errs...); err != nil {
			out.LaunchError += "; " + strings.ReplaceAll(err.Error(), "\n", "; ")
		}
		fmt.Fprintf(logw, "\ngpuaccept: step %s %s\n", s.Name, out.LaunchError)
		return out
	}
	g.Close() // whatever the local side left running ends with the step
	out.ExitCode = launch.ExitCode(werr)
	switch {
	case out.ExitCode < 0:
		out.LaunchError = fmt.Sprintf("wait for %s: %v", cmd.Args[0], werr)
	case r.starter == nil && out.ExitCode == 255:
		out.LaunchError = fmt.Sprintf("ssh to %s failed, or the program exited 255 (see the log)", r.hosts[0])
	case r.starter == nil && out.ExitCode == 125:
		out.LaunchError = fmt.Sprintf("could not create the working folder %s on %s", r.wd, r.hosts[0])
	case r.starter == nil && out.ExitCode == 127:
		out.LaunchError = fmt.Sprintf("%s: program not found on %s", s.Argv[0], r.hosts[0])
	}
	return out
}

// makeFolders creates a collective step's folder on each of its hosts (the
// same path everywhere, for --wdir) and its local folder, with MPICH's
// remote shell wrapper when the flavor needs one.
func (l *Launcher) makeFolders(ctx context.Context, r stepRun) error {
	if _, err := proc.TempDir(); err != nil {
		return err
	}
	if err := os.MkdirAll(r.local, 0o700); err != nil {
		return fmt.Errorf("create local folder for the rank starter: %w", err)
	}
	if r.wrapper != "" {
		if err := os.WriteFile(r.wrapper, []byte(rankstart.RemoteShellScript(l.SSHArgs())), 0o700); err != nil {
			return fmt.Errorf("write the remote shell wrapper: %w", err)
		}
	}
	return errors.Join(l.onHosts(ctx, r.hosts, l.connectTimeout()+10*time.Second, mkdirScript(r.wd), "create working folder "+r.wd)...)
}

// stopRemote runs killScript on the step's hosts at once, with a fresh
// deadline: the step's own has passed.
func (l *Launcher) stopRemote(r stepRun, grace time.Duration) []error {
	return l.onHosts(context.Background(), r.hosts, l.connectTimeout()+grace+15*time.Second, killScript(r.wd, grace, false), "stop step "+r.step.Name)
}

// onHosts runs script on every host of hs at once (at most maxParallel ssh
// clients), each bounded by timeout; errs[i] says "WHAT on HOST: why" for
// hs[i], nil where it succeeded.
func (l *Launcher) onHosts(ctx context.Context, hs []string, timeout time.Duration, script, what string) []error {
	errs := make([]error, len(hs))
	var wg sync.WaitGroup
	for i, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer l.fanOut()()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if _, err := l.remote(cctx, h, script); err != nil {
				errs[i] = fmt.Errorf("%s on %s: %w", what, h, err)
			}
		}()
	}
	wg.Wait()
	return errs
}

// cleanup collects the step's files from its first host (where a single
// step, or rank 0, ran), then removes its folders, killing anything still
// working in them. Errors are added to the output: the measurement stays.
func (l *Launcher) cleanup(req launch.Request, r stepRun, out *plan.Output, logw io.Writer) {
	var problems []string
	if r.local != "" {
		defer func() {
			_ = os.RemoveAll(r.local)
			_ = os.Remove(filepath.Dir(r.local)) // only when no other step uses it
		}()
	}
	for _, f := range r.step.Files {
		ctx, cancel := context.WithTimeout(context.Background(), l.connectTimeout()+time.Minute)
		data, err := l.fetch(ctx, r.hosts[0], r.wd, f)
		cancel()
		if errors.Is(err, errAbsent) {
			continue // the plugin sees it missing and says so
		}
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		p, err := launch.CollectFile(req, r.step.Name, f, bytes.NewReader(data))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if out.Files == nil {
			out.Files = map[string]string{}
		}
		out.Files[f] = p
	}
	rm := l.onHosts(context.Background(), r.hosts, l.connectTimeout()+15*time.Second, killScript(r.wd, 0, true), "clean up step "+r.step.Name)
	for _, err := range rm {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		msg := strings.Join(problems, "; ")
		fmt.Fprintf(logw, "gpuaccept: %s\n", msg)
		out.LaunchError = strings.TrimPrefix(out.LaunchError+"; "+msg, "; ")
	}
}
