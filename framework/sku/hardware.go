package sku

import (
	"math"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"go.yaml.in/yaml/v3"
)

// The policies of GPUVariant.Other: what a GPU of the SKU's family that is
// not the SKU's own variant does to a test.
const (
	// VariantFail fails the test: the hardware is not the one signed off.
	VariantFail = "fail"
	// VariantWarn warns, naming both variants: the numbers are judged and
	// the report says the hardware differs.
	VariantWarn = "warn"
)

// GPUVariant names the exact GPU of a SKU whose family name (SKU.GPU) covers
// several models: "A100" is in both NVIDIA A100-SXM4-40GB and -80GB, "H200"
// in NVIDIA H200 NVL and GH200.
type GPUVariant struct {
	// Names are the device names the tools print for this SKU's GPU,
	// compared whole, ignoring case and runs of spaces ("NVIDIA
	// A100-SXM4-80GB"). A generic name the tools print for this GPU (HIP's
	// "AMD Radeon Graphics" for MI355X on ROCm 7.2) may be listed: such an
	// output then counts as this GPU.
	Names []string `yaml:"names"`
	// Other is VariantFail (the default when empty) or VariantWarn.
	Other string `yaml:"other"`
	// Line is where the gpu_variant key's value starts.
	Line       int `yaml:"-"`
	fieldLines map[string]int
}

// UnmarshalYAML reads a gpu_variant strictly, with its lines.
func (v *GPUVariant) UnmarshalYAML(n *yaml.Node) error {
	type raw GPUVariant
	v.Line = n.Line
	v.fieldLines = keyLines(n)
	return strictDecode(n, (*raw)(v))
}

// keyLines are the lines of a mapping's keys.
func keyLines(n *yaml.Node) map[string]int {
	m := map[string]int{}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = n.Content[i].Line
		}
	}
	return m
}

// Policy is Other, or VariantFail when Other is empty.
func (v *GPUVariant) Policy() string {
	if v.Other == "" {
		return VariantFail
	}
	return v.Other
}

// Is reports whether device, a name as a tool printed it, is one of Names.
func (v *GPUVariant) Is(device string) bool {
	d := normName(device)
	for _, n := range v.Names {
		if normName(n) == d {
			return true
		}
	}
	return false
}

func normName(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

// Ceiling is a physical limit of a SKU's hardware that holds at every
// scope: no measurement of Metric in Unit can be above Value, so a number
// above it is not a measurement of this hardware (a binary without MPI
// under mpirun, a clock or unit slip, another path than the one tested) and
// fails the test as impossible, with or without a baseline. A link ceiling
// is judged only where ranks share a link (a one-GPU run crosses none); a
// PerGPU one (compute, HBM, PCIe) at every scope. Every ceiling is also the
// datasheet figure each report measures efficiency against (Reference).
type Ceiling struct {
	// Metric is the metric limited ("busbw", "bw_avg").
	Metric string `yaml:"metric"`
	// Unit is the metric's unit: GB/s (bytes) or Gb/s (bits), MB/s.
	Unit string `yaml:"unit"`
	// Value is the limit in Unit; more than 0.
	Value float64 `yaml:"value"`
	// Link names what carries the traffic, for messages ("NVLink 4 and a
	// 400 Gb/s NIC per GPU").
	Link string `yaml:"link"`
	// Tests are the tests it limits: full names ("nccl.all_reduce") or
	// every test of a plugin ("nccl.*"); empty: every test of the SKU that
	// reports Metric in Unit.
	Tests []string `yaml:"tests"`
	// Source says where the number comes from (datasheet, page).
	Source string `yaml:"source"`
	// Labels limit the ceiling to the points carrying these label values
	// (dtype: bf16 for a matmul peak); empty: every point of Metric.
	Labels map[string]string `yaml:"labels"`
	// PerGPU says the limit is one GPU's own (its matmul peak, its HBM,
	// its PCIe link), so it holds for every point at every scope, one GPU
	// included; false: a link's, judged only where ranks share one.
	PerGPU bool `yaml:"per_gpu"`
	// Peak is the datasheet figure efficiency is measured against, in
	// Unit, where it is lower than the impossibility gate Value (busbw: a
	// GPU's NVLink one way, 450 GB/s on H200, where the gate 1000 GB/s
	// allows for the bus-bandwidth formula and the NIC); 0: Value.
	Peak float64 `yaml:"peak"`
	// PeakLink names what Peak is the figure of ("NVLink 4, one way");
	// required with Peak.
	PeakLink string `yaml:"peak_link"`
	// Line is the line of the ceiling's first key.
	Line       int `yaml:"-"`
	fieldLines map[string]int
}

// UnmarshalYAML reads a ceiling strictly, with the lines of its fields.
func (c *Ceiling) UnmarshalYAML(n *yaml.Node) error {
	type raw Ceiling
	c.Line = n.Line
	c.fieldLines = keyLines(n)
	return strictDecode(n, (*raw)(c))
}

func (c *Ceiling) fieldLine(f string) int {
	if l, ok := c.fieldLines[f]; ok {
		return l
	}
	return c.Line
}

// Applies reports whether the ceiling limits test (full name).
func (c *Ceiling) Applies(test string) bool {
	if len(c.Tests) == 0 {
		return true
	}
	plugin, _, _ := strings.Cut(test, ".")
	for _, t := range c.Tests {
		if t == test || t == plugin+".*" {
			return true
		}
	}
	return false
}

// Reference is the figure efficiency is measured against, in Unit, and
// what it is of: Peak and PeakLink, or Value and Link where no Peak is
// given.
func (c *Ceiling) Reference() (float64, string) {
	if c.Peak > 0 {
		return c.Peak, c.PeakLink
	}
	return c.Value, c.Link
}

// Limits reports whether the ceiling limits a point of metric name in
// unit with labels, measured by a run of ranks ranks: the metric and unit
// are the ceiling's, the labels carry the ceiling's Labels, and a link
// ceiling needs at least 2 ranks.
func (c *Ceiling) Limits(name, unit string, labels map[string]string, ranks int) bool {
	if name != c.Metric || unit != c.Unit || (!c.PerGPU && ranks < 2) {
		return false
	}
	for k, v := range c.Labels {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// LabelText is the ceiling's label filter as "k=v k=v" in key order
// (result.LabelText); "" for none.
func (c *Ceiling) LabelText() string { return result.LabelText(c.Labels, nil) }

// CeilingsFor returns the SKU's ceilings that limit test (full name).
func (s *SKU) CeilingsFor(test string) []*Ceiling {
	var out []*Ceiling
	for _, c := range s.Ceilings {
		if c != nil && c.Applies(test) {
			out = append(out, c)
		}
	}
	return out
}

// validateHardware checks gpu_variant and ceilings, and every baseline
// reference against the ceilings: a reference above what the hardware can
// carry could never be measured.
func (s *SKU) validateHardware() []error {
	var errs []error
	add := func(line int, field, format string, args ...any) {
		errs = append(errs, problemAt(line, field, format, args...))
	}
	if v := s.GPUVariant; v != nil {
		at := func(f string) int {
			if l, ok := v.fieldLines[f]; ok {
				return l
			}
			return s.lines["gpu_variant"]
		}
		if s.GPU == "" {
			add(s.lines["gpu_variant"], "gpu_variant", "needs gpu, the family the variant belongs to")
		}
		if len(v.Names) == 0 {
			add(at("names"), "gpu_variant.names", "missing (the device names the tools print for this SKU's GPU)")
		}
		for _, n := range v.Names {
			if strings.TrimSpace(n) == "" {
				add(at("names"), "gpu_variant.names", "an empty name")
			}
		}
		if v.Other != "" && v.Other != VariantFail && v.Other != VariantWarn {
			add(at("other"), "gpu_variant.other", "%q is not %s or %s", v.Other, VariantFail, VariantWarn)
		}
	}
	type key struct{ metric, unit, tests, labels string }
	seen := map[key]int{}
	for i, c := range s.Ceilings {
		if c == nil {
			add(s.lines["ceilings"], "ceilings", "ceiling %d is empty", i+1)
			continue
		}
		if c.Metric == "" {
			add(c.Line, "ceilings.metric", "missing")
		}
		if !higherIsBetter(c.Unit) {
			add(c.fieldLine("unit"), "ceilings.unit", "%q is not a rate (GB/s, Gb/s, MB/s, TFLOPS): a physical ceiling limits how much a link carries or a GPU computes", c.Unit)
		}
		if math.IsNaN(c.Peak) || c.Peak < 0 || math.IsInf(c.Peak, 0) || c.Peak > c.Value {
			add(c.fieldLine("peak"), "ceilings.peak", "%g: want the datasheet figure, more than 0 and at most value (%g %s), or leave it out", c.Peak, c.Value, c.Unit)
		}
		if c.Peak > 0 && strings.TrimSpace(c.PeakLink) == "" {
			add(c.fieldLine("peak"), "ceilings.peak_link", "missing (what the peak is the figure of, for reports: \"NVLink 4, one way\")")
		}
		for k, v := range c.Labels {
			if k == "" || v == "" {
				add(c.fieldLine("labels"), "ceilings.labels", "%q: %q: a label filter needs a name and a value", k, v)
			}
		}
		if math.IsNaN(c.Value) || c.Value <= 0 || math.IsInf(c.Value, 0) {
			add(c.fieldLine("value"), "ceilings.value", "%g: want the limit, more than 0, in %s", c.Value, c.Unit)
		}
		if strings.TrimSpace(c.Link) == "" {
			add(c.Line, "ceilings.link", "missing (what carries the traffic, for messages: \"NVLink 4\")")
		}
		if strings.TrimSpace(c.Source) == "" {
			add(c.Line, "ceilings.source", "missing (the datasheet or page the number comes from)")
		}
		for _, t := range c.Tests {
			p, name, ok := strings.Cut(t, ".")
			if !ok || p == "" || name == "" || strings.Contains(name, "*") && name != "*" {
				add(c.fieldLine("tests"), "ceilings.tests", "%q is neither plugin.test nor plugin.*", t)
			}
		}
		tests := append([]string(nil), c.Tests...)
		sort.Strings(tests)
		k := key{c.Metric, c.Unit, strings.Join(tests, ","), c.LabelText()}
		if prev, dup := seen[k]; dup {
			add(c.Line, "ceilings", "%s in %s for the same tests and labels is also limited at line %d: give one number", c.Metric, c.Unit, prev)
		}
		seen[k] = c.Line
	}
	for _, e := range s.Baselines {
		if e == nil {
			continue
		}
		for _, c := range s.Ceilings {
			// One GPU crosses no link: a link ceiling does not limit its
			// numbers (Limits).
			if c == nil || c.Value <= 0 || !c.Applies(e.Test) || !c.Limits(e.Metric, e.Unit, e.Labels, e.Scope.Nodes*e.Scope.GPUsPerNode) {
				continue
			}
			check := func(v float64, line int, what string) {
				if v > c.Value*1.0001 {
					add(line, what, "%.4g %s is above the SKU's ceiling for %s (%.4g %s, %s, line %d): no healthy system measures it%s", v, e.Unit, e.Metric, c.Value, c.Unit, c.Link, c.Line, unitHint(v, c.Value))
				}
			}
			if e.Value != nil {
				check(*e.Value, e.FieldLine("value"), "value")
			}
			for _, p := range e.Points {
				check(p.Value, p.Line, "value")
			}
			check(e.Ceiling, e.FieldLine("ceiling"), "ceiling")
		}
	}
	return errs
}
