package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// Issue 31, finding 1: the framework lists no unit. The tokens example
// plugin (examples/plugin-python/gpuaccept-plugin-tokens, a toy whose tool
// prints its own fixed figures) reports tokens/s per model, a unit
// nothing in gpuaccept names, and declares it better higher, drawn per
// label set and recorded by default. With no change to gpuaccept, the
// metric is judged against the example SKU's entries (a run at half speed
// fails), drawn in report.html (a bar per model), kept with its meaning in
// results.json, re-derived by verify and recorded by baseline record
// without --metric.
func TestPluginNewUnitIsJudgedPlottedRecorded(t *testing.T) {
	plugins := pythonPlugin(t)
	skus := filepath.Join(plugins, "skus")
	run := func(out string, args ...string) (int, string) {
		code, stdout, stderr := cli(t, append([]string{"--baselines", skus, "--sku", "tokens-demo", "--suite", "example",
			"--plugin-path", plugins, "--launcher", "local", "--gpus-per-node", "1", "--out", out, "--timeout", "1m"}, args...)...)
		return code, stdout + stderr
	}
	good := filepath.Join(t.TempDir(), "good")
	code, out := run(good)
	assert.Equal(t, code, 0, out)
	var r result.Run
	assert.NilError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(good, "results.json"))), &r))
	te := r.Tests[0]
	assert.Equal(t, te.Status, result.Pass, te.Message)
	assert.Equal(t, te.Message, "2 points inside their bands")
	assert.DeepEqual(t, te.Meanings, []result.Meaning{{Name: "tokens", Unit: "tokens/s", Better: result.BetterHigher, Plot: result.PlotLabels, Record: true}})
	for _, m := range te.Metrics {
		assert.Equal(t, m.Status, result.Pass, "%s", m.Key())
		assert.Equal(t, m.Basis, "golden")
	}

	// Drawn as declared: one figure, a bar per model, the references over them.
	page := readFile(t, filepath.Join(good, "report.html"))
	assert.Equal(t, strings.Count(page, "<svg"), 1, page)
	for _, want := range []string{"tokens.train: tokens", "tokens (tokens/s)", "tokens {model=llama-8b}", "tokens {model=llama-70b}", "baseline reference"} {
		assert.Assert(t, strings.Contains(page, want), "want %q in report.html", want)
	}
	code, out, errs := cli(t, "verify", "--plugin-path", plugins, good)
	assert.Equal(t, code, 0, out+errs)
	assert.Assert(t, strings.Contains(out, "report.html, summary.md and table.txt re-rendered byte for byte"), out)

	// A slow system fails on the declared direction: the band is a floor.
	slow := filepath.Join(t.TempDir(), "slow")
	code, out = run(slow, "--param", "env.TOY_SLOWDOWN=0.5")
	assert.Equal(t, code, 1, out)
	assert.Assert(t, strings.Contains(out, "tokens {model=llama-8b} 751.2 tokens/s below 1352.2 (baseline 1502.5 -10%)"), out)

	// baseline record, no --metric: the plugin's record-default metric,
	// one entry per model, in its unit, with a floor.
	code, rec, errs := cli(t, "baseline", "record", "--plugin-path", plugins, "--baselines", skus, "--sku", "tokens-demo", good)
	assert.Equal(t, code, 0, errs)
	assert.Equal(t, strings.Count(rec, "metric: tokens\n"), 2, rec)
	assert.Equal(t, strings.Count(rec, "unit: tokens/s\n"), 2, rec)
	for _, want := range []string{"labels: {model: llama-8b}", "value: 1502.5", "labels: {model: llama-70b}", "value: 212.4", `band: {min: "-10%"`} {
		assert.Assert(t, strings.Contains(rec, want), "want %q in\n%s", want, rec)
	}
	// The recorded file judges the good run as the hand-written one does.
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "tokens-demo.yaml"), []byte(rec), 0o644))
	code, out, errs = cli(t, "check", "--plugin-path", plugins, "--baselines", dir, "--sku", "tokens-demo", "--test", "tokens.train",
		"--nodes", "1", "--gpus-per-node", "1", filepath.Join(good, "raw", "tokens.train", "train.log"))
	assert.Equal(t, code, 0, out+errs)
}
