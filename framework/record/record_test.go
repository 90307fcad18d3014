package record

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/judge"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/plugins/gemm"
	"github.com/gpuaccept/gpuaccept/plugins/hbm"
	"github.com/gpuaccept/gpuaccept/plugins/hostlink"
	"github.com/gpuaccept/gpuaccept/plugins/nccl"
)

func TestBand(t *testing.T) {
	cases := []struct {
		name             string
		values           []float64
		median, fail, wn float64
	}{
		{"one run: the floors", []float64{189.2}, 189.2, 10, 5},
		{"tight runs: the floors", []float64{344.0, 345.0, 346.0, 344.5, 345.5}, 345.0, 10, 5},
		// The eight shipped h200 runs, reduce_scatter in-place at 4 GiB:
		// two clusters (288-296 and 304-309 GB/s), MAD 6.51, sigma 9.65
		// (3.2%): warn 3 sigma -> -10%, fail 6 sigma -> -20%.
		{"h200 reduce_scatter in-place 4 GiB: a wide spread widens the band", []float64{306.955493, 308.848512, 292.553094, 305.928372, 295.500677, 304.093912, 295.777544, 288.365464}, 299.935728, 20, 10},
		// One run 5.3% under the others: warn must start below it.
		{"one slow run widens warn so it does not warn", []float64{307.0, 308.0, 306.0, 307.5, 306.5, 307.2, 290.7, 306.8}, 306.9, 12, 7},
		// noisy: MAD 10 -> sigma 14.8 (14.8% of 100): 3 sigma = 45%, 6 sigma = 89%
		{"wide spread: three and six robust sigmas", []float64{80, 90, 100, 110, 120}, 100, 89, 45},
		{"an odd run far off does not move the median, but must pass", []float64{100, 101, 99, 100, 10}, 100, 96, 91},
		{"a run at zero: the widest floors that can still fail", []float64{100, 0}, 50, 99, 94},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, f, w := Band(c.values, 10, 5)
			assert.Assert(t, math.Abs(m-c.median) < 1e-9, "median %v", m)
			assert.Equal(t, f, c.fail)
			assert.Equal(t, w, c.wn)
			lowest := c.values[0]
			for _, v := range c.values {
				lowest = math.Min(lowest, v)
			}
			if w < 94 {
				assert.Assert(t, lowest >= m*(1-w/100), "the slowest recorded run (%v) is inside warn (%v)", lowest, m*(1-w/100))
			}
		})
	}
}

// curveRun makes a run of nccl.all_reduce at 2x8 whose busbw follows a
// saturating curve to peak, with relative noise.
func curveRun(r *rand.Rand, origin string, peak, noise float64) Sample {
	s := Sample{Origin: origin, Test: "nccl.all_reduce", Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}, Info: map[string]string{"nccl_version": "2.21.5"}}
	for size := int64(8); size <= 8<<30; size *= 2 {
		base := peak * float64(size) / (float64(size) + 64<<20)
		for _, pl := range []string{"out-of-place", "in-place"} {
			v := base * (1 + noise*r.NormFloat64())
			s.Metrics = append(s.Metrics, result.Metric{Name: "busbw", Value: math.Round(v*100) / 100, Unit: "GB/s", Size: size,
				Labels: map[string]string{"placement": pl, "type": "float", "redop": "sum"}})
			s.Metrics = append(s.Metrics, result.Metric{Name: "algbw", Value: v / 1.875, Unit: "GB/s", Size: size, Labels: map[string]string{"placement": pl}})
		}
	}
	return s
}

// Property: a baseline recorded from runs passes every one of those runs,
// whatever their number and spread, and rendered to YAML it reads back the
// same.
func TestRecordedBaselinePassesItsRuns(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for trial := 0; trial < 200; trial++ {
		n := 1 + r.Intn(9)
		noise := []float64{0, 0.005, 0.02, 0.08}[r.Intn(4)]
		peak := 150 + r.Float64()*300
		var runs []Sample
		for i := 0; i < n; i++ {
			runs = append(runs, curveRun(r, fmt.Sprintf("run-%d", i), peak*(1+noise*r.NormFloat64()), noise))
		}
		entries, err := Record(runs, declared(t))
		if err != nil && noise >= 0.08 && strings.Contains(err.Error(), "record from good runs only") {
			// 8% noise can spread a point past MaxFloor: refused, as a
			// band that wide would pass a degraded node.
			continue
		}
		assert.NilError(t, err)
		assert.Equal(t, len(entries), 2, "one entry per placement")
		file := "sku: p\nbaselines:\n" + Render(entries)
		s, err := sku.Parse([]byte(file), "p.yaml")
		assert.NilError(t, err, file)
		for _, run := range runs {
			got := judge.Test(result.Parsed{Metrics: run.Metrics}, s.Entries(run.Test, run.Scope), "")
			assert.Equal(t, got.Status, result.Pass, "trial %d, %d runs, noise %v, %s: %s", trial, n, noise, run.Origin, got.Message)
		}
		// Runs that agree to 2% make a baseline that fails a node at
		// half their speed.
		if noise <= 0.02 {
			slow := curveRun(r, "slow", peak/2, 0)
			got := judge.Test(result.Parsed{Metrics: slow.Metrics}, s.Entries("nccl.all_reduce", plan.Scope{Nodes: 2, GPUsPerNode: 8}), "")
			assert.Equal(t, got.Status, result.Fail, "trial %d: a run at half the speed must fail: %s", trial, got.Message)
		}
	}
}

func TestRecordLeavesOutLatencyBoundSizes(t *testing.T) {
	entries, err := Record([]Sample{curveRun(rand.New(rand.NewSource(2)), "one", 189, 0)}, declared(t))
	assert.NilError(t, err)
	e := entries[0]
	assert.DeepEqual(t, e.Labels, map[string]string{"placement": "out-of-place"})
	// base = peak*s/(s+64M): half the peak at 64 MiB.
	assert.Equal(t, e.Points[0].Size, sku.Size(64<<20))
	assert.Equal(t, e.Points[len(e.Points)-1].Size, sku.Size(8<<30))
	// 64 MiB..128 MiB are under 80% of the peak: the steep floors.
	assert.Equal(t, e.Points[0].Band.Min.Text, "-15%")
	assert.Equal(t, e.Points[len(e.Points)-1].Band.IsZero(), true, "plateau points use the entry's band")
	assert.Equal(t, bandText(e.Band), `min: "-10%", warn_min: "-5%", warn_max: "+50%"`)
	assert.Assert(t, strings.HasPrefix(e.Source, "values of one run of nccl.all_reduce at 2x8, band: the floors"), e.Source)
	assert.Assert(t, strings.Contains(e.Source, "one (nccl_version 2.21.5)"), e.Source)
}

func writeResults(t *testing.T, run result.Run) string {
	dir := t.TempDir()
	data, err := json.Marshal(run)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(filepath.Join(dir, layout.Results), data, 0o644))
	return dir
}

func TestLoad(t *testing.T) {
	metrics := []result.Judged{{Metric: result.Metric{Name: "busbw", Value: 189.2, Unit: "GB/s", Size: 8 << 30}, Status: result.Pass},
		{Metric: result.Metric{Name: "busbw", Value: 189.2, Unit: "GB/s", Size: 8 << 30}, Status: result.Pass, Summary: "peak"}}
	good := result.Run{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}, Started: time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC), Hosts: []string{"n1", "n2"},
		Tests: []result.Test{{Name: "nccl.all_reduce", Status: result.Fail, Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}, Metrics: metrics, Commands: []string{"mpirun ..."}},
			{Name: "nccl.hypercube", Status: result.Skip, Message: "no baseline yet"}}}
	ss, err := Load(writeResults(t, good))
	assert.NilError(t, err)
	assert.Equal(t, len(ss), 1, "a test listed but not run is left out")
	assert.Equal(t, ss[0].Scope, plan.Scope{Nodes: 2, GPUsPerNode: 8})
	assert.Equal(t, len(ss[0].Metrics), 1, "a summary is computed, not measured: not recorded")
	cases := []struct {
		name string
		edit func(*result.Run)
		want string
	}{
		{"errored test", func(r *result.Run) { r.Tests[0].Status, r.Tests[0].Message = result.Error, "truncated" }, "test nccl.all_reduce ended in error (truncated): record only good runs"},
		{"wrong data", func(r *result.Run) {
			r.Tests[0].Checks = []result.Check{{Name: "data validation", Message: "#wrong 3"}}
		}, "test nccl.all_reduce failed its data validation check (#wrong 3)"},
		{"no scope", func(r *result.Run) { r.Scope, r.Tests[0].Scope = plan.Scope{}, plan.Scope{} }, `test nccl.all_reduce: scope 0x0: nodes 0: want 1 to 131072`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var run result.Run
			data, _ := json.Marshal(good)
			assert.NilError(t, json.Unmarshal(data, &run))
			c.edit(&run)
			dir := writeResults(t, run)
			_, err := Load(dir)
			assert.ErrorContains(t, err, filepath.Join(dir, layout.Results)+": "+c.want)
		})
	}
	// A scope that is no scope does not decode: the file is malformed.
	dir := writeResults(t, good)
	p := filepath.Join(dir, layout.Results)
	data, err := os.ReadFile(p)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(p, bytes.Replace(data, []byte(`"scope":"2x8"`), []byte(`"scope":"2by8"`), 1), 0o644))
	_, err = Load(dir)
	assert.Error(t, err, "read "+p+`: scope "2by8": want NODESxGPUS, e.g. 2x8`)
	_, err = Load(t.TempDir())
	assert.ErrorContains(t, err, "record takes folders written by gpuaccept run or gpuaccept check --out")
}

const skuFile = `# header comment kept
sku: x
gpu: A100
suites:
  multinode:
    nodes: 2
    tests:
      - test: nccl.all_reduce
baselines:
  # The last recording (each entry's source names its own runs), 2026-11-30:
  # gpuaccept baseline record --sku x runs/old
  # why the 2x8 curve: kept above the entries that replace it
  - test: nccl.all_reduce
    scope: {nodes: 2, gpus_per_node: 8}
    metric: busbw
    unit: GB/s
    labels: {placement: out-of-place}
    band: {min: "-10%"}
    ceiling: 200
    source: seed 000
    points:
      - {size: 8G, value: 189.2}
  - test: nccl.all_reduce
    scope: {nodes: 2, gpus_per_node: 8}
    metric: busbw
    unit: GB/s
    labels: {placement: out-of-place}
    summary: peak
    value: 189.2
    band: {min: "-10%"}
    source: seed 000

  # the 1x8 entry's citation, by hand: a recording keeps it
  - test: nccl.all_reduce
    scope: {nodes: 1, gpus_per_node: 8}
    metric: busbw
    unit: GB/s
    band: {min: ">= 200 GB/s"}
    source: other
    value: 230
`

func TestMerge(t *testing.T) {
	entries, err := Record([]Sample{curveRun(rand.New(rand.NewSource(3)), "r1", 190, 0.01), curveRun(rand.New(rand.NewSource(4)), "r2", 190, 0.01)}, declared(t))
	assert.NilError(t, err)
	note := Note(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC), "gpuaccept baseline record --sku x r1 r2")
	out, err := Merge([]byte(skuFile), "x.yaml", entries, note)
	assert.NilError(t, err)
	text := string(out)
	assert.Assert(t, strings.HasPrefix(text, "# header comment kept\nsku: x\n"), text)
	assert.Assert(t, strings.Contains(text, "baselines:\n  # The last recording (each entry's source names its own runs), 2026-12-07:\n  # gpuaccept baseline record --sku x r1 r2\n  # why the 2x8 curve: kept above the entries that replace it\n  - test: nccl.all_reduce\n"), text)
	assert.Assert(t, !strings.Contains(text, "runs/old"), "the previous recording's note is replaced:\n%s", text)
	assert.Assert(t, strings.Contains(text, "    source: seed 000\n\n  # the 1x8 entry's citation, by hand: a recording keeps it\n  - test: nccl.all_reduce\n    scope: {nodes: 1, gpus_per_node: 8}\n"), text)
	s, err := sku.Parse(out, "x.yaml")
	assert.NilError(t, err)
	assert.Equal(t, len(s.Baselines), 4, "2 recorded + the summary + the other scope")
	assert.Equal(t, s.Baselines[0].Labels["placement"], "out-of-place")
	assert.Equal(t, s.Baselines[0].Ceiling, 200.0, "the ceiling carries over")
	assert.Equal(t, s.Baselines[2].Summary, "peak", "summary entries stay")
	assert.Equal(t, s.Baselines[3].Scope, plan.Scope{Nodes: 1, GPUsPerNode: 8})
	// Merging the same entries again changes nothing.
	again, err := Merge(out, "x.yaml", entries, note)
	assert.NilError(t, err)
	assert.Equal(t, string(again), text)
}

func TestDiff(t *testing.T) {
	old, err := sku.Parse([]byte(skuFile), "old.yaml")
	assert.NilError(t, err)
	newText := strings.Replace(strings.Replace(skuFile, "{size: 8G, value: 189.2}", "{size: 4G, value: 188.3}\n      - {size: 8G, value: 170.0, band: {min: \"-12%\"}}", 1),
		"    source: other\n    value: 230\n", "    source: other\n    value: 230\n", 1)
	newText = strings.Replace(newText, "  - test: nccl.all_reduce\n    scope: {nodes: 1, gpus_per_node: 8}", "  - test: nccl.all_gather\n    scope: {nodes: 1, gpus_per_node: 8}", 1)
	nw, err := sku.Parse([]byte(newText), "new.yaml")
	assert.NilError(t, err)
	ch, same := Diff(old, nw)
	var b strings.Builder
	assert.NilError(t, WriteDiff(&b, ch, same))
	out := b.String()
	for _, want := range []string{
		"nccl.all_reduce 2x8 busbw placement=out-of-place  4 GiB  -            188.30 GB/s          added",
		"nccl.all_reduce 2x8 busbw placement=out-of-place  8 GiB  189.20 GB/s  170.00 GB/s  -10.1%  min -10% -> -12%",
		"nccl.all_reduce 1x8 busbw                         -      -            -                    entry removed (1 value)",
		"nccl.all_gather 1x8 busbw                         -      -            -                    entry added (1 value)",
		"4 changes; 1 value moved, the most by -10.1%; 1 value unchanged (not listed)",
	} {
		assert.Assert(t, strings.Contains(out, want), "missing %q in\n%s", want, out)
	}
	b.Reset()
	ch, same = Diff(old, old)
	assert.NilError(t, WriteDiff(&b, ch, same))
	assert.Equal(t, b.String(), "no differences; 3 values unchanged\n")
}

func TestRecordRejectsBadOptions(t *testing.T) {
	runs := []Sample{curveRun(rand.New(rand.NewSource(5)), "r", 189, 0)}
	for _, edit := range []func(*Options){
		func(o *Options) { o.Fail = 150 },
		func(o *Options) { o.Warn = 12 },
		func(o *Options) { o.SteepWarn = 0 },
		func(o *Options) { o.WarnMax = -5 },
		func(o *Options) { o.MinFraction = 2 },
	} {
		o := declared(t)
		edit(&o)
		_, err := Record(runs, o)
		assert.ErrorContains(t, err, "record: ")
	}
}

// The header describes the recording that wrote the file: a second
// recording replaces the first one's block, and the author's text stays.
func TestProvenance(t *testing.T) {
	day := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	r1 := Sample{Origin: "runs/a/nccl.all_reduce", Run: "runs/a", Test: "nccl.all_reduce", Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}, Started: day, Info: map[string]string{"gpu": "NVIDIA H200", "nccl_version": "2.28.9"}, Commands: []string{"all_reduce_perf -b 8"}}
	r1b := r1
	r1b.Origin, r1b.Test = "runs/a/nccl.all_gather", "nccl.all_gather"
	r2 := r1
	r2.Origin, r2.Run, r2.Started = "runs/b/nccl.all_reduce", "runs/b", day.AddDate(0, 0, 1)
	first := SetProvenance([]byte(skuFile), Provenance([]Sample{r1, r1b, r2}, "gpuaccept baseline record --sku x runs/a runs/b", day))
	want := `# --- recorded by gpuaccept baseline record; this block is rewritten at each recording ---
# Recorded 2026-11-30 from 2 runs of nccl.all_gather at 1x2, nccl.all_reduce at 1x2.
# Runs:
#   runs/a (2026-11-30, NVIDIA H200, nccl_version 2.28.9)
#   runs/b (2026-12-01, NVIDIA H200, nccl_version 2.28.9)
# Command: gpuaccept baseline record --sku x runs/a runs/b
# --- end of recording ---
#
# header comment kept
sku: x
`
	assert.Assert(t, strings.HasPrefix(string(first), want), string(first))
	second := SetProvenance(first, Provenance([]Sample{r2}, "gpuaccept baseline record --sku x runs/b", day.AddDate(0, 0, 2)))
	want2 := `# --- recorded by gpuaccept baseline record; this block is rewritten at each recording ---
# Recorded 2026-12-02 from 1 run of nccl.all_reduce at 1x2.
# Runs:
#   runs/b (2026-12-01, NVIDIA H200, nccl_version 2.28.9)
# Command: gpuaccept baseline record --sku x runs/b
# --- end of recording ---
#
# header comment kept
sku: x
`
	assert.Assert(t, strings.HasPrefix(string(second), want2), string(second))
	assert.Equal(t, strings.Count(string(second), "--- end of recording ---"), 1)
	_, err := sku.Parse(second, "x.yaml")
	assert.NilError(t, err)
}

// A time is better lower: the band formula's floors would pass any
// slowdown, so record refuses to record one.
func TestRecordRefusesTimes(t *testing.T) {
	s := Sample{Origin: "r", Test: "nccl.all_reduce", Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}
	for size := int64(1 << 20); size <= 1<<30; size *= 2 {
		s.Metrics = append(s.Metrics, result.Metric{Name: "time", Value: float64(size) / 3e5, Unit: "us", Size: size, Labels: map[string]string{"placement": "out-of-place"}})
	}
	o := declared(t)
	o.Metrics = []string{"time"}
	_, err := Record([]Sample{s}, o)
	assert.Error(t, err, "record: time of nccl.all_reduce in us is better lower, as its plugin declares; record derives floors, for a metric better higher: write its entry by hand with max/warn_max (baselines/README.md)")
	// A metric whose plugin says neither is no floor's to guess.
	o.Meanings = nil
	_, err = Record([]Sample{s}, o)
	assert.Error(t, err, "record: time of nccl.all_reduce in us: its plugin does not declare it better higher (pluginapi.MetricInfo.Better); record derives floors only for such a metric: write its entry by hand (baselines/README.md)")
}

// Points measured in cycles (nccl-tests -N 20) are recorded by their
// Value, the worst cycle's, which is what check judges; their Median would
// make a baseline that the same runs' worst cycles warn against.
func TestRecordCyclesUsesTheWorst(t *testing.T) {
	var runs []Sample
	for i, worst := range []float64{300, 310, 320} {
		runs = append(runs, Sample{Origin: fmt.Sprintf("run-%d", i), Test: "nccl.all_reduce", Scope: plan.Scope{Nodes: 1, GPUsPerNode: 8},
			Metrics: []result.Metric{{Name: "busbw", Value: worst, Unit: "GB/s", Size: 1 << 30, Labels: map[string]string{"placement": "out-of-place"},
				Cycles: 20, Min: worst, Median: worst + 40, Max: worst + 45}}})
	}
	entries, err := Record(runs, declared(t))
	assert.NilError(t, err)
	assert.Equal(t, len(entries), 1)
	assert.Equal(t, entries[0].Points[0].Value, 310.0, "the median of the runs' worst cycles")
	assert.Assert(t, strings.Contains(entries[0].Source, "each run's value per size the worst of its cycles (up to 20)"), entries[0].Source)
	s, err := sku.Parse([]byte("sku: p\nbaselines:\n"+Render(entries)), "p.yaml")
	assert.NilError(t, err)
	for _, run := range runs {
		got := judge.Test(result.Parsed{Metrics: run.Metrics}, s.Entries(run.Test, run.Scope), "")
		assert.Equal(t, got.Status, result.Pass, "%s: %s", run.Origin, got.Message)
	}
}

// The H200 node suite's recordings (testdata/recordings/h200x1-2026-12-01/
// node/README.md): three healthy runs give one value per dtype, op and
// direction, the GPUs pooled; a busy and a clock-locked run among them
// spread the band past MaxFloor and are refused, naming the values; a
// metric the runs do not have names the ones they do.
func TestRecordNodeSuite(t *testing.T) {
	const rec = "../../testdata/recordings/h200x1-2026-12-01/node/"
	load := func(runs ...string) []Sample {
		var out []Sample
		for _, r := range runs {
			ss, err := Load(rec + r)
			assert.NilError(t, err)
			out = append(out, ss...)
		}
		return out
	}
	opt := declared(t)
	opt.Metrics = []string{"tflops", "bw"}
	opt.Instance = map[string][]string{"gemm.matmul": {"gpu", "host"}, "hbm.bandwidth": {"gpu", "host"}, "hostlink.pcie": {"gpu", "host"}}
	entries, err := Record(load("node-1", "node-2", "node-3"), opt)
	assert.NilError(t, err)
	byKey := map[string]*sku.Entry{}
	for _, e := range entries {
		byKey[e.Test+" "+sku.LabelText(e.Labels)] = e
	}
	assert.Equal(t, len(entries), 9, "5 dtypes, 2 HBM ops, 2 PCIe directions")
	bf16 := byKey["gemm.matmul dtype=bf16"]
	assert.Assert(t, bf16 != nil && bf16.Value != nil, "%v", byKey)
	assert.Equal(t, *bf16.Value, 742.78, "median of 730.25, 742.78, 744.10")
	assert.Equal(t, bf16.Band.Min.Text, "-10%")
	assert.Equal(t, len(byKey["hbm.bandwidth op=copy"].Points), 1, "per size: the 1 GiB array")

	_, err = Record(load("node-1", "busy", "lgc"), opt)
	assert.ErrorContains(t, err, "record from good runs only")
	assert.ErrorContains(t, err, "of gemm.matmul at 1x1: the runs spread so far apart")

	// No --metric: each test's plugin declares what it records by
	// default (gemm's tflops, hbm's and hostlink's bw), and the Instance
	// labels too: the same 9 entries.
	byDefault, err := Record(load("node-1", "node-2", "node-3"), declared(t))
	assert.NilError(t, err)
	assert.DeepEqual(t, Render(byDefault), Render(entries))

	opt.Metrics = []string{"busbw"}
	_, err = Record(load("node-1"), opt)
	assert.ErrorContains(t, err, "record: no run measured busbw; the runs measured bw, tflops: choose with --metric")
	_, err = Record(load("node-1"), DefaultOptions())
	assert.ErrorContains(t, err, "record: the plugins of the runs' tests declare no metric recorded by default; the runs measured bw, tflops: choose with --metric")
}

// declared returns DefaultOptions with what the built-in plugins declare
// of their tests' metrics (pluginapi.MetricInfo), as baseline record sets
// them from the plugin host (runner.MeaningsOf, runner.InstanceLabels).
func declared(t testing.TB) Options {
	t.Helper()
	o := DefaultOptions()
	o.Meanings = map[string][]result.Meaning{}
	o.Instance = map[string][]string{}
	for _, p := range []pluginapi.Plugin{nccl.Plugin{}, gemm.Plugin{}, hbm.Plugin{}, hostlink.Plugin{}} {
		d, err := p.Describe(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range d.Tests {
			o.Meanings[d.Name+"."+ti.Name] = ti.Meanings()
			for _, m := range ti.Metrics {
				o.Instance[d.Name+"."+ti.Name] = append(o.Instance[d.Name+"."+ti.Name], m.InstanceLabels...)
			}
		}
	}
	return o
}

// --basis: golden is the default, written as no basis; reference is
// written; anything else is refused naming the flag.
func TestParseBasis(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"", "", ""}, {"golden", "", ""}, {"reference", "reference", ""},
		{"floor", "", `baseline record: --basis "floor": want golden or reference`},
	} {
		got, err := ParseBasis(c.in)
		if c.err != "" {
			assert.Error(t, err, c.err)
			continue
		}
		assert.NilError(t, err)
		assert.Equal(t, got, c.want)
	}
}

// A carriage return in the recording's command (a run folder named with
// one) is a line break to YAML: it must not end a comment and smuggle an
// entry into the file. Every line of the note and the provenance stays a
// comment, and the file holds the entries it held.
func TestNoteCarriageReturn(t *testing.T) {
	smuggle := "runs/r\r  - {test: nccl.all_reduce, scope: {nodes: 1, gpus_per_node: 8}, metric: busbw, unit: GB/s, source: smuggled, value: 1}\r  #"
	entries, err := Record([]Sample{curveRun(rand.New(rand.NewSource(3)), "r1", 190, 0.01), curveRun(rand.New(rand.NewSource(4)), "r2", 190, 0.01)}, declared(t))
	assert.NilError(t, err)
	out, err := Merge([]byte(skuFile), "x.yaml", entries, Note(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC), "gpuaccept baseline record "+smuggle))
	assert.NilError(t, err)
	out = SetProvenance(out, "Command: gpuaccept baseline record "+smuggle)
	assert.Assert(t, !bytes.Contains(out, []byte("\r")))
	s, err := sku.Parse(out, "x.yaml")
	assert.NilError(t, err)
	for _, e := range s.Baselines {
		assert.Assert(t, e.Source != "smuggled", "an entry was smuggled in:\n%s", out)
	}
	assert.Equal(t, len(s.Baselines), 4)
}
