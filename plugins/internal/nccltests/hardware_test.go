package nccltests

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// The rank lines of a real output name each GPU once (host, bus id as
// printed, model), for the results folder's hardware list; the devices
// of every step of a test are kept, not the last step's.
func TestDevicesOfRankLines(t *testing.T) {
	h200 := []result.Device{
		{Host: "vm", Kind: "gpu", Name: "NVIDIA H200", BusID: "0000:00:06"},
		{Host: "vm", Kind: "gpu", Name: "NVIDIA H200", BusID: "0000:00:07"},
	}
	for _, c := range []struct {
		name string
		logs []string
		want []result.Device
	}{
		{"one step", []string{"h200x2-2.19.6/all_reduce.txt"}, h200},
		{"two steps", []string{"h200x2-2.19.6/all_reduce.txt", "h200x2-2.19.6/all_gather.txt"}, append(append([]result.Device(nil), h200...), h200...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var outs []plan.Output
			for _, l := range c.logs {
				outs = append(outs, plan.Output{Step: "all_reduce", Log: "testdata/" + l})
			}
			p := Results(outs, Options{Test: "all_reduce", Topology: ntTopo(1, 2)})
			_, got, err := result.StripHardware(p)
			assert.NilError(t, err)
			assert.DeepEqual(t, got, c.want)
			// Merged as the framework merges them: one device per GPU.
			assert.DeepEqual(t, len(result.MergeHardware(nil, "nccl.all_reduce", got)), 2)
		})
	}
}
