package acceptance

import (
	"testing"

	"gotest.tools/v3/assert"
)

// Which run each RUN argument of baseline record is part of: the header
// and the summary count runs by it.
func TestRunsOf(t *testing.T) {
	cases := []struct {
		name   string
		inputs []string
		want   map[string]string
		count  int
	}{
		{"folders are runs", []string{"r1", "r2"}, map[string]string{"r1": "r1", "r2": "r2"}, 2},
		{"logs of a results folder's raw/TEST/ are its run",
			[]string{"nccl.all_reduce=r1/raw/nccl.all_reduce/all_reduce.log", "nccl.all_gather=r1/raw/nccl.all_gather/all_gather.log"},
			map[string]string{"nccl.all_reduce=r1/raw/nccl.all_reduce/all_reduce.log": "r1", "nccl.all_gather=r1/raw/nccl.all_gather/all_gather.log": "r1"}, 1},
		{"a raw folder's TEST/, with a scope", []string{"nccl.all_reduce@2x8=raw1/nccl.all_reduce/a.log"},
			map[string]string{"nccl.all_reduce@2x8=raw1/nccl.all_reduce/a.log": "raw1"}, 1},
		{"logs of one other folder are its run", []string{"nccl.all_reduce=logs/a.log", "gemm.matmul=logs/b.log"},
			map[string]string{"nccl.all_reduce=logs/a.log": "logs", "gemm.matmul=logs/b.log": "logs"}, 1},
		{"two logs of one test in one folder are two runs", []string{"nccl.all_reduce=logs/a.log", "nccl.all_reduce=logs/b.log"},
			map[string]string{"nccl.all_reduce=logs/a.log": "logs/a.log", "nccl.all_reduce=logs/b.log": "logs/b.log"}, 2},
		{"a name with = but no test is a folder", []string{"x=y"}, map[string]string{"x=y": "x=y"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := runsOf(c.inputs)
			assert.DeepEqual(t, got, c.want)
			assert.Equal(t, countRuns(got), c.count)
		})
	}
}
