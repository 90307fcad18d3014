package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/plugins/ibperf"
	"github.com/gpuaccept/gpuaccept/plugins/nccl"
	"github.com/gpuaccept/gpuaccept/plugins/rccl"
)

// inProcess serves the built-in plugins without a plugin process: the
// same Parse and Describe a run calls through the host.
type inProcess map[string]pluginapi.Plugin

func (p inProcess) Plan(ctx context.Context, name string, req pluginapi.PlanRequest) (plan.Plan, error) {
	return p[name].Plan(ctx, req)
}

func (p inProcess) Parse(ctx context.Context, name string, req pluginapi.ParseRequest) (result.Parsed, error) {
	return p[name].Parse(ctx, req)
}

func (p inProcess) Describe(ctx context.Context, name string) (pluginapi.Description, error) {
	return p[name].Describe(ctx)
}

// parseOnly is a Plugins that cannot describe (an old external plugin):
// its Describe, with another signature, hides inProcess's.
type parseOnly struct{ inProcess }

func (p parseOnly) Describe() {}

var builtins = inProcess{"nccl": nccl.Plugin{}, "rccl": rccl.Plugin{}, "ibperf": ibperf.Plugin{}}

func shippedSKU(t *testing.T, name string) *sku.SKU {
	t.Helper()
	cat, err := sku.Load(baselines.FS, "baselines")
	assert.NilError(t, err)
	s, err := cat.Get(name)
	assert.NilError(t, err)
	return s
}

// check judges one log file as gpuaccept check does, with the plugins in
// process.
func check(t *testing.T, s *sku.SKU, test string, topo plan.Topology, text string) result.Test {
	t.Helper()
	f := filepath.Join(t.TempDir(), "out.log")
	assert.NilError(t, os.WriteFile(f, []byte(text), 0o644))
	run, err := Check(context.Background(), builtins, s, test, topo, []string{f}, "test")
	assert.NilError(t, err)
	assert.Equal(t, len(run.Tests), 1)
	return run.Tests[0]
}

// check on real outputs judges the gates before and whatever the baseline
// (framework/judge/testdata/README.md names them): another GPU variant
// fails at a scope with a baseline and at one without; an output that
// names no device says the model is not verifiable; an impossible
// bandwidth fails as such.
func TestCheckGatesOnRealOutputs(t *testing.T) {
	read := func(p string) string {
		data, err := os.ReadFile(p)
		assert.NilError(t, err)
		return string(data)
	}
	a100 := read("../judge/testdata/oci-a100-sxm4-40gb-2x8-all_reduce.log")
	mi300x := read("../judge/testdata/oci-mi300x-2x8-all_reduce.log")
	h200 := read("../../testdata/recordings/h200-1x2-healthy/nccl.all_reduce/all_reduce.log")
	cases := []struct {
		name     string
		sku      string
		test     string
		topo     plan.Topology
		log      string
		status   result.Status
		prefix   string
		contains []string
		check    result.Check
	}{
		{"A100 40GB under a100-ndmv4 at its baseline's scope", "a100-ndmv4", "nccl.all_reduce", plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}, a100, result.Fail,
			`GPU variant: the output shows "NVIDIA A100-SXM4-40GB", SKU a100-ndmv4 is "NVIDIA A100-SXM4-80GB"`, nil,
			result.Check{Name: "GPU variant", Message: `the output shows "NVIDIA A100-SXM4-40GB", SKU a100-ndmv4 is "NVIDIA A100-SXM4-80GB": another A100`}},
		{"the same at a scope without baseline", "a100-ndmv4", "nccl.all_reduce", plan.Topology{Scope: plan.Scope{Nodes: 3, GPUsPerNode: 8}}, a100, result.Fail,
			"GPU variant: ", []string{"no baseline for nccl.all_reduce at scope 3x8 (nodes x GPUs per node) in SKU a100-ndmv4; it has 2x8"},
			result.Check{Name: "GPU variant", Message: `the output shows "NVIDIA A100-SXM4-40GB", SKU a100-ndmv4 is "NVIDIA A100-SXM4-80GB": another A100`}},
		{"MI300X naming no device under mi355x", "mi355x", "rccl.all_reduce", plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}, mi300x, "",
			"", nil,
			result.Check{Name: "GPU model", Warn: true, Message: `not verifiable: the output lists its ranks but names no device; SKU mi355x is "AMD Instinct MI355X" or "AMD Radeon Graphics"`}},
		// Edit: out-of-place busbw at 1 GiB, 329.80 -> 1234.50.
		{"busbw above NVLink", "h200", "nccl.all_reduce", plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}},
			strings.Replace(h200, "3255.74  329.80  329.80", "3255.74  329.80 1234.50", 1), result.Fail,
			"physical ceiling busbw: busbw out-of-place 1234.5 GB/s at 1 GiB is above the 1000 GB/s ceiling of SKU h200", nil,
			result.Check{Name: "physical ceiling busbw", Message: "busbw out-of-place 1234.5 GB/s at 1 GiB is above the 1000 GB/s ceiling of SKU h200 (NVLink 4 (450 GB/s each way) and a 400 Gb/s NIC per GPU): not physically possible"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := check(t, shippedSKU(t, c.sku), c.test, c.topo, c.log)
			if c.status != "" {
				assert.Equal(t, got.Status, c.status, got.Message)
			}
			assert.Assert(t, strings.HasPrefix(got.Message, c.prefix), "message %q, want prefix %q", got.Message, c.prefix)
			for _, s := range c.contains {
				assert.Assert(t, strings.Contains(got.Message, s), "message %q lacks %q", got.Message, s)
			}
			found := false
			for _, ch := range got.Checks {
				if ch.Name == c.check.Name {
					found = true
					assert.DeepEqual(t, ch, c.check)
				}
			}
			assert.Assert(t, found, "no check %q in %+v", c.check.Name, got.Checks)
		})
	}
}

// The label defaults a plugin declares reach the judge; a plugin that
// cannot describe itself gives none (entries then match every value).
func TestLabelDefaults(t *testing.T) {
	ctx := context.Background()
	got := LabelDefaults(ctx, builtins, "nccl", "all_reduce")
	assert.DeepEqual(t, got["busbw"], map[string]string{"type": "float", "redop": "sum"})
	assert.DeepEqual(t, LabelDefaults(ctx, builtins, "rccl", "alltoall")["busbw"], map[string]string{"type": "float", "redop": "sum"})
	assert.Assert(t, LabelDefaults(ctx, builtins, "nccl", "no_such_test") == nil)
	assert.Assert(t, LabelDefaults(ctx, parseOnly{builtins}, "nccl", "all_reduce") == nil)
}

// A NIC rate above the line rate is impossible and fails, as a busbw above
// NVLink does. The seed 004 ib_write_bw pair (testdata/recordings/
// mi355x-seed004) reaches 779.21 Gb/s of the 800 a 400 Gb/s port carries
// both ways, and passes; a copy whose 8 MiB row is doubled (BW and message
// rate, as a tool counting both directions twice would print) fails.
func TestCheckNICAboveLineRate(t *testing.T) {
	const dir = "../../testdata/recordings/mi355x-seed004/multinode/raw/ibperf.write_bw/"
	for _, c := range []struct {
		name  string
		edit  func(string) string
		check result.Check
	}{
		{"seed 004", func(s string) string { return s }, result.Check{Name: "physical ceiling bw_avg", OK: true}},
		{"doubled", func(s string) string {
			return strings.Replace(s, "8388608 20000 779.21 779.21 0.011611", "8388608 20000 1558.42 1558.42 0.023222", 1)
		}, result.Check{Name: "physical ceiling bw_avg", Message: "bw_avg 1558.4 Gb/s at 8 MiB is above the 800 Gb/s ceiling of SKU mi355x (a 400 Gb/s AINIC port, both directions summed): not physically possible"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			var files []string
			for _, f := range []string{"server.0.log", "client.0.log"} {
				data, err := os.ReadFile(dir + f)
				assert.NilError(t, err)
				files = append(files, filepath.Join(out, f))
				assert.NilError(t, os.WriteFile(files[len(files)-1], []byte(c.edit(string(data))), 0o644))
			}
			run, err := Check(context.Background(), builtins, shippedSKU(t, "mi355x"), "ibperf.write_bw", plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}, files, "test")
			assert.NilError(t, err)
			got := run.Tests[0]
			var found *result.Check
			for i := range got.Checks {
				if got.Checks[i].Name == c.check.Name {
					found = &got.Checks[i]
				}
			}
			assert.Assert(t, found != nil, "no %s check: %+v", c.check.Name, got.Checks)
			assert.DeepEqual(t, *found, c.check)
			if !c.check.OK {
				assert.Equal(t, got.Status, result.Fail, got.Message)
				assert.Assert(t, strings.HasPrefix(got.Message, c.check.Name+": "), got.Message)
			}
		})
	}
}
