// Package local is the launcher that runs steps on this host: single
// processes directly, MPI steps under the rank starter --mpi-flavor names
// (Open MPI's mpirun by default). Every step runs through
// framework/proc: in its own process group and, where the kernel allows,
// its own cgroup, so the step's end (a pass as much as a timeout or Ctrl-C)
// ends the whole tree (mpirun and its ranks, and whatever they left in the
// background), and kill -9 of gpuaccept takes it along. Its one node is
// "localhost": HostRefs name it, and every process sees
// GPUACCEPT_HOSTS=localhost.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/proc"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// Name is the --launcher value.
const Name = "local"

func init() {
	launch.Register(Name, func() launch.Config { return &Config{} })
}

// Config is the local launcher's own settings: it has no flags of its
// own (--mpi-flavor and --mpi-arg come with launch.Options).
type Config struct{}

// Bind implements launch.Config: nothing to bind.
func (c *Config) Bind(fs *pflag.FlagSet) {}

// Build implements launch.Config. It refuses hosts other than this one,
// and a rank starter that cannot start ranks here (--mpi-flavor).
func (c *Config) Build(o launch.Options) (launch.Launcher, error) {
	self, _ := os.Hostname()
	for _, h := range o.Hosts {
		if h != "localhost" && h != self {
			return nil, fmt.Errorf("launcher local runs on this host (%s) only, but --hosts/--hostfile name %q: other nodes need a launcher that reaches them (this build has: %s)",
				self, h, strings.Join(launch.Names(), ", "))
		}
	}
	st, base, err := rankstart.FromLaunch(o)
	if err != nil {
		return nil, fmt.Errorf("launcher local: %w", err)
	}
	return &Launcher{Starter: st, Start: &base}, nil
}

// Launcher runs steps on this host.
type Launcher struct {
	// MPIArgs are extra rank starter arguments.
	MPIArgs []string
	// Starter starts the ranks of MPI steps (--mpi-flavor); nil means
	// Open MPI's mpirun.
	Starter rankstart.Starter
	// Start is what every MPI step's starter line starts from
	// (rankstart.FromLaunch: the site's MPI settings, HCOLL off for Open
	// MPI); nil: nothing.
	Start *rankstart.Options
	// Environ is the environment steps start from; nil means os.Environ().
	Environ []string
	// KillGrace is how long a step has between SIGTERM and SIGKILL after a
	// timeout; zero means 5 s.
	KillGrace time.Duration
}

// Name implements launch.Launcher.
func (l *Launcher) Name() string { return Name }

func (l *Launcher) environ() []string {
	if l.Environ != nil {
		return l.Environ
	}
	return os.Environ()
}

func (l *Launcher) argv(s plan.Step) ([]string, error) {
	if !rankstart.NeedsStarter(s) {
		return s.Argv, nil
	}
	var base rankstart.Options
	if l.Start != nil {
		base = *l.Start
	}
	return rankstart.Or(l.Starter).Argv(s, rankstart.Merge(base, rankstart.Options{AllowRoot: os.Geteuid() == 0, ExtraArgs: l.MPIArgs, Environ: l.environ()}))
}

// check refuses what needs other hosts and returns req with the plan's
// HostRefs naming this host, and plan.HostsEnv set to "localhost".
func (l *Launcher) check(req launch.Request) (launch.Request, error) {
	if req.Topology.Nodes > 1 {
		return req, fmt.Errorf("launcher local runs on this host only, but the test asks for %d nodes (use --nodes 1, or a launcher that reaches other nodes; this build has: %s)",
			req.Topology.Nodes, strings.Join(launch.Names(), ", "))
	}
	// The names every launcher refuses (plan.EnvName): this one too.
	for _, s := range req.Plan.Steps {
		if err := s.CheckEnv(); err != nil {
			return req, err
		}
	}
	p, err := req.Plan.WithHostsEnv(1).ResolveHostRefs(func(int) (string, error) { return "localhost", nil })
	if err != nil {
		return req, err
	}
	req.Plan = p
	return req, nil
}

// Commands implements launch.Launcher: each step as a shell line, with its
// environment in front.
func (l *Launcher) Commands(req launch.Request) ([]string, error) {
	req, err := l.check(req)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range req.Plan.Steps {
		argv, err := l.argv(s)
		if err != nil {
			return nil, err
		}
		out = append(out, rankstart.CommandLine(s, rankstart.ShellJoin(argv)))
	}
	return out, nil
}

// Launch implements launch.Launcher: the steps in the order and overlap
// of launch.Sequence (a server's readiness line releases its client).
func (l *Launcher) Launch(ctx context.Context, req launch.Request) ([]plan.Output, error) {
	req, err := l.check(req)
	if err != nil {
		return nil, err
	}
	steps := req.Plan.Steps
	return launch.Sequence{Steps: steps, Timeout: req.Timeout, Run: func(ctx context.Context, i int, ready func()) plan.Output {
		return l.runStep(ctx, req, steps[i], ready)
	}}.Launch(ctx), nil
}

// runStep runs one step to its end, calling ready when its marker shows.
func (l *Launcher) runStep(ctx context.Context, req launch.Request, s plan.Step, ready func()) plan.Output {
	host, _ := os.Hostname()
	out := plan.Output{Step: s.Name, Role: s.Role, Host: host, ExitCode: -1}
	argv, err := l.argv(s)
	if err != nil {
		out.LaunchError = err.Error()
		return out
	}
	out.Command = rankstart.CommandLine(s, rankstart.ShellJoin(argv))
	tmp, err := proc.TempDir()
	if err != nil {
		out.LaunchError = err.Error()
		return out
	}
	work, err := os.MkdirTemp(tmp, s.Name+"-")
	if err != nil {
		out.LaunchError = fmt.Sprintf("create working folder: %v", err)
		return out
	}
	defer os.RemoveAll(work)

	logw, logPath, err := launch.CreateLog(req, s.Name)
	if err != nil {
		out.LaunchError = err.Error()
		return out
	}
	out.Log = logPath
	defer logw.Close()

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = work
	cmd.Env = rankstart.Environ(l.environ(), s)
	var sink io.Writer = logw
	if s.ReadyMarker != "" {
		sink = &launch.MarkerWriter{W: logw, Marker: []byte(s.ReadyMarker), Found: ready}
	}
	sw := &launch.SyncWriter{W: sink}
	cmd.Stdout, cmd.Stderr = sw, sw

	// Whatever the step left running ends with it, and its output is in.
	end, err := launch.RunGroup(ctx, cmd, launch.GroupStop{Name: s.Name, Grace: l.killGrace(), HostPIDs: s.Role == plan.Evidence})
	if err != nil {
		out.LaunchError = fmt.Sprintf("start %s: %v", argv[0], err)
		fmt.Fprintf(logw, "gpuaccept: %s\n", out.LaunchError)
		return out
	}
	if end.Stopped != "" {
		out.LaunchError = end.Stopped + "; process group killed"
		fmt.Fprintf(logw, "\ngpuaccept: step %s %s\n", s.Name, out.LaunchError)
	} else if end.Leftover {
		fmt.Fprintf(logw, "\ngpuaccept: step %s left processes running when it exited; killed\n", s.Name)
	}
	if len(end.Survivors) > 0 {
		out.LaunchError = strings.TrimPrefix(fmt.Sprintf("%s; processes %v survived SIGKILL", out.LaunchError, end.Survivors), "; ")
	}
	if out.LaunchError == "" {
		out.ExitCode = proc.ExitCode(end.Err)
		if out.ExitCode < 0 {
			out.LaunchError = fmt.Sprintf("wait for %s: %v", argv[0], end.Err)
		}
	}
	for _, f := range s.Files {
		// The step's own folder is the workload's to fill: a link to
		// /etc/shadow, a FIFO or /dev/zero there must not be collected.
		src, err := safefs.Open(work, f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // not written: the plugin sees it missing and says so
		}
		if err != nil {
			out.LaunchError = strings.TrimPrefix(out.LaunchError+"; ", "; ") + fmt.Sprintf("collect file %s of step %s: %v", f, s.Name, err)
			continue
		}
		p, err := launch.CollectFile(req, s.Name, f, src)
		src.Close()
		if err != nil {
			out.LaunchError = strings.TrimPrefix(out.LaunchError+"; ", "; ") + err.Error()
			continue
		}
		if out.Files == nil {
			out.Files = map[string]string{}
		}
		out.Files[f] = p
	}
	return out
}

// killGrace is KillGrace, or 5 s.
func (l *Launcher) killGrace() time.Duration {
	if l.KillGrace <= 0 {
		return 5 * time.Second
	}
	return l.KillGrace
}
