// Package mori is the test plugin for ROCm Mori-EP's dispatch/combine
// benchmarks (expert-parallel all-to-all): intra-node
// (tests/python/ops/bench_dispatch_combine.py, rounds of per-rank
// durations and bandwidths) and inter-node
// (examples/ops/dispatch_combine/test_dispatch_combine_internode.py,
// Best/Worst/Average tables of RDMA, XGMI and LL bandwidth and latency).
// It prefers the JSON-lines report Mori writes to $MORI_PERF_OUT and reads
// per-rank detail from the text.
package mori

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// PluginName is the plugin's name: its tests are "mori.NAME".
const PluginName = "mori"

// The plugin is built into gpuaccept: registered for gpuaccept plugin
// serve mori and the lists of built-in plugins (pluginapi.Builtins).
func init() { pluginapi.Register(PluginName, Plugin{}) }

// Version is the plugin's version, reported by Describe.
const Version = "0.1.0"

// PerfOut is the file the plugin names in $MORI_PERF_OUT.
const PerfOut = "mori_perf.jsonl"

// Scripts are Mori's benchmark scripts by test, relative to a Mori
// checkout.
var Scripts = map[string]string{
	"ep_intranode": "tests/python/ops/bench_dispatch_combine.py",
	"ep_internode": "examples/ops/dispatch_combine/test_dispatch_combine_internode.py",
}

// Params are the parameters every mori test takes, with defaults.
var Params = []pluginapi.Param{
	{Name: "moridir", Description: "Mori checkout holding the benchmark scripts; empty: the scripts' paths as they are"},
	{Name: "python", Default: "python3", Description: "Python interpreter with mori and torch installed"},
	{Name: "cmd", Description: "the whole command instead of python and the script, space-separated (e.g. ./run_intra_mori.sh as in seed 004)"},
	{Name: "args", Description: "extra benchmark arguments, space-separated"},
	{Name: "perf_out", Default: "true", Description: "set MORI_PERF_OUT so Mori writes its JSON-lines report (newer Mori); false for versions without it"},
	{Name: "rank_tolerance", Default: "5", Unit: "%", Description: "intra-node: a rank whose mean bandwidth is this far below the median rank fails the test"},
	{Name: "spread_max", Default: "30", Unit: "%", Description: "inter-node: a worst rank-round this far below the best warns (the table names no rank)"},
	{Name: "master_addr", Description: "inter-node rendezvous address (MASTER_ADDR); empty: the first host"},
	{Name: "master_port", Default: "29500", Description: "inter-node rendezvous port (MASTER_PORT)"},
	{Name: "env.NAME", Description: "environment variable NAME for the benchmark (e.g. env.MORI_SHMEM_HEAP_SIZE=16G)"},
}

// Plugin implements pluginapi.Plugin for Mori-EP.
type Plugin struct{}

// Describe implements pluginapi.Plugin.
func (Plugin) Describe(context.Context) (pluginapi.Description, error) {
	phase := "phase=dispatch|combine"
	return pluginapi.Description{Name: PluginName, Version: Version, Tests: []pluginapi.TestInfo{
		{
			Name:        "ep_intranode",
			Description: "Mori-EP dispatch/combine on one node: bandwidth and latency per phase, best and average over rounds, spread across ranks",
			Params:      Params,
			Metrics: []pluginapi.MetricInfo{
				{Name: "bw", Unit: "GB/s", Description: "mean bandwidth over ranks of a round; best (highest) or average over rounds", Labels: []string{phase, "stat=best|average", "config"},
					Better: result.BetterHigher, Plot: result.PlotLabels, Record: true},
				{Name: "bw_ll", Unit: "GB/s", Description: "bw scaled for the low-latency kernel, as Mori prints it after the '/'", Labels: []string{phase, "stat=best|average", "config"}, Better: result.BetterHigher},
				{Name: "lat", Unit: "us", Description: "mean duration over ranks of a round; best (lowest) or average over rounds", Labels: []string{phase, "stat=best|average", "config"}, Better: result.BetterLower},
				{Name: "e2e_lat", Unit: "us", Description: "end-to-end (one graph replay) duration, mean over ranks; best or average over rounds", Labels: []string{"stat=best|average", "config"}, Better: result.BetterLower},
				{Name: "rank_bw", Unit: "GB/s", Description: "one rank's bandwidth, mean over rounds", Labels: []string{phase, "rank", "config"}, Better: result.BetterHigher},
				{Name: "rank_spread", Unit: "%", Description: "(fastest - slowest rank) / fastest rank, of rank_bw", Labels: []string{phase, "config"}, Better: result.BetterLower},
			},
		},
		{
			Name:        "ep_internode",
			Description: "Mori-EP dispatch/combine across nodes: RDMA, XGMI and LL bandwidth and latency, best/worst/average over ranks and rounds",
			Params:      Params,
			Metrics: []pluginapi.MetricInfo{
				{Name: "rdma_bw", Unit: "GB/s", Description: "RDMA (inter-node) bandwidth per rank-round; best, worst, average", Labels: []string{phase, "stat=best|worst|average"},
					Better: result.BetterHigher, Plot: result.PlotLabels, Record: true},
				{Name: "xgmi_bw", Unit: "GB/s", Description: "XGMI (intra-node) bandwidth per rank-round", Labels: []string{phase, "stat=best|worst|average"},
					Better: result.BetterHigher, Plot: result.PlotLabels, Record: true},
				{Name: "ll_bw", Unit: "GB/s", Description: "XGMI bandwidth scaled for the low-latency kernel", Labels: []string{phase, "stat=best|worst|average"}, Better: result.BetterHigher},
				{Name: "lat", Unit: "us", Description: "latency per rank-round; best is the lowest", Labels: []string{phase, "stat=best|worst|average"}, Better: result.BetterLower},
				{Name: "rank_spread", Unit: "%", Description: "(best - worst) / best RDMA bandwidth over ranks and rounds", Labels: []string{phase}, Better: result.BetterLower},
			},
		},
	}}, nil
}

type settings struct {
	moridir, python, masterAddr, masterPort string
	cmd, args                               []string
	perfOut                                 bool
	rankTol, spreadMax                      float64
	env                                     map[string]string
}

func parseParams(p map[string]string) (settings, error) {
	s := settings{python: "python3", masterPort: "29500", perfOut: true, rankTol: 5, spreadMax: 30}
	env, err := pluginapi.ParseParams(p, Params, func(k, v string) (err error) {
		switch k {
		case "moridir":
			s.moridir = v
		case "python":
			if v == "" {
				return errors.New("empty")
			}
			s.python = v
		case "cmd":
			s.cmd = strings.Fields(v)
		case "args":
			s.args = strings.Fields(v)
		case "perf_out":
			if s.perfOut, err = pluginapi.BoolParam(k, v); err != nil {
				return err
			}
		case "rank_tolerance", "spread_max":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 || f >= 100 {
				return fmt.Errorf("%q is not a percentage between 0 and 100", v)
			}
			if k == "rank_tolerance" {
				s.rankTol = f
			} else {
				s.spreadMax = f
			}
		case "master_addr":
			s.masterAddr = v
		case "master_port":
			if _, err := pluginapi.PortParam(k, v); err != nil {
				return err
			}
			s.masterPort = v
		}
		return nil
	})
	s.env = env
	return s, err
}

// rankFromStarter makes the node rank the inter-node script reads from
// $RANK out of whatever rank starter ran it (Open MPI, MPICH/PMI, Slurm).
const rankFromStarter = `export RANK="${RANK:-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}}"; exec "$@"`

// Plan implements pluginapi.Plugin: intra-node, one process that spawns a
// rank per GPU; inter-node, one process per node started together (MPI),
// each told its node rank, the node count and the rendezvous.
func (Plugin) Plan(_ context.Context, req pluginapi.PlanRequest) (plan.Plan, error) {
	script, ok := Scripts[req.Test]
	if !ok {
		return plan.Plan{}, pluginapi.UnknownTest(PluginName, req.Test, []string{"ep_intranode", "ep_internode"})
	}
	s, err := parseParams(req.Params)
	if err != nil {
		return plan.Plan{}, fmt.Errorf("mori.%s: %w", req.Test, err)
	}
	t := req.Topology
	if err := pluginapi.CheckTopology(PluginName+"."+req.Test, t); err != nil {
		return plan.Plan{}, err
	}
	if req.Test == "ep_intranode" && t.Nodes != 1 {
		return plan.Plan{}, pluginapi.TopologyError("mori.ep_intranode", t, "runs on one node (mori.ep_internode spans nodes)")
	}
	if req.Test == "ep_internode" && t.Nodes < 2 {
		return plan.Plan{}, pluginapi.TopologyError("mori.ep_internode", t, "needs two nodes or more")
	}
	cmd := s.cmd
	if len(cmd) == 0 {
		if s.moridir != "" {
			script = filepath.Join(s.moridir, script)
		}
		cmd = []string{s.python, script}
	}
	cmd = append(append([]string(nil), cmd...), s.args...)
	step := plan.Step{Name: req.Test, Env: s.env, Procs: 1, ProcsPerNode: 1}
	if s.perfOut {
		step.Env["MORI_PERF_OUT"] = PerfOut
		step.Files = []string{PerfOut}
	}
	if req.Test == "ep_internode" {
		addr := s.masterAddr
		if addr == "" && len(t.Hosts) > 0 {
			addr = t.Hosts[0]
		}
		if addr == "" {
			// Hosts unknown at plan time: the launcher names node 0.
			addr = plan.HostRef(0)
		}
		step.Env["WORLD_SIZE"] = strconv.Itoa(t.Nodes)
		step.Env["GPU_PER_NODE"] = strconv.Itoa(t.GPUsPerNode)
		step.Env["MASTER_ADDR"] = addr
		step.Env["MASTER_PORT"] = s.masterPort
		step.Procs, step.MPI = t.Nodes, true
		cmd = append([]string{"sh", "-c", rankFromStarter, "sh"}, cmd...)
	}
	if len(step.Env) == 0 {
		step.Env = nil
	}
	step.Argv = cmd
	return plan.Plan{Steps: []plan.Step{step}}, nil
}

// Parse implements pluginapi.Plugin.
func (Plugin) Parse(_ context.Context, req pluginapi.ParseRequest) (result.Parsed, error) {
	if p, ok := pluginapi.NoOutputs(req); ok {
		return p, nil
	}
	var p result.Parsed
	s, err := parseParams(req.Params)
	if err != nil {
		s, _ = parseParams(nil)
	}
	var errs []string
	for _, o := range req.Outputs {
		errs = append(errs, parseOne(&p, req.Test, req.Topology, s, o)...)
	}
	if len(errs) > 0 {
		p.Error = strings.Join(errs, "; ")
	}
	return p, nil
}

func parseOne(p *result.Parsed, test string, topo plan.Topology, s settings, o plan.Output) []string {
	var errs []string
	var text *Output
	logName := filepath.Base(o.Log)
	if o.Log != "" {
		f, err := os.Open(o.Log)
		if err != nil {
			errs = append(errs, fmt.Sprintf("open log: %v", err))
		} else {
			text, err = ParseText(f, logName)
			f.Close()
			if err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	var recs []Record
	for name, path := range o.Files {
		if !strings.HasSuffix(name, ".jsonl") && !strings.HasSuffix(name, ".json") {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			errs = append(errs, fmt.Sprintf("open %s: %v", name, err))
			continue
		}
		rs, warns, err := ParseJSONL(f, filepath.Base(path))
		f.Close()
		for _, w := range warns {
			p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: w.Text})
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
		recs = append(recs, rs...)
	}
	if o.LaunchError != "" {
		errs = append(errs, o.LaunchError)
	} else if o.ExitCode != 0 {
		errs = append(errs, fmt.Sprintf("exited with status %d", o.ExitCode))
	}
	if text != nil {
		for _, e := range text.Errors {
			errs = append(errs, fmt.Sprintf("%s:%d: %s", logName, e.Line, e.Text))
		}
		for _, g := range text.Gloo {
			errs = append(errs, fmt.Sprintf("%s:%d: %s", logName, g.Line, g.Text))
		}
		for _, w := range text.Warnings {
			p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: w.Text, Source: fmt.Sprintf("%s:%d", logName, w.Line)})
		}
		if len(text.Mismatches) > 0 {
			var at []string
			for _, m := range text.Mismatches {
				if m.Line > 0 {
					at = append(at, fmt.Sprintf("%s:%d: %s", logName, m.Line, m.Text))
				} else {
					at = append(at, m.Text)
				}
			}
			p.Checks = append(p.Checks, result.Check{Name: "data validation", OK: false,
				Message: "the benchmark's correctness check failed: " + strings.Join(at, "; ")})
		}
	}
	category := map[string]string{"ep_intranode": "intra_ep", "ep_internode": "internode_ep"}[test]
	var rec *Record
	for i := range recs {
		if recs[i].Category == category {
			rec = &recs[i] // the last one: the file may hold earlier runs
		}
	}
	if len(recs) > 0 && rec == nil {
		errs = append(errs, fmt.Sprintf("the perf report has no %s record (it has %s)", category, recs[0].Category))
	}
	if rec != nil {
		if p.Info == nil {
			p.Info = map[string]string{}
		}
		if rec.Commit != "" {
			p.Info["mori_version"] = rec.Commit
		}
		if rec.Platform != "" {
			p.Info["platform"] = rec.Platform
		}
	}
	switch test {
	case "ep_intranode":
		errs = append(errs, intranode(p, topo, s, text, rec, logName)...)
	case "ep_internode":
		errs = append(errs, internode(p, s, text, rec, logName)...)
	}
	return errs
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// near is the agreement asked of a report value and the text's, both
// printed with 2 decimals.
func near(a, b float64) bool { return math.Abs(a-b) <= 0.011+1e-6*math.Abs(a) }

// setupLines are text's lines saying the benchmark could not start
// (Output.Setup), "log:line: text", for an output without results.
func setupLines(text *Output, logName string) []string {
	if text == nil {
		return nil
	}
	var out []string
	for _, e := range text.Setup {
		out = append(out, fmt.Sprintf("%s:%d: %s", logName, e.Line, e.Text))
	}
	return out
}

func intranode(p *result.Parsed, topo plan.Topology, s settings, text *Output, rec *Record, logName string) []string {
	var errs []string
	if text == nil || len(text.Configs) == 0 {
		if rec == nil {
			return append(append(errs, fmt.Sprintf("no \"Dispatch result:\" in %s: not a Mori-EP intra-node output, or cut short", logName)), setupLines(text, logName)...)
		}
		for _, ph := range []string{"dispatch", "combine"} {
			bw, ok1 := rec.Metrics[ph+"_bw_gbps"]
			lat, ok2 := rec.Metrics[ph+"_lat_us"]
			if !ok1 || !ok2 {
				errs = append(errs, fmt.Sprintf("the perf report's intra_ep record has no %s_bw_gbps/%s_lat_us", ph, ph))
				continue
			}
			l := map[string]string{"phase": ph, "stat": "best"}
			p.Metrics = append(p.Metrics, result.Metric{Name: "bw", Value: bw, Unit: "GB/s", Labels: l}, result.Metric{Name: "lat", Value: lat, Unit: "us", Labels: l})
		}
		return errs
	}
	for ci, c := range text.Configs {
		cfg := ""
		if len(text.Configs) > 1 {
			cfg = strconv.Itoa(ci + 1)
		}
		labels := func(kv ...string) map[string]string {
			m := map[string]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i]] = kv[i+1]
			}
			if cfg != "" {
				m["config"] = cfg
			}
			return m
		}
		for _, ph := range []struct {
			name   string
			rounds []Round
		}{{"dispatch", c.Dispatch}, {"combine", c.Combine}} {
			if len(ph.rounds) == 0 {
				errs = append(errs, fmt.Sprintf("%s: no %s rounds after line %d: output cut short", logName, ph.name, c.Line))
				continue
			}
			var bws, lls, lats []float64
			ranks := len(ph.rounds[0].BW)
			perRank := make([][]float64, ranks)
			for _, r := range ph.rounds {
				bws, lls, lats = append(bws, r.AlgBW), append(lls, r.LLBW), append(lats, r.Lat)
				if len(r.BW) != ranks {
					errs = append(errs, fmt.Sprintf("%s:%d: %d ranks in this round, %d in the first", logName, r.Line, len(r.BW), ranks))
					continue
				}
				for i, v := range r.BW {
					perRank[i] = append(perRank[i], v)
				}
			}
			best, avg := bws[0], mean(bws)
			for _, v := range bws {
				best = math.Max(best, v)
			}
			bestLat := lats[0]
			for _, v := range lats {
				bestLat = math.Min(bestLat, v)
			}
			bestLL := 0.0
			for _, v := range lls {
				bestLL = math.Max(bestLL, v)
			}
			if rec != nil && ci == len(text.Configs)-1 {
				// The report holds the last configuration's best round.
				if v, ok := rec.Metrics[ph.name+"_bw_gbps"]; ok && !near(v, best) {
					errs = append(errs, fmt.Sprintf("%s and the perf report disagree: %s best bw %.2f GB/s in the text, %.2f in the report", logName, ph.name, best, v))
				}
				if v, ok := rec.Metrics[ph.name+"_lat_us"]; ok && math.Abs(v-bestLat) > 0.051+1e-4*v {
					errs = append(errs, fmt.Sprintf("%s and the perf report disagree: %s best latency %.1f us in the text, %.2f in the report", logName, ph.name, bestLat, v))
				}
			}
			p.Metrics = append(p.Metrics,
				result.Metric{Name: "bw", Value: best, Unit: "GB/s", Labels: labels("phase", ph.name, "stat", "best")},
				result.Metric{Name: "bw", Value: round2(avg), Unit: "GB/s", Labels: labels("phase", ph.name, "stat", "average")},
				result.Metric{Name: "lat", Value: bestLat, Unit: "us", Labels: labels("phase", ph.name, "stat", "best")},
				result.Metric{Name: "lat", Value: round2(mean(lats)), Unit: "us", Labels: labels("phase", ph.name, "stat", "average")},
			)
			if bestLL > 0 {
				p.Metrics = append(p.Metrics,
					result.Metric{Name: "bw_ll", Value: bestLL, Unit: "GB/s", Labels: labels("phase", ph.name, "stat", "best")},
					result.Metric{Name: "bw_ll", Value: round2(mean(lls)), Unit: "GB/s", Labels: labels("phase", ph.name, "stat", "average")})
			}
			rankMeans := make([]float64, ranks)
			for i := range perRank {
				rankMeans[i] = mean(perRank[i])
				p.Metrics = append(p.Metrics, result.Metric{Name: "rank_bw", Value: round2(rankMeans[i]), Unit: "GB/s", Labels: labels("phase", ph.name, "rank", strconv.Itoa(i))})
			}
			if ranks > 1 {
				hi, lo := rankMeans[0], rankMeans[0]
				for _, v := range rankMeans {
					hi, lo = math.Max(hi, v), math.Min(lo, v)
				}
				if hi > 0 {
					p.Metrics = append(p.Metrics, result.Metric{Name: "rank_spread", Value: round2(100 * (hi - lo) / hi), Unit: "%", Labels: labels("phase", ph.name)})
				}
				med := result.Median(rankMeans)
				var slow []string
				for i, v := range rankMeans {
					if v < med*(1-s.rankTol/100) {
						slow = append(slow, fmt.Sprintf("rank %d %.2f GB/s (%.1f%% below)", i, v, 100*(med-v)/med))
					}
				}
				name := "slow rank " + ph.name
				if cfg != "" {
					name += " config " + cfg
				}
				ch := result.Check{Name: name, OK: len(slow) == 0}
				if !ch.OK {
					ch.Message = fmt.Sprintf("%s bandwidth more than %g%% below the median rank %.2f GB/s: %s", ph.name, s.rankTol, med, strings.Join(slow, ", "))
				}
				p.Checks = append(p.Checks, ch)
			}
			if want := topo.Ranks(); want > 0 && ci == 0 && ph.name == "dispatch" {
				ch := result.Check{Name: "rank count", OK: ranks == want}
				if !ch.OK {
					ch.Message = fmt.Sprintf("%d ranks in the rounds, expected %d (%s)", ranks, want, topo)
				}
				p.Checks = append(p.Checks, ch)
			}
		}
		if len(c.Dispatch) != len(c.Combine) && len(c.Dispatch) > 0 && len(c.Combine) > 0 {
			errs = append(errs, fmt.Sprintf("%s: %d dispatch rounds, %d combine rounds: output cut short", logName, len(c.Dispatch), len(c.Combine)))
		}
		if len(c.E2E) > 0 {
			var e []float64
			for _, r := range c.E2E {
				e = append(e, mean(r.Duration))
			}
			b := e[0]
			for _, v := range e {
				b = math.Min(b, v)
			}
			p.Metrics = append(p.Metrics,
				result.Metric{Name: "e2e_lat", Value: round2(b), Unit: "us", Labels: labels("stat", "best")},
				result.Metric{Name: "e2e_lat", Value: round2(mean(e)), Unit: "us", Labels: labels("stat", "average")})
			if len(c.E2E) != len(c.Dispatch) {
				errs = append(errs, fmt.Sprintf("%s: %d end-to-end rounds, %d dispatch rounds: output cut short", logName, len(c.E2E), len(c.Dispatch)))
			}
		}
	}
	return errs
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// internode turns the Best/Worst/Average tables (and the report's best
// bandwidths and average latencies) into metrics.
func internode(p *result.Parsed, s settings, text *Output, rec *Record, logName string) []string {
	var errs []string
	stats := []string{"best", "worst", "average"}
	cols := []string{"rdma_bw", "xgmi_bw", "ll_bw", "lat"}
	seen := map[string]bool{}
	if text != nil {
		for _, t := range text.Tables {
			if t.Phase != "dispatch" && t.Phase != "combine" {
				continue
			}
			if seen[t.Phase] {
				p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Info, Message: fmt.Sprintf("%s: another %s table at line %d; the first one is judged", logName, t.Phase, t.Line)})
				continue
			}
			seen[t.Phase] = true
			for _, st := range stats {
				row, ok := t.Rows[st]
				if !ok {
					errs = append(errs, fmt.Sprintf("%s: the %s table (line %d) has no %s row: output cut short", logName, t.Phase, t.Line, st))
					continue
				}
				for _, c := range cols {
					v, ok := row[c]
					if !ok {
						errs = append(errs, fmt.Sprintf("%s: the %s table (line %d) has no %s column", logName, t.Phase, t.Line, c))
						continue
					}
					unit := "GB/s"
					if c == "lat" {
						unit = "us"
					}
					p.Metrics = append(p.Metrics, result.Metric{Name: c, Value: v, Unit: unit, Labels: map[string]string{"phase": t.Phase, "stat": st}})
				}
			}
			best, worst := t.Rows["best"]["rdma_bw"], t.Rows["worst"]["rdma_bw"]
			if best > 0 {
				spread := 100 * (best - worst) / best
				p.Metrics = append(p.Metrics, result.Metric{Name: "rank_spread", Value: round2(spread), Unit: "%", Labels: map[string]string{"phase": t.Phase}})
				ch := result.Check{Name: "rank spread " + t.Phase, OK: spread <= s.spreadMax, Warn: true}
				if !ch.OK {
					ch.Message = fmt.Sprintf("worst rank-round RDMA bandwidth %.2f GB/s is %.1f%% below the best %.2f (more than %g%%); the table names no rank: run mori.ep_intranode on each node to find it", worst, spread, best, s.spreadMax)
				}
				p.Checks = append(p.Checks, ch)
			}
			if rec != nil {
				for _, c := range []struct{ key, col, stat string }{{"_rdma_bw_gbps", "rdma_bw", "best"}, {"_xgmi_bw_gbps", "xgmi_bw", "best"}, {"_ll_bw_gbps", "ll_bw", "best"}, {"_lat_us", "lat", "average"}} {
					if v, ok := rec.Metrics[t.Phase+c.key]; ok && !near(v, t.Rows[c.stat][c.col]) {
						errs = append(errs, fmt.Sprintf("%s and the perf report disagree: %s %s %s %.2f in the text, %.2f in the report", logName, t.Phase, c.stat, c.col, t.Rows[c.stat][c.col], v))
					}
				}
			}
		}
	}
	for _, ph := range []string{"dispatch", "combine"} {
		if seen[ph] {
			continue
		}
		if rec == nil {
			errs = append(errs, fmt.Sprintf("no %s table in %s: not a Mori-EP inter-node output, or cut short", ph, logName))
			if ph == "dispatch" {
				errs = append(errs, setupLines(text, logName)...)
			}
			continue
		}
		for _, c := range []struct{ key, col, stat, unit string }{{"_rdma_bw_gbps", "rdma_bw", "best", "GB/s"}, {"_xgmi_bw_gbps", "xgmi_bw", "best", "GB/s"}, {"_ll_bw_gbps", "ll_bw", "best", "GB/s"}, {"_lat_us", "lat", "average", "us"}} {
			if v, ok := rec.Metrics[ph+c.key]; ok {
				p.Metrics = append(p.Metrics, result.Metric{Name: c.col, Value: v, Unit: c.unit, Labels: map[string]string{"phase": ph, "stat": c.stat}})
			}
		}
	}
	return errs
}
