package runner

// This file: re-judging a results folder's raw outputs for verify.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Rejudge parses the raw outputs kept in results folder dir again, with the
// plugins, judges them against s, and compares the verdicts with those
// recorded in run: it returns one message per difference (status, message,
// a metric's value, unit, band or status, a metric found or gone, a check,
// an info such as the hosts the output names), naming the test. A test
// with no raw outputs (skipped, not planned, not launched) keeps its
// recorded verdict. A raw output that cannot be read is one of the
// messages. run.Dir is the results folder the run recorded, which
// messages naming its files may quote; dir is where it is now.
func Rejudge(ctx context.Context, plugins Plugins, s *sku.SKU, dir string, run *result.Run) []string {
	var diffs []string
	claimed := map[string]string{} // raw/ folder -> the test it backs
	for _, final := range run.Tests {
		all := append(append([]result.Test(nil), final.Attempts...), final)
		for i, t := range all {
			label := t.Name
			if len(all) > 1 {
				label = fmt.Sprintf("%s (attempt %d of %d)", t.Name, i+1, len(all))
			}
			if len(t.Raw) == 0 {
				// Only a test that never ran has no raw output: a verdict,
				// a number or a check must come from raw/ to be believed.
				if d := unbackedVerdict(t); d != "" {
					diffs = append(diffs, label+": "+d)
				}
				continue
			}
			folder, err := resultsdir.RawFolder(t)
			if err == nil && claimed[folder] != "" {
				err = fmt.Errorf("raw output folder raw/%s is also %s's: one run's outputs cannot back two verdicts", folder, claimed[folder])
			}
			if err != nil {
				diffs = append(diffs, fmt.Sprintf("%s: %v", label, err))
				continue
			}
			claimed[folder] = label
			got, err := rejudgeTest(ctx, plugins, s, dir, run, t)
			if err != nil {
				diffs = append(diffs, fmt.Sprintf("%s: %v", label, err))
				continue
			}
			want := t.Status
			if i == len(all)-1 && len(all) > 1 && want == result.Warn && got.Status == result.Pass {
				want = result.Pass // the warn says it passed only on a retry
			}
			if strings.HasPrefix(t.Message, "stopped: ") && t.Status == result.Error && got.Status != result.Fail {
				want = got.Status // the stop, not the output, made it an error
			}
			if got.Status != want {
				diffs = append(diffs, fmt.Sprintf("%s: recorded %s, re-judged %s (%s)", label, t.Status, got.Status, got.Message))
			}
			diffs = append(diffs, metricDiffs(label, t.Metrics, got.Metrics)...)
			rewritten := strings.HasPrefix(t.Message, "stopped: ") || want != t.Status
			diffs = append(diffs, verdictDiffs(label, t, got, rewritten, run.Dir, dir)...)
			// What the telemetry showed explains verdicts in every
			// report: it must come from the samples in raw/ too.
			if !sameJSON(t.Telemetry, got.Telemetry) {
				diffs = append(diffs, fmt.Sprintf("%s: the telemetry recorded is not what its raw samples show", label))
			}
		}
	}
	return diffs
}

// unbackedVerdict says what a test with no raw outputs claims that only
// outputs could give: a pass, warn or fail, a metric or a check; "" when
// it claims none (a skip, or an error before anything ran).
func unbackedVerdict(t result.Test) string {
	var claims []string
	if t.Status != result.Skip && t.Status != result.Error {
		claims = append(claims, "a "+string(t.Status))
	}
	if n := len(t.Metrics); n > 0 {
		claims = append(claims, fmt.Sprintf("%d metrics", n))
	}
	if n := len(t.Checks); n > 0 {
		claims = append(claims, fmt.Sprintf("%d checks", n))
	}
	if len(claims) == 0 {
		return ""
	}
	return fmt.Sprintf("recorded %s with no raw output to re-judge them from: only a test that never ran has none", strings.Join(claims, " and "))
}

// JudgeAgain parses the raw outputs of test t of run (a results folder
// at dir) again and judges them against s, as Rejudge does, returning
// the re-judged test; the error says why its outputs cannot be read (none
// kept, out of its folder, unreadable).
func JudgeAgain(ctx context.Context, plugins Plugins, s *sku.SKU, dir string, run *result.Run, t result.Test) (result.Test, error) {
	return rejudgeTest(ctx, plugins, s, dir, run, t)
}

// VerdictDiffs lists how test got differs from test had in its status
// and its metrics (value, unit, band, status; found or gone), each
// difference naming label: what two baselines make of the same outputs.
func VerdictDiffs(label string, had, got result.Test) []string {
	var diffs []string
	if had.Status != got.Status {
		diffs = append(diffs, fmt.Sprintf("%s: %s, not %s (%s)", label, got.Status, had.Status, got.Message))
	}
	return append(diffs, metricDiffs(label, had.Metrics, got.Metrics)...)
}

func rejudgeTest(ctx context.Context, plugins Plugins, s *sku.SKU, dir string, run *result.Run, t result.Test) (result.Test, error) {
	parsed, topo, monitors, err := parseAgain(ctx, plugins, dir, run, t)
	if err != nil {
		return result.Test{}, err
	}
	name, _, _ := strings.Cut(t.Name, "[")
	pluginName, test, _ := SplitName(name)
	got := JudgeWith(s, name, topo, parsed, LabelDefaults(ctx, plugins, pluginName, test), Meanings(ctx, plugins, pluginName, test))
	if IsPreflight(ctx, plugins, pluginName, test) {
		got = preflightVerdict(s, name, t.Scope, got)
	}
	got.Name = t.Name
	return withTelemetry(got, telemetryOf(ctx, plugins, topo, monitors)), nil
}

// Hardware parses the raw outputs of every test and attempt of run (a
// results folder at dir) again and merges the devices the plugins say
// they show (result.HardwareInfo, result.MergeHardware): the hardware
// list a results folder keeps (layout.Hardware). problems name each
// test whose outputs could not be read or whose plugin's list does not
// read; its devices are left out. A plugin that names no hardware adds
// none.
func Hardware(ctx context.Context, plugins Plugins, dir string, run *result.Run) (list []result.Device, problems []string) {
	for _, final := range run.Tests {
		for _, t := range append(append([]result.Test(nil), final.Attempts...), final) {
			if len(t.Raw) == 0 {
				continue
			}
			parsed, _, _, err := parseAgain(ctx, plugins, dir, run, t)
			if err == nil {
				var ds []result.Device
				if _, ds, err = result.StripHardware(parsed); err == nil {
					list = result.MergeHardware(list, t.Name, ds)
					continue
				}
			}
			problems = append(problems, fmt.Sprintf("%s: %v", t.Name, err))
		}
	}
	return list, problems
}

// parseAgain parses the raw outputs of test t of run (a results folder at
// dir) again, as they were parsed when it ran, and returns what the
// plugin made of them and the topology it was given; the error says why
// its outputs cannot be read. A plugin's failure is a parse error of the
// result, as when it ran. The telemetry sampled beside the test is not
// the plugin's: its outputs come back apart (monitors).
func parseAgain(ctx context.Context, plugins Plugins, dir string, run *result.Run, t result.Test) (parsed result.Parsed, topo plan.Topology, monitors []plan.Output, err error) {
	rawName, err := resultsdir.RawFolder(t)
	if err != nil {
		return result.Parsed{}, plan.Topology{}, nil, err
	}
	folder := filepath.Join(dir, layout.Raw, rawName)
	outs, err := resultsdir.ReadOutputs(dir, rawName)
	if err != nil {
		return result.Parsed{}, plan.Topology{}, nil, err
	}
	// The plugin opens what it is handed, out of process: only regular
	// files of this test's folder, reached through no link (safefs).
	inFolder := func(p string) (string, error) {
		if !filepath.IsLocal(p) {
			return "", fmt.Errorf("raw output of step: %w", &safefs.RefusedError{Path: p, What: "outside the folder " + folder})
		}
		if err := safefs.Check(dir, filepath.Join(layout.Raw, rawName, p)); err != nil {
			return "", fmt.Errorf("raw output of step: %w", err)
		}
		return filepath.Join(folder, p), nil
	}
	for i := range outs {
		if outs[i].Log != "" {
			if outs[i].Log, err = inFolder(outs[i].Log); err != nil {
				return result.Parsed{}, plan.Topology{}, nil, err
			}
		}
		for k, v := range outs[i].Files {
			if outs[i].Files[k], err = inFolder(v); err != nil {
				return result.Parsed{}, plan.Topology{}, nil, err
			}
		}
	}
	if err := t.Scope.Check(); err != nil {
		return result.Parsed{}, plan.Topology{}, nil, fmt.Errorf("scope %s: %w", t.Scope, err)
	}
	topo = plan.Topology{Scope: t.Scope, Hosts: run.Hosts}
	// check names run N of several "TEST[FILE]"; the baseline knows TEST.
	name, _, _ := strings.Cut(t.Name, "[")
	pluginName, test, err := SplitName(name)
	if err != nil {
		return result.Parsed{}, plan.Topology{}, nil, err
	}
	outs, monitors = splitMonitors(outs)
	parsed, err = plugins.Parse(ctx, pluginName, pluginapi.ParseRequest{Test: test, Params: t.Params, Topology: topo, Outputs: outs})
	if err != nil {
		parsed = result.Parsed{Error: "parse: " + err.Error()}
	}
	return parsed, topo, monitors, nil
}

func metricDiffs(label string, recorded, got []result.Judged) []string {
	// Every label takes part in the key: Mori-EP reports one bw per phase,
	// stat and rank, which differ only in labels. A key that still repeats
	// (a plugin reporting the same point twice) is told apart by its order.
	keys := func(ms []result.Judged) []string {
		out := make([]string, len(ms))
		n := map[string]int{}
		for i, m := range ms {
			k := m.Key()
			names := make([]string, 0, len(m.Labels))
			for l := range m.Labels {
				if l != "placement" {
					names = append(names, l)
				}
			}
			sort.Strings(names)
			for _, l := range names {
				k += " " + l + "=" + m.Labels[l]
			}
			n[k]++
			if n[k] > 1 {
				k += fmt.Sprintf(" #%d", n[k])
			}
			out[i] = k
		}
		return out
	}
	gotKeys, recKeys := keys(got), keys(recorded)
	index := map[string]result.Judged{}
	for i, m := range got {
		index[gotKeys[i]] = m
	}
	var diffs []string
	seen := map[string]bool{}
	for i, r := range recorded {
		k := recKeys[i]
		seen[k] = true
		g, ok := index[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: %s recorded as %g %s, not in the raw output", label, k, r.Value, r.Unit))
		case g.Value != r.Value:
			diffs = append(diffs, fmt.Sprintf("%s: %s recorded as %g %s, raw output says %g", label, k, r.Value, r.Unit, g.Value))
		case g.Status != r.Status:
			diffs = append(diffs, fmt.Sprintf("%s: %s recorded %s, re-judged %s", label, k, r.Status, g.Status))
		default:
			diffs = append(diffs, judgedDiffs(label, k, r, g)...)
		}
	}
	for _, k := range gotKeys {
		if !seen[k] {
			diffs = append(diffs, fmt.Sprintf("%s: %s in the raw output but not recorded", label, k))
		}
	}
	return diffs
}

// sameJSON says whether a and b write the same JSON: a value read back
// from a results folder against one made again (nil and empty alike).
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
