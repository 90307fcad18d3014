package runner

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Describer is what validation needs of the plugin host.
type Describer interface {
	Describe(ctx context.Context, plugin string) (pluginapi.Description, error)
}

// ValidateSKU checks a SKU file against the plugins that will judge it:
// every suite test and baseline test exists, every baseline metric is one
// the test reports, in its unit, and every label key and value is one the
// metric carries. A typo there ("bus_bw", "placment") would otherwise match
// no measurement and hide a broken node. Errors give file, line and field.
func ValidateSKU(ctx context.Context, d Describer, s *sku.SKU) error {
	descs := map[string]*pluginapi.Description{}
	test := func(name string) (*pluginapi.TestInfo, error) {
		p, t, err := SplitName(name)
		if err != nil {
			return nil, err
		}
		desc, ok := descs[p]
		if !ok {
			dd, err := d.Describe(ctx, p)
			if err != nil {
				return nil, err
			}
			desc = &dd
			descs[p] = desc
		}
		var names []string
		for i := range desc.Tests {
			if desc.Tests[i].Name == t {
				return &desc.Tests[i], nil
			}
			names = append(names, p+"."+desc.Tests[i].Name)
		}
		return nil, fmt.Errorf("plugin %s has no test %q (known: %s)", p, t, strings.Join(names, ", "))
	}
	for _, name := range s.SuiteNames() {
		for _, st := range s.Suites[name].Tests {
			if st.Skip != "" {
				continue // listed for the report; may have no plugin yet
			}
			if _, err := test(st.Test); err != nil {
				return fmt.Errorf("%s: line %d: field test: %w", s.File, st.Line, err)
			}
		}
	}
	inSuite := map[string]bool{}
	for _, su := range s.Suites {
		for _, st := range su.Tests {
			inSuite[st.Test] = true
		}
	}
	for _, e := range s.Baselines {
		if !inSuite[e.Test] {
			// Most often a typo naming another real test: the suite's test
			// would then run without its baseline.
			return fmt.Errorf("%s: line %d: field test: %s is in no suite of SKU %s (suites list: %s)", s.File, e.Line, e.Test, s.Name, strings.Join(sortedKeys(inSuite), ", "))
		}
		ti, err := test(e.Test)
		if err != nil {
			return fmt.Errorf("%s: line %d: field test: %w", s.File, e.Line, err)
		}
		if err := checkMetric(ti, e); err != nil {
			return fmt.Errorf("%s: line %d: %w", s.File, e.Line, err)
		}
	}
	return nil
}

func checkMetric(ti *pluginapi.TestInfo, e *sku.Entry) error {
	var mi *pluginapi.MetricInfo
	var names []string
	for i := range ti.Metrics {
		if ti.Metrics[i].Name == e.Metric {
			mi = &ti.Metrics[i]
		}
		names = append(names, ti.Metrics[i].Name)
	}
	if mi == nil {
		return fmt.Errorf("field metric: %s reports no metric %q (it reports: %s)", e.Test, e.Metric, strings.Join(names, ", "))
	}
	if mi.Unit != e.Unit {
		return fmt.Errorf("field unit: %s %s is in %s, not %s", e.Test, e.Metric, mi.Unit, e.Unit)
	}
	allowed := map[string][]string{}
	for _, l := range mi.Labels {
		k, vs, _ := strings.Cut(l, "=")
		allowed[k] = nil
		if vs != "" {
			allowed[k] = strings.Split(vs, "|")
		}
	}
	keys := make([]string, 0, len(e.Labels))
	for k := range e.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vals, ok := allowed[k]
		if !ok {
			known := make([]string, 0, len(allowed))
			for a := range allowed {
				known = append(known, a)
			}
			sort.Strings(known)
			return fmt.Errorf("field labels: %s %s has no label %q (its labels: %s)", e.Test, e.Metric, k, strings.Join(known, ", "))
		}
		if vals != nil && !contains(vals, e.Labels[k]) {
			return fmt.Errorf("field labels: label %s=%q is not one of %s", k, e.Labels[k], strings.Join(vals, ", "))
		}
	}
	return nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Unbaselined lists the suite tests of s that have no baseline at any scope
// and are not marked skip: they run, but nothing judges their numbers.
func Unbaselined(s *sku.SKU) []string {
	has := map[string]bool{}
	for _, e := range s.Baselines {
		has[e.Test] = true
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range s.SuiteNames() {
		for _, st := range s.Suites[n].Tests {
			if st.Skip == "" && !has[st.Test] && !seen[st.Test] {
				seen[st.Test] = true
				out = append(out, fmt.Sprintf("suite %s: %s has no baseline at any scope", n, st.Test))
			}
		}
	}
	return out
}
