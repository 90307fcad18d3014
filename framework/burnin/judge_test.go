package burnin

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	_ "github.com/gpuaccept/gpuaccept/plugins/gemm"
	_ "github.com/gpuaccept/gpuaccept/plugins/hbm"
	_ "github.com/gpuaccept/gpuaccept/plugins/health"
	_ "github.com/gpuaccept/gpuaccept/plugins/hostlink"
)

// recorded reads a results folder recorded on a real GPU
// (testdata/recordings; each folder's README says the machine and
// command) and judges its raw outputs again against the built-in SKU
// skuName, as a burn-in cycle on that board is judged today (the
// reference entries and their bands, the plugins' metric meanings).
func recorded(t testing.TB, rel, skuName string) *result.Run {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "recordings", rel)
	run, _, err := resultsdir.Load(dir)
	assert.NilError(t, err, rel)
	cat, err := sku.LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	s, err := cat.Get(skuName)
	assert.NilError(t, err)
	for i, tt := range run.Tests {
		if len(tt.Raw) == 0 {
			continue
		}
		got, err := runner.JudgeAgain(context.Background(), pluginapi.InProcess{}, s, dir, run, tt)
		assert.NilError(t, err, "%s %s", rel, tt.Name)
		run.Tests[i] = got
	}
	return run
}

// The cross-cycle rules on real runs fed as cycles: an H200's idle node
// suite three times (testdata/recordings/h200x1-2026-12-01/node/node-1..3),
// then the same board with its SM clock locked low (nvidia-smi -lgc,
// node/lgc: bf16 488 against 730 TFLOPS) three times; and an H100's six
// idle runs on two boards (h100x1-2026-12-07 issue28 and issue30), whose
// fp8 swings 1248-1457 TFLOPS from run to run.
func TestJudgeOnRecordedRuns(t *testing.T) {
	h200 := "h200x1-2026-12-01/node/"
	h100 := "h100x1-2026-12-07/"
	cases := []struct {
		name  string
		sku   string
		runs  []string
		drift []string // "test point@cycle" of every drift finding
	}{
		{"H200 idle then clock-locked", "h200", []string{h200 + "node-1", h200 + "node-2", h200 + "node-3", h200 + "lgc", h200 + "lgc", h200 + "lgc"},
			// fp8 fell 32%, inside its reference band of -33% (its
			// runs scatter): not drift by the band.
			[]string{"gemm.matmul tflops dtype=bf16@5", "gemm.matmul tflops dtype=fp16@5", "gemm.matmul tflops dtype=fp32@5",
				"gemm.matmul tflops dtype=tf32@5", "hbm.bandwidth bw at 1 GiB op=copy@5", "hbm.bandwidth bw at 1 GiB op=triad@5"}},
		{"H200 idle", "h200", []string{h200 + "node-1", h200 + "node-2", h200 + "node-3", h200 + "node-1", h200 + "node-2"}, nil},
		{"H100 idle, two boards", "h100", []string{h100 + "issue28/node-1", h100 + "issue28/node-2", h100 + "issue28/node-3",
			h100 + "issue30/node-1", h100 + "issue30/node-2", h100 + "issue30/node-3"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			j := NewJudge(DefaultDrift, start)
			for i, rel := range c.runs {
				run := recorded(t, rel, c.sku)
				j.Add(Cycle{N: i + 1, Status: run.Status, Started: start.Add(time.Duration(i) * time.Minute), Duration: time.Minute}, run)
			}
			var got []string
			for _, f := range j.Findings() {
				if f.Rule == RuleCycle {
					continue // issue30's runs 2 and 3 failed the reference of their day
				}
				assert.Equal(t, f.Rule, RuleDrift, f.Message)
				assert.Equal(t, f.Status, result.Fail)
				got = append(got, f.Test+" "+strip(f.Point)+"@"+strconv.Itoa(f.Cycle))
			}
			assert.DeepEqual(t, got, c.drift)
			if len(c.drift) > 0 {
				f := j.Findings()[0]
				assert.Equal(t, f.GPU, "0")
				assert.Equal(t, f.Host, "vm")
				assert.Equal(t, f.After, 5*time.Minute)
				assert.Assert(t, strings.Contains(f.Message, "by cycle 5, 5m0s into the burn-in"), f.Message)
				worst, what := j.WorstDrift()
				assert.Assert(t, worst > 0.3 && strings.HasPrefix(what, "gemm.matmul tflops"), "%v %s", worst, what)
			}
		})
	}
}

// strip leaves the labels a test's points differ by here (dtype).
func strip(point string) string {
	var keep []string
	for _, w := range strings.Fields(point) {
		if !strings.HasPrefix(w, "gpu=") && !strings.HasPrefix(w, "host=") && !strings.HasPrefix(w, "mode=") {
			keep = append(keep, w)
		}
	}
	return strings.Join(keep, " ")
}
