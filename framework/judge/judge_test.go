package judge

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/plugins/nccl"
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
	e := &sku.Entry{Test: "nccl.all_reduce", Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}, Metric: "busbw", Unit: "GB/s",
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

// A point outside its band and an entry that matches nothing: the
// failure decides (README, Exit codes: an error must not hide a hardware
// fault) and leads the message; the unmatched entry is still said. Any
// other error (a point that could not be judged, a parse error) keeps
// the test an error.
func TestFailedPointWinsOverUnmatchedEntry(t *testing.T) {
	good := entry(t, map[int64]float64{1 << 30: 330})
	typo := entry(t, map[int64]float64{1 << 30: 330})
	typo.Labels = map[string]string{"placement": "in-place", "type": "flaot"}
	typo.Line = 42
	low := []result.Metric{busbw(1<<30, 28.7, "out-of-place"), busbw(1<<30, 3, "in-place")}
	got := Test(result.Parsed{Metrics: low}, []*sku.Entry{good, typo}, "")
	assert.Equal(t, got.Status, result.Fail, got.Message)
	assert.Equal(t, got.Message, "busbw out-of-place 28.7 GB/s at 1 GiB below 297.0 (baseline 330.0 -10%); baseline entry at line 42 (busbw[in-place] {placement=in-place,type=flaot}) matches no measured point")

	got = Test(result.Parsed{Metrics: low, Error: "truncated"}, []*sku.Entry{good, typo}, "")
	assert.Equal(t, got.Status, result.Error, got.Message)
}

// A baseline of sizeless metrics that matches nothing names the labels
// the run measured, not only the metric's name.
func TestNoMatchNamesMeasuredLabels(t *testing.T) {
	v := 724.15
	e := &sku.Entry{Test: "gemm.matmul", Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}, Metric: "tflops", Unit: "TFLOPS",
		Labels: map[string]string{"dtype": "fp16"}, Value: &v, Band: sku.Band{Min: bound(t, "-14%", true)}}
	got := Test(result.Parsed{Metrics: []result.Metric{{Name: "tflops", Value: 97.19, Unit: "TFLOPS", Labels: map[string]string{"dtype": "unknown", "gpu": "0", "mode": "alone"}}}}, []*sku.Entry{e}, "")
	assert.Equal(t, got.Status, result.Error)
	assert.Equal(t, got.Message, "no measured point matches the baseline (it has tflops {dtype=fp16}; the run measured tflops {dtype=unknown})")
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
	for _, x := range cat.SKUs["mi355x"].Entries("mori.ep_intranode", plan.Scope{Nodes: 1, GPUsPerNode: 8}) {
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
		{"a little slower warns", 900, result.Warn, "lat {phase=dispatch stat=average} 900.0 us above 890.3 (baseline 847.9 +5%)"},
		{"much slower fails", 1000, result.Fail, "lat {phase=dispatch stat=average} 1000.0 us above 932.7 (baseline 847.9 +10%)"},
		{"far faster warns: less was timed", 400, result.Warn, "lat {phase=dispatch stat=average} 400.0 us below 423.9 (baseline 847.9 -50%)"},
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

// asTypes gives every point of ms the labels type and redop, as nccl-tests
// prints them for one series of a -d all -o all run, with its values
// scaled by f: the series of a run that measured several.
func asTypes(ms []result.Metric, typ, redop string, f float64) []result.Metric {
	out := make([]result.Metric, 0, len(ms))
	for _, m := range ms {
		if m.Size == 0 {
			continue
		}
		l := map[string]string{}
		for k, v := range m.Labels {
			l[k] = v
		}
		l["type"], l["redop"] = typ, redop
		m.Labels, m.Value = l, m.Value*f
		out = append(out, m)
	}
	return out
}

// With several types or reductions in one log (-d all -o all) each series
// is judged only by entries for its own labels: an entry that names no type
// or redop means the plugin's default (float, sum); the other series are
// reported as not judged, point by point and in the test message. The
// float/sum series is the real H200 recording; the int8/avg one is the same
// points at a third of their busbw (int8 avg is slower: that must not fail
// the float/sum baseline).
func TestSeriesJudgedByTheirOwnLabels(t *testing.T) {
	h200 := shipped(t, "h200")
	scope := plan.Scope{Nodes: 1, GPUsPerNode: 2}
	real := parse(t, nccl.Plugin{}, "all_reduce", plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}, read(t, h200AllReduce))
	defaults := map[string]map[string]string{"busbw": {"type": "float", "redop": "sum"}, "algbw": {"type": "float", "redop": "sum"}, "time": {"type": "float", "redop": "sum"}}
	withInt8 := real
	withInt8.Metrics = append(append([]result.Metric(nil), real.Metrics...), asTypes(real.Metrics, "int8", "avg", 1.0/3)...)
	only := real
	only.Metrics = append(asTypes(real.Metrics, "int8", "avg", 1.0/3), asTypes(real.Metrics, "half", "sum", 1)...)
	int8Entries := func() []*sku.Entry {
		var out []*sku.Entry
		for _, e := range h200.Entries("nccl.all_reduce", scope) {
			c := *e
			c.Labels = map[string]string{"placement": e.Labels["placement"], "type": "int8", "redop": "avg"}
			out = append(out, &c)
		}
		return out
	}
	cases := []struct {
		name     string
		parsed   result.Parsed
		entries  []*sku.Entry
		defaults map[string]map[string]string
		status   result.Status
		msg      string // the whole message, or its start when it ends with "..."
	}{
		{"int8 avg is not judged by the float/sum entries", withInt8, nil, defaults, result.Pass,
			"18 points inside their bands; 1 series not judged: redop=avg type=int8, no baseline entry for its labels"},
		{"without the plugin's defaults every series met the float/sum entries (the bug)", withInt8, nil, nil, result.Fail,
			"busbw {redop=avg type=int8} out-of-place 70.9 GB/s at 16 MiB below 180.8 (baseline 212.8 -15%); ..."},
		{"an entry naming int8/avg judges that series", withInt8, int8Entries(), defaults, result.Fail,
			"busbw {redop=avg type=int8} out-of-place 70.9 GB/s at 16 MiB below 180.8 (baseline 212.8 -15%); busbw {redop=avg type=int8} in-place 73.1 GB/s at 16 MiB below 185.4 (baseline 218.1 -15%); busbw {redop=avg type=int8} out-of-place 79.2 GB/s at 32 MiB below 202.1 (baseline 237.7 -15%); and 15 more; 1 series not judged: redop=sum type=float, no baseline entry for its labels"},
		{"no series has an entry: nothing judged", only, nil, defaults, result.Skip,
			"2 series not judged: redop=avg type=int8, redop=sum type=half, no baseline entry for their labels"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			entries := c.entries
			if entries == nil {
				entries = h200.Entries("nccl.all_reduce", scope)
			}
			got := Judge(c.parsed, Options{Entries: entries, Defaults: c.defaults})
			assert.Equal(t, got.Status, c.status, got.Message)
			if want, ok := strings.CutSuffix(c.msg, "..."); ok {
				assert.Assert(t, strings.HasPrefix(got.Message, want), "message %q, want prefix %q", got.Message, want)
			} else {
				assert.Equal(t, got.Message, c.msg)
			}
			if c.defaults != nil && c.entries == nil {
				for _, m := range got.Metrics {
					if m.Name == "busbw" && m.Labels["type"] == "int8" {
						assert.Equal(t, m.Status, result.Skip)
						assert.Equal(t, m.Message, "not judged: no baseline entry for redop=avg type=int8")
					}
				}
			}
		})
	}
}

// The reason that decided the verdict comes first, then the rest from
// worst to least, "baseline points not measured" last, nothing twice; a
// failed gate outranks an output that is otherwise unusable.
func TestReasonFirst(t *testing.T) {
	e := entry(t, map[int64]float64{1 << 30: 330, 4 << 30: 344, 8 << 30: 350})
	low := []result.Metric{busbw(1<<30, 200, "out-of-place"), busbw(4<<30, 343, "out-of-place")}
	wrong := result.Check{Name: "data validation", Message: "3 wrong elements out-of-place at 1 GiB"}
	off := result.Check{Name: "data validation", Warn: true, OK: false, Message: "not checked (-c 0)"}
	cases := []struct {
		name   string
		parsed result.Parsed
		status result.Status
		msg    string
	}{
		{"gate, then points, then what was not measured", result.Parsed{Metrics: low, Checks: []result.Check{wrong}}, result.Fail,
			"data validation: 3 wrong elements out-of-place at 1 GiB; busbw out-of-place 200.0 GB/s at 1 GiB below 297.0 (baseline 330.0 -10%); baseline points not measured: busbw[out-of-place] at 8 GiB"},
		{"a failed point decides over a warn gate", result.Parsed{Metrics: low, Checks: []result.Check{off}}, result.Fail,
			"busbw out-of-place 200.0 GB/s at 1 GiB below 297.0 (baseline 330.0 -10%); data validation: not checked (-c 0); baseline points not measured: busbw[out-of-place] at 8 GiB"},
		{"the same finding twice is said once", result.Parsed{Metrics: low, Checks: []result.Check{wrong, wrong}}, result.Fail,
			"data validation: 3 wrong elements out-of-place at 1 GiB; busbw out-of-place 200.0 GB/s at 1 GiB below 297.0 (baseline 330.0 -10%); baseline points not measured: busbw[out-of-place] at 8 GiB"},
		{"a wrong result is not hidden by a cut-short log", result.Parsed{Metrics: low, Checks: []result.Check{wrong}, Error: "output ends in the middle of the table"}, result.Fail,
			"data validation: 3 wrong elements out-of-place at 1 GiB; busbw out-of-place 200.0 GB/s at 1 GiB below 297.0 (baseline 330.0 -10%); output ends in the middle of the table"},
		{"an error first, then what else was found", result.Parsed{Metrics: low, Error: "exited with status 3 (NCCL error)"}, result.Error,
			"exited with status 3 (NCCL error); busbw out-of-place 200.0 GB/s at 1 GiB below 297.0 (baseline 330.0 -10%)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Test(c.parsed, []*sku.Entry{e}, "")
			assert.Equal(t, got.Status, c.status, got.Message)
			assert.Equal(t, got.Message, c.msg)
		})
	}
}

// A plugin's Info context ends the message of a test a point warns or
// fails, and of no other: a pass, a failed gate or a parse error says
// nothing about a low figure.
func TestContextFollowsLowPoints(t *testing.T) {
	e := entry(t, map[int64]float64{1 << 30: 330, 4 << 30: 344})
	ctx := map[string]string{ContextKey: "placement: GPU0 on NUMA node 1"}
	cases := []struct {
		name    string
		metrics []result.Metric
		checks  []result.Check
		status  result.Status
		msg     string
	}{
		{"fail", []result.Metric{busbw(1<<30, 329, "out-of-place"), busbw(4<<30, 28.7, "out-of-place")}, nil, result.Fail,
			// The default dip rule sees the same point as a hole; the
			// context follows both findings, once.
			"busbw out-of-place 28.7 GB/s at 4 GiB below 309.6 (baseline 344.0 -10%); dip busbw out-of-place: 28.7 GB/s at 4 GiB is 8.7% of the point before it (329.0 GB/s at 1 GiB): a hole in the curve (the default dip rule fails a point under 60%); placement: GPU0 on NUMA node 1"},
		{"warn", []result.Metric{busbw(1<<30, 329, "out-of-place"), busbw(4<<30, 320, "out-of-place")}, nil, result.Warn,
			"busbw out-of-place 320.0 GB/s at 4 GiB below 326.8 (baseline 344.0 -5%); placement: GPU0 on NUMA node 1"},
		{"pass", []result.Metric{busbw(1<<30, 329, "out-of-place"), busbw(4<<30, 343, "out-of-place")}, nil, result.Pass,
			"2 points inside their bands"},
		{"failed gate, points fine", []result.Metric{busbw(1<<30, 329, "out-of-place"), busbw(4<<30, 343, "out-of-place")},
			[]result.Check{{Name: "rank count", Message: "1, expected 2"}}, result.Fail, "rank count: 1, expected 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Judge(result.Parsed{Metrics: c.metrics, Checks: c.checks, Info: ctx}, Options{Entries: []*sku.Entry{e}, Meanings: collectives(t)})
			assert.Equal(t, got.Status, c.status, got.Message)
			assert.Equal(t, got.Message, c.msg)
		})
	}
}
