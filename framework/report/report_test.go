package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	gojunit "github.com/joshdk/go-junit"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

func f(v float64) *float64 { return &v }

// sample is a run with one test of each outcome, numbers from the H200
// recordings (pass) and a NCCL_P2P_DISABLE=1 run (fail).
func sample() *result.Run {
	lbl := map[string]string{"placement": "out-of-place", "type": "float", "redop": "sum"}
	r := &result.Run{SKU: "h200", Suite: "singlenode", Launcher: "local", Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}, Hosts: []string{"vm"},
		Started: time.Date(2026, 11, 30, 5, 30, 0, 0, time.UTC), Duration: 83 * time.Second, Version: "test",
		Tests: []result.Test{
			{Name: "nccl.all_reduce", Status: result.Pass, Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}, Message: "14 points inside their bands", Duration: 9 * time.Second,
				Commands: []string{"all_reduce_perf -b 8 -e 4G -f 2 -g 2 -c 1 -J all_reduce.json"},
				Info:     map[string]string{"nccl_version": "2.28.9", "nccl_tests_version": "2.19.6", "gpu": "NVIDIA H200", "hosts": "vm"},
				Metrics: []result.Judged{
					{Metric: result.Metric{Name: "busbw", Value: 329.8, Unit: "GB/s", Size: 1 << 30, Labels: lbl}, Status: result.Pass, Expected: f(329.8), Band: ">= 296.8 (warn < 313.3)"},
					{Metric: result.Metric{Name: "busbw", Value: 344.03, Unit: "GB/s", Size: 4 << 30, Labels: lbl}, Status: result.Pass, Expected: f(344.03), Band: ">= 309.6 (warn < 326.8)"},
					{Metric: result.Metric{Name: "time", Value: 16.9, Unit: "us", Size: 8, Labels: lbl}, Status: result.Skip},
				}},
			{Name: "nccl.all_gather", Status: result.Fail, Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}, Duration: 8 * time.Second,
				Message: "busbw out-of-place 28.7 GB/s at 4 GiB below 273.9 (baseline 304.3 -10%)",
				Metrics: []result.Judged{{Metric: result.Metric{Name: "busbw", Value: 28.7, Unit: "GB/s", Size: 4 << 30, Labels: lbl}, Status: result.Fail,
					Expected: f(304.3), Band: ">= 273.9", Message: "busbw out-of-place 28.7 GB/s at 4 GiB below 273.9 (baseline 304.3 -10%)"}},
				Checks:      []result.Check{{Name: "data validation", OK: true}},
				Diagnostics: []result.Diagnostic{{Level: result.Warning, Message: "NCCL WARN Cuda failure 'peer access is not supported'", Source: "all_gather.log:12"}},
				Raw:         []string{"raw/nccl.all_gather/all_gather.log"}},
			{Name: "nccl.alltoall", Status: result.Error, Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}, Message: "alltoall.log:9: Test NCCL failure common.cu:1279 'unhandled system error'", Metrics: []result.Judged{}},
			{Name: "nccl.hypercube", Status: result.Skip, Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}, Message: "no baseline for nccl.hypercube in SKU h200", Metrics: []result.Judged{}},
		}}
	// Efficiency as judge.Efficiencies gives it with h200's busbw ceiling
	// (peak 450, NVLink 4 one way); an error test's is never shown.
	nvlink := func(best, worst result.Metric, curve bool) []result.Efficiency {
		return []result.Efficiency{{Metric: "busbw", Unit: "GB/s", Peak: 450, Link: "NVLink 4, one way", Source: "NVIDIA H200 datasheet", Points: 2, Curve: curve, Best: best, Worst: worst}}
	}
	at := r.Tests[0].Metrics
	r.Tests[0].Efficiency = nvlink(at[1].Metric, at[0].Metric, true)
	r.Tests[1].Efficiency = nvlink(r.Tests[1].Metrics[0].Metric, r.Tests[1].Metrics[0].Metric, false)
	r.Tests[2].Efficiency = nvlink(result.Metric{Name: "busbw", Value: 9999, Unit: "GB/s"}, result.Metric{Name: "busbw", Value: 9999, Unit: "GB/s"}, false)
	r.Finish()
	return r
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	assert.NilError(t, Table(&b, sample()))
	golden.Assert(t, b.String(), "table.golden")
}

func TestMarkdown(t *testing.T) {
	var b bytes.Buffer
	assert.NilError(t, Markdown(&b, sample()))
	golden.Assert(t, b.String(), "markdown.golden")
}

func TestJSONContract(t *testing.T) {
	var b bytes.Buffer
	assert.NilError(t, JSON(&b, sample()))
	var doc struct {
		Status string `json:"status"`
		Tests  []struct {
			Name    string `json:"name"`
			Status  string `json:"status"`
			Metrics []struct {
				Name   string   `json:"name"`
				Value  float64  `json:"value"`
				Unit   string   `json:"unit"`
				Status string   `json:"status"`
				Size   *float64 `json:"size"`
			} `json:"metrics"`
		} `json:"tests"`
	}
	assert.NilError(t, json.Unmarshal(b.Bytes(), &doc))
	assert.Equal(t, doc.Status, "fail", "a failure wins over an error")
	assert.Equal(t, doc.Tests[1].Name, "nccl.all_gather")
	assert.Equal(t, doc.Tests[1].Status, "fail")
	m := doc.Tests[1].Metrics[0]
	assert.Equal(t, m.Name, "busbw")
	assert.Equal(t, m.Value, 28.7)
	assert.Equal(t, m.Unit, "GB/s")
	assert.Equal(t, m.Status, "fail")
	assert.Equal(t, *m.Size, float64(4<<30))
}

// withRaw gives the sample a results folder whose raw output holds what
// tools really print and XML cannot: a NUL, an escape sequence, "]]>", and a
// token the environment knows as a secret.
func withRaw(t *testing.T) *result.Run {
	t.Helper()
	t.Setenv("GH_TOKEN", "ghp_planted0123456789abcdef")
	run := sample()
	run.Dir = t.TempDir()
	raw := filepath.Join(run.Dir, layout.Raw, "nccl.all_gather")
	assert.NilError(t, os.MkdirAll(raw, 0o755))
	log := "# nccl-tests\n\x00\x1b[1mbold\x1b[0m ]]> GH_TOKEN=ghp_planted0123456789abcdef\n#  Out of bounds values : 0 OK\n"
	assert.NilError(t, os.WriteFile(filepath.Join(raw, "all_gather.log"), []byte(log), 0o644))
	// A retried test: the first attempt errored, the second passed.
	first := run.Tests[0]
	first.Status, first.Message, first.Metrics = result.Error, "launch: node vm unreachable", []result.Judged{}
	run.Tests[0].Attempts = []result.Test{first}
	return run
}

func TestJUnit(t *testing.T) {
	run := withRaw(t)
	doc := JUnit(run)
	var b bytes.Buffer
	assert.NilError(t, doc.WriteXML(&b))
	x := strings.ReplaceAll(b.String(), run.Dir, "DIR")
	host, _ := os.Hostname()
	x = strings.ReplaceAll(x, `hostname="`+host+`"`, `hostname="testhost"`)
	golden.Assert(t, x, "junit.golden")
	assert.Assert(t, !strings.Contains(x, "ghp_planted"), "token in JUnit")
}

// The JUnit XML is valid against the schema Jenkins' xunit plugin checks
// reports with, whatever the raw output holds.
func TestJUnitSchemaValid(t *testing.T) {
	xmllint := os.Getenv("GPUACCEPT_XMLLINT")
	if xmllint == "" {
		var err error
		if xmllint, err = exec.LookPath("xmllint"); err != nil {
			testenv.Missing(t, "xmllint not found (Debian libxml2-utils; scripts/testenv.sh up report)")
		}
	}
	cases := map[string]*result.Run{"sample with raw output": withRaw(t), "empty run": {SKU: "x", Suite: "s", Tests: []result.Test{}},
		"check run without folder": {SKU: "h200", Suite: "check", Tests: []result.Test{{Name: "nccl.all_reduce", Status: result.Pass, Raw: []string{"/nonexistent/a.log"}}}}}
	for _, c := range locCases {
		cases["localisation "+c.name] = c.run()
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), layout.JUnit)
			assert.NilError(t, WriteJUnit(p, run))
			out, err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit-10.xsd", p).CombinedOutput()
			assert.NilError(t, err, string(out))
			assert.Assert(t, strings.Contains(string(out), "validates"), string(out))
		})
	}
	// The schema check can fail: an element the schema does not know.
	p := filepath.Join(t.TempDir(), "bad.xml")
	assert.NilError(t, os.WriteFile(p, []byte(`<testsuites><testsuite name="a" tests="1" failures="0" errors="0"><flaky/></testsuite></testsuites>`), 0o644))
	out, err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit-10.xsd", p).CombinedOutput()
	assert.Assert(t, err != nil, string(out))
}

// A real consumer reads it: github.com/joshdk/go-junit, the reader CI tools
// built in Go use, sees one suite per test (and per earlier attempt), the
// curves as test cases, failure vs error, skip reasons and properties.
func TestJUnitConsumer(t *testing.T) {
	run := withRaw(t)
	p := filepath.Join(t.TempDir(), layout.JUnit)
	assert.NilError(t, WriteJUnit(p, run))
	suites, err := gojunit.IngestFile(p)
	assert.NilError(t, err)
	names := make([]string, len(suites))
	for i, s := range suites {
		names[i] = s.Name
	}
	assert.DeepEqual(t, names, []string{"nccl.all_reduce (attempt 1 of 2)", "nccl.all_reduce (attempt 2 of 2)", "nccl.all_gather", "nccl.alltoall", "nccl.hypercube"})
	type tc struct {
		name   string
		status gojunit.Status
		msg    string
	}
	cases := func(s gojunit.Suite) []tc {
		var out []tc
		for _, c := range s.Tests {
			out = append(out, tc{c.Name, c.Status, c.Message})
		}
		return out
	}
	assert.DeepEqual(t, cases(suites[0]), []tc{{"run", gojunit.StatusError, "launch: node vm unreachable"}}, cmp.AllowUnexported(tc{}))
	assert.DeepEqual(t, cases(suites[1]), []tc{{"busbw out-of-place", gojunit.StatusPassed, ""}}, cmp.AllowUnexported(tc{}))
	assert.DeepEqual(t, cases(suites[2]), []tc{
		{"busbw out-of-place", gojunit.StatusFailed, "busbw out-of-place 28.7 GB/s at 4 GiB below 273.9 (baseline 304.3 -10%)"},
		{"check: data validation", gojunit.StatusPassed, ""}}, cmp.AllowUnexported(tc{}))
	assert.DeepEqual(t, cases(suites[3]), []tc{{"run", gojunit.StatusError, "alltoall.log:9: Test NCCL failure common.cu:1279 'unhandled system error'"}}, cmp.AllowUnexported(tc{}))
	assert.DeepEqual(t, cases(suites[4]), []tc{{"nccl.hypercube", gojunit.StatusSkipped, "no baseline for nccl.hypercube in SKU h200"}}, cmp.AllowUnexported(tc{}))
	props := suites[1].Properties
	for k, v := range map[string]string{"sku": "h200", "scope": "1x2", "hosts": "vm", "nccl_version": "2.28.9", "nccl_tests_version": "2.19.6", "gpuaccept_version": "test", "launcher": "local"} {
		assert.Equal(t, props[k], v, k)
	}
	assert.Assert(t, strings.Contains(suites[2].SystemOut, "#  Out of bounds values : 0 OK"), suites[2].SystemOut)
	assert.Assert(t, strings.Contains(suites[2].SystemErr, "NCCL WARN Cuda failure"), suites[2].SystemErr)
	assert.Assert(t, strings.Contains(suites[2].SystemOut, "GH_TOKEN=[REDACTED]"), suites[2].SystemOut)
	tot := gojunit.Totals{}
	for _, s := range suites {
		tot.Tests += s.Totals.Tests
		tot.Failed += s.Totals.Failed
		tot.Error += s.Totals.Error
		tot.Skipped += s.Totals.Skipped
	}
	assert.Equal(t, tot.Tests, 6)
	assert.Equal(t, tot.Failed, 1)
	assert.Equal(t, tot.Error, 2)
	assert.Equal(t, tot.Skipped, 1)
}

func TestExitCodes(t *testing.T) {
	for st, code := range map[result.Status]int{result.Pass: 0, result.Warn: 0, result.Skip: 4, result.Fail: 1, result.Error: 3} {
		r := &result.Run{Tests: []result.Test{{Status: st}}}
		r.Finish()
		assert.Equal(t, r.ExitCode(), code, string(st))
	}
	// A failure wins over an error: CI must see the hardware fault.
	r0 := &result.Run{Tests: []result.Test{{Status: result.Error}, {Status: result.Fail}, {Status: result.Skip}}}
	r0.Finish()
	assert.Equal(t, r0.Status, result.Fail)
	assert.Equal(t, r0.ExitCode(), 1)
	// One judged test is enough for a run to count.
	r := &result.Run{Tests: []result.Test{{Status: result.Skip}, {Status: result.Pass}}}
	r.Finish()
	assert.Equal(t, r.ExitCode(), 0)
}

// A warn is not a CI failure: its cases pass, with the finding in
// system-out where people look.
func TestJUnitWarnPasses(t *testing.T) {
	lbl := map[string]string{"placement": "in-place"}
	run := &result.Run{SKU: "h200", Suite: "singlenode", Tests: []result.Test{{Name: "nccl.all_reduce", Status: result.Warn, Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2},
		Message: "validation off (-c 0)",
		Metrics: []result.Judged{{Metric: result.Metric{Name: "busbw", Value: 320.1, Unit: "GB/s", Size: 4 << 30, Labels: lbl}, Status: result.Warn,
			Expected: f(344.0), Band: ">= 309.6 (warn < 326.8)", Message: "busbw in-place 320.1 GB/s at 4 GiB below 326.8 (baseline 344.0 -5%)"}},
		Checks: []result.Check{{Name: "data validation", OK: false, Warn: true, Message: "validation off (-c 0)"}}}}}
	p := filepath.Join(t.TempDir(), "j.xml")
	assert.NilError(t, WriteJUnit(p, run))
	suites, err := gojunit.IngestFile(p)
	assert.NilError(t, err)
	assert.Equal(t, len(suites[0].Tests), 3)
	for _, c := range suites[0].Tests {
		assert.Equal(t, c.Status, gojunit.StatusPassed, c.Name)
		assert.Assert(t, strings.Contains(c.SystemOut, "WARN: "), c.Name+": "+c.SystemOut)
	}
	assert.Assert(t, strings.Contains(suites[0].Tests[0].SystemOut, "WARN: busbw in-place 320.1 GB/s at 4 GiB below 326.8"), suites[0].Tests[0].SystemOut)
}

// A test swept over data types (--param datatype=all) has one curve per
// type, in the JUnit cases and in the plot; a type that does not vary
// stays out of the names.
func TestCurvesPerVaryingType(t *testing.T) {
	point := func(typ string, size int64, v float64) result.Judged {
		return result.Judged{Metric: result.Metric{Name: "busbw", Unit: "GB/s", Size: size, Value: v,
			Labels: map[string]string{"placement": "out-of-place", "type": typ, "redop": "sum"}}, Status: result.Pass}
	}
	cases := []struct {
		name  string
		types []string
		want  []string
	}{
		{"one type", []string{"float"}, []string{"busbw out-of-place"}},
		{"two types", []string{"float", "bfloat16"}, []string{"busbw out-of-place {type=float}", "busbw out-of-place {type=bfloat16}"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tt := result.Test{Name: "nccl.all_reduce", Status: result.Pass, Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}
			for _, typ := range c.types {
				for _, size := range []int64{1 << 20, 1 << 30} {
					tt.Metrics = append(tt.Metrics, point(typ, size, float64(size>>20)))
				}
			}
			var names []string
			for _, tc := range testcases(tt, "c") {
				names = append(names, tc.Name)
			}
			assert.DeepEqual(t, names, c.want)
			tt = declare(t, &result.Run{Tests: []result.Test{tt}}).Tests[0]
			figs, err := Plot(tt, nil)
			assert.NilError(t, err)
			assert.Equal(t, len(figs), 1)
			assert.DeepEqual(t, figs[0].Curves, c.want)
			// The HTML list of points outside their bands names the curve too.
			tt.Metrics[len(tt.Metrics)-1].Status = result.Fail
			var page bytes.Buffer
			assert.NilError(t, HTML(&page, &result.Run{Tests: []result.Test{tt}}, nil))
			assert.Assert(t, strings.Contains(page.String(), "<tr class=\"fail\"><td>"+c.want[len(c.want)-1]+"</td>"), page.String())
		})
	}
}

// The Detail column cuts a long message on a character boundary.
func TestDetailCutKeepsUTF8(t *testing.T) {
	for _, pad := range []int{maxDetail - 4, maxDetail - 3, maxDetail - 2} {
		msg := strings.Repeat("a", pad) + "× 2 ranks, µs " + strings.Repeat("b", 20)
		run := &result.Run{Tests: []result.Test{{Name: "nccl.all_reduce", Status: result.Error, Message: msg}}}
		detail := rows(run)[0][5]
		assert.Assert(t, utf8.ValidString(detail), "pad %d: %q", pad, detail)
		assert.Assert(t, strings.HasSuffix(detail, "..."), detail)
		assert.Assert(t, len(detail) <= maxDetail, "pad %d: %d bytes", pad, len(detail))
	}
}

// A point measured in 20 cycles (nccl-tests -N 20), one of them slow, is
// shown as the worst cycle's value with the cycles' summary in every
// report that shows per-size values; results.json carries the fields.
func TestCycles(t *testing.T) {
	run := sample()
	m := &run.Tests[1].Metrics[0].Metric
	m.Cycles, m.Min, m.Median, m.Max = 20, 28.7, 301.2, 305.5
	const detail = "min of 20 cycles (median 301.20, max 305.50)"
	for _, c := range []struct {
		name  string
		write func(*bytes.Buffer) error
		want  string
	}{
		{"table", func(b *bytes.Buffer) error { return Table(b, run) }, "busbw out-of-place 28.7 GB/s @ 4 GiB, min of 20 cycles"},
		{"markdown", func(b *bytes.Buffer) error { return Markdown(b, run) }, `- busbw\[out-of-place\] at 4 GiB: ` + detail},
		{"html", func(b *bytes.Buffer) error { return HTML(b, run, nil) }, "<td>28.70 GB/s<br>" + detail + "</td>"},
		{"junit", func(b *bytes.Buffer) error { doc := JUnit(run); return doc.WriteXML(b) }, "busbw out-of-place 28.70 GB/s at 4 GiB, " + detail},
		{"json", func(b *bytes.Buffer) error {
			var indented bytes.Buffer
			if err := JSON(&indented, run); err != nil {
				return err
			}
			return json.Compact(b, indented.Bytes())
		}, `"cycles":20,"min":28.7,"median":301.2,"max":305.5,"status":"fail"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			assert.NilError(t, c.write(&b))
			assert.Assert(t, strings.Contains(b.String(), c.want), "%s lacks %q:\n%s", c.name, c.want, b.String())
		})
	}
	// A time is judged on its highest cycle.
	tm := result.Metric{Name: "time", Value: 20.1, Unit: "us", Cycles: 3, Min: 12.1, Median: 12.5, Max: 20.1}
	assert.Equal(t, tm.CyclesText(), "max of 3 cycles (min 12.10, median 12.50)")
	assert.Equal(t, result.Metric{Name: "time", Value: 20.1}.CyclesText(), "")
}

// The summary renders a test's message as the judge wrote it, reason
// first, and lists after it only what the message does not already say:
// no finding appears twice.
func TestMarkdownReasonFirstOnce(t *testing.T) {
	lbl := map[string]string{"placement": "out-of-place"}
	low := func(size int64, v float64, msg string) result.Judged {
		return result.Judged{Metric: result.Metric{Name: "busbw", Value: v, Unit: "GB/s", Size: size, Labels: lbl}, Status: result.Fail, Message: msg}
	}
	m1 := "busbw out-of-place 200.0 GB/s at 1 GiB below 297.0 (baseline 330.0 -10%)"
	m2 := "busbw out-of-place 100.0 GB/s at 4 GiB below 309.6 (baseline 344.0 -10%)"
	gate := "data validation: 3 wrong elements out-of-place at 1 GiB"
	run := &result.Run{SKU: "h200", Suite: "s", Tests: []result.Test{{Name: "nccl.all_reduce", Status: result.Fail, Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2},
		Message: gate + "; " + m1 + "; and 1 more",
		Metrics: []result.Judged{low(1<<30, 200, m1), low(4<<30, 100, m2)},
		Checks:  []result.Check{{Name: "data validation", Message: "3 wrong elements out-of-place at 1 GiB"}, {Name: "out of bounds values", Message: "4 values out of bounds (FAILED)"}}}}}
	run.Finish()
	var b bytes.Buffer
	assert.NilError(t, Markdown(&b, run))
	details := b.String()[strings.Index(b.String(), "<details>"):]
	assert.Equal(t, details, "<details><summary>nccl.all_reduce: FAIL</summary>\n\n"+
		"- "+mdEscape(gate+"; "+m1+"; and 1 more")+"\n"+
		"- FAIL: "+mdEscape(m2)+"\n"+
		"- check out of bounds values: 4 values out of bounds (FAILED)\n"+
		"\n</details>\n")
}

// Text from a log reaches the Markdown table as text: a device name or
// message holding HTML does not become a tag, a "|" does not end its
// cell, and a band's "<" reads as it did.
func TestMarkdownCellsAreText(t *testing.T) {
	cases := []struct{ in, want string }{
		{`<img src=x onerror=alert(1)>`, `&lt;img src=x onerror=alert(1)>`},
		{`</td><script>x</script>`, `&lt;/td>&lt;script>x&lt;/script>`},
		{`<!-- hidden -->`, `&lt;!-- hidden -->`},
		{`a | b`, `a \| b`},
		{`>= 309.7 (warn < 326.9)`, `>= 309.7 (warn < 326.9)`},
	}
	for _, c := range cases {
		assert.Equal(t, mdCell(c.in), c.want)
		r := sample()
		r.Tests[2].Message = c.in
		var b bytes.Buffer
		assert.NilError(t, Markdown(&b, r))
		table, _, _ := strings.Cut(b.String(), "<details>")
		assert.Assert(t, strings.Contains(table, c.want), "%q not in\n%s", c.want, table)
		assert.Assert(t, !strings.Contains(table, "<img") && !strings.Contains(table, "<script"), table)
	}
}

// A run of part of its suite (--test) says so in every report's summary
// line: the tests it left out are not signed off.
func TestSummaryNamesTheTestsChosen(t *testing.T) {
	r := sample()
	assert.Assert(t, !strings.Contains(Summary(r), "--test"), Summary(r))
	r.Selected = []string{"nccl.all_gather", "nccl.all_reduce"}
	want := "suite singlenode (--test nccl.all_gather,nccl.all_reduce only), scope 1x2"
	for name, render := range map[string]func(*bytes.Buffer) error{
		"table":    func(b *bytes.Buffer) error { return Table(b, r) },
		"markdown": func(b *bytes.Buffer) error { return Markdown(b, r) },
		"html":     func(b *bytes.Buffer) error { return HTML(b, r, nil) },
	} {
		var b bytes.Buffer
		assert.NilError(t, render(&b))
		assert.Assert(t, strings.Contains(b.String(), want), "%s:\n%s", name, b.String())
	}
}

// The Measured column is what README.md says it is: for a test that failed
// or warned, its point of that status furthest from its baseline; for a
// pass, its point at the largest size (the bandwidth people quote).
func TestMeasuredColumnAsREADMESays(t *testing.T) {
	off := func(m result.Judged) float64 { return math.Abs(1 - m.Value / *m.Expected) }
	for _, name := range []string{"p2poff", "single"} {
		run, _ := realRun(t, name)
		for _, tt := range run.Tests {
			h, ok := headline(tt)
			assert.Assert(t, ok, "%s %s", name, tt.Name)
			for _, m := range tt.Metrics {
				if m.Status != h.Status || m.Expected == nil {
					continue
				}
				if tt.Status == result.Pass {
					assert.Assert(t, m.Size <= h.Size, "%s %s: shows %d B, a pass at %d B is larger", name, tt.Name, h.Size, m.Size)
				} else {
					assert.Assert(t, off(m) <= off(h), "%s %s: shows %v (off %.3f), %v is further (%.3f)", name, tt.Name, h.Value, off(h), m.Value, off(m))
				}
			}
		}
	}
	readme, err := os.ReadFile("../../README.md")
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(string(readme), `"Measured" is, for a test that failed or warned, its point furthest from its baseline; for a pass, its point at the largest size`))
}

// A message quotes a benchmark's output and a test's name a log file's:
// table, Markdown and JSON show their control and format characters
// escaped, and Markdown opens no link or image from them.
func TestInjectedTextEscaped(t *testing.T) {
	run := &result.Run{SKU: "h200", Suite: "check", Launcher: "check", Status: result.Fail, Tests: []result.Test{{
		Name: "nccl.all_reduce[x\r\x1b[2K\u202eALL PASS.log]", Status: result.Fail,
		Message: "out of band\x1b]0;t\x07 ![img](http://evil/x.png) [x](javascript:alert(1))\u009b2K",
	}}}
	for _, format := range Formats {
		var b strings.Builder
		assert.NilError(t, Write(&b, format, run))
		out := b.String()
		for _, r := range out {
			assert.Assert(t, r == '\n' || r == '\t' || !unicode.IsControl(r) && !unicode.Is(unicode.Cf, r), "%s: %U in %q", format, r, out)
		}
		if format == "markdown" {
			assert.Assert(t, !strings.Contains(out, "[x](") && !strings.Contains(out, "![img]("), "%s", out)
		}
	}
}

// A run's notes (how it was held, framework/proc) show in the text
// reports, where the verdicts alone would not say it.
func TestRunNotesShown(t *testing.T) {
	note := "weaker containment: steps get no pid namespace of their own"
	run := &result.Run{SKU: "h200", Suite: "singlenode", Launcher: "local", Status: result.Pass, Notes: []string{note},
		Tests: []result.Test{{Name: "nccl.all_reduce", Status: result.Pass, Message: "ok"}}}
	for _, format := range Formats {
		var b strings.Builder
		assert.NilError(t, Write(&b, format, run))
		assert.Assert(t, strings.Contains(b.String(), note), "%s:\n%s", format, b.String())
	}
	var b strings.Builder
	assert.NilError(t, HTML(&b, run, nil))
	assert.Assert(t, strings.Contains(b.String(), note), "html")
}

// --format is one of Formats; anything else is refused naming the flag.
func TestCheckFormat(t *testing.T) {
	for _, f := range Formats {
		assert.NilError(t, CheckFormat(f))
	}
	assert.Error(t, CheckFormat("yaml"), `unknown --format "yaml" (known: table, json, markdown)`)
	assert.Error(t, CheckFormat(""), `unknown --format "" (known: table, json, markdown)`)
}
