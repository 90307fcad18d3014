package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
	"github.com/gpuaccept/gpuaccept/launchers/batch"
)

// These tests run against the real cluster of scripts/testenv.sh up slurm:
// slurmctld, two slurmd (n1, n2), slurmdbd. The workload is the stand-in
// (internal/standin) under the name all_reduce_perf, replaying the 2 x 8
// all_reduce of seed 000 (testdata/README.md); everything around it —
// script, sbatch, mpirun inside the job, job states, collection, parse,
// verdict — is real.

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds gpuaccept and the stand-in (as all_reduce_perf) once.
func binaries(t *testing.T) (gpuaccept, bindir string) {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "gpuaccept-slurm-test-")
		if buildErr != nil {
			return
		}
		for _, b := range []struct{ out, pkg string }{{"gpuaccept", "../../cmd/gpuaccept"}, {"all_reduce_perf", "../../internal/standin"}} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, b.out), b.pkg).CombinedOutput()
			if err != nil {
				buildErr = &buildError{b.pkg, string(out), err}
				return
			}
		}
	})
	assert.NilError(t, buildErr)
	return filepath.Join(binDir, "gpuaccept"), binDir
}

type buildError struct {
	pkg, out string
	err      error
}

func (e *buildError) Error() string { return "build " + e.pkg + ": " + e.err.Error() + "\n" + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func needCluster(t *testing.T) string {
	t.Helper()
	testenv.Need(t, "SLURM_CONF", "slurm")
	return testenv.Need(t, "GPUACCEPT_SLURM_PARTITION", "slurm")
}

func recording(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("testdata", "recordings", name))
	assert.NilError(t, err)
	return p
}

// mpiArgs keep Open MPI on loopback: both nodes are this machine.
var mpiArgs = []string{"--mpi-arg=--mca", "--mpi-arg=btl", "--mpi-arg=self,tcp", "--mpi-arg=--mca", "--mpi-arg=btl_tcp_if_include", "--mpi-arg=lo",
	"--mpi-arg=--mca", "--mpi-arg=oob_tcp_if_include", "--mpi-arg=lo"}

type cliResult struct {
	code           int
	stdout, stderr string
	out            string
	results        struct {
		Status string `json:"status"`
		Tests  []struct {
			Name      string              `json:"name"`
			Status    string              `json:"status"`
			Message   string              `json:"message"`
			RankHosts map[string][]string `json:"rank_hosts"`
		} `json:"tests"`
	}
}

// gpuaccept runs the CLI on the test cluster with the test SKU; extra flags
// go last.
func gpuaccept(t *testing.T, rec string, extra ...string) cliResult {
	t.Helper()
	partition := needCluster(t)
	bin, bindir := binaries(t)
	out := filepath.Join(t.TempDir(), "results")
	args := []string{"--sku", "ndmv4", "--baselines", "testdata/skus", "--suite", "multinode", "--launcher", "slurm",
		"--partition", partition, "--slurm-gpus", "none", "--slurm-mpi", "mpirun", "--slurm-poll", "300ms", "--out", out, "--format", "json",
		"--param", "bindir=" + bindir, "--param", "env.STANDIN_RECORDINGS=" + recording(t, rec)}
	args = append(append(args, mpiArgs...), extra...)
	cmd := exec.Command(bin, args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := cliResult{code: cmd.ProcessState.ExitCode(), stdout: so.String(), stderr: se.String(), out: out}
	if err != nil && r.code < 0 {
		t.Fatalf("run gpuaccept: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(out, layout.Results)); err == nil {
		assert.NilError(t, json.Unmarshal(data, &r.results))
	}
	return r
}

func raw(t *testing.T, r cliResult, name string) string {
	data, err := os.ReadFile(filepath.Join(r.out, layout.Raw, "nccl.all_reduce", name))
	assert.NilError(t, err)
	return string(data)
}

var jobLine = regexp.MustCompile(`gpuaccept: job ([0-9]+) `)

// jobID reads the job id the launcher recorded in slurm-job.out.
func jobID(t *testing.T, r cliResult) string {
	m := jobLine.FindStringSubmatch(raw(t, r, layout.SlurmJobOutput))
	assert.Assert(t, m != nil, raw(t, r, layout.SlurmJobOutput))
	return m[1]
}

// assertGone checks that Slurm runs nothing of job id: squeue without -t
// lists pending, running and completing jobs only.
func assertGone(t *testing.T, id string) {
	t.Helper()
	out, err := exec.Command("squeue", "-h", "-j", id, "-o", "%i %T").CombinedOutput()
	assert.NilError(t, err, string(out))
	assert.Equal(t, strings.TrimSpace(string(out)), "", "job %s still in squeue", id)
}

// assertNoStandin checks that no stand-in process of this test binary
// directory outlived the job.
func assertNoStandin(t *testing.T) {
	t.Helper()
	_, bindir := binaries(t)
	out, _ := exec.Command("pgrep", "-af", filepath.Join(bindir, "all_reduce_perf")).Output()
	assert.Equal(t, strings.TrimSpace(string(out)), "", "stand-in processes left running")
}

func TestClusterPasses2Nodes(t *testing.T) {
	const secret = "hf_slurm_secret_4711"
	r := gpuaccept(t, "ndmv4-2x8", "--param", "env.HF_TOKEN="+secret)
	assert.Equal(t, r.code, 0, "%s\n%s", r.stdout, r.stderr)
	assert.Equal(t, r.results.Status, "pass")
	assert.Equal(t, r.results.Tests[0].Status, "pass", r.results.Tests[0].Message)
	// Ranks 0-7 on n1, 8-15 on n2: mpirun placed 8 per node.
	ranks := strings.Split(strings.TrimSpace(raw(t, r, RanksFile("all_reduce"))), "\n")
	assert.Equal(t, len(ranks), 16)
	assert.Equal(t, ranks[0], "0 n1")
	assert.Equal(t, ranks[15], "15 n2")
	var outs []plan.Output
	assert.NilError(t, json.Unmarshal([]byte(raw(t, r, layout.Outputs)), &outs))
	assert.Equal(t, outs[0].Host, "n1,n2")
	// The host of each rank, index = rank, in outputs.json and results.json.
	want := strings.Split(strings.Repeat("n1 ", 8)+strings.Repeat("n2 ", 8), " ")[:16]
	assert.DeepEqual(t, outs[0].RankHosts, want)
	assert.DeepEqual(t, r.results.Tests[0].RankHosts, map[string][]string{"all_reduce": want})
	assert.Equal(t, outs[0].ExitCode, 0)
	assert.Assert(t, strings.Contains(raw(t, r, layout.SlurmJobOutput), "COMPLETED"), raw(t, r, layout.SlurmJobOutput))
	assert.Assert(t, strings.Contains(raw(t, r, layout.SlurmJobScript), "#SBATCH --nodes=2"))
	assertGone(t, jobID(t, r))
	_, err := os.Stat(filepath.Join(r.out, layout.Raw, "nccl.all_reduce", ".slurm"))
	assert.Assert(t, os.IsNotExist(err), "staging folder (with unredacted script) left behind")
	fi, err := os.Stat(filepath.Join(r.out, layout.Raw, "nccl.all_reduce"))
	assert.NilError(t, err)
	assert.Equal(t, fi.Mode().Perm(), os.FileMode(0o755))
	// The script exported the token to the ranks; no file of the results
	// holds it.
	assert.Assert(t, strings.Contains(raw(t, r, layout.SlurmJobScript), "export HF_TOKEN="), raw(t, r, layout.SlurmJobScript))
	err = filepath.WalkDir(r.out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(data), secret) {
			t.Errorf("%s holds the secret", p)
		}
		return err
	})
	assert.NilError(t, err)
}

func TestClusterFailsDegraded(t *testing.T) {
	r := gpuaccept(t, "ndmv4-2x8-degraded")
	assert.Equal(t, r.code, 1, "%s\n%s", r.stdout, r.stderr)
	assert.Equal(t, r.results.Tests[0].Status, "fail")
	assert.Assert(t, strings.Contains(r.results.Tests[0].Message, "below"), r.results.Tests[0].Message)
}

// Slurm's own time limit ends the job: the test errors with the job's
// state and reason.
func TestClusterJobTimeLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for Slurm's time limit (about 1.5 minutes)")
	}
	partition := needCluster(t)
	// While Slurm's time limit runs out, a short job ends and leaves the
	// controller (MinJobAge=10 on the test cluster, purged within a
	// minute): afterwards only sacct knows it.
	so, err := exec.Command("sbatch", "--parsable", "--partition="+partition, "--output=/dev/null", "--wrap", "exit 4").CombinedOutput()
	assert.NilError(t, err, string(so))
	short, err := parseJobID(string(so))
	assert.NilError(t, err)

	r := gpuaccept(t, "ndmv4-2x8", "--time", "1", "--timeout", "10m", "--param", "env.STANDIN_SLEEP=10m")
	assert.Equal(t, r.code, 3, "%s\n%s", r.stdout, r.stderr) // the test errored
	msg := r.results.Tests[0].Message
	assert.Equal(t, r.results.Tests[0].Status, "error")
	assert.Assert(t, strings.Contains(msg, "TIMEOUT") && strings.Contains(msg, "time limit"), msg)
	assertGone(t, jobID(t, r))
	assertNoStandin(t)

	out, _ := exec.Command("squeue", "-h", "-t", "all", "-j", short, "-o", squeueFormat).CombinedOutput()
	_, known, _ := parseSqueue(string(out), short)
	assert.Assert(t, !known, "job %s still in squeue -t all: %s", short, out)
	st, err := (&Launcher{}).query(context.Background(), short)
	assert.NilError(t, err)
	assert.DeepEqual(t, st, JobState{ID: short, State: "FAILED", Reason: "None", ExitCode: "4:0", Nodes: st.Nodes, Source: "sacct"})
}

// gpuaccept's own timeout cancels the job: nothing stays in squeue.
func TestClusterOwnTimeoutCancels(t *testing.T) {
	r := gpuaccept(t, "ndmv4-2x8", "--timeout", "4s", "--param", "env.STANDIN_SLEEP=10m")
	assert.Equal(t, r.code, 3, "%s\n%s", r.stdout, r.stderr) // the test errored
	msg := r.results.Tests[0].Message
	assert.Assert(t, strings.Contains(msg, "timed out after") && strings.Contains(msg, "cancelled with scancel"), msg)
	assert.Assert(t, strings.Contains(raw(t, r, layout.SlurmJobOutput), "CANCELLED"), raw(t, r, layout.SlurmJobOutput))
	assertGone(t, jobID(t, r))
	assertNoStandin(t)
}

// A hung collective's evidence under Slurm: gpuaccept's own timeout
// signals the batch script first (scancel --signal=USR1 --batch), which
// runs each node's evidence step while the stopped ranks are still there;
// the test fails naming a node, and the job is gone after.
func TestClusterHangEvidence(t *testing.T) {
	r := gpuaccept(t, "ndmv4-2x8", "--timeout", "20s", "--param", "evidence=true",
		"--param", "env.STANDIN_HANG_HOST=@host0@", "--param", "env.STANDIN_HANG_AFTER=268435456")
	assert.Equal(t, r.code, 1, "%s\n%s", r.stdout, r.stderr) // the test failed, naming a node
	msg := r.results.Tests[0].Message
	assert.Assert(t, strings.Contains(msg, "stopped (state T)"), msg)
	assert.Assert(t, strings.Contains(raw(t, r, "evidence.0.log"), "|procs|"), raw(t, r, "evidence.0.log"))
	assertGone(t, jobID(t, r))
	assertNoStandin(t)
}

func TestClusterBadPartition(t *testing.T) {
	r := gpuaccept(t, "ndmv4-2x8", "--partition", "nosuch")
	assert.Equal(t, r.code, 3, "%s\n%s", r.stdout, r.stderr) // the test errored
	msg := r.results.Tests[0].Message
	assert.Assert(t, strings.Contains(msg, "submit batch job for nccl.all_reduce") && strings.Contains(msg, "Invalid partition name specified"), msg)
	assert.Assert(t, strings.Contains(raw(t, r, layout.SlurmJobScript), "#SBATCH --partition=nosuch\n"), "the refused script is kept")
}

// srun --mpi=pmix on this cluster cannot load the PMIx library: the test
// errors with srun's own words, not just an exit status.
func TestClusterPMIxCannotWork(t *testing.T) {
	r := gpuaccept(t, "ndmv4-2x8", "--slurm-mpi", "pmix")
	assert.Equal(t, r.code, 3, "%s\n%s", r.stdout, r.stderr) // the test errored
	msg := r.results.Tests[0].Message
	assert.Assert(t, strings.Contains(msg, "srun failed") && strings.Contains(msg, "pmix"), msg)
}

// Ctrl-C (context cancellation) while the job runs cancels it, and every
// argument reaches the program as one word: nothing in a value is executed.
func TestClusterCancelAndQuoting(t *testing.T) {
	partition := needCluster(t)
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	words := []string{"$(touch " + pwned + ")", "a;touch " + pwned, "it's", "`touch " + pwned + "`", "two  blanks", "*"}
	step := plan.Step{Name: "echo", Argv: append([]string{"/usr/bin/printf", "[%s]\\n"}, words...), Procs: 1, ProcsPerNode: 1,
		Env: map[string]string{"GREETING": "$(touch " + pwned + ") it's"}}
	hang := plan.Step{Name: "hang", Argv: []string{"/bin/sh", "-c", "echo \"$GREETING\"; sleep 300"}, Procs: 2, ProcsPerNode: 1,
		Env: step.Env}
	l := &Launcher{Config: Config{Partition: partition, MPI: MPIMpirun, Mode: ModeSubmit, GPUs: GPUsNone, Poll: 300 * time.Millisecond}}
	ctx, cancel := context.WithCancel(context.Background())
	req := launch.Request{Test: "x.quoting", Plan: plan.Plan{Steps: []plan.Step{step, hang}}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 1}},
		Dir: filepath.Join(dir, layout.Raw), Timeout: time.Minute}
	go func() {
		// Cancel once the second step runs.
		for ctx.Err() == nil {
			if _, err := os.Stat(filepath.Join(dir, layout.Raw, ".slurm", "hang.ranks", "1")); err == nil {
				cancel()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	outs, err := l.Launch(ctx, req)
	cancel()
	assert.NilError(t, err)
	assert.Equal(t, outs[0].ExitCode, 0, outs[0].LaunchError)
	log, err := os.ReadFile(outs[0].Log)
	assert.NilError(t, err)
	var want strings.Builder
	for _, w := range words {
		want.WriteString("[" + w + "]\n")
	}
	assert.Equal(t, string(log), want.String())
	assert.Assert(t, strings.HasPrefix(outs[1].LaunchError, "cancelled; job "), outs[1].LaunchError)
	log, _ = os.ReadFile(outs[1].Log)
	assert.Assert(t, strings.HasPrefix(string(log), "$(touch "+pwned+") it's\n"), string(log))
	_, err = os.Stat(pwned)
	assert.Assert(t, os.IsNotExist(err), "a value was executed")
	m := jobLine.FindStringSubmatch(readFile(t, filepath.Join(dir, layout.Raw, layout.SlurmJobOutput)))
	assert.Assert(t, m != nil)
	assertGone(t, m[1])
}

// follow follows job id to its end as a launch does (batch.Follow),
// polling every poll, and cancels it when it gives up after timeout.
func follow(id string, timeout, poll time.Duration) (batch.State, string) {
	j := job{Config: Config{Poll: poll}, l: &Launcher{}}
	st, why := batch.Follow(context.Background(), j, id, timeout, j.options())
	if why != "" {
		st = batch.Cancel(j, id, st, j.options())
	}
	return st, why
}

func readFile(t *testing.T, p string) string {
	data, err := os.ReadFile(p)
	assert.NilError(t, err)
	return string(data)
}

// The example batch script runs gpuaccept inside its allocation: the slurm
// launcher's allocation mode starts the ranks with mpirun in that job.
func TestClusterExampleInsideAllocation(t *testing.T) {
	partition := needCluster(t)
	out, id, st, jobOut := submitExample(t, partition)
	assert.Equal(t, st.State, "COMPLETED", "%s\n%s", st, jobOut)
	var res struct {
		Status   string `json:"status"`
		Launcher string `json:"launcher"`
	}
	assert.NilError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, layout.Results))), &res))
	assert.Equal(t, res.Status, "pass", string(jobOut))
	ranks := readFile(t, filepath.Join(out, layout.Raw, "nccl.all_reduce", RanksFile("all_reduce")))
	assert.Assert(t, strings.HasPrefix(ranks, "0 n1\n") && strings.HasSuffix(ranks, "15 n2\n"), ranks)
	script2 := readFile(t, filepath.Join(out, layout.Raw, "nccl.all_reduce", layout.SlurmJobScript))
	assert.Assert(t, strings.Contains(script2, "Runs inside the allocation") && !strings.Contains(script2, "#SBATCH"), script2)
	assertGone(t, id)
}

// submitExample submits examples/slurm/gpuaccept.sbatch, which runs
// gpuaccept inside its allocation on the ndmv4 test SKU with the stand-in
// replaying a real 2 x 8 run, plus the gpuaccept flags in extra; it follows
// the job to its end and returns the results folder, the job id, its final
// state and its batch output.
func submitExample(t *testing.T, partition string, extra ...string) (out, id string, st batch.State, jobOut []byte) {
	t.Helper()
	bin, bindir := binaries(t)
	dir := t.TempDir()
	out = filepath.Join(dir, "results")
	skus, err := filepath.Abs("testdata/skus")
	assert.NilError(t, err)
	script, err := filepath.Abs("../../examples/slurm/gpuaccept.sbatch")
	assert.NilError(t, err)
	args := []string{"--parsable", "--nodes=2", "--partition=" + partition, "--chdir=" + dir,
		"--export=ALL,GPUACCEPT=" + bin + ",SKU=ndmv4,SUITE=multinode,OUT=" + out, script,
		"--baselines", skus, "--slurm-gpus", "none", "--slurm-mpi", "mpirun",
		"--param", "bindir=" + bindir, "--param", "env.STANDIN_RECORDINGS=" + recording(t, "ndmv4-2x8")}
	args = append(args, extra...)
	args = append(args, mpiArgs...)
	so, err := exec.Command("sbatch", args...).CombinedOutput()
	assert.NilError(t, err, string(so))
	id, err = parseJobID(string(so))
	assert.NilError(t, err)
	st, why := follow(id, 2*time.Minute, 300*time.Millisecond)
	jobOut, _ = os.ReadFile(filepath.Join(dir, "gpuaccept-"+id+".out"))
	assert.Equal(t, why, "", string(jobOut))
	return out, id, st, jobOut
}

// Inside an allocation, gpuaccept's timeout stops the steps it started
// (mpirun and its ranks on both nodes); the batch job then ends by itself
// with gpuaccept's exit status 3 (a test errored).
func TestClusterInsideAllocationTimeout(t *testing.T) {
	partition := needCluster(t)
	out, id, st, jobOut := submitExample(t, partition, "--timeout", "3s", "--param", "env.STANDIN_SLEEP=10m")
	assert.Equal(t, st.State, "FAILED", "%s\n%s", st, jobOut)
	assert.Equal(t, st.ExitCode, "3:0", "gpuaccept's exit status 3: the test errored")
	var res struct {
		Tests []struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"tests"`
	}
	assert.NilError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, layout.Results))), &res))
	assert.Equal(t, res.Tests[0].Status, "error")
	assert.Assert(t, strings.Contains(res.Tests[0].Message, "timed out after"), res.Tests[0].Message)
	assertGone(t, id)
	assertNoStandin(t)
}

// An ended job as squeue, scontrol and sacct describe it on the real
// cluster; sacct through a slurm.conf without accounting answers "accounting
// storage is disabled", which the launcher takes as "ask scontrol".
func TestClusterQueryWithAndWithoutAccounting(t *testing.T) {
	partition := needCluster(t)
	noacct := testenv.Need(t, "GPUACCEPT_SLURM_NOACCT_CONF", "slurm")
	so, err := exec.Command("sbatch", "--parsable", "--partition="+partition, "--output=/dev/null", "--wrap", "exit 3").CombinedOutput()
	assert.NilError(t, err, string(so))
	id, err := parseJobID(string(so))
	assert.NilError(t, err)
	l := &Launcher{Config: Config{Poll: 200 * time.Millisecond}}
	st, why := follow(id, time.Minute, 200*time.Millisecond)
	assert.Equal(t, why, "")
	assert.DeepEqual(t, st, JobState{ID: id, State: "FAILED", Reason: "NonZeroExitCode", ExitCode: "3:0", Nodes: st.Nodes, Source: "scontrol"}.batch())
	// slurmdbd learns the end a moment after the controller.
	var acct JobState
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var ok bool
		acct, ok, err = l.sacct(context.Background(), id)
		assert.NilError(t, err)
		if ok && acct.ExitCode == "3:0" {
			break
		}
	}
	assert.DeepEqual(t, acct, JobState{ID: id, State: "FAILED", Reason: "None", ExitCode: "3:0", Nodes: acct.Nodes, Source: "sacct"})

	l.Environ = append(os.Environ(), "SLURM_CONF="+noacct)
	_, ok, err := l.sacct(context.Background(), id)
	assert.NilError(t, err, "accounting storage is disabled is no error")
	assert.Assert(t, !ok)
	qs, err := l.query(context.Background(), id)
	assert.NilError(t, err)
	assert.Equal(t, qs.Source, "scontrol")
	assert.Equal(t, qs.ExitCode, "3:0")
}

// A job that cannot start within --slurm-pending-timeout is cancelled, and
// the error names the reason it waited for.
func TestClusterPendingTimeout(t *testing.T) {
	r := gpuaccept(t, "ndmv4-2x8", "--sbatch-arg=--begin=now+3600", "--slurm-pending-timeout", "2s")
	assert.Equal(t, r.code, 3, "%s\n%s", r.stdout, r.stderr) // the test errored
	msg := r.results.Tests[0].Message
	assert.Assert(t, strings.Contains(msg, "still pending after") && strings.Contains(msg, "reason BeginTime"), msg)
	assertGone(t, jobID(t, r))
}

// --dry-run prints the batch script exactly and submits nothing; it needs
// no cluster when the MPI start is named. A partition holding shell
// metacharacters is refused before any script exists.
func TestDryRunPrintsScript(t *testing.T) {
	bin, _ := binaries(t)
	out := filepath.Join(t.TempDir(), "results")
	base := []string{"--sku", "ndmv4", "--baselines", "testdata/skus", "--suite", "multinode", "--launcher", "slurm", "--slurm-mode", "submit",
		"--slurm-mpi", "mpirun", "--out", out, "--dry-run", "--param", "bindir=/shared/nccl-tests/build", "--param", "env.NCCL_DEBUG=INFO"}
	cmd := exec.Command(bin, append(base, "--partition", "gpu", "--account", "acct", "--time", "45m", "--sbatch-arg=--constraint=ib")...)
	so, err := cmd.Output()
	assert.NilError(t, err)
	abs, err := filepath.Abs(out)
	assert.NilError(t, err)
	for _, want := range []string{"#!/bin/bash\n#SBATCH --job-name=gpuaccept-nccl.all_reduce\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n#SBATCH --exclusive\n#SBATCH --time=45\n",
		"#SBATCH --partition=gpu\n#SBATCH --account=acct\n#SBATCH --constraint=ib\n",
		"job=" + filepath.Join(abs, layout.Raw, "nccl.all_reduce", ".slurm") + "\n",
		"\texport NCCL_DEBUG=INFO\n", " /shared/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 1 -c 1\n"} {
		assert.Assert(t, strings.Contains(string(so), want), "want %q in\n%s", want, so)
	}
	_, err = os.Stat(out)
	assert.Assert(t, os.IsNotExist(err), "a dry run wrote %s", out)

	cmd = exec.Command(bin, append(base, "--partition", "gpu;reboot")...)
	var se bytes.Buffer
	cmd.Stderr = &se
	err = cmd.Run()
	assert.Equal(t, cmd.ProcessState.ExitCode(), 2, "%v", err)
	assert.Assert(t, strings.Contains(se.String(), `--partition "gpu;reboot": only letters, digits`), se.String())
}

// The MPI start on the real cluster: auto follows MpiDefault=none to
// mpirun; pmi2 is refused because Debian's Open MPI lacks Slurm's PMI-2;
// pmix passes the check (srun lists it) and fails in the job, which
// TestClusterPMIxCannotWork covers.
func TestClusterResolveMPI(t *testing.T) {
	needCluster(t)
	for _, c := range []struct{ mpi, want, err string }{
		{MPIAuto, MPIMpirun, ""},
		{MPIMpirun, MPIMpirun, ""},
		{MPIPMIx, MPIPMIx, ""},
		{MPIPMI2, "", "no s1/s2 pmix component"},
	} {
		got, err := (&Launcher{Config: Config{MPI: c.mpi}}).resolveMPI(context.Background())
		if c.err != "" {
			assert.ErrorContains(t, err, c.err)
			continue
		}
		assert.NilError(t, err)
		assert.Equal(t, got, c.want, c.mpi)
	}
}

// A server and its client run on the nodes the plan names by index into
// the hosts given (--hosts n2,n1: the server on n2), not in the order Slurm
// lists the allocation's nodes (n1,n2): the client addresses its server by
// that host's name.
func TestClusterPairOnGivenHosts(t *testing.T) {
	partition := needCluster(t)
	hs := []string{"n2", "n1"}
	server := plan.Step{Name: "server", Role: "server", Argv: []string{"/bin/sh", "-c", "echo ready; sleep 1"}, Procs: 1, ProcsPerNode: 1,
		Host: 0, ReadyMarker: "ready"}
	client := plan.Step{Name: "client", Role: "client", Argv: []string{"/bin/echo", "to", hs[0]}, Procs: 1, ProcsPerNode: 1, Host: 1}
	l := &Launcher{Config: Config{Partition: partition, MPI: MPIMpirun, Mode: ModeSubmit, GPUs: GPUsNone, Poll: 300 * time.Millisecond, Hosts: hs}}
	req := launch.Request{Test: "x.pair", Plan: plan.Plan{Steps: []plan.Step{server, client}}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 1}, Hosts: hs},
		Dir: filepath.Join(t.TempDir(), layout.Raw), Timeout: time.Minute}
	outs, err := l.Launch(context.Background(), req)
	assert.NilError(t, err)
	for i, want := range hs {
		assert.Equal(t, outs[i].ExitCode, 0, outs[i].LaunchError)
		assert.Equal(t, outs[i].Host, want, "step %s", outs[i].Step)
	}
}

// The script keeps the step sequencer's failure rule on the cluster: a
// client that fails starts no later step, and its server, left waiting by
// srun on the other node, is stopped after the linger rather than at the
// test's timeout, its task ended with it.
func TestClusterFailureStopsTheRest(t *testing.T) {
	partition := needCluster(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "server-still-running")
	server := plan.Step{Name: "server", Role: "server", Argv: []string{"/bin/sh", "-c", "echo ready; sleep 300; touch " + marker}, Procs: 1, ProcsPerNode: 1,
		ReadyMarker: "ready"}
	client := plan.Step{Name: "client", Role: "client", Argv: []string{"/bin/sh", "-c", "exit 3"}, Procs: 1, ProcsPerNode: 1, Host: 1}
	after := plan.Step{Name: "after", Argv: []string{"/bin/true"}, Procs: 1, ProcsPerNode: 1}
	l := &Launcher{Config: Config{Partition: partition, MPI: MPIMpirun, Mode: ModeSubmit, GPUs: GPUsNone, Poll: 300 * time.Millisecond}}
	req := launch.Request{Test: "x.failure", Plan: plan.Plan{Steps: []plan.Step{server, client, after}}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 1}},
		Dir: filepath.Join(dir, layout.Raw), Timeout: 2 * time.Minute}
	start := time.Now()
	outs, err := l.Launch(context.Background(), req)
	assert.NilError(t, err)
	assert.Assert(t, time.Since(start) < time.Minute, "took %s: the server was not stopped after the linger", time.Since(start))
	assert.Equal(t, outs[0].LaunchError, "stopped after step client failed (exit status 3)")
	assert.Equal(t, outs[1].ExitCode, 3)
	// srun's own line says which task on which node.
	assert.Equal(t, outs[1].LaunchError, "srun failed (exit status 3): srun: error: n2: task 0: Exited with exit code 3")
	assert.Equal(t, outs[2].LaunchError, "not started: step client failed (exit status 3)")
	assert.Equal(t, outs[2].ExitCode, -1)
	m := jobLine.FindStringSubmatch(readFile(t, filepath.Join(dir, layout.Raw, layout.SlurmJobOutput)))
	assert.Assert(t, m != nil)
	assertGone(t, m[1])
	out, _ := exec.Command("pgrep", "-f", "sleep 300; touch "+marker).Output()
	assert.Equal(t, strings.TrimSpace(string(out)), "", "the server's task outlived its step")
}
