package judge

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// seed000 is the out-of-place busbw curve of seed 000 (Azure NDm A100 v4,
// 2 x 8 GPUs all_reduce, seeds/000_696f9a192ccaccb4.txt lines 470-477),
// 64 MiB to 8 GiB.
var seed000 = map[int64]float64{64 << 20: 134.92, 128 << 20: 150.45, 256 << 20: 167.02, 512 << 20: 176.54,
	1 << 30: 181.98, 2 << 30: 186.1, 4 << 30: 188.34, 8 << 30: 189.2}

func curveOf(pts map[int64]float64, placement string, edit func(size int64, v float64) float64) []result.Metric {
	var ms []result.Metric
	for s, v := range pts {
		if edit != nil {
			v = edit(s, v)
		}
		ms = append(ms, busbw(s, v, placement))
	}
	return ms
}

func summaryEntry(t *testing.T, kind string, value float64, band sku.Band, r *sku.SizeRange) *sku.Entry {
	return &sku.Entry{Test: "nccl.all_reduce", Metric: "busbw", Unit: "GB/s", Labels: map[string]string{"placement": "out-of-place"},
		Summary: kind, Value: &value, Range: r, Band: band, Source: "seed 000"}
}

// One table per rule of baselines/README.md: summaries judge one number
// computed from the curve.
func TestSummaries(t *testing.T) {
	rel := sku.Band{Min: bound(t, "-10%", true), WarnMin: bound(t, "-5%", true), WarnMax: bound(t, "+50%", false)}
	abs := sku.Band{Min: bound(t, ">= 170 GB/s", true), WarnMin: bound(t, ">= 180 GB/s", true)}
	from64M := &sku.SizeRange{From: 64 << 20}
	to4G := &sku.SizeRange{From: 64 << 20, To: 4 << 30}
	halve8G := func(s int64, v float64) float64 {
		if s == 8<<30 {
			return v / 2
		}
		return v
	}
	cases := []struct {
		name   string
		entry  *sku.Entry
		curve  []result.Metric
		status result.Status
		value  float64
		msg    string
	}{
		{"peak passes on the seed's own curve", summaryEntry(t, "peak", 189.2, rel, nil), curveOf(seed000, "out-of-place", nil), result.Pass, 189.2, ""},
		{"peak ignores a low point at the largest size", summaryEntry(t, "peak", 189.2, rel, nil), curveOf(seed000, "out-of-place", halve8G), result.Pass, 188.34, ""},
		{"largest catches that same low point", summaryEntry(t, "largest", 189.2, rel, nil), curveOf(seed000, "out-of-place", halve8G), result.Fail, 94.6,
			"busbw largest out-of-place 94.6 GB/s at 8 GiB below 170.3 (baseline 189.2 -10%)"},
		{"largest with absolute bounds, warn zone", summaryEntry(t, "largest", 189.2, abs, nil), curveOf(seed000, "out-of-place", func(s int64, v float64) float64 { return v * 0.93 }), result.Warn, 189.2 * 0.93,
			"busbw largest out-of-place 176.0 GB/s at 8 GiB below 180.0 (baseline 189.2, limit >= 180 GB/s)"},
		{"mean over 64 MiB.. of the seed", summaryEntry(t, "mean", 171.82, rel, from64M), curveOf(seed000, "out-of-place", nil), result.Pass, 171.81875, ""},
		{"mean drops when the plateau sags 15%", summaryEntry(t, "mean", 171.82, rel, from64M), curveOf(seed000, "out-of-place", func(s int64, v float64) float64 {
			if s >= 1<<30 {
				return v * 0.85
			}
			return v
		}), result.Warn, 157.838375, "busbw mean 64 MiB.. out-of-place 157.8 GB/s below 163.2 (baseline 171.8 -5%)"},
		{"twice the expected peak warns: fewer ranks or another path", summaryEntry(t, "peak", 94.6, rel, nil), curveOf(seed000, "out-of-place", nil), result.Warn, 189.2,
			"busbw peak out-of-place 189.2 GB/s at 8 GiB above 141.9 (baseline 94.6 +50%)"},
		{"mean over a shorter sweep warns that it is not comparable", summaryEntry(t, "mean", 171.82, rel, &sku.SizeRange{From: 64 << 20, To: 16 << 30}), curveOf(seed000, "out-of-place", nil), result.Warn, 171.81875,
			"baseline points not measured: busbw[out-of-place] mean 64 MiB..16 GiB: measured only up to 8 GiB"},
		{"in-place points do not enter an out-of-place summary", summaryEntry(t, "mean", 171.82, rel, to4G), append(curveOf(seed000, "out-of-place", nil), curveOf(seed000, "in-place", func(int64, float64) float64 { return 1 })...), result.Pass, 1185.35 / 7, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Test(result.Parsed{Metrics: c.curve}, []*sku.Entry{c.entry}, "")
			assert.Equal(t, got.Status, c.status, got.Message)
			var s *result.Judged
			for i := range got.Metrics {
				if got.Metrics[i].Summary != "" {
					s = &got.Metrics[i]
				}
			}
			assert.Assert(t, s != nil, "no summary metric in %+v", got.Metrics)
			assert.Assert(t, s.Value > c.value-1e-9 && s.Value < c.value+1e-9, "summary value %v, want %v", s.Value, c.value)
			assert.Equal(t, len(got.Metrics), len(c.curve)+1, "every measured point is kept beside the summary")
			assert.Assert(t, s.Expected != nil && *s.Expected == *c.entry.Value, "the summary's expected value is the entry's: %v", s.Expected)
			assert.Equal(t, s.Source, c.entry.Source, "reports show where the summary's number comes from")
			assert.Assert(t, s.Band != "", "reports show the summary's band")
			if c.msg != "" {
				assert.Assert(t, strings.HasPrefix(got.Message, c.msg), "message %q, want prefix %q", got.Message, c.msg)
			}
		})
	}
}

// The dip check finds a curve that falls as size grows even when every
// point is above its floor.
func TestDip(t *testing.T) {
	e := entry(t, seed000)
	e.Band = sku.Band{Min: bound(t, "-20%", true)}
	e.Dip = &sku.Dip{Warn: 5, Fail: 10}
	cases := []struct {
		name   string
		edit   func(int64, float64) float64
		status result.Status
		msg    string
	}{
		{"the seed's rising curve has no dip", nil, result.Pass, ""},
		{"-8% at 2 GiB: inside the -20% floor, a dip warns", func(s int64, v float64) float64 {
			if s == 2<<30 {
				return 189.2 * 0.92 * (182.0 / 189.2)
			}
			return v
		}, result.Warn, "dip busbw out-of-place: falls 8.0% from 182.0 GB/s at 1 GiB to 167.4 GB/s at 2 GiB as size grows (warn above 5%)"},
		{"a slow slide over several sizes counts from the highest point", func(s int64, v float64) float64 {
			switch s {
			case 2 << 30:
				return 175
			case 4 << 30:
				return 170
			case 8 << 30:
				return 160
			}
			return v
		}, result.Fail, "dip busbw out-of-place: falls 12.1% from 182.0 GB/s at 1 GiB to 160.0 GB/s at 8 GiB as size grows (fail above 10%)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Test(result.Parsed{Metrics: curveOf(seed000, "out-of-place", c.edit)}, []*sku.Entry{e}, "")
			assert.Equal(t, got.Status, c.status, got.Message)
			if c.msg != "" {
				assert.Assert(t, strings.HasPrefix(got.Message, c.msg), "message %q, want prefix %q", got.Message, c.msg)
			}
			found := false
			for _, ch := range got.Checks {
				found = found || strings.HasPrefix(ch.Name, "dip ")
			}
			assert.Assert(t, found, "the dip check is listed even when it passes")
		})
	}
}

// Correctness gates fail the test whatever the bandwidth, summaries and dip
// checks included.
func TestCorrectnessGatesWin(t *testing.T) {
	rel := sku.Band{Min: bound(t, "-10%", true)}
	for _, gate := range []result.Check{
		{Name: "data validation", Message: "#wrong 3 at 1 GiB"},
		{Name: "out of bounds values", Message: "2 FAILED"},
		{Name: "rank count", Message: "8 ranks, the scope has 16"},
	} {
		t.Run(gate.Name, func(t *testing.T) {
			got := Test(result.Parsed{Metrics: curveOf(seed000, "out-of-place", nil), Checks: []result.Check{gate}},
				[]*sku.Entry{summaryEntry(t, "peak", 189.2, rel, nil), entry(t, seed000)}, "")
			assert.Equal(t, got.Status, result.Fail)
			assert.Assert(t, strings.HasPrefix(got.Message, gate.Name+": "), got.Message)
		})
	}
}
