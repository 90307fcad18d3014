package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gojunit "github.com/joshdk/go-junit"
	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// unjudgedRun is the field report's run (issue 28) as a site's own SKU
// file without entries judged it on one GPU: health.node passed, gemm,
// hbm and hostlink measured and skipped "no baseline", the collectives
// skipped by min_gpus. Numbers from the H200 node recordings.
func unjudgedRun() *result.Run {
	scope := plan.Scope{Nodes: 1, GPUsPerNode: 1}
	measured := func(name, metric string, v float64, unit string) result.Test {
		return result.Test{Name: name, Status: result.Skip, Scope: scope, Message: "no baseline for " + name + " in SKU h100-sxm",
			Metrics: []result.Judged{{Metric: result.Metric{Name: metric, Value: v, Unit: unit}, Status: result.Skip}},
			Raw:     []string{"raw/" + name + "/x.log"}}
	}
	r := &result.Run{SKU: "h100-sxm", Suite: "node", Launcher: "local", Scope: scope, Version: "test",
		Started: time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC), Duration: 27 * time.Second,
		Tests: []result.Test{
			{Name: "health.node", Status: result.Pass, Scope: scope, Preflight: true, Message: "all 13 checks hold", Metrics: []result.Judged{},
				Checks: []result.Check{{Name: "ECC", OK: true, Host: "vm"}}, Raw: []string{"raw/health.node/node.log"}},
			measured("gemm.matmul", "tflops", 728.2, "TFLOPS"),
			measured("hbm.bandwidth", "bw", 4209.6, "GB/s"),
			measured("hostlink.pcie", "bw", 55.3, "GB/s"),
			{Name: "nccl.all_reduce", Status: result.Skip, Scope: scope, Message: "needs at least 2 GPUs, scope 1x1 has 1", Metrics: []result.Judged{}},
		}}
	r.Finish()
	return r
}

// No report of a run with a benchmark measured and not judged reads as
// signed off: the table, Markdown and HTML head it NOT SIGNED OFF and name
// the tests; JSON says skip; JUnit skips the unjudged tests, saying they
// keep the run from sign-off, and the not applicable one as before, and
// ends with the failing testcase "sign-off" (CI reads cases, not exit
// codes).
func TestNotSignedOffInEveryReport(t *testing.T) {
	r := unjudgedRun()
	want := "NOT SIGNED OFF: SKU h100-sxm, suite node, scope 1x1, launcher local: 1 pass, 4 skip; measured, not judged: gemm.matmul, hbm.bandwidth, hostlink.pcie (no baseline entry judges them at scope 1x1 in SKU h100-sxm: gpuaccept baseline show h100-sxm) (27s)"
	assert.Equal(t, Summary(r), want)
	for name, render := range map[string]func(*bytes.Buffer) error{
		"table":    func(b *bytes.Buffer) error { return Table(b, r) },
		"markdown": func(b *bytes.Buffer) error { return Markdown(b, r) },
		"html":     func(b *bytes.Buffer) error { return HTML(b, r, nil) },
	} {
		var b bytes.Buffer
		assert.NilError(t, render(&b))
		out := b.String()
		assert.Assert(t, strings.Contains(out, want), "%s:\n%s", name, out)
		for _, green := range []string{"PASS: SKU", "ALL PASS", "h100-sxm node: PASS", `badge pass">PASS</span> SKU`} {
			assert.Assert(t, !strings.Contains(out, green), "%s says %q:\n%s", name, green, out)
		}
		if name == "html" {
			assert.Assert(t, strings.Contains(out, "<title>gpuaccept h100-sxm node: NOT SIGNED OFF</title>"), out)
		}
	}
	var js bytes.Buffer
	assert.NilError(t, JSON(&js, r))
	var doc struct{ Status string }
	assert.NilError(t, json.Unmarshal(js.Bytes(), &doc))
	assert.Equal(t, doc.Status, "skip")

	p := filepath.Join(t.TempDir(), layout.JUnit)
	assert.NilError(t, WriteJUnit(p, r))
	suites, err := gojunit.IngestFile(p)
	assert.NilError(t, err)
	got := map[string]string{}
	for _, s := range suites {
		for _, c := range s.Tests {
			got[s.Name] = string(c.Status) + ": " + c.Message
		}
	}
	assert.DeepEqual(t, got, map[string]string{"health.node": "passed: ",
		"gemm.matmul":     "skipped: not signed off: measured, not judged: no baseline for gemm.matmul in SKU h100-sxm",
		"hbm.bandwidth":   "skipped: not signed off: measured, not judged: no baseline for hbm.bandwidth in SKU h100-sxm",
		"hostlink.pcie":   "skipped: not signed off: measured, not judged: no baseline for hostlink.pcie in SKU h100-sxm",
		"nccl.all_reduce": "skipped: needs at least 2 GPUs, scope 1x1 has 1",
		"sign-off":        "failed: not signed off: measured, not judged: gemm.matmul, hbm.bandwidth, hostlink.pcie (no baseline entry judges them at scope 1x1 in SKU h100-sxm: gpuaccept baseline show h100-sxm)"})
}

// A run that judged nothing is not signed off either (exit 4): where every
// test measured and none was judged (check of a 1x1 nccl-tests output, a
// replay of gemm alone) every report says NOT SIGNED OFF and names them,
// not SKIP, which reads as if nothing ran; only a run that ran nothing it
// could judge (every test not applicable at the scope) says SKIP. JUnit
// ends with the failing "sign-off" case in both.
func TestNothingJudgedIsNotSignedOff(t *testing.T) {
	cases := []struct {
		name    string
		tests   func([]result.Test) []result.Test
		verdict string
		summary string
		junit   string
	}{
		{"every test measured, none judged", func(ts []result.Test) []result.Test { return ts[1:4] }, NotSignedOff,
			"NOT SIGNED OFF: SKU h100-sxm, suite node, scope 1x1, launcher local: 3 skip; measured, not judged: gemm.matmul, hbm.bandwidth, hostlink.pcie (no baseline entry judges them at scope 1x1 in SKU h100-sxm: gpuaccept baseline show h100-sxm) (27s)",
			"not signed off: measured, not judged: gemm.matmul, hbm.bandwidth, hostlink.pcie (no baseline entry judges them at scope 1x1 in SKU h100-sxm: gpuaccept baseline show h100-sxm)"},
		{"one measured, one not applicable", func(ts []result.Test) []result.Test { return []result.Test{ts[1], ts[4]} }, NotSignedOff,
			"NOT SIGNED OFF: SKU h100-sxm, suite node, scope 1x1, launcher local: 2 skip; measured, not judged: gemm.matmul (no baseline entry judges it at scope 1x1 in SKU h100-sxm: gpuaccept baseline show h100-sxm) (27s)",
			"not signed off: measured, not judged: gemm.matmul (no baseline entry judges it at scope 1x1 in SKU h100-sxm: gpuaccept baseline show h100-sxm)"},
		{"nothing ran", func(ts []result.Test) []result.Test { return ts[4:] }, "SKIP",
			"SKIP: SKU h100-sxm, suite node, scope 1x1, launcher local: 1 skip (27s)",
			"not signed off: nothing was judged (every test skipped: see their reasons)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := unjudgedRun()
			r.Tests = c.tests(r.Tests)
			r.Finish()
			assert.Equal(t, r.Status, result.Skip)
			assert.Equal(t, Verdict(r), c.verdict)
			assert.Equal(t, Summary(r), c.summary)
			for name, render := range map[string]func(*bytes.Buffer) error{
				"table":    func(b *bytes.Buffer) error { return Table(b, r) },
				"markdown": func(b *bytes.Buffer) error { return Markdown(b, r) },
			} {
				var b bytes.Buffer
				assert.NilError(t, render(&b))
				assert.Assert(t, strings.Contains(b.String(), c.summary), "%s:\n%s", name, b.String())
			}
			p := filepath.Join(t.TempDir(), layout.JUnit)
			assert.NilError(t, WriteJUnit(p, r))
			suites, err := gojunit.IngestFile(p)
			assert.NilError(t, err)
			last := suites[len(suites)-1]
			assert.Equal(t, last.Name, SignOffSuite)
			assert.Equal(t, len(last.Tests), 1)
			tc := last.Tests[0]
			assert.Equal(t, tc.Name, "sign-off")
			assert.Equal(t, tc.Classname, "gpuaccept.h100-sxm.node")
			assert.Equal(t, string(tc.Status), "failed")
			assert.Equal(t, tc.Message, c.junit)
			raw, err := os.ReadFile(p)
			assert.NilError(t, err)
			assert.Assert(t, strings.Contains(string(raw), `type="not-signed-off"`), string(raw))
		})
	}
}

// A run that is signed off, or failed or errored, has no "sign-off" case:
// its own cases say it.
func TestNoSignOffCaseWhenSignedOffOrFailed(t *testing.T) {
	for _, st := range []result.Status{result.Pass, result.Fail, result.Error} {
		r := unjudgedRun()
		r.Tests = r.Tests[:1]
		r.Tests[0].Status = st
		r.Finish()
		for _, s := range JUnit(r).Suites {
			assert.Assert(t, s.Name != SignOffSuite, "%s run has a sign-off suite", st)
		}
	}
}
