package slurm

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

// loopbackMPI is mpiArgs as the Config takes them.
var loopbackMPI = []string{"--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"}

// echoHosts prints, per process, its rank, node and plan.HostsEnv.
var echoHosts = []string{"/bin/sh", "-c", `echo "${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-x}} ${SLURMD_NODENAME:-none} $GPUACCEPT_HOSTS"`}

// launchSteps submits one job of the steps on nodes of partition and
// returns each step's output lines, sorted (ranks print in any order).
func launchSteps(t *testing.T, partition string, nodes int, steps ...plan.Step) [][]string {
	t.Helper()
	l := &Launcher{Config: Config{Partition: partition, MPI: MPIMpirun, Mode: ModeSubmit, GPUs: GPUsNone, Poll: 300 * time.Millisecond, MPIArgs: loopbackMPI}}
	req := launch.Request{Test: "x.hosts", Plan: plan.Plan{Steps: steps}, Topology: plan.Topology{Scope: plan.Scope{Nodes: nodes, GPUsPerNode: 1}},
		Dir: filepath.Join(t.TempDir(), layout.Raw), Timeout: 2 * time.Minute}
	outs, err := l.Launch(context.Background(), req)
	assert.NilError(t, err)
	assert.Equal(t, len(outs), len(steps))
	var lines [][]string
	for _, o := range outs {
		data, err := os.ReadFile(o.Log)
		assert.NilError(t, err)
		assert.Equal(t, o.ExitCode, 0, "step %s: %s\n%s", o.Step, o.LaunchError, data)
		var ls []string
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			// srun's own notes ("step creation temporarily disabled,
			// retrying") while the previous step's resources are freed.
			if !strings.HasPrefix(l, "srun: ") {
				ls = append(ls, l)
			}
		}
		sort.Strings(ls)
		lines = append(lines, ls)
	}
	return lines
}

// Every process sees the job's nodes in plan.HostsEnv: ranks of mpirun on
// both nodes, the tasks of a plain srun step, and a single-node step.
func TestClusterRanksSeeHosts(t *testing.T) {
	partition := needCluster(t)
	got := launchSteps(t, partition, 2,
		plan.Step{Name: "mpi", Argv: echoHosts, Procs: 4, ProcsPerNode: 2, MPI: true},
		plan.Step{Name: "tasks", Argv: echoHosts, Procs: 2, ProcsPerNode: 1},
		plan.Step{Name: "single", Argv: echoHosts, Procs: 1, ProcsPerNode: 1})
	assert.DeepEqual(t, got, [][]string{
		{"0 n1 n1,n2", "1 n1 n1,n2", "2 n2 n1,n2", "3 n2 n1,n2"},
		{"0 n1 n1,n2", "1 n2 n1,n2"},
		{"0 n1 n1,n2"},
	})
}

// The four nodes of partition loc (n3-n6) run a 4-node job, and the
// stand-in replays its degraded recording in a step whose
// STANDIN_DEGRADE_HOST is one of them, the healthy one otherwise.
func TestClusterLocPartition4Nodes(t *testing.T) {
	needCluster(t)
	loc := testenv.Need(t, "GPUACCEPT_SLURM_LOC_PARTITION", "slurm")
	nodes := strings.Split(testenv.Need(t, "GPUACCEPT_SLURM_LOC_NODES", "slurm"), ",")
	assert.Equal(t, len(nodes), 4, "GPUACCEPT_SLURM_LOC_NODES")
	_, bindir := binaries(t)
	healthy, degraded := recording(t, "ndmv4-2x8"), recording(t, "ndmv4-2x8-degraded")
	standin := func(name, bad string) plan.Step {
		return plan.Step{Name: name, Argv: []string{filepath.Join(bindir, "all_reduce_perf"), "-g", "1"}, Procs: 4, ProcsPerNode: 1, MPI: true,
			Env: map[string]string{"STANDIN_RECORDINGS": healthy, "STANDIN_DEGRADED_RECORDINGS": degraded, "STANDIN_DEGRADE_HOST": bad}}
	}
	got := launchSteps(t, loc, 4,
		plan.Step{Name: "nodes", Argv: echoHosts, Procs: 4, ProcsPerNode: 1, MPI: true},
		standin("bad", nodes[2]),
		standin("good", "n1"))
	all := strings.Join(nodes, ",")
	var want []string
	for i, n := range nodes {
		want = append(want, strconv.Itoa(i)+" "+n+" "+all)
	}
	assert.DeepEqual(t, got[0], want)
	for i, rec := range []string{degraded, healthy} {
		data, err := os.ReadFile(filepath.Join(rec, "nccl.all_reduce", "all_reduce.log"))
		assert.NilError(t, err)
		wantLines := strings.Split(strings.TrimSpace(string(data)), "\n")
		sort.Strings(wantLines)
		assert.DeepEqual(t, got[i+1], wantLines)
	}
}
