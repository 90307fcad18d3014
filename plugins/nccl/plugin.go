// Package nccl is the test plugin for NVIDIA's nccl-tests (all_reduce_perf,
// all_gather_perf, ...): it plans their command lines and parses their text
// and -J JSON output into busbw/algbw curves and correctness checks.
package nccl

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// PluginName is the plugin's name: its tests are "nccl.NAME".
const PluginName = "nccl"

// Version is the plugin's version, reported by Describe.
const Version = "0.1.0"

// Collectives are the nccl-tests binaries the plugin offers, by test name;
// the binary is NAME_perf.
var Collectives = []string{"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv", "gather", "scatter", "hypercube"}

// Params are the parameters every nccl test takes, with defaults.
var Params = []pluginapi.Param{
	{Name: "bindir", Description: "folder holding the nccl-tests binaries (e.g. /opt/nccl-tests/build); empty: found on PATH"},
	{Name: "suffix", Description: "binary name suffix, as built with NAME_SUFFIX (e.g. _mpi)"},
	{Name: "minbytes", Default: "8", Unit: "bytes", Description: "smallest message size (-b); K/M/G suffixes are binary"},
	{Name: "maxbytes", Default: "4G", Unit: "bytes", Description: "largest message size (-e)"},
	{Name: "stepfactor", Default: "2", Description: "size multiplication factor between sizes (-f)"},
	{Name: "iters", Unit: "iterations", Description: "timed iterations per size (-n); empty: nccl-tests' default (20)"},
	{Name: "warmup", Unit: "iterations", Description: "warmup iterations (-w); empty: nccl-tests' default (1)"},
	{Name: "check", Default: "1", Unit: "iterations", Description: "correctness-check iterations (-c); 0 turns validation off (#wrong shows N/A)"},
	{Name: "datatype", Description: "data type (-d), e.g. float, bfloat16, all; empty: float"},
	{Name: "op", Description: "reduction (-o), e.g. sum, all; empty: sum"},
	{Name: "json", Default: "true", Description: "ask for -J JSON output (nccl-tests >= 2.17); false for older binaries"},
	{Name: "mode", Description: "single: one process per node drives all its GPUs (-g G); mpi: one MPI rank per GPU (-g 1). Empty: single on one node, mpi on several"},
	{Name: "extra", Description: "extra nccl-tests arguments, space-separated"},
	{Name: "env.NAME", Description: "environment variable NAME for every rank (e.g. env.NCCL_TOPO_FILE=/etc/topo.xml)"},
}

// curveLabels are the labels of the per-size metrics: placement, the data
// type and reduction (-d, -o), the root of rooted collectives, and the cycle
// of a size repeated with -N.
var curveLabels = []string{"placement=out-of-place|in-place", "type", "redop", "root", "cycle"}

// Plugin implements pluginapi.Plugin for nccl-tests.
type Plugin struct{}

// Describe implements pluginapi.Plugin.
func (Plugin) Describe(context.Context) (pluginapi.Description, error) {
	d := pluginapi.Description{Name: PluginName, Version: Version}
	for _, c := range Collectives {
		d.Tests = append(d.Tests, pluginapi.TestInfo{
			Name:        c,
			Description: fmt.Sprintf("nccl-tests %s_perf: busbw/algbw curve over message sizes, out-of-place and in-place, with data validation", c),
			Params:      Params,
			Metrics: []pluginapi.MetricInfo{
				{Name: "busbw", Unit: "GB/s", Description: "bus bandwidth per size (nccl-tests doc/PERFORMANCE.md)", Labels: curveLabels},
				{Name: "algbw", Unit: "GB/s", Description: "algorithm bandwidth per size: size / time", Labels: curveLabels},
				{Name: "time", Unit: "us", Description: "time per operation per size", Labels: curveLabels},
				{Name: "avg_busbw", Unit: "GB/s", Description: "nccl-tests' own average over every size (latency-bound sizes included)"},
			},
		})
	}
	return d, nil
}

func knownCollective(t string) bool {
	for _, c := range Collectives {
		if c == t {
			return true
		}
	}
	return false
}

// settings are the parsed parameters of one test.
type settings struct {
	bindir, suffix, minb, maxb, factor, iters, warmup, check, dtype, op, mode string
	json                                                                      bool
	extra                                                                     []string
	env                                                                       map[string]string
}

func parseParams(p map[string]string) (settings, error) {
	s := settings{minb: "8", maxb: "4G", factor: "2", check: "1", json: true, env: map[string]string{}}
	known := map[string]bool{}
	for _, d := range Params {
		known[d.Name] = true
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := p[k]
		if name, ok := strings.CutPrefix(k, "env."); ok {
			if name == "" || strings.ContainsAny(name, "= \t\n") {
				return s, fmt.Errorf("parameter %q: not a variable name", k)
			}
			s.env[name] = v
			continue
		}
		if !known[k] {
			names := make([]string, 0, len(Params))
			for _, d := range Params {
				names = append(names, d.Name)
			}
			return s, fmt.Errorf("unknown parameter %q (known: %s)", k, strings.Join(names, ", "))
		}
		switch k {
		case "bindir":
			s.bindir = v
		case "suffix":
			s.suffix = v
		case "minbytes", "maxbytes":
			if _, err := result.ParseBytes(v); err != nil {
				return s, fmt.Errorf("parameter %s: %w", k, err)
			}
			if k == "minbytes" {
				s.minb = v
			} else {
				s.maxb = v
			}
		case "stepfactor", "iters", "warmup", "check":
			if v != "" {
				if n, err := strconv.Atoi(v); err != nil || n < 0 {
					return s, fmt.Errorf("parameter %s: %q is not a non-negative integer", k, v)
				}
			}
			switch k {
			case "stepfactor":
				s.factor = v
			case "iters":
				s.iters = v
			case "warmup":
				s.warmup = v
			case "check":
				s.check = v
			}
		case "datatype":
			s.dtype = v
		case "op":
			s.op = v
		case "json":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return s, fmt.Errorf("parameter json: %q is not true or false", v)
			}
			s.json = b
		case "mode":
			if v != "" && v != "single" && v != "mpi" {
				return s, fmt.Errorf("parameter mode: %q is not single or mpi", v)
			}
			s.mode = v
		case "extra":
			s.extra = strings.Fields(v)
		}
	}
	if s.suffix != "" && strings.ContainsAny(s.suffix, "/ \t") {
		return s, fmt.Errorf("parameter suffix: %q must be a plain name suffix", s.suffix)
	}
	return s, nil
}

// JSONName is the file the plugin asks nccl-tests to write with -J.
func JSONName(test string) string { return test + ".json" }

// Plan implements pluginapi.Plugin.
func (Plugin) Plan(_ context.Context, req pluginapi.PlanRequest) (plan.Plan, error) {
	if !knownCollective(req.Test) {
		return plan.Plan{}, fmt.Errorf("unknown test nccl.%s (known: %s)", req.Test, strings.Join(Collectives, ", "))
	}
	s, err := parseParams(req.Params)
	if err != nil {
		return plan.Plan{}, fmt.Errorf("nccl.%s: %w", req.Test, err)
	}
	t := req.Topology
	if t.Nodes < 1 || t.GPUsPerNode < 1 {
		return plan.Plan{}, fmt.Errorf("nccl.%s: topology %s: nodes and GPUs per node must be >= 1", req.Test, t)
	}
	mode := s.mode
	if mode == "" {
		mode = "single"
		if t.Nodes > 1 {
			mode = "mpi"
		}
	}
	bin := req.Test + "_perf" + s.suffix
	if s.bindir != "" {
		bin = filepath.Join(s.bindir, bin)
	}
	step := plan.Step{Name: req.Test, Env: s.env}
	gpusPerProc := t.GPUsPerNode
	if mode == "mpi" {
		step.Procs, step.ProcsPerNode, step.MPI, gpusPerProc = t.Ranks(), t.GPUsPerNode, true, 1
	} else {
		step.Procs, step.ProcsPerNode, step.MPI = t.Nodes, 1, t.Nodes > 1
	}
	argv := []string{bin, "-b", s.minb, "-e", s.maxb, "-f", s.factor, "-g", strconv.Itoa(gpusPerProc)}
	for _, o := range []struct{ flag, v string }{{"-c", s.check}, {"-n", s.iters}, {"-w", s.warmup}, {"-d", s.dtype}, {"-o", s.op}} {
		if o.v != "" {
			argv = append(argv, o.flag, o.v)
		}
	}
	argv = append(argv, s.extra...)
	if s.json {
		argv = append(argv, "-J", JSONName(req.Test))
		step.Files = []string{JSONName(req.Test)}
	}
	if len(step.Env) == 0 {
		step.Env = nil
	}
	step.Argv = argv
	return plan.Plan{Steps: []plan.Step{step}}, nil
}

// exitMeaning names nccl-tests' exit codes (testResult_t in src/common.h).
var exitMeaning = map[int]string{
	1: "internal error", 2: "CUDA error", 3: "NCCL error", 4: "timeout",
	5: "not implemented (e.g. more GPUs asked than found)", 6: "invalid usage",
}

// Parse implements pluginapi.Plugin.
func (Plugin) Parse(_ context.Context, req pluginapi.ParseRequest) (result.Parsed, error) {
	var p result.Parsed
	if len(req.Outputs) == 0 {
		p.Error = "no outputs to parse"
		return p, nil
	}
	// Sizes asked for are known only when the plugin planned the run; logs
	// judged offline (gpuaccept check) have no params, so no expectation.
	var expectMax, factor int64
	if len(req.Params) > 0 {
		if s, err := parseParams(req.Params); err == nil {
			if v, err := result.ParseBytes(s.maxb); err == nil {
				expectMax = v
			}
			factor, _ = strconv.ParseInt(s.factor, 10, 64)
		}
	}
	for _, o := range req.Outputs {
		one := parseOutput(req.Test, req.Topology, o, expectMax, factor)
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
	return p, nil
}

// parseOutput judges the shape of one step's output: the text log, and the
// -J JSON when there is one (its numbers are unrounded, so metrics come from
// it; ranks, warnings and errors come from both).
func parseOutput(test string, topo plan.Topology, o plan.Output, expectMax, factor int64) result.Parsed {
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
			js, jsErr = ParseJSON(f, jsName)
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
	p.Info = info(text, js)

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
			if pl.p == nil {
				continue
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
	if o.AvgBusBW >= 0 && len(o.Rows) > 0 {
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

func info(text, js *Output) map[string]string {
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
		set("nccl_tests_version", o.TestsVersion)
		set("nccl_version", o.NCCLVersion)
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
			set("gpu", o.Ranks[0].DeviceName)
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
