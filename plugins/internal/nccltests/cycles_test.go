package nccltests

import (
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/judge"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// exactMedian is the median by sorting every value.
func exactMedian(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if n := len(v); n%2 == 1 {
		return v[n/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func TestStats(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	noisy := func(n int, f func() float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = f()
		}
		return v
	}
	for _, c := range []struct {
		name      string
		values    []float64
		estimated bool
		nonFinite int
	}{
		{"one", []float64{344.03}, false, 0},
		{"odd", []float64{69.12, 63.48, 69.31}, false, 0},
		{"even: mean of the middle two", []float64{1, 4, 2, 3}, false, 0},
		{"nan and inf counted apart", []float64{5, math.NaN(), 7, math.Inf(1), 6}, false, 2},
		{"exact up to the limit", noisy(statsExactMax, func() float64 { return 340 + 5*r.NormFloat64() }), false, 0},
		{"busbw noise past the limit: estimated", noisy(20001, func() float64 { return 340 + 5*r.NormFloat64() }), true, 0},
		{"a slow tenth past the limit", noisy(5000, func() float64 {
			if r.Intn(10) == 0 {
				return 30 + r.Float64()
			}
			return 340 + r.Float64()
		}), true, 0},
		{"zeros and small values past the limit", noisy(3001, func() float64 { return float64(r.Intn(3)) * 0.01 }), true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s Stats
			var finite []float64
			for _, v := range c.values {
				s.Add(v)
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					finite = append(finite, v)
				}
			}
			assert.Equal(t, s.N, len(finite))
			assert.Equal(t, s.NonFinite, c.nonFinite)
			assert.Equal(t, s.Min, slices.Min(finite))
			assert.Equal(t, s.Max, slices.Max(finite))
			assert.Equal(t, s.Estimated(), c.estimated)
			want := exactMedian(finite)
			if !c.estimated {
				assert.Equal(t, s.Median(), want)
				return
			}
			assert.Assert(t, math.Abs(s.Median()-want) <= statsRelErr*math.Abs(want)+1e-12,
				"median %v, exact %v: off by more than %g", s.Median(), want, statsRelErr)
		})
	}
}

// Stats' memory is bounded whatever the values: a million values, half of
// them spread over 600 decades, keep at most statsBucketsMax buckets, and
// the median, among the other half (busbw-like, 300..310), stays within
// the bound, as merging buckets never reaches it.
func TestStatsBounded(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	var s Stats
	var all []float64
	for i := range 1000000 {
		v := math.Pow(10, 600*r.Float64()-300)
		if i%2 == 0 {
			v = 300 + 10*r.Float64()
		}
		s.Add(v)
		all = append(all, v)
	}
	assert.Assert(t, len(s.hist) <= statsBucketsMax, "%d buckets", len(s.hist))
	assert.Assert(t, s.exact == nil)
	want := exactMedian(all)
	assert.Assert(t, want > 300 && want < 310, "exact median %v", want)
	assert.Assert(t, math.Abs(s.Median()-want) <= statsRelErr*want, "median %v, exact %v", s.Median(), want)
}

// cyclesBaseline is a baseline of all_reduce at 1x2 with a point at 1 MiB,
// the largest size of cycles3.txt: 69 GB/s out-of-place, -10%.
const cyclesBaseline = `sku: t
baselines:
  - test: nccl.all_reduce
    scope: {nodes: 1, gpus_per_node: 2}
    metric: busbw
    unit: GB/s
    labels: {placement: out-of-place}
    band: {min: "-10%"}
    source: "cycles3.txt's median at 1 MiB, rounded"
    points:
      - {size: 1M, value: 69}
`

// TestCycles judges the real -N 3 output (cycles3.txt: nccl-tests 2.19.6
// on 2 x H200, the sweep 1 KiB..1 MiB printed three times) and a degraded
// copy whose third cycle is slow at 1 MiB (its out-of-place busbw and
// algbw 63.48 edited to 31.74, half): each size is one point of three
// cycles, judged on the worst, so the degraded copy fails although its
// median (the healthy 69.12) passes.
func TestCycles(t *testing.T) {
	real := string(ntTestdata(t, "h200x2-variants/cycles3.txt"))
	const slowRow = "     1048576        262144     float     sum      -1    16.52   63.48   63.48       0    17.65   59.41   59.41       0\n"
	assert.Equal(t, strings.Count(real, slowRow), 1)
	degraded := strings.Replace(real, slowRow, "     1048576        262144     float     sum      -1    33.04   31.74   31.74       0    17.65   59.41   59.41       0\n", 1)
	s, err := sku.Parse([]byte(cyclesBaseline), "t.yaml")
	assert.NilError(t, err)
	type point struct {
		name, placement     string
		value, min, med, mx float64
	}
	for _, c := range []struct {
		name   string
		log    string
		points []point
		status result.Status
	}{
		{"real -N 3", real, []point{
			{"busbw", "out-of-place", 63.48, 63.48, 69.12, 69.31},
			{"busbw", "in-place", 59.41, 59.41, 69.89, 72.55},
			{"time", "out-of-place", 16.52, 15.13, 15.17, 16.52},
		}, result.Pass},
		{"third cycle slow at 1 MiB", degraded, []point{
			{"busbw", "out-of-place", 31.74, 31.74, 69.12, 69.31},
			{"algbw", "out-of-place", 31.74, 31.74, 69.12, 69.31},
			{"time", "out-of-place", 33.04, 15.13, 15.17, 33.04},
		}, result.Fail},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "all_reduce.log")
			assert.NilError(t, os.WriteFile(path, []byte(c.log), 0o644))
			p := Result(plan.Output{Log: path}, Options{Test: "all_reduce", Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}})
			assert.Equal(t, p.Error, "")
			for _, want := range c.points {
				var got []result.Metric
				for _, m := range p.Metrics {
					if m.Name == want.name && m.Size == 1<<20 && m.Labels["placement"] == want.placement {
						got = append(got, m)
					}
				}
				assert.Equal(t, len(got), 1, "%s %s: one point for the three cycles", want.name, want.placement)
				m := got[0]
				assert.Equal(t, m.Cycles, 3)
				assert.Equal(t, m.Labels["cycle"], "")
				assert.DeepEqual(t, []float64{m.Value, m.Min, m.Median, m.Max}, []float64{want.value, want.min, want.med, want.mx})
			}
			assert.Equal(t, len(p.Metrics), 6*2*3+1, "6 sizes x 2 placements x busbw, algbw, time, and avg_busbw")
			got := judge.Test(p, s.Entries("nccl.all_reduce", plan.Scope{Nodes: 1, GPUsPerNode: 2}), "")
			assert.Equal(t, got.Status, c.status, got.Message)
			if c.status == result.Fail {
				assert.Assert(t, strings.Contains(got.Message, "31.7"), got.Message)
			}
		})
	}
}

// The notes on cycles: how many there were, and a warning when the last
// cycle of the real -N 3 output is cut after its 64 KiB row (the
// 256 KiB and 1 MiB rows of the third cycle removed, the footer kept).
func TestCycleNotes(t *testing.T) {
	real := string(ntTestdata(t, "h200x2-variants/cycles3.txt"))
	lines := strings.SplitAfter(real, "\n")
	assert.Assert(t, strings.HasPrefix(strings.TrimSpace(lines[27]), "262144 ") && strings.HasPrefix(strings.TrimSpace(lines[28]), "1048576 "))
	cut := strings.Join(append(slices.Clone(lines[:27]), lines[29:]...), "")
	for _, c := range []struct {
		name   string
		log    string
		cycles int // of the 1 MiB points
		notes  []result.Diagnostic
	}{
		{"real -N 3", real, 3, []result.Diagnostic{
			{Level: result.Info, Message: "each size was measured in up to 3 cycles: judged on the worst cycle (lowest bandwidth, highest time)"}}},
		{"third cycle cut short", cut, 2, []result.Diagnostic{
			{Level: result.Info, Message: "each size was measured in up to 3 cycles: judged on the worst cycle (lowest bandwidth, highest time)"},
			{Level: result.Warning, Message: "some sizes were measured in 2 cycle(s), others in 3: a cycle cut short, or runs of different sweeps in one log"}}},
		{"one cycle: no note", string(ntTestdata(t, "h200x2-2.19.6/all_reduce.txt")), 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "all_reduce.log")
			assert.NilError(t, os.WriteFile(path, []byte(c.log), 0o644))
			p := Result(plan.Output{Log: path}, Options{Test: "all_reduce"})
			assert.DeepEqual(t, p.Diagnostics, c.notes)
			for _, m := range p.Metrics {
				if m.Size == 1<<20 {
					assert.Equal(t, m.Cycles, c.cycles, m.Key())
				}
			}
		})
	}
}
