package pluginapi

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

func TestDescriptionCheck(t *testing.T) {
	paired := func(f func(*TestInfo)) Description {
		ti := TestInfo{Name: "write_bw", Params: []Param{{Name: "pairs"}},
			Metrics:     []MetricInfo{{Name: "bw_avg", Unit: "Gb/s", Labels: []string{"pair"}}},
			HCAMapParam: "pairs", PairLabel: "pair", Roles: []string{"server", "client"}}
		if f != nil {
			f(&ti)
		}
		return Description{Name: "ibperf", Tests: []TestInfo{ti}}
	}
	for _, tc := range []struct {
		name string
		d    Description
		want string
	}{
		{name: "paired test", d: paired(nil)},
		{name: "a label with values names the pair too", d: paired(func(ti *TestInfo) { ti.Metrics[0].Labels = []string{"pair=a:b|c:d"} })},
		{name: "no capabilities", d: Description{Name: "ibperf", Tests: []TestInfo{{Name: "t"}}}},
		{name: "another name", d: Description{Name: "nccl"}, want: `describes itself as "nccl", not "ibperf" (the name of its executable, gpuaccept-plugin-ibperf)`},
		{name: "nameless test", d: Description{Name: "ibperf", Tests: []TestInfo{{}}}, want: "a test has no name"},
		{name: "test twice", d: Description{Name: "ibperf", Tests: []TestInfo{{Name: "t"}, {Name: "t"}}}, want: `test "t" described twice`},
		{name: "undeclared map parameter", d: paired(func(ti *TestInfo) { ti.HCAMapParam = "nics" }), want: `test write_bw: hca_map_param "nics" is not one of its params`},
		{name: "map without label", d: paired(func(ti *TestInfo) { ti.PairLabel = "" }), want: `hca_map_param "pairs" without a pair_label`},
		{name: "label no metric has", d: paired(func(ti *TestInfo) { ti.PairLabel = "link" }), want: `pair_label "link" is a label of none of its metrics`},
		{name: "role with a dot", d: paired(func(ti *TestInfo) { ti.Roles = []string{"server.a"} }), want: `role "server.a" cannot start a step name`},
		{name: "empty role", d: paired(func(ti *TestInfo) { ti.Roles = []string{""} }), want: `role "" cannot start a step name`},
		{name: "instance label it carries", d: paired(func(ti *TestInfo) { ti.Metrics[0].InstanceLabels = []string{"pair"} })},
		{name: "instance label it does not carry", d: paired(func(ti *TestInfo) { ti.Metrics[0].InstanceLabels = []string{"gpu"} }), want: `metric bw_avg: instance label "gpu" is not one of its labels`},
		{name: "role twice", d: paired(func(ti *TestInfo) { ti.Roles = []string{"server", "server"} }), want: `role "server" listed twice`},
		{name: "a unit never seen, declared", d: paired(func(ti *TestInfo) {
			ti.Metrics = append(ti.Metrics, MetricInfo{Name: "tokens", Unit: "tokens/s", Better: result.BetterHigher, Plot: result.PlotLabels, Record: true})
		})},
		{name: "a time better lower, drawn as a curve", d: paired(func(ti *TestInfo) {
			ti.Metrics[0].Better, ti.Metrics[0].Plot = result.BetterLower, result.PlotCurve
		})},
		{name: "unknown direction", d: paired(func(ti *TestInfo) { ti.Metrics[0].Better = "up" }), want: `metric bw_avg: better "up" is not "higher", "lower" or empty`},
		{name: "unknown plot", d: paired(func(ti *TestInfo) { ti.Metrics[0].Plot = "bars" }), want: `metric bw_avg: plot "bars" is not "curve", "labels", "steps" or empty`},
		{name: "steps without a step label", d: paired(func(ti *TestInfo) { ti.Metrics[0].Plot = result.PlotSteps }), want: `metric bw_avg: plot "steps" needs the label "step" among its labels`},
		{name: "recorded without a direction", d: paired(func(ti *TestInfo) { ti.Metrics[0].Record = true }), want: `metric bw_avg: record without better "higher"`},
		{name: "recorded time", d: paired(func(ti *TestInfo) { ti.Metrics[0].Record, ti.Metrics[0].Better = true, result.BetterLower }), want: `record without better "higher"`},
		{name: "unit on two lines", d: paired(func(ti *TestInfo) { ti.Metrics[0].Unit = "Gb/s\nx" }), want: `metric bw_avg: unit "Gb/s\nx": want a unit on one line`},
		{name: "metric twice", d: paired(func(ti *TestInfo) { ti.Metrics = append(ti.Metrics, ti.Metrics[0]) }), want: `metric bw_avg described twice`},
		// {"name":"token_throughput","value":[REDACTED]}: results.json
		// would hold no number, and no JSON.
		{name: "a metric named like a secret", d: paired(func(ti *TestInfo) { ti.Metrics[0].Name = "output_token_throughput" }), want: `metric output_token_throughput: the name reads as a secret's`},
		{name: "tokens counted are no secret", d: paired(func(ti *TestInfo) { ti.Metrics[0].Name = "output_tokens_per_s" })},
		{name: "nameless metric", d: paired(func(ti *TestInfo) { ti.Metrics = append(ti.Metrics, MetricInfo{Unit: "us"}) }), want: `metric : no name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.d.Check("ibperf")
			if tc.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestPairedStep(t *testing.T) {
	roles := []string{"server", "client"}
	for _, tc := range []struct {
		step string
		role string
		pair int
		ok   bool
	}{
		{"server.0", "server", 0, true},
		{"client.12", "client", 12, true},
		{"client", "", 0, false},
		{"client.", "", 0, false},
		{"client.01", "", 0, false},
		{"client.-1", "", 0, false},
		{"client.1.x", "", 0, false},
		{"peer.0", "", 0, false},
	} {
		role, pair, ok := PairedStep(roles, tc.step)
		assert.Equal(t, ok, tc.ok, tc.step)
		assert.Equal(t, role, tc.role, tc.step)
		assert.Equal(t, pair, tc.pair, tc.step)
	}
	_, _, ok := PairedStep(nil, "server.0")
	assert.Assert(t, !ok, "without declared roles no step is paired")
}

func TestCheckRoles(t *testing.T) {
	roles := []string{"server", "client"}
	step := func(name, role string) plan.Step { return plan.Step{Name: name, Role: role} }
	for _, tc := range []struct {
		name  string
		steps []plan.Step
		roles []string
		want  string
	}{
		{name: "pairs", steps: []plan.Step{step("server.0", "server"), step("client.0", "client")}, roles: roles},
		{name: "steps without roles", steps: []plan.Step{step("all_reduce", "")}},
		{name: "undeclared", steps: []plan.Step{step("server.0", "server")}, want: `step "server.0": role "server", but the test declares no roles`},
		{name: "another role", steps: []plan.Step{step("peer.0", "peer")}, roles: roles, want: `role "peer" is not one of the test's roles (server, client)`},
		{name: "misnamed", steps: []plan.Step{step("srv0", "server")}, roles: roles, want: `step "srv0" of role server: a paired step is named server.N`},
		{name: "named for the other role", steps: []plan.Step{step("client.0", "server")}, roles: roles, want: `step "client.0" of role server`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckRoles(plan.Plan{Steps: tc.steps}, tc.roles)
			if tc.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// A check's code and host end in reports and Kubernetes annotations: a
// line break or markup in them is refused, naming the check.
func TestCheckParsed(t *testing.T) {
	for _, c := range []struct {
		check result.Check
		want  string
	}{
		{result.Check{Name: "ecc", Code: "GA-GPU-ECC-UNCORR", Host: "gpu-node-1.cluster"}, ""},
		{result.Check{Name: "ecc", Code: "GA-GPU-COUNT\nRemedy: curl x | sh"}, `check "ecc": code "GA-GPU-COUNT\nRemedy: curl x | sh" is not a fault code`},
		{result.Check{Name: "ecc", Code: "ga-lower"}, "is not a fault code"},
		{result.Check{Name: "ecc", Host: "<img src=x>"}, `check "ecc": host "<img src=x>" is not a node name`},
	} {
		err := CheckParsed(result.Parsed{Checks: []result.Check{c.check}})
		if c.want == "" {
			assert.NilError(t, err)
		} else {
			assert.ErrorContains(t, err, c.want)
		}
	}
}
