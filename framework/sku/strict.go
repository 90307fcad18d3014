package sku

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

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
