package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuaccept/gpuaccept/internal/testenv"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/redact"
)

func sh(name, script string) plan.Step {
	return plan.Step{Name: name, Argv: []string{"sh", "-c", script}, Procs: 1, ProcsPerNode: 1}
}

func req(t *testing.T, steps ...plan.Step) launch.Request {
	return launch.Request{Test: "x.y", Plan: plan.Plan{Steps: steps}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}, Dir: t.TempDir()}
}

func TestRunCollectsLogFilesAndExitCode(t *testing.T) {
	s := sh("one", `echo "out $GREETING"; echo err >&2; printf '{"env": ["HF_TOKEN=hf_secret123", "NCCL_DEBUG=INFO"]}' > r.json; exit 3`)
	s.Env = map[string]string{"GREETING": "hello"}
	s.Files = []string{"r.json", "missing.json"}
	r := req(t, s)
	outs, err := (&Launcher{}).Launch(context.Background(), r)
	assert.NilError(t, err)
	assert.Equal(t, len(outs), 1)
	o := outs[0]
	assert.Equal(t, o.ExitCode, 3)
	assert.Equal(t, o.LaunchError, "")
	log, err := os.ReadFile(o.Log)
	assert.NilError(t, err)
	assert.Equal(t, string(log), "out hello\nerr\n")
	assert.Equal(t, len(o.Files), 1, "a file the step did not write is absent")
	data, err := os.ReadFile(o.Files["r.json"])
	assert.NilError(t, err)
	assert.Equal(t, string(data), `{"env": ["HF_TOKEN=[REDACTED]", "NCCL_DEBUG=INFO"]}`)
	assert.Equal(t, o.Command, "GPUACCEPT_HOSTS=localhost GREETING=hello sh -c "+`'echo "out $GREETING"; echo err >&2; printf '\''{"env": ["HF_TOKEN=hf_secret123", "NCCL_DEBUG=INFO"]}'\'' > r.json; exit 3'`)
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// A timeout kills the whole process tree the step started, including a
// child that ignores SIGTERM, and leaves nothing running.
func TestTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	s := sh("hang", `trap '' TERM; sleep 300 & echo $! > `+pids+`; echo $$ >> `+pids+`; echo started; wait`)
	r := req(t, s)
	r.Timeout = 700 * time.Millisecond
	start := time.Now()
	outs, err := (&Launcher{KillGrace: 300 * time.Millisecond}).Launch(context.Background(), r)
	assert.NilError(t, err)
	assert.Assert(t, time.Since(start) < 10*time.Second)
	assert.Assert(t, strings.HasPrefix(outs[0].LaunchError, "timed out after"), outs[0].LaunchError)
	assert.Equal(t, outs[0].ExitCode, -1)
	data, err := os.ReadFile(pids)
	assert.NilError(t, err)
	for _, f := range strings.Fields(string(data)) {
		pid, _ := strconv.Atoi(f)
		deadline := time.Now().Add(2 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		// A zombie awaiting its reaper is not running: check its state.
		if alive(pid) {
			st, _ := os.ReadFile("/proc/" + f + "/stat")
			assert.Assert(t, strings.Contains(string(st), ") Z "), "pid %s still running: %s", f, st)
		}
	}
	log, _ := os.ReadFile(outs[0].Log)
	assert.Assert(t, strings.Contains(string(log), "gpuaccept: step hang timed out after"), string(log))
}

// Ctrl-C (context cancellation) stops the step the same way.
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	outs, err := (&Launcher{}).Launch(ctx, req(t, sh("c", "sleep 300")))
	assert.NilError(t, err)
	assert.Equal(t, outs[0].LaunchError, "cancelled; process group killed")
}

// A server step with a readiness marker lets the client start while it
// runs: the server waits for a file only the client writes.
func TestReadyMarker(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "client-was-here")
	server := sh("server", `echo "Waiting for client to connect"; while [ ! -e `+flag+` ]; do sleep 0.05; done; echo served`)
	server.ReadyMarker = "Waiting for client"
	client := sh("client", "touch "+flag+"; echo done")
	r := req(t, server, client)
	r.Timeout = 20 * time.Second
	outs, err := (&Launcher{}).Launch(context.Background(), r)
	assert.NilError(t, err)
	for _, o := range outs {
		assert.Equal(t, o.ExitCode, 0, "%s: %s", o.Step, o.LaunchError)
	}
	log, _ := os.ReadFile(outs[0].Log)
	assert.Equal(t, string(log), "Waiting for client to connect\nserved\n")
}

// Two pairs planned servers first, as ibperf plans NIC pairs: the clients
// start together, so each server is served. Before the shared
// launch.Sequence this launcher waited for everything after the first
// client, server2 included, which waits for client2: a hang until the
// test's timeout.
func TestPairsRunAtOnce(t *testing.T) {
	dir := t.TempDir()
	pair := func(n string) (plan.Step, plan.Step) {
		flag := filepath.Join(dir, "served"+n)
		srv := sh("server"+n, `echo "Waiting for client to connect"; while [ ! -e `+flag+` ]; do sleep 0.05; done; echo served`)
		srv.Role, srv.ReadyMarker = "server", "Waiting for client"
		// Each client waits for the other to have started.
		other := filepath.Join(dir, "client"+map[string]string{"1": "2", "2": "1"}[n])
		cli := sh("client"+n, "touch "+filepath.Join(dir, "client"+n)+"; while [ ! -e "+other+" ]; do sleep 0.05; done; touch "+flag)
		cli.Role = "client"
		return srv, cli
	}
	s1, c1 := pair("1")
	s2, c2 := pair("2")
	r := req(t, s1, s2, c1, c2)
	r.Timeout = 20 * time.Second
	start := time.Now()
	outs, err := (&Launcher{}).Launch(context.Background(), r)
	assert.NilError(t, err)
	assert.Assert(t, time.Since(start) < 10*time.Second, "took %s", time.Since(start))
	for _, o := range outs {
		assert.Equal(t, o.ExitCode, 0, "%s: %s", o.Step, o.LaunchError)
	}
}

// A server that dies before its readiness line leaves its client
// unstarted, saying why, as the ssh launcher always did; this launcher
// used to start the client against nothing.
func TestServerDiesBeforeReady(t *testing.T) {
	srv := sh("server", "echo 'Failed to open device mlx5_9' >&2; exit 1")
	srv.Role, srv.ReadyMarker = "server", "Waiting for client"
	cli := sh("client", "echo ran")
	cli.Role = "client"
	outs, err := (&Launcher{}).Launch(context.Background(), req(t, srv, cli))
	assert.NilError(t, err)
	assert.Equal(t, outs[0].ExitCode, 1)
	assert.Equal(t, outs[1].LaunchError, `not started: step server ended before its readiness line "Waiting for client" showed`)
	assert.Equal(t, outs[1].Log, "")
}

// --mpi-flavor reaches the local launcher: the MPI step's line is the
// flavor's own, and a starter of a scheduler is refused by flag.
func TestMPIFlavor(t *testing.T) {
	s := plan.Step{Name: "all_reduce", Argv: []string{"all_reduce_perf", "-g", "1"}, Procs: 2, ProcsPerNode: 2, MPI: true}
	for _, c := range []struct{ flavor, want, err string }{
		{flavor: "", want: " mpirun "},
		{flavor: "mpich", want: " mpiexec -n 2 -ppn 2 -genvlist "},
		{flavor: "hpcx", want: " -mca coll_hcoll_enable 0 all_reduce_perf"},
		{flavor: "srun", err: "launcher local: --mpi-flavor srun: srun starts the ranks of a Slurm allocation"},
		{flavor: "lam", err: `launcher local: --mpi-flavor: unknown MPI flavor "lam"`},
	} {
		l, err := launch.New(Name, launch.Options{MPIFlavor: c.flavor})
		if c.err != "" {
			assert.ErrorContains(t, err, c.err)
			continue
		}
		assert.NilError(t, err)
		cmds, err := l.Commands(req(t, s))
		assert.NilError(t, err)
		assert.Assert(t, strings.Contains(cmds[0], c.want), "%s: %s", c.flavor, cmds[0])
	}
	_, err := launch.New(Name, launch.Options{Hosts: []string{"node-elsewhere"}})
	assert.ErrorContains(t, err, `launcher local runs on this host`)
}

func TestRejectsSeveralNodes(t *testing.T) {
	r := req(t, sh("a", "true"))
	r.Topology.Nodes = 2
	_, err := (&Launcher{}).Launch(context.Background(), r)
	assert.ErrorContains(t, err, "launcher local runs on this host only, but the test asks for 2 nodes")
}

func TestStartFailure(t *testing.T) {
	outs, err := (&Launcher{}).Launch(context.Background(), req(t, plan.Step{Name: "a", Argv: []string{"/nonexistent/all_reduce_perf"}, Procs: 1, ProcsPerNode: 1}))
	assert.NilError(t, err)
	assert.ErrorContains(t, errString(outs[0].LaunchError), "start /nonexistent/all_reduce_perf")
}

type errString string

func (e errString) Error() string { return string(e) }

// Two ranks under the real Open MPI mpirun: the stand-in replays the
// recorded 2-rank H200 run, printing from rank 0 only, as nccl-tests does.
func TestMPIRun(t *testing.T) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		testenv.Missing(t, "mpirun not installed (scripts/testenv.sh up mpi): %v", err)
	}
	bin := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "all_reduce_perf"), "../../internal/standin").CombinedOutput()
	assert.NilError(t, err, string(out))
	rec, err := filepath.Abs("../../testdata/recordings/h200-1x2-mpi")
	assert.NilError(t, err)
	s := plan.Step{Name: "all_reduce", Argv: []string{filepath.Join(bin, "all_reduce_perf"), "-g", "1", "-J", "all_reduce.json"}, Procs: 2, ProcsPerNode: 2, MPI: true,
		Env: map[string]string{"STANDIN_RECORDINGS": rec}, Files: []string{"all_reduce.json"}}
	r := req(t, s)
	r.Timeout = time.Minute
	l := &Launcher{MPIArgs: []string{"--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"}}
	outs, err := l.Launch(context.Background(), r)
	assert.NilError(t, err)
	o := outs[0]
	log, _ := os.ReadFile(o.Log)
	assert.Equal(t, o.ExitCode, 0, "%s\n%s", o.LaunchError, log)
	assert.Assert(t, strings.HasPrefix(o.Command, "GPUACCEPT_HOSTS=localhost STANDIN_RECORDINGS="), o.Command)
	assert.Assert(t, strings.Contains(o.Command, " mpirun "), o.Command)
	assert.Assert(t, strings.Contains(o.Command, "-np 2 --map-by ppr:2:node"), o.Command)
	assert.Equal(t, strings.Count(string(log), "# Collective test starting: all_reduce_perf"), 1, string(log))
	assert.Assert(t, o.Files["all_reduce.json"] != "")
}

// A secret the runner knows is masked even where the benchmark prints it
// bare, without its variable name.
func TestKnownSecretMaskedInLog(t *testing.T) {
	r := req(t, sh("p", `echo "connecting with $CREDS"`))
	r.Plan.Steps[0].Env = map[string]string{"CREDS": "u-9f8e7d6c"}
	r.Redactor = redact.New("u-9f8e7d6c")
	outs, err := (&Launcher{}).Launch(context.Background(), r)
	assert.NilError(t, err)
	log, _ := os.ReadFile(outs[0].Log)
	assert.Equal(t, string(log), "connecting with [REDACTED]\n")
}

// The local launcher refuses the env names every other launcher refuses,
// in Commands (--dry-run) and Launch, and never prints one unquoted.
func TestRefusesBadEnvNames(t *testing.T) {
	for _, name := range []string{"$(id)", "A B", "1X", "X;reboot"} {
		s := sh("a", "true")
		s.Env = map[string]string{name: "1"}
		want := fmt.Sprintf("environment variable name %q is not a shell name", name)
		cmds, err := (&Launcher{}).Commands(req(t, s))
		assert.ErrorContains(t, err, want)
		assert.Equal(t, len(cmds), 0)
		_, err = (&Launcher{}).Launch(context.Background(), req(t, s))
		assert.ErrorContains(t, err, want)
	}
}

// A file a step is to leave for collection is the workload's to write: a
// link to a file outside (a root-owned secret), a FIFO (which would block
// the collector for good) or a device is refused by name, not collected;
// a regular file is collected.
func TestCollectRefusesWhatIsNoFile(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "shadow")
	assert.NilError(t, os.WriteFile(secret, []byte("root:$6$hash\n"), 0o600))
	for _, c := range []struct {
		name, script, want string
	}{
		{"link", "ln -s " + secret + " out.log", "link"},
		{"fifo", "mkfifo out.log", "FIFO"},
		{"device", "ln -s /dev/zero out.log", "link"},
		{"file", "echo step 1 > out.log", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := sh("p", c.script)
			s.Files = []string{"out.log"}
			r := req(t, s)
			outs, err := (&Launcher{}).Launch(context.Background(), r)
			assert.NilError(t, err)
			o := outs[0]
			if c.want == "" {
				assert.Equal(t, o.LaunchError, "")
				data, err := os.ReadFile(o.Files["out.log"])
				assert.NilError(t, err)
				assert.Equal(t, string(data), "step 1\n")
				return
			}
			assert.Equal(t, o.Files["out.log"], "")
			assert.ErrorContains(t, errString(o.LaunchError), "collect file out.log of step p")
			assert.ErrorContains(t, errString(o.LaunchError), c.want)
		})
	}
}
