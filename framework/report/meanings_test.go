package report

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
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
