package nccltests

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
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
	var js *Output
	var jsName string // the JSON file's name, for messages
	var jsErr error
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
					p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: fmt.Sprintf("JSON output unusable, using the text output: %v", jsErr)})
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
		for _, e := range out.Errors {
			errs = append(errs, fmt.Sprintf("%s: %s", source(file, e.Line), e.Text))
		}
		if out.Collective != "" && out.Collective != test {
			errs = append(errs, fmt.Sprintf("%s is output of %s_perf, not %s_perf", file, out.Collective, test))
		}
	}

	p.Metrics = metrics(src)
	if src == js {
		errs = append(errs, nonFinite(src, jsName)...)
	} else {
		errs = append(errs, nonFinite(src, filepath.Base(o.Log))...)
	}
	p.Checks = checks(src, text, js, topo)
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
			return fmt.Sprintf("result rows have redop %q (line %d), which %s_perf does not print: output of another collective", r.Redop, r.Line, test)
		}
	}
	return ""
}

// disagreement compares the busbw of the text rows with the JSON's (the
// same run writes both): beyond print rounding they must agree, or one of
// the files is from another run. It returns the first difference, or "".
func disagreement(text, js *Output) string {
	type key struct {
		size        int64
		typ, redop  string
		root, place int
	}
	seen := map[key]float64{}
	for _, r := range js.Rows {
		for i, pf := range []*Perf{r.OutOfPlace, r.InPlace} {
			k := key{r.Size, r.Type, r.Redop, r.Root, i}
			if _, dup := seen[k]; pf != nil && !dup {
				seen[k] = pf.BusBW
			}
		}
	}
	matched := 0
	for _, r := range text.Rows {
		for i, pf := range []*Perf{r.OutOfPlace, r.InPlace} {
			v, ok := seen[key{r.Size, r.Type, r.Redop, r.Root, i}]
			if pf == nil || !ok {
				continue
			}
			matched++
			// nccl-tests prints %6.2f, fewer decimals when wide: allow the
			// rounding of the widest form.
			if math.Abs(v-pf.BusBW) > math.Max(0.051, 0.0005*math.Abs(v)+0.05) {
				return fmt.Sprintf("busbw at %s is %.2f in the text, %.2f in the JSON", result.FormatBytes(r.Size), pf.BusBW, v)
			}
		}
	}
	if matched == 0 && len(seen) > 0 {
		return "no size in common"
	}
	return ""
}

// curveLabels are the labels metrics gives the per-size metrics:
// placement, the data type and reduction (-d, -o), the root of rooted
// collectives, and the cycle of a size repeated (-N, or rccl-tests' stress
// cycles).
var curveLabels = []string{"placement=out-of-place|in-place", "type", "redop", "root", "cycle"}

// MetricInfos describes the metrics Result gives, for a plugin's Describe;
// tool names the family member in the descriptions ("nccl-tests").
func MetricInfos(tool string) []pluginapi.MetricInfo {
	return []pluginapi.MetricInfo{
		{Name: "busbw", Unit: "GB/s", Description: "bus bandwidth per size (" + tool + " doc/PERFORMANCE.md)", Labels: curveLabels},
		{Name: "algbw", Unit: "GB/s", Description: "algorithm bandwidth per size: size / time", Labels: curveLabels},
		{Name: "time", Unit: "us", Description: "time per operation per size", Labels: curveLabels},
		{Name: "avg_busbw", Unit: "GB/s", Description: tool + "' own average over every size (latency-bound sizes included)"},
	}
}

// metrics turns rows into busbw, algbw and time points per placement; a
// size repeated with the same type, op and root (-N cycles) gets a cycle
// label so every repetition is judged.
func metrics(o *Output) []result.Metric {
	var ms []result.Metric
	seen := map[string]int{}
	for _, r := range o.Rows {
		// all_gather and friends print requests smaller than one element
		// per rank as size 0 rows: no bytes moved, no bandwidth to judge.
		if r.Size == 0 {
			continue
		}
		key := fmt.Sprintf("%d/%s/%s/%d", r.Size, r.Type, r.Redop, r.Root)
		cycle := seen[key]
		seen[key]++
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
			if cycle > 0 {
				labels["cycle"] = strconv.Itoa(cycle + 1)
			}
			ms = append(ms,
				result.Metric{Name: "busbw", Value: pl.p.BusBW, Unit: "GB/s", Size: r.Size, Labels: labels},
				result.Metric{Name: "algbw", Value: pl.p.AlgBW, Unit: "GB/s", Size: r.Size, Labels: labels},
				result.Metric{Name: "time", Value: pl.p.Time, Unit: "us", Size: r.Size, Labels: labels},
			)
		}
	}
	if o.AvgBusBW >= 0 && !math.IsInf(o.AvgBusBW, 1) && len(o.Rows) > 0 {
		ms = append(ms, result.Metric{Name: "avg_busbw", Value: o.AvgBusBW, Unit: "GB/s"})
	}
	return ms
}

// checks are the correctness gates: data validation, out-of-bounds values,
// and the rank count.
func checks(src, text, js *Output, topo plan.Topology) []result.Check {
	var cs []result.Check
	var wrong []string
	validated := false
	for _, r := range src.Rows {
		for _, pl := range []struct {
			name string
			p    *Perf
		}{{"out-of-place", r.OutOfPlace}, {"in-place", r.InPlace}} {
			if pl.p == nil || pl.p.Wrong < 0 {
				continue
			}
			validated = true
			if pl.p.Wrong > 0 {
				wrong = append(wrong, fmt.Sprintf("%d wrong elements %s at %s", pl.p.Wrong, pl.name, result.FormatBytes(r.Size)))
			}
		}
	}
	if !validated && len(src.Rows) > 0 {
		cs = append(cs, result.Check{Name: "data validation", Warn: true,
			Message: "validation was off (#wrong shows N/A, nccl-tests -c 0): correctness not checked"})
	}
	if validated {
		c := result.Check{Name: "data validation", OK: len(wrong) == 0}
		if !c.OK {
			c.Message = strings.Join(wrong, ", ")
			if len(wrong) > 3 {
				c.Message = strings.Join(wrong[:3], ", ") + fmt.Sprintf(" and %d more", len(wrong)-3)
			}
		}
		cs = append(cs, c)
	}
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
	if want := topo.Ranks(); want > 0 {
		got, from := 0, ""
		if text != nil && len(text.Ranks) > 0 {
			ids := map[int]bool{}
			for _, r := range text.Ranks {
				ids[r.Rank] = true
			}
			got, from = len(ids), "distinct rank lines"
			if len(text.Ranks) > len(ids) {
				from += fmt.Sprintf(" (%d rank lines: several processes each printed a whole output, as a binary built without MPI=1 does under mpirun)", len(text.Ranks))
			}
		} else if js != nil && js.RankCount > 0 {
			got, from = js.RankCount, "ranks in the JSON"
		}
		if got > 0 {
			c := result.Check{Name: "rank count", OK: got == want}
			if !c.OK {
				c.Message = fmt.Sprintf("%d %s, expected %d (%s)", got, from, want, topo)
			}
			cs = append(cs, c)
		}
		// Ranks on fewer hosts than nodes: a multi-node baseline judged on
		// a run inside one node.
		if text != nil && len(text.Ranks) > 0 {
			hosts := map[string]bool{}
			for _, r := range text.Ranks {
				hosts[r.Host] = true
			}
			c := result.Check{Name: "node count", OK: len(hosts) == topo.Nodes}
			if !c.OK {
				c.Message = fmt.Sprintf("ranks ran on %d host(s), expected %d nodes", len(hosts), topo.Nodes)
			}
			cs = append(cs, c)
		}
	}
	return cs
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
