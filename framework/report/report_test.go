package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

func f(v float64) *float64 { return &v }

// sample is a run with one test of each outcome, numbers from the H200
// recordings (pass) and a NCCL_P2P_DISABLE=1 run (fail).
func sample() *result.Run {
	lbl := map[string]string{"placement": "out-of-place", "type": "float", "redop": "sum"}
	r := &result.Run{SKU: "h200", Suite: "singlenode", Launcher: "local", Scope: "1x2", Hosts: []string{"vm"},
		Started: time.Date(2026, 11, 30, 5, 30, 0, 0, time.UTC), Duration: 83 * time.Second, Version: "test",
		Tests: []result.Test{
			{Name: "nccl.all_reduce", Status: result.Pass, Scope: "1x2", Message: "14 points inside their bands", Duration: 9 * time.Second,
				Commands: []string{"all_reduce_perf -b 8 -e 4G -f 2 -g 2 -c 1 -J all_reduce.json"},
				Info:     map[string]string{"nccl_version": "2.28.9", "nccl_tests_version": "2.19.6", "gpu": "NVIDIA H200", "hosts": "vm"},
				Metrics: []result.Judged{
					{Metric: result.Metric{Name: "busbw", Value: 329.8, Unit: "GB/s", Size: 1 << 30, Labels: lbl}, Status: result.Pass, Expected: f(329.8), Band: ">= 296.8 (warn < 313.3)"},
					{Metric: result.Metric{Name: "busbw", Value: 344.03, Unit: "GB/s", Size: 4 << 30, Labels: lbl}, Status: result.Pass, Expected: f(344.03), Band: ">= 309.6 (warn < 326.8)"},
					{Metric: result.Metric{Name: "time", Value: 16.9, Unit: "us", Size: 8, Labels: lbl}, Status: result.Skip},
				}},
			{Name: "nccl.all_gather", Status: result.Fail, Scope: "1x2", Duration: 8 * time.Second,
				Message: "busbw out-of-place 28.7 GB/s at 4 GiB below 273.9 (baseline 304.3 -10%)",
				Metrics: []result.Judged{{Metric: result.Metric{Name: "busbw", Value: 28.7, Unit: "GB/s", Size: 4 << 30, Labels: lbl}, Status: result.Fail,
					Expected: f(304.3), Band: ">= 273.9", Message: "busbw out-of-place 28.7 GB/s at 4 GiB below 273.9 (baseline 304.3 -10%)"}},
				Checks:      []result.Check{{Name: "data validation", OK: true}},
				Diagnostics: []result.Diagnostic{{Level: result.Warning, Message: "NCCL WARN Cuda failure 'peer access is not supported'", Source: "all_gather.log:12"}},
				Raw:         []string{"raw/nccl.all_gather/all_gather.log"}},
			{Name: "nccl.alltoall", Status: result.Error, Scope: "1x2", Message: "alltoall.log:9: Test NCCL failure common.cu:1279 'unhandled system error'", Metrics: []result.Judged{}},
			{Name: "nccl.hypercube", Status: result.Skip, Scope: "1x2", Message: "no baseline for nccl.hypercube in SKU h200", Metrics: []result.Judged{}},
		}}
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
	assert.Equal(t, doc.Status, "error")
	assert.Equal(t, doc.Tests[1].Name, "nccl.all_gather")
	assert.Equal(t, doc.Tests[1].Status, "fail")
	m := doc.Tests[1].Metrics[0]
	assert.Equal(t, m.Name, "busbw")
	assert.Equal(t, m.Value, 28.7)
	assert.Equal(t, m.Unit, "GB/s")
	assert.Equal(t, m.Status, "fail")
	assert.Equal(t, *m.Size, float64(4<<30))
}

func TestJUnit(t *testing.T) {
	doc := JUnit(sample())
	doc.Suites[0].Hostname = "testhost"
	var b bytes.Buffer
	assert.NilError(t, doc.WriteXML(&b))
	golden.Assert(t, b.String(), "junit.golden")

	// Read it back the way a CI consumer does.
	var parsed struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Props []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	assert.NilError(t, xml.Unmarshal(b.Bytes(), &parsed))
	assert.Equal(t, parsed.Tests, 4)
	assert.Equal(t, parsed.Failures, 1)
	assert.Equal(t, parsed.Errors, 1)
	assert.Equal(t, parsed.Skipped, 1)
	assert.Equal(t, parsed.Suites[0].Cases[1].Failure.Message, "busbw out-of-place 28.7 GB/s at 4 GiB below 273.9 (baseline 304.3 -10%)")
	props := map[string]string{}
	for _, p := range parsed.Suites[0].Props {
		props[p.Name] = p.Value
	}
	assert.Equal(t, props["sku"], "h200")
	assert.Equal(t, props["scope"], "1x2")
	assert.Equal(t, props["hosts"], "vm")
	assert.Equal(t, props["nccl_version"], "2.28.9")
}

func TestExitCodes(t *testing.T) {
	for st, code := range map[result.Status]int{result.Pass: 0, result.Warn: 0, result.Skip: 2, result.Fail: 1, result.Error: 2} {
		r := &result.Run{Tests: []result.Test{{Status: st}}}
		r.Finish()
		assert.Equal(t, r.ExitCode(), code, string(st))
	}
	// One judged test is enough for a run to count.
	r := &result.Run{Tests: []result.Test{{Status: result.Skip}, {Status: result.Pass}}}
	r.Finish()
	assert.Equal(t, r.ExitCode(), 0)
}
