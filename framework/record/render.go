package record

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Render writes entries as the baselines list of a SKU file, in the layout
// of the shipped files: one flow-style line per point.
func Render(entries []*sku.Entry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "  - test: %s\n", e.Test)
		fmt.Fprintf(&b, "    scope: {nodes: %d, gpus_per_node: %d}\n", e.Scope.Nodes, e.Scope.GPUsPerNode)
		fmt.Fprintf(&b, "    metric: %s\n", e.Metric)
		fmt.Fprintf(&b, "    unit: %s\n", quote(e.Unit))
		if len(e.Labels) > 0 {
			fmt.Fprintf(&b, "    labels: {%s}\n", flowMap(e.Labels))
		}
		if e.Summary != "" {
			fmt.Fprintf(&b, "    summary: %s\n", e.Summary)
		}
		if r := e.Range; r != nil {
			if r.To != 0 {
				fmt.Fprintf(&b, "    range: {from: %s, to: %s}\n", sizeText(int64(r.From)), sizeText(int64(r.To)))
			} else {
				fmt.Fprintf(&b, "    range: {from: %s}\n", sizeText(int64(r.From)))
			}
		}
		if !e.Band.IsZero() {
			fmt.Fprintf(&b, "    band: {%s}\n", bandText(e.Band))
		}
		if d := e.Dip; d != nil {
			var parts []string
			if d.Warn > 0 {
				parts = append(parts, fmt.Sprintf("warn: \"%g%%\"", d.Warn))
			}
			if d.Fail > 0 {
				parts = append(parts, fmt.Sprintf("fail: \"%g%%\"", d.Fail))
			}
			fmt.Fprintf(&b, "    dip: {%s}\n", strings.Join(parts, ", "))
		}
		if e.Ceiling > 0 {
			fmt.Fprintf(&b, "    ceiling: %s\n", num(e.Ceiling))
		}
		fmt.Fprintf(&b, "    source: %s\n", quote(e.Source))
		if e.Basis != "" {
			fmt.Fprintf(&b, "    basis: %s\n", e.Basis)
		}
		if e.Value != nil {
			if e.Size != 0 {
				fmt.Fprintf(&b, "    size: %s\n", sizeText(int64(e.Size)))
			}
			fmt.Fprintf(&b, "    value: %s\n", num(*e.Value))
			continue
		}
		b.WriteString("    points:\n")
		for _, p := range e.Points {
			if p.Band.IsZero() {
				fmt.Fprintf(&b, "      - {size: %s, value: %s}\n", sizeText(int64(p.Size)), num(p.Value))
			} else {
				fmt.Fprintf(&b, "      - {size: %s, value: %s, band: {%s}}\n", sizeText(int64(p.Size)), num(p.Value), bandText(p.Band))
			}
		}
	}
	return b.String()
}

// bandText renders a band's edges as YAML flow fields, as written:
// `min: "-10%", warn_min: "-5%"`.
func bandText(b sku.Band) string {
	var parts []string
	for _, e := range []struct {
		name string
		b    sku.Bound
	}{{"min", b.Min}, {"warn_min", b.WarnMin}, {"max", b.Max}, {"warn_max", b.WarnMax}} {
		if e.b.IsSet() {
			parts = append(parts, e.name+": "+quote(e.b.Text))
		}
	}
	return strings.Join(parts, ", ")
}

// sizeText writes a size as SKU files do: "64M", "4G", or plain bytes.
func sizeText(n int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

func num(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

func flowMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + quote(m[k])
	}
	return strings.Join(parts, ", ")
}

// quote writes s as a YAML scalar: plain when YAML reads it back as the same
// string, double-quoted otherwise.
func quote(s string) string {
	if s != "" && !strings.ContainsAny(s, ":{}[],#&*!|>'\"%@`\n") && strings.TrimSpace(s) == s {
		var back string
		if yaml.Unmarshal([]byte(s), &back) == nil && back == s {
			return s
		}
	}
	var buf bytes.Buffer
	buf.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			buf.WriteByte('\\')
			buf.WriteRune(r)
		case r == '\n':
			buf.WriteString(`\n`)
		case r == '\t':
			buf.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&buf, `\x%02x`, r)
		default:
			buf.WriteRune(r)
		}
	}
	buf.WriteByte('"')
	return buf.String()
}

// Merge writes entries into a SKU file's text. Per-size entries of the same
// test, scope and metric as a new entry are replaced (the new ones take the
// place of the first old one); summary entries and everything else stay.
// A replaced entry's ceiling carries over to the new entry with the same
// labels, and so does its dip check. Text before the baselines list, comments included, is kept; the
// list itself is rewritten in the shipped layout. The result is parsed
// again, so what Merge returns is a valid SKU file. name is the file name
// for messages.
//
// note, when not empty, is written as a comment under "baselines:" (the
// record command and date).
func Merge(data []byte, name string, entries []*sku.Entry, note string) ([]byte, error) {
	old, err := sku.Parse(data, name)
	if err != nil {
		return nil, fmt.Errorf("merge into %w", err)
	}
	type key struct {
		test   string
		scope  plan.Scope
		metric string
	}
	replaced := map[key]bool{}
	for _, e := range entries {
		replaced[key{e.Test, e.Scope, e.Metric}] = true
	}
	ceil := map[string]float64{}
	dip := map[string]*sku.Dip{}
	var list []*sku.Entry
	placed := map[key]bool{}
	for _, e := range old.Baselines {
		k := key{e.Test, e.Scope, e.Metric}
		if !replaced[k] || e.Summary != "" {
			list = append(list, e)
			continue
		}
		if e.Ceiling > 0 {
			ceil[fmt.Sprint(k, sku.LabelText(e.Labels))] = e.Ceiling
			ceil[fmt.Sprint(k)] = e.Ceiling
		}
		if e.Dip != nil {
			dip[fmt.Sprint(k, sku.LabelText(e.Labels))] = e.Dip
			dip[fmt.Sprint(k)] = e.Dip
		}
		if !placed[k] {
			placed[k] = true
			for _, n := range entries {
				if (key{n.Test, n.Scope, n.Metric}) == k {
					list = append(list, n)
				}
			}
		}
	}
	for _, n := range entries {
		k := key{n.Test, n.Scope, n.Metric}
		if !placed[k] {
			list = append(list, n)
		}
		if n.Dip == nil {
			if d, ok := dip[fmt.Sprint(k, sku.LabelText(n.Labels))]; ok {
				n.Dip = d
			} else {
				n.Dip = dip[fmt.Sprint(k)]
			}
		}
		if n.Ceiling == 0 {
			if c, ok := ceil[fmt.Sprint(k, sku.LabelText(n.Labels))]; ok {
				n.Ceiling = c
			} else {
				n.Ceiling = ceil[fmt.Sprint(k)]
			}
		}
	}
	head, tail, err := splitBaselines(data)
	if err != nil {
		return nil, fmt.Errorf("merge into %s: %w", name, err)
	}
	var comment string
	for _, l := range strings.Split(strings.TrimSpace(note), "\n") {
		if l != "" {
			comment += "  # " + l + "\n"
		}
	}
	out := append([]byte(head), "baselines:\n"+comment+Render(list)+tail...)
	if _, err := sku.Parse(out, name); err != nil {
		return nil, fmt.Errorf("merged file does not validate (a bug, or runs too far apart to band): %w", err)
	}
	return out, nil
}

// splitBaselines cuts a SKU file's text around its top-level baselines
// list: what comes before the key, and what follows the list (other
// top-level keys).
func splitBaselines(data []byte) (head, tail string, err error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return "", "", fmt.Errorf("not a SKU file mapping")
	}
	m := root.Content[0]
	lines := strings.SplitAfter(string(data), "\n")
	start, end := -1, len(lines)
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "baselines" {
			start = m.Content[i].Line - 1
			if i+2 < len(m.Content) {
				end = m.Content[i+2].Line - 1
				// comments above the next key belong to it
				if hc := m.Content[i+2].HeadComment; hc != "" {
					end -= strings.Count(hc, "\n") + 1
				}
			}
		}
	}
	if start < 0 {
		s := string(data)
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		return s, "", nil
	}
	return strings.Join(lines[:start], ""), strings.Join(lines[end:], ""), nil
}
