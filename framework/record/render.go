package record

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

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

// NoteLead begins the comment Merge writes under "baselines:"; Merge finds
// the previous recording's note by it and replaces it.
const NoteLead = "The last recording (each entry's source names its own runs), "

// Note is the comment a recording leaves under "baselines:": the day
// (UTC date) and the command that recorded. Merge replaces it at the next
// recording.
func Note(day time.Time, command string) string {
	return NoteLead + day.UTC().Format("2006-01-02") + ":\n" + command
}

// Merge writes entries into a SKU file's text. Per-size entries of the same
// test, scope and metric as a new entry are replaced (the new ones take the
// place of the first old one); summary entries and everything else stay.
// A replaced entry's ceiling carries over to the new entry with the same
// labels, and so does its dip check. Text before the baselines list,
// comments included, is kept, and so is every kept entry's text with the
// comments above it: an author's citation must survive a re-recording. The
// comments above replaced entries go above the entries that replace them.
// New entries are written in the shipped layout (Render). The result is
// parsed again, so what Merge returns is a valid SKU file. name is the file
// name for messages.
//
// note, when not empty, is written as a comment under "baselines:" (Note:
// the record command and date), replacing the previous recording's note.
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
	head, tail, spans, err := splitBaselines(data)
	if err != nil {
		return nil, fmt.Errorf("merge into %s: %w", name, err)
	}
	if spans != nil && len(spans) != len(old.Baselines) {
		spans = nil // not one block per entry: rewrite the list in the shipped layout
	}
	ceil := map[string]float64{}
	dip := map[string]*sku.Dip{}
	var parts []string       // the list's text, entry by entry
	groupAt := map[key]int{} // the part each replaced key's new entries take
	groupNote := map[key]string{}
	var order []key
	for i, e := range old.Baselines {
		k := key{e.Test, e.Scope, e.Metric}
		var comment, text string
		if spans != nil {
			comment, text = spans[i].comment, spans[i].text
		} else {
			text = Render([]*sku.Entry{e})
		}
		if !replaced[k] || e.Summary != "" {
			parts = append(parts, comment+text)
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
		if _, ok := groupAt[k]; !ok {
			groupAt[k] = len(parts)
			order = append(order, k)
			parts = append(parts, "")
		}
		groupNote[k] += comment
	}
	groups := map[key][]*sku.Entry{}
	var appended []*sku.Entry
	for _, n := range entries {
		k := key{n.Test, n.Scope, n.Metric}
		if _, ok := groupAt[k]; ok {
			groups[k] = append(groups[k], n)
		} else {
			appended = append(appended, n)
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
	for _, k := range order {
		parts[groupAt[k]] = groupNote[k] + Render(groups[k])
	}
	list := strings.Join(parts, "") + Render(appended)
	var comment string
	// A carriage return is a line break to YAML too (a run folder's name
	// in the command): each line of the note is a comment line.
	note = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(note)
	for _, l := range strings.Split(strings.TrimSpace(note), "\n") {
		if l != "" {
			comment += "  # " + l + "\n"
		}
	}
	out := append([]byte(head), "baselines:\n"+comment+list+tail...)
	if _, err := sku.Parse(out, name); err != nil {
		return nil, fmt.Errorf("merged file does not validate (a bug, or runs too far apart to band): %w", err)
	}
	return out, nil
}

// span is one baselines entry's text in a SKU file: the comment lines
// above it (at the list's indentation) and the entry itself.
type span struct{ comment, text string }

// splitBaselines cuts a SKU file's text around its top-level baselines
// list: what comes before the key, what follows the list (other top-level
// keys), and each entry's span. spans is nil where the list is not one
// block entry per line range (flow style, or entries sharing a line). The
// previous recording's note (NoteLead, and the command line under it) is
// left out of the first entry's comment.
func splitBaselines(data []byte) (head, tail string, spans []span, err error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return "", "", nil, fmt.Errorf("not a SKU file mapping")
	}
	m := root.Content[0]
	lines := strings.SplitAfter(string(data), "\n")
	start, end := -1, len(lines)
	var list *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "baselines" {
			start = m.Content[i].Line - 1
			list = m.Content[i+1]
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
		return s, "", nil, nil
	}
	if list != nil && list.Kind == yaml.SequenceNode && list.Style&yaml.FlowStyle == 0 && len(list.Content) > 0 {
		spans = entrySpans(lines, start+1, end, list.Content)
	}
	return strings.Join(lines[:start], ""), strings.Join(lines[end:], ""), spans, nil
}

// entrySpans cuts lines[from:to] into one span per item. An item's comment
// is the run of blank and comment lines right above it that sit left of its
// keys (deeper ones are inside the entry before). It returns nil when two
// items start on one line or an item lies outside the range.
func entrySpans(lines []string, from, to int, items []*yaml.Node) []span {
	starts := make([]int, len(items)) // first comment line of each item
	first := make([]int, len(items))  // the item's own first line
	lower := from
	for i, it := range items {
		l := it.Line - 1
		if l < lower || l >= to || it.Column < 3 {
			return nil
		}
		s := l
		for s > lower {
			t := strings.TrimLeft(lines[s-1], " ")
			indent := len(lines[s-1]) - len(t)
			if strings.TrimSpace(t) != "" && (!strings.HasPrefix(t, "#") || indent >= it.Column-1) {
				break
			}
			s--
		}
		starts[i], first[i], lower = s, l, l+1
	}
	spans := make([]span, len(items))
	for i := range items {
		end := to
		if i+1 < len(items) {
			end = starts[i+1]
		}
		c := starts[i]
		if i == 0 {
			c = dropNote(lines, c, first[0])
		}
		spans[i] = span{comment: strings.Join(lines[c:first[i]], ""), text: strings.Join(lines[first[i]:end], "")}
	}
	return spans
}

// dropNote skips the previous recording's note (a NoteLead line and the
// command line under it) at the top of lines[from:to].
func dropNote(lines []string, from, to int) int {
	for i := from; i < to; i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" {
			continue
		}
		if !strings.HasPrefix(t, "# "+NoteLead) {
			return from
		}
		if i+1 < to && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "#") {
			return i + 2
		}
		return i + 1
	}
	return from
}
