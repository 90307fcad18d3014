package runner

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// verdictDiffs compares what a test's verdict says beyond its status and
// metrics with what re-judging its raw outputs gives: the message (unless
// the runner rewrote it: a stop, a pass on a retry), the checks, the info
// the output names (hosts, versions, GPU) and the diagnostics the parser
// found, which must all be among the recorded ones, in order (the runner
// adds its own). Paths under the results folder are compared with the
// folder written DIR: recordedDir where the run wrote it, dir where it is.
func verdictDiffs(label string, recorded, got result.Test, rewritten bool, recordedDir, dir string) []string {
	norm := func(s string) string {
		for _, d := range []string{recordedDir, dir} {
			if d != "" && d != "." {
				s = strings.ReplaceAll(s, d, "DIR")
			}
		}
		return s
	}
	var diffs []string
	if !rewritten && norm(recorded.Message) != norm(got.Message) {
		diffs = append(diffs, fmt.Sprintf("%s: message recorded %q, re-judged %q", label, recorded.Message, got.Message))
	}
	diffs = append(diffs, checkDiffs(label, recorded.Checks, got.Checks)...)
	if b := result.Bases(recorded.Metrics); !slices.Equal(recorded.Basis, b) {
		// The reports show the test's basis: it must be its points' (a
		// "golden" over points a floor judged would claim more).
		diffs = append(diffs, fmt.Sprintf("%s: basis recorded %q, its points rest on %q", label, recorded.Basis, b))
	}
	keys := map[string]bool{}
	for k := range recorded.Info {
		keys[k] = true
	}
	for k := range got.Info {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		r, rok := recorded.Info[k]
		g, gok := got.Info[k]
		switch {
		case !gok:
			diffs = append(diffs, fmt.Sprintf("%s: info %s recorded %q, not in the raw output", label, k, r))
		case !rok:
			diffs = append(diffs, fmt.Sprintf("%s: info %s %q in the raw output, not recorded", label, k, g))
		case r != g:
			diffs = append(diffs, fmt.Sprintf("%s: info %s recorded %q, raw output says %q", label, k, r, g))
		}
	}
	if !containsRun(recorded.Diagnostics, got.Diagnostics, norm) {
		diffs = append(diffs, fmt.Sprintf("%s: diagnostics recorded %s, re-judged %s", label, compact(recorded.Diagnostics), compact(got.Diagnostics)))
	}
	return diffs
}

// containsRun says whether want appears in have as a run of consecutive
// entries.
func containsRun(have, want []result.Diagnostic, norm func(string) string) bool {
	same := func(a, b result.Diagnostic) bool {
		return a.Level == b.Level && norm(a.Message) == norm(b.Message) && norm(a.Source) == norm(b.Source)
	}
	for off := 0; off+len(want) <= len(have); off++ {
		ok := true
		for i := range want {
			if !same(have[off+i], want[i]) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func checkDiffs(label string, recorded, got []result.Check) []string {
	if reflect.DeepEqual(recorded, got) {
		return nil
	}
	var diffs []string
	by := map[string]result.Check{}
	for _, c := range got {
		by[c.Name] = c
	}
	seen := map[string]bool{}
	for _, r := range recorded {
		seen[r.Name] = true
		g, ok := by[r.Name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: check %q recorded, not made on the raw output", label, r.Name))
		case r != g:
			diffs = append(diffs, fmt.Sprintf("%s: check %q recorded %s, re-judged %s", label, r.Name, compact(r), compact(g)))
		}
	}
	for _, g := range got {
		if !seen[g.Name] {
			diffs = append(diffs, fmt.Sprintf("%s: check %q made on the raw output, not recorded (%s)", label, g.Name, compact(g)))
		}
	}
	if len(diffs) == 0 && len(recorded) == len(got) {
		// The same checks in another order: the order is the judge's
		// (it moved the GPU model gate first in 2026-12), not evidence.
		return nil
	}
	if len(diffs) == 0 {
		diffs = append(diffs, fmt.Sprintf("%s: checks recorded twice: %s, re-judged %s", label, compact(recorded), compact(got)))
	}
	return diffs
}

// judgedDiffs compares a metric recorded and re-judged whose value and
// status agree: unit, band, expected value, message, summary.
func judgedDiffs(label, key string, recorded, got result.Judged) []string {
	if recorded.Basis == "" {
		// A folder made before gpuaccept named the basis of a verdict: it
		// claims none, and the reports show none.
		got.Basis = ""
	}
	if recorded.Tolerance == 0 {
		// A folder made before verdicts kept their band's width (a
		// burn-in's drift rule reads it): it claims none. One that
		// claims a width is held to it.
		got.Tolerance = 0
	}
	switch {
	case recorded.Unit != got.Unit:
		return []string{fmt.Sprintf("%s: %s recorded in %s, raw output says %s", label, key, recorded.Unit, got.Unit)}
	case !reflect.DeepEqual(recorded, got):
		return []string{fmt.Sprintf("%s: %s recorded as %s, re-judged as %s", label, key, compact(recorded), compact(got))}
	}
	return nil
}

// compact renders v as one line of JSON, cut at 300 bytes.
func compact(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(data) > 300 {
		return string(data[:300]) + "..."
	}
	return string(data)
}
