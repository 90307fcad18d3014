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
	starter := rankstart.Or(l.Starter)
	if err := rankstart.AcrossHosts(starter); err != nil {
		return nil, fmt.Errorf("launcher ssh: %w", err)
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
		// The run's starter options (rankstart.FromLaunch: the site's,
		// HCOLL off for Open MPI); Hydra takes its remote shell as a
		// program, written beside the starter.
		base := rankstart.Options{DisableHCOLL: starter.Family() == rankstart.FamilyOpenMPI}
		if l.Start != nil {
			base = *l.Start
		}
		o := rankstart.Merge(base, rankstart.Options{Hosts: sh, AllowRoot: os.Geteuid() == 0, ExtraArgs: l.MPIArgs, Environ: l.environ(),
			RemoteShell: l.SSHArgs(), WorkDir: r.wd})
		if starter.Family() == rankstart.FamilyMPICH {
			r.wrapper = filepath.Join(r.local, "gpuaccept-rsh")
			o.RemoteShellExec = r.wrapper
		}
		if r.starter, err = starter.Argv(s, o); err != nil {
			return nil, fmt.Errorf("launcher ssh: test %s: %w", req.Test, err)
		}
		r.starterEnv = starter.Env(o)
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
// answers, then runs the steps in the order and overlap of
// launch.Sequence: a server's readiness line releases its client,
// consecutive clients start together, and a step that fails keeps the
// rest from starting.
func (l *Launcher) Launch(ctx context.Context, req launch.Request) ([]plan.Output, error) {
	runs, err := l.prepare(req)
	if err != nil {
		return nil, err
	}
	if err := l.Check(ctx); err != nil {
		return nil, err
	}
	steps := make([]plan.Step, len(runs))
	for i, r := range runs {
		steps[i] = r.step
	}
	return launch.Sequence{Steps: steps, Timeout: req.Timeout,
		Run: func(ctx context.Context, i int, ready func()) plan.Output { return l.run(ctx, req, runs[i], ready) },
		NotStarted: func(i int, why string) plan.Output {
			s := runs[i].step
			return plan.Output{Step: s.Name, Role: s.Role, Host: runs[i].hosts[0], ExitCode: -1, LaunchError: why, Command: runs[i].command}
		},
	}.Launch(ctx), nil
}

// run runs one step to its end, calling ready when its marker shows. The
// result is named: the deferred cleanup adds collected files and its own
// problems to it.
func (l *Launcher) run(ctx context.Context, req launch.Request, r stepRun, ready func()) (out plan.Output) {
	s := r.step
	out = plan.Output{Step: s.Name, Role: s.Role, Host: r.hosts[0], ExitCode: -1, Command: r.command}
	logw, logPath, err := launch.CreateLog(req, s.Name)
	if err != nil {
		out.LaunchError = err.Error()
		return out
	}
	out.Log = logPath
	defer logw.Close()

	var sink io.Writer = logw
	if s.ReadyMarker != "" {
		sink = &launch.MarkerWriter{W: logw, Marker: []byte(s.ReadyMarker), Found: ready}
	}
	sw := &launch.SyncWriter{W: sink}
	defer l.cleanup(req, r, &out, logw)

	var cmd *exec.Cmd
	var errs []error
	stop := launch.GroupStop{Name: s.Name}
	if r.starter == nil {
		argv := append(l.SSHArgs(), r.hosts[0], "sh", "-s")
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.Stdin = strings.NewReader(stepScript(r.wd, s.Env, s.Argv))
		// Closing the connection does not stop a command without a
		// terminal: stop its process group on the host first, then the
		// ssh client.
		stop.First = func() { errs = l.stopRemote(r, l.killGrace()) }
		stop.Grace = 5 * time.Second
	} else {
		if err := l.makeFolders(ctx, r); err != nil {
			out.LaunchError = err.Error()
			fmt.Fprintf(logw, "gpuaccept: %s\n", out.LaunchError)
			return out
		}
		cmd = exec.Command(r.starter[0], r.starter[1:]...)
		cmd.Dir = r.local
		cmd.Env = append(rankstart.Environ(l.environ(), s), r.starterEnv...)
		// The rank starter stops its remote daemons and ranks itself;
		// what it leaves is killed below.
		stop.Grace = l.killGrace()
	}
	cmd.Stdout, cmd.Stderr = sw, sw

	// Whatever the local side (ssh client, rank starter) left running
	// ends with the step.
	end, err := launch.RunGroup(ctx, cmd, stop)
	if err != nil {
		out.LaunchError = fmt.Sprintf("start %s: %v", cmd.Args[0], err)
		fmt.Fprintf(logw, "gpuaccept: %s\n", out.LaunchError)
		return out
	}
	if end.Stopped != "" {
		if r.starter == nil {
			out.LaunchError = end.Stopped + "; remote process group killed"
		} else {
			errs = l.stopRemote(r, 0)
			out.LaunchError = end.Stopped + "; rank starter and remote ranks killed"
		}
		if err := errors.Join(errs...); err != nil {
			out.LaunchError += "; " + strings.ReplaceAll(err.Error(), "\n", "; ")
		}
		fmt.Fprintf(logw, "\ngpuaccept: step %s %s\n", s.Name, out.LaunchError)
		return out
	}
	out.ExitCode = proc.ExitCode(end.Err)
	switch {
	case out.ExitCode < 0:
		out.LaunchError = fmt.Sprintf("wait for %s: %v", cmd.Args[0], end.Err)
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
