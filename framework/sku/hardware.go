package sku

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"

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
	// NICGbps is the line rate, in Gb/s (1e9 bits/s), of the NIC each GPU
	// reaches other nodes through (400 for one ConnectX-7 per GPU): what a
	// run across nodes is measured against (Reference), where Peak, the
	// GPU's own link, is not what its traffic crosses. 0: no figure, and
	// Peak (or Value) holds at every scope (a NIC's own ceiling, ib_write_bw).
	NICGbps float64 `yaml:"nic_gbps"`
	// NICLink names that NIC for reports ("ConnectX-7 400 Gb/s per GPU");
	// required with NICGbps.
	NICLink string `yaml:"nic_link"`
	// PeakDomain is how many GPUs Peak's link joins across nodes (72 on a
	// GB200 NVL72 rack, whose NVLink spans its trays); 0: one node's. A
	// run of at most that many ranks is measured against Peak at any node
	// count.
	PeakDomain int `yaml:"peak_domain"`
	// Floor, on a PerGPU ceiling, is the least fraction of Value (or Peak)
	// a healthy GPU of the SKU reaches, 0 < Floor < 1: where no baseline
	// entry judges a point the ceiling limits, the datasheet floor does
	// (Floors, result.BasisFloor), so a first run on new hardware judges
	// something. Each SKU's fractions and the runs they rest on (healthy
	// versus busy or degraded GPUs) are in baselines/README.md, "Datasheet
	// floors". 0: no floor.
	Floor float64 `yaml:"floor"`
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

// Reference is the figure efficiency is measured against for test (full
// name, "nccl.alltoall") at scope, in Unit, and what it is of: the link
// the test's traffic crosses there. ok is false where there is none to
// give (a collective across nodes that Reference has no formula for).
//
// Inside a node (or a Peak domain, PeakDomain), and for a PerGPU ceiling
// or one without NICGbps, it is Peak and PeakLink (Value and Link where
// no Peak is given): the GPU's link, one way. nccl-tests normalises busbw
// so that it compares with the bandwidth of one link direction whatever
// the rank count (nccl-tests doc/PERFORMANCE.md, "Bus bandwidth").
//
// Across nodes it is the bottleneck, the NICs, with B = NICGbps per GPU
// in Unit, g GPUs a node, N nodes, n = N x g ranks, and no more than the
// GPU's link (Peak) in any case:
//   - all_reduce, all_gather, reduce_scatter, broadcast, reduce: g x B.
//     Each of NCCL's rings leaves a node once, so the node's traffic,
//     busbw x S / algbw in all (PERFORMANCE.md: an all_reduce moves
//     2(n-1)/n x S per rank, all_gather and reduce_scatter (n-1)/n x S,
//     the busbw factor each), is shared by its g NICs: busbw <= g x B.
//   - alltoall: B x N/(N-1) x (n-1)/n. A rank sends S/n to every rank,
//     (N-1)/N of S to other nodes through its NIC, so algbw <= B x
//     N/(N-1), and busbw = algbw x (n-1)/n (nccl-tests src/alltoall.cu,
//     AlltoAllGetBw).
//   - sendrecv: B. One rank per node sends to the next node, and busbw =
//     algbw (src/sendrecv.cu).
func (c *Ceiling) Reference(test string, sc plan.Scope) (float64, string, bool) {
	peak, link := c.Figure()
	ranks := sc.Nodes * sc.GPUsPerNode
	if c.PerGPU || c.NICGbps <= 0 || sc.Nodes <= 1 || c.PeakDomain > 0 && ranks <= c.PeakDomain {
		return peak, link, true
	}
	b, ok := gbpsIn(c.NICGbps, c.Unit)
	if !ok || sc.GPUsPerNode < 1 {
		return 0, "", false
	}
	_, coll, _ := strings.Cut(test, ".")
	n, g, nodes := float64(ranks), float64(sc.GPUsPerNode), float64(sc.Nodes)
	var ref float64
	var how string
	switch coll {
	case "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce":
		ref = g * b
		how = fmt.Sprintf("%s, the %d of a node: %s across %d nodes", c.NICLink, sc.GPUsPerNode, coll, sc.Nodes)
	case "alltoall":
		ref = b * nodes / (nodes - 1) * (n - 1) / n
		how = fmt.Sprintf("%s: alltoall across %d nodes, %d/%d of the data crosses it, busbw x %d/%d", c.NICLink, sc.Nodes, sc.Nodes-1, sc.Nodes, ranks-1, ranks)
	case "sendrecv":
		ref = b
		how = c.NICLink + ": sendrecv across nodes"
	default:
		return 0, "", false
	}
	if ref > peak {
		return peak, link, true
	}
	return ref, how, true
}

// MinFloor is the least datasheet floor a SKU file may give: under 5% of
// the datasheet figure a floor passes a GPU that does almost nothing (the
// busy H100 of baselines/README.md, "Datasheet floors", reached 30%), so
// such a floor would read as judged while judging nothing.
const MinFloor = 0.05

// Figure is the datasheet figure of the GPU's own link or unit, in Unit,
// and what it is of: Peak and PeakLink, or Value and Link where no Peak is
// given. A PerGPU ceiling's floor (Floor) is a fraction of it.
func (c *Ceiling) Figure() (float64, string) {
	if c.Peak > 0 {
		return c.Peak, c.PeakLink
	}
	return c.Value, c.Link
}

// Over says why an efficiency of ratio (value / Reference, over 1) can be
// above 100% of the Reference figure for test at scope, or that it cannot:
// "" for a ratio of 1 or less. baselines/README.md, "Collectives" and
// "Physical ceilings":
//   - all_reduce across nodes against the NICs: the rings cross them with
//     2(n-1)/n x S per node, the busbw factor, but NCCL's tree algorithms
//     with about S, so busbw can read up to 2(n-1)/n of g x B (187.5% on
//     2 x 8 GPUs: Google A4's B200 2 x 8 reads 683.5 GB/s, 170.9% of 400);
//     above that no algorithm explains it;
//   - all_reduce inside a node (or against the GPU's link): in-switch
//     reduction (NVLink SHARP) lifts busbw above the one-way link rate,
//     up to twice it (the physical ceiling);
//   - any other: no algorithm passes the link it crosses.
func (c *Ceiling) Over(test string, sc plan.Scope, ratio float64) string {
	if ratio <= 1 {
		return ""
	}
	_, coll, _ := strings.Cut(test, ".")
	ranks := sc.Nodes * sc.GPUsPerNode
	pct := func(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }
	_, how, _ := c.Reference(test, sc)
	acrossNICs := how != "" && how != c.Link && how != c.PeakLink
	switch {
	case coll == "all_reduce" && acrossNICs && ranks > 1:
		tree := 2 * float64(ranks-1) / float64(ranks)
		if ratio <= tree {
			return fmt.Sprintf("over 100%%: NCCL's tree algorithms send a node's data across the NICs about once, not 2(n-1)/n times as its rings do, so busbw can read up to %s of the NICs' figure at %d ranks", pct(tree), ranks)
		}
		return fmt.Sprintf("over the %s a tree algorithm can reach at %d ranks: the NIC figure (nic_gbps) is too low for these nodes, or the output is not of this scope", pct(tree), ranks)
	case coll == "all_reduce" && ratio <= 2:
		return "over 100%: in-switch reduction (NVLink SHARP, NVLS) lifts all_reduce busbw above the one-way link rate, up to twice it"
	}
	return "over 100%: no algorithm moves more than the link it crosses: the figure is too low for this hardware, or the output is not of this scope"
}

// gbpsIn converts a rate in Gb/s to unit (GB/s, Gb/s, MB/s); false for
// another unit.
func gbpsIn(gbps float64, unit string) (float64, bool) {
	switch unit {
	case "GB/s":
		return gbps / 8, true
	case "Gb/s":
		return gbps, true
	case "MB/s":
		return gbps * 125, true
	}
	return 0, false
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

// Floors are the datasheet floors of test (full name) at scope: one entry
// per PerGPU ceiling of the SKU that limits test and has a Floor, judging
// Metric in Unit with the ceiling's Labels against the datasheet figure
// (Peak, else Value) with the band min -(1-Floor) (a floor of 0.5 is
// "-50%"), Basis result.BasisFloor, and the ceiling's source. The judge
// applies them to the points no baseline entry judged (judge.Options).
func (s *SKU) Floors(test string, scope plan.Scope) []*Entry {
	var out []*Entry
	for _, c := range s.CeilingsFor(test) {
		if !c.PerGPU || c.Floor <= 0 || c.Floor >= 1 {
			continue
		}
		ref, link := c.Figure()
		// Rounded to a thousandth of a percent: 1 - 0.95 is not 0.05 in
		// binary, and the band's text is read by people.
		pct := math.Round(-100*(1-c.Floor)*1000) / 1000
		text := strconv.FormatFloat(pct, 'f', -1, 64) + "%"
		v := ref
		out = append(out, &Entry{
			Test: test, Scope: scope, Metric: c.Metric, Unit: c.Unit, Labels: c.Labels,
			Band:   Band{Min: Bound{Relative: true, Percent: pct, Text: text, set: true}},
			Value:  &v,
			Basis:  result.BasisFloor,
			Source: fmt.Sprintf("datasheet floor: %s of %s (%s, %s); baselines/README.md, Datasheet floors", strconv.FormatFloat(100*c.Floor, 'f', -1, 64)+"%", link, strconv.FormatFloat(ref, 'f', -1, 64)+" "+c.Unit, c.Source),
			Line:   c.fieldLine("floor"),
		})
	}
	return out
}

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
		if p := unitProblem(c.Unit); p != "" {
			// Whether it is a rate is the plugin's to say (skucheck).
			add(c.fieldLine("unit"), "ceilings.unit", "%s", p)
		}
		if math.IsNaN(c.Peak) || c.Peak < 0 || math.IsInf(c.Peak, 0) || c.Peak > c.Value {
			add(c.fieldLine("peak"), "ceilings.peak", "%g: want the datasheet figure, more than 0 and at most value (%g %s), or leave it out", c.Peak, c.Value, c.Unit)
		}
		if math.IsNaN(c.NICGbps) || c.NICGbps < 0 || math.IsInf(c.NICGbps, 0) {
			add(c.fieldLine("nic_gbps"), "ceilings.nic_gbps", "%g: want the line rate of a GPU's NIC in Gb/s, more than 0, or leave it out", c.NICGbps)
		}
		if c.NICGbps > 0 && strings.TrimSpace(c.NICLink) == "" {
			add(c.fieldLine("nic_gbps"), "ceilings.nic_link", "missing (what the NIC figure is of, for reports: \"ConnectX-7 400 Gb/s per GPU\")")
		}
		if c.NICGbps > 0 && c.PerGPU {
			add(c.fieldLine("nic_gbps"), "ceilings.nic_gbps", "a per_gpu ceiling crosses no NIC")
		}
		if c.PeakDomain < 0 {
			add(c.fieldLine("peak_domain"), "ceilings.peak_domain", "%d: want the GPUs the peak's link joins, or leave it out", c.PeakDomain)
		}
		_, floorGiven := c.fieldLines["floor"]
		if math.IsNaN(c.Floor) || c.Floor >= 1 || floorGiven && c.Floor < MinFloor {
			add(c.fieldLine("floor"), "ceilings.floor", "%g: want the least fraction of the datasheet figure a healthy GPU reaches, from %g to less than 1 (0.5), or leave it out", c.Floor, MinFloor)
		}
		if c.Floor > 0 && !c.PerGPU {
			add(c.fieldLine("floor"), "ceilings.floor", "a floor needs per_gpu: true (a link's figure depends on the scope and the collective; its baselines judge it)")
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
