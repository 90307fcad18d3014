package nccltests

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

func TestSweepStep(t *testing.T) {
	sw := Sweep{Bin: "/b/all_reduce_perf", MinBytes: "8", MaxBytes: "4G", StepFactor: "2",
		Flags: [][2]string{{"-c", "1"}, {"-n", ""}, {"-d", "bfloat16"}}, Extra: []string{"-t", "1"}}
	tests := []struct {
		name  string
		mode  string
		topo  plan.Topology
		procs int
		ppn   int
		mpi   bool
		g     string
	}{
		{"one node: one process on every GPU", "", plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 8}}, 1, 1, false, "8"},
		{"two nodes: a rank per GPU", "", plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}, 16, 8, true, "1"},
		{"mpi on one node", "mpi", plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}, 2, 2, true, "1"},
		{"single across nodes: one MPI process per node", "single", plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 4}}, 2, 1, true, "4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := sw
			s.Mode = tc.mode
			step, err := s.Step("all_reduce", tc.topo)
			assert.NilError(t, err)
			assert.Equal(t, step.Procs, tc.procs)
			assert.Equal(t, step.ProcsPerNode, tc.ppn)
			assert.Equal(t, step.MPI, tc.mpi)
			assert.DeepEqual(t, step.Argv, []string{"/b/all_reduce_perf", "-b", "8", "-e", "4G", "-f", "2", "-g", tc.g, "-c", "1", "-d", "bfloat16", "-t", "1"})
			assert.Assert(t, step.Env == nil)
		})
	}
	_, err := sw.Step("all_reduce", plan.Topology{Scope: plan.Scope{Nodes: 0, GPUsPerNode: 8}})
	assert.ErrorContains(t, err, "topology 0x8: nodes and GPUs per node must be >= 1")
}

func TestExpected(t *testing.T) {
	maxb, factor := Expected("4G", "2")
	assert.Equal(t, maxb, int64(4<<30))
	assert.Equal(t, factor, int64(2))
	maxb, factor = Expected("lots", "")
	assert.Equal(t, maxb, int64(0))
	assert.Equal(t, factor, int64(0))
}

func TestSweepParamsSet(t *testing.T) {
	tests := []struct {
		k, v    string
		handled bool
		wantErr string
	}{
		{"maxbytes", "8G", true, ""},
		{"minbytes", "lots", true, "parameter minbytes: "},
		{"iters", "-2", true, `parameter iters: "-2" is not a non-negative integer`},
		{"mode", "both", true, `parameter mode: "both" is not single or mpi`},
		{"suffix", "_mpi", false, ""},
	}
	for _, tc := range tests {
		var p SweepParams
		handled, err := p.Set(tc.k, tc.v)
		assert.Equal(t, handled, tc.handled, tc.k)
		if tc.wantErr != "" {
			assert.ErrorContains(t, err, tc.wantErr)
			continue
		}
		assert.NilError(t, err, tc.k)
	}
}

// The shared flags come first in a fixed order, the plugin's own after
// them, whatever order the parameters were set in.
func TestSweepParamsSweep(t *testing.T) {
	p := SweepParams{MinBytes: "8", MaxBytes: "1G", StepFactor: "2", Check: "1"}
	for _, kv := range [][2]string{{"op", "max"}, {"extra", "-t 2"}, {"iters", "5"}, {"datatype", "half"}, {"mode", "mpi"}} {
		_, err := p.Set(kv[0], kv[1])
		assert.NilError(t, err)
	}
	step, err := p.Sweep("all_reduce_perf", map[string]string{"NCCL_DEBUG": "WARN"}, [2]string{"-N", "3"}, [2]string{"-O", ""}).
		Step("all_reduce", plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}})
	assert.NilError(t, err)
	assert.DeepEqual(t, step.Argv, []string{"all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2", "-g", "1",
		"-c", "1", "-n", "5", "-d", "half", "-o", "max", "-N", "3", "-t", "2"})
	assert.DeepEqual(t, step.Env, map[string]string{"NCCL_DEBUG": "WARN"})
}
