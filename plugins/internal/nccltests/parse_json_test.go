package nccltests

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
)

// TestParseJSONGolden parses every JSON file under testdata/ and compares
// a rendering of the Output with testdata/golden/.
func TestParseJSONGolden(t *testing.T) {
	for _, rel := range ntFiles(t, ".json") {
		t.Run(rel, func(t *testing.T) {
			golden.Assert(t, ntRender(ntJSON(t, rel)), filepath.Join("golden", rel+".golden"))
		})
	}
}

// TestParseJSONH200 checks the real 2-GPU H200 JSON files value by value.
func TestParseJSONH200(t *testing.T) {
	o := ntJSON(t, "h200x2-2.19.6/all_reduce.json")
	assert.Equal(t, o.Format, "json")
	assert.Equal(t, o.TestsVersion, "")
	assert.Equal(t, o.NCCLVersion, "2.28.9")
	assert.Equal(t, o.Collective, "all_reduce")
	assert.Equal(t, o.NThreads, 1)
	assert.Equal(t, o.NGPUs, 2)
	assert.Equal(t, o.MinBytes, int64(8))
	assert.Equal(t, o.MaxBytes, int64(4294967296))
	// One devices entry per process; this process drives both GPUs.
	assert.DeepEqual(t, o.Ranks, []Rank{{Rank: 0, Pid: 1550, Host: "vm", BusID: "0000:00:06", DeviceName: "NVIDIA H200"}})
	assert.Equal(t, o.RankCount, 2)
	assert.Equal(t, o.Groups, 1)
	assert.Equal(t, len(o.Rows), 30)
	assert.DeepEqual(t, o.Rows[29], Row{Size: 4294967296, Count: 1073741824, Type: "float", Redop: "sum", Root: -1,
		OutOfPlace: &Perf{Time: 12484.2274, AlgBW: 344.031485, BusBW: 344.031485, Wrong: 0},
		InPlace:    &Perf{Time: 12502.19395, AlgBW: 343.537087, BusBW: 343.537087, Wrong: 0}})
	assert.Equal(t, o.OutOfBounds, 0)
	assert.Equal(t, o.OutOfBoundsFailed, false)
	assert.Equal(t, o.FooterSeen, true)
	assert.Equal(t, o.AvgBusBW, 103.40683)
	assert.Equal(t, len(o.Errors), 0) // "errors": [""]
	assert.Equal(t, len(o.Warnings), 0)

	m := ntJSON(t, "h200x2-2.19.6/mpi_np2_all_reduce.json")
	assert.Equal(t, len(m.Ranks), 2)
	assert.Equal(t, m.RankCount, 2)
	assert.Equal(t, m.Ranks[1].Pid, 1373)

	b := ntJSON(t, "h200x2-2.19.6/broadcast.json")
	assert.Equal(t, b.Rows[0].Root, 0) // "root": "     0"
	s := ntJSON(t, "h200x2-2.19.6/sendrecv.json")
	assert.Equal(t, s.Rows[0].InPlace.Wrong, int64(-1)) // "nwrong": null
}

// TestParseJSONVariants checks the real JSON files of the option variants
// (written compact, as nccl-tests writes them).
func TestParseJSONVariants(t *testing.T) {
	v := func(name string) *Output { return ntJSON(t, "h200x2-variants/"+name) }
	t.Run("-I per-iteration", func(t *testing.T) {
		o := v("periter.json")
		assert.DeepEqual(t, o.Rows[0].OutOfPlace, &Perf{Time: 22.0743, AlgBW: 0.000362, BusBW: 0.000362, Wrong: 0,
			IMin: 18.015999, IMax: 33.023998, IP99: 33.023998, ICV: 15.381548})
	})
	t.Run("-C cpu_time", func(t *testing.T) {
		assert.Equal(t, v("cputime.json").Rows[0].OutOfPlace.Time, 11.6895)
	})
	t.Run("-c 0 nwrong null", func(t *testing.T) {
		for _, r := range v("nocheck.json").Rows {
			assert.Equal(t, r.OutOfPlace.Wrong, int64(-1))
			assert.Equal(t, r.InPlace.Wrong, int64(-1))
		}
	})
	t.Run("-t 2: one device entry, two ranks", func(t *testing.T) {
		o := v("threads2.json")
		assert.Equal(t, len(o.Ranks), 1)
		assert.Equal(t, o.RankCount, 2)
		assert.Equal(t, o.NThreads, 2)
	})
	t.Run("average not okay", func(t *testing.T) {
		o := v("minbw.json")
		assert.Equal(t, o.AvgBusBW, 145.575357)
		assert.Assert(t, ntHasDiag(o.Warnings, "as not okay"))
	})
	t.Run("failed run: no results", func(t *testing.T) {
		o := v("noiface.json")
		assert.Equal(t, len(o.Rows), 0)
		assert.Equal(t, o.RankCount, 2)
		assert.Equal(t, o.FooterSeen, false)
		assert.Equal(t, o.OutOfBounds, -1)
		assert.Equal(t, o.AvgBusBW, -1.0)
		assert.Equal(t, len(o.Errors), 0)
	})
	t.Run("killed run", func(t *testing.T) {
		o := v("killed.json")
		assert.Equal(t, len(o.Rows), 46)
		assert.DeepEqual(t, o.Errors, []Diag{{Text: "JSON file ends early, at byte 15050 in results[46]: output truncated (run killed?); 46 complete results kept"}})
		assert.Equal(t, o.FooterSeen, false)
	})
}

// ntPrintTol is how far a value printed by nccl-tests' getFloatStr in
// width characters can be from the exact value.
func ntPrintTol(v float64, width int) float64 {
	for prec := 2; prec >= 0; prec-- {
		if len(strconv.FormatFloat(v, 'f', prec, 64)) <= width {
			return 0.5*math.Pow10(-prec) + 1e-9
		}
	}
	return math.Abs(v) * 0.05
}

// TestParseJSONMatchesText checks that the text and the JSON of the same
// run give the same rows, within the rounding of the text.
func TestParseJSONMatchesText(t *testing.T) {
	var pairs []string
	for _, rel := range ntFiles(t, ".json") {
		pairs = append(pairs, strings.TrimSuffix(rel, ".json"))
	}
	assert.Assert(t, len(pairs) >= 14)
	for _, base := range pairs {
		t.Run(base, func(t *testing.T) {
			txt, js := ntText(t, base+".txt"), ntJSON(t, base+".json")
			assert.Equal(t, js.Collective, txt.Collective)
			assert.Equal(t, js.NCCLVersion, txt.NCCLVersion)
			assert.Equal(t, js.NThreads, txt.NThreads)
			assert.Equal(t, js.NGPUs, txt.NGPUs)
			assert.Equal(t, js.MaxBytes, txt.MaxBytes)
			assert.Equal(t, js.RankCount, txt.RankCount)
			assert.Equal(t, js.FooterSeen, txt.FooterSeen)
			assert.Equal(t, js.OutOfBounds, txt.OutOfBounds)
			if txt.AvgBusBW >= 0 {
				ntNear(t, js.AvgBusBW, txt.AvgBusBW, 0.001*txt.AvgBusBW, "avg busbw")
			}
			n := len(js.Rows)
			if strings.HasSuffix(base, "killed") {
				assert.Assert(t, len(txt.Rows) >= n) // the JSON lost more
			} else {
				assert.Equal(t, len(txt.Rows), n)
			}
			for i, j := range js.Rows[:n] {
				x := txt.Rows[i]
				assert.DeepEqual(t, [5]any{j.Size, j.Count, j.Type, j.Redop, j.Root}, [5]any{x.Size, x.Count, x.Type, x.Redop, x.Root})
				for k, pp := range [][2]*Perf{{j.OutOfPlace, x.OutOfPlace}, {j.InPlace, x.InPlace}} {
					jp, xp := pp[0], pp[1]
					assert.Equal(t, jp == nil, xp == nil)
					if jp == nil {
						continue
					}
					what := strconv.FormatInt(j.Size, 10) + []string{" out-of-place", " in-place"}[k]
					tol := func(a, b float64, w int) float64 { return math.Max(ntPrintTol(a, w), ntPrintTol(b, w)) }
					ntNear(t, xp.Time, jp.Time, tol(jp.Time, xp.Time, 7), what+" time")
					ntNear(t, xp.AlgBW, jp.AlgBW, tol(jp.AlgBW, xp.AlgBW, 6), what+" algbw")
					ntNear(t, xp.BusBW, jp.BusBW, tol(jp.BusBW, xp.BusBW, 6), what+" busbw")
					ntNear(t, xp.IMin, jp.IMin, tol(jp.IMin, xp.IMin, 7), what+" i_min")
					ntNear(t, xp.IMax, jp.IMax, tol(jp.IMax, xp.IMax, 7), what+" i_max")
					ntNear(t, xp.IP99, jp.IP99, tol(jp.IP99, xp.IP99, 7), what+" i_p99")
					ntNear(t, xp.ICV, jp.ICV, tol(jp.ICV, xp.ICV, 7), what+" i_cv")
					assert.Equal(t, xp.Wrong, jp.Wrong, what)
				}
			}
		})
	}
}

// TestParseJSONTruncated cuts a real JSON file at various places: the
// complete results are kept and Errors says the file is truncated.
func TestParseJSONTruncated(t *testing.T) {
	data := string(ntTestdata(t, "h200x2-2.19.6/all_reduce.json"))
	sizeAt := func(k int) int { // offset of results[k]'s "size"
		off := 0
		for i := 0; i <= k; i++ {
			j := strings.Index(data[off:], `"size":`)
			assert.Assert(t, j >= 0)
			off += j + 1
		}
		return off - 1
	}
	for _, tc := range []struct {
		name   string
		cut    int
		rows   int
		footer bool
	}{
		{"after the opening brace", 1, 0, false},
		{"in config", strings.Index(data, `"devices"`), 0, false},
		{"after results' bracket", strings.Index(data, `"results": [`) + len(`"results": [`), 0, false},
		{"in results[0]", sizeAt(0) + 5, 0, false},
		{"in results[7]", sizeAt(7) + 90, 7, false},
		{"in a number of results[12]", strings.Index(data[sizeAt(12):], `"bus_bw": `) + sizeAt(12) + 14, 12, false},
		{"between results 20 and 21", strings.LastIndex(data[:sizeAt(21)], "}") + 1, 21, false},
		{"after the results", strings.Index(data, `"out_of_bounds"`) - 3, 30, false},
		{"in out_of_bounds", strings.Index(data, `"okay": "true"`), 30, false},
		{"before end_time", strings.Index(data, `"end_time"`) - 1, 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseJSON(strings.NewReader(data[:tc.cut]), "cut.json")
			assert.NilError(t, err)
			assert.Equal(t, len(o.Rows), tc.rows)
			assert.Equal(t, len(o.Errors), 1)
			assert.Assert(t, is.Contains(o.Errors[0].Text, "JSON file ends early, at byte "+strconv.Itoa(tc.cut)))
			assert.Assert(t, is.Contains(o.Errors[0].Text, strconv.Itoa(tc.rows)+" complete results kept"))
			assert.Equal(t, o.FooterSeen, tc.footer)
		})
	}
}

// TestParseJSONBad checks inputs that are not nccl-tests JSON.
func TestParseJSONBad(t *testing.T) {
	data := string(ntTestdata(t, "h200x2-2.19.6/all_reduce.json"))
	// jsonDouble writes infinity as a bare inf, which is not JSON.
	infAt := strings.Index(data, "12484.2274")
	withInf := data[:infAt] + "inf" + data[infAt+len("12484.2274"):]
	for _, tc := range []struct {
		name, input, err string
	}{
		{"empty", "", "parse nccl-tests JSON x.json: the file is empty"},
		{"garbage", "hello", "parse nccl-tests JSON x.json: line 1, byte 1, in the first value: invalid character 'h' looking for beginning of value"},
		{"text output", string(ntTestdata(t, "h200x2-2.19.6/all_reduce.txt")), "line 1, byte 1"},
		{"a list", "[1, 2]", "the file does not hold a JSON object (it starts with [)"},
		{"a string", `"x"`, `(it starts with "x")`},
		{"bare inf", withInf, "parse nccl-tests JSON x.json: line " + strconv.Itoa(strings.Count(data[:infAt], "\n")+1) + ", byte " + strconv.Itoa(infAt+1) + ", in results[29]: invalid character 'i'"},
		{"two commas", strings.Replace(data, `"count": 2,`, `"count": 2,,`, 1), `in results[0]: invalid character ','`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseJSON(strings.NewReader(tc.input), "x.json")
			assert.ErrorContains(t, err, tc.err)
			assert.Assert(t, o == nil)
		})
	}

	boom := errors.New("disk on fire")
	_, err := ParseJSON(&ntErrReader{data: []byte(data[:5000]), err: boom}, "x.json")
	assert.Assert(t, errors.Is(err, boom))
	assert.ErrorContains(t, err, "read nccl-tests JSON x.json")
}

// TestParseJSONLenient checks a real file with its numbers written as
// strings, its booleans as booleans and the version 1 spelling of the
// average: the same Output comes out.
func TestParseJSONLenient(t *testing.T) {
	data := string(ntTestdata(t, "h200x2-2.19.6/all_reduce.json"))
	want := ntJSON(t, "h200x2-2.19.6/all_reduce.json")

	edited := regexp.MustCompile(`(": )(-?[0-9][0-9.e+-]*)`).ReplaceAllString(data, `$1"$2"`)
	edited = strings.ReplaceAll(edited, `"okay": "true"`, `"okay": true`)
	edited = strings.ReplaceAll(edited, `"average_bus_bandwidth"`, `"average_bus_bandwidith"`)
	edited = strings.ReplaceAll(edited, `"bandwidth"`, `"bandwidith"`)
	assert.Assert(t, strings.Contains(edited, `"size": "4294967296"`))
	assert.Assert(t, strings.Contains(edited, `"nccl_version": "22809"`))
	got, err := ParseJSON(strings.NewReader(edited), "x.json")
	assert.NilError(t, err)
	assert.Assert(t, cmp.Equal(want, got), cmp.Diff(want, got))

	// The average as a plain number, a result that is no object, and a
	// size that is no number.
	edited = regexp.MustCompile(`(?s)"average_bus_bandwidth": \{.*?\}`).ReplaceAllString(data, `"average_bus_bandwidth": 103.40683`)
	edited = strings.Replace(edited, `"results": [`, `"results": [ 42,`, 1)
	edited = strings.Replace(edited, `"size": 8,`, `"size": "eight",`, 1)
	got, err = ParseJSON(strings.NewReader(edited), "x.json")
	assert.NilError(t, err)
	assert.Equal(t, got.AvgBusBW, 103.40683)
	assert.Equal(t, len(got.Rows), 29)
	assert.DeepEqual(t, got.Warnings, []Diag{
		{Text: "JSON results[0] is a number, which is not what nccl-tests writes there: ignored"},
		{Text: `JSON results[1]: size "eight" is not a byte count: result ignored`},
	})
}

// TestParseJSONStreams checks that the result does not depend on how the
// input arrives.
func TestParseJSONStreams(t *testing.T) {
	for _, rel := range ntFiles(t, ".json") {
		data := ntTestdata(t, rel)
		want := ntJSON(t, rel)
		got, err := ParseJSON(iotest.OneByteReader(bytes.NewReader(data)), filepath.Base(rel))
		assert.NilError(t, err)
		assert.Assert(t, cmp.Equal(want, got), "%s: %s", rel, cmp.Diff(want, got))
	}
}

// A -J file of two cycles (the real file's results listed twice, the
// second time with the 4 GiB out-of-place bus_bw halved) folds them while
// decoding: one row per size with the worst cycle's values.
func TestParseJSONCycles(t *testing.T) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(ntTestdata(t, "h200x2-2.19.6/all_reduce.json")))
	dec.UseNumber()
	assert.NilError(t, dec.Decode(&doc))
	results := doc["results"].([]any)
	var second []any
	for _, r := range results {
		c := maps.Clone(r.(map[string]any))
		if c["size"] == json.Number("4294967296") {
			op := maps.Clone(c["out_of_place"].(map[string]any))
			op["bus_bw"] = json.Number("172.0157425")
			c["out_of_place"] = op
		}
		second = append(second, c)
	}
	doc["results"] = append(results, second...)
	data, err := json.Marshal(doc)
	assert.NilError(t, err)
	o, err := ParseJSON(bytes.NewReader(data), "cycles.json")
	assert.NilError(t, err)
	assert.Equal(t, len(o.Rows), 30)
	r := o.Rows[29]
	assert.Equal(t, r.Cycles, 2)
	assert.Equal(t, r.OutOfPlace.BusBW, 172.0157425)
	assert.Equal(t, r.OutOfPlace.Stats.BusBW.Max, 344.031485)
	assert.Equal(t, r.InPlace.BusBW, 343.537087)
	assert.Equal(t, o.Rows[0].Cycles, 2)
}
