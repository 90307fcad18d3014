package resultsdir

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// The layout a results folder may hold (issue 29, F3): what the runner,
// the launchers, check and localise write, and nothing else; look-alikes
// of its names are named with the name they read as.
func TestStrays(t *testing.T) {
	root := t.TempDir()
	write := func(rel, data string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		assert.NilError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	// How the steps of nccl.all_reduce ended, as the runner records them
	// (paths relative to the raw folder).
	outputs := `[{"step":"all_reduce","exit_code":0,"log":"all_reduce.log","files":{"all_reduce.json":"all_reduce.files/all_reduce.json"}}]`
	write("raw/nccl.all_reduce/outputs.json", outputs)
	write("raw/nccl.all_reduce.attempt-1/outputs.json", outputs)
	write("localise/nccl.all_reduce/pairs/vm-vm2-r1/raw/nccl.all_reduce/outputs.json", outputs)
	test := func(folder string) result.Test {
		return result.Test{Name: "nccl.all_reduce", Status: result.Pass,
			Raw: []string{"raw/" + folder + "/all_reduce.files/all_reduce.json", "raw/" + folder + "/all_reduce.log"}}
	}
	main := test("nccl.all_reduce")
	main.Attempts = []result.Test{test("nccl.all_reduce.attempt-1")}
	runs := map[string]*result.Run{
		"": {SKU: "h200", Launcher: "slurm", Tests: []result.Test{main}},
		"localise/nccl.all_reduce/pairs/vm-vm2-r1": {SKU: "h200", Launcher: "local", Tests: []result.Test{test("nccl.all_reduce")}},
		"localise/nccl.all_reduce/per-node/vm2":    nil, // its journal could not be read
	}
	defined := []string{
		layout.Journal, layout.Results, layout.JUnit, layout.HTML, layout.Markdown, layout.Table, "baseline/h200.yaml",
		"raw/nccl.all_reduce/all_reduce.log", "raw/nccl.all_reduce/all_reduce.files/all_reduce.json", "raw/nccl.all_reduce/outputs.json",
		"raw/nccl.all_reduce/slurm-job.sh", "raw/nccl.all_reduce/slurm-job.out", "raw/nccl.all_reduce/all_reduce.ranks",
		"raw/nccl.all_reduce.attempt-1/all_reduce.log", "raw/nccl.all_reduce.attempt-1/outputs.json", "raw/nccl.all_reduce.attempt-1/all_reduce.files/all_reduce.json",
		"localise/nccl.all_reduce/pairs/vm-vm2-r1/manifest.json", "localise/nccl.all_reduce/pairs/vm-vm2-r1/journal.jsonl",
		"localise/nccl.all_reduce/pairs/vm-vm2-r1/baseline/h200.yaml", "localise/nccl.all_reduce/pairs/vm-vm2-r1/table.txt",
		"localise/nccl.all_reduce/pairs/vm-vm2-r1/raw/nccl.all_reduce/all_reduce.log",
		// Named elsewhere as a whole: a raw folder no test claims, a run
		// whose journal could not be read.
		"raw/nccl.sendrecv/sendrecv.log", "localise/nccl.all_reduce/per-node/vm2/anything",
	}
	for _, f := range defined {
		t.Run(f, func(t *testing.T) {
			assert.DeepEqual(t, Strays(root, []string{f}, runs), []Stray(nil))
		})
	}
	strays := []Stray{
		{Path: "Report.html", LooksLike: layout.HTML},
		{Path: "results.json\u200b", LooksLike: layout.Results},
		{Path: "ｒｅｓｕｌｔｓ.json", LooksLike: layout.Results},
		{Path: "raw/nccl.all_reduce/ALL_REDUCE.log", LooksLike: "raw/nccl.all_reduce/all_reduce.log"},
		{Path: "extra/results.json", LooksLike: ""},
		{Path: "SIGNED-OFF-PASS.txt", LooksLike: ""},
		{Path: layout.Manifest, LooksLike: ""},
		{Path: "baseline/h100.yaml", LooksLike: ""},
		{Path: "raw/nccl.all_reduce/all_reduce.log.orig", LooksLike: ""},
		{Path: "localise/nccl.all_reduce/pairs/vm-vm2-r1/raw/nccl.all_reduce/slurm-job.sh", LooksLike: ""}, // launcher local
		{Path: "localise/nccl.all_reduce/pairs/other/journal.jsonl", LooksLike: ""},
	}
	// Two raw outputs the journal names that look alike: the one that
	// sorts after is named.
	twins := *runs[""]
	twins.Tests = []result.Test{{Name: "nccl.all_reduce", Status: result.Pass, Raw: []string{"raw/nccl.all_reduce/A.log", "raw/nccl.all_reduce/a.log"}}}
	assert.DeepEqual(t, Strays(root, []string{"raw/nccl.all_reduce/A.log", "raw/nccl.all_reduce/a.log"}, map[string]*result.Run{"": &twins}),
		[]Stray{{Path: "raw/nccl.all_reduce/a.log", LooksLike: "raw/nccl.all_reduce/A.log", Defined: true}})
	for _, s := range strays {
		t.Run(s.Path, func(t *testing.T) {
			assert.DeepEqual(t, Strays(root, []string{s.Path}, runs), []Stray{s})
		})
	}
}

func TestFold(t *testing.T) {
	for in, want := range map[string]string{
		"Report.html":             layout.HTML,
		"results.json\u200b":      layout.Results,
		"ｒｅｓｕｌｔｓ.json":            layout.Results,
		"sum\u00admary.md":        layout.Markdown,
		"table\u202e.txt":         layout.Table,
		"raw/nccl.all_reduce/x.y": "raw/nccl.all_reduce/x.y",
	} {
		assert.Equal(t, Fold(in), want, in)
	}
}
