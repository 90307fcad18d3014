package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
)

// The conventions people expect of a command line (issue 22).
func TestConventions(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string // a piece of stdout ("" for none)
		stderr string
	}{
		{"--version as version", []string{"--version"}, 0, "gpuaccept ", ""},
		{"version", []string{"version"}, 0, "gpuaccept ", ""},
		{"no arguments: usage", nil, 2, "", "Usage:\n  gpuaccept [run] --sku SKU"},
		{"list suites --sku filters", []string{"list", "suites", "--sku", "mi355x"}, 0, "mi355x  multinode", ""},
		{"list suites --sku unknown", []string{"list", "suites", "--sku", "h999"}, 2, "", `unknown SKU "h999"`},
		{"list skus --format yaml", []string{"list", "skus", "--format", "yaml"}, 2, "", `list: unknown --format "yaml" (known: table, json)`},
		{"list tests --sku", []string{"list", "tests", "--sku", "h200"}, 2, "", "list tests does not take --sku (it takes: --plugin-path, --format)"},
		{"list launchers --baselines", []string{"list", "launchers", "--baselines", "."}, 2, "", "list launchers does not take --baselines (it takes: --format)"},
		{"demo --sku", []string{"demo", "--sku", "mi355x"}, 2, "", "unknown flag: --sku"},
		{"baseline show --junit", []string{"baseline", "show", "h200", "--junit", "x.xml"}, 2, "", "unknown flag: --junit"},
		{"baseline validate --format", []string{"baseline", "validate", "--format", "json"}, 2, "", "unknown flag: --format"},
		{"--test without its plugin", []string{"check", "--sku", "h200", "--test", "all_reduce", "--nodes", "1", "--gpus-per-node", "2", "x.log"}, 2, "",
			`unknown test "all_reduce": a test is named PLUGIN.TEST (gpuaccept list tests); did you mean nccl.all_reduce or rccl.all_reduce?`},
		{"--test mistyped", []string{"check", "--sku", "h200", "--test", "nccl.allreduce", "--nodes", "1", "--gpus-per-node", "2", "x.log"}, 2, "",
			`unknown test "nccl.allreduce": plugin nccl has no test "allreduce"; did you mean nccl.all_reduce? (known: nccl.all_reduce,`},
		{"--hosts slots that are not used", []string{"--sku", "h200", "--suite", "multinode", "--launcher", "ssh", "--hosts", "node1:8,node2:4", "--dry-run"}, 4,
			"--host node1:8,node2:8", "note: the slots given (node2:4) are not used: every node runs 8 GPUs (SKU h200's GPUs per node)"},
		{"run --test not in the suite", []string{"--sku", "h200", "--suite", "singlenode", "--test", "all_reduce", "--dry-run"}, 2, "",
			"--test all_reduce: not a test of suite singlenode; did you mean nccl.all_reduce? (its tests: nccl.all_reduce,"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := cli(t, c.args...)
			assert.Equal(t, code, c.code, out+errs)
			assert.Assert(t, strings.Contains(out, c.stdout), "stdout:\n%s", out)
			assert.Assert(t, strings.Contains(errs, c.stderr), "stderr:\n%s", errs)
		})
	}
}

// Slots equal to the GPUs per node used need no note.
func TestHostsSlotsNoteOnlyWhenIgnored(t *testing.T) {
	_, out, errs := cli(t, "--sku", "h200", "--suite", "multinode", "--launcher", "ssh", "--hosts", "node1:4,node2:4", "--gpus-per-node", "4", "--dry-run")
	assert.Assert(t, strings.Contains(out, "--host node1:4,node2:4"), out)
	assert.Assert(t, !strings.Contains(errs, "slots given"), errs)
}

// list --help shows the flags list takes, and none of the report flags.
func TestListHelpShowsItsFlags(t *testing.T) {
	code, _, errs := cli(t, "list", "--help")
	assert.Equal(t, code, 0)
	for _, f := range []string{"--sku", "--baselines", "--plugin-path", "--format"} {
		assert.Assert(t, strings.Contains(errs, f), "list --help lacks %s:\n%s", f, errs)
	}
	for _, f := range []string{"--junit", "--html", "--out"} {
		assert.Assert(t, !strings.Contains(errs, f), "list --help offers %s, which list ignores:\n%s", f, errs)
	}
}

// demo --format json prints JSON documents only on stdout: one per demo
// run, banners and the closing line on stderr.
func TestDemoJSONIsJSON(t *testing.T) {
	code, out, errs := cli(t, "demo", "--format", "json")
	assert.Equal(t, code, 0, errs)
	dec := json.NewDecoder(strings.NewReader(out))
	var statuses []string
	for dec.More() {
		var doc struct{ Status string }
		assert.NilError(t, dec.Decode(&doc), "stdout is not JSON documents:\n%s", out)
		statuses = append(statuses, doc.Status)
	}
	assert.DeepEqual(t, statuses, []string{"pass", "fail"})
	assert.Assert(t, strings.Contains(errs, "== healthy"), errs)
	assert.Assert(t, strings.Contains(errs, "demo: every verdict came out as expected"), errs)
}

// Ctrl-C on demo exits 130, as on run (README, Exit codes), not 1.
func TestDemoInterruptedExits130(t *testing.T) {
	old := cliopts.SignalContext
	defer func() { cliopts.SignalContext = old }()
	cliopts.SignalContext = func() (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // Ctrl-C before the first test ends
		return ctx, cancel
	}
	code, out, errs := cli(t, "demo")
	assert.Equal(t, code, exitInterrupted, out+errs)
	assert.Assert(t, strings.Contains(errs, "interrupted"), errs)
}

// baseline show wraps each entry's source to the terminal's width; only a
// word longer than a line (a path, a command's argument) may pass it.
func TestBaselineShowWrapsSources(t *testing.T) {
	code, out, errs := cli(t, "baseline", "show", "h200")
	assert.Equal(t, code, 0, errs)
	_, sources, ok := strings.Cut(out, "\nSources:\n")
	assert.Assert(t, ok, out)
	lines := strings.Split(strings.TrimSuffix(sources, "\n"), "\n")
	assert.Assert(t, len(lines) > 12, "the 12 entries' sources, wrapped: %d lines", len(lines))
	for _, l := range lines {
		if len(l) > sku.ShowWidth {
			assert.Assert(t, !strings.Contains(strings.TrimSpace(l), " "), "a line of %d bytes that could be wrapped: %q", len(l), l)
		}
	}
	assert.Assert(t, strings.HasPrefix(lines[0], "  nccl.all_reduce 1x2 busbw placement=out-of-place: median of 8 runs"), lines[0])
	assert.Assert(t, strings.HasPrefix(lines[1], "      "), "a continuation is indented: %q", lines[1])
}

// --baselines names a folder: a file and a path that is not there each get
// their own error, not "no SKU files in".
func TestBaselinesFlagErrors(t *testing.T) {
	file := "../../baselines/h200.yaml"
	for _, c := range []struct{ args []string }{
		{[]string{"list", "skus"}},
		{[]string{"baseline", "validate"}},
		{[]string{"baseline", "show", "h200"}},
		{[]string{"check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", healthy + "/nccl.all_reduce/all_reduce.log"}},
	} {
		for _, b := range []struct{ dir, want string }{
			{file, "--baselines ../../baselines/h200.yaml is a file: give the folder that holds it (--baselines ../../baselines)"},
			{"/nonexistent", "--baselines /nonexistent: no such folder"},
		} {
			t.Run(strings.Join(c.args, " ")+" "+b.dir, func(t *testing.T) {
				code, out, errs := cli(t, append(c.args, "--baselines", b.dir)...)
				assert.Equal(t, code, 2, out+errs)
				assert.Assert(t, strings.Contains(errs, b.want), errs)
				assert.Assert(t, !strings.Contains(errs, "no SKU files"), errs)
			})
		}
	}
}

// baseline validate rejects what a run rejects in the kubernetes section
// (the k8s launcher's check, at the line of the field at fault), and
// names every problem; the run names the same ones.
func TestBaselineValidateKubernetes(t *testing.T) {
	data := readFile(t, "../../baselines/a100-ndmv4.yaml")
	lines := strings.Split(data, "\n")
	// Edits: two values of the section that are not Kubernetes quantities.
	edit := map[string]string{`  gpu_resource: nvidia.com/gpu`: `  gpu_resource: nvidia.com/gpu/x`, "  shm_size: 8Gi": "  shm_size: 64GB"}
	var want []string
	for i, l := range lines {
		for from, to := range edit {
			if strings.HasPrefix(l, from) {
				lines[i] = to + strings.TrimPrefix(l, from)
				field := "kubernetes.gpu_resource"
				if strings.Contains(to, "shm") {
					field = "kubernetes.shm_size"
				}
				want = append(want, fmt.Sprintf("a100-ndmv4.yaml: line %d: field %s: ", i+1, field))
			}
		}
	}
	assert.Equal(t, len(want), 2, "both edits made")
	file := writeFile(t, "a100-ndmv4.yaml", strings.Join(lines, "\n"))
	dir := filepath.Dir(file)

	code, out, errs := cli(t, "baseline", "validate", file)
	assert.Equal(t, code, 2, out+errs)
	for _, w := range want {
		assert.Assert(t, strings.Contains(out, "BAD "+filepath.Join(dir, w)), "validate lacks %q:\n%s", w, out)
	}
	assert.Assert(t, strings.Contains(out, `"64GB" is not a quantity`), out)

	code, out, errs = cli(t, "--sku", "a100-ndmv4", "--suite", "multinode", "--launcher", "k8s", "--baselines", dir, "--image", "example.org/nccl-tests:1", "--dry-run")
	assert.Equal(t, code, 2, out+errs)
	for _, w := range want {
		assert.Assert(t, strings.Contains(errs, w), "the run lacks %q:\n%s", w, errs)
	}
}

// baseline record: a mistyped test is an unknown test (with what it could
// have meant), a result read from -J JSON quotes no "line 0", and the
// header and the summary count runs alike: the logs of one results
// folder's raw/ are one run, two logs of one test in one folder two.
func TestBaselineRecordMessages(t *testing.T) {
	const final = "../../testdata/recordings/h200x2-2026-11-30-final/single/raw/"
	const direct = "../../testdata/recordings/h200x2-2026-11-30/direct-1/"
	record := func(args ...string) (int, string, string) {
		return cli(t, append([]string{"baseline", "record", "--sku", "h200", "--nodes", "1", "--gpus-per-node", "2"}, args...)...)
	}
	code, _, errs := record("nccl.allreduce=" + direct + "all_reduce.log")
	assert.Equal(t, code, 2, errs)
	assert.Assert(t, strings.Contains(errs, `unknown test "nccl.allreduce": plugin nccl has no test "allreduce"; did you mean nccl.all_reduce?`), errs)
	assert.Assert(t, !strings.Contains(errs, "ended in error"), errs)

	// The all_reduce log (and its -J JSON beside it) given as all_gather's.
	code, _, errs = record("nccl.all_gather=" + direct + "all_reduce.log")
	assert.Equal(t, code, 2, errs)
	assert.Assert(t, strings.Contains(errs, `result rows have redop "sum"`), errs)
	assert.Assert(t, !strings.Contains(errs, "(line 0)"), errs)

	for _, c := range []struct {
		name   string
		args   []string
		header string
		sum    string
	}{
		{"two tests of one results folder", []string{"nccl.all_reduce=" + final + "nccl.all_reduce/all_reduce.log", "nccl.all_gather=" + final + "nccl.all_gather/all_gather.log"},
			"from 1 run of nccl.all_gather at 1x2, nccl.all_reduce at 1x2", "from 1 run of 2 tests"},
		{"two tests of one folder", []string{"nccl.all_reduce=" + direct + "all_reduce.log", "nccl.all_gather=" + direct + "all_gather.log"},
			"from 1 run of", "from 1 run of 2 tests"},
		{"one test of two folders", []string{"nccl.all_reduce=" + direct + "all_reduce.log", "nccl.all_reduce=" + final + "nccl.all_reduce/all_reduce.log"},
			"from 2 runs of nccl.all_reduce at 1x2", "from 2 runs of 1 test"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := record(c.args...)
			assert.Equal(t, code, 0, errs)
			assert.Assert(t, strings.Contains(out, "# Recorded "), out)
			head := strings.Join(strings.SplitN(out, "\n", 3)[:2], "\n") // the block's first line and "# Recorded ..."
			assert.Assert(t, strings.Contains(head, c.header), head)
			assert.Assert(t, strings.Contains(errs, c.sum), errs)
		})
	}
	// Two logs of one test in one folder: two runs, each its file.
	dir := t.TempDir()
	for i, src := range []string{direct + "all_reduce.log", final + "nccl.all_reduce/all_reduce.log"} {
		assert.NilError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("r%d.log", i+1)), []byte(readFile(t, src)), 0o644))
	}
	code, out, errs := record("nccl.all_reduce="+filepath.Join(dir, "r1.log"), "nccl.all_reduce="+filepath.Join(dir, "r2.log"))
	assert.Equal(t, code, 0, errs)
	assert.Assert(t, strings.Contains(out, "from 2 runs of nccl.all_reduce at 1x2"), out[:400])
	assert.Assert(t, strings.Contains(out, "#   "+filepath.Join(dir, "r1.log")), out[:600])
	assert.Assert(t, strings.Contains(errs, "from 2 runs of 1 test"), errs)
}

// baseline show names each entry's basis and lists the datasheet floors
// that judge what no entry does: a new user sees what a first run on an
// H100 is judged against before running it.
func TestBaselineShowBasisAndFloors(t *testing.T) {
	code, out, errs := cli(t, "baseline", "show", "h100")
	assert.Equal(t, code, 0, errs)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^TEST +SCOPE +METRIC +LABELS +SIZE +VALUE +UNIT +BAND +BASIS$`),
		regexp.MustCompile(`(?m)^nccl\.all_reduce +1x8 +busbw .* reference$`),
		regexp.MustCompile(`(?m)^gemm\.matmul +tflops +dtype=bf16 +494\.75 +TFLOPS +0\.5 x 989\.5 \(H100 SXM BF16 Tensor Core, dense\)$`),
		regexp.MustCompile(`(?m)^hbm\.bandwidth +bw +2010\.00 +GB/s +0\.6 x 3350 \(HBM3, 3\.35 TB/s\)$`),
	} {
		assert.Assert(t, want.MatchString(out), "want %s in\n%s", want, out)
	}
}
