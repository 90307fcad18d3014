package judge

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// SKUTest judges the parsed output of test (full name, "nccl.all_reduce")
// run at scope against SKU s: the framework's gates (Gates) and the
// plugin's checks first, whatever the baseline holds, then the baseline
// entries of that scope, the SKU's datasheet floors (sku.SKU.Floors) on
// the points no entry judged, or skip naming the scopes the SKU has. defaults
// are the plugin's label defaults per metric name (Options.Defaults; nil:
// none), meanings what it declares its metrics mean (Options.Meanings; nil:
// none). Metrics come back sorted (SortMetrics), with the efficiency
// against the SKU's datasheet figures (Efficiencies).
func SKUTest(s *sku.SKU, test string, scope plan.Scope, p result.Parsed, defaults map[string]map[string]string, meanings []result.Meaning) result.Test {
	t := Judge(p, Options{
		Entries:    s.Entries(test, scope),
		Floors:     s.Floors(test, scope),
		NoBaseline: NoBaseline(s, test, scope),
		Gates:      Gates(s, test, scope, p),
		Defaults:   defaults,
		Meanings:   meanings,
	})
	SortMetrics(t.Metrics)
	t.Efficiency = Efficiencies(s, test, scope, p.Metrics)
	return t
}

// NoBaseline says why SKU s judges nothing of test at scope: the SKU has no
// entry for the test, or none at that scope (naming the scopes it has).
func NoBaseline(s *sku.SKU, test string, scope plan.Scope) string {
	scopes := s.Scopes(test)
	if len(scopes) == 0 {
		return fmt.Sprintf("no baseline for %s in SKU %s", test, s.Name)
	}
	names := make([]string, len(scopes))
	for i, sc := range scopes {
		names[i] = sc.String()
	}
	return fmt.Sprintf("no baseline for %s at scope %s (nodes x GPUs per node) in SKU %s; it has %s",
		test, scope, s.Name, strings.Join(names, ", "))
}

// Gates are the correctness gates the framework makes on a parsed output of
// test at scope, before and whatever the baseline lookup: the GPU model
// (GPUChecks) and the SKU's physical ceilings (CeilingChecks).
func Gates(s *sku.SKU, test string, scope plan.Scope, p result.Parsed) []result.Check {
	return append(GPUChecks(s, p.Info), CeilingChecks(s, test, scope.Nodes*scope.GPUsPerNode, p.Metrics)...)
}

// GPUChecks compare the GPU an output names (Info "gpu": a model; Info
// "device": a device name that names no model, such as HIP's "AMD Radeon
// Graphics") with SKU s's gpu and gpu_variant. None when the SKU names no
// GPU or the output names no device and lists no ranks. Otherwise:
//   - "GPU model" fails for a device without the SKU's gpu in its name: a
//     log of other hardware signs nothing off;
//   - "GPU variant" fails, or warns as the SKU's gpu_variant.other says, for
//     another model of the family (A100-SXM4-40GB under an 80 GB SKU),
//     naming both;
//   - "GPU model" warns "not verifiable" when the output lists its ranks
//     (Info "hosts") but names no model (a generic or empty device name, as
//     rccl-tests prints for GPUs its HIP has no name for), unless the SKU's
//     gpu_variant lists that name as its own.
func GPUChecks(s *sku.SKU, info map[string]string) []result.Check {
	if s.GPU == "" {
		return nil
	}
	v := s.GPUVariant
	name, generic := info["gpu"], false
	if name == "" && info["device"] != "" {
		name, generic = info["device"], true
	}
	if genericNames[strings.ToLower(strings.TrimSpace(name))] {
		generic = true
	}
	want := fmt.Sprintf("%q", s.GPU)
	if v != nil {
		want = quoteAll(v.Names)
	}
	model := result.Check{Name: "GPU model", OK: true}
	switch {
	case name == "" && info["hosts"] == "":
		return nil // nothing in the output names a device: no check to make
	case name == "":
		model.OK, model.Warn = false, true
		model.Message = fmt.Sprintf("not verifiable: the output lists its ranks but names no device; SKU %s is %s", s.Name, want)
	case v != nil && v.Is(name):
	case generic:
		model.OK, model.Warn = false, true
		model.Message = fmt.Sprintf("not verifiable: the output names the device %q, which names no model; SKU %s is %s", name, s.Name, want)
	case !strings.Contains(strings.ToLower(name), strings.ToLower(s.GPU)):
		// A log from other hardware must not sign this SKU off.
		model.OK = false
		model.Message = fmt.Sprintf("the output shows %q, SKU %s is %q", name, s.Name, s.GPU)
	case v != nil:
		variant := result.Check{Name: "GPU variant", Warn: v.Policy() == sku.VariantWarn,
			Message: fmt.Sprintf("the output shows %q, SKU %s is %s: another %s", name, s.Name, want, s.GPU)}
		return []result.Check{model, variant}
	}
	return []result.Check{model}
}

// genericNames are device names drivers print for a GPU missing from their
// name tables, whatever the plugin reported them as: HIP's "AMD Radeon
// Graphics" (MI355X on ROCm 7.2, seed 004) and the CUDA driver's "NVIDIA
// Graphics Device" (GB200 on early drivers, coreweave/nccl-tests pull
// request #43). They name no model.
var genericNames = map[string]bool{"amd radeon graphics": true, "nvidia graphics device": true}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, " or ")
}

// CeilingChecks judge the metrics of test against SKU s's physical
// ceilings: one check per ceiling that limits a metric the output has,
// "physical ceiling busbw", failing when a value is above it ("busbw
// out-of-place 1234.0 GB/s at 1 GiB is above the 1000 GB/s ceiling of SKU
// h200 (NVLink 4 ...): not physically possible"). ranks is the scope's
// rank count: with fewer than 2 nothing crosses a link (a one-GPU
// broadcast "moves" 1e6 GB/s in place) and only per-GPU ceilings
// (compute, HBM, PCIe) are checked (sku.Ceiling.Limits).
func CeilingChecks(s *sku.SKU, test string, ranks int, ms []result.Metric) []result.Check {
	var out []result.Check
	for _, c := range s.CeilingsFor(test) {
		n, over := 0, 0
		var worst result.Metric
		var limited []result.Metric
		for _, m := range ms {
			if !c.Limits(m.Name, m.Unit, m.Labels, ranks) {
				continue
			}
			n++
			limited = append(limited, m)
			if m.Value > c.Value || math.IsInf(m.Value, 1) {
				if over == 0 || m.Value > worst.Value {
					worst = m
				}
				over++
			}
		}
		if n == 0 {
			continue
		}
		name := "physical ceiling " + c.Metric
		if l := c.LabelText(); l != "" {
			name += " " + l
		}
		ch := result.Check{Name: name, OK: over == 0}
		if over > 0 {
			ch.Message = fmt.Sprintf("%s is above the %g %s ceiling of SKU %s (%s): not physically possible", pointText(worst, c.Unit, limited), c.Value, c.Unit, s.Name, c.Link)
			if over > 1 {
				ch.Message += fmt.Sprintf(" (%d points above it)", over)
			}
		}
		out = append(out, ch)
	}
	return out
}

// pointText names a point of among for a message: valueText, and the
// labels that tell it from the others (gpu=3 mode=alone:
// result.VaryingLabels).
func pointText(m result.Metric, unit string, among []result.Metric) string {
	if l := result.VaryingLabels(m, among); l != "" {
		return valueText(m, unit) + " (" + l + ")"
	}
	return valueText(m, unit)
}

// Efficiencies measure the metrics of test run at scope against SKU s's
// datasheet figures: one result.Efficiency per ceiling that limits points
// of the output (the same points CeilingChecks judges), with the highest
// and the lowest of them, against the link the test crosses at that
// scope (sku.Ceiling.Reference: the GPU's link one way inside a node, the
// NICs across nodes), not the gate. None without ceilings, nor for a
// ceiling with no figure at that scope. Non-finite values are left out
// (the judge makes them an error).
func Efficiencies(s *sku.SKU, test string, scope plan.Scope, ms []result.Metric) []result.Efficiency {
	var out []result.Efficiency
	ranks := scope.Nodes * scope.GPUsPerNode
	for _, c := range s.CeilingsFor(test) {
		peak, link, ok := c.Reference(test, scope)
		if !ok {
			continue
		}
		e := result.Efficiency{Metric: c.Metric, Unit: c.Unit, Labels: c.Labels, Peak: peak, Link: link, Source: c.Source}
		sizes := map[int64]bool{}
		var limited []result.Metric
		for _, m := range ms {
			if !c.Limits(m.Name, m.Unit, m.Labels, ranks) || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
				continue
			}
			limited = append(limited, m)
			if e.Points == 0 || m.Value > e.Best.Value {
				e.Best = m
			}
			if e.Points == 0 || m.Value < e.Worst.Value {
				e.Worst = m
			}
			e.Points++
			sizes[m.Size] = true
		}
		if e.Points == 0 {
			continue
		}
		e.Curve = len(sizes) > 1
		e.Lowest = result.VaryingLabels(e.Worst, limited)
		e.Over = c.Over(test, scope, e.Ratio(e.Best.Value))
		out = append(out, e)
	}
	return out
}
