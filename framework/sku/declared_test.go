package sku

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// site is a site's SKU file declaring vLLM's figures for workload.command
// (the field corpus's testdata/field/skus/inference-site.yaml, cut down);
// each case edits one line.
const site = `sku: site
suites:
  inference:
    tests:
      - test: workload.command
        params: {command: vllm bench serve --model m}
        metrics:
          - name: request_throughput
            pattern: 'Request throughput \(req/s\):\s+(\S+)'
            unit: req/s
            better: higher
          - name: mean_ttft
            pattern: 'Mean TTFT \(ms\):\s+(\S+)'
            unit: ms
            better: lower
`

func TestDeclaredMetrics(t *testing.T) {
	s, err := Parse([]byte(site), "site.yaml")
	assert.NilError(t, err)
	st := s.Suites["inference"].Tests[0]
	assert.Equal(t, len(st.Metrics), 2)
	assert.Equal(t, st.Metrics[1].Line, 12)
	assert.Equal(t, st.Metrics[1].FieldLine("better"), 15)
	// The plugin reads what the framework judges: the declarations, as the
	// parameter metrics beside the file's own.
	assert.Equal(t, st.Params["command"], "vllm bench serve --model m")
	ds, err := DecodeDeclared(st.Params[DeclaredParam])
	assert.NilError(t, err)
	assert.Equal(t, EncodeDeclared(ds), EncodeDeclared(st.Metrics))
	assert.Equal(t, ds[0].Pattern, `Request throughput \(req/s\):\s+(\S+)`)
	assert.DeepEqual(t, s.WithDeclared("workload.command", nil), []result.Meaning{
		{Name: "request_throughput", Unit: "req/s", Better: result.BetterHigher, Plot: result.PlotLabels, Record: true},
		{Name: "mean_ttft", Unit: "ms", Better: result.BetterLower, Plot: result.PlotLabels},
	})
	assert.Assert(t, s.WithDeclared("nccl.all_reduce", nil) == nil)
}

// Every mistake in a declaration is a problem at its line, naming the
// field, so that `baseline validate` and every command using the file
// exit 2 before anything runs.
func TestDeclaredMetricsProblems(t *testing.T) {
	for _, c := range []struct {
		name string
		from string // a line of site
		to   string
		want string
	}{
		{"no value group", `            pattern: 'Mean TTFT \(ms\):\s+(\S+)'`, `            pattern: 'Mean TTFT \(ms\):\s+\S+'`,
			`site.yaml: line 13: field metrics.pattern: "Mean TTFT \\(ms\\):\\s+\\S+" has 0 unnamed capture groups: want exactly one, the value`},
		{"two value groups", `            pattern: 'Mean TTFT \(ms\):\s+(\S+)'`, `            pattern: '(Mean|P99) TTFT \(ms\):\s+(\S+)'`,
			`line 13: field metrics.pattern: "(Mean|P99) TTFT \\(ms\\):\\s+(\\S+)" has 2 unnamed capture groups`},
		{"not a regular expression", `            pattern: 'Mean TTFT \(ms\):\s+(\S+)'`, `            pattern: 'Mean TTFT (ms:\s+(\S+)'`,
			`line 13: field metrics.pattern: "Mean TTFT (ms:\\s+(\\S+)" is not a regular expression (RE2, Go's regexp): error parsing regexp: missing closing )`},
		{"a Perl look-ahead", `            pattern: 'Mean TTFT \(ms\):\s+(\S+)'`, `            pattern: 'Mean TTFT (?=\(ms\)):\s+(\S+)'`,
			`line 13: field metrics.pattern: "Mean TTFT (?=\\(ms\\)):\\s+(\\S+)" is not a regular expression`},
		{"no direction", `            better: lower`, `            better: faster`,
			`line 15: field metrics.better: "faster": want "higher" (a rate) or "lower" (a time)`},
		{"no unit", `            unit: ms`, `            unit: ""`,
			`line 14: field metrics.unit: "": want the unit the tool prints`},
		{"a name masking would hide", `          - name: mean_ttft`, `          - name: output_token_throughput`,
			`line 12: field metrics.name: "output_token_throughput" reads as the name of a secret`},
		{"a name twice", `          - name: mean_ttft`, `          - name: request_throughput`,
			`line 12: field metrics.name: request_throughput declared twice for workload.command`},
		{"an unknown key", `            better: lower`, `            better: lower
            scale: 1000`, `line 16: field "scale" is not known here (known: better, name, pattern, unit)`},
		{"the parameter by hand", `        params: {command: vllm bench serve --model m}`, `        params: {command: vllm bench serve --model m, metrics: "[]"}`,
			`line 5: field params.metrics: the parameter metrics is set from the test's metrics: list`},
		{"a site parameter", `        params: {command: vllm bench serve --model m}`, `        params: {command: vllm bench serve --model m}
        site_params: [command, metrics]`,
			`line 7: field site_params: metrics cannot be a site parameter`},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Assert(t, strings.Contains(site, c.from+"\n"), "no line %q", c.from)
			_, err := Parse([]byte(strings.Replace(site, c.from+"\n", c.to+"\n", 1)), "site.yaml")
			assert.ErrorContains(t, err, c.want)
		})
	}
	// One test, two suites, two lists: which would judge it?
	two := site + `  other:
    tests:
      - test: workload.command
        metrics:
          - {name: request_throughput, pattern: 'Request throughput \(req/s\):\s+(\S+)', unit: req/s, better: higher}
`
	_, err := Parse([]byte(two), "site.yaml")
	assert.ErrorContains(t, err, "line 18: field metrics: workload.command declares other metrics than at line 5")
}

// What a plugin reads back is held to the same rules: a parameter edited
// by hand (a results folder's journal) cannot hand the reader a pattern
// the file would refuse.
func TestDecodeDeclaredRefuses(t *testing.T) {
	for _, c := range []struct{ v, want string }{
		{``, "not a JSON list"},
		{`[]`, "no metric declared"},
		{`[null]`, "metric 1 is null"},
		{`[{"name":"rps","pattern":"x (\\d+)","unit":"req/s","better":"higher","scale":2}]`, `unknown field "scale"`},
		{`[{"name":"rps","pattern":"x \\d+","unit":"req/s","better":"higher"}]`, "metric 1 (rps): metrics.pattern:"},
		{`[{"name":"rps","pattern":"x (\\d+)","unit":"req/s","better":"higher"}] []`, "text after the JSON list"},
		{`[{"name":"rps","pattern":"x (\\d+)","unit":"req/s","better":"higher"},{"name":"rps","pattern":"y (\\d+)","unit":"req/s","better":"higher"}]`, "metric rps declared twice"},
	} {
		_, err := DecodeDeclared(c.v)
		assert.ErrorContains(t, err, c.want, c.v)
	}
}

// FuzzDecodeDeclared: what a plugin reads back from its parameter never
// panics, and what it accepts encodes back to what it decodes.
func FuzzDecodeDeclared(f *testing.F) {
	s, err := Parse([]byte(site), "site.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s.Suites["inference"].Tests[0].Params[DeclaredParam])
	f.Add(`[{"name":"ttft","pattern":"^(?P<stat>Mean|P99) TTFT \\(ms\\):\\s+(\\S+)","unit":"ms","better":"lower"}]`)
	f.Add(`[{"name":"x","pattern":"(a)(?P<b>c)(?P<b>d)","unit":"u","better":"higher"}]`)
	f.Fuzz(func(t *testing.T, v string) {
		ds, err := DecodeDeclared(v)
		if err != nil {
			return
		}
		again, err := DecodeDeclared(EncodeDeclared(ds))
		if err != nil || EncodeDeclared(again) != EncodeDeclared(ds) {
			t.Fatalf("%q: decoded %v, again %v (%v)", v, EncodeDeclared(ds), EncodeDeclared(again), err)
		}
	})
}
