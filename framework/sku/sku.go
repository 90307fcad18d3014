// Package sku reads SKU files: one YAML file per SKU holding its suites (which
// tests to run, with which parameters) and its golden baseline (expected
// values with tolerance bands and their sources). Malformed files are
// rejected with file, line and field.
package sku

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// SKU is one SKU file.
type SKU struct {
	// Name is the SKU's name as given to --sku ("h200").
	Name string `yaml:"sku"`
	// Description says what hardware this is.
	Description string `yaml:"description"`
	// GPUsPerNode is the node's GPU count, the default --gpus-per-node.
	GPUsPerNode int `yaml:"gpus_per_node"`
	// GPU is the GPU's model as the tools print it, matched as a
	// case-insensitive substring ("H200" matches "NVIDIA H200"); a log from
	// another model fails. Empty: not checked.
	GPU string `yaml:"gpu"`
	// GPUVariant, when set, names the exact model of a family with several
	// (A100-SXM4-80GB, not -40GB); nil: any model of the family passes.
	GPUVariant *GPUVariant `yaml:"gpu_variant"`
	// Ceilings are the hardware's physical limits at every scope
	// (hardware.go): a measured number above one is impossible and fails.
	Ceilings []*Ceiling `yaml:"ceilings"`
	// Suites by name ("singlenode", "multinode").
	Suites map[string]*Suite `yaml:"suites"`
	// Baselines are the expected values.
	Baselines []*Entry `yaml:"baselines"`
	// Kubernetes is what the k8s launcher puts on pods (kubernetes.go); nil
	// when the file has no such section.
	Kubernetes *Kubernetes `yaml:"kubernetes"`
	// File is where the SKU was read from (for messages).
	File string `yaml:"-"`
	// lines are the lines of the file's top-level keys ("suites"), of each
	// suite's key ("suite NAME") and of each baselines item ("entry N",
	// from 1), for problems of things that decoded to nothing.
	lines map[string]int
	// nameUnreadable: the sku key is there but its value is no string, or
	// the file did not decode; that error already says why Name is empty.
	nameUnreadable bool
}

// Suite is a named list of tests with their parameters.
type Suite struct {
	Description string `yaml:"description"`
	// Nodes is the suite's default node count (--nodes overrides).
	Nodes int `yaml:"nodes"`
	// Params apply to every test of the suite; a test's own params win.
	Params map[string]string `yaml:"params"`
	Tests  []*SuiteTest      `yaml:"tests"`
	Line   int               `yaml:"-"`
}

// SuiteTest is one entry of a suite.
type SuiteTest struct {
	// Test is "plugin.test", e.g. "nccl.all_reduce".
	Test string `yaml:"test"`
	// Params are the plugin's parameters for this test (strings; the plugin
	// parses them and documents their units in Describe).
	Params map[string]string `yaml:"params"`
	// Skip, when set, lists the test without running it, with this reason.
	Skip string `yaml:"skip"`
	// Timeout bounds the test; zero means the run's --timeout.
	Timeout time.Duration `yaml:"timeout"`
	Line    int           `yaml:"-"`
}

// LabelText renders labels (an entry's, or a measured metric's) as sorted
// "key=value" pairs joined by commas: "placement=in-place,type=float";
// "" for none. Sorted, so that it also serves as a map key for a curve.
func LabelText(labels map[string]string) string {
	kv := make([]string, 0, len(labels))
	for k, v := range labels {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// Entry is one baseline entry: the expected values of one metric of one test
// at one scope, either a single value or a curve of per-size points.
type Entry struct {
	Test string `yaml:"test"`
	// Scope is the shape the values were measured at, written
	// {nodes: N, gpus_per_node: G} (decoded by decodeScope).
	Scope  plan.Scope        `yaml:"-"`
	Metric string            `yaml:"metric"`
	Unit   string            `yaml:"unit"`
	Labels map[string]string `yaml:"labels"`
	// Band applies to every point unless the point gives its own edges.
	Band Band `yaml:"-"`
	// Value and Size give a single expected value (Size 0: not per size).
	Value *float64 `yaml:"value"`
	Size  Size     `yaml:"size"`
	// Points give a curve: one expected value per message size.
	Points []Point `yaml:"points"`
	// Summary, when set (peak, largest, mean), judges Value against one
	// number computed from the measured curve instead of a single point.
	Summary string `yaml:"summary"`
	// Range bounds the sizes a summary or the dip check looks at.
	Range *SizeRange `yaml:"range"`
	// Dip, when set, checks that the curve does not fall as size grows.
	Dip *Dip `yaml:"dip"`
	// Ceiling is the physical limit (NVLink, NIC line rate) in Unit, for
	// efficiency figures; 0 when unknown.
	Ceiling float64 `yaml:"ceiling"`
	// Source says where the numbers came from (seed file and line, measured
	// run with date, machine and versions).
	Source string `yaml:"source"`
	Line   int    `yaml:"-"`
	// fieldLines are the lines of the entry's keys, so that an error about
	// a field names the field's own line.
	fieldLines map[string]int
	// unknown are the entry's unknown keys, reported by validate: the rest
	// of the entry decoded, and its own problems are worth reporting too.
	unknown []error
}

// FieldLine is the line of the entry's key field ("unit", "labels",
// "value"), or the entry's own line when the field is not written (a
// missing field has no line of its own) or the entry was built in code.
func (e *Entry) FieldLine(field string) int {
	if l, ok := e.fieldLines[field]; ok {
		return l
	}
	return e.Line
}

// Point is one expected value of a curve.
type Point struct {
	Size  Size    `yaml:"size"`
	Value float64 `yaml:"value"`
	// Band, when set, overrides edges of the entry's band for this size.
	Band Band `yaml:"-"`
	Line int  `yaml:"-"`
}

// Size is a message size in bytes. In YAML it is an integer or a string with
// a binary suffix: "4G", "4 GiB", "512K", "8M".
type Size int64

// ParseSize parses a size as result.ParseBytes does ("4G", "4 GiB", ...).
func ParseSize(s string) (Size, error) {
	v, err := result.ParseBytes(s)
	return Size(v), err
}

// UnmarshalYAML reads an integer or a suffixed string.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseSize(n.Value)
	if err != nil {
		return asTypeError(fmt.Errorf("line %d: %w", n.Line, err))
	}
	*s = v
	return nil
}

// UnmarshalYAML reads a suite with its line.
func (s *Suite) UnmarshalYAML(n *yaml.Node) error {
	type raw Suite
	if err := strictDecode(n, (*raw)(s)); err != nil {
		return err
	}
	s.Line = n.Line
	return nil
}

// UnmarshalYAML reads a suite test with its line.
func (t *SuiteTest) UnmarshalYAML(n *yaml.Node) error {
	type raw SuiteTest
	if err := strictDecode(n, (*raw)(t)); err != nil {
		return err
	}
	t.Line = n.Line
	return nil
}

// UnmarshalYAML reads an entry with its band and line.
func (e *Entry) UnmarshalYAML(n *yaml.Node) error {
	// entryFields has Entry's fields but not its methods, so decoding it
	// does not recurse into this UnmarshalYAML.
	type entryFields Entry
	type raw struct {
		entryFields `yaml:",inline"`
		Scope       yaml.Node `yaml:"scope"`
		Band        yaml.Node `yaml:"band"`
	}
	var r raw
	if n.Kind != yaml.MappingNode {
		return strictDecode(n, &r)
	}
	unknown := unknownKeys(n, &r)
	decodeErr := asTypeError(n.Decode(&r))
	*e = Entry(r.entryFields)
	e.Line = n.Line
	e.fieldLines = map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		e.fieldLines[n.Content[i].Value] = n.Content[i].Line
	}
	var scopeErr, bandErr error
	if r.Scope.Kind != 0 {
		e.Scope, scopeErr = decodeScope(&r.Scope)
	}
	if r.Band.Kind != 0 {
		e.Band, bandErr = decodeBand(&r.Band)
	}
	if decodeErr != nil || scopeErr != nil || bandErr != nil {
		return asTypeError(append(unknown, decodeErr, scopeErr, bandErr)...)
	}
	e.unknown = unknown
	return nil
}

// UnmarshalYAML reads a point with its optional band.
func (p *Point) UnmarshalYAML(n *yaml.Node) error {
	type raw struct {
		Size  Size      `yaml:"size"`
		Value *float64  `yaml:"value"`
		Band  yaml.Node `yaml:"band"`
	}
	var r raw
	errs := []error{strictDecode(n, &r)}
	if r.Value == nil && errs[0] == nil {
		errs = append(errs, fmt.Errorf("line %d: field value: missing", n.Line))
	}
	*p = Point{Size: r.Size, Line: n.Line}
	if r.Value != nil {
		p.Value = *r.Value
	}
	if r.Band.Kind != 0 {
		b, err := decodeBand(&r.Band)
		errs = append(errs, err)
		p.Band = b
	}
	return asTypeError(errs...)
}

// decodeScope reads a scope mapping, {nodes: N, gpus_per_node: G}.
// plan.Scope is text elsewhere (MarshalText: "1x2"), and yaml.v3 hands a
// scalar to a TextUnmarshaler and stops the whole decode when it fails, so
// the mapping is decoded here into a type of the same shape. It is named
// Scope so that yaml.v3's messages read as they always have
// ("cannot unmarshal !!str `1x2` into sku.Scope").
func decodeScope(n *yaml.Node) (plan.Scope, error) {
	type Scope struct {
		Nodes       int `yaml:"nodes"`
		GPUsPerNode int `yaml:"gpus_per_node"`
	}
	var s Scope
	err := n.Decode(&s)
	return plan.Scope(s), err
}

func decodeBand(n *yaml.Node) (Band, error) {
	var r rawBand
	if err := strictDecode(n, &r); err != nil {
		return Band{}, err
	}
	var b Band
	var errs []error
	for _, f := range []struct {
		name  string
		text  string
		lower bool
		dst   *Bound
	}{{"min", r.Min, true, &b.Min}, {"warn_min", r.WarnMin, true, &b.WarnMin}, {"max", r.Max, false, &b.Max}, {"warn_max", r.WarnMax, false, &b.WarnMax}} {
		if f.text == "" {
			continue
		}
		v, err := ParseBound(f.text, f.lower)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: field band.%s: %w", lineOf(n, f.name), f.name, err))
			continue
		}
		v.line = lineOf(n, f.name)
		*f.dst = v
	}
	return b, asTypeError(errs...)
}

// strictDecode decodes a mapping node into out after checking that every
// key names a field of out, so a typo ("tolerence:") is an error with its
// line instead of a silently ignored setting. It reports every unknown key
// and every value that does not decode, as a *yaml.TypeError: yaml.v3 goes
// on past that error type, so one call reports all the problems of a file.
func strictDecode(n *yaml.Node, out any) error {
	if n.Kind != yaml.MappingNode {
		return asTypeError(fmt.Errorf("line %d: want a mapping, got %s", n.Line, kindName(n)))
	}
	errs := unknownKeys(n, out)
	errs = append(errs, n.Decode(out))
	return asTypeError(errs...)
}

// unknownKeys reports each key of mapping n that names no field of out.
func unknownKeys(n *yaml.Node, out any) []error {
	known := yamlFields(reflect.TypeOf(out).Elem())
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !known[k.Value] {
			names := make([]string, 0, len(known))
			for f := range known {
				names = append(names, f)
			}
			sort.Strings(names)
			errs = append(errs, fmt.Errorf("line %d: field %q is not known here (known: %s)", k.Line, k.Value, strings.Join(names, ", ")))
		}
	}
	return errs
}

// asTypeError gathers the problems found while decoding one node into the
// error type that yaml.v3 collects and goes on after (any other error from
// an UnmarshalYAML stops the whole decode), so that a file's problems are
// all reported at once. nil when errs holds no error.
func asTypeError(errs ...error) error {
	var msgs []string
	for _, err := range errs {
		if err == nil {
			continue
		}
		var te *yaml.TypeError
		if errors.As(err, &te) {
			msgs = append(msgs, te.Errors...)
			continue
		}
		msgs = append(msgs, err.Error())
	}
	if len(msgs) == 0 {
		return nil
	}
	return &yaml.TypeError{Errors: msgs}
}

// yamlFields are the keys a struct accepts: its exported fields' YAML
// names. Unexported fields are bookkeeping (the lines of keys) that yaml.v3
// never fills, so a key naming one must be refused, not silently ignored.
func yamlFields(t reflect.Type) map[string]bool {
	m := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k := range yamlFields(f.Type) {
				m[k] = true
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = true
	}
	return m
}

func lineOf(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i].Line
		}
	}
	return n.Line
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	case yaml.SequenceNode:
		return "a list"
	}
	return "something else"
}

// MaxProblems bounds how many problems of one file a Problems error lists.
const MaxProblems = 20

// Problems is every problem found in one SKU file, sorted by line, each
// naming its line and field ("line 148: field unit: ..."). Its Error lists
// the first MaxProblems, one a line, each prefixed with the file, as
// compilers do.
type Problems struct {
	// File is the SKU file's name as given to Parse.
	File string
	// List holds the problems, "line N: field F: ...", sorted by line.
	List []string
}

// Error renders the problems, one a line.
func (p *Problems) Error() string {
	var b strings.Builder
	for i, m := range p.List {
		if i == MaxProblems {
			fmt.Fprintf(&b, "\n%s: and %d more problems", p.File, len(p.List)-MaxProblems)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.File + ": " + m)
	}
	return b.String()
}

var lineRE = regexp.MustCompile(`^line (\d+):`)

// NewProblems sorts errs by the line they name ("line N: ..."; those naming
// none first), drops repeats (an entry's band inherited by each of its
// points) and returns them as a *Problems of file; nil when errs holds no
// error. A *yaml.TypeError or a *Problems counts as one error per message.
func NewProblems(file string, errs []error) error {
	var msgs []string
	seen := map[string]bool{}
	for _, err := range errs {
		if err == nil {
			continue
		}
		var te *yaml.TypeError
		var pe *Problems
		ms := []string{err.Error()}
		switch {
		case errors.As(err, &pe):
			ms = pe.List
		case errors.As(err, &te):
			ms = te.Errors
		}
		for _, m := range ms {
			if !seen[m] {
				seen[m] = true
				msgs = append(msgs, m)
			}
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	line := func(m string) int {
		if sm := lineRE.FindStringSubmatch(m); sm != nil {
			n, _ := strconv.Atoi(sm[1])
			return n
		}
		return 0
	}
	sort.SliceStable(msgs, func(i, j int) bool { return line(msgs[i]) < line(msgs[j]) })
	return &Problems{File: file, List: msgs}
}

// Parse reads a SKU file's content; name is the file name for messages.
// A malformed file gives a *Problems error listing every problem found,
// each with its line and field, and with it what could be read (entries
// that did not decode left out), so that further checks (skucheck) can
// report their problems too; such a SKU must not be used otherwise. A file
// that is not YAML, or empty, gives a nil SKU.
func Parse(data []byte, name string) (*SKU, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: empty file", name)
	}
	type raw SKU
	var s SKU
	top := root.Content[0]
	errs := []error{strictDecode(top, (*raw)(&s))}
	s.File = name
	if top.Kind == yaml.MappingNode {
		s.lines = map[string]int{}
		for i := 0; i+1 < len(top.Content); i += 2 {
			s.lines[top.Content[i].Value] = top.Content[i].Line
			k, v := top.Content[i], top.Content[i+1]
			switch {
			case k.Value == "sku" && v.Kind != yaml.ScalarNode:
				s.nameUnreadable = true
			case k.Value == "suites" && v.Kind == yaml.MappingNode:
				for j := 0; j+1 < len(v.Content); j += 2 {
					s.lines["suite "+v.Content[j].Value] = v.Content[j].Line
				}
			case k.Value == "baselines" && v.Kind == yaml.SequenceNode:
				for j, item := range v.Content {
					s.lines[fmt.Sprintf("entry %d", j+1)] = item.Line
				}
			}
		}
		if errs[0] != nil && s.Name == "" && s.lines["sku"] > 0 {
			s.nameUnreadable = true // the whole decode stopped (a repeated key)
		}
		errs = append(errs, s.validate()...)
	}
	if err := NewProblems(name, errs); err != nil {
		return &s, err
	}
	return &s, nil
}

// knownUnits are the units baselines may use. GB/s is 1e9 bytes/s (NCCL
// busbw/algbw); Gb/s is 1e9 bits/s (NIC line rate).
var knownUnits = map[string]bool{"GB/s": true, "Gb/s": true, "MB/s": true, "us": true, "ms": true, "count": true, "%": true}

// LowerIsBetter reports whether smaller values of a unit are better: times
// (us, ms). Their bands need a ceiling (max), where bandwidths need a floor.
func LowerIsBetter(unit string) bool { return unit == "us" || unit == "ms" }

// higherIsBetter: bandwidths, whose bands need a floor (min).
func higherIsBetter(unit string) bool { return unit == "GB/s" || unit == "Gb/s" || unit == "MB/s" }

// validate returns every problem of the file, each naming its line where
// the field has one.
func (s *SKU) validate() []error {
	var errs []error
	if s.Name == "" && !s.nameUnreadable {
		errs = append(errs, errors.New("field sku: missing"))
	}
	if s.GPUsPerNode < 0 {
		errs = append(errs, fmt.Errorf("line %d: field gpus_per_node: %d is negative", s.lines["gpus_per_node"], s.GPUsPerNode))
	}
	for _, name := range s.SuiteNames() {
		su := s.Suites[name]
		if su == nil || len(su.Tests) == 0 {
			line := s.lines["suite "+name]
			if su != nil {
				line = su.Line
			}
			errs = append(errs, fmt.Errorf("line %d: suite %q: no tests", line, name))
			continue
		}
		for i, t := range su.Tests {
			if t == nil {
				errs = append(errs, fmt.Errorf("line %d: suite %q: test %d is empty", su.Line, name, i+1))
				continue
			}
			if _, _, ok := strings.Cut(t.Test, "."); !ok {
				errs = append(errs, fmt.Errorf("line %d: field test: %q is not plugin.test", t.Line, t.Test))
			}
		}
	}
	for i, e := range s.Baselines {
		if e == nil {
			errs = append(errs, fmt.Errorf("line %d: field baselines: entry %d is empty", s.lines[fmt.Sprintf("entry %d", i+1)], i+1))
			continue
		}
		errs = append(errs, e.validate()...)
	}
	errs = append(errs, s.validateHardware()...)
	return errs
}

// validate returns every problem of an entry, each as "line N: field F:
// ...", N being the line of the field itself.
func (e *Entry) validate() []error {
	errs := append([]error(nil), e.unknown...)
	add := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("line %d: "+format, append([]any{line}, args...)...))
	}
	if !strings.Contains(e.Test, ".") {
		add(e.FieldLine("test"), "field test: %q is not plugin.test", e.Test)
	}
	if e.Scope.Nodes < 1 || e.Scope.GPUsPerNode < 1 {
		add(e.FieldLine("scope"), "field scope: nodes and gpus_per_node must be >= 1, got %s", e.Scope)
	}
	if e.Metric == "" {
		add(e.Line, "field metric: missing")
	}
	if !knownUnits[e.Unit] {
		add(e.FieldLine("unit"), "field unit: %q is not one of GB/s (bytes), Gb/s (bits), MB/s, us, ms, count, %%", e.Unit)
	}
	if e.Source == "" {
		add(e.Line, "field source: missing (say where the numbers come from)")
	}
	if (e.Value == nil) == (len(e.Points) == 0) {
		add(e.Line, "fields value/points: give exactly one of a single value or a list of points")
	}
	if e.Band.IsZero() && !e.pointsHaveBands() {
		add(e.Line, "field band: missing (give at least min or max)")
	}
	errs = append(errs, e.validateCurve()...)
	errs = append(errs, e.checkDirection()...)
	errs = append(errs, e.checkUnits(e.Band, e.FieldLine("band"))...)
	for _, p := range e.Points {
		errs = append(errs, e.checkUnits(p.Band, p.Line)...)
	}
	if e.Ceiling < 0 {
		add(e.FieldLine("ceiling"), "field ceiling: %g is negative", e.Ceiling)
	}
	if e.Value != nil {
		errs = append(errs, e.checkValue(*e.Value, e.Band, e.FieldLine("value"))...)
	}
	seen := map[Size]bool{}
	for _, p := range e.Points {
		if seen[p.Size] {
			add(p.Line, "field size: %d listed twice", p.Size)
		}
		seen[p.Size] = true
		errs = append(errs, e.checkValue(p.Value, e.Band.Merge(p.Band), p.Line)...)
	}
	return errs
}

// checkDirection catches a band written for the wrong direction: a time
// (us) with floors only passes any slowdown, a bandwidth with ceilings only
// passes a dead link. Each band that judges something (the entry's, merged
// with each point's) must bound the bad side.
func (e *Entry) checkDirection() []error {
	bands := []Band{e.Band}
	if len(e.Points) > 0 {
		bands = bands[:0]
		for _, p := range e.Points {
			bands = append(bands, e.Band.Merge(p.Band))
		}
	}
	for _, b := range bands {
		if b.IsZero() {
			continue // reported as a missing band
		}
		switch {
		case LowerIsBetter(e.Unit) && !b.Max.set && !b.WarnMax.set:
			return []error{fmt.Errorf("line %d: field band: %s is a time in %s, better lower, and the band has no max or warn_max: it would pass any slowdown (give max: \"+10%%\"; warn_min flags a time far below the baseline)", e.FieldLine("band"), e.Metric, e.Unit)}
		case higherIsBetter(e.Unit) && !b.Min.set && !b.WarnMin.set:
			return []error{fmt.Errorf("line %d: field band: %s is a rate in %s, better higher, and the band has no min or warn_min: it would pass a dead link (give min: \"-10%%\")", e.FieldLine("band"), e.Metric, e.Unit)}
		}
	}
	return nil
}

// checkValue checks one reference value, written at line, against its band
// and the entry's ceiling. A reference that fails its own band, or that is
// above the physical ceiling, is almost always a slip: most often GB/s and
// Gb/s mixed up (8x), which the message says when the ratio is near 8. A
// broken band and a reference failing it are both reported: fixing one
// alone would not make the file right.
func (e *Entry) checkValue(ref float64, b Band, line int) []error {
	if math.IsNaN(ref) || math.IsInf(ref, 0) {
		return []error{fmt.Errorf("line %d: field value: %g is not a number", line, ref)}
	}
	errs := b.check(ref, line)
	if ref == 0 {
		var rel []string
		for _, x := range []struct {
			name string
			b    Bound
		}{{"min", b.Min}, {"warn_min", b.WarnMin}} {
			if x.b.IsSet() && x.b.Relative {
				rel = append(rel, x.name+" "+x.b.Text)
			}
		}
		if len(rel) > 0 {
			errs = append(errs, fmt.Errorf("line %d: field value: 0 with a relative floor (%s): the floor is 0 and can never fail", line, strings.Join(rel, ", ")))
		}
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	if b.Min.IsSet() {
		lo = b.Min.Limit(ref)
	}
	if b.Max.IsSet() {
		hi = b.Max.Limit(ref)
	}
	if lo <= hi && (ref < lo || ref > hi) {
		edge, lim := b.Min, lo
		if ref > hi {
			edge, lim = b.Max, hi
		}
		errs = append(errs, fmt.Errorf("line %d: field value: the reference %.4g %s fails its own band (%s %s): a healthy system could never pass%s", line, ref, e.Unit, map[bool]string{true: "min", false: "max"}[ref < lo], edge.Text, unitHint(ref, lim)))
	}
	if e.Ceiling > 0 && ref > e.Ceiling*1.0001 {
		errs = append(errs, fmt.Errorf("line %d: field value: %.4g %s is above the entry's ceiling %.4g %s, the physical limit%s", line, ref, e.Unit, e.Ceiling, e.Unit, unitHint(ref, e.Ceiling)))
	}
	return errs
}

// unitHint names the bits/bytes slip when two numbers are about 8x apart.
func unitHint(a, b float64) string {
	if a <= 0 || b <= 0 {
		return ""
	}
	r := a / b
	if r < 1 {
		r = 1 / r
	}
	if r > 7 && r < 9 {
		return fmt.Sprintf(" (the two differ by %.1fx: GB/s (bytes) and Gb/s (bits) mixed up?)", r)
	}
	return ""
}

// checkUnits catches a bound written in another unit than the entry's, the
// classic GB/s (bytes) vs Gb/s (bits) slip that is off by 8x. line is where
// the band is written, for bounds that carry no line of their own.
func (e *Entry) checkUnits(b Band, line int) []error {
	var errs []error
	for _, x := range []struct {
		name string
		b    Bound
	}{{"min", b.Min}, {"warn_min", b.WarnMin}, {"max", b.Max}, {"warn_max", b.WarnMax}} {
		if x.b.IsSet() && !x.b.Relative && x.b.Unit != "" && x.b.Unit != e.Unit {
			errs = append(errs, fmt.Errorf("line %d: field band.%s: bound %q is in %s but the entry's unit is %s", x.b.lineOr(line), x.name, x.b.Text, x.b.Unit, e.Unit))
		}
	}
	return errs
}

func (e *Entry) pointsHaveBands() bool {
	if len(e.Points) == 0 {
		return false
	}
	for _, p := range e.Points {
		if p.Band.IsZero() {
			return false
		}
	}
	return true
}

// Scopes lists the scopes the baseline has for a test, sorted.
func (s *SKU) Scopes(test string) []plan.Scope {
	seen := map[plan.Scope]bool{}
	var out []plan.Scope
	for _, e := range s.Baselines {
		if e.Test == test && !seen[e.Scope] {
			seen[e.Scope] = true
			out = append(out, e.Scope)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Nodes != out[j].Nodes {
			return out[i].Nodes < out[j].Nodes
		}
		return out[i].GPUsPerNode < out[j].GPUsPerNode
	})
	return out
}

// Entries returns the baseline entries of a test at a scope.
func (s *SKU) Entries(test string, sc plan.Scope) []*Entry {
	var out []*Entry
	for _, e := range s.Baselines {
		if e.Test == test && e.Scope == sc {
			out = append(out, e)
		}
	}
	return out
}

// SuiteNames lists the SKU's suites, sorted.
func (s *SKU) SuiteNames() []string {
	out := make([]string, 0, len(s.Suites))
	for n := range s.Suites {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Catalog is a set of SKU files.
type Catalog struct {
	SKUs map[string]*SKU
}

// Load reads every *.yaml file at the top of fsys as a SKU file; dir is
// the folder fsys stands for, used to name files in messages. One bad file
// fails the whole load with its name, line and field: a catalog with a
// silently missing SKU would skip its tests without saying why.
func Load(fsys fs.FS, dir string) (*Catalog, error) {
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list SKU files: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no SKU files (*.yaml) in %s", dir)
	}
	c := &Catalog{SKUs: map[string]*SKU{}}
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("read SKU file %s: %w", n, err)
		}
		s, err := Parse(data, path.Join(dir, n))
		if err != nil {
			return nil, err
		}
		if stem := strings.TrimSuffix(n, ".yaml"); stem != s.Name {
			return nil, fmt.Errorf("%s: holds sku %q: name the file after its SKU (%s.yaml), so --sku finds what the file name says", s.File, s.Name, s.Name)
		}
		if prev, dup := c.SKUs[s.Name]; dup {
			return nil, fmt.Errorf("%s: sku %q is also defined in %s", s.File, s.Name, prev.File)
		}
		c.SKUs[s.Name] = s
	}
	return c, nil
}

// Names lists the catalog's SKU names, sorted.
func (c *Catalog) Names() []string {
	out := make([]string, 0, len(c.SKUs))
	for n := range c.SKUs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Get returns the named SKU, or an error listing those that exist.
func (c *Catalog) Get(name string) (*SKU, error) {
	if s, ok := c.SKUs[name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("unknown SKU %q (known: %s)", name, strings.Join(c.Names(), ", "))
}
