package report

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/plugins/gemm"
	"github.com/gpuaccept/gpuaccept/plugins/hbm"
	"github.com/gpuaccept/gpuaccept/plugins/hostlink"
	"github.com/gpuaccept/gpuaccept/plugins/ibperf"
	"github.com/gpuaccept/gpuaccept/plugins/nccl"
)

// declare gives each test of run that holds no meanings (the recorded
// runs were made before plugins declared them) what the built-in plugin
// of the test declares today, as a run made now keeps them
// (runner.Meanings): the plot and headline read only these.
func declare(t testing.TB, run *result.Run) *result.Run {
	t.Helper()
	meanings := map[string][]result.Meaning{}
	for _, p := range []pluginapi.Plugin{nccl.Plugin{}, gemm.Plugin{}, hbm.Plugin{}, hostlink.Plugin{}, ibperf.Plugin{}} {
		d, err := p.Describe(context.Background())
		assert.NilError(t, err)
		for _, ti := range d.Tests {
			meanings[d.Name+"."+ti.Name] = ti.Meanings()
		}
	}
	for i := range run.Tests {
		if run.Tests[i].Meanings == nil {
			run.Tests[i].Meanings = meanings[testName(run.Tests[i].Name)]
		}
	}
	return run
}

// What is drawn is what the plugin declares: a metric in a unit the
// framework never saw (tokens/s) is drawn as its plugin says, a bar per
// label set, its baseline reference over it; a test whose plugin declares
// nothing drawable is not drawn at all, whatever its units.
func TestPlotFollowsDeclarations(t *testing.T) {
	ref := 1450.0
	tokens := result.Meaning{Name: "tokens", Unit: "tokens/s", Better: result.BetterHigher, Plot: result.PlotLabels, Record: true}
	ms := []result.Judged{
		{Metric: result.Metric{Name: "tokens", Value: 1502.5, Unit: "tokens/s", Labels: map[string]string{"model": "llama-8b"}}, Status: result.Pass, Expected: &ref},
		{Metric: result.Metric{Name: "tokens", Value: 610.0, Unit: "tokens/s", Labels: map[string]string{"model": "llama-70b"}}, Status: result.Fail},
		{Metric: result.Metric{Name: "step_time", Value: 0.8, Unit: "s", Size: 1 << 20}},
	}
	for _, c := range []struct {
		name     string
		meanings []result.Meaning
		metrics  []string
		kinds    []result.Plot
		curves   [][]string
	}{
		{"labels", []result.Meaning{tokens}, []string{"tokens"}, []result.Plot{result.PlotLabels}, [][]string{{"tokens {model=llama-8b}", "tokens {model=llama-70b}"}}},
		{"a curve declared beside it, not recorded", []result.Meaning{{Name: "step_time", Unit: "s", Better: result.BetterLower, Plot: result.PlotCurve}, tokens},
			[]string{"tokens"}, []result.Plot{result.PlotLabels}, [][]string{{"tokens {model=llama-8b}", "tokens {model=llama-70b}"}}},
		{"only the curve drawable", []result.Meaning{{Name: "step_time", Unit: "s", Better: result.BetterLower, Plot: result.PlotCurve}, {Name: "tokens", Unit: "tokens/s"}},
			[]string{"step_time"}, []result.Plot{result.PlotCurve}, [][]string{{"step_time"}}},
		{"nothing declared", nil, nil, nil, nil},
		{"declared, not drawn", []result.Meaning{{Name: "tokens", Unit: "tokens/s", Better: result.BetterHigher}}, nil, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			figs, err := Plot(result.Test{Name: "train.step", Metrics: ms, Meanings: c.meanings}, nil)
			assert.NilError(t, err)
			var metrics []string
			var kinds []result.Plot
			var curves [][]string
			for _, f := range figs {
				metrics, kinds, curves = append(metrics, f.Metric), append(kinds, f.Kind), append(curves, f.Curves)
				assert.Assert(t, len(f.SVG) > 0 && string(f.SVG[:4]) == "<svg")
			}
			assert.DeepEqual(t, metrics, c.metrics)
			assert.DeepEqual(t, kinds, c.kinds)
			assert.DeepEqual(t, curves, c.curves)
			if len(figs) > 0 && figs[0].Kind == result.PlotLabels {
				assert.Equal(t, figs[0].Unit, "tokens/s")
				assert.Equal(t, figs[0].Bands, 1, "the one judged value's reference")
			}
		})
	}
}

// A real run's labelled values (the H200 node suite's gemm.matmul: one
// tflops per dtype on GPU 0, and hbm's bw at one size) are drawn as their
// plugins declare them: gemm's a bar per label set, hbm's a curve.
func TestPlotRealNodeRun(t *testing.T) {
	data, err := os.ReadFile("../../testdata/recordings/h200x1-2026-12-01/node/node-1/results.json")
	assert.NilError(t, err)
	var run result.Run
	assert.NilError(t, json.Unmarshal(data, &run))
	declare(t, &run)
	kinds := map[string]result.Plot{}
	bars := map[string]int{}
	for _, te := range run.Tests {
		figs, err := Plot(te, nil)
		assert.NilError(t, err)
		for _, f := range figs {
			kinds[te.Name+" "+f.Metric] = f.Kind
			bars[te.Name+" "+f.Metric] = len(f.Curves)
		}
	}
	assert.DeepEqual(t, kinds, map[string]result.Plot{"gemm.matmul tflops": result.PlotLabels, "hbm.bandwidth bw": result.PlotCurve, "hostlink.pcie bw": result.PlotLabels})
	assert.Equal(t, bars["gemm.matmul tflops"], 5, "one bar per dtype measured")
}

// The headline of a run nothing judged is the metric its plugin records by
// default, at its largest size, the worse of a tie by its declared
// direction: the higher of two times, the lower of two rates.
func TestUnjudgedHeadlineFollowsDeclarations(t *testing.T) {
	pt := func(name string, size int64, v float64, placement string) result.Judged {
		return result.Judged{Metric: result.Metric{Name: name, Unit: "u", Size: size, Value: v, Labels: map[string]string{"placement": placement}}, Status: result.Skip}
	}
	ms := []result.Judged{pt("time", 1<<20, 5, "out-of-place"), pt("time", 1<<30, 10, "out-of-place"), pt("time", 1<<30, 20, "in-place"),
		pt("rate", 1<<30, 300, "out-of-place"), pt("rate", 1<<30, 280, "in-place")}
	for _, c := range []struct {
		name     string
		meanings []result.Meaning
		metric   string
		value    float64
	}{
		{"nothing declared: the first measured, the lower", nil, "time", 10},
		{"a time better lower: the higher", []result.Meaning{{Name: "time", Better: result.BetterLower}}, "time", 20},
		{"the recorded rate: the lower", []result.Meaning{{Name: "time", Better: result.BetterLower}, {Name: "rate", Better: result.BetterHigher, Record: true}}, "rate", 280},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, ok := unjudgedHeadline(ms, c.meanings)
			assert.Assert(t, ok)
			assert.Equal(t, h.Name, c.metric)
			assert.Equal(t, h.Value, c.value)
		})
	}
}

// A training run (this project's H100, issue 32: trainbench.py, 30 steps
// on one GPU) draws its judged figures as bars and its per-step tokens/s
// over the steps beside them: a step series is drawn even where a baseline
// judges other metrics.
func TestPlotStepsRealTrainingRun(t *testing.T) {
	data, err := os.ReadFile("../../testdata/recordings/h100x1-2026-12-07/issue32/train-4/results.json")
	assert.NilError(t, err)
	var run result.Run
	assert.NilError(t, json.Unmarshal(data, &run))
	var test result.Test
	for _, x := range run.Tests {
		if x.Name == "train.gpu" {
			test = x
		}
	}
	assert.Equal(t, test.Name, "train.gpu")
	// The run predates the step series: add each step's tokens/s as the
	// plugin reports it now, from the run's raw output.
	raw, err := os.ReadFile("../../testdata/recordings/h100x1-2026-12-07/issue32/train-4/raw/train.gpu/single.log")
	assert.NilError(t, err)
	steps := 0
	for _, l := range strings.Split(string(raw), "\n") {
		var s struct {
			Kind string  `json:"kind"`
			Step int     `json:"step"`
			TPS  float64 `json:"tokens_per_s"`
		}
		if json.Unmarshal([]byte(l), &s) == nil && s.Kind == "train_step" {
			steps++
			test.Metrics = append(test.Metrics, result.Judged{Metric: result.Metric{Name: "step_tokens_per_s", Value: s.TPS, Unit: "tokens/s", Labels: map[string]string{"step": fmt.Sprint(s.Step), "gpu": "0", "host": "vm"}}})
		}
	}
	assert.Equal(t, steps, 30)
	test.Meanings = append(test.Meanings, result.Meaning{Name: "step_tokens_per_s", Unit: "tokens/s", Plot: result.PlotSteps})
	kept, err := os.ReadFile("../../testdata/recordings/h100x1-2026-12-07/issue32/train-4/baseline/h100.yaml")
	assert.NilError(t, err)
	golden, err := sku.Parse(kept, "h100.yaml")
	assert.NilError(t, err)
	figs, err := Plot(test, golden)
	assert.NilError(t, err)
	kinds := map[string]result.Plot{}
	for _, f := range figs {
		kinds[f.Metric] = f.Kind
		assert.Assert(t, len(f.SVG) > 0)
	}
	assert.DeepEqual(t, kinds, map[string]result.Plot{"tflops": result.PlotLabels, "tokens_per_s": result.PlotLabels, "step_tokens_per_s": result.PlotSteps})
	assert.DeepEqual(t, figs[len(figs)-1].Curves, []string{"step_tokens_per_s {gpu=0, host=vm}"})
}
