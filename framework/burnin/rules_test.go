package burnin

import (
	"maps"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// asHost is a copy of run whose points name host h: two real one-GPU
// runs made into one two-node cycle, each board's own numbers kept.
func asHost(run *result.Run, h string) []result.Test {
	var out []result.Test
	for _, t := range run.Tests {
		t.Metrics = append([]result.Judged(nil), t.Metrics...)
		for i, m := range t.Metrics {
			m.Labels = maps.Clone(m.Labels)
			if m.Labels == nil {
				m.Labels = map[string]string{}
			}
			m.Labels["host"] = h
			t.Metrics[i] = m
		}
		out = append(out, t)
	}
	return out
}

// Spread: node "a" is the H200 idle three times over; node "b" the same
// board alternating idle and clock-locked runs (h200x1-2026-12-01/node),
// whose bf16 matmul scatters 20% cycle to cycle: b is flagged, a is not.
// Cycles alternate so that b's median stays inside the drift band only
// where its window holds two idle runs: what spread is for is the GPU
// whose cycles scatter without a trend.
func TestSpread(t *testing.T) {
	h200 := "h200x1-2026-12-01/node/"
	idle := []*result.Run{recorded(t, h200+"node-1", "h200"), recorded(t, h200+"node-2", "h200"), recorded(t, h200+"node-3", "h200")}
	lgc := recorded(t, h200+"lgc", "h200")
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	j := NewJudge(0.5, start) // a wide drift band: this test is about scatter
	for i := range 8 {
		b := idle[i%3]
		if i%2 == 1 {
			b = lgc
		}
		run := &result.Run{Status: result.Pass, Tests: append(asHost(idle[i%3], "a"), asHost(b, "b")...)}
		j.Add(Cycle{N: i + 1, Status: result.Pass, Started: start.Add(time.Duration(i) * time.Minute), Duration: time.Minute}, run)
	}
	flagged := map[string]bool{}
	for _, f := range j.Findings() {
		assert.Equal(t, f.Rule, RuleSpread, f.Message)
		assert.Equal(t, f.Status, result.Warn)
		flagged[f.Host] = true
		if strings.Contains(f.Point, "dtype=bf16") {
			assert.Assert(t, strings.Contains(f.Message, "scatters") && strings.Contains(f.Message, "its 1 peers"), f.Message)
		}
	}
	assert.DeepEqual(t, flagged, map[string]bool{"b": true})
}

// New errors and failed cycles: an XID the telemetry saw fails the
// burn-in naming the GPU and cycle; a cycle that failed is a finding; an
// interrupted cycle is neither judged nor counted.
func TestErrorsAndCycles(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	node := recorded(t, "h200x1-2026-12-01/node/node-1", "h200")
	withXID := *node
	withXID.Tests = append([]result.Test(nil), node.Tests...)
	// The XID line as the telemetry plugin words a new one (the kernel's
	// "NVRM: Xid (PCI:0000:c1:00): 79, GPU has fallen off the bus.").
	withXID.Tests[0].Telemetry = &result.Telemetry{GPUs: []result.GPUTelemetry{{Host: "vm", GPU: "0", Tool: "nvidia-smi", Samples: 30,
		NewErrors: []string{"XID 79: GPU has fallen off the bus"}}}}
	j := NewJudge(DefaultDrift, start)
	j.Add(Cycle{N: 1, Status: result.Pass, Started: start, Duration: time.Minute}, node)
	j.Add(Cycle{N: 2, Status: result.Fail, Message: "gemm.matmul: tflops low", Started: start.Add(time.Minute), Duration: time.Minute}, &withXID)
	j.Add(Cycle{N: 3, Status: result.Error, Interrupted: true, Started: start.Add(2 * time.Minute), Duration: time.Second}, node)
	var got []string
	for _, f := range j.Findings() {
		got = append(got, f.Rule+" "+string(f.Status)+" "+f.Message)
	}
	assert.DeepEqual(t, got, []string{
		"cycle fail cycle 2 fail: gemm.matmul: tflops low",
		"errors fail GPU 0 on vm during gemm.matmul of cycle 2: XID 79: GPU has fallen off the bus",
	})
	rec := &Record{Plan: Plan{Cycles: 3, Drift: DefaultDrift}}
	for _, c := range []Cycle{{N: 1, Status: result.Pass}, {N: 2, Status: result.Fail}, {N: 3, Status: result.Error, Interrupted: true, Dir: "cycle-0003"}} {
		rec.add(c)
	}
	conclude(rec, j)
	assert.Equal(t, rec.Status, result.Fail)
	assert.DeepEqual(t, rec.ByStatus, map[string]int{"pass": 1, "fail": 1, "interrupted": 1})
	assert.DeepEqual(t, rec.Notes, []string{"cycle 3 was interrupted: kept in cycle-0003, not judged"})
	assert.Equal(t, Verdict(rec), "BURN-IN FAIL: 2 cycles judged over 0s (drift band 5%, worst drift 0.0%); 1 cycle, 1 errors")
}

// A long burn-in lists the first cycle, the ones that did not pass (up to
// MaxListed) and the last; the rest are counted, not listed.
func TestListed(t *testing.T) {
	rec := &Record{}
	for n := 1; n <= 1000; n++ {
		st := result.Pass
		if n%3 == 0 {
			st = result.Fail
		}
		rec.add(Cycle{N: n, Status: st})
	}
	assert.Equal(t, rec.Ran, 1000)
	assert.Equal(t, len(rec.Listed), MaxListed+2)
	assert.Equal(t, rec.Listed[0].N, 1)
	assert.Equal(t, rec.Listed[1].N, 3)
	assert.Equal(t, rec.Listed[len(rec.Listed)-1].N, 1000)
	assert.Equal(t, rec.Unlisted, 333-MaxListed)
}
