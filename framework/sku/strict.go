package sku

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
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
		return asTypeError(problemAt(n.Line, "", "want a mapping, got %s", kindName(n)))
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
			// The key names no field: the problem is of no field.
			errs = append(errs, problemAt(k.Line, "", "field %q is not known here (known: %s)", k.Value, strings.Join(names, ", ")))
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

// yamlParserProblems are the problems yaml.v3 v3.0.6's parser (parserc.go,
// not its scanner) reports. It prints their line 0-based (it adds one only
// for scanner errors), so each points one line too early: an unclosed
// flow mapping opened on line 93 reads "line 92"; none printed means line
// 1. The line it prints is that of the construct the parser was in (the
// flow mapping, the block mapping), which is where to look.
var yamlParserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"found undefined tag handle":             true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// yamlTabProblems are the scanner's problems with a tab in indentation. It
// prints the line of the scalar it was scanning, the one before the tab's
// when the scalar is one line long.
var yamlTabProblems = map[string]bool{
	"found a tab character that violates indentation":              true,
	"found a tab character where an indentation space is expected": true,
}

// syntaxProblem is the problem of a file yaml.v3 cannot parse (err, from
// decoding data), at the line where the fault is: yaml.v3 reports a syntax
// error only as text, "yaml: line N: PROBLEM", with N 0-based for its
// parser's problems (yamlParserProblems) and, for a tab in indentation,
// the line before the tab's (yamlTabProblems). Its Message is
// "yaml: PROBLEM".
func syntaxProblem(err error, data []byte) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		digits, m, ok := strings.Cut(rest, ": ")
		if n, err := strconv.Atoi(digits); ok && err == nil && n > 0 {
			line, msg = n, m
		}
	}
	switch {
	case yamlParserProblems[msg]:
		line++
	case yamlTabProblems[msg]:
		line = tabLine(data, max(line, 1))
	}
	// At the end of the stream yaml.v3 moves to a line of its own, past
	// the last: the fault is then on the file's last line.
	last := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		last++
	}
	if line > max(last, 1) {
		line = max(last, 1)
	}
	return Problem{Line: line, Message: "yaml: " + msg}
}

// tabLine is the first line, from line from on (1-based), whose
// indentation holds a tab; from itself when none does.
func tabLine(data []byte, from int) int {
	for i, l := range strings.Split(string(data), "\n") {
		if i+1 < from {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if strings.Contains(indent, "\t") {
			return i + 1
		}
	}
	return from
}
