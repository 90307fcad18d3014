package ssh

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/proc"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// loopbackMPI keeps Open MPI on loopback: its shared-memory transport
// crashed across the two names of one machine.
var loopbackMPI = []string{"--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"}

// sshd returns a launcher for the sshd that scripts/testenv.sh up ssh
// started on 127.0.0.1 and 127.0.0.2, skipping (or failing, under
// GPUACCEPT_INTEGRATION=required) when it is not up.
func sshd(t *testing.T) *Launcher {
	t.Helper()
	port := testenv.Need(t, "GPUACCEPT_SSH_PORT", "ssh")
	c := Config{
		User:           testenv.Need(t, "GPUACCEPT_SSH_USER", "ssh"),
		Key:            testenv.Need(t, "GPUACCEPT_SSH_KEY", "ssh"),
		KnownHosts:     testenv.Need(t, "GPUACCEPT_SSH_KNOWN_HOSTS", "ssh"),
		ConnectTimeout: 5 * time.Second,
	}
	var err error
	c.Port, err = atoi(port)
	assert.NilError(t, err)
	l, err := New(c, strings.Split(testenv.Need(t, "GPUACCEPT_SSH_HOSTS", "ssh"), ","), loopbackMPI)
	assert.NilError(t, err)
	l.KillGrace = 500 * time.Millisecond
	return l
}

func atoi(s string) (int, error) {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, os.ErrInvalid
		}
		n = n*10 + int(r-'0')
	}
	return n, nil
}

var (
	standinOnce sync.Once
	standinDir  string
	standinErr  error
)

// standin builds the stand-in benchmark once, under the names the tests
// start it by.
func standin(t *testing.T) string {
	t.Helper()
	standinOnce.Do(func() {
		standinDir, standinErr = os.MkdirTemp("", "gpuaccept-ssh-test-bin-")
		if standinErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(standinDir, "all_reduce_perf"), "../../internal/standin").CombinedOutput()
		if err != nil {
			standinErr = &buildError{string(out)}
			return
		}
		standinErr = os.Link(filepath.Join(standinDir, "all_reduce_perf"), filepath.Join(standinDir, "ib_write_bw"))
	})
	assert.NilError(t, standinErr)
	return standinDir
}

type buildError struct{ out string }

func (b *buildError) Error() string { return "build stand-in: " + b.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if standinDir != "" {
		os.RemoveAll(standinDir)
	}
	os.Exit(code)
}

func abs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	assert.NilError(t, err)
	return a
}

func request(t *testing.T, nodes int, steps ...plan.Step) launch.Request {
	return launch.Request{Test: "x.y", Plan: plan.Plan{Steps: steps}, Topology: plan.Topology{Scope: plan.Scope{Nodes: nodes, GPUsPerNode: 1}}, Dir: t.TempDir(), Timeout: time.Minute}
}

func read(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	assert.NilError(t, err)
	return string(b)
}

// remoteGone asserts over ssh that the step folders of l's run are gone
// from every host.
func remoteGone(t *testing.T, l *Launcher) {
	t.Helper()
	for _, h := range l.Hosts {
		out, err := l.remote(context.Background(), h, "if [ -e "+q(l.baseDir())+" ]; then echo left; ls -la "+q(l.baseDir())+"; fi\n")
		assert.NilError(t, err)
		assert.Equal(t, string(out), "", "on %s", h)
	}
}

// Two ib_write_bw pairs at once, on distinct ports, in both directions
// between the hosts. Each server is slow to start (1 s before it listens)
// and its client fails when nothing listens yet: only waiting for the
// server's readiness line makes them pass. Both sides' outputs are the
// recordings of seed 004.
func TestPairedServerClientReadiness(t *testing.T) {
	l := sshd(t)
	bin := filepath.Join(standin(t), "ib_write_bw")
	server := abs(t, "testdata/ib_write_bw/server.log")
	client := abs(t, "testdata/ib_write_bw/client.log")
	pair := func(n, port string, srv, cli int) []plan.Step {
		hosts := []string{"127.0.0.1", "127.0.0.2"}
		s := plan.Step{Name: "server" + n, Role: "server", Host: srv, Procs: 1, ProcsPerNode: 1, ReadyMarker: "Waiting for client to connect",
			Argv: []string{bin, "-d", "ionic_7", "-x", "1", "-b", "-q", "4", "-F", "-a", "-n", "5000", "--report_gbits", "-p", port},
			Env:  map[string]string{"STANDIN_LOG": server, "STANDIN_DELAY": "1s", "STANDIN_LISTEN": hosts[srv] + ":" + port, "STANDIN_PAUSE_AFTER": "Waiting for client"}}
		c := plan.Step{Name: "client" + n, Role: "client", Host: cli, Procs: 1, ProcsPerNode: 1,
			Argv: []string{bin, "-d", "ionic_1", "-x", "1", "-b", "-q", "4", "-F", "-a", "-n", "5000", "--report_gbits", "-p", port, hosts[srv]},
			Env:  map[string]string{"STANDIN_LOG": client, "STANDIN_CONNECT": hosts[srv] + ":" + port}}
		return []plan.Step{s, c}
	}
	p1, p2 := pair("1", "17830", 0, 1), pair("2", "17831", 1, 0)
	req := request(t, 2, p1[0], p2[0], p1[1], p2[1])
	outs, err := l.Launch(context.Background(), req)
	assert.NilError(t, err)
	assert.Equal(t, len(outs), 4)
	wantHost := map[string]string{"server1": "127.0.0.1", "client1": "127.0.0.2", "server2": "127.0.0.2", "client2": "127.0.0.1"}
	for _, o := range outs {
		log := read(t, o.Log)
		assert.Equal(t, o.ExitCode, 0, "%s: %s\n%s", o.Step, o.LaunchError, log)
		assert.Equal(t, o.LaunchError, "")
		assert.Equal(t, o.Host, wantHost[o.Step])
		want := read(t, client)
		if o.Role == "server" {
			want = read(t, server)
		}
		assert.Equal(t, log, want, o.Step)
		assert.Assert(t, strings.Contains(o.Command, "-p 17822 -l root"), o.Command)
	}
	remoteGone(t, l)
}

// A server that dies before its readiness line leaves its client
// unstarted, saying why, instead of running it against nothing.
func TestServerDiesBeforeReady(t *testing.T) {
	l := sshd(t)
	s := plan.Step{Name: "server", Role: "server", Procs: 1, ProcsPerNode: 1, ReadyMarker: "Waiting for client",
		Argv: []string{"sh", "-c", "echo 'Failed to open device ionic_9' >&2; exit 1"}}
	c := plan.Step{Name: "client", Role: "client", Host: 1, Procs: 1, ProcsPerNode: 1, Argv: []string{"true"}}
	outs, err := l.Launch(context.Background(), request(t, 2, s, c))
	assert.NilError(t, err)
	assert.Equal(t, outs[0].ExitCode, 1)
	assert.Equal(t, read(t, outs[0].Log), "Failed to open device ionic_9\n")
	assert.Equal(t, outs[1].LaunchError, `not started: step server ended before its readiness line "Waiting for client" showed`)
	assert.Equal(t, outs[1].Log, "")
}

// A server that hangs without its readiness line until the test times out
// is killed, and its client never starts.
func TestTimeoutBeforeReady(t *testing.T) {
	l := sshd(t)
	s := plan.Step{Name: "server", Role: "server", Procs: 1, ProcsPerNode: 1, ReadyMarker: "Waiting for client", Argv: []string{"sleep", "300"}}
	c := plan.Step{Name: "client", Role: "client", Host: 1, Procs: 1, ProcsPerNode: 1, Argv: []string{"true"}}
	req := request(t, 2, s, c)
	req.Timeout = 2 * time.Second
	outs, err := l.Launch(context.Background(), req)
	assert.NilError(t, err)
	assert.Assert(t, strings.HasPrefix(outs[0].LaunchError, "timed out after"), outs[0].LaunchError)
	assert.Equal(t, outs[1].LaunchError, "not started: the test timed out first")
	remoteGone(t, l)
}

// An unreachable host is named before anything starts, with ssh's reason;
// nothing is written for the test.
func TestUnreachableHost(t *testing.T) {
	l := sshd(t)
	bad, err := New(l.Config, []string{"127.0.0.1", "127.0.0.9"}, nil)
	assert.NilError(t, err)
	req := request(t, 2, plan.Step{Name: "a", Procs: 1, ProcsPerNode: 1, Argv: []string{"touch", "/tmp/should-not-exist"}})
	_, err = bad.Launch(context.Background(), req)
	assert.ErrorContains(t, err, "launcher ssh: 1 of 2 host(s) unreachable, nothing was started")
	assert.ErrorContains(t, err, "127.0.0.9: exit status 255: ssh: connect to host 127.0.0.9 port 17822: Connection refused")
	assert.Assert(t, !strings.Contains(err.Error(), "127.0.0.1:"), err.Error())
	ents, _ := os.ReadDir(req.Dir)
	assert.Equal(t, len(ents), 0)

	// The CLI's constructor checks too, so the run stops before planning.
	_, err = launch.New(Name, launch.Options{Hosts: []string{"127.0.0.9"}})
	assert.ErrorContains(t, err, "127.0.0.9")
}

// A host key that does not match known_hosts, or a host missing from it,
// stops the run; with --ssh-insecure the same host is accepted.
func TestHostKeyVerified(t *testing.T) {
	l := sshd(t)
	dir := t.TempDir()
	// Another key for the same name: what a reinstalled or spoofed node shows.
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "other")).CombinedOutput()
	assert.NilError(t, err, string(out))
	pub := strings.Fields(read(t, filepath.Join(dir, "other.pub")))
	for _, c := range []struct{ name, content string }{
		{"changed key", "[127.0.0.1]:" + strconv.Itoa(l.Port) + " " + pub[0] + " " + pub[1] + "\n"},
		{"unknown host", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			kh := filepath.Join(t.TempDir(), "known_hosts")
			assert.NilError(t, os.WriteFile(kh, []byte(c.content), 0o600))
			cfg := l.Config
			cfg.KnownHosts = kh
			bad, err := New(cfg, []string{"127.0.0.1"}, nil)
			assert.NilError(t, err)
			assert.ErrorContains(t, bad.Check(context.Background()), "127.0.0.1: exit status 255: Host key verification failed.")
		})
	}
	cfg := l.Config
	cfg.KnownHosts, cfg.Insecure = "", true
	ok, err := New(cfg, []string{"127.0.0.1"}, nil)
	assert.NilError(t, err)
	assert.NilError(t, ok.Check(context.Background()))
}

// alivePids lists, over ssh, which of the pids in the files on host
// still run: pgrep by each pid of the pid files (-F reads one pid), not
// counting zombies awaiting their reaper.
func alivePids(t *testing.T, l *Launcher, host string, pidfiles ...string) string {
	t.Helper()
	files := make([]string, len(pidfiles))
	for i, f := range pidfiles {
		files[i] = q(f)
	}
	// pgrep -F wants a regular file, and an error of its own must not read
	// as "nothing running".
	script := `f=$(mktemp) || exit 1
for p in $(cat ` + strings.Join(files, " ") + `); do
	echo "$p" > "$f"
	pgrep -r D,R,S,T,t -F "$f"
	rc=$?
	[ $rc -le 1 ] || echo "pgrep failed with $rc for $p"
done
rm -f "$f"
exit 0
`
	out, err := l.remote(context.Background(), host, script)
	assert.NilError(t, err)
	return string(out)
}

// A hung remote command, whose shell ignores SIGTERM and has a child, is
// killed on timeout: over ssh, pgrep finds nothing of its process group
// (the pid file it wrote holds the group leader) and its folder is gone.
func TestTimeoutKillsRemoteProcessGroup(t *testing.T) {
	l := sshd(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	s := plan.Step{Name: "hang", Host: 1, Procs: 1, ProcsPerNode: 1,
		Argv: []string{"sh", "-c", `trap '' TERM; echo $$ > ` + pidfile + `; sleep 300 & echo $! >> ` + pidfile + `; echo started; wait`}}
	req := request(t, 2, s)
	req.Timeout = 2 * time.Second
	start := time.Now()
	outs, err := l.Launch(context.Background(), req)
	assert.NilError(t, err)
	assert.Assert(t, time.Since(start) < 30*time.Second)
	o := outs[0]
	assert.Assert(t, strings.HasPrefix(o.LaunchError, "timed out after"), o.LaunchError)
	assert.Assert(t, strings.HasSuffix(o.LaunchError, "; remote process group killed"), o.LaunchError)
	assert.Equal(t, o.ExitCode, -1)
	assert.Equal(t, o.Host, "127.0.0.2")
	assert.Assert(t, strings.Contains(read(t, o.Log), "started\n"), read(t, o.Log))
	pids := strings.Fields(read(t, pidfile))
	assert.Equal(t, len(pids), 2)
	out, err := l.remote(context.Background(), "127.0.0.2", "pgrep -g "+pids[0]+"; [ $? = 1 ] && echo none; exit 0\n")
	assert.NilError(t, err)
	assert.Equal(t, string(out), "none\n", "process group %s still has processes", pids[0])
	assert.Equal(t, alivePids(t, l, "127.0.0.2", pidfile), "")
	remoteGone(t, l)
}

// A hung collective (every rank sleeps) is killed on timeout on both
// hosts: mpirun stops its ranks, and whatever is left in the step's folder
// is swept. Every rank wrote its pid; none is running afterwards.
func TestTimeoutKillsRanks(t *testing.T) {
	l := sshd(t)
	if _, err := exec.LookPath("mpirun"); err != nil {
		testenv.Missing(t, "mpirun not installed (scripts/testenv.sh up ssh): %v", err)
	}
	bin := standin(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	s := plan.Step{Name: "all_reduce", Procs: 4, ProcsPerNode: 2, MPI: true,
		Argv: []string{filepath.Join(bin, "all_reduce_perf"), "-g", "1"},
		Env:  map[string]string{"STANDIN_RECORDINGS": abs(t, "testdata/recordings/ndv4-2x8"), "STANDIN_SLEEP": "300s", "STANDIN_PIDFILE": pidfile}}
	req := request(t, 2, s)
	req.Timeout = 4 * time.Second
	outs, err := l.Launch(context.Background(), req)
	assert.NilError(t, err)
	o := outs[0]
	assert.Assert(t, strings.Contains(o.LaunchError, "rank starter and remote ranks killed"), o.LaunchError)
	pids := strings.Fields(read(t, pidfile))
	assert.Equal(t, len(pids), 4, "every rank started and wrote its pid")
	for _, h := range l.Hosts {
		assert.Equal(t, alivePids(t, l, h, pidfile), "", "on %s", h)
	}
	remoteGone(t, l)
}

// Ctrl-C (cancellation) stops a remote step the same way.
func TestCancel(t *testing.T) {
	l := sshd(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	outs, err := l.Launch(ctx, request(t, 1, plan.Step{Name: "c", Procs: 1, ProcsPerNode: 1, Argv: []string{"sleep", "300"}}))
	assert.NilError(t, err)
	assert.Equal(t, outs[0].LaunchError, "cancelled; remote process group killed")
	remoteGone(t, l)
}

// A single-host step runs in a fresh folder with its environment, its exit
// code comes back, and the files it was to write are collected (secrets
// masked) from that folder; a missing one is absent.
func TestSingleStepFilesAndExitCode(t *testing.T) {
	l := sshd(t)
	s := plan.Step{Name: "one", Host: 1, Procs: 1, ProcsPerNode: 1, Files: []string{"r.json", "missing.json"},
		Env:  map[string]string{"GREETING": "hello 'world'", "HF_TOKEN": "hf_secret123"},
		Argv: []string{"sh", "-c", `echo "out $GREETING in $(basename $PWD)"; echo err >&2; printf '{"env": ["HF_TOKEN=%s"]}' "$HF_TOKEN" > r.json; exit 3`}}
	outs, err := l.Launch(context.Background(), request(t, 2, s))
	assert.NilError(t, err)
	o := outs[0]
	assert.Equal(t, o.ExitCode, 3)
	assert.Equal(t, o.LaunchError, "")
	assert.Equal(t, read(t, o.Log), "out hello 'world' in x.y.one\nerr\n")
	assert.Equal(t, len(o.Files), 1)
	assert.Equal(t, read(t, o.Files["r.json"]), `{"env": ["HF_TOKEN=[REDACTED]"]}`)
	// The printed command is the remote command line the script amounts to.
	assert.Assert(t, strings.Contains(o.Command, " 127.0.0.2 'cd /tmp/gpuaccept-"+l.RunID+"/x.y.one && GPUACCEPT_HOSTS=127.0.0.1,127.0.0.2 GREETING='"), o.Command)
	assert.Assert(t, strings.Contains(o.Command, " HF_TOKEN=hf_secret123 exec sh -c "), o.Command)
	remoteGone(t, l)
}

// A program missing on the host is a launch error naming it and the host.
func TestProgramNotFound(t *testing.T) {
	l := sshd(t)
	outs, err := l.Launch(context.Background(), request(t, 1, plan.Step{Name: "a", Procs: 1, ProcsPerNode: 1, Argv: []string{"/nonexistent/ib_write_bw"}}))
	assert.NilError(t, err)
	assert.Equal(t, outs[0].LaunchError, "/nonexistent/ib_write_bw: program not found on 127.0.0.1")
}

// The two-host collective under the real mpirun, at the request level:
// the stand-in replays seed 000's 2 x 8 all_reduce from rank 0.
func TestCollective(t *testing.T) {
	l := sshd(t)
	if _, err := exec.LookPath("mpirun"); err != nil {
		testenv.Missing(t, "mpirun not installed (scripts/testenv.sh up ssh): %v", err)
	}
	rec := abs(t, "testdata/recordings/ndv4-2x8")
	s := plan.Step{Name: "all_reduce", Procs: 16, ProcsPerNode: 8, MPI: true,
		Argv: []string{filepath.Join(standin(t), "all_reduce_perf"), "-b", "8", "-e", "8G", "-f", "2", "-g", "1"},
		Env:  map[string]string{"STANDIN_RECORDINGS": rec}}
	req := request(t, 2, s)
	req.Test = "nccl.all_reduce"
	outs, err := l.Launch(context.Background(), req)
	assert.NilError(t, err)
	o := outs[0]
	log := read(t, o.Log)
	assert.Equal(t, o.ExitCode, 0, "%s\n%s", o.LaunchError, log)
	assert.Equal(t, log, read(t, rec+"/nccl.all_reduce/all_reduce.log"))
	assert.Assert(t, strings.Contains(o.Command, "--host 127.0.0.1:8,127.0.0.2:8 -x GPUACCEPT_HOSTS -x STANDIN_RECORDINGS --wdir /tmp/gpuaccept-"), o.Command)
	assert.Assert(t, strings.Contains(o.Command, "--mca plm_rsh_agent 'ssh -o BatchMode=yes"), o.Command)
	remoteGone(t, l)
}

func TestHostNamesRejected(t *testing.T) {
	for _, c := range []struct {
		hosts []string
		want  string
	}{
		{[]string{"node1", "node2;reboot"}, `launcher ssh: host "node2;reboot" is not a host name`},
		{[]string{"$(id)"}, `host "$(id)" is not a host name`},
		{[]string{"-oProxyCommand=touch /tmp/pwned"}, `host "-oProxyCommand=touch /tmp/pwned" is not a host name`},
		{[]string{"node`id`"}, "is not a host name"},
		{[]string{"node1", "node1"}, "launcher ssh: host node1 is listed twice"},
		{nil, "launcher ssh needs the nodes: give --hosts h1,h2 or --hostfile FILE"},
	} {
		_, err := New(Config{}, c.hosts, nil)
		assert.ErrorContains(t, err, c.want)
	}
	// Hosts given with the request are checked as well.
	l, err := New(Config{}, []string{"node1"}, nil)
	assert.NilError(t, err)
	req := launch.Request{Test: "x.y", Plan: plan.Plan{Steps: []plan.Step{{Name: "a", Argv: []string{"true"}, Procs: 1, ProcsPerNode: 1}}},
		Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}, Hosts: []string{"a|b"}}}
	_, err = l.Commands(req)
	assert.ErrorContains(t, err, `launcher ssh: host "a|b" is not a host name`)
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Port: 70000}, "--ssh-port 70000: not a TCP port"},
		{Config{User: "root;id"}, `--ssh-user "root;id" is not a user name`},
		{Config{Key: "/nonexistent/id_ed25519"}, "--ssh-key: stat /nonexistent/id_ed25519: no such file or directory"},
		{Config{Insecure: true, KnownHosts: "/etc/hostname"}, "--ssh-insecure skips host key verification"},
		{Config{ConnectTimeout: -time.Second}, "--ssh-connect-timeout -1s: want a time limit above zero"},
	} {
		_, err := New(c.cfg, []string{"node1"}, nil)
		assert.ErrorContains(t, err, c.want)
	}
	// The flags shared by every launcher are checked when it is built;
	// a dry run connects nowhere, so only the flags can stop it.
	for _, c := range []struct {
		o    launch.Options
		want string
	}{
		{launch.Options{Hosts: []string{"node1"}, MPIFlavor: "lam", DryRun: true}, `launcher ssh: --mpi-flavor: unknown MPI flavor "lam"`},
		{launch.Options{Hosts: []string{"node1"}, MPIFlavor: "srun", DryRun: true}, "launcher ssh: --mpi-flavor srun: srun starts the ranks of a Slurm allocation"},
		{launch.Options{DryRun: true}, "launcher ssh needs the nodes: give --hosts h1,h2 or --hostfile FILE"},
	} {
		_, err := launch.New(Name, c.o)
		assert.ErrorContains(t, err, c.want)
	}
	l, err := launch.New(Name, launch.Options{Hosts: []string{"node1"}, MPIFlavor: "hpcx", DryRun: true})
	assert.NilError(t, err)
	assert.Equal(t, l.(*Launcher).Starter.Name(), "hpcx")
}

func TestSSHArgs(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"defaults verify host keys", Config{},
			"ssh -o BatchMode=yes -o ConnectTimeout=10 -o StrictHostKeyChecking=yes -o ServerAliveInterval=15 -o ServerAliveCountMax=4"},
		{"everything", Config{Port: 2222, User: "root", Key: "/k/id", KnownHosts: "/k/known_hosts", ConnectTimeout: 2500 * time.Millisecond},
			"ssh -o BatchMode=yes -o ConnectTimeout=3 -p 2222 -l root -i /k/id -o IdentitiesOnly=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=/k/known_hosts -o ServerAliveInterval=15 -o ServerAliveCountMax=4"},
		{"insecure", Config{Insecure: true, Program: "/usr/bin/ssh"},
			"/usr/bin/ssh -o BatchMode=yes -o ConnectTimeout=10 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ServerAliveInterval=15 -o ServerAliveCountMax=4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, strings.Join(c.cfg.SSHArgs(), " "), c.want)
		})
	}
}

// --dry-run's lines per flavor: exact, without connecting anywhere.
func TestCommands(t *testing.T) {
	coll := plan.Step{Name: "all_reduce", Procs: 16, ProcsPerNode: 8, MPI: true, Argv: []string{"/opt/nccl-tests/build/all_reduce_perf", "-g", "1"},
		Env: map[string]string{"NCCL_SOCKET_IFNAME": "eth0"}}
	srv := plan.Step{Name: "server", Role: "server", Host: 1, Procs: 1, ProcsPerNode: 1, ReadyMarker: "Waiting", Argv: []string{"ib_write_bw", "-p", "18515"}}
	root := ""
	if os.Geteuid() == 0 {
		root = "--allow-run-as-root "
	}
	for _, c := range []struct {
		flavor string
		want   []string
	}{
		{rankstart.FlavorOpenMPI, []string{
			"PRTE_MCA_plm_ssh_agent='ssh -o BatchMode=yes -o ConnectTimeout=10 -p 2222 -o StrictHostKeyChecking=yes -o ServerAliveInterval=15 -o ServerAliveCountMax=4' " +
				"GPUACCEPT_HOSTS=n1,n2 NCCL_SOCKET_IFNAME=eth0 mpirun " + root + "-np 16 --map-by ppr:8:node --host n1:8,n2:8 -x GPUACCEPT_HOSTS -x NCCL_SOCKET_IFNAME --wdir /tmp/gpuaccept-RUN/nccl.x.all_reduce --mca plm_rsh_agent 'ssh -o BatchMode=yes -o ConnectTimeout=10 -p 2222 -o StrictHostKeyChecking=yes -o ServerAliveInterval=15 -o ServerAliveCountMax=4' -mca coll_hcoll_enable 0 /opt/nccl-tests/build/all_reduce_perf -g 1",
			"ssh -o BatchMode=yes -o ConnectTimeout=10 -p 2222 -o StrictHostKeyChecking=yes -o ServerAliveInterval=15 -o ServerAliveCountMax=4 n2 'cd /tmp/gpuaccept-RUN/nccl.x.server && GPUACCEPT_HOSTS=n1,n2 exec ib_write_bw -p 18515'"}},
		{rankstart.FlavorMPICH, []string{
			"GPUACCEPT_HOSTS=n1,n2 NCCL_SOCKET_IFNAME=eth0 mpiexec -n 16 -ppn 8 -hosts n1:8,n2:8 -genvlist GPUACCEPT_HOSTS,NCCL_SOCKET_IFNAME -wdir /tmp/gpuaccept-RUN/nccl.x.all_reduce -launcher ssh -launcher-exec " + filepath.Join(proc.TempPath(), "ssh-RUN/nccl.x.all_reduce/gpuaccept-rsh") + " /opt/nccl-tests/build/all_reduce_perf -g 1",
			"ssh -o BatchMode=yes -o ConnectTimeout=10 -p 2222 -o StrictHostKeyChecking=yes -o ServerAliveInterval=15 -o ServerAliveCountMax=4 n2 'cd /tmp/gpuaccept-RUN/nccl.x.server && GPUACCEPT_HOSTS=n1,n2 exec ib_write_bw -p 18515'"}},
	} {
		t.Run(c.flavor, func(t *testing.T) {
			l, err := New(Config{Port: 2222}, []string{"n1", "n2"}, nil)
			assert.NilError(t, err)
			l.Starter, err = rankstart.Lookup(c.flavor)
			assert.NilError(t, err)
			l.RunID, l.Environ = "RUN", []string{"HOME=/root"}
			got, err := l.Commands(launch.Request{Test: "nccl.x", Plan: plan.Plan{Steps: []plan.Step{coll, srv}}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}})
			assert.NilError(t, err)
			assert.DeepEqual(t, got, c.want)
		})
	}
	l, err := New(Config{}, []string{"n1"}, nil)
	assert.NilError(t, err)
	_, err = l.Commands(launch.Request{Test: "nccl.x", Plan: plan.Plan{Steps: []plan.Step{coll}}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}})
	assert.ErrorContains(t, err, "launcher ssh: the test asks for 2 nodes but 1 host(s) are given (n1)")
	// Files are fetched from the step's folder only.
	for _, f := range []string{"../../etc/shadow", "/etc/shadow", ""} {
		bad := plan.Step{Name: "a", Argv: []string{"true"}, Procs: 1, ProcsPerNode: 1, Files: []string{f}}
		_, err = l.Commands(launch.Request{Test: "x.y", Plan: plan.Plan{Steps: []plan.Step{bad}}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}}})
		assert.ErrorContains(t, err, "launcher ssh: test x.y: step a: file "+strconv.Quote(f)+" is not a plain relative name")
	}
	_, err = l.Commands(launch.Request{Test: "x;y", Plan: plan.Plan{Steps: []plan.Step{coll}}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 8}}})
	assert.ErrorContains(t, err, `launcher ssh: test name "x;y" is not a plain word`)
}

// The "nothing left" checks above can fail: alivePids does see a process
// that runs (both loopback hosts are this machine).
func TestAlivePidsSeesRunning(t *testing.T) {
	l := sshd(t)
	cmd := exec.Command("sleep", "60")
	assert.NilError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pidfile := filepath.Join(t.TempDir(), "pids")
	assert.NilError(t, os.WriteFile(pidfile, []byte("999999999\n"+strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644))
	assert.Equal(t, alivePids(t, l, "127.0.0.2", pidfile), strconv.Itoa(cmd.Process.Pid)+"\n")
}

// A host that accepts the connection but never speaks ssh (a hung node, a
// wrong port) is reported within the connect timeout, by name.
func TestSilentHostTimesOut(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		testenv.Missing(t, "no ssh client (scripts/testenv.sh up ssh): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:17833")
	assert.NilError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent, until the test ends
		}
	}()
	l, err := New(Config{Port: 17833, Insecure: true, ConnectTimeout: time.Second}, []string{"127.0.0.1"}, nil)
	assert.NilError(t, err)
	start := time.Now()
	err = l.Check(context.Background())
	assert.ErrorContains(t, err, "launcher ssh: 1 of 1 host(s) unreachable")
	assert.ErrorContains(t, err, "\n  127.0.0.1: ")
	assert.Assert(t, time.Since(start) < 15*time.Second, "took %s", time.Since(start))
}

// A client planned with plan.HostRef (its plugin did not know the hosts)
// names its server's host as this launcher places it.
func TestCommandsResolveHostRefs(t *testing.T) {
	l, err := New(Config{}, []string{"n1", "n2"}, nil)
	assert.NilError(t, err)
	l.RunID, l.Environ = "RUN", []string{"HOME=/root"}
	cli := plan.Step{Name: "client", Role: "client", Host: 1, Procs: 1, ProcsPerNode: 1, Argv: []string{"ib_write_bw", "-p", "18515", plan.HostRef(0)}}
	got, err := l.Commands(launch.Request{Test: "ibperf.x", Plan: plan.Plan{Steps: []plan.Step{cli}}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}})
	assert.NilError(t, err)
	assert.Assert(t, strings.HasSuffix(got[0], " n2 'cd /tmp/gpuaccept-RUN/ibperf.x.client && GPUACCEPT_HOSTS=n1,n2 exec ib_write_bw -p 18515 n1'"), got[0])
}
