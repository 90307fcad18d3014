package workload

// This file: reading declared metrics out of any output, line by line.

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/plugins/internal/lines"
)

// maxLine bounds the part of one line a pattern sees (a hostile output of
// gigabytes on one line): the rest of the line is skipped, said in a
// warning. A benchmark's summary line is far shorter.
const maxLine = 1 << 20

// maxShown bounds the text of a line quoted in a message.
const maxShown = 160

// Declared is a declared metric ready to read (Compile).
type Declared struct {
	sku.DeclaredMetric
	re *regexp.Regexp
}

// Compile checks the declarations ds (sku.DecodeDeclared's) and compiles
// their patterns; the error names the metric.
func Compile(ds []*sku.DeclaredMetric) ([]Declared, error) {
	out := make([]Declared, 0, len(ds))
	for _, d := range ds {
		re, _, err := sku.Compile(d.Pattern)
		if err != nil {
			return nil, fmt.Errorf("metric %s: pattern %w", d.Name, err)
		}
		out = append(out, Declared{DeclaredMetric: *d, re: re})
	}
	return out, nil
}

// Match is one value a pattern found: the metric (value in the declared
// unit, labels from the pattern's named groups) and where it was read.
type Match struct {
	Metric result.Metric
	// Source is "NAME:LINE" of the line it was read from (LINE 1-based).
	Source string
	// Text is the line, cut to maxShown bytes.
	Text string
}

// Reading is what Read found in one output: the values, the lines whose
// value is not a number, and warnings about the output itself.
type Reading struct {
	Matches []Match
	// Errors name the line and the metric of each value that is no
	// number: an output that cannot be read is an error, never a verdict.
	Errors []string
	// Warnings say what of the output was not read (an overlong line).
	Warnings []result.Diagnostic
}

// number is the decimal form of a value: no hex, no NaN or Inf (no tool
// measures one), no digit separators.
var number = regexp.MustCompile(`^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$`)

// Read matches every declared metric against each line of r (name names r
// in sources and messages: the log's file name). A line may give values of
// several metrics; each pattern's first match on a line counts. Read fails
// only when r cannot be read.
func Read(r io.Reader, name string, ds []Declared) (Reading, error) {
	var out Reading
	err := lines.Each(r, maxLine, func(line []byte, n int, long bool) {
		if long {
			out.Warnings = append(out.Warnings, result.Diagnostic{Level: result.Warning, Source: fmt.Sprintf("%s:%d", name, n),
				Message: fmt.Sprintf("line longer than %d bytes: only its first %d bytes were read", maxLine, maxLine)})
		}
		text := string(line)
		for _, d := range ds {
			m := d.re.FindStringSubmatch(text)
			if m == nil {
				continue
			}
			out.match(d, m, name, n, text)
		}
	})
	if err != nil {
		return out, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

// match records the value of d that m (d's submatches on line n) gives.
func (r *Reading) match(d Declared, m []string, name string, n int, text string) {
	var raw string
	labels := map[string]string{}
	for i, g := range d.re.SubexpNames()[1:] {
		if g == "" {
			raw = m[i+1]
		} else if v := m[i+1]; v != "" {
			labels[g] = v
		}
	}
	src := fmt.Sprintf("%s:%d", name, n)
	v := strings.TrimSpace(raw)
	if !number.MatchString(v) {
		r.Errors = append(r.Errors, fmt.Sprintf("%s: metric %s: %q is not a number (line %q)", src, d.Name, cut(v), cut(text)))
		return
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		// Out of float64's range: no measurement either.
		r.Errors = append(r.Errors, fmt.Sprintf("%s: metric %s: %q is not a number a tool measures: %v", src, d.Name, cut(v), errors.Unwrap(err)))
		return
	}
	if len(labels) == 0 {
		labels = nil
	}
	r.Matches = append(r.Matches, Match{Metric: result.Metric{Name: d.Name, Value: f, Unit: d.Unit, Labels: labels}, Source: src, Text: cut(text)})
}

// cut shortens s for a message.
func cut(s string) string {
	if len(s) <= maxShown {
		return s
	}
	return strings.ToValidUTF8(s[:maxShown], "") + "..."
}

// Gates returns the errors of a reading of every output against the
// declarations, and the matches left to judge: a metric no line matched
// (the tool printed another format, another unit, or nothing: never a
// pass) is named with its pattern; a metric matched more than once with
// the same labels (several runs in one log: which is the measurement?) is
// named with its lines, and none of those values is kept.
func Gates(ds []Declared, ms []Match, logs []string) (errs []string, kept []Match) {
	type key struct{ name, labels string }
	where := map[key][]string{}
	for _, m := range ms {
		k := key{m.Metric.Name, sku.LabelText(m.Metric.Labels)}
		where[k] = append(where[k], m.Source)
	}
	var twice []string
	reported := map[key]bool{}
	for _, m := range ms {
		k := key{m.Metric.Name, sku.LabelText(m.Metric.Labels)}
		if len(where[k]) == 1 {
			kept = append(kept, m)
			continue
		}
		if !reported[k] {
			reported[k] = true
			what := m.Metric.Name
			if k.labels != "" {
				what += " {" + k.labels + "}"
			}
			srcs := where[k]
			more := ""
			if len(srcs) > 3 {
				srcs, more = srcs[:3], fmt.Sprintf(" and %d more", len(srcs)-3)
			}
			twice = append(twice, fmt.Sprintf("%s at %s%s", what, strings.Join(srcs, ", "), more))
		}
	}
	for _, d := range ds {
		found := false
		for _, m := range ms {
			found = found || m.Metric.Name == d.Name
		}
		if !found {
			in := "the output"
			if len(logs) > 0 {
				in = strings.Join(logs, ", ")
			}
			errs = append(errs, fmt.Sprintf("metric %s: pattern %q matched no line of %s (the tool printed another format or unit, or stopped before its summary)", d.Name, d.Pattern, in))
		}
	}
	if len(twice) > 0 {
		errs = append(errs, fmt.Sprintf("matched more than once with the same labels, so none is judged: %s (several runs in one output? a pattern must find one value per label set: give what differs a named group, (?P<label>...))", strings.Join(twice, "; ")))
	}
	return errs, kept
}
