package sku

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Problem is one problem of a SKU file: where it is (file, line, field)
// and what is wrong, kept as data so that problems sort by line and a
// caller can point at the field; String and Error render it the way
// compilers do.
type Problem struct {
	// File is the SKU file's name as given to Parse; "" in a problem not
	// yet gathered into Problems (NewProblems names the file).
	File string
	// Line is the 1-based line of the field at fault (of the entry, when
	// the field is missing); 0 when the problem has no line (a top-level
	// key that is not there).
	Line int
	// Field is the field's dotted path as the file spells it ("unit",
	// "band.min", "kubernetes.tolerations.effect"); "" when the problem is
	// about no one field (a key that names none, a suite, yaml.v3's own
	// type errors).
	Field string
	// Message says what is wrong and, where it can, how to fix it.
	Message string
}

// problemAt is the problem of field (may be "") at line (0: none), its
// Message made by fmt.Sprintf(format, args...).
func problemAt(line int, field, format string, args ...any) Problem {
	return Problem{Line: line, Field: field, Message: fmt.Sprintf(format, args...)}
}

// String renders the problem without its file: "line 148: field unit:
// MESSAGE", leaving out the line and the field when there are none.
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		b.WriteString("line " + strconv.Itoa(p.Line) + ": ")
	}
	if p.Field != "" {
		b.WriteString("field " + p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error is String, prefixed with the file when it is known.
func (p Problem) Error() string {
	if p.File == "" {
		return p.String()
	}
	return p.File + ": " + p.String()
}

// MaxProblems bounds how many problems of one file a Problems error lists.
const MaxProblems = 20

// Problems is every problem found in one SKU file, sorted by line. Its
// Error lists the first MaxProblems, one a line, each prefixed with the
// file, as compilers do.
type Problems struct {
	// File is the SKU file's name as given to Parse.
	File string
	// List holds the problems, sorted by line (those with none first),
	// each with File set.
	List []Problem
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
		b.WriteString(p.File + ": " + m.String())
	}
	return b.String()
}

// NewProblems gathers the problems errs hold into a *Problems of file,
// sorted by line (those with none first, then in the order given), with
// repeats dropped (an entry's band inherited by each of its points); nil
// when errs holds none. A Problem or a *Problems is taken as it is; a
// *yaml.TypeError gives one problem per message, and any other error one,
// both read by problemFromYAML.
func NewProblems(file string, errs []error) error {
	var list []Problem
	seen := map[string]bool{}
	for _, err := range errs {
		if err == nil {
			continue
		}
		for _, p := range problemsOf(err) {
			p.File = file
			if k := p.String(); !seen[k] {
				seen[k] = true
				list = append(list, p)
			}
		}
	}
	if len(list) == 0 {
		return nil
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Line < list[j].Line })
	return &Problems{File: file, List: list}
}

func problemsOf(err error) []Problem {
	var ps *Problems
	var p Problem
	var te *yaml.TypeError
	switch {
	case errors.As(err, &ps):
		return ps.List
	case errors.As(err, &p):
		return []Problem{p}
	case errors.As(err, &te):
		out := make([]Problem, len(te.Errors))
		for i, m := range te.Errors {
			out[i] = problemFromYAML(m)
		}
		return out
	}
	return []Problem{problemFromYAML(err.Error())}
}

// problemFromYAML reads back a problem that crossed yaml.v3, which keeps
// the problems of a decode only as text (yaml.TypeError.Errors): its own,
// "line 12: cannot unmarshal !!str `fast` into float64", and those the
// UnmarshalYAML methods here return through it, which are Problem.String
// ("line 18: field band.min: ..."). It is the one place where a line or a
// field is read from text, and it reads only that form: String of what it
// returns is text again.
func problemFromYAML(text string) Problem {
	p := Problem{Message: text}
	if rest, ok := strings.CutPrefix(p.Message, "line "); ok {
		digits, msg, ok := strings.Cut(rest, ": ")
		if n, err := strconv.Atoi(digits); ok && err == nil && n > 0 && strconv.Itoa(n) == digits {
			p.Line, p.Message = n, msg
		}
	}
	if rest, ok := strings.CutPrefix(p.Message, "field "); ok {
		if name, msg, ok := strings.Cut(rest, ": "); ok && fieldPath(name) {
			p.Field, p.Message = name, msg
		}
	}
	return p
}

// fieldPath reports whether s is a field's dotted path as Problem.Field
// holds it: YAML keys of lower-case letters, digits and '_', joined by '.'.
func fieldPath(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}
