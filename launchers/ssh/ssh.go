// Package ssh is the launcher for nodes reached over ssh, with no scheduler:
// a hostfile (or --hosts) and key-based ssh, as freshly racked nodes have.
// Collective steps (MPI jobs) start under the local mpirun of the chosen
// flavor, which reaches the hosts through the same ssh settings
// (plm_rsh_agent or the flavor's equivalent); single-host steps, such as
// the server and client of ib_write_bw, run over plain ssh, a server's
// readiness line releasing its client.
//
// It drives the system OpenSSH client (see README.md for why), checks that
// every host answers before any step starts, verifies host keys unless told
// not to, and on timeout or Ctrl-C kills what it started on every host: the
// remote process group recorded in a pid file, then any process still
// working in the step's folder.
package ssh

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/hosts"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// Name is the --launcher value.
const Name = "ssh"

// DefaultConnectTimeout bounds each ssh connection's setup (and so the
// reachability check) when --ssh-connect-timeout is not given.
const DefaultConnectTimeout = 10 * time.Second

func init() {
	launch.Register(Name, func() launch.Config { return &Config{ConnectTimeout: DefaultConnectTimeout} })
}

// Config is how to reach the hosts: the launcher's own flags.
type Config struct {
	// Port is sshd's port on every host; 0 leaves ssh's default.
	Port int
	// User is the remote user; empty leaves ssh's default.
	User string
	// Key is a private key file; empty leaves ssh's defaults (agent, ~/.ssh).
	Key string
	// KnownHosts is the known_hosts file host keys are verified against;
	// empty leaves ssh's defaults.
	KnownHosts string
	// Insecure skips host key verification.
	Insecure bool
	// ConnectTimeout bounds connection setup; zero means
	// DefaultConnectTimeout. ssh takes whole seconds: it is rounded up.
	ConnectTimeout time.Duration
	// Program is the ssh client; empty means "ssh" from PATH.
	Program string
}

// Bind implements launch.Config: --ssh-port, --ssh-key, --ssh-user,
// --ssh-known-hosts, --ssh-insecure and --ssh-connect-timeout.
func (c *Config) Bind(fs *pflag.FlagSet) {
	fs.IntVar(&c.Port, "ssh-port", c.Port, "port of sshd on every host (default: ssh's own, 22 or ~/.ssh/config)")
	fs.StringVar(&c.Key, "ssh-key", c.Key, "private key file, used by gpuaccept's ssh and by mpirun's (default: ssh's own, agent and ~/.ssh/id_*)")
	fs.StringVar(&c.User, "ssh-user", c.User, "remote user (default: ssh's own, this user or ~/.ssh/config)")
	fs.StringVar(&c.KnownHosts, "ssh-known-hosts", c.KnownHosts, "known_hosts file that host keys are verified against (default: ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts)")
	fs.BoolVar(&c.Insecure, "ssh-insecure", c.Insecure, "do NOT verify host keys (StrictHostKeyChecking=no, known_hosts ignored); only for throwaway nodes: by default every host key must match known_hosts")
	fs.DurationVar(&c.ConnectTimeout, "ssh-connect-timeout", c.ConnectTimeout, "time limit for connecting to a host; the reachability check before the first test uses it")
}

// Validate reports the first setting that cannot work, naming its flag.
func (c Config) Validate() error {
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("--ssh-port %d: not a TCP port", c.Port)
	}
	if c.User != "" && !validUser(c.User) {
		return fmt.Errorf("--ssh-user %q is not a user name", c.User)
	}
	for _, f := range []struct{ flag, path string }{{"--ssh-key", c.Key}, {"--ssh-known-hosts", c.KnownHosts}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return fmt.Errorf("%s: %w", f.flag, err)
		}
	}
	if c.Insecure && c.KnownHosts != "" {
		return errors.New("--ssh-insecure skips host key verification, so --ssh-known-hosts would be ignored: give one of them")
	}
	if c.ConnectTimeout < 0 {
		return fmt.Errorf("--ssh-connect-timeout %s: want a time limit above zero (0: the default, %s)", c.ConnectTimeout, DefaultConnectTimeout)
	}
	return nil
}

// Build implements launch.Config: the launcher for o's hosts, with the
// rank starter --mpi-flavor names, and, unless this is a dry run, the
// reachability check, so an unreachable host is named before anything is
// planned or written.
func (c *Config) Build(o launch.Options) (launch.Launcher, error) {
	st, base, err := rankstart.FromLaunch(o)
	if err != nil {
		return nil, fmt.Errorf("launcher ssh: %w", err)
	}
	l, err := New(*c, o.Hosts, nil)
	if err != nil {
		return nil, err
	}
	l.Starter, l.Start = st, &base
	if !o.DryRun {
		if err := l.Check(context.Background()); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Launcher runs steps on the hosts over ssh. Build it with New.
type Launcher struct {
	Config
	// Hosts are the nodes, in rank order: a collective step of N nodes uses
	// the first N; a single-host step runs on Hosts[Step.Host].
	Hosts []string
	// MPIArgs are extra arguments for the rank starter.
	MPIArgs []string
	// Starter starts collective steps (--mpi-flavor); nil means Open
	// MPI's mpirun.
	Starter rankstart.Starter
	// Start is what every collective step's starter line starts from
	// (rankstart.FromLaunch: the site's MPI settings, HCOLL off); nil
	// means HCOLL off for Open MPI and nothing else, as without a site.
	Start *rankstart.Options
	// Environ is the environment the rank starter runs in and that
	// forwarded variables come from; nil means os.Environ().
	Environ []string
	// KillGrace is how long a step's processes have between SIGTERM and
	// SIGKILL after a timeout; zero means 5 s.
	KillGrace time.Duration
	// RunID names this run's folders on the hosts
	// (/tmp/gpuaccept-RUNID/TEST.STEP); New sets a random one.
	RunID string

	checkOnce sync.Once
	checkErr  error
	sem       chan struct{}
}

// New checks the configuration and returns a launcher for hosts. It does
// not connect; Check (or the first Launch) does.
func New(c Config, hostList []string, mpiArgs []string) (*Launcher, error) {
	if len(hostList) == 0 {
		return nil, errors.New("launcher ssh needs the nodes: give --hosts h1,h2 or --hostfile FILE")
	}
	seen := map[string]bool{}
	for _, h := range hostList {
		if !hosts.Valid(h) {
			return nil, fmt.Errorf("launcher ssh: host %q is not a host name", h)
		}
		if seen[h] {
			return nil, fmt.Errorf("launcher ssh: host %s is listed twice; each node once, its ranks per node come from --gpus-per-node", h)
		}
		seen[h] = true
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	id := make([]byte, 6)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("launcher ssh: make a run id: %w", err)
	}
	return &Launcher{Config: c, Hosts: hostList, MPIArgs: mpiArgs, RunID: hex.EncodeToString(id), sem: make(chan struct{}, maxParallel)}, nil
}

func validUser(u string) bool {
	if u == "" || len(u) > 64 || u[0] == '-' {
		return false
	}
	for _, r := range u {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// Name implements launch.Launcher.
func (l *Launcher) Name() string { return Name }

func (l *Launcher) environ() []string {
	if l.Environ != nil {
		return l.Environ
	}
	return os.Environ()
}

func (l *Launcher) connectTimeout() time.Duration {
	if l.ConnectTimeout > 0 {
		return l.ConnectTimeout
	}
	return DefaultConnectTimeout
}

func (l *Launcher) killGrace() time.Duration {
	if l.KillGrace > 0 {
		return l.KillGrace
	}
	return 5 * time.Second
}

// SSHArgs is the ssh client command without the host: batch mode (never a
// password prompt), the connect timeout, port, user, key, and host key
// checking (strict against known_hosts, or off with Insecure). mpirun's
// remote shell is the same command, so both paths reach the hosts alike.
func (c Config) SSHArgs() []string {
	prog := c.Program
	if prog == "" {
		prog = "ssh"
	}
	ct := c.ConnectTimeout
	if ct <= 0 {
		ct = DefaultConnectTimeout
	}
	secs := int((ct + time.Second - 1) / time.Second)
	a := []string{prog, "-o", "BatchMode=yes", "-o", "ConnectTimeout=" + strconv.Itoa(secs)}
	if c.Port > 0 {
		a = append(a, "-p", strconv.Itoa(c.Port))
	}
	if c.User != "" {
		a = append(a, "-l", c.User)
	}
	if c.Key != "" {
		a = append(a, "-i", c.Key, "-o", "IdentitiesOnly=yes")
	}
	if c.Insecure {
		a = append(a, "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR")
	} else {
		a = append(a, "-o", "StrictHostKeyChecking=yes")
		if c.KnownHosts != "" {
			a = append(a, "-o", "UserKnownHostsFile="+c.KnownHosts)
		}
	}
	// A node that dies mid-run is noticed within a minute, not never.
	return append(a, "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4")
}

// hostsFor returns the hosts a request runs on: the request's own
// (Topology.Hosts), else the launcher's, cut to Topology.Nodes.
func (l *Launcher) hostsFor(req launch.Request) ([]string, error) {
	hs := req.Topology.Hosts
	if len(hs) == 0 {
		hs = l.Hosts
	}
	for _, h := range hs {
		if !hosts.Valid(h) {
			return nil, fmt.Errorf("launcher ssh: host %q is not a host name", h)
		}
	}
	n := req.Topology.Nodes
	if n < 1 {
		n = 1
	}
	if n > len(hs) {
		return nil, fmt.Errorf("launcher ssh: the test asks for %d nodes but %d host(s) are given (%s)", n, len(hs), strings.Join(hs, ", "))
	}
	return hs[:n], nil
}

// stepHosts returns where a step runs: a collective step on as many of hs
// as its processes need, a single-host step on hs[Step.Host].
func stepHosts(s plan.Step, hs []string) ([]string, error) {
	if rankstart.NeedsStarter(s) {
		if s.ProcsPerNode < 1 || s.Procs < 1 {
			return nil, fmt.Errorf("step %s: %d processes, %d per node: both must be >= 1", s.Name, s.Procs, s.ProcsPerNode)
		}
		n := (s.Procs + s.ProcsPerNode - 1) / s.ProcsPerNode
		if n == 1 {
			if s.Host < 0 || s.Host >= len(hs) {
				return nil, fmt.Errorf("step %s: host index %d, but %d host(s) are given", s.Name, s.Host, len(hs))
			}
			return hs[s.Host : s.Host+1], nil
		}
		if n > len(hs) {
			return nil, fmt.Errorf("step %s: %d processes at %d per node need %d nodes, but %d host(s) are given", s.Name, s.Procs, s.ProcsPerNode, n, len(hs))
		}
		return hs[:n], nil
	}
	if s.Host < 0 || s.Host >= len(hs) {
		return nil, fmt.Errorf("step %s: host index %d, but %d host(s) are given", s.Name, s.Host, len(hs))
	}
	return hs[s.Host : s.Host+1], nil
}

// workDir is a step's folder on its hosts. It is the same path on every
// host, as mpirun's --wdir needs.
func (l *Launcher) workDir(test, step string) string {
	return l.baseDir() + "/" + test + "." + step
}

func (l *Launcher) baseDir() string { return "/tmp/gpuaccept-" + l.RunID }
