package rankstart

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

func TestOpenMPI(t *testing.T) {
	s := plan.Step{Name: "all_reduce", Argv: []string{"/opt/nccl-tests/build/all_reduce_perf", "-g", "1"}, Procs: 16, ProcsPerNode: 8, MPI: true,
		Env: map[string]string{"NCCL_TOPO_FILE": "/workspace/ndv4-topo.xml"}}
	argv, err := OpenMPI(s, Options{Hosts: []string{"node1", "node2"}, AllowRoot: true, ExtraArgs: []string{"-mca", "coll_hcoll_enable", "0"},
		Environ: []string{"NCCL_DEBUG=INFO", "HOME=/root", "LD_LIBRARY_PATH=/usr/local/nccl/lib", "SECRET=x"}})
	assert.NilError(t, err)
	assert.DeepEqual(t, argv, []string{"mpirun", "--allow-run-as-root", "-np", "16", "--map-by", "ppr:8:node", "--host", "node1:8,node2:8",
		"-x", "LD_LIBRARY_PATH", "-x", "NCCL_DEBUG", "-x", "NCCL_TOPO_FILE", "-mca", "coll_hcoll_enable", "0",
		"/opt/nccl-tests/build/all_reduce_perf", "-g", "1"})
	_, err = OpenMPI(plan.Step{Name: "x", Argv: []string{"a"}}, Options{})
	assert.ErrorContains(t, err, "step x: 0 processes")
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"all_reduce_perf": "all_reduce_perf", "": "''", "a b": "'a b'", "it's": `'it'\''s'`,
		"$(reboot)": "'$(reboot)'", "x;rm -rf /": "'x;rm -rf /'", "NCCL_TESTS_SPLIT=MOD 2": "'NCCL_TESTS_SPLIT=MOD 2'",
	} {
		assert.Equal(t, ShellQuote(in), want)
	}
	assert.Equal(t, ShellJoin([]string{"echo", "a b", "c"}), "echo 'a b' c")
}

func TestEnviron(t *testing.T) {
	got := Environ([]string{"A=1", "NCCL_P2P_DISABLE=0"}, plan.Step{Env: map[string]string{"NCCL_P2P_DISABLE": "1", "B": "2"}})
	assert.DeepEqual(t, got, []string{"A=1", "B=2", "NCCL_P2P_DISABLE=1"})
}

func TestEnvPrefix(t *testing.T) {
	got := EnvPrefix(plan.Step{Env: map[string]string{"NCCL_IB_HCA": "mlx5_0 mlx5_1", "NCCL_DEBUG": "INFO"}})
	assert.Equal(t, got, "NCCL_DEBUG=INFO NCCL_IB_HCA='mlx5_0 mlx5_1'")
}
