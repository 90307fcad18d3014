package judge

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

func bound(t *testing.T, s string, lower bool) sku.Bound {
	t.Helper()
	b, err := sku.ParseBound(s, lower)
	assert.NilError(t, err)
	return b
}

func TestValue(t *testing.T) {
	band := sku.Band{Min: bound(t, "-10%", true), WarnMin: bound(t, "-5%", true), WarnMax: bound(t, "+50%", false)}
	abs := sku.Band{Min: bound(t, ">= 360 GB/s", true)}
	m := func(v float64) result.Metric {
		return result.Metric{Name: "busbw", Value: v, Unit: "GB/s", Size: 4 << 30}
	}
	cases := []struct {
		name   string
		m      result.Metric
		ref    float64
		band   sku.Band
		status result.Status
		msg    string
	}{
		{"inside", m(340), 345.5, band, result.Pass, ""},
		{"warn zone", m(320), 345.5, band, result.Warn, "busbw 320.0 GB/s at 4 GiB below 328.2 (baseline 345.5 -5%)"},
		{"below the floor", m(28.7), 345.5, band, result.Fail, "busbw 28.7 GB/s at 4 GiB below 310.9 (baseline 345.5 -10%)"},
		{"exactly on the floor passes the floor", m(345.5 * 0.9), 345.5, band, result.Warn, ""},
		{"far above: another path or fewer ranks", m(700), 345.5, band, result.Warn, "busbw 700.0 GB/s at 4 GiB above 518.2 (baseline 345.5 +50%)"},
		{"absolute floor", m(350), 380, abs, result.Fail, "busbw 350.0 GB/s at 4 GiB below 360.0 (baseline 380.0, limit >= 360 GB/s)"},
		{"absolute floor met", m(361), 380, abs, result.Pass, ""},
		{"placement in the message", result.Metric{Name: "busbw", Value: 1, Unit: "GB/s", Size: 1 << 30, Labels: map[string]string{"placement": "in-place"}}, 345.5, band, result.Fail,
			"busbw in-place 1.0 GB/s at 1 GiB below 310.9 (baseline 345.5 -10%)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, _, msg := Value(c.m, "GB/s", c.ref, c.band)
			assert.Equal(t, st, c.status)
			if c.msg != "" || st == result.Pass {
				assert.Equal(t, msg, c.msg)
			}
		})
	}
}

func entry(t *testing.T, points map[int64]float64) *sku.Entry {
	e := &sku.Entry{Test: "nccl.all_reduce", Scope: sku.Scope{Nodes: 1, GPUsPerNode: 2}, Metric: "busbw", Unit: "GB/s",
		Labels: map[string]string{"placement": "out-of-place"}, Source: "test",
		Band: sku.Band{Min: bound(t, "-10%", true), WarnMin: bound(t, "-5%", true)}}
	for s, v := range points {
		e.Points = append(e.Points, sku.Point{Size: sku.Size(s), Value: v})
	}
	return e
}

func busbw(size int64, v float64, placement string) result.Metric {
	return result.Metric{Name: "busbw", Value: v, Unit: "GB/s", Size: size, Labels: map[string]string{"placement": placement, "type": "float"}}
}

func TestTest(t *testing.T) {
	e := entry(t, map[int64]float64{1 << 30: 330, 4 << 30: 344})
	good := []result.Metric{busbw(1<<30, 329, "out-of-place"), busbw(4<<30, 343, "out-of-place"), busbw(4<<30, 10, "in-place")}
	cases := []struct {
		name    string
		parsed  result.Parsed
		entries []*sku.Entry
		status  result.Status
		msg     string
	}{
		{"pass; in-place is not in this baseline", result.Parsed{Metrics: good}, []*sku.Entry{e}, result.Pass, "2 points inside their bands"},
		{"one point low fails the test", result.Parsed{Metrics: []result.Metric{busbw(1<<30, 329, "out-of-place"), busbw(4<<30, 28.7, "out-of-place")}},
			[]*sku.Entry{e}, result.Fail, "busbw out-of-place 28.7 GB/s at 4 GiB below 309.6 (baseline 344.0 -10%)"},
		{"wrong data fails whatever the bandwidth", result.Parsed{Metrics: good, Checks: []result.Check{{Name: "data validation", OK: false, Message: "3 wrong elements"}}},
			[]*sku.Entry{e}, result.Fail, "data validation: 3 wrong elements"},
		{"parse error is an error, metrics kept", result.Parsed{Metrics: good, Error: "truncated"}, []*sku.Entry{e}, result.Error, "truncated"},
		{"no baseline at all", result.Parsed{Metrics: good}, nil, result.Skip, "no baseline here"},
		{"no baseline but a failed check still fails", result.Parsed{Metrics: good, Checks: []result.Check{{Name: "rank count", Message: "1, expected 2"}}}, nil, result.Fail, "rank count: 1, expected 2"},
		{"no measured size matches: nothing signed off", result.Parsed{Metrics: []result.Metric{busbw(1<<20, 50, "out-of-place")}}, []*sku.Entry{e}, result.Error, "no measured point matches the baseline (it has busbw[out-of-place] at "},
		{"nothing measured", result.Parsed{}, []*sku.Entry{e}, result.Error, "no metrics in the output"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Test(c.parsed, c.entries, "no baseline here")
			assert.Equal(t, got.Status, c.status, got.Message)
			assert.Assert(t, len(got.Message) >= len(c.msg) && got.Message[:len(c.msg)] == c.msg, "message %q, want prefix %q", got.Message, c.msg)
			assert.Equal(t, len(got.Metrics), len(c.parsed.Metrics), "every measured metric is kept")
		})
	}
}

// Baseline points the run did not measure make the test warn: the sweep
// signs off less than the baseline asks for.
func TestUnmeasuredPointsWarn(t *testing.T) {
	e := entry(t, map[int64]float64{1 << 30: 330, 4 << 30: 344})
	got := Test(result.Parsed{Metrics: []result.Metric{busbw(1<<30, 329, "out-of-place")}}, []*sku.Entry{e}, "")
	assert.Equal(t, got.Status, result.Warn)
	assert.Equal(t, got.Message, "baseline points not measured: busbw[out-of-place] at 4 GiB")
}

// An entry that matches nothing while another does (a label typo) is an
// error: it would otherwise judge half the run and pass.
func TestUnmatchedEntryIsAnError(t *testing.T) {
	good := entry(t, map[int64]float64{1 << 30: 330})
	typo := entry(t, map[int64]float64{1 << 30: 330})
	typo.Labels = map[string]string{"placement": "in-place", "type": "flaot"}
	typo.Line = 42
	got := Test(result.Parsed{Metrics: []result.Metric{busbw(1<<30, 329, "out-of-place"), busbw(1<<30, 3, "in-place")}}, []*sku.Entry{good, typo}, "")
	assert.Equal(t, got.Status, result.Error)
	assert.Equal(t, got.Message, "baseline entry at line 42 (busbw[in-place] {placement=in-place,type=flaot}) matches no measured point")
}

func TestSingleValueEntry(t *testing.T) {
	v := 100.0
	e := &sku.Entry{Metric: "avg_busbw", Unit: "GB/s", Value: &v, Band: sku.Band{Min: bound(t, "-10%", true)}}
	got := Test(result.Parsed{Metrics: []result.Metric{{Name: "avg_busbw", Value: 80, Unit: "GB/s"}}}, []*sku.Entry{e}, "")
	assert.Equal(t, got.Status, result.Fail)
	assert.Equal(t, got.Message, "avg_busbw 80.0 GB/s below 90.0 (baseline 100.0 -10%)")
}

// Lower is better for a latency: far above its baseline fails, a little
// above warns, far below warns (less work was timed), and the message says
// "above"/"below" the right way. The entries are the shipped mi355x Mori-EP
// latencies (seed 004 T7), judged as a run would judge them.
func TestLatencyIsJudgedLowerIsBetter(t *testing.T) {
	cat, err := sku.Load(baselines.FS, "baselines")
	assert.NilError(t, err)
	var e *sku.Entry
	for _, x := range cat.SKUs["mi355x"].Entries("mori.ep_intranode", sku.Scope{Nodes: 1, GPUsPerNode: 8}) {
		if x.Metric == "lat" && x.Labels["phase"] == "dispatch" && x.Labels["stat"] == "average" {
			e = x
		}
	}
	assert.Assert(t, e != nil && e.Unit == "us" && *e.Value == 847.88, "the shipped entry changed: %+v", e)
	lat := func(v float64) result.Metric {
		return result.Metric{Name: "lat", Value: v, Unit: "us", Labels: map[string]string{"phase": "dispatch", "stat": "average"}}
	}
	cases := []struct {
		name   string
		v      float64
		status result.Status
		msg    string
	}{
		{"at the baseline", 847.88, result.Pass, ""},
		{"somewhat faster", 700, result.Pass, ""},
		{"a little slower warns", 900, result.Warn, "lat 900.0 us above 890.3 (baseline 847.9 +5%)"},
		{"much slower fails", 1000, result.Fail, "lat 1000.0 us above 932.7 (baseline 847.9 +10%)"},
		{"far faster warns: less was timed", 400, result.Warn, "lat 400.0 us below 423.9 (baseline 847.9 -50%)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Test(result.Parsed{Metrics: []result.Metric{lat(c.v)}}, []*sku.Entry{e}, "")
			assert.Equal(t, got.Status, c.status, got.Message)
			assert.Equal(t, got.Metrics[0].Status, c.status)
			if c.status != result.Pass {
				assert.Equal(t, got.Message, c.msg)
			}
		})
	}
}
