package skucheck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

type describer map[string]pluginapi.Description

func (d describer) Describe(_ context.Context, p string) (pluginapi.Description, error) {
	if desc, ok := d[p]; ok {
		return desc, nil
	}
	return pluginapi.Description{}, errors.New("no plugin " + p)
}

var plugins = describer{"nccl": {Name: "nccl", Tests: []pluginapi.TestInfo{{Name: "all_reduce", Params: []pluginapi.Param{{Name: "minbytes"}, {Name: "env.NAME"}}, Metrics: []pluginapi.MetricInfo{
	{Name: "busbw", Unit: "GB/s", Labels: []string{"placement=out-of-place|in-place", "type"}, Better: result.BetterHigher},
	{Name: "time", Unit: "us", Better: result.BetterLower},
	{Name: "lat_ms", Unit: "ms", Better: result.BetterLower},
	{Name: "calls", Unit: "count"},
}}, {Name: "all_gather"}}},
	// A unit the framework never saw: its plugin's declaration is all
	// that says a band must bound it from below.
	"train": {Name: "train", Tests: []pluginapi.TestInfo{{Name: "step", Metrics: []pluginapi.MetricInfo{
		{Name: "tokens", Unit: "tokens/s", Better: result.BetterHigher, Plot: result.PlotLabels, Record: true},
		{Name: "loss_gap", Unit: "ratio"},
	}}}},
}

const base = `sku: t
suites:
  s:
    tests:
      - test: nccl.all_reduce
      - test: rccl.alltoall
        skip: no plugin yet
baselines:
  - test: nccl.all_reduce
    scope: {nodes: 1, gpus_per_node: 2}
    metric: busbw
    unit: GB/s
    labels: {placement: out-of-place, type: float}
    band: {min: "-10%"}
    source: test
    points: [{size: 1G, value: 300}]
`

// ceiling writes a ceilings section (3 lines, from line 2) before suites:.
func ceiling(metric, unit, tests string) string {
	return "ceilings:\n  - {metric: " + metric + ", unit: " + unit + ", value: 900, link: NVLink, source: datasheet, tests: [\"" + tests + "\"]}\nsuites:"
}

// Typos a YAML schema cannot see, caught against what the plugins report,
// each at the line of its own field (the entry starts on line 9), all of
// them at once.
func TestCheck(t *testing.T) {
	cases := []struct {
		name string
		edit [][2]string
		want []string
	}{
		{"good", nil, nil},
		{"metric", [][2]string{{"metric: busbw", "metric: bus_bw"}}, []string{`t.yaml: line 11: field metric: nccl.all_reduce reports no metric "bus_bw" (it reports: busbw, time, lat_ms, calls)`}},
		{"label value", [][2]string{{"placement: out-of-place", "placement: outofplace"}}, []string{`t.yaml: line 13: field labels: label placement="outofplace" is not one of out-of-place, in-place`}},
		{"label key", [][2]string{{"placement: out-of-place", "placment: out-of-place"}}, []string{`t.yaml: line 13: field labels: nccl.all_reduce busbw has no label "placment" (its labels: placement, type)`}},
		{"baseline test in no suite", [][2]string{{"  - test: nccl.all_reduce\n    scope", "  - test: nccl.allreduce\n    scope"}}, []string{`t.yaml: line 9: field test: nccl.allreduce is in no suite of SKU t (suites list: nccl.all_reduce, rccl.alltoall)`}},
		{"suite test", [][2]string{{"      - test: nccl.all_reduce\n", "      - test: nccl.all_reduc\n"}}, []string{
			`t.yaml: line 5: field test: plugin nccl has no test "all_reduc" (known: nccl.all_reduce, nccl.all_gather)`,
			`t.yaml: line 9: field test: nccl.all_reduce is in no suite of SKU t (suites list: nccl.all_reduc, rccl.alltoall)`,
		}},
		{"unit at its own line", [][2]string{{"unit: GB/s", "unit: Gb/s"}}, []string{"t.yaml: line 12: field unit: nccl.all_reduce busbw is in GB/s, not Gb/s"}},
		{"every problem, not the first", [][2]string{{"unit: GB/s", "unit: Gb/s"}, {"placement: out-of-place", "placement: outofplace"}}, []string{
			"t.yaml: line 12: field unit: nccl.all_reduce busbw is in GB/s, not Gb/s",
			`t.yaml: line 13: field labels: label placement="outofplace" is not one of out-of-place, in-place`,
		}},
		{"plugin that is not there", [][2]string{{"      - test: nccl.all_reduce\n", "      - test: nccl.all_reduce\n      - test: mori.ep_intranode\n"}}, []string{"t.yaml: line 6: field test: no plugin mori"}},
		// site_params (line 6) name parameters the test takes: a
		// variable of the ranks' environment is one of every test's.
		{"site_params the test takes", [][2]string{{"      - test: nccl.all_reduce\n", "      - test: nccl.all_reduce\n        site_params: [minbytes, env.NCCL_IB_HCA]\n"}}, nil},
		{"site_params the test does not take", [][2]string{{"      - test: nccl.all_reduce\n", "      - test: nccl.all_reduce\n        site_params: [minbytes, pairs, env.NCCL-IB]\n"}}, []string{
			`t.yaml: line 6: field site_params: nccl.all_reduce takes no parameter "pairs" (it takes: minbytes, env.NAME)`,
			`t.yaml: line 6: field site_params: nccl.all_reduce takes no parameter "env.NCCL-IB" (it takes: minbytes, env.NAME)`,
		}},
		{"suite test without a baseline", [][2]string{{"      - test: nccl.all_reduce\n", "      - test: nccl.all_reduce\n      - test: nccl.all_gather\n"}}, nil},
		{"a ceiling that limits a metric a test reports", [][2]string{{"suites:", ceiling("busbw", "GB/s", "nccl.*")}}, nil},
		{"a ceiling on a metric no test reports", [][2]string{{"suites:", ceiling("bus_bw", "GB/s", "nccl.*")}}, []string{
			"t.yaml: line 3: field ceilings.metric: none of nccl.all_reduce reports bus_bw in GB/s: the ceiling would judge nothing"}},
		{"a ceiling in the wrong unit", [][2]string{{"suites:", ceiling("busbw", "Gb/s", "nccl.*")}}, []string{
			"t.yaml: line 3: field ceilings.metric: none of nccl.all_reduce reports busbw in Gb/s: the ceiling would judge nothing"}},
		{"a ceiling on a time", [][2]string{{"suites:", ceiling("time", "us", "nccl.*")}}, []string{
			"t.yaml: line 3: field ceilings.metric: nccl.all_reduce time in us is not declared better higher by its plugin: a physical ceiling limits how much a link carries or a GPU computes"}},
		{"a ceiling on a metric of unknown direction", [][2]string{{"suites:", ceiling("calls", "count", "nccl.*")}}, []string{
			"t.yaml: line 3: field ceilings.metric: nccl.all_reduce calls in count is not declared better higher by its plugin: a physical ceiling limits how much a link carries or a GPU computes"}},
		{"a ceiling for tests the SKU does not run", [][2]string{{"suites:", ceiling("busbw", "GB/s", "ibperf.*")}}, []string{
			"t.yaml: line 3: field ceilings.tests: the ceiling on busbw applies to no test of the SKU's suites"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := base
			for _, e := range c.edit {
				assert.Assert(t, strings.Contains(text, e[0]), "case does not apply: %q", e[0])
				text = strings.Replace(text, e[0], e[1], 1)
			}
			s, err := sku.Parse([]byte(text), "t.yaml")
			assert.NilError(t, err)
			err = Check(context.Background(), plugins, s)
			if c.want == nil {
				assert.NilError(t, err)
				return
			}
			assert.DeepEqual(t, strings.Split(err.Error(), "\n"), c.want)
		})
	}
}

// A file with problems of both kinds gets both reported, in line order:
// the file's own (sku.Parse) and those against the plugins. Empty suites
// and entries do not stop the check.
func TestCheckWhatParseRead(t *testing.T) {
	text := strings.Replace(strings.Replace(base, "unit: GB/s", "unit: Gb/s", 1), "source: test", "source: \"\"", 1)
	text = strings.Replace(text, "  s:\n", "  empty:\n  s:\n", 1) + "  -\n"
	s, err := sku.Parse([]byte(text), "t.yaml")
	assert.Assert(t, s != nil && err != nil)
	all := sku.NewProblems("t.yaml", []error{err, Check(context.Background(), plugins, s)})
	assert.DeepEqual(t, strings.Split(all.Error(), "\n"), []string{
		`t.yaml: line 3: suite "empty": no tests`,
		"t.yaml: line 10: field source: missing (say where the numbers come from)",
		"t.yaml: line 13: field unit: nccl.all_reduce busbw is in GB/s, not Gb/s",
		"t.yaml: line 18: field baselines: entry 2 is empty",
	})
	// The check's problems are data like Parse's: line and field.
	var p *sku.Problems
	assert.Assert(t, errors.As(all, &p))
	assert.DeepEqual(t, p.List[2], sku.Problem{File: "t.yaml", Line: 13, Field: "unit", Message: "nccl.all_reduce busbw is in GB/s, not Gb/s"})
}

// A band must bound the bad side of its metric, as the metric's plugin
// declares it: above for a time, below for a rate, whatever the unit
// (tokens/s is no unit the framework knows). A latency band of floors
// would pass any slowdown; a metric of unknown direction is judged by the
// band as written.
func TestBandDirection(t *testing.T) {
	const tmpl = `sku: t
suites:
  s:
    tests:
      - test: %[1]s
baselines:
  - {test: %[1]s, scope: {nodes: 1, gpus_per_node: 1}, metric: %[2]s, unit: %[3]s, source: s, value: 100, band: %[4]s}
`
	cases := []struct {
		test, metric, unit, band, want string
	}{
		{"nccl.all_reduce", "time", "us", `{max: "+10%", warn_max: "+5%", warn_min: "-50%"}`, ""},
		{"nccl.all_reduce", "time", "us", `{warn_max: "+5%"}`, ""},
		{"nccl.all_reduce", "time", "us", `{min: "-10%"}`, `t.yaml: line 7: field band: time is in us, better lower (as nccl.all_reduce declares), and the band has no max or warn_max: it would pass any slowdown`},
		{"nccl.all_reduce", "lat_ms", "ms", `{min: ">= 90 ms", warn_min: "-5%"}`, "field band: lat_ms is in ms, better lower"},
		{"nccl.all_reduce", "busbw", "GB/s", `{max: "+10%"}`, "field band: busbw is in GB/s, better higher (as nccl.all_reduce declares), and the band has no min or warn_min: it would pass a dead link"},
		{"nccl.all_reduce", "busbw", "GB/s", `{min: "-10%", warn_max: "<= 800 GB/s"}`, ""},
		{"nccl.all_reduce", "calls", "count", `{max: "+10%"}`, ""},
		{"nccl.all_reduce", "calls", "count", `{min: "-10%"}`, ""},
		{"train.step", "tokens", "tokens/s", `{min: "-10%"}`, ""},
		{"train.step", "tokens", "tokens/s", `{max: "+10%"}`, "field band: tokens is in tokens/s, better higher (as train.step declares), and the band has no min or warn_min"},
		{"train.step", "tokens", "samples/s", `{min: "-10%"}`, "field unit: train.step tokens is in tokens/s, not samples/s"},
		{"train.step", "loss_gap", "ratio", `{max: "+10%"}`, ""},
	}
	for _, c := range cases {
		t.Run(c.metric+" "+c.band, func(t *testing.T) {
			s, err := sku.Parse([]byte(fmt.Sprintf(tmpl, c.test, c.metric, c.unit, c.band)), "t.yaml")
			assert.NilError(t, err, "a SKU file parses without its plugins")
			err = Check(context.Background(), plugins, s)
			if c.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, c.want)
		})
	}
	// A time curve cannot dip the way a rate does.
	s, err := sku.Parse([]byte("sku: t\nsuites:\n  s:\n    tests:\n      - test: nccl.all_reduce\nbaselines:\n  - test: nccl.all_reduce\n    scope: {nodes: 1, gpus_per_node: 1}\n    metric: time\n    unit: us\n    source: s\n    band: {max: \"+10%\"}\n    dip: {warn: \"5%\"}\n    points: [{size: 1G, value: 100}, {size: 2G, value: 200}]\n"), "t.yaml")
	assert.NilError(t, err)
	assert.Error(t, Check(context.Background(), plugins, s), "t.yaml: line 13: field dip: nccl.all_reduce time is not declared better higher: the dip check looks for a rate falling as the message size grows (a time grows with it)")
}

func TestUnbaselined(t *testing.T) {
	s, err := sku.Parse([]byte(strings.Replace(base, "      - test: nccl.all_reduce\n", "      - test: nccl.all_reduce\n      - test: nccl.all_gather\n", 1)), "t.yaml")
	assert.NilError(t, err)
	assert.DeepEqual(t, Unbaselined(s), []string{"suite s: nccl.all_gather has no baseline at any scope"})
}

// workload reads the metrics a SKU file declares (it takes the parameter
// sku.DeclaredParam); "own" also reports one of its own.
var workloadPlugins = describer{
	"workload": {Name: "workload", Tests: []pluginapi.TestInfo{
		{Name: "command", Params: []pluginapi.Param{{Name: "command"}, {Name: sku.DeclaredParam}}},
		{Name: "own", Params: []pluginapi.Param{{Name: sku.DeclaredParam}}, Metrics: []pluginapi.MetricInfo{{Name: "rate", Unit: "req/s", Better: result.BetterHigher}}},
	}},
	"nccl": plugins["nccl"],
}

const declaredBase = `sku: t
suites:
  s:
    tests:
      - test: workload.command
        metrics:
          - {name: request_throughput, pattern: 'Request throughput \(req/s\):\s+(\S+)', unit: req/s, better: higher}
          - {name: ttft, pattern: '^(?P<stat>Mean|P99) TTFT \(ms\):\s+(\S+)', unit: ms, better: lower}
baselines:
  - test: workload.command
    scope: {nodes: 1, gpus_per_node: 1}
    metric: ttft
    unit: ms
    labels: {stat: Mean}
    band: {max: "+20%"}
    source: test
    value: 71.54
`

// The metrics a SKU file declares are held to what they declare, as a
// plugin's own: the entries judging them name their unit and labels, and
// bound the side their direction says is worse.
func TestCheckDeclaredMetrics(t *testing.T) {
	for _, c := range []struct {
		name string
		edit [][2]string
		want []string
	}{
		{"good", nil, nil},
		{"a time with a floor only", [][2]string{{`band: {max: "+20%"}`, `band: {min: "-20%"}`}}, []string{
			`t.yaml: line 15: field band: ttft is in ms, better lower (as workload.command declares), and the band has no max or warn_max: it would pass any slowdown (give max: "+10%"; warn_min flags a value far below the baseline)`}},
		{"another unit", [][2]string{{"unit: ms\n", "unit: s\n"}}, []string{`t.yaml: line 13: field unit: workload.command ttft is in ms, not s`}},
		{"a label the pattern does not name", [][2]string{{"labels: {stat: Mean}", "labels: {percentile: Mean}"}}, []string{
			`t.yaml: line 14: field labels: workload.command ttft has no label "percentile" (its labels: stat)`}},
		{"a metric not declared", [][2]string{{"metric: ttft", "metric: mean_ttft"}}, []string{
			`t.yaml: line 12: field metric: workload.command reports no metric "mean_ttft" (it reports: request_throughput, ttft)`}},
		{"declared on a test that reads none", [][2]string{{"      - test: workload.command\n", "      - test: nccl.all_reduce\n"}, {"  - test: workload.command\n", "  - test: nccl.all_reduce\n"}}, []string{
			`t.yaml: line 5: field metrics: nccl.all_reduce reads no declared metrics (it takes no parameter metrics): declare metrics on a test that reads them, such as workload.command`,
			`t.yaml: line 12: field metric: nccl.all_reduce reports no metric "ttft" (it reports: busbw, time, lat_ms, calls)`}},
		{"none declared for a test that reports only those", [][2]string{{"      - test: workload.command\n", "      - test: workload.command\n      - test: workload.command\n"}}, []string{
			`t.yaml: line 5: field metrics: workload.command reports only the metrics the SKU file declares for it, and this suite test declares none (metrics: name, pattern, unit, better)`}},
		{"named as the plugin's own", [][2]string{{"      - test: workload.command\n", "      - test: workload.own\n"}, {"  - test: workload.command\n", "  - test: workload.own\n"}, {"name: request_throughput", "name: rate"}}, []string{
			`t.yaml: line 7: field metrics.name: workload.own reports a metric rate of its own: name the declared one otherwise`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := declaredBase
			for _, e := range c.edit {
				assert.Assert(t, strings.Contains(text, e[0]), "case does not apply: %q", e[0])
				text = strings.Replace(text, e[0], e[1], 1)
			}
			s, err := sku.Parse([]byte(text), "t.yaml")
			assert.NilError(t, err)
			err = Check(context.Background(), workloadPlugins, s)
			if c.want == nil {
				assert.NilError(t, err)
				return
			}
			assert.DeepEqual(t, strings.Split(err.Error(), "\n"), c.want)
		})
	}
}
