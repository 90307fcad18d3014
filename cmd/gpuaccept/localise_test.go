package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

func TestLocaliseDryRunPrintsTheSchedule(t *testing.T) {
	code, out, errs := cli(t, "localise", "--sku", "mi355x", "--suite", "multinode", "--test", "rccl.all_reduce",
		"--hosts", "n1,n2,n3,n4", "--launcher", "ssh", "--dry-run")
	assert.Equal(t, code, 0, errs)
	for _, want := range []string{
		"# localise rccl.all_reduce on 4 nodes (pairs)",
		"  per-node: suite singlenode on each node at once: n1 n2 n3 n4",
		"    round 1: n1+n4 n2+n3",
		"    round 3: n1+n2 n3+n4",
	} {
		assert.Assert(t, strings.Contains(out, want), "want %q in\n%s", want, out)
	}

	// run --dry-run says what follows a failure, under the test's commands.
	code, out, errs = cli(t, "--sku", "mi355x", "--suite", "multinode", "--test", "ibperf.write_bw",
		"--hosts", "n1,n2", "--launcher", "ssh", "--dry-run", "--nics", "ionic_0,ionic_1")
	assert.Equal(t, code, 0, errs)
	assert.Assert(t, strings.Contains(out, "# ibperf.write_bw: then localised (if it fails)\n# localise ibperf.write_bw on 2 nodes (pairs)"), out)
	assert.Assert(t, strings.Contains(out, "nic-pairs: every HCA pair of the examined node pairs (the HCAs of --nics), 2 rounds:\n    round 1: ionic_0:ionic_0,ionic_1:ionic_1\n    round 2: ionic_0:ionic_1,ionic_1:ionic_0\n"), out)
	assert.Assert(t, strings.Index(out, "ib_write_bw") < strings.Index(out, "then localised"), "commands first:\n%s", out)

	code, out, _ = cli(t, "--sku", "mi355x", "--suite", "multinode", "--test", "rccl.all_reduce",
		"--hosts", "n1,n2", "--launcher", "ssh", "--dry-run", "--no-localise")
	assert.Equal(t, code, 0)
	assert.Assert(t, !strings.Contains(out, "localise"), out)
}

func TestLocaliseFlagsAreChecked(t *testing.T) {
	base := []string{"localise", "--sku", "mi355x", "--suite", "multinode", "--hosts", "n1,n2", "--launcher", "ssh", "--dry-run"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--localise-strategy", "halving"}, `--localise-strategy "halving": want one of auto, pairs, matching, bisect`},
		{[]string{"--localise-tolerance", "10"}, "--localise-tolerance 10: want a fraction between 0 and 1"},
		{[]string{"--localise-suite", "multinode"}, "--localise-suite multinode runs on 2 nodes by default"},
		{[]string{"--localise-suite", "quick"}, `--localise-suite "quick": SKU mi355x has no such suite`},
		{[]string{"--localise-test", "rccl.all_gather"}, "--localise-test rccl.all_gather: not a test of suite singlenode"},
		{[]string{"--test", "nccl.all_reduce"}, "--test nccl.all_reduce: not a test of suite multinode"},
		{[]string{"--localise-matchings", "0"}, "--localise-matchings 0: want 1 or more"},
	} {
		code, _, errs := cli(t, append(base, tc.args...)...)
		assert.Equal(t, code, 2, tc.want)
		assert.Assert(t, strings.Contains(errs, tc.want), "want %q in %s", tc.want, errs)
	}
	code, _, errs := cli(t, "localise", "--sku", "mi355x", "--suite", "multinode", "--hosts", "n1", "--launcher", "ssh", "--dry-run")
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(errs, "localise needs the nodes to narrow down"), errs)
	code, _, errs = cli(t, "--sku", "mi355x", "--suite", "multinode", "--localise", "--no-localise", "--dry-run")
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(errs, "contradict"), errs)
}

// The tests below run localisations for real: the Slurm cluster (partition
// loc: slurmd n3..n6) and the sshd on 127.0.0.1..4 of scripts/testenv.sh,
// mpirun, and the stand-in in place of rccl-tests. The stand-in replays
// seed 004's real MI355X all_reduce outputs (1 x 8 for single-node runs, 2
// x 8 for pairs: STANDIN_RECORDINGS holds {nodes}) and their half-speed
// copies whenever the chosen host is among the run's nodes
// (GPUACCEPT_HOSTS, which every launcher exports), so the host is "bad"
// only through the runs it takes part in.

// recordings lays out {nodes}-named folders: 1 → the single-node
// recordings, 2 → the two-node ones, healthy and degraded.
func recordings(t *testing.T) (healthy, degraded string) {
	t.Helper()
	dir := t.TempDir()
	for _, v := range []struct{ name, src string }{{"healthy", "mi355x-seed004"}, {"degraded", "mi355x-seed004-degraded"}} {
		for n, scope := range map[string]string{"1": "singlenode", "2": "multinode"} {
			src, err := filepath.Abs(filepath.Join("..", "..", "testdata", "recordings", v.src, scope, layout.Raw))
			assert.NilError(t, err)
			assert.NilError(t, os.MkdirAll(filepath.Join(dir, v.name), 0o755))
			assert.NilError(t, os.Symlink(src, filepath.Join(dir, v.name, n)))
		}
	}
	return filepath.Join(dir, "healthy", "{nodes}"), filepath.Join(dir, "degraded", "{nodes}")
}

// localiseArgs are the flags of a localisation of mi355x's rccl all_reduce
// with the stand-in; bad is the host whose runs are slow ("" none).
func localiseArgs(t *testing.T, bad string) []string {
	healthy, degraded := recordings(t)
	args := []string{"--sku", "mi355x", "--suite", "multinode", "--test", "rccl.all_reduce", "--localise-test", "rccl.all_reduce",
		"--param", "bindir=" + standin(t), "--param", "env.STANDIN_RECORDINGS=" + healthy,
		"--param", "env.STANDIN_DEGRADED_RECORDINGS=" + degraded, "--timeout", "3m", "--format", "json",
		"--out", filepath.Join(t.TempDir(), "results")}
	if bad != "" {
		args = append(args, "--param", "env.STANDIN_DEGRADE_HOST="+bad)
	}
	for _, a := range []string{"--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"} {
		args = append(args, "--mpi-arg="+a)
	}
	return args
}

// localised runs the CLI and returns its exit code and results.
func localised(t *testing.T, args ...string) (int, result.Run, string) {
	t.Helper()
	code, out, errs := cli(t, args...)
	var run result.Run
	assert.NilError(t, json.Unmarshal([]byte(out), &run), "stdout:\n%s\nstderr:\n%s", out, errs)
	return code, run, errs
}

func suspectNames(run result.Run) []string {
	var out []string
	for _, l := range run.Localisations {
		for _, s := range l.Suspects {
			out = append(out, s.Name()+" ("+s.Stage+")")
		}
	}
	return out
}

func slurmFlags(t *testing.T) []string {
	testenv.Need(t, "SLURM_CONF", "slurm")
	return []string{"--launcher", "slurm", "--partition", testenv.Need(t, "GPUACCEPT_SLURM_LOC_PARTITION", "slurm"),
		"--slurm-gpus", "none", "--slurm-mpi", "mpirun", "--slurm-poll", "300ms"}
}

func sshFlags(t *testing.T) []string {
	if _, err := exec.LookPath("mpirun"); err != nil {
		testenv.Missing(t, "mpirun not installed (scripts/testenv.sh up ssh): %v", err)
	}
	return []string{"--launcher", "ssh", "--ssh-port", testenv.Need(t, "GPUACCEPT_SSH_PORT", "ssh"), "--ssh-user", testenv.Need(t, "GPUACCEPT_SSH_USER", "ssh"),
		"--ssh-key", testenv.Need(t, "GPUACCEPT_SSH_KEY", "ssh"), "--ssh-known-hosts", testenv.Need(t, "GPUACCEPT_SSH_KNOWN_HOSTS", "ssh")}
}

// A 2-node run whose all_reduce fails because one node is slow: the run
// localises it by itself, and the per-node stage names that node (2 nodes
// make one pair: nothing to compare there).
// launchers are the launchers the localisation tests run through: their
// flags and the first n of their 4 test hosts.
var launchers = []struct {
	name  string
	flags func(*testing.T) []string
	hosts func(t *testing.T, n int) []string
}{
	{"slurm", slurmFlags, func(t *testing.T, n int) []string {
		return strings.Split(testenv.Need(t, "GPUACCEPT_SLURM_LOC_NODES", "slurm"), ",")[:n]
	}},
	{"ssh", sshFlags, func(t *testing.T, n int) []string {
		return strings.Split(testenv.Need(t, "GPUACCEPT_SSH_HOSTS4", "ssh"), ",")[:n]
	}},
}

func TestLocaliseFailedRun2Nodes(t *testing.T) {
	for _, tc := range launchers {
		t.Run(tc.name, func(t *testing.T) {
			flags := tc.flags(t)
			hosts := tc.hosts(t, 2)
			args := append(append(localiseArgs(t, hosts[1]), flags...), "--hosts", strings.Join(hosts, ","))
			code, run, errs := localised(t, args...)
			assert.Equal(t, code, 1, errs)
			assert.Equal(t, run.Tests[0].Status, result.Fail, errs)
			assert.Equal(t, len(run.Localisations), 1, errs)
			l := run.Localisations[0]
			assert.Equal(t, l.Reason, "failed")
			assert.DeepEqual(t, suspectNames(run), []string{hosts[1] + " (per-node)"})
			assert.Equal(t, len(l.Stages), 1)
			for _, r := range l.Stages[0].Runs {
				assert.Equal(t, r.Slow, r.Hosts[0] == hosts[1], "%+v", r)
				_, err := os.Stat(filepath.Join(run.Dir, r.Dir, layout.Results))
				assert.NilError(t, err, "the run's own results folder")
			}
		})
	}
}

// Four nodes, localised without a run first: per-node and every pair name
// the chosen host; a healthy set names nobody.
func TestLocalise4Nodes(t *testing.T) {
	for _, tc := range launchers {
		t.Run(tc.name, func(t *testing.T) {
			flags := tc.flags(t)
			hosts := tc.hosts(t, 4)
			bad := hosts[2]
			args := append(append([]string{"localise"}, localiseArgs(t, bad)...), flags...)
			code, run, errs := localised(t, append(args, "--hosts", strings.Join(hosts, ","))...)
			assert.Equal(t, code, 1, errs)
			assert.DeepEqual(t, suspectNames(run), []string{bad + " (per-node, pairs)"})
			l := run.Localisations[0]
			assert.Equal(t, l.Stages[1].Name, "pairs")
			assert.Equal(t, l.Stages[1].Rounds, 3)
			for _, r := range l.Stages[1].Runs {
				assert.Equal(t, r.Slow, r.Hosts[0] == bad || r.Hosts[1] == bad, "%+v", r)
			}

			args = append(append([]string{"localise"}, localiseArgs(t, "")...), flags...)
			code, run, errs = localised(t, append(args, "--hosts", strings.Join(hosts, ","))...)
			assert.Equal(t, code, 0, errs)
			assert.Equal(t, run.Status, result.Pass)
			assert.Assert(t, len(suspectNames(run)) == 0, "%v", suspectNames(run))
			assert.Equal(t, len(run.Localisations[0].Stages), 2)
			assert.Equal(t, len(run.Localisations[0].Stages[1].Runs), 6)
		})
	}
}

// Every run of a localisation that hangs is stopped at its --timeout: the
// Slurm jobs are cancelled, no stand-in is left, and a localisation whose
// every run errored names nobody and exits 3 (infrastructure, not hardware).
func TestLocaliseTimeoutLeavesNothingRunning(t *testing.T) {
	flags := slurmFlags(t)
	hosts := launchers[0].hosts(t, 3)
	args := append(append([]string{"localise"}, localiseArgs(t, "")...), flags...)
	args = append(args, "--hosts", strings.Join(hosts, ","), "--timeout", "4s", "--param", "env.STANDIN_SLEEP=10m")
	code, run, errs := localised(t, args...)
	assert.Equal(t, code, 3, errs)
	l := run.Localisations[0]
	assert.Equal(t, l.Verdict(), result.Error)
	assert.Assert(t, len(l.Suspects) == 0)
	runs := 0
	for _, st := range l.Stages {
		for _, r := range st.Runs {
			runs++
			assert.Equal(t, r.Status, result.Error, "%+v", r)
		}
	}
	assert.Equal(t, runs, 3+3, "3 per-node runs and 3 pairs")
	// This run's jobs are those whose batch script lies in its results
	// folder (other tests may share the partition).
	out, err := exec.Command("squeue", "-h", "-p", testenv.Need(t, "GPUACCEPT_SLURM_LOC_PARTITION", "slurm"), "-o", "%i %T %o").CombinedOutput()
	assert.NilError(t, err, string(out))
	for _, line := range strings.Split(string(out), "\n") {
		assert.Assert(t, !strings.Contains(line, run.Dir), "job left in the queue: %s", line)
	}
	var bindir string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "bindir="); ok {
			bindir = v
		}
	}
	assert.Assert(t, bindir != "")
	out, _ = exec.Command("pgrep", "-af", bindir).CombinedOutput()
	assert.Equal(t, strings.TrimSpace(string(out)), "", "stand-ins left running")
}
