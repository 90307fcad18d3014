package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"gotest.tools/v3/assert"
)

// A site file's secret env values reach every rank, so whatever a rank
// prints of them is masked like the process environment's: in raw outputs,
// the journal, every report and stdout. The rank is a stand-in python that
// prints its env, then the H200's real torchbench output.
func TestSiteSecretsMasked(t *testing.T) {
	const secret = "plainsecretvalue42"
	dir := t.TempDir()
	rec, err := filepath.Abs("../../testdata/recordings/h200x1-2026-12-01/node/node-1/raw/gemm.matmul/alone.log")
	assert.NilError(t, err)
	py := filepath.Join(dir, "python3")
	assert.NilError(t, os.WriteFile(py, []byte("#!/bin/sh\necho \"token is $MY_SERVICE_TOKEN\"\ncat "+rec+"\n"), 0o755))
	siteFile := filepath.Join(dir, "site.yaml")
	assert.NilError(t, os.WriteFile(siteFile, []byte("site: lab\nenv:\n  MY_SERVICE_TOKEN: "+secret+"\n"), 0o644))
	out := filepath.Join(dir, "out")
	code, stdout, stderr := cli(t, "--sku", "h200", "--suite", "node", "--test", "gemm.matmul", "--launcher", "local", "--gpus-per-node", "1",
		"--site", siteFile, "--param", "gemm:python="+py, "--out", out)
	assert.Equal(t, code, 0, stdout+stderr)
	assert.Assert(t, !strings.Contains(stdout+stderr, secret), stdout+stderr)
	n := 0
	assert.NilError(t, filepath.Walk(out, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		assert.NilError(t, err)
		assert.Assert(t, !strings.Contains(string(data), secret), "%s holds the site's secret", p)
		n++
		return nil
	}))
	log, err := os.ReadFile(filepath.Join(out, layout.Raw, "gemm.matmul", "alone.log"))
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(string(log), "token is "), "the rank ran with the site env: %s", log)
	assert.Assert(t, n > 5, "files checked: %d", n)
}
