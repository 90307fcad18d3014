package record

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Change is one difference between two baselines: a value that moved, a
// band that changed, a point or entry added or removed.
type Change struct {
	// Entry names the curve: "nccl.all_reduce 1x2 busbw placement=in-place".
	Entry string
	// Size is the message size in bytes; 0 for a single value or a whole
	// entry.
	Size int64
	// Old and New are the reference values, nil where there is none.
	Old, New *float64
	// Unit is the entry's unit.
	Unit string
	// What says what changed besides the value: "added", "removed",
	// "band min -10% -> -12%", "unit GB/s -> Gb/s", ...
	What string
}

// Pct is the relative move of the value in percent, NaN when either side is
// missing or the old value is 0.
func (c Change) Pct() float64 {
	if c.Old == nil || c.New == nil || *c.Old == 0 {
		return math.NaN()
	}
	return 100 * (*c.New / *c.Old - 1)
}

type point struct {
	value float64
	band  sku.Band
}

type flat struct {
	e      *sku.Entry
	points map[int64]point
}

func entryName(e *sku.Entry) string {
	s := fmt.Sprintf("%s %s %s", e.Test, e.Scope, e.Metric)
	if l := sku.LabelText(e.Labels); l != "" {
		s += " " + l
	}
	if e.Summary != "" {
		s += " summary=" + e.Summary
	}
	return s
}

func flatten(s *sku.SKU) (map[string]flat, []string) {
	m := map[string]flat{}
	var order []string
	for _, e := range s.Baselines {
		k := entryName(e)
		f := flat{e: e, points: map[int64]point{}}
		if e.Value != nil {
			f.points[int64(e.Size)] = point{*e.Value, e.Band}
		}
		for _, p := range e.Points {
			f.points[int64(p.Size)] = point{p.Value, e.Band.Merge(p.Band)}
		}
		if _, dup := m[k]; !dup {
			order = append(order, k)
		}
		m[k] = f
	}
	return m, order
}

// Diff lists what changed from old to new: first the suites (suites and
// tests added or removed, parameters, min_gpus, site_params, skip,
// timeout and nodes changed: suiteChanges), then per baseline entry (test, scope, metric,
// labels, summary) and per size, values, bands and units; entries and
// points present on one side only. Unchanged points are left out of the
// list and counted: unchanged is how many values (points and single
// values) are on both sides with the same value and band.
func Diff(old, new *sku.SKU) (changes []Change, unchanged int) {
	suites := append(suiteChanges(old, new), hardwareChanges(old, new)...)
	changes, unchanged = baselineChanges(old, new)
	return append(suites, changes...), unchanged
}

// hardwareChanges lists what changed in what judges a run besides the
// entries: the GPU model and variant gates, and per ceiling (by metric,
// unit, labels and tests) its gate, datasheet figure, NIC figure, peak
// domain, per_gpu and datasheet floor; ceilings added or removed. Each can
// change a verdict (a floor raised fails a healthy GPU).
func hardwareChanges(old, new *sku.SKU) []Change {
	var out []Change
	if old.GPU != new.GPU {
		out = append(out, Change{Entry: "gpu", What: fmt.Sprintf("gpu %s -> %s", orNone(old.GPU), orNone(new.GPU))})
	}
	if va, vb := variantText(old.GPUVariant), variantText(new.GPUVariant); va != vb {
		out = append(out, Change{Entry: "gpu_variant", What: fmt.Sprintf("gpu_variant %s -> %s", va, vb)})
	}
	key := func(c *sku.Ceiling) string {
		k := "ceiling " + c.Metric + " " + c.Unit
		if l := c.LabelText(); l != "" {
			k += " " + l
		}
		if len(c.Tests) > 0 {
			k += " (" + strings.Join(c.Tests, ",") + ")"
		}
		return k
	}
	text := func(c *sku.Ceiling) string {
		return fmt.Sprintf("value %g, peak %g, nic_gbps %g, peak_domain %d, per_gpu %t, floor %g", c.Value, c.Peak, c.NICGbps, c.PeakDomain, c.PerGPU, c.Floor)
	}
	a := map[string]*sku.Ceiling{}
	for _, c := range old.Ceilings {
		if c != nil {
			a[key(c)] = c
		}
	}
	seen := map[string]bool{}
	for _, c := range new.Ceilings {
		if c == nil {
			continue
		}
		k := key(c)
		seen[k] = true
		switch o, ok := a[k]; {
		case !ok:
			out = append(out, Change{Entry: k, Unit: c.Unit, What: "ceiling added (" + text(c) + ")"})
		case text(o) != text(c):
			out = append(out, Change{Entry: k, Unit: c.Unit, What: fieldsDiff(text(o), text(c))})
		}
	}
	for _, c := range old.Ceilings {
		if c != nil && !seen[key(c)] {
			out = append(out, Change{Entry: key(c), Unit: c.Unit, What: "ceiling removed (" + text(c) + ")"})
		}
	}
	return out
}

// variantText is a gpu_variant for a diff: its names and policy.
func variantText(v *sku.GPUVariant) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprintf("[%s] other %s", strings.Join(v.Names, "; "), v.Policy())
}

// fieldsDiff says which of the comma-separated "name value" fields of a
// and b differ: "floor 0.6 -> 0.95".
func fieldsDiff(a, b string) string {
	fa, fb := strings.Split(a, ", "), strings.Split(b, ", ")
	var parts []string
	for i := range fa {
		if i < len(fb) && fa[i] != fb[i] {
			name, va, _ := strings.Cut(fa[i], " ")
			_, vb, _ := strings.Cut(fb[i], " ")
			parts = append(parts, fmt.Sprintf("%s %s -> %s", name, va, vb))
		}
	}
	return strings.Join(parts, ", ")
}

// suiteChanges lists what changed in the suites, what a run runs: suites
// added or removed; per suite, its nodes and params, tests added or
// removed, and per test its params, min_gpus, site_params and skip. A test a suite
// lists twice is matched by its place among those of its name.
func suiteChanges(old, new *sku.SKU) []Change {
	var out []Change
	names := old.SuiteNames()
	for _, n := range new.SuiteNames() {
		if old.Suites[n] == nil {
			names = append(names, n)
		}
	}
	for _, n := range names {
		sa, sb := old.Suites[n], new.Suites[n]
		entry := "suite " + n
		switch {
		case sb == nil:
			out = append(out, Change{Entry: entry, What: fmt.Sprintf("suite removed (%s: %s)", result.Count(len(sa.Tests), "test"), testNames(sa))})
			continue
		case sa == nil:
			out = append(out, Change{Entry: entry, What: fmt.Sprintf("suite added (%s: %s)", result.Count(len(sb.Tests), "test"), testNames(sb))})
			continue
		}
		if sa.Nodes != sb.Nodes {
			out = append(out, Change{Entry: entry, What: fmt.Sprintf("nodes %d -> %d", sa.Nodes, sb.Nodes)})
		}
		if d := paramsDiff(sa.Params, sb.Params); d != "" {
			out = append(out, Change{Entry: entry, What: "params " + d})
		}
		ta, orderA := suiteTests(sa)
		tb, orderB := suiteTests(sb)
		order := orderA
		for _, k := range orderB {
			if ta[k] == nil {
				order = append(order, k)
			}
		}
		for _, k := range order {
			a, b := ta[k], tb[k]
			e := entry + " " + k
			switch {
			case b == nil:
				out = append(out, Change{Entry: e, What: "test removed"})
				continue
			case a == nil:
				out = append(out, Change{Entry: e, What: "test added"})
				continue
			}
			var parts []string
			if d := paramsDiff(a.Params, b.Params); d != "" {
				parts = append(parts, "params "+d)
			}
			if a.MinGPUs != b.MinGPUs {
				parts = append(parts, fmt.Sprintf("min_gpus %d -> %d", a.MinGPUs, b.MinGPUs))
			}
			// Which parameters a site may set is what verify holds a
			// run to (sku.SuiteTest.SiteParams).
			if sa, sb := slices.Sorted(slices.Values(a.SiteParams)), slices.Sorted(slices.Values(b.SiteParams)); !slices.Equal(sa, sb) {
				parts = append(parts, fmt.Sprintf("site_params %s -> %s", listOrNone(sa), listOrNone(sb)))
			}
			if a.Skip != b.Skip {
				parts = append(parts, fmt.Sprintf("skip %q -> %q", a.Skip, b.Skip))
			}
			if a.Timeout != b.Timeout {
				parts = append(parts, fmt.Sprintf("timeout %s -> %s", a.Timeout, b.Timeout))
			}
			if len(parts) > 0 {
				out = append(out, Change{Entry: e, What: strings.Join(parts, "; ")})
			}
		}
	}
	return out
}

// listOrNone is names as a YAML flow list, "none" for none.
func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// testNames are a suite's tests, space-separated, in order.
func testNames(su *sku.Suite) string {
	names := make([]string, len(su.Tests))
	for i, t := range su.Tests {
		names[i] = t.Test
	}
	return strings.Join(names, " ")
}

// suiteTests keys a suite's tests by name, the second of a name as
// "NAME#2", and gives the keys in the suite's order.
func suiteTests(su *sku.Suite) (map[string]*sku.SuiteTest, []string) {
	m := map[string]*sku.SuiteTest{}
	var order []string
	seen := map[string]int{}
	for _, t := range su.Tests {
		seen[t.Test]++
		k := t.Test
		if n := seen[t.Test]; n > 1 {
			k = fmt.Sprintf("%s#%d", t.Test, n)
		}
		m[k] = t
		order = append(order, k)
	}
	return m, order
}

// paramsDiff renders what changed between two parameter maps, by key in
// order: "pairs ionic_7:ionic_1 -> ionic_0,ionic_1, qps none -> 4"; ""
// when nothing did.
func paramsDiff(a, b map[string]string) string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	ks := make([]string, 0, len(keys))
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var parts []string
	for _, k := range ks {
		va, inA := a[k]
		vb, inB := b[k]
		if inA == inB && va == vb {
			continue
		}
		if !inA {
			va = "none"
		}
		if !inB {
			vb = "none"
		}
		parts = append(parts, fmt.Sprintf("%s %s -> %s", k, va, vb))
	}
	return strings.Join(parts, ", ")
}

// baselineChanges is Diff's part of the baseline entries.
func baselineChanges(old, new *sku.SKU) (changes []Change, unchanged int) {
	a, order := flatten(old)
	b, orderB := flatten(new)
	for _, k := range orderB {
		if _, ok := a[k]; !ok {
			order = append(order, k)
		}
	}
	var out []Change
	for _, k := range order {
		fa, inA := a[k]
		fb, inB := b[k]
		switch {
		case !inB:
			out = append(out, Change{Entry: k, Unit: fa.e.Unit, What: fmt.Sprintf("entry removed (%s)", result.Count(len(fa.points), "value"))})
			continue
		case !inA:
			out = append(out, Change{Entry: k, Unit: fb.e.Unit, What: fmt.Sprintf("entry added (%s)", result.Count(len(fb.points), "value"))})
			continue
		}
		if fa.e.Unit != fb.e.Unit {
			out = append(out, Change{Entry: k, Unit: fb.e.Unit, What: fmt.Sprintf("unit %s -> %s", fa.e.Unit, fb.e.Unit)})
		}
		if fa.e.Kind() != fb.e.Kind() {
			out = append(out, Change{Entry: k, Unit: fb.e.Unit, What: fmt.Sprintf("basis %s -> %s", fa.e.Kind(), fb.e.Kind())})
		}
		if fa.e.Ceiling != fb.e.Ceiling {
			out = append(out, Change{Entry: k, Unit: fb.e.Unit, What: fmt.Sprintf("ceiling %g -> %g", fa.e.Ceiling, fb.e.Ceiling)})
		}
		if da, db := dipText(fa.e.Dip), dipText(fb.e.Dip); da != db {
			out = append(out, Change{Entry: k, Unit: fb.e.Unit, What: fmt.Sprintf("dip %s -> %s", da, db)})
		}
		sizes := map[int64]bool{}
		for s := range fa.points {
			sizes[s] = true
		}
		for s := range fb.points {
			sizes[s] = true
		}
		ss := make([]int64, 0, len(sizes))
		for s := range sizes {
			ss = append(ss, s)
		}
		sort.Slice(ss, func(i, j int) bool { return ss[i] < ss[j] })
		for _, s := range ss {
			pa, okA := fa.points[s]
			pb, okB := fb.points[s]
			c := Change{Entry: k, Size: s, Unit: fb.e.Unit}
			switch {
			case !okB:
				v := pa.value
				c.Old, c.What = &v, "removed"
			case !okA:
				v := pb.value
				c.New, c.What = &v, "added"
			default:
				va, vb := pa.value, pb.value
				bt := bandDiff(pa.band, pb.band)
				if va == vb && bt == "" {
					unchanged++
					continue
				}
				c.Old, c.New, c.What = &va, &vb, bt
			}
			out = append(out, c)
		}
	}
	return out, unchanged
}

func dipText(d *sku.Dip) string {
	if d == nil {
		return "none"
	}
	return fmt.Sprintf("warn %g%% fail %g%%", d.Warn, d.Fail)
}

func bandDiff(a, b sku.Band) string {
	var parts []string
	for _, e := range []struct {
		name string
		a, b sku.Bound
	}{{"min", a.Min, b.Min}, {"warn_min", a.WarnMin, b.WarnMin}, {"max", a.Max, b.Max}, {"warn_max", a.WarnMax, b.WarnMax}} {
		if e.a.Text != e.b.Text {
			parts = append(parts, fmt.Sprintf("%s %s -> %s", e.name, orNone(e.a.Text), orNone(e.b.Text)))
		}
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// WriteDiff prints changes as a table, one line per change, and a summary
// line: how many values moved, by how much at most, and how many were left
// out of the table because nothing about them changed.
func WriteDiff(w io.Writer, changes []Change, unchanged int) error {
	if len(changes) == 0 {
		_, err := fmt.Fprintf(w, "no differences; %s unchanged\n", result.Count(unchanged, "value"))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTRY\tSIZE\tOLD\tNEW\tMOVE\tALSO")
	moved, worst := 0, 0.0
	for _, c := range changes {
		size := "-"
		if c.Size > 0 {
			size = result.FormatBytes(c.Size)
		}
		move := ""
		if p := c.Pct(); !math.IsNaN(p) {
			if p != 0 {
				moved++
				if math.Abs(p) > math.Abs(worst) {
					worst = p
				}
			}
			move = fmt.Sprintf("%+.1f%%", p)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Entry, size, val(c.Old, c.Unit), val(c.New, c.Unit), move, c.What)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s; %s moved, the most by %+.1f%%; %s unchanged (not listed)\n", result.Count(len(changes), "change"), result.Count(moved, "value"), worst, result.Count(unchanged, "value"))
	return err
}

func val(v *float64, unit string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f %s", *v, unit)
}

// CopiedReferences are the entries of new that old has as reference
// entries (basis reference) and new marks golden with nothing else
// changed (Diff lists no other change of them): a cited measurement of
// other hardware passed off as the site's own recording.
func CopiedReferences(old, new *sku.SKU) []*sku.Entry {
	changes, _ := Diff(old, new)
	relabelled := fmt.Sprintf("basis %s -> %s", result.BasisReference, result.BasisGolden)
	basisOnly := map[string]bool{}
	other := map[string]bool{}
	for _, c := range changes {
		if c.What == relabelled {
			basisOnly[c.Entry] = true
		} else {
			other[c.Entry] = true
		}
	}
	var out []*sku.Entry
	for _, e := range new.Baselines {
		if k := entryName(e); basisOnly[k] && !other[k] {
			out = append(out, e)
		}
	}
	return out
}
