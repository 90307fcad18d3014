// Package pluginapi is the test-plugin boundary: the Plugin interface every
// test plugin implements, its gRPC transport over hashicorp/go-plugin, and
// the Host that starts plugin processes (built-in ones by re-executing
// gpuaccept, external ones as gpuaccept-plugin-NAME executables found on a
// plugin path) and turns their crashes and hangs into errors. CONTRACT.md
// in this folder holds every rule a plugin in any language must keep, and
// the code that makes each.
package pluginapi

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// Plugin is what a test plugin answers. Implementations must not panic on
// hostile output, but the Host survives it if they do: the plugin runs in
// its own process.
type Plugin interface {
	// Describe says who the plugin is and what tests it offers.
	Describe(ctx context.Context) (Description, error)
	// Plan turns a test, its parameters and a topology into the steps to
	// launch. Errors are configuration errors (unknown test, bad parameter)
	// and name the parameter.
	Plan(ctx context.Context, req PlanRequest) (plan.Plan, error)
	// Parse turns the outputs of the steps into metrics, checks and
	// diagnostics. Output that cannot be understood is reported in
	// result.Parsed.Error, not as a Go error; the Go error is for failures of
	// the call itself.
	Parse(ctx context.Context, req ParseRequest) (result.Parsed, error)
}

// Description is a plugin's self-description.
type Description struct {
	// Name is the plugin name, the prefix of its test names ("nccl").
	Name    string     `json:"name"`
	Version string     `json:"version"`
	Tests   []TestInfo `json:"tests"`
}

// TestInfo describes one test a plugin offers.
type TestInfo struct {
	// Name is the short test name ("all_reduce"); the full name is
	// "plugin.name".
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Params      []Param      `json:"params,omitempty"`
	Metrics     []MetricInfo `json:"metrics,omitempty"`
	// HCAMapParam names the parameter (one of Params) that takes an HCA
	// pair map, "SERVER_HCA:CLIENT_HCA,...": the localiser sets it to
	// examine a node pair HCA by HCA (its nic-pairs stage). Empty: the test
	// takes none.
	HCAMapParam string `json:"hca_map_param,omitempty"`
	// PairLabel names the metric label whose value is the HCA pair
	// "SERVER_HCA:CLIENT_HCA" a point was measured on, by which the
	// nic-pairs stage reads each pair's figure. Required with HCAMapParam.
	PairLabel string `json:"pair_label,omitempty"`
	// Roles are the roles of a paired test's steps, in start order
	// ("server", "client"): the step of role R for pair N is named "R.N"
	// (PairedStep) and has Role R, and gpuaccept check groups logs named
	// R.N.log in one folder into one run. Nil: the steps have no role.
	Roles []string `json:"roles,omitempty"`
	// Preflight says the test checks each node's health instead of
	// measuring it: a suite run runs its preflight tests first, and a
	// node a failed check names (result.Check.Host) is known bad for every
	// later test, which is skipped with that check's reason.
	Preflight bool `json:"preflight,omitempty"`
}

// Test returns the test of d named name (short name), and whether there is
// one.
func (d Description) Test(name string) (TestInfo, bool) {
	for _, t := range d.Tests {
		if t.Name == name {
			return t, true
		}
	}
	return TestInfo{}, false
}

// Check reports the first way d breaks the contract of a description
// served by the plugin named name (CONTRACT.md): another plugin name, a
// test without a name or named twice, an HCA map parameter the test does
// not declare or without a pair label, a pair label no metric carries, or
// a role that cannot start a step name, an instance label the metric does
// not carry, a metric named twice or whose meaning (better, plot, record)
// the framework cannot act on. The error names the test and the field.
func (d Description) Check(name string) error {
	if d.Name != name {
		return fmt.Errorf("describes itself as %q, not %q (the name of its executable, %s%s)", d.Name, name, ExternalPrefix, name)
	}
	seen := map[string]bool{}
	for _, t := range d.Tests {
		switch {
		case t.Name == "":
			return fmt.Errorf("a test has no name")
		case seen[t.Name]:
			return fmt.Errorf("test %q described twice", t.Name)
		}
		seen[t.Name] = true
		if err := t.check(); err != nil {
			return fmt.Errorf("test %s: %w", t.Name, err)
		}
	}
	return nil
}

func (t TestInfo) check() error {
	if t.HCAMapParam != "" {
		if !slices.ContainsFunc(t.Params, func(p Param) bool { return p.Name == t.HCAMapParam }) {
			return fmt.Errorf("hca_map_param %q is not one of its params", t.HCAMapParam)
		}
		if t.PairLabel == "" {
			return fmt.Errorf("hca_map_param %q without a pair_label: the pairs' figures could not be read", t.HCAMapParam)
		}
	}
	if t.PairLabel != "" && !slices.ContainsFunc(t.Metrics, func(m MetricInfo) bool {
		return slices.ContainsFunc(m.Labels, func(l string) bool { k, _, _ := strings.Cut(l, "="); return k == t.PairLabel })
	}) {
		return fmt.Errorf("pair_label %q is a label of none of its metrics", t.PairLabel)
	}
	for i, m := range t.Metrics {
		if err := m.checkMeaning(); err != nil {
			return fmt.Errorf("metric %s: %w", m.Name, err)
		}
		if slices.ContainsFunc(t.Metrics[:i], func(o MetricInfo) bool { return o.Name == m.Name }) {
			return fmt.Errorf("metric %s described twice", m.Name)
		}
		for _, l := range m.InstanceLabels {
			if !slices.ContainsFunc(m.Labels, func(k string) bool { k, _, _ = strings.Cut(k, "="); return k == l }) {
				return fmt.Errorf("metric %s: instance label %q is not one of its labels", m.Name, l)
			}
		}
		for _, l := range m.KeyLabels {
			if !slices.ContainsFunc(m.Labels, func(k string) bool { k, _, _ = strings.Cut(k, "="); return k == l }) {
				return fmt.Errorf("metric %s: key label %q is not one of its labels", m.Name, l)
			}
			if slices.Contains(m.InstanceLabels, l) {
				return fmt.Errorf("metric %s: label %q is both a key label and an instance label", m.Name, l)
			}
		}
	}
	for i, r := range t.Roles {
		if !roleName(r) {
			return fmt.Errorf("role %q cannot start a step name ROLE.N (a word of [a-z0-9_-])", r)
		}
		if slices.Contains(t.Roles[:i], r) {
			return fmt.Errorf("role %q listed twice", r)
		}
	}
	return nil
}

// checkMeaning reports a metric declaration the framework could not act
// on: a name masking would take for a secret's, a direction, plot kind or
// record flag it does not know, or a recorded metric not better higher
// (record derives floors).
func (m MetricInfo) checkMeaning() error {
	switch {
	case m.Name == "":
		return fmt.Errorf("no name")
	case redact.SecretName(m.Name):
		// Masking takes a value after such a name for a secret, in every
		// report and in results.json ({"name":"x_token","value":[REDACTED]}).
		return fmt.Errorf("the name reads as a secret's (token, key, pass, ...): its values would be masked in every report and results.json; name it otherwise (tokens_per_s, not token_throughput)")
	case strings.TrimSpace(m.Unit) != m.Unit || strings.ContainsAny(m.Unit, "\r\n"):
		return fmt.Errorf("unit %q: want a unit on one line without surrounding spaces (\"GB/s\", \"tokens/s\")", m.Unit)
	case m.Better != result.BetterUnknown && m.Better != result.BetterHigher && m.Better != result.BetterLower:
		return fmt.Errorf("better %q is not %q, %q or empty (unknown)", m.Better, result.BetterHigher, result.BetterLower)
	case m.Plot != result.PlotNone && m.Plot != result.PlotCurve && m.Plot != result.PlotLabels && m.Plot != result.PlotSteps:
		return fmt.Errorf("plot %q is not %q, %q, %q or empty (not drawn)", m.Plot, result.PlotCurve, result.PlotLabels, result.PlotSteps)
	case m.Plot == result.PlotSteps && !slices.ContainsFunc(m.Labels, func(k string) bool { return k == "step" }):
		return fmt.Errorf("plot %q needs the label \"step\" among its labels", m.Plot)
	case m.Record && m.Better != result.BetterHigher:
		return fmt.Errorf("record without better %q: baseline record derives floors under the runs' values", result.BetterHigher)
	case m.Record && m.Unit == "":
		return fmt.Errorf("record without a unit: the recorded entry names one")
	}
	return nil
}

// roleName says r can start a step name "r.N" (plan.Plan.Validate's rule,
// 64 of [a-z0-9_.-]) and holds no '.', which would make the pair index
// ambiguous.
func roleName(r string) bool {
	return plan.ValidName(r) && len(r) <= 48 && !strings.Contains(r, ".")
}

// PairedStep reports whether step is named as the step of one of roles for
// a pair, "ROLE.N" (N a decimal pair index), and returns the role and N.
func PairedStep(roles []string, step string) (role string, pair int, ok bool) {
	r, n, found := strings.Cut(step, ".")
	if !found || !slices.Contains(roles, r) || n == "" {
		return "", 0, false
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 || strconv.Itoa(i) != n {
		return "", 0, false
	}
	return r, i, true
}

// CheckRoles reports the first step of p whose role is not one of roles or
// whose name is not "ROLE.N" (PairedStep); steps without a role, and
// evidence steps (plan.Evidence: any test may collect what its nodes show
// when its time runs out), are not checked. The error names the step.
func CheckRoles(p plan.Plan, roles []string) error {
	for _, s := range p.Steps {
		if s.Role == "" || s.Role == plan.Evidence {
			continue
		}
		if !slices.Contains(roles, s.Role) {
			if len(roles) == 0 {
				return fmt.Errorf("step %q: role %q, but the test declares no roles", s.Name, s.Role)
			}
			return fmt.Errorf("step %q: role %q is not one of the test's roles (%s)", s.Name, s.Role, strings.Join(roles, ", "))
		}
		if r, _, ok := PairedStep(roles, s.Name); !ok || r != s.Role {
			return fmt.Errorf("step %q of role %s: a paired step is named %s.N (N: its pair, 0, 1, ...)", s.Name, s.Role, s.Role)
		}
	}
	return nil
}

// Param is a test parameter with its default and unit.
type Param struct {
	Name        string `json:"name"`
	Default     string `json:"default,omitempty"`
	Unit        string `json:"unit,omitempty"`
	Description string `json:"description"`
}

// MetricInfo is a metric a test reports.
type MetricInfo struct {
	Name        string `json:"name"`
	Unit        string `json:"unit"`
	Description string `json:"description"`
	// Labels are the label keys the metric carries, as "key" (any value)
	// or "key=v1|v2" (only these values).
	Labels []string `json:"labels,omitempty"`
	// LabelDefaults map a label to the value it has when the tool is not
	// asked for another ("type": "float", "redop": "sum" for nccl-tests).
	// Where a run's points differ in such a label (-d all -o all), a
	// baseline entry that does not name it judges only the points with the
	// default; the others are reported as not judged. Nil: none.
	LabelDefaults map[string]string `json:"label_defaults,omitempty"`
	// InstanceLabels are the labels (keys of Labels) naming which GPU,
	// node or pair a point was measured on ("gpu", "host"), not what was
	// measured: baseline record folds them, so one entry judges every
	// GPU. Nil: none.
	InstanceLabels []string `json:"instance_labels,omitempty"`
	// KeyLabels are the labels (keys of Labels) saying what was measured
	// in a way every baseline entry must name, even where all of a run's
	// points share one value (nccl-tests' placement, a training run's
	// model and layer count): baseline record writes them into every
	// entry. Nil: none.
	KeyLabels []string `json:"key_labels,omitempty"`
	// Better is which way the metric's values improve: result.BetterHigher
	// (a rate), result.BetterLower (a time), or unknown (""). skucheck
	// holds a baseline entry's band to it (a floor for higher, a ceiling
	// for lower); localisation compares runs by a metric better higher;
	// baseline record records only those.
	Better result.Better `json:"better,omitempty"`
	// Plot is how report.html draws the metric: result.PlotCurve (over
	// message size), result.PlotLabels (one value per label set), or not
	// at all ("").
	Plot result.Plot `json:"plot,omitempty"`
	// Record makes the metric one baseline record records when --metric
	// names none. Requires Better higher: record derives floors.
	Record bool `json:"record,omitempty"`
}

// Meaning returns what m declares the metric means, as a run keeps it
// (result.Test.Meanings).
func (m MetricInfo) Meaning() result.Meaning {
	return result.Meaning{Name: m.Name, Unit: m.Unit, Better: m.Better, Plot: m.Plot, Record: m.Record, KeyLabels: m.KeyLabels}
}

// Meanings returns the meanings of t's metrics, in their order; nil for
// none.
func (t TestInfo) Meanings() []result.Meaning {
	var out []result.Meaning
	for _, m := range t.Metrics {
		out = append(out, m.Meaning())
	}
	return out
}

// PlanRequest asks a plugin for the steps of one test.
type PlanRequest struct {
	// Test is the short test name ("all_reduce").
	Test     string            `json:"test"`
	Params   map[string]string `json:"params,omitempty"`
	Topology plan.Topology     `json:"topology"`
}

// ParseRequest hands a plugin the outputs of one test's steps.
type ParseRequest struct {
	Test     string            `json:"test"`
	Params   map[string]string `json:"params,omitempty"`
	Topology plan.Topology     `json:"topology"`
	Outputs  []plan.Output     `json:"outputs"`
}
