package result

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// A run's verdict and exit code from its tests (README, Exit codes): a
// benchmark that measured and was not judged keeps a run that would pass
// or warn from being signed off; a skip that ran nothing (min_gpus, a bad
// node, a dry run) does not; a preflight pass judges no benchmark; a
// fail or an error still wins. The shapes are those of the field report
// (issue 28: health.node passed, gemm, hbm and hostlink skipped "no
// baseline" on an H100 with a site SKU file before any recording).
func TestFinishUnjudged(t *testing.T) {
	scope := plan.Scope{Nodes: 1, GPUsPerNode: 1}
	bw := []Judged{{Metric: Metric{Name: "bw", Value: 55.3, Unit: "GB/s"}, Status: Skip}}
	health := Test{Name: "health.node", Status: Pass, Preflight: true, Raw: []string{"raw/health.node/node.log"},
		Checks: []Check{{Name: "ECC", OK: true, Host: "vm"}}}
	// Measured, judged against nothing: raw outputs and metrics, skip.
	noBase := func(name string) Test {
		return Test{Name: name, Status: Skip, Message: "no baseline for " + name + " in SKU h100-sxm", Metrics: bw, Raw: []string{"raw/" + name + "/x.log"}}
	}
	judged := func(name string, s Status) Test {
		return Test{Name: name, Status: s, Metrics: []Judged{{Metric: bw[0].Metric, Status: s}}, Raw: []string{"raw/" + name + "/x.log"}}
	}
	minGPUs := Test{Name: "nccl.all_reduce", Status: Skip, Message: "needs at least 2 GPUs, scope 1x1 has 1", Metrics: []Judged{}}
	badHealth := Test{Name: "health.node", Status: Fail, Preflight: true, Raw: []string{"raw/health.node/node.log"},
		Checks: []Check{{Name: "ECC", Host: "vm", Message: "vm: GPU 0: volatile DBE 1"}}}
	badSkip := Test{Name: "gemm.matmul", Status: Skip, Message: "node vm failed health: GPU 0: volatile DBE 1", Metrics: []Judged{}}
	dry := Test{Name: "gemm.matmul", Status: Skip, Message: "dry run", Commands: []string{"python3 matmul.py"}, Metrics: []Judged{}}
	// A health test that checked nothing stays skip (judge.ByChecks); it
	// is no benchmark.
	healthNothing := Test{Name: "health.node", Status: Skip, Preflight: true, Raw: []string{"raw/health.node/node.log"}}
	locPass := Localisation{Test: "nccl.all_reduce", Stages: []Stage{{Name: "pairs", Runs: []SubRun{{Status: Pass, Figure: 350}}}}}
	locNone := Localisation{Test: "nccl.all_reduce", Stages: []Stage{}, Notes: []string{"not localised: no hosts"}}
	multi := func(t Test) Test { t.Name = "nccl.all_reduce"; return t }
	cases := []struct {
		name     string
		tests    []Test
		locs     []Localisation
		status   Status
		code     int
		unjudged []string
	}{
		{"field report: health pass, three benchmarks without baseline", []Test{health, noBase("gemm.matmul"), noBase("hbm.bandwidth"), noBase("hostlink.pcie"), minGPUs},
			nil, Skip, ExitNothingJudged, []string{"gemm.matmul", "hbm.bandwidth", "hostlink.pcie"}},
		{"one of three benchmarks without baseline", []Test{health, judged("gemm.matmul", Pass), noBase("hbm.bandwidth"), judged("hostlink.pcie", Pass)},
			nil, Skip, ExitNothingJudged, []string{"hbm.bandwidth"}},
		{"a warn does not sign off an unjudged benchmark", []Test{judged("gemm.matmul", Warn), noBase("hbm.bandwidth")},
			nil, Skip, ExitNothingJudged, []string{"hbm.bandwidth"}},
		{"a fail wins over an unjudged benchmark", []Test{judged("gemm.matmul", Fail), noBase("hbm.bandwidth")},
			nil, Fail, ExitFail, []string{"hbm.bandwidth"}},
		{"an error wins over an unjudged benchmark", []Test{judged("gemm.matmul", Error), noBase("hbm.bandwidth")},
			nil, Error, ExitError, []string{"hbm.bandwidth"}},
		{"everything skipped", []Test{noBase("gemm.matmul"), minGPUs}, nil, Skip, ExitNothingJudged, []string{"gemm.matmul"}},
		{"every benchmark judged, one not applicable at the scope", []Test{health, judged("gemm.matmul", Pass), minGPUs},
			nil, Pass, ExitPass, nil},
		{"a bad node's skips fail the run, and are not unjudged", []Test{badHealth, badSkip}, nil, Fail, ExitFail, nil},
		{"a dry run's skips are not unjudged", []Test{health, dry}, nil, Pass, ExitPass, nil},
		{"a preflight test that checked nothing is no benchmark", []Test{healthNothing, judged("gemm.matmul", Pass)}, nil, Pass, ExitPass, nil},
		// --localise: the localisation judged the test at its runs' scopes.
		{"judged by its localisation", []Test{health, multi(noBase("x"))}, []Localisation{locPass}, Pass, ExitPass, nil},
		{"a localisation that made no run judges nothing", []Test{health, multi(noBase("x"))}, []Localisation{locNone}, Error, ExitError, []string{"nccl.all_reduce"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A status recorded before (a forged "pass") is not read.
			r := Run{Status: Pass, SKU: "h100-sxm", Scope: scope, Tests: c.tests, Localisations: c.locs}
			r.Finish()
			assert.Equal(t, r.Status, c.status)
			assert.Equal(t, r.ExitCode(), c.code)
			assert.DeepEqual(t, r.Unjudged(), c.unjudged)
		})
	}
}

// The note names the tests measured and not judged (five, then how many
// more), the scope and the SKU, and is empty when there is none.
func TestNotJudgedNote(t *testing.T) {
	scope := plan.Scope{Nodes: 2, GPUsPerNode: 8}
	assert.Equal(t, NotJudgedNote(nil, scope, "h200"), "")
	assert.Equal(t, NotJudgedNote([]string{"nccl.all_reduce"}, scope, "h200"),
		"measured, not judged: nccl.all_reduce (no baseline entry judges it at scope 2x8 in SKU h200: gpuaccept baseline show h200)")
	assert.Equal(t, NotJudgedNote([]string{"a.a", "b.b", "c.c", "d.d", "e.e", "f.f", "g.g"}, scope, "h200"),
		"measured, not judged: a.a, b.b, c.c, d.d, e.e and 2 more (no baseline entry judges them at scope 2x8 in SKU h200: gpuaccept baseline show h200)")
}
