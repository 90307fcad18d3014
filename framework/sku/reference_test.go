package sku

import (
	"math"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// Efficiency is measured against the link a test crosses at its scope,
// never against the impossibility gate: the GPU's link one way inside a
// node (or an NVL72 rack), the NICs across nodes by the collective's own
// formula (Ceiling.Reference), for every shipped busbw ceiling.
func TestReference(t *testing.T) {
	cat, err := Load(baselines.FS, "baselines")
	assert.NilError(t, err)
	busbw := func(name string) *Ceiling {
		s, err := cat.Get(name)
		assert.NilError(t, err)
		for _, c := range s.Ceilings {
			if c.Metric == "busbw" {
				return c
			}
		}
		t.Fatalf("SKU %s has no busbw ceiling", name)
		return nil
	}
	sc := func(nodes, gpus int) plan.Scope { return plan.Scope{Nodes: nodes, GPUsPerNode: gpus} }
	cases := []struct {
		sku, test string
		scope     plan.Scope
		want      float64
		link      string
	}{
		{"h100", "nccl.all_reduce", sc(1, 8), 450, "NVLink 4, one way"},
		{"h200", "nccl.all_reduce", sc(1, 2), 450, "NVLink 4, one way"},
		{"h200", "nccl.alltoall", sc(1, 8), 450, "NVLink 4, one way"},
		{"mi355x", "rccl.all_reduce", sc(1, 8), 537.6, "Infinity Fabric (xGMI), 7 links, one way"},
		{"a100-ndmv4", "nccl.all_reduce", sc(1, 8), 300, "NVLink 3, one way"},
		{"b200-a4", "nccl.all_gather", sc(1, 8), 900, "NVLink 5, one way"},
		// Across nodes, rings: the node's g NICs, g x B.
		{"h100", "nccl.all_reduce", sc(2, 8), 400, "ConnectX-7 400 Gb/s per GPU, the 8 of a node: all_reduce across 2 nodes"},
		{"a100-ndmv4", "nccl.all_reduce", sc(2, 8), 200, "HDR InfiniBand 200 Gb/s per GPU, the 8 of a node: all_reduce across 2 nodes"},
		{"b200-a4", "nccl.all_gather", sc(2, 8), 400, "ConnectX-7 400 Gb/s per GPU, the 8 of a node: all_gather across 2 nodes"},
		{"mi355x", "rccl.all_reduce", sc(2, 8), 400, "AINIC 400 Gb/s per GPU, the 8 of a node: all_reduce across 2 nodes"},
		// alltoall: B x N/(N-1) x (n-1)/n; 50 GB/s x 2 x 15/16 on 2 x 8.
		{"mi355x", "rccl.alltoall", sc(2, 8), 93.75, "AINIC 400 Gb/s per GPU: alltoall across 2 nodes, 1/2 of the data crosses it, busbw x 15/16"},
		{"h100", "nccl.alltoall", sc(10, 8), 50 * 10.0 / 9 * 79 / 80, "ConnectX-7 400 Gb/s per GPU: alltoall across 10 nodes, 9/10 of the data crosses it, busbw x 79/80"},
		{"h100", "nccl.sendrecv", sc(2, 1), 50, "ConnectX-7 400 Gb/s per GPU: sendrecv across nodes"},
		// GB200 NVL72: NVLink spans the rack's trays, up to 72 GPUs.
		{"gb200-a4x", "nccl.all_gather", sc(8, 4), 900, "NVLink 5, one way"},
		{"gb200-a4x", "nccl.all_gather", sc(32, 4), 200, "ConnectX-7 400 Gb/s per GPU, the 4 of a node: all_gather across 32 nodes"},
		// The catalog of issue 30: the generic SKUs' links.
		{"gb300", "nccl.all_reduce", sc(18, 4), 900, "NVLink 5, one way"},
		{"gb300", "nccl.all_reduce", sc(32, 4), 400, "ConnectX-8 800 Gb/s per GPU, the 4 of a node: all_reduce across 32 nodes"},
		{"b300", "nccl.all_gather", sc(2, 8), 800, "ConnectX-8 800 Gb/s per GPU, the 8 of a node: all_gather across 2 nodes"},
		{"a100-40gb", "nccl.all_reduce", sc(1, 8), 300, "NVLink 3, one way"},
		{"h100-nvl", "nccl.all_reduce", sc(1, 2), 300, "NVLink bridge, one way (bridged pairs; others cross PCIe)"},
		{"mi300x", "rccl.all_reduce", sc(1, 8), 448, "Infinity Fabric (xGMI), 7 links, one way"},
		{"mi350x", "rccl.alltoall", sc(1, 8), 537.6, "Infinity Fabric (xGMI), 7 links, one way"},
	}
	for _, c := range cases {
		t.Run(c.sku+" "+c.test+" "+c.scope.String(), func(t *testing.T) {
			got, link, ok := busbw(c.sku).Reference(c.test, c.scope)
			assert.Assert(t, ok)
			assert.Assert(t, math.Abs(got-c.want) < 1e-9, "%v, want %v", got, c.want)
			assert.Equal(t, link, c.link)
		})
	}
	_, _, ok := busbw("h100").Reference("nccl.hypercube", sc(2, 8))
	assert.Assert(t, !ok, "no formula for hypercube across nodes: no efficiency, not a wrong one")
	ib, err := cat.Get("mi355x")
	assert.NilError(t, err)
	for _, c := range ib.Ceilings {
		if c.Metric == "bw_avg" {
			got, _, ok := c.Reference("ibperf.write_bw", sc(2, 8))
			assert.Assert(t, ok && got == 800, "a NIC's own ceiling holds across nodes: %v", got)
		}
	}
}
