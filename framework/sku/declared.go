package sku

// This file: metrics a SKU file declares for a suite test (metrics:), for
// a test that reads any command's output by patterns (the workload
// plugin): a site's own benchmark (vLLM, SGLang, fio) carries its own
// metrics, what each means and the bands that judge it.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// DeclaredParam is the parameter that carries a suite test's declared
// metrics to its plugin: Parse reads it (DecodeDeclared), as every run,
// check and verify hands the suite's parameters. A plugin that reads
// declared metrics declares this parameter (skucheck refuses metrics: on a
// test that does not); nobody writes it by hand (validate and
// acceptance.Resolve refuse it), so the plugin reads what the framework
// judges.
const DeclaredParam = "metrics"

// maxPattern bounds a declared pattern's length (RE2 bounds its work by
// the input's length; this bounds the program).
const maxPattern = 4096

// DeclaredMetric is one metric a SKU file declares for a suite test: a
// name, the pattern that finds its value in the output, and what it means
// (unit, better), as a plugin's pluginapi.MetricInfo says it for its own.
type DeclaredMetric struct {
	// Name is the metric's name in results and baseline entries
	// ("request_throughput"): a letter, then letters, digits, _ . -.
	Name string `yaml:"name" json:"name"`
	// Pattern is an RE2 regular expression (Go's regexp) matched against
	// each line of the output, without its line end: its one unnamed
	// capture group is the value, a decimal number; each named group
	// ((?P<label>...)) is a label of the point, its text the label's value.
	Pattern string `yaml:"pattern" json:"pattern"`
	// Unit is the value's unit, on one line ("req/s", "ms", "MB/s"): the
	// unit the tool prints where the pattern matches.
	Unit string `yaml:"unit" json:"unit"`
	// Better is which way the value improves, "higher" (a rate) or
	// "lower" (a time): the direction skucheck holds the bands to.
	Better result.Better `yaml:"better" json:"better"`
	// Line is the line of the metric's item in the file.
	Line int `yaml:"-" json:"-"`
	// fieldLines are the lines of the item's keys.
	fieldLines map[string]int
}

// FieldLine is the line of the metric's field key, else of the item.
func (d *DeclaredMetric) FieldLine(key string) int {
	if l := d.fieldLines[key]; l > 0 {
		return l
	}
	return d.Line
}

// UnmarshalYAML reads a declared metric with its lines.
func (d *DeclaredMetric) UnmarshalYAML(n *yaml.Node) error {
	type raw DeclaredMetric
	if err := strictDecode(n, (*raw)(d)); err != nil {
		return err
	}
	d.Line = n.Line
	d.fieldLines = map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		d.fieldLines[n.Content[i].Value] = n.Content[i].Line
	}
	return nil
}

var metricName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)

// Compile checks a declared pattern and returns it compiled with the
// names of its label groups: RE2 syntax, exactly one unnamed capture group
// (the value), named groups of distinct names. The error says which rule
// the pattern breaks.
func Compile(pattern string) (*regexp.Regexp, []string, error) {
	if pattern == "" {
		return nil, nil, fmt.Errorf("empty: want a regular expression with one capture group for the value")
	}
	if len(pattern) > maxPattern {
		return nil, nil, fmt.Errorf("%d characters, more than %d", len(pattern), maxPattern)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, nil, fmt.Errorf("%q is not a regular expression (RE2, Go's regexp): %w", pattern, err)
	}
	unnamed := 0
	var labels []string
	for _, name := range re.SubexpNames()[1:] {
		switch {
		case name == "":
			unnamed++
		case slices.Contains(labels, name):
			return nil, nil, fmt.Errorf("%q names the group %q twice", pattern, name)
		default:
			labels = append(labels, name)
		}
	}
	if unnamed != 1 {
		return nil, nil, fmt.Errorf("%q has %d unnamed capture groups: want exactly one, the value (group without capturing with (?:...), name a label with (?P<label>...))", pattern, unnamed)
	}
	return re, labels, nil
}

// validate returns the problems of d, at the line of the field at fault.
func (d *DeclaredMetric) validate() []error {
	var errs []error
	switch {
	case !metricName.MatchString(d.Name):
		errs = append(errs, problemAt(d.FieldLine("name"), "metrics.name", "%q: want a metric name (a letter, then up to 63 letters, digits, _ . -)", d.Name))
	case redact.SecretName(d.Name):
		// Masking takes "NAME VALUE" for a secret and would mask the
		// value in every report and results.json.
		errs = append(errs, problemAt(d.FieldLine("name"), "metrics.name", "%q reads as the name of a secret (token, key, pass, ...): its values would be masked in every report; name it otherwise (output_tokens_per_s, not output_token_throughput)", d.Name))
	}
	if _, labels, err := Compile(d.Pattern); err != nil {
		errs = append(errs, problemAt(d.FieldLine("pattern"), "metrics.pattern", "%v", err))
	} else {
		for _, l := range labels {
			if redact.SecretName(l) {
				errs = append(errs, problemAt(d.FieldLine("pattern"), "metrics.pattern", "label group %q reads as the name of a secret (token, key, pass, ...): its values would be masked in every report; name it otherwise", l))
			}
		}
	}
	if d.Unit == "" || strings.TrimSpace(d.Unit) != d.Unit || strings.ContainsAny(d.Unit, "\r\n") || len(d.Unit) > 32 {
		errs = append(errs, problemAt(d.FieldLine("unit"), "metrics.unit", "%q: want the unit the tool prints, on one line (\"req/s\", \"ms\", \"MB/s\")", d.Unit))
	}
	if d.Better != result.BetterHigher && d.Better != result.BetterLower {
		errs = append(errs, problemAt(d.FieldLine("better"), "metrics.better", "%q: want %q (a rate) or %q (a time): the bands that judge it bound that side", d.Better, result.BetterHigher, result.BetterLower))
	}
	return errs
}

// validateDeclared checks t's metrics: each as written, no name twice, and
// the declaration parameter not written by hand.
func (t *SuiteTest) validateDeclared() []error {
	var errs []error
	if t.handParam {
		errs = append(errs, problemAt(t.Line, "params."+DeclaredParam, "the parameter %s is set from the test's metrics: list; declare the metrics there", DeclaredParam))
	}
	for i, d := range t.Metrics {
		if d == nil {
			continue
		}
		errs = append(errs, d.validate()...)
		if slices.ContainsFunc(t.Metrics[:i], func(o *DeclaredMetric) bool { return o != nil && o.Name == d.Name }) {
			errs = append(errs, problemAt(d.FieldLine("name"), "metrics.name", "%s declared twice for %s", d.Name, t.Test))
		}
	}
	if slices.Contains(t.SiteParams, DeclaredParam) {
		errs = append(errs, problemAt(t.SiteParamsLine, "site_params", "%s cannot be a site parameter: the metrics a test reports are the SKU file's, beside the bands that judge them", DeclaredParam))
	}
	return errs
}

// EncodeDeclared is the value of DeclaredParam for ds: a JSON list of
// {"name","pattern","unit","better"} in the file's order.
func EncodeDeclared(ds []*DeclaredMetric) string {
	b, err := json.Marshal(ds)
	if err != nil {
		panic(err) // strings only: cannot fail
	}
	return string(b)
}

// DecodeDeclared reads a DeclaredParam value back (a plugin's Parse does),
// checking each metric as validate does; the error names the metric and
// the rule it breaks.
func DecodeDeclared(v string) ([]*DeclaredMetric, error) {
	var ds []*DeclaredMetric
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ds); err != nil {
		return nil, fmt.Errorf("not a JSON list of {name, pattern, unit, better}: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("text after the JSON list")
	}
	if len(ds) == 0 {
		return nil, fmt.Errorf("no metric declared")
	}
	for i, d := range ds {
		if d == nil {
			return nil, fmt.Errorf("metric %d is null", i+1)
		}
		if errs := d.validate(); len(errs) > 0 {
			var p Problem
			_ = asProblem(errs[0], &p)
			return nil, fmt.Errorf("metric %d (%s): %s: %s", i+1, d.Name, p.Field, p.Message)
		}
		for _, o := range ds[:i] {
			if o.Name == d.Name {
				return nil, fmt.Errorf("metric %s declared twice", d.Name)
			}
		}
	}
	return ds, nil
}

func asProblem(err error, p *Problem) bool {
	q, ok := err.(Problem)
	if ok {
		*p = q
	}
	return ok
}

// Declared returns the metrics the SKU's suites declare for test
// ("plugin.test"): those of the first suite test of that name that
// declares any (validate holds every suite to the same list); nil for
// none.
func (s *SKU) Declared(test string) []*DeclaredMetric {
	if s == nil {
		return nil
	}
	for _, name := range s.SuiteNames() {
		su := s.Suites[name]
		if su == nil {
			continue
		}
		for _, st := range su.Tests {
			if st != nil && st.Test == test && len(st.Metrics) > 0 {
				return st.Metrics
			}
		}
	}
	return nil
}

// Meaning is what d declares its metric means, as a run keeps it
// (result.Test.Meanings): drawn one bar per label set; recorded by default
// when better higher (baseline record derives floors).
func (d *DeclaredMetric) Meaning() result.Meaning {
	return result.Meaning{Name: d.Name, Unit: d.Unit, Better: d.Better, Plot: result.PlotLabels, Record: d.Better == result.BetterHigher}
}

// WithDeclared returns meanings (a plugin's declarations for test) followed
// by the meanings of the metrics the SKU declares for it (Declared) that
// the plugin does not declare itself (skucheck refuses such a clash).
func (s *SKU) WithDeclared(test string, meanings []result.Meaning) []result.Meaning {
	out := meanings
	for _, d := range s.Declared(test) {
		if slices.ContainsFunc(meanings, func(m result.Meaning) bool { return m.Name == d.Name }) {
			continue
		}
		if len(out) == len(meanings) {
			out = slices.Clone(meanings)
		}
		out = append(out, d.Meaning())
	}
	return out
}

// checkDeclaredAgree reports a test declared with metrics in two suites
// whose lists differ: the test's meanings (and baseline entries) are one
// per test name.
func (s *SKU) checkDeclaredAgree() []error {
	first := map[string]*SuiteTest{}
	var errs []error
	for _, name := range s.SuiteNames() {
		su := s.Suites[name]
		if su == nil {
			continue
		}
		for _, st := range su.Tests {
			if st == nil || len(st.Metrics) == 0 {
				continue
			}
			f, ok := first[st.Test]
			if !ok {
				first[st.Test] = st
				continue
			}
			if EncodeDeclared(f.Metrics) != EncodeDeclared(st.Metrics) {
				errs = append(errs, problemAt(st.Line, "metrics", "%s declares other metrics than at line %d: a test's metrics are one list in a SKU file", st.Test, f.Line))
			}
		}
	}
	return errs
}
