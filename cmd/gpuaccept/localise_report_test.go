package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/report"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// subRunRel is where the localisation of localisedFolder keeps its run.
const subRunRel = "localise/nccl.all_reduce/pairs/vm-vm2-r1"

// localisedFolder makes a results folder the way a run with a
// localisation leaves it: the main run (the healthy H200 recording), one
// sub-run in its own results folder under localise/, and the finished
// localisation journaled as the localiser writes it; the main folder's
// reports and manifest come from gpuaccept report, as after a killed run.
func localisedFolder(t *testing.T) string {
	t.Helper()
	dir := replayRun(t)
	for _, f := range []string{"manifest.json", "results.json"} {
		assert.NilError(t, os.Remove(filepath.Join(dir, f)))
	}
	sub := filepath.Join(dir, subRunRel)
	code, out, errs := cli(t, "--sku", "h200", "--suite", "singlenode", "--launcher", "replay", "--replay-dir", healthy,
		"--gpus-per-node", "2", "--test", "nccl.all_reduce", "--out", sub)
	assert.Equal(t, code, 0, out+errs)
	loc := result.Localisation{Test: "nccl.all_reduce", Hosts: []string{"vm", "vm2"}, Reason: "asked", Strategy: "pairs", Tolerance: 0.1,
		Stages: []result.Stage{{Name: "pairs", Rounds: 1, Runs: []result.SubRun{{Round: 1, Test: "nccl.all_reduce", Hosts: []string{"vm", "vm2"},
			Status: result.Pass, Figure: 344.0, FigureName: "peak busbw", Unit: "GB/s", Dir: subRunRel}}}},
		Suspects: []result.Suspect{{Kind: "node", Host: "vm2", Stage: "per-node", Reason: "the single-node suite failed on vm2",
			Evidence: []string{"per-node round 1, suite singlenode on vm2: fail (localise/nccl.all_reduce/per-node/vm2)"}}}}
	line, err := json.Marshal(map[string]any{"localisation": loc})
	assert.NilError(t, err)
	f, err := os.OpenFile(filepath.Join(dir, "journal.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	assert.NilError(t, err)
	_, err = f.Write(append(line, '\n'))
	assert.NilError(t, err)
	assert.NilError(t, f.Close())
	code, out, errs = cli(t, "report", dir)
	assert.Equal(t, code, 1, "a suspect fails the run: "+out+errs)
	return dir
}

// gpuaccept report rebuilds every report with the journaled localisation.
func TestReportRebuildsLocalisation(t *testing.T) {
	dir := localisedFolder(t)
	code, out, errs := cli(t, "report", dir, "--format", "table")
	assert.Equal(t, code, 1, out+errs)
	for _, w := range []string{"Localisation of nccl.all_reduce on 2 nodes (strategy pairs, tolerance 10%, asked for): 1 suspect", "pairs: 1 run in 1 round, none slow",
		"FAIL: SKU h200, suite singlenode, scope 1x2, launcher replay: 6 pass", "; 1 suspect: vm2 (nccl.all_reduce)"} {
		assert.Assert(t, strings.Contains(out, w), "want %q in\n%s", w, out)
	}
	var run result.Run
	assert.NilError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(dir, report.ResultsFile))), &run))
	assert.Equal(t, len(run.Localisations), 1)
	assert.Equal(t, run.Localisations[0].Suspects[0].Name(), "vm2")
	assert.Equal(t, run.Status, result.Fail)
	for f, w := range map[string]string{
		report.JUnitFile:    `<testcase name="suspect vm2"`,
		report.HTMLFile:     `<a href="` + subRunRel + `/report.html">`,
		report.MarkdownFile: "| vm2     | node | per-node |",
		report.TableFile:    "│ vm2     │ node │ per-node │",
	} {
		assert.Assert(t, strings.Contains(readFile(t, filepath.Join(dir, f)), w), "want %q in %s", w, f)
	}
	// The link leads to the sub-run's own report.
	assert.Assert(t, fileExists(filepath.Join(dir, subRunRel, report.HTMLFile)))
}

// verify covers a localisation's runs: their files are in the main
// manifest, their raw outputs are re-judged, and the verdicts the
// localisation recorded from them must match their journals.
func TestVerifyLocalisation(t *testing.T) {
	signed := localisedFolder(t)
	cases := []struct {
		name   string
		change func(dir string)
		code   int
		want   []string
	}{
		// 25 files of the main run (20 and 5 reports), 11 of the sub-run (3
		// raw, baseline, journal, 5 reports, its own manifest).
		{"untouched", func(string) {}, 0, []string{"verify: OK: 36 files match the manifest; 6 tests re-judged against baseline/h200.yaml (built-in h200 baseline) give the recorded verdicts, as do the 1 run of 1 localisation (run fail)"}},
		{"sub-run raw output edited", func(dir string) {
			edit(t, filepath.Join(dir, subRunRel, "raw/nccl.all_reduce/all_reduce.files/all_reduce.json"), `("size": 4294967296,[^}]*"out_of_place": \{[^}]*"bus_bw": )3`, "${1}1")
		}, 1, []string{
			"MISMATCH " + subRunRel + "/raw/nccl.all_reduce/all_reduce.files/all_reduce.json: edited since the run",
			"REJUDGED " + subRunRel + ": nccl.all_reduce: recorded pass, re-judged error",
		}},
		{"sub-run removed", func(dir string) {
			assert.NilError(t, os.RemoveAll(filepath.Join(dir, subRunRel)))
		}, 1, []string{
			"MISMATCH " + subRunRel + "/journal.jsonl: missing",
			"MISMATCH localisation of nccl.all_reduce: run " + subRunRel + ": read journal",
		}},
		{"sub-run verdict edited in the localisation", func(dir string) {
			edit(t, filepath.Join(dir, "journal.jsonl"), `"status":"pass","figure"`, `"status":"fail","figure"`)
		}, 1, []string{
			"MISMATCH journal.jsonl: edited since the run",
			"MISMATCH localisation of nccl.all_reduce: pairs round 1 on vm,vm2: recorded nccl.all_reduce fail, its journal (" + subRunRel + ") says pass",
		}},
		{"suspect edited in results.json", func(dir string) {
			edit(t, filepath.Join(dir, report.ResultsFile), `"host": "vm2"`, `"host": "vm3"`)
		}, 1, []string{"MISMATCH results.json: localisations[nccl.all_reduce].suspects[node vm3] is not in the re-derived run",
			"MISMATCH results.json: localisations[nccl.all_reduce].suspects[node vm2] is missing, re-derived from raw/ and the journal: "}},
		{"sub-run report edited", func(dir string) {
			edit(t, filepath.Join(dir, subRunRel, report.TableFile), `PASS`, `FAIL`)
		}, 1, []string{"MISMATCH " + subRunRel + "/table.txt: edited since the run",
			"MISMATCH " + subRunRel + "/table.txt: differs from the one re-rendered from the journal and the baseline copy, from line"}},
		{"sub-run metric in its results.json", func(dir string) {
			edit(t, filepath.Join(dir, subRunRel, report.ResultsFile), `("value": )344\.031485`, "${1}144.031485")
		}, 1, []string{"MISMATCH " + subRunRel + "/results.json: tests[nccl.all_reduce].metrics[", "].value is 144.031485, re-derived from raw/ and the journal: 344.031485"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { verifyChanged(t, signed, c.change, c.code, c.want) })
	}
}
