package nccltests

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// exitMeaning names the exit codes of nccl-tests and rccl-tests
// (testResult_t in src/common.h).
var exitMeaning = map[int]string{
	1: "internal error", 2: "CUDA error", 3: "NCCL error", 4: "timeout",
	5: "not implemented (e.g. more GPUs asked than found)", 6: "invalid usage",
}

// Options tell Result what one step was asked to do and how the tool of
// the family names itself.
type Options struct {
	// Test is the collective asked for ("all_reduce").
	Test string
	// Topology is the scope the step ran at; its rank count is checked.
	Topology plan.Topology
	// ExpectMax is the largest message size asked for in bytes, Factor
	// the size step factor; 0 when unknown (logs judged offline), then the
	// output's own header is used.
	ExpectMax, Factor int64
	// InfoPrefix names the family in Info keys: "nccl" gives
	// nccl_tests_version and nccl_version. Empty: "nccl".
	InfoPrefix string
	// ParseFile parses a structured file the step wrote (a name ending in
	// .json); nil: ParseJSON (nccl-tests -J).
	ParseFile func(r io.Reader, name string) (*Output, error)
	// GenericDevice reports device names that do not name a GPU model
	// (HIP prints "AMD Radeon Graphics" for GPUs missing from its name
	// table): they go to Info "device" instead of "gpu", so the runner's
	// GPU model check is not made on them. nil: every name is a model.
	GenericDevice func(name string) bool
}

// Results is Result over the outputs of every step of a test, joined:
// metrics, checks and diagnostics in step order, errors joined with "; ",
// Info of later steps over earlier ones.
func Results(outs []plan.Output, opt Options) result.Parsed {
	var p result.Parsed
	for _, o := range outs {
		one := Result(o, opt)
		p.Metrics = append(p.Metrics, one.Metrics...)
		p.Checks = append(p.Checks, one.Checks...)
		p.Diagnostics = append(p.Diagnostics, one.Diagnostics...)
		if one.Error != "" {
			p.Error = strings.TrimPrefix(p.Error+"; "+one.Error, "; ")
		}
		for k, v := range one.Info {
			if p.Info == nil {
				p.Info = map[string]string{}
			}
			if k == result.HardwareInfo {
				// Every step's devices, not the last step's.
				v = joinHardware(p.Info[k], v)
			}
			p.Info[k] = v
		}
	}
	return p
}

// Result judges the shape of one step's output: the text log, and the
// structured file when there is one (its numbers are unrounded, so metrics
// come from it; ranks, warnings and errors come from both). Everything
// wrong with the output is in the returned Parsed's Error, Checks and
// Diagnostics; metrics found before a problem are kept.
func Result(o plan.Output, opt Options) result.Parsed {
	test, topo, expectMax, factor := opt.Test, opt.Topology, opt.ExpectMax, opt.Factor
	parseFile := opt.ParseFile
	if parseFile == nil {
		parseFile = ParseJSON
	}
	var p result.Parsed
	var errs []string
	text, terr := readText(o.Log)
	if terr != nil {
		errs = append(errs, terr.Error())
	}
	// A log of several tests is judged by the output of the test asked
	// for; the rest is named, not judged.
	var others []Part
	if text != nil {
		text, others = text.Select(test)
	}
	var js *Output
	var jsName string // the JSON file's name, for messages
	var jsErr error
	var unusable *result.Check
	for name, path := range o.Files {
		if strings.HasSuffix(name, ".json") {
			jsName = filepath.Base(path)
			f, err := os.Open(path)
			if err != nil {
				errs = append(errs, fmt.Sprintf("open %s: %v", name, err))
				continue
			}
			js, jsErr = parseFile(f, jsName)
			f.Close()
			if jsErr != nil {
				js = nil
				if text != nil {
					// The same run's structured record is broken (cut
					// short, disk full, edited): the verdict stands on the
					// rounded text numbers, which the sign-off must show.
					unusable = &result.Check{Name: "JSON output", Warn: true,
						Message: fmt.Sprintf("%s unusable, judged on the text output (its numbers rounded): %v", jsName, jsErr)}
				}
			}
		}
	}
	if o.LaunchError != "" {
		errs = append(errs, o.LaunchError)
	} else if o.ExitCode != 0 {
		m := fmt.Sprintf("exited with status %d", o.ExitCode)
		if s, ok := exitMeaning[o.ExitCode]; ok {
			m += " (" + s + ")"
		}
		errs = append(errs, m)
	}
	src := text
	if js != nil && len(js.Rows) > 0 {
		src = js
	}
	if src == nil {
		src = js
	}
	if src == nil {
		if jsErr != nil {
			errs = append(errs, jsErr.Error())
		} else {
			errs = append(errs, "no output")
		}
		p.Error = strings.Join(errs, "; ")
		return p
	}
	p.Info = info(text, js, opt)

	for _, out := range []*Output{text, js} {
		if out == nil {
			continue
		}
		file := filepath.Base(o.Log)
		if out == js {
			file = jsName
		}
		for _, w := range out.Warnings {
			p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: w.Text, Source: source(file, w.Line)})
		}
		errs = append(errs, foldErrors(file, out.Errors)...)
		if out.Collective != "" && out.Collective != test {
			errs = append(errs, fmt.Sprintf("%s is output of %s_perf, not %s_perf", file, out.Collective, test))
		}
	}

	if len(others) > 0 {
		var held []string
		for _, pt := range others {
			by := ""
			if pt.Collective == "" && pt.Program != "" {
				by = ", named by the command line before it"
			}
			held = append(held, fmt.Sprintf("%s (lines %d-%d%s)", pt.Name(), pt.FirstLine, pt.LastLine, by))
		}
		p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Info, Source: filepath.Base(o.Log),
			Message: fmt.Sprintf("the file also holds %s, not judged: only the output of %s_perf is", strings.Join(held, ", "), test)})
	}

	if src.Collective == "" || src.Collective == test {
		// Another collective's numbers are not judged against this
		// test's baseline: the error above says whose output it is.
		p.Metrics = metrics(src)
	}
	if src == js {
		errs = append(errs, nonFinite(src, jsName)...)
	} else {
		errs = append(errs, nonFinite(src, filepath.Base(o.Log))...)
	}
	p.Diagnostics = append(p.Diagnostics, cycleNotes(src)...)
	var ranks int
	// The rank evidence of the size and count columns and of busbw/algbw
	// follows the collective the output is: an all_reduce log checked as
	// all_gather (a wrong --test) is reported as such, not as 1 rank.
	ranksOf := test
	if src.Collective != "" {
		ranksOf = src.Collective
	}
	p.Checks, ranks = checks(ranksOf, src, text, js, topo)
	if unusable != nil {
		p.Checks = append(p.Checks, *unusable)
	}
	if ranks > 0 {
		p.Info["ranks"] = strconv.Itoa(ranks)
	}
	if hw := result.HardwareValue(devicesOf(text, js)); hw != "" {
		p.Info[result.HardwareInfo] = hw
	}
	if len(src.Rows) == 0 {
		what := "no result rows"
		if fi, err := os.Stat(o.Log); err == nil && fi.Size() == 0 && js == nil {
			what = "output is empty"
		}
		where := filepath.Base(o.Log)
		if o.Log == "" || src == js {
			where = jsName
		}
		errs = append(errs, fmt.Sprintf("%s in %s", what, where))
		// Why nothing ran, where the output says it (Output.Setup).
		for _, out := range []*Output{text, js} {
			if out != nil {
				file := filepath.Base(o.Log)
				if out == js {
					file = jsName
				}
				errs = append(errs, foldErrors(file, out.Setup)...)
			}
		}
	} else {
		last := src.Rows[len(src.Rows)-1].Size
		// The sizes asked for: from the plan when gpuaccept ran it, else from
		// the output's own header ("maxBytes 4294967296 step: 2(factor)").
		want := expectMax
		for _, out := range []*Output{src, text, js} {
			if out == nil {
				continue
			}
			if want == 0 {
				want = out.MaxBytes
			}
			if factor == 0 {
				factor = out.StepFactor
			}
			if out.ReducedMaxBytes > 0 && (want == 0 || out.ReducedMaxBytes < want) {
				want = out.ReducedMaxBytes
			}
		}
		// The sweep ends at the last size <= max (8..5G by 2 ends at 4G), so
		// it is cut short only when one more step would still fit.
		if want > 0 && factor > 1 && maxRowSize(src)*factor <= want {
			errs = append(errs, fmt.Sprintf("output ends at %s but sizes up to %s were asked for: truncated", result.FormatBytes(last), result.FormatBytes(want)))
		}
		if js != nil && text != nil && len(text.Rows) > 0 {
			if d := disagreement(text, js); d != "" {
				errs = append(errs, fmt.Sprintf("%s and %s disagree: %s", filepath.Base(o.Log), jsName, d))
			}
		}
		if m := redopMismatch(test, src); m != "" {
			errs = append(errs, m)
		}
	}
	if len(errs) > 0 {
		p.Error = strings.Join(dedup(errs), "; ")
	}
	return p
}

func maxRowSize(o *Output) int64 {
	var m int64
	for _, r := range o.Rows {
		if r.Size > m {
			m = r.Size
		}
	}
	return m
}

func dedup(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func source(file string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d", file, line)
	}
	return file
}

func readText(path string) (*Output, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	defer f.Close()
	out, err := ParseText(f, filepath.Base(path))
	if err != nil {
		return out, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	return out, nil
}

// namesOp tells, per collective, whether its rows name a reduction
// operation (true: "sum", ...) or print "none" (false), as the nccl-tests
// sources call TimeTest; sendrecv prints its unused op. hypercube prints an
// empty name and is not listed.
var namesOp = map[string]bool{
	"all_reduce": true, "reduce": true, "reduce_scatter": true, "sendrecv": true,
	"all_gather": false, "alltoall": false, "broadcast": false, "gather": false, "scatter": false,
}

// redopMismatch catches the log of another collective whose header was
// lost: all_reduce rows name an operation, all_gather rows say "none".
func redopMismatch(test string, o *Output) string {
	want, known := namesOp[test]
	if !known {
		return ""
	}
	for _, r := range o.Rows {
		if r.Redop == "" {
			continue // older layout without the column
		}
		if want == (r.Redop == "none") {
			at := "" // rows read from -J JSON have no line
			if r.Line > 0 {
				at = fmt.Sprintf(" (line %d)", r.Line)
			}
			return fmt.Sprintf("result rows have redop %q%s, which %s_perf does not print: output of another collective", r.Redop, at, test)
		}
	}
	return ""
}

// disagreement compares the busbw of the text rows with the JSON's (the
// same run writes both): they must agree within the rounding of what each
// printed, or one of the files is from another run. The text's rounding is
// the precision its token carries (nccl-tests prints a busbw too wide for
// its column as "1e+06", which stands for anything from 5e+05 to 1.5e+06);
// the JSON's is %lf's (6 decimals). It returns the first difference, or "".
func disagreement(text, js *Output) string {
	type key struct {
		size        int64
		typ, redop  string
		root, place int
	}
	seen := map[key]*Perf{}
	for _, r := range js.Rows {
		for i, pf := range []*Perf{r.OutOfPlace, r.InPlace} {
			k := key{r.Size, r.Type, r.Redop, r.Root, i}
			if _, dup := seen[k]; pf != nil && !dup {
				seen[k] = pf
			}
		}
	}
	matched := 0
	for _, r := range text.Rows {
		for i, pf := range []*Perf{r.OutOfPlace, r.InPlace} {
			jp, ok := seen[key{r.Size, r.Type, r.Redop, r.Root, i}]
			if pf == nil || !ok {
				continue
			}
			matched++
			v, t := jp.BusBW, pf.BusBW
			// A relative 1e-9 for the binary representation of both.
			tol := pf.Prec.HalfUnit(pf.Prec.BusBW) + jp.Prec.HalfUnit(jp.Prec.BusBW) + 1e-9*math.Abs(v)
			if math.Abs(v-t) > tol {
				return fmt.Sprintf("busbw at %s is %s in the text, %.2f in the JSON", result.FormatBytes(r.Size), strconv.FormatFloat(t, 'g', -1, 64), v)
			}
		}
	}
	if matched == 0 && len(seen) > 0 {
		return "no size in common"
	}
	return ""
}

// curveLabels are the labels metrics gives the per-size metrics:
// placement, the data type and reduction (-d, -o), and the root of rooted
// collectives. The cycles of a size repeated (-N, or rccl-tests' stress
// cycles) are one metric: Metric.Cycles, Min, Median, Max.
var curveLabels = []string{"placement=out-of-place|in-place", "type", "redop", "root"}

// curveDefaults are the type and reduction the family's tools use unless
// told otherwise (README of nccl-tests and rccl-tests: -d "Default :
// Float", -o "Default : Sum"): with -d all -o all, a baseline entry that
// names neither judges the float/sum points only.
var curveDefaults = map[string]string{"type": "float", "redop": "sum"}

// MetricInfos describes the metrics Result gives, for a plugin's Describe;
// tool names the family member in the descriptions ("nccl-tests").
func MetricInfos(tool string) []pluginapi.MetricInfo {
	return []pluginapi.MetricInfo{
		// busbw is what the family's PERFORMANCE.md compares across
		// collectives and scales: the figure recorded and drawn. A
		// recorded entry always names its placement: in-place and
		// out-of-place are different curves even when a run gives one.
		{Name: "busbw", Unit: "GB/s", Description: "bus bandwidth per size (" + tool + " doc/PERFORMANCE.md)", Labels: curveLabels, LabelDefaults: curveDefaults,
			KeyLabels: []string{"placement"}, Better: result.BetterHigher, Plot: result.PlotCurve, Record: true},
		{Name: "algbw", Unit: "GB/s", Description: "algorithm bandwidth per size: size / time", Labels: curveLabels, LabelDefaults: curveDefaults,
			KeyLabels: []string{"placement"}, Better: result.BetterHigher, Plot: result.PlotCurve},
		{Name: "time", Unit: "us", Description: "time per operation per size", Labels: curveLabels, LabelDefaults: curveDefaults,
			KeyLabels: []string{"placement"}, Better: result.BetterLower, Plot: result.PlotCurve},
		// Not drawn: it repeats the curve's points, latency-bound ones
		// included.
		{Name: "avg_busbw", Unit: "GB/s", Description: tool + "' own average over every size (latency-bound sizes included)", Better: result.BetterHigher},
	}
}

// metrics turns rows into busbw, algbw and time points per placement. A
// row of several cycles (-N) is one point per quantity whose Value is the
// worst cycle's (the parsers fold them), with the cycles' count, min,
// median and max, so a run is judged on its worst cycle.
func metrics(o *Output) []result.Metric {
	var ms []result.Metric
	for _, r := range o.Rows {
		// all_gather and friends print requests smaller than one element
		// per rank as size 0 rows: no bytes moved, no bandwidth to judge.
		if r.Size == 0 {
			continue
		}
		for _, pl := range []struct {
			name string
			p    *Perf
		}{{"out-of-place", r.OutOfPlace}, {"in-place", r.InPlace}} {
			if pl.p == nil || !finitePerf(pl.p) {
				continue // a parse error (nonFinite)
			}
			labels := map[string]string{"placement": pl.name, "type": r.Type, "redop": r.Redop}
			if r.Root >= 0 {
				labels["root"] = strconv.Itoa(r.Root)
			}
			busbw := result.Metric{Name: "busbw", Value: pl.p.BusBW, Unit: "GB/s", Size: r.Size, Labels: labels}
			algbw := result.Metric{Name: "algbw", Value: pl.p.AlgBW, Unit: "GB/s", Size: r.Size, Labels: labels}
			tm := result.Metric{Name: "time", Value: pl.p.Time, Unit: "us", Size: r.Size, Labels: labels}
			if st := pl.p.Stats; st != nil {
				withCycles(&busbw, &st.BusBW)
				withCycles(&algbw, &st.AlgBW)
				withCycles(&tm, &st.Time)
			}
			ms = append(ms, busbw, algbw, tm)
		}
	}
	if o.AvgBusBW >= 0 && !math.IsInf(o.AvgBusBW, 1) && len(o.Rows) > 0 {
		ms = append(ms, result.Metric{Name: "avg_busbw", Value: o.AvgBusBW, Unit: "GB/s"})
	}
	return ms
}

// withCycles puts the cycles' summary into m.
func withCycles(m *result.Metric, s *Stats) {
	m.Cycles = s.N + s.NonFinite
	m.Min, m.Median, m.Max = s.Min, s.Median(), s.Max
}

// cycleNotes says, once per output, that medians over cycles are
// estimates (more cycles than Stats keeps) and that some sizes were
// measured in fewer cycles than others (the last cycle cut short).
func cycleNotes(o *Output) []result.Diagnostic {
	var ds []result.Diagnostic
	most, least, estimated := 0, 0, false
	for _, r := range o.Rows {
		if r.Size == 0 {
			continue
		}
		c := max(r.Cycles, 1)
		most = max(most, c)
		if least == 0 || c < least {
			least = c
		}
		for _, p := range []*Perf{r.OutOfPlace, r.InPlace} {
			if p != nil && p.Stats != nil && (p.Stats.BusBW.Estimated() || p.Stats.Time.Estimated()) {
				estimated = true
			}
		}
	}
	if most > 1 {
		ds = append(ds, result.Diagnostic{Level: result.Info, Message: fmt.Sprintf("each size was measured in up to %d cycles: judged on the worst cycle (lowest bandwidth, highest time)", most)})
	}
	if estimated {
		ds = append(ds, result.Diagnostic{Level: result.Info, Message: fmt.Sprintf("medians over more than %d cycles are estimates within %g%%", statsExactMax, 100*statsRelErr)})
	}
	if least > 0 && least < most {
		ds = append(ds, result.Diagnostic{Level: result.Warning, Message: fmt.Sprintf("some sizes were measured in %d cycle(s), others in %d: a cycle cut short, or runs of different sweeps in one log", least, most)})
	}
	return ds
}

// checks are the correctness gates: data validation, out-of-bounds
// values, independent runs, and the rank and node counts. It returns them
// and the rank count the outputs prove (0 when they prove none).
func checks(test string, src, text, js *Output, topo plan.Topology) ([]result.Check, int) {
	var cs []result.Check
	var bounds []rankBound
	proved := 0
	if topo.Ranks() > 0 {
		bounds = rankEvidence(test, src, text, js)
		_, proved = rankCheck(bounds, topo)
	}
	cs = append(cs, validationChecks(src, proved, topo)...)
	oobSeen, oobFailed, oob := false, false, 0
	for _, o := range []*Output{text, js} {
		if o != nil && (o.OutOfBounds >= 0 || o.OutOfBoundsFailed) {
			oobSeen = true
			oobFailed = oobFailed || o.OutOfBoundsFailed || o.OutOfBounds > 0
			if o.OutOfBounds > oob {
				oob = o.OutOfBounds
			}
		}
	}
	if oobSeen {
		c := result.Check{Name: "out of bounds values", OK: !oobFailed}
		if !c.OK {
			c.Message = fmt.Sprintf("%d values out of bounds (FAILED)", oob)
		}
		cs = append(cs, c)
	} else if len(src.Rows) > 0 {
		cs = append(cs, result.Check{Name: "out of bounds values", Warn: true,
			Message: "no \"Out of bounds values\" footer: not checked (output cut short?)"})
	}
	if topo.Ranks() > 0 {
		if c, ok := independentRuns(text, topo); ok {
			cs = append(cs, c)
		}
		c, _ := rankCheck(bounds, topo)
		cs = append(cs, c)
		cs = append(cs, nodeCheck(text, js, proved, topo))
	}
	return cs, proved
}

// oldErrorBound is the largest "error" (the largest difference from the
// expected value) nccl-tests before 2.13 accepted per rank beyond the
// first, by data type: DeltaMaxValue in src/common.cu up to 51af557
// (2022-08), which counted a test as out of bounds when its error exceeded
// DeltaMaxValue(type) x (nranks - 1). Integer types are exact (1e-200).
var oldErrorBound = map[string]float64{"half": 1e-2, "float16": 1e-2, "bfloat16": 1e-2, "float": 1e-5, "float32": 1e-5, "double": 1e-12, "float64": 1e-12}

// validationChecks judge the data validation: #wrong, or the old error
// column (ranks: the rank count proved, 0 unknown, then the scope's).
func validationChecks(src *Output, ranks int, topo plan.Topology) []result.Check {
	if ranks <= 0 {
		ranks = topo.Ranks()
	}
	var wrong []string
	validated := false
	for _, r := range src.Rows {
		for _, pl := range []struct {
			name string
			p    *Perf
		}{{"out-of-place", r.OutOfPlace}, {"in-place", r.InPlace}} {
			switch {
			case pl.p == nil:
			case pl.p.Wrong >= 0:
				validated = true
				if pl.p.Wrong > 0 {
					wrong = append(wrong, fmt.Sprintf("%d wrong elements %s at %s", pl.p.Wrong, pl.name, result.FormatBytes(r.Size)))
				}
			case pl.p.HasMaxError:
				// The column is printed with one digit (%5.0le): wrong only
				// when even its lowest reading is above the bound.
				validated = true
				bound, ok := oldErrorBound[r.Type]
				if !ok {
					bound = 1e-200
				}
				bound *= float64(max(ranks-1, 0))
				if v := pl.p.MaxError - pl.p.Prec.HalfUnit(pl.p.Prec.MaxError); ranks > 0 && v > bound {
					wrong = append(wrong, fmt.Sprintf("error %g %s at %s (above the %s nccl-tests allows for %s on %d ranks)",
						pl.p.MaxError, pl.name, result.FormatBytes(r.Size), strconv.FormatFloat(bound, 'g', 3, 64), r.Type, ranks))
				}
			}
		}
	}
	if !validated {
		if len(src.Rows) == 0 {
			return nil
		}
		return []result.Check{{Name: "data validation", Warn: true,
			Message: "validation was off (#wrong shows N/A, nccl-tests -c 0): correctness not checked"}}
	}
	c := result.Check{Name: "data validation", OK: len(wrong) == 0}
	if !c.OK {
		c.Message = strings.Join(wrong, ", ")
		if len(wrong) > 3 {
			c.Message = strings.Join(wrong[:3], ", ") + fmt.Sprintf(" and %d more", len(wrong)-3)
		}
	}
	return []result.Check{c}
}

func info(text, js *Output, opt Options) map[string]string {
	prefix := opt.InfoPrefix
	if prefix == "" {
		prefix = "nccl"
	}
	m := map[string]string{}
	for _, o := range []*Output{js, text} {
		if o == nil {
			continue
		}
		set := func(k, v string) {
			if v != "" && m[k] == "" {
				m[k] = v
			}
		}
		for _, name := range []string{"RCCL", "HIP", "ROCm"} {
			set(strings.ToLower(name)+"_version", o.Libraries[name])
		}
		set(prefix+"_tests_version", o.TestsVersion)
		set(prefix+"_version", o.NCCLVersion)
		set("collective", o.Collective)
		if len(o.Ranks) > 0 {
			hosts := []string{}
			seen := map[string]bool{}
			for _, r := range o.Ranks {
				if !seen[r.Host] {
					seen[r.Host] = true
					hosts = append(hosts, r.Host)
				}
			}
			set("hosts", strings.Join(hosts, ","))
			if opt.GenericDevice != nil && opt.GenericDevice(o.Ranks[0].DeviceName) {
				set("device", o.Ranks[0].DeviceName)
			} else {
				set("gpu", o.Ranks[0].DeviceName)
			}
		}
		if o.Groups > 1 {
			set("groups", strconv.Itoa(o.Groups))
		}
	}
	if text != nil && len(text.Ranks) > 0 {
		m["ranks"] = strconv.Itoa(len(text.Ranks))
		if text.RanksCutAt > 0 {
			// A cut list: the run had these ranks and maybe more.
			m["ranks"] = "at least " + m["ranks"]
		}
	} else if js != nil && js.RankCount > 0 {
		m["ranks"] = strconv.Itoa(js.RankCount)
	}
	return m
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func finitePerf(p *Perf) bool { return finite(p.Time) && finite(p.AlgBW) && finite(p.BusBW) }

// nonFinite says, as parse errors naming file and line (file and size for
// JSON, which has no row lines), where o holds a time or bandwidth that is
// no finite number: nan, inf, or past float64 (1e309). No benchmark
// measures one, JSON reports cannot hold one, and metrics leaves such a
// point out. The first 5 are named.
func nonFinite(o *Output, file string) []string {
	var out []string
	n := 0
	add := func(s string) {
		if n++; n <= 5 {
			out = append(out, s)
		}
	}
	for _, r := range o.Rows {
		for _, pl := range []struct {
			name string
			p    *Perf
		}{{"out-of-place", r.OutOfPlace}, {"in-place", r.InPlace}} {
			if pl.p == nil {
				continue
			}
			for _, v := range []struct {
				name string
				v    float64
			}{{"time", pl.p.Time}, {"algbw", pl.p.AlgBW}, {"busbw", pl.p.BusBW}} {
				if finite(v.v) {
					continue
				}
				at := ""
				if r.Line == 0 {
					at = " at " + result.FormatBytes(r.Size)
				}
				add(fmt.Sprintf("%s: %s (%s) is %s%s: not a measurement", source(file, r.Line), v.name, pl.name, strconv.FormatFloat(v.v, 'g', -1, 64), at))
			}
		}
	}
	if math.IsInf(o.AvgBusBW, 0) {
		add(fmt.Sprintf("%s: avg_busbw is %s: not a measurement", file, strconv.FormatFloat(o.AvgBusBW, 'g', -1, 64)))
	}
	if n > 5 {
		out = append(out, fmt.Sprintf("%s: and %d more numbers that are not measurements", file, n-5))
	}
	return out
}

// errorWho is what a rank puts before the text of its failure
// ("cnode2-003: ", ".. cnode2-003 pid 393374: "), so that the same failure
// printed by every rank is said once.
var errorWho = regexp.MustCompile(`^(\.\. )?[^\s:]+( pid \d+)?: `)

// foldErrors renders a file's errors for a message: a failure every rank
// printed is said once with the lines of the others, and the "Test
// failure FILE:LINE" call stack nccl-tests prints under a failure (one
// frame a line, per rank) is counted, not quoted, when a failure is said.
func foldErrors(file string, ds []Diag) []string {
	type group struct {
		first Diag
		lines []int
	}
	var order []string
	groups := map[string]*group{}
	frames := 0
	for _, d := range ds {
		what := errorWho.ReplaceAllString(d.Text, "")
		if strings.HasPrefix(what, "Test failure ") && len(ds) > 1 {
			frames++
			continue
		}
		if g, ok := groups[what]; ok {
			g.lines = append(g.lines, d.Line)
			continue
		}
		groups[what] = &group{first: d}
		order = append(order, what)
	}
	if len(order) == 0 && frames > 0 {
		// Nothing but stack frames: they are the failure.
		for _, d := range ds {
			order = append(order, d.Text)
			groups[d.Text] = &group{first: d}
			break
		}
		frames--
	}
	var out []string
	for _, k := range order {
		g := groups[k]
		m := fmt.Sprintf("%s: %s", source(file, g.first.Line), g.first.Text)
		if n := len(g.lines); n > 0 {
			m += fmt.Sprintf(" (and %d more like it, from line %d)", n, g.lines[0])
		}
		out = append(out, m)
	}
	if frames > 0 {
		out[len(out)-1] += fmt.Sprintf(" (%d call-stack lines of nccl-tests not quoted)", frames)
	}
	return out
}

// devicesOf lists the GPUs the rank lines of the text output show (else
// the JSON's devices): host, device name and PCI bus id as printed, each
// device once (ranks of one process share it), for the results folder's
// hardware list (result.HardwareInfo).
func devicesOf(text, js *Output) []result.Device {
	src := text
	if src == nil || len(src.Ranks) == 0 {
		src = js
	}
	if src == nil {
		return nil
	}
	var out []result.Device
	for _, r := range src.Ranks {
		d := result.Device{Host: r.Host, Kind: result.GPUDevice, Name: r.DeviceName, BusID: r.BusID}
		if (d.Name != "" || d.BusID != "") && !slices.ContainsFunc(out, func(x result.Device) bool { return x.Host == d.Host && x.Name == d.Name && x.BusID == d.BusID }) {
			out = append(out, d)
		}
	}
	return out
}

// joinHardware joins two values of the hardware info key (JSON lists of
// devices) into one list; a value that does not read is kept as it is, for
// the framework to name.
func joinHardware(a, b string) string {
	if a == "" {
		return b
	}
	var x, y []result.Device
	if json.Unmarshal([]byte(a), &x) != nil {
		return a
	}
	if json.Unmarshal([]byte(b), &y) != nil {
		return b
	}
	return result.HardwareValue(append(x, y...))
}
