package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// The site's inference SKU of the field corpus (vLLM's serving figures
// declared, its golden entries the run in vLLM's docs) and that run's
// output: a stand-in command prints it as vllm bench serve did.
const (
	inferenceSKU = "../../testdata/field/skus/inference-site.yaml"
	vllmDocsLog  = "../../testdata/field/workload/vllm-docs-hermes3-8b-sharegpt/bench-serve.log"
)

// workloadRun runs suite inference of the SKU in dir on this host with
// command standing in for the benchmark, and returns the exit code, the
// output and the results' test.
func workloadRun(t *testing.T, baselines, command string) (int, string, workloadTest) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := cli(t, "run", "--baselines", baselines, "--sku", "inference-site", "--suite", "inference", "--launcher", "local",
		"--nodes", "1", "--gpus-per-node", "1", "--param", "workload.command:command="+command, "--out", out)
	var res struct{ Tests []workloadTest }
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	assert.NilError(t, err, stdout+stderr)
	assert.NilError(t, json.Unmarshal(data, &res))
	assert.Equal(t, len(res.Tests), 1)
	res.Tests[0].dir = out
	return code, stdout + stderr, res.Tests[0]
}

type workloadTest struct {
	Name, Status, Message string
	Metrics               []struct {
		Name, Unit, Status string
		Value              float64
	}
	Meanings []struct{ Name, Unit, Better string }
	dir      string
}

func (w workloadTest) value(name string) float64 {
	for _, m := range w.Metrics {
		if m.Name == name {
			return m.Value
		}
	}
	return -1
}

// A site's own benchmark, its metrics declared in its SKU file, judged
// the whole way: run on this host (a stand-in prints the real vLLM
// output), pass on the site's bands; the same output 25% slower with a
// TTFT 50% longer fails on both sides; a command that fails or is not
// there is an error; verify re-derives the run; baseline record records
// the rates (not the time, better lower) from it, and the recorded file
// judges the slow output as failed.
func TestWorkloadCommandJudgedAndRecorded(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(inferenceSKU)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "inference-site.yaml"), data, 0o644))
	logPath, err := filepath.Abs(vllmDocsLog)
	assert.NilError(t, err)

	code, out, got := workloadRun(t, dir, "cat "+logPath)
	assert.Equal(t, code, 0, out)
	assert.Equal(t, got.Status, "pass", got.Message)
	assert.Equal(t, got.Message, "3 points inside their bands; not judged, no baseline entry at scope 1x1: total_tokens_per_s")
	assert.Equal(t, got.value("request_throughput"), 1.73)
	assert.Equal(t, got.value("mean_ttft"), 71.54)
	assert.Equal(t, len(got.Meanings), 4)
	assert.Equal(t, got.Meanings[3].Better, "lower")
	vcode, vout, verrs := cli(t, "verify", got.dir)
	assert.Equal(t, vcode, 0, vout+verrs)
	// check hands the plugin the same declarations, and keeps them for
	// verify to read the kept output the same way.
	checked := filepath.Join(t.TempDir(), "check")
	ccode, cout, cerrs := cli(t, "check", "--baselines", dir, "--sku", "inference-site", "--test", "workload.command", "--nodes", "1", "--gpus-per-node", "1", "--out", checked, logPath)
	assert.Equal(t, ccode, 0, cout+cerrs)
	vcode, vout, verrs = cli(t, "verify", checked)
	assert.Equal(t, vcode, 0, vout+verrs)

	// The real output with its rates at 75% and its times at 150%.
	slow := readFile(t, logPath)
	for _, e := range [][2]string{{"1.73\n", "1.30\n"}, {"382.89\n", "287.17\n"}, {"619.85\n", "464.89\n"}, {"71.54\n", "107.31\n"}} {
		assert.Assert(t, strings.Contains(slow, e[0]))
		slow = strings.Replace(slow, e[0], e[1], 1)
	}
	slowPath := filepath.Join(t.TempDir(), "bench-serve.log")
	assert.NilError(t, os.WriteFile(slowPath, []byte(slow), 0o644))
	code, out, got = workloadRun(t, dir, "cat "+slowPath)
	assert.Equal(t, code, 1, out)
	assert.Equal(t, got.Status, "fail")
	for _, want := range []string{"request_throughput 1.3 req/s below 1.6 (baseline 1.7 -10%)", "mean_ttft 107.3 ms above 85.8 (baseline 71.5 +20%)"} {
		assert.Assert(t, strings.Contains(got.Message, want), "%q lacks %q", got.Message, want)
	}

	for _, c := range []struct{ command, want string }{
		{"cat " + logPath + "; exit 3", "step command: the command exited with status 3"},
		{"/nonexistent/vllm bench serve", "step command: the command exited with status 127; metric request_throughput: pattern"},
	} {
		code, out, got = workloadRun(t, dir, c.command)
		assert.Equal(t, code, 3, out)
		assert.Equal(t, got.Status, "error")
		assert.Assert(t, strings.Contains(got.Message, c.want), "%q lacks %q", got.Message, c.want)
	}

	// What the plugin reads is the SKU file's, never a parameter's.
	code, stdout, stderr := cli(t, "run", "--baselines", dir, "--sku", "inference-site", "--suite", "inference", "--launcher", "local",
		"--nodes", "1", "--gpus-per-node", "1", "--dry-run", "--param", "workload.command:metrics=[]")
	assert.Equal(t, code, 2, stdout+stderr)
	assert.Assert(t, strings.Contains(stderr, "--param workload.command:metrics (or the site file's params): the metrics a test reports are declared in the SKU file"), stderr)

	// Record from the good run into a copy of the file: the rates get
	// entries of their own, the time keeps its hand-written one.
	_, _, good := workloadRun(t, dir, "cat "+logPath)
	recorded := filepath.Join(t.TempDir(), "inference-site.yaml")
	rcode, rout, rerrs := cli(t, "baseline", "record", "--baselines", dir, "--sku", "inference-site", "--out", recorded, good.dir)
	assert.Equal(t, rcode, 0, rout+rerrs)
	text := readFile(t, recorded)
	for _, want := range []string{"metric: request_throughput", "metric: output_tokens_per_s", "metric: total_tokens_per_s", "value: 619.85", "metric: mean_ttft"} {
		assert.Assert(t, strings.Contains(text, want), "recorded file lacks %q:\n%s", want, text)
	}
	assert.Equal(t, strings.Count(text, "metric: mean_ttft"), 1, text)
	ccode, cout, cerrs = cli(t, "check", "--baselines", filepath.Dir(recorded), "--sku", "inference-site", "--test", "workload.command", "--nodes", "1", "--gpus-per-node", "1", "--format", "json", slowPath)
	assert.Equal(t, ccode, 1, cout+cerrs)
	assert.Assert(t, strings.Contains(cout, "total_tokens_per_s 464.9 tok/s below 557.9 (baseline 619.9 -10%)"), cout)
}

// README.md's example of a site's own benchmark is a file that validates
// and judges the real vLLM output it was written from: it passes.
func TestWorkloadReadmeExample(t *testing.T) {
	readme := readFile(t, "../../README.md")
	i := strings.Index(readme, "### Your own benchmark")
	assert.Assert(t, i >= 0)
	j := strings.Index(readme[i:], "```yaml\n")
	assert.Assert(t, j >= 0)
	block := readme[i+j+len("```yaml\n"):]
	block = block[:strings.Index(block, "```")]
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "mysite.yaml"), []byte(block), 0o644))
	code, out, errs := cli(t, "check", "--baselines", dir, "--sku", "mysite", "--test", "workload.command", "--nodes", "1", "--gpus-per-node", "1", "--format", "json", vllmDocsLog)
	assert.Equal(t, code, 0, out+errs)
	assert.Assert(t, strings.Contains(out, `"message": "2 points inside their bands; not judged, no baseline entry at scope 1x1: output_tokens_per_s"`), out)
}

// A declaration that will not do stops every command using the file
// before anything runs, naming the file, the line and the field: exit 2.
func TestWorkloadBadDeclarationExits2(t *testing.T) {
	data := readFile(t, inferenceSKU)
	const good = `pattern: 'Mean TTFT \(ms\):\s+(\S+)'`
	assert.Assert(t, strings.Contains(data, good))
	dir := t.TempDir()
	bad := filepath.Join(dir, "inference-site.yaml")
	assert.NilError(t, os.WriteFile(bad, []byte(strings.Replace(data, good, `pattern: 'Mean TTFT \(ms\):\s+\S+'`, 1)), 0o644))
	line := 1 + strings.Count(data[:strings.Index(data, good)], "\n")
	want := fmt.Sprintf(`%s: line %d: field metrics.pattern: "Mean TTFT \\(ms\\):\\s+\\S+" has 0 unnamed capture groups: want exactly one, the value`, bad, line)
	for _, args := range [][]string{
		{"baseline", "validate", "--baselines", dir},
		{"check", "--baselines", dir, "--sku", "inference-site", "--test", "workload.command", "--nodes", "1", "--gpus-per-node", "1", vllmDocsLog},
		{"run", "--baselines", dir, "--sku", "inference-site", "--suite", "inference", "--launcher", "local", "--nodes", "1", "--gpus-per-node", "1", "--dry-run"},
	} {
		code, out, errs := cli(t, args...)
		assert.Equal(t, code, 2, "%v: %s", args, out+errs)
		assert.Assert(t, strings.Contains(out+errs, want), "%v: %s", args, out+errs)
	}
}
