package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gojunit "github.com/joshdk/go-junit"
	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
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
// keep the run from sign-off, and the not applicable one as before. A run that judged nothing keeps its SKIP line, as results
// folders already signed render it.
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

	p := filepath.Join(t.TempDir(), "junit.xml")
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
		"nccl.all_reduce": "skipped: needs at least 2 GPUs, scope 1x1 has 1"})

	// Nothing judged at all: the run's own word, as before.
	none := unjudgedRun()
	none.Tests = none.Tests[1:]
	none.Finish()
	assert.Equal(t, Verdict(none), "SKIP")
	assert.Assert(t, strings.HasPrefix(Summary(none), "SKIP: SKU h100-sxm, suite node, scope 1x1, launcher local: 4 skip (27s)"), Summary(none))
}
