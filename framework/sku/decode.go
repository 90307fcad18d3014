package sku

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

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
			return nil, NewProblems(name, []error{Problem{Message: "empty file"}})
		}
		return nil, NewProblems(name, []error{syntaxProblem(err, data)})
	}
	if len(root.Content) == 0 {
		return nil, NewProblems(name, []error{Problem{Message: "empty file"}})
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

// UnmarshalYAML reads an integer or a suffixed string.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseSize(n.Value)
	if err != nil {
		return asTypeError(problemAt(n.Line, "", "%v", err))
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
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "site_params" {
			t.SiteParamsLine = n.Content[i].Line
		}
	}
	// The declared metrics reach the plugin as a parameter, so that every
	// reader of a suite's parameters (run, check, verify, baseline diff)
	// hands the plugin what the framework judges.
	_, t.handParam = t.Params[DeclaredParam]
	if len(t.Metrics) > 0 && !t.handParam {
		if t.Params == nil {
			t.Params = map[string]string{}
		}
		t.Params[DeclaredParam] = EncodeDeclared(t.Metrics)
	}
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
		errs = append(errs, problemAt(n.Line, "value", "missing"))
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
			errs = append(errs, problemAt(lineOf(n, f.name), "band."+f.name, "%v", err))
			continue
		}
		v.line = lineOf(n, f.name)
		*f.dst = v
	}
	return b, asTypeError(errs...)
}
