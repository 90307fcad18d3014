package sku

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

const curveGood = `sku: t
baselines:
  - test: nccl.all_reduce
    scope: {nodes: 2, gpus_per_node: 8}
    metric: busbw
    unit: GB/s
    labels: {placement: out-of-place}
    summary: mean
    range: {from: 64M, to: 8G}
    value: 171.8
    band: {min: "-10%", warn_min: "-5%", warn_max: "+50%"}
    ceiling: 200
    source: seed 000
  - test: nccl.all_reduce
    scope: {nodes: 2, gpus_per_node: 8}
    metric: busbw
    unit: GB/s
    labels: {placement: in-place}
    band: {min: "-10%"}
    dip: {warn: "5%", fail: "15%"}
    source: seed 000
    points:
      - {size: 4G, value: 188.25}
      - {size: 8G, value: 189.28}
`

func TestParseCurve(t *testing.T) {
	s, err := Parse([]byte(curveGood), "t.yaml")
	assert.NilError(t, err)
	e := s.Baselines[0]
	assert.Equal(t, e.Summary, SummaryMean)
	assert.Equal(t, e.CurveRange(), SizeRange{From: 64 << 20, To: 8 << 30, Line: 9})
	d := s.Baselines[1]
	assert.Equal(t, d.Dip.Warn, 5.0)
	assert.Equal(t, d.Dip.Fail, 15.0)
	assert.Equal(t, d.CurveRange(), SizeRange{From: 4 << 30, To: 8 << 30}, "without a range the points' span is the curve")
}

// Each rule of validation, with the file, line and field it names.
func TestParseCurveBad(t *testing.T) {
	cases := []struct {
		name, from, to, want string
	}{
		{"unknown summary", "summary: mean", "summary: median", `t.yaml: line 8: field summary: "median" is not one of peak, largest, mean`},
		{"mean over every size misleads", "    range: {from: 64M, to: 8G}\n", "", "field range: a mean needs range.from"},
		{"summary with points", "    summary: mean\n    range: {from: 64M, to: 8G}\n    value: 171.8\n", "    summary: mean\n    range: {from: 64M, to: 8G}\n    points: [{size: 1G, value: 3}]\n", "field summary: a summary is one number"},
		{"empty range", "range: {from: 64M, to: 8G}", "range: {from: 8G, to: 64M}", "line 9: field range: to 67108864 is below from"},
		{"typo in range", "range: {from: 64M", "range: {form: 64M", `line 9: field "form" is not known here`},
		{"dip warn above fail", `dip: {warn: "5%", fail: "15%"}`, `dip: {warn: "20%", fail: "15%"}`, "line 20: field dip: warn 20% is not below fail 15%"},
		{"dip of 100%", `fail: "15%"`, `fail: "100%"`, `line 20: field dip.fail: "100%": a drop must be more than 0% and less than 100%`},
		{"bits for bytes: reference 8x above an absolute floor's unit slip", `band: {min: "-10%"}`, `band: {min: ">= 1510"}`, "fails its own band (min >= 1510): a healthy system could never pass (the two differ by 8.0x: GB/s (bytes) and Gb/s (bits) mixed up?)"},
		{"reference fails its own absolute floor", `band: {min: "-10%"}`, `band: {min: ">= 200 GB/s"}`, "line 23: field value: the reference 188.2 GB/s fails its own band (min >= 200 GB/s)"},
		{"reference above the ceiling in bits", "ceiling: 200", "ceiling: 21.5", "field value: 171.8 GB/s is above the entry's ceiling 21.5 GB/s, the physical limit (the two differ by 8.0x"},
		{"zero reference with a relative floor", "value: 171.8", "value: 0", "line 10: field value: 0 with a relative floor (min -10%, warn_min -5%): the floor is 0 and can never fail"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Assert(t, strings.Contains(curveGood, c.from), "case does not apply: %q", c.from)
			_, err := Parse([]byte(strings.Replace(curveGood, c.from, c.to, 1)), "t.yaml")
			assert.ErrorContains(t, err, c.want)
			assert.Assert(t, strings.HasPrefix(err.Error(), "t.yaml: line "), err.Error())
		})
	}
}
