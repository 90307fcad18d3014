package sku

import "go.yaml.in/yaml/v3"

// The strict decoding of SKU files, for other files of the same habits
// (framework/site): an unknown key is a problem with its line, every
// problem of a file is gathered, and a syntax error points at the line at
// fault. They are the functions SKU files are read with, not copies.

// StrictDecode decodes the mapping n into out, refusing every key that
// names no field of out (its yaml tags; inline structs included) with its
// line, and gathering every problem into a *yaml.TypeError, which yaml.v3
// carries on past so that one decode reports all of them. For
// UnmarshalYAML methods: decode through a type without the method.
func StrictDecode(n *yaml.Node, out any) error { return strictDecode(n, out) }

// ProblemAt is the Problem of field (dotted path, may be "") at line (0:
// none), its message made by fmt.Sprintf(format, args...).
func ProblemAt(line int, field, format string, args ...any) Problem {
	return problemAt(line, field, format, args...)
}

// AsTypeError gathers errs (nil ones skipped) into the *yaml.TypeError
// yaml.v3 goes on after; nil when there is none. An UnmarshalYAML returns
// its problems through it so the whole file is still read.
func AsTypeError(errs ...error) error { return asTypeError(errs...) }

// SyntaxProblem is the problem of data that yaml.v3 could not parse (err),
// at the line where the fault is.
func SyntaxProblem(err error, data []byte) Problem { return syntaxProblem(err, data) }

// Check applies the section's own rules (tolerations' operators and
// effects, empty names), as decoding a SKU file does; a site file's
// kubernetes part (framework/site) holds the same fields.
func (k *Kubernetes) Check() error { return k.validate() }
