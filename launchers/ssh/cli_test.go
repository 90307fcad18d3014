package ssh

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

var (
	cliOnce sync.Once
	cliBin  string
	cliErr  error
)

// gpuaccept builds the CLI once, into the stand-in's folder.
func gpuaccept(t *testing.T) string {
	t.Helper()
	dir := standin(t)
	cliOnce.Do(func() {
		cliBin = filepath.Join(dir, "gpuaccept")
		out, err := exec.Command("go", "build", "-o", cliBin, "../../cmd/gpuaccept").CombinedOutput()
		if err != nil {
			cliErr = &buildError{string(out)}
		}
	})
	assert.NilError(t, cliErr)
	return cliBin
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(gpuaccept(t), args...)
	cmd.Dir = t.TempDir()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		assert.NilError(t, err)
	}
	return code, out.String(), errb.String()
}

// sshFlags are the flags that reach the test sshd.
func sshFlags(t *testing.T) []string {
	return []string{"--ssh-port", testenv.Need(t, "GPUACCEPT_SSH_PORT", "ssh"), "--ssh-user", testenv.Need(t, "GPUACCEPT_SSH_USER", "ssh"),
		"--ssh-key", testenv.Need(t, "GPUACCEPT_SSH_KEY", "ssh"), "--ssh-known-hosts", testenv.Need(t, "GPUACCEPT_SSH_KNOWN_HOSTS", "ssh")}
}

func suiteFlags(t *testing.T) []string {
	args := []string{"run", "--sku", "ndv4-ssh", "--suite", "multinode", "--baselines", abs(t, "testdata/baselines"), "--launcher", "ssh",
		"--param", "bindir=" + standin(t), "--param", "env.STANDIN_RECORDINGS=" + abs(t, "testdata/recordings/ndv4-2x8"), "--timeout", "3m"}
	for _, a := range loopbackMPI {
		args = append(args, "--mpi-arg="+a)
	}
	return args
}

// The whole path through the CLI: an Open MPI hostfile of the two
// loopback names, mpirun over ssh with 8 ranks per host, the stand-in
// replaying seed 000's 2 x 8 all_reduce from rank 0, judged against the test
// SKU's 2 x 8 baseline: a pass, with its results folder.
func TestCLICollectivePasses(t *testing.T) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		testenv.Missing(t, "mpirun not installed (scripts/testenv.sh up ssh): %v", err)
	}
	hosts := strings.Split(testenv.Need(t, "GPUACCEPT_SSH_HOSTS", "ssh"), ",")
	hostfile := filepath.Join(t.TempDir(), "hosts.txt")
	assert.NilError(t, os.WriteFile(hostfile, []byte("# two names of one machine\n"+hosts[0]+" slots=8\n"+hosts[1]+" slots=8\n"), 0o644))
	out := filepath.Join(t.TempDir(), "results")
	args := append(suiteFlags(t), sshFlags(t)...)
	args = append(args, "--hostfile", hostfile, "--out", out, "--format", "json")
	code, stdout, stderr := runCLI(t, args...)
	assert.Equal(t, code, 0, stdout+stderr)
	var doc struct {
		Status string
		Tests  []struct{ Name, Status string }
	}
	assert.NilError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	assert.Equal(t, doc.Status, "pass")
	assert.Equal(t, len(doc.Tests), 1)
	assert.Equal(t, doc.Tests[0].Name, "nccl.all_reduce")
	assert.Equal(t, doc.Tests[0].Status, "pass")
	log := read(t, filepath.Join(out, "raw/nccl.all_reduce/all_reduce.log"))
	assert.Equal(t, log, read(t, "testdata/recordings/ndv4-2x8/nccl.all_reduce/all_reduce.log"))
	outputs := read(t, filepath.Join(out, "raw/nccl.all_reduce/outputs.json"))
	assert.Assert(t, strings.Contains(outputs, "-np 16 --map-by ppr:8:node --host 127.0.0.1:8,127.0.0.2:8 -x GPUACCEPT_HOSTS -x STANDIN_RECORDINGS"), outputs)
}

// An unreachable host stops the run before anything is planned or
// written, naming the host: exit 2, no results folder.
func TestCLIUnreachableHost(t *testing.T) {
	ssh := sshFlags(t) // skips first when the service is not up
	out := filepath.Join(t.TempDir(), "results")
	args := append(suiteFlags(t), ssh...)
	args = append(args, "--hosts", "127.0.0.1,127.0.0.9", "--out", out)
	code, stdout, stderr := runCLI(t, args...)
	assert.Equal(t, code, 2, stdout+stderr)
	assert.Assert(t, strings.Contains(stderr, "1 of 2 host(s) unreachable, nothing was started"), stderr)
	assert.Assert(t, strings.Contains(stderr, "127.0.0.9: exit status 255: ssh: connect to host 127.0.0.9 port"), stderr)
	_, err := os.Stat(out)
	assert.Assert(t, os.IsNotExist(err), "results folder written: %v", err)
}

// Names that are not host names never reach ssh or mpirun.
func TestCLIHostNameRejected(t *testing.T) {
	for _, h := range []string{"127.0.0.1,node2;reboot", "$(touch /tmp/x)", "-oProxyCommand=id"} {
		code, stdout, stderr := runCLI(t, "run", "--sku", "ndv4-ssh", "--suite", "multinode", "--baselines", abs(t, "testdata/baselines"),
			"--launcher", "ssh", "--hosts="+h, "--dry-run")
		assert.Equal(t, code, 2, stdout+stderr)
		assert.Assert(t, strings.Contains(stderr, "is not a host name"), stderr)
	}
}

// A dry run connects nowhere: the hosts need not exist.
func TestCLIDryRun(t *testing.T) {
	code, stdout, stderr := runCLI(t, "run", "--sku", "ndv4-ssh", "--suite", "multinode", "--baselines", abs(t, "testdata/baselines"),
		"--launcher", "ssh", "--hosts", "gpu-node-1:8,gpu-node-2:8", "--ssh-port", "2222", "--mpi-flavor", "hpcx", "--dry-run", "--param", "bindir=/opt/nccl-tests/build")
	assert.Equal(t, code, 0, stdout+stderr)
	assert.Assert(t, strings.Contains(stdout, "--host gpu-node-1:8,gpu-node-2:8"), stdout)
	assert.Assert(t, strings.Contains(stdout, "--mca plm_rsh_agent 'ssh -o BatchMode=yes -o ConnectTimeout=10 -p 2222 -o StrictHostKeyChecking=yes"), stdout)
	assert.Assert(t, strings.Contains(stdout, "-mca coll_hcoll_enable 0 /opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G"), stdout)
}

// --help states that host keys are verified and what --ssh-insecure gives
// up.
func TestCLIHelp(t *testing.T) {
	code, _, stderr := runCLI(t, "run", "--help")
	assert.Equal(t, code, 0)
	assert.Assert(t, strings.Contains(stderr, "--ssh-insecure"), stderr)
	assert.Assert(t, strings.Contains(stderr, "do NOT verify host keys"), stderr)
	assert.Assert(t, strings.Contains(stderr, "by default every host key must match known_hosts"), stderr)
}

// Ctrl-C while a 2-host collective hangs: gpuaccept stops mpirun and every
// rank on both hosts, writes its results (the test errors), and exits.
func TestCLICtrlC(t *testing.T) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		testenv.Missing(t, "mpirun not installed (scripts/testenv.sh up ssh): %v", err)
	}
	l := sshd(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	out := filepath.Join(t.TempDir(), "results")
	args := append(suiteFlags(t), sshFlags(t)...)
	args = append(args, "--hosts", testenv.Need(t, "GPUACCEPT_SSH_HOSTS", "ssh"), "--out", out,
		"--param", "env.STANDIN_SLEEP=300s", "--param", "env.STANDIN_PIDFILE="+pidfile)
	cmd := exec.Command(gpuaccept(t), args...)
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	assert.NilError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()
	// Every rank wrote its pid: the collective runs (and hangs).
	deadline := time.Now().Add(90 * time.Second)
	for {
		data, _ := os.ReadFile(pidfile)
		if len(strings.Fields(string(data))) == 16 {
			break
		}
		assert.Assert(t, time.Now().Before(deadline), "ranks did not start: %s\n%s", data, stderr.String())
		time.Sleep(200 * time.Millisecond)
	}
	assert.NilError(t, cmd.Process.Signal(os.Interrupt))
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	assert.Assert(t, ok, "exit: %v", err)
	assert.Equal(t, ee.ExitCode(), 130, stdout.String()+stderr.String()) // interrupted before anything failed
	for _, h := range l.Hosts {
		// The remote kill is sent before gpuaccept exits; under load a
		// rank may take a moment to be gone.
		alive := alivePids(t, l, h, pidfile)
		for end := time.Now().Add(10 * time.Second); alive != "" && time.Now().Before(end); alive = alivePids(t, l, h, pidfile) {
			time.Sleep(200 * time.Millisecond)
		}
		assert.Equal(t, alive, "", "on %s", h)
	}
	outputs := read(t, filepath.Join(out, "raw/nccl.all_reduce/outputs.json"))
	assert.Assert(t, strings.Contains(outputs, "cancelled; rank starter and remote ranks killed"), outputs)
}

// A collective that hangs on one node (the stand-in's ranks stop
// themselves, rank 0 after the 256 MiB row, as ranks stopped with SIGSTOP):
// when the test's time runs out the evidence steps run on both hosts over
// ssh before anything is stopped, and find the stopped ranks; the test
// fails naming the host, the evidence is in raw/, and no rank is left on
// either host. Both loopback names are one machine, so each host's
// evidence sees every rank.
func TestCLIHangNamesTheNode(t *testing.T) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		testenv.Missing(t, "mpirun not installed (scripts/testenv.sh up ssh): %v", err)
	}
	l := sshd(t)
	hosts := testenv.Need(t, "GPUACCEPT_SSH_HOSTS", "ssh")
	pidfile := filepath.Join(t.TempDir(), "pids")
	out := filepath.Join(t.TempDir(), "results")
	args := append(suiteFlags(t), sshFlags(t)...)
	args = append(args, "--hosts", hosts, "--out", out, "--timeout", "30s", "--format", "json", "--param", "evidence=true",
		"--param", "env.STANDIN_HANG_HOST="+strings.Split(hosts, ",")[1], "--param", "env.STANDIN_HANG_AFTER=268435456",
		"--param", "env.STANDIN_PIDFILE="+pidfile)
	code, stdout, stderr := runCLI(t, args...)
	assert.Equal(t, code, 1, stdout+stderr)
	var doc struct {
		Tests []struct {
			Status, Message string
			Checks          []struct {
				Name, Host, Message string
				OK                  bool
			}
		}
	}
	assert.NilError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	assert.Equal(t, len(doc.Tests), 1)
	got := doc.Tests[0]
	assert.Equal(t, got.Status, "fail", got.Message)
	assert.Assert(t, strings.Contains(got.Message, "stopped: timed out after"), got.Message)
	assert.Assert(t, strings.Contains(got.Message, "timed out after 256 MiB (the largest size measured)"), got.Message)
	assert.Assert(t, strings.Contains(got.Message, "stopped (state T)"), got.Message)
	named := map[string]bool{}
	for _, c := range got.Checks {
		if c.Name == "hang.suspect" && !c.OK {
			named[c.Host] = true
		}
	}
	// The host whose ranks hang is named; both loopback names are one
	// machine, so which of them the evidence maps the machine's own name
	// to may differ, but never a host outside the test.
	hl := strings.Split(hosts, ",")
	assert.Assert(t, named[hl[1]], "%s not named: %+v", hl[1], got.Checks)
	for h := range named {
		assert.Assert(t, slices.Contains(hl, h), "%s named, not a host of the test: %+v", h, got.Checks)
	}
	for i := range 2 {
		ev := read(t, filepath.Join(out, "raw/nccl.all_reduce", "evidence."+strconv.Itoa(i)+".log"))
		assert.Assert(t, strings.Contains(ev, "|procs|"), ev)
	}
	for _, h := range l.Hosts {
		alive := alivePids(t, l, h, pidfile)
		for end := time.Now().Add(10 * time.Second); alive != "" && time.Now().Before(end); alive = alivePids(t, l, h, pidfile) {
			time.Sleep(200 * time.Millisecond)
		}
		assert.Equal(t, alive, "", "on %s", h)
	}
}
