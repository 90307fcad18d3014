package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/manifest"
)

// gpuaccept history end to end, through masking: two recorded runs of one
// H100 (healthy, then busy: both verify with this build) imported,
// imported again (skipped), listed by GPU serial (the latest of each
// series, or --all) and their drift printed; a bad --by is a usage error.
func TestHistoryCommand(t *testing.T) {
	rec := "../../testdata/recordings/h100x1-2026-12-07/issue30/"
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	code, out, errs := cli(t, "history", "import", rec+"node-4", rec+"busy-floor")
	assert.Equal(t, code, 0, errs)
	assert.Equal(t, strings.Count(out, "imported "), 2, out)
	code, out, errs = cli(t, "history", "import", rec+"node-4")
	assert.Equal(t, code, 0, errs)
	assert.Assert(t, strings.HasPrefix(out, "skipped "), out)

	for _, c := range []struct {
		all  []string
		want int
	}{{nil, 9}, {[]string{"--all"}, 18}} {
		code, out, errs = cli(t, append([]string{"history", "--by", "gpu", "--serial", "1651624103756", "--format", "json"}, c.all...)...)
		assert.Equal(t, code, 0, errs)
		assert.Equal(t, strings.Count(out, `"gpu_serial": "1651624103756"`), c.want, out)
	}

	code, out, errs = cli(t, "history", "drift", "--test", "gemm.matmul")
	assert.Equal(t, code, 0, errs)
	assert.Assert(t, strings.Contains(out, "GPU 1651624103756 on vm (h100): gemm.matmul tflops{dtype=bf16,mode=alone} 314.2 TFLOPS, -57% since its acceptance on 2026-12-07\n"), out)

	code, _, errs = cli(t, "history", "--by", "rack")
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(errs, `--by "rack"`), errs)
	code, _, errs = cli(t, "history", "import", filepath.Join(t.TempDir(), "none"))
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(errs, "none"), errs)
}

// A forged folder (a real run's copy, every value set to 99999 in
// results.json and journal.jsonl, manifest.json written again so that
// every file matches it) is refused by history import, as gpuaccept
// verify refuses it: nothing enters the store, and the error names the
// findings and points to gpuaccept verify.
func TestHistoryForged(t *testing.T) {
	src := "../../testdata/recordings/h100x1-2026-12-07/issue30/node-4"
	dir := filepath.Join(t.TempDir(), "node-4")
	assert.NilError(t, os.CopyFS(dir, os.DirFS(src)))
	value := regexp.MustCompile(`"value": ?[-0-9.e+]+`)
	for _, f := range []string{"results.json", "journal.jsonl"} {
		p := filepath.Join(dir, f)
		data, err := os.ReadFile(p)
		assert.NilError(t, err)
		forged := value.ReplaceAll(data, []byte(`"value":99999`))
		assert.Assert(t, !strings.EqualFold(string(forged), string(data)), "%s: no value to forge", f)
		assert.NilError(t, os.WriteFile(p, forged, 0o644))
	}
	m, err := manifest.Read(dir)
	assert.NilError(t, err)
	assert.NilError(t, os.Remove(filepath.Join(dir, "manifest.json")))
	_, err = manifest.Write(dir, m.Version, m.SKU)
	assert.NilError(t, err)

	t.Setenv("XDG_STATE_HOME", t.TempDir())
	code, out, errs := cli(t, "history", "import", dir)
	assert.Equal(t, code, 2, out)
	assert.Assert(t, !strings.Contains(out, "imported"), out)
	assert.Assert(t, strings.Contains(errs, "not imported: gpuaccept verify finds ") && strings.Contains(errs, "gpuaccept verify "+dir+" lists them"), errs)
	assert.Assert(t, strings.Contains(errs, "REJUDGED") || strings.Contains(errs, "MISMATCH"), errs)
	code, out, errs = cli(t, "history", "--all")
	assert.Equal(t, code, 0, errs)
	assert.Assert(t, strings.HasPrefix(out, "no point in history store"), out)
	code, _, _ = cli(t, "verify", dir)
	assert.Equal(t, code, 1, "gpuaccept verify fails the forgery too")
}

// A burn-in folder imports as its cycles, each verified; a cycle killed
// before it wrote anything is skipped. The cycles replay a real H100 node
// run (issue28/node-1).
func TestHistoryBurnIn(t *testing.T) {
	rec, err := filepath.Abs("../../testdata/recordings/h100x1-2026-12-07/issue28/node-1")
	assert.NilError(t, err)
	out := filepath.Join(t.TempDir(), "burnin")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	code, stdout, errs := cli(t, "run", "--sku", "h100", "--suite", "node", "--launcher", "replay", "--replay-dir", rec, "--gpus-per-node", "1", "--cycles", "2", "--out", out)
	assert.Equal(t, code, 0, "%s%s", stdout, errs)
	assert.NilError(t, os.Mkdir(filepath.Join(out, "cycle-0003"), 0o755))
	code, stdout, errs = cli(t, "history", "import", out)
	assert.Equal(t, code, 0, "%s%s", stdout, errs)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	assert.Equal(t, len(lines), 3, stdout)
	for i, want := range []string{"imported " + filepath.Join(out, "cycle-0001") + ": 9 points", "imported " + filepath.Join(out, "cycle-0002") + ": 9 points",
		"skipped " + filepath.Join(out, "cycle-0003") + ": a burn-in cycle killed before it wrote anything"} {
		assert.Assert(t, strings.HasPrefix(lines[i], want), lines[i])
	}
}
