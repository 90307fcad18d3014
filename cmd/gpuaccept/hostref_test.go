package main

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// Plugins plan the ib_write_bw client's server address and Mori's
// rendezvous before any host is known (Slurm, pods), or with the hosts
// given (ssh); each launcher names the host: Slurm from the allocation when
// the step starts, ssh from the hosts given.
// (Kubernetes: TestK8sDryRunResolvesHosts.)
func TestLaunchersResolveHostRefs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"slurm", []string{"--launcher", "slurm", "--partition", "gpu", "--slurm-mpi", "mpirun"}, []string{
			`--report_gbits "$(sed -n 1p "$job/hosts")"` + "\n",
			`export MASTER_ADDR="$(sed -n 1p "$job/hosts")"`,
		}},
		{"ssh", []string{"--launcher", "ssh", "--hosts", "node-a,node-b"}, []string{
			"--report_gbits node-a'\n",
			"MASTER_ADDR=node-a ",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--sku", "mi355x", "--suite", "multinode", "--dry-run", "--test", "ibperf.write_bw", "--test", "mori.ep_internode"}, tc.args...)
			code, out, errs := cli(t, args...)
			assert.Equal(t, code, 0, errs)
			assert.Assert(t, !strings.Contains(out, "@host"), out)
			for _, w := range tc.want {
				assert.Assert(t, strings.Contains(out, w), "want %q in\n%s", w, out)
			}
		})
	}
}
