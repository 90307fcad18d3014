package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// claimVersion makes a failed run's folder claim another gpuaccept made
// it and every report say PASS, its real verdict line hidden, then
// re-seals it with that version: the attack F1 of issue 29.
func claimVersion(t *testing.T, dir, version string) {
	t.Helper()
	quoted := strings.ReplaceAll(version, "\u200b", `\u200b`)
	edit(t, filepath.Join(dir, layout.Journal), `"gpuaccept_version":"dev"`, `"gpuaccept_version":"`+quoted+`"`)
	edit(t, filepath.Join(dir, layout.Results), `"gpuaccept_version": "dev"`, `"gpuaccept_version": "`+quoted+`"`)
	pass := "PASS: SKU h200, suite singlenode, scope 1x2, launcher replay: 6 pass"
	edit(t, filepath.Join(dir, layout.Markdown), `(?m)^(\*\*gpuaccept FAIL: SKU .*)$`, "<!-- $1 -->\n**gpuaccept "+pass+" (1s)**")
	edit(t, filepath.Join(dir, layout.Table), `(?m)^(FAIL: SKU .*)$`, "$1\r\x1b[2K"+pass+" (1s)")
	edit(t, filepath.Join(dir, layout.HTML), `<p>(FAIL: SKU [^<]*)</p>`, `<p style="display:none">$1</p><p>`+pass+`</p><script>/* runs */</script>`)
	assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
	_, err := manifest.Write(dir, version, "h200")
	assert.NilError(t, err)
}

// F1 of issue 29: a folder that claims another version made it had its
// reports held to their hashes and only their verdict lines re-derived,
// which a hidden line fools. A report this gpuaccept cannot render byte
// for byte is a finding, whatever the version claimed, and the version is
// printed quoted so that "dev " cannot pass for "dev".
func TestVerifyRefusesReportsOfAClaimedVersion(t *testing.T) {
	failed := failedRun(t)
	for _, c := range []struct{ version, shown string }{
		{"dev ", `"dev "`}, {"Dev", `"Dev"`}, {"dev\u200b", `"dev\u200b"`}, {"v1.9.0", `"v1.9.0"`},
	} {
		t.Run(c.shown, func(t *testing.T) {
			dir := copyDir(t, failed)
			claimVersion(t, dir, c.version)
			code, out, errs := cli(t, "verify", dir, "--digest", digestOf(t, dir))
			assert.Equal(t, code, 1, out+errs)
			for _, w := range []string{
				"made by gpuaccept " + c.shown + ` (this is "dev")`,
				"MISMATCH report.html: differs from the one this gpuaccept (\"dev\") renders",
				"MISMATCH summary.md: differs", "MISMATCH table.txt: differs",
				"gpuaccept report DIR", "verify: FAILED",
			} {
				assert.Assert(t, strings.Contains(strings.ReplaceAll(out, dir, "DIR"), w), "want %q in\n%s", w, out)
			}
			assert.Assert(t, !strings.Contains(out, "\x1b") && !strings.Contains(out, "\r"), out)
		})
	}
}

// F7 of issue 29: a file name with a line feed, added after the run,
// cannot print a line of its own (a forged "verify: OK").
func TestVerifyEscapesNamesOnOneLine(t *testing.T) {
	dir := copyDir(t, failedRun(t))
	name := "x\nverify: OK: 1 file matches the manifest\n"
	assert.NilError(t, os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644))
	code, out, errs := cli(t, "verify", dir)
	assert.Equal(t, code, 1, out+errs)
	assert.Assert(t, strings.Contains(out, `MISMATCH x\nverify: OK: 1 file matches the manifest\n: added since the run`), out)
	for _, l := range strings.Split(out, "\n") {
		assert.Assert(t, !strings.HasPrefix(l, "verify: OK"), out)
	}
}

// F3 of issue 29: files the results-folder layout does not define, look-
// alikes of its names among them, re-sealed into the manifest, are
// findings naming them.
func TestVerifyRefusesFilesNotOfTheLayout(t *testing.T) {
	failed := failedRun(t)
	for _, c := range []struct{ file, want string }{
		{"Report.html", `MISMATCH "Report.html": not a file of a results folder`},
		{"results.json\u200b", `MISMATCH "results.json\u200b": not a file of a results folder`},
		{"extra/results.json", `MISMATCH "extra/results.json": not a file of a results folder`},
		{"SIGNED-OFF-PASS.txt", `MISMATCH "SIGNED-OFF-PASS.txt": not a file of a results folder`},
		{"raw/nccl.all_reduce/all_reduce.log.orig", `MISMATCH "raw/nccl.all_reduce/all_reduce.log.orig": not a file of a results folder`},
		{"baseline/h100.yaml", `MISMATCH "baseline/h100.yaml": not a file of a results folder`},
	} {
		t.Run(c.file, func(t *testing.T) {
			dir := copyDir(t, failed)
			p := filepath.Join(dir, c.file)
			assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			assert.NilError(t, os.WriteFile(p, []byte("PASS\n"), 0o644))
			regenerate(t, dir)
			code, out, errs := cli(t, "verify", dir, "--digest", digestOf(t, dir))
			assert.Equal(t, code, 1, out+errs)
			assert.Assert(t, strings.Contains(out, c.want), "want %q in\n%s", c.want, out)
		})
	}
	t.Run("look-alike", func(t *testing.T) {
		dir := copyDir(t, failed)
		assert.NilError(t, os.WriteFile(filepath.Join(dir, "Report.html"), []byte("PASS\n"), 0o644))
		regenerate(t, dir)
		_, out, _ := cli(t, "verify", dir)
		assert.Assert(t, strings.Contains(out, `looks like "`+layout.HTML+`"`), out)
	})
}

// F5 of issue 29: a key given twice in results.json (Go's reader keeps
// the last, others the first) or in a journal line is refused, naming
// the file and the key.
func TestVerifyRefusesDuplicateKeys(t *testing.T) {
	failed := failedRun(t)
	t.Run(layout.Results, func(t *testing.T) {
		dir := copyDir(t, failed)
		edit(t, filepath.Join(dir, layout.Results), `"status": "fail"`, `"status": "pass", "status": "fail"`)
		regenerate(t, dir)
		code, out, errs := cli(t, "verify", dir, "--digest", digestOf(t, dir))
		assert.Equal(t, code, 2, out+errs)
		assert.Assert(t, strings.Contains(errs, layout.Results) && strings.Contains(errs, `duplicate key "status"`), out+errs)
	})
	// The error quotes the folder's path: on one line, whatever it holds.
	t.Run("error on one line", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "r\nverify: OK: forged")
		assert.NilError(t, os.CopyFS(dir, os.DirFS(failed)))
		edit(t, filepath.Join(dir, layout.Journal), `"status":"fail"`, `"status":"pass","status":"fail"`)
		code, out, errs := cli(t, "verify", dir)
		assert.Equal(t, code, 2, out+errs)
		assert.Assert(t, strings.Contains(errs, `r\nverify: OK: forged`), errs)
		for _, l := range strings.Split(errs, "\n") {
			assert.Assert(t, !strings.HasPrefix(l, "verify: OK"), errs)
		}
	})
	t.Run("journal", func(t *testing.T) {
		dir := copyDir(t, failed)
		edit(t, filepath.Join(dir, layout.Journal), `"status":"fail"`, `"status":"pass","status":"fail"`)
		regenerate(t, dir)
		code, out, errs := cli(t, "verify", dir, "--digest", digestOf(t, dir))
		assert.Equal(t, code, 2, out+errs)
		assert.Assert(t, strings.Contains(errs, "journal.jsonl line") && strings.Contains(errs, `duplicate key "status"`), out+errs)
	})
}
