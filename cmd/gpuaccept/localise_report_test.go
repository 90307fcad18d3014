package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/localise"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// subRunRel is where the localisation of localisedFolder keeps its run.
const subRunRel = "localise/nccl.all_reduce/pairs/vm-vm2-r1"

// localisedFolder makes a results folder the way a run with a
// localisation leaves it: the main run (the healthy H200 recording), its
// localisation's runs each in its own results folder under localise/ (a
// pair run and, per node, all_reduce: healthy on vm, NVLink peer-to-peer
// disabled on vm2), and the finished localisation journaled as the
// localiser writes it, each run's figure and verdict made from its
// results (localise.Rederive); the main folder's reports and manifest come
// from gpuaccept report, as after a killed run.
func localisedFolder(t *testing.T) string {
	t.Helper()
	dir := replayRun(t)
	for _, f := range []string{layout.Manifest, layout.Results} {
		assert.NilError(t, os.Remove(filepath.Join(dir, f)))
	}
	sub := func(rel, replay string, hosts ...string) result.SubRun {
		out := filepath.Join(dir, rel)
		code, stdout, errs := cli(t, "--sku", "h200", "--suite", "singlenode", "--launcher", "replay", "--replay-dir", replay,
			"--gpus-per-node", "2", "--test", "nccl.all_reduce", "--out", out)
		assert.Assert(t, code == 0 || code == 1, stdout+errs)
		run, err := journal.Read(out)
		assert.NilError(t, err)
		s, err := resultsdir.KeptBaseline(out, "h200")
		assert.NilError(t, err)
		return localise.Rederive(s, run.Tests[0], result.SubRun{Round: 1, Test: "nccl.all_reduce", Hosts: hosts, Dir: rel}, 0.1)
	}
	// Each group of runs is compared with the upper quartile of its
	// figures, as the localiser does.
	judged := func(runs ...result.SubRun) []result.SubRun {
		ref := localise.Reference(runs)
		for i := range runs {
			runs[i].Reference = ref
		}
		return runs
	}
	s, err := resultsdir.KeptBaseline(dir, "h200")
	assert.NilError(t, err)
	again := func(runs []result.SubRun) []result.SubRun {
		for i, r := range runs {
			run, err := journal.Read(filepath.Join(dir, r.Dir))
			assert.NilError(t, err)
			runs[i] = localise.Rederive(s, run.Tests[0], r, 0.1)
		}
		return runs
	}
	pairs := again(judged(sub(subRunRel, healthy, "vm", "vm2")))
	perNode := again(judged(sub("localise/nccl.all_reduce/per-node/vm", healthy, "vm"),
		sub("localise/nccl.all_reduce/per-node/vm2", "../../testdata/recordings/h200x2-2026-11-30-final/p2poff/raw", "vm2")))
	assert.Assert(t, !perNode[0].Slow && perNode[1].Slow, "%+v", perNode)
	loc := result.Localisation{Test: "nccl.all_reduce", Hosts: []string{"vm", "vm2"}, Reason: "asked", Strategy: "pairs", Tolerance: 0.1,
		Stages: []result.Stage{{Name: "per-node", Rounds: 1, Runs: perNode}, {Name: "pairs", Rounds: 1, Runs: pairs}},
		Suspects: []result.Suspect{{Kind: "node", Host: "vm2", Stage: "per-node", Reason: "slow on its own (single-node suite)",
			Evidence: []string{"per-node round 1, nccl.all_reduce on vm2: " + perNode[1].Why + " (localise/nccl.all_reduce/per-node/vm2)"}}}}
	line, err := json.Marshal(map[string]any{"localisation": loc})
	assert.NilError(t, err)
	f, err := os.OpenFile(filepath.Join(dir, layout.Journal), os.O_APPEND|os.O_WRONLY, 0)
	assert.NilError(t, err)
	_, err = f.Write(append(line, '\n'))
	assert.NilError(t, err)
	assert.NilError(t, f.Close())
	code, out, errs := cli(t, "report", dir)
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
	assert.NilError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(dir, layout.Results))), &run))
	assert.Equal(t, len(run.Localisations), 1)
	assert.Equal(t, run.Localisations[0].Suspects[0].Name(), "vm2")
	assert.Equal(t, run.Status, result.Fail)
	for f, w := range map[string]string{
		layout.JUnit:    `<testcase name="suspect vm2"`,
		layout.HTML:     `<a href="` + subRunRel + `/report.html">`,
		layout.Markdown: "| vm2     | node | per-node |",
		layout.Table:    "│ vm2     │ node │ per-node │",
	} {
		assert.Assert(t, strings.Contains(readFile(t, filepath.Join(dir, f)), w), "want %q in %s", w, f)
	}
	// The link leads to the sub-run's own report.
	assert.Assert(t, fileExists(filepath.Join(dir, subRunRel, layout.HTML)))
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
		// 26 files of the main run (20, hardware.json and 5 reports), 12 of
		// each of the 3 sub-runs (3 raw, baseline, journal, hardware.json, 5
		// reports, its own manifest).
		{"untouched", func(string) {}, 0, []string{"verify: OK: 62 files match the manifest; 6 tests re-judged against baseline/h200.yaml (built-in h200 baseline) give the recorded verdicts, as do the 3 runs of 1 localisation (run fail: FAIL: suspects named: vm2 (nccl.all_reduce))"}},
		// The forgeries of issue 29: the journal edited and every report
		// and the manifest made again by gpuaccept report. The suspects
		// and figures are re-derived from the runs' raw outputs.
		{"suspects emptied, everything made again", func(dir string) {
			forgeJournal(t, dir, `"suspects":\[\{.*?\}\]`, `"suspects":[]`)
		}, 1, []string{"REJUDGED localisation of nccl.all_reduce: the runs of its per-node stage name node vm2 a suspect, and the localisation names no such suspect"}},
		{"a run's figure edited, everything made again", func(dir string) {
			forgeFailed(t, dir, `("figure":)(2[0-9]\.[0-9]+)`, `${1}344.0`)
		}, 1, []string{"REJUDGED localisation of nccl.all_reduce: per-node round 1 on vm2: nccl.all_reduce recorded figure \"peak busbw\" 344 GB/s, re-derived \"peak busbw\" "}},
		{"a failed run made healthy, everything made again", func(dir string) {
			edit(t, filepath.Join(dir, layout.Journal), `"slow":true,"why":"[^"]*"`, `"slow":false`)
			forgeJournal(t, dir, `"suspects":\[\{.*?\}\]`, `"suspects":[]`)
		}, 1, []string{"REJUDGED localisation of nccl.all_reduce: per-node round 1 on vm2: nccl.all_reduce recorded slow false (), re-derived true (fail: "}},
		{"a run's folder outside the results folder, everything made again", func(dir string) {
			assert.NilError(t, os.CopyFS(filepath.Join(filepath.Dir(dir), "elsewhere"), os.DirFS(filepath.Join(dir, subRunRel))))
			assert.NilError(t, os.RemoveAll(filepath.Join(dir, subRunRel)))
			forgeFailed(t, dir, `"dir":"`+subRunRel+`"`, `"dir":"../elsewhere"`)
		}, 1, []string{`MISMATCH localisation of nccl.all_reduce: run "../elsewhere": not a folder under localise/ of the results folder`}},
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
			edit(t, filepath.Join(dir, layout.Journal), `"status":"pass","figure"`, `"status":"fail","figure"`)
		}, 1, []string{
			"MISMATCH journal.jsonl: edited since the run",
			"MISMATCH localisation of nccl.all_reduce: pairs round 1 on vm,vm2: recorded nccl.all_reduce fail, its journal (" + subRunRel + ") says pass",
		}},
		{"suspect edited in results.json", func(dir string) {
			edit(t, filepath.Join(dir, layout.Results), `"host": "vm2"`, `"host": "vm3"`)
		}, 1, []string{"MISMATCH results.json: localisations[nccl.all_reduce].suspects[node vm3] is not in the re-derived run",
			"MISMATCH results.json: localisations[nccl.all_reduce].suspects[node vm2] is missing, re-derived from raw/ and the journal: "}},
		{"sub-run report edited", func(dir string) {
			edit(t, filepath.Join(dir, subRunRel, layout.Table), `PASS`, `FAIL`)
		}, 1, []string{"MISMATCH " + subRunRel + "/table.txt: edited since the run",
			"MISMATCH " + subRunRel + "/table.txt: differs from the one re-rendered from the journal and the baseline copy, from line"}},
		{"sub-run metric in its results.json", func(dir string) {
			edit(t, filepath.Join(dir, subRunRel, layout.Results), `("value": )344\.031485`, "${1}144.031485")
		}, 1, []string{"MISMATCH " + subRunRel + "/results.json: tests[nccl.all_reduce].metrics[", "].value is 144.031485, re-derived from raw/ and the journal: 344.031485"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { verifyChanged(t, signed, c.change, c.code, c.want) })
	}
}

// forgeFailed is forgeJournal for a run that still fails (exit 1).
func forgeFailed(t *testing.T, dir, re, repl string) {
	t.Helper()
	edit(t, filepath.Join(dir, layout.Journal), re, repl)
	assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
	code, out, errs := cli(t, "report", dir)
	assert.Equal(t, code, 1, out+errs)
}
