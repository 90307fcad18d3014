package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/signoff"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
)

// crashPlugin plans a harmless step and panics when asked to parse: a
// third-party parser meeting hostile output.
type crashPlugin struct{}

func (crashPlugin) Describe(context.Context) (pluginapi.Description, error) {
	return pluginapi.Description{Name: "crashy", Tests: []pluginapi.TestInfo{{Name: "boom"}}}, nil
}
func (crashPlugin) Plan(context.Context, pluginapi.PlanRequest) (plan.Plan, error) {
	return plan.Plan{Steps: []plan.Step{{Name: "boom", Argv: []string{"true"}, Procs: 1, ProcsPerNode: 1}}}, nil
}
func (crashPlugin) Parse(context.Context, pluginapi.ParseRequest) (result.Parsed, error) {
	panic("hostile output")
}

// TestMain lets this test binary stand in for the gpuaccept binary when the
// plugin host re-executes it ("plugin serve nccl"), and serve the crashing
// plugin as an external one.
func TestMain(m *testing.M) {
	if os.Getenv("GPUACCEPT_TEST_CRASHY") != "" {
		pluginapi.Serve(crashPlugin{})
		os.Exit(0)
	}
	if os.Getenv("GPUACCEPT_TEST_AS_CLI") != "" {
		// The test binary as the gpuaccept command, for tests that kill it.
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 2 && os.Args[1] == "plugin" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	// Every run the tests make would go to the user's results store
	// (history.DefaultPath): to one of this test binary's own instead.
	state, err := os.MkdirTemp("", "gpuaccept-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	os.RemoveAll(state)
	if standinBuilt != "" {
		os.RemoveAll(filepath.Dir(standinBuilt))
	}
	os.Exit(code)
}

func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// cliStdin is cli with stdin as the standard input check reads for "-".
func cliStdin(t *testing.T, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	old := runner.Stdin
	runner.Stdin = bytes.NewReader(stdin)
	defer func() { runner.Stdin = old }()
	return cli(t, args...)
}

const healthy = "../../testdata/recordings/h200-1x2-healthy"

func TestDemo(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := cli(t, "demo", "--out", dir)
	assert.Equal(t, code, 0, errs)
	pages, _ := filepath.Glob(filepath.Join(dir, "*", layout.HTML))
	assert.Equal(t, len(pages), 2, "an HTML report per demo run")
	assert.Assert(t, strings.Contains(out, "PASS: SKU h200, suite singlenode, scope 1x2, launcher replay: 6 pass"), out)
	assert.Assert(t, strings.Contains(out, "FAIL: SKU h200, suite singlenode, scope 1x2, launcher replay: 6 fail"), out)
	assert.Assert(t, strings.Contains(errs, "demo: every verdict came out as expected"), errs)
	assert.Assert(t, strings.Contains(errs, "gpuaccept verify "+filepath.Join(dir, "healthy")+" --digest sha256:"), errs)
}

// Without --out the demo deletes its folders on exit: nothing it prints may
// send the user to one of them.
func TestDemoWithoutOutNamesNoDeletedFolder(t *testing.T) {
	code, out, errs := cli(t, "demo")
	assert.Equal(t, code, 0, errs)
	for _, line := range strings.Split(out+errs, "\n") {
		assert.Assert(t, !strings.Contains(line, os.TempDir()), "names a folder deleted on exit: %s", line)
	}
	assert.Assert(t, strings.Contains(errs, "pass --out DIR to keep it"), errs)
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--sku", "h200", "--suite", "singlenode", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"--sku", "h999", "--suite", "singlenode"}, `unknown SKU "h999" (known: a100-40gb, a100-80gb, a100-ndmv4, b200, b200-a4`},
		{[]string{"--sku", "h200", "--suite", "nope"}, `SKU h200 has no suite "nope" (known: burnin, multinode, node, singlenode, train)`},
		{[]string{"--sku", "h200"}, "--sku and --suite are required"},
		{[]string{"--sku", "h200", "--suite", "singlenode", "--launcher", "carrier-pigeon"}, `unknown launcher "carrier-pigeon" (known: `},
		{[]string{"--sku", "h200", "--suite", "singlenode", "--format", "xml"}, `unknown --format "xml"`},
		{[]string{"--sku", "h200", "--suite", "singlenode", "--hosts", "node1,$(reboot)"}, `host "$(reboot)" is not a host name`},
		{[]string{"--sku", "h200", "--suite", "singlenode", "--param", "novalue"}, `--param "novalue": want KEY=VALUE`},
		{[]string{"check", "--sku", "h200", "--test", "nccl.allreduce", "--nodes", "1", "--gpus-per-node", "2", "x.log"}, `plugin nccl has no test "allreduce"; did you mean nccl.all_reduce? (known: nccl.all_reduce`},
		{[]string{"check", "--sku", "h200", "--test", "nccl.all_reduce"}, "no LOGFILE given"},
		{[]string{"check", "--sku", "h200", "--test", "nccl.all_reduce", "x.log"}, "check needs --nodes and --gpus-per-node"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"--sku", "h200", "--suite", "singlenode", "--out", "."}, "results folder . already holds files; give a new or empty --out"},
		{[]string{"--sku", "h200", "--suite", "singlenode", "--hosts", "gpu-node-17"}, `launcher local runs on this host (`},
		{[]string{"--sku", "h200", "--suite", "singlenode", "--nodes", "2", "--dry-run"}, "launcher local runs on this host only, but the test asks for 2 nodes"},
		{[]string{"--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--dry-run", "--param", "mode=mpii"}, `parameter mode: "mpii" is not single or mpi`},
		{[]string{"list", "gpus"}, `list "gpus": want skus, suites, tests, plugins or launchers`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errs := cli(t, c.args...)
			assert.Equal(t, code, 2)
			// A dry run prints its plan, errors included, on stdout.
			assert.Assert(t, strings.Contains(errs+out, c.want), errs+out)
		})
	}
}

func TestHelp(t *testing.T) {
	for _, cmd := range []string{"run", "check", "demo", "list", "baseline", "report", "verify", "history"} {
		code, _, errs := cli(t, cmd, "--help")
		assert.Equal(t, code, 0, cmd)
		assert.Assert(t, strings.Contains(errs, "Usage: gpuaccept"), errs)
	}
	// check judges every plugin's logs and says how it groups them.
	_, _, errs := cli(t, "check", "--help")
	for _, w := range []string{"rccl-tests", "ib_write_bw", "Mori-EP", "server.N.log and client.N.log", "gpuaccept verify DIR"} {
		assert.Assert(t, strings.Contains(errs, w), "check --help lacks %q:\n%s", w, errs)
	}
}

func TestCheckHealthyTextAndJSON(t *testing.T) {
	dir := healthy + "/nccl.all_reduce/"
	// The text log and the -J JSON of one run: the JSON's unrounded numbers are judged.
	js := filepath.Join(t.TempDir(), "all_reduce.json")
	data, err := os.ReadFile(dir + "all_reduce.files/all_reduce.json")
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(js, data, 0o644))
	for _, files := range [][]string{{dir + "all_reduce.log"}, {js}} {
		code, out, errs := cli(t, append([]string{"check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", "--format", "json"}, files...)...)
		assert.Equal(t, code, 0, errs+out)
		var doc struct {
			Status string
			Tests  []struct {
				Name, Status string
				Metrics      []struct {
					Name, Unit, Status string
					Value              float64
					Size               int64
					Labels             map[string]string
				}
			}
		}
		assert.NilError(t, json.Unmarshal([]byte(out), &doc))
		assert.Equal(t, doc.Status, "pass")
		judged := 0
		for _, m := range doc.Tests[0].Metrics {
			if m.Name == "busbw" && m.Size == 4<<30 && m.Labels["placement"] == "out-of-place" {
				assert.Assert(t, m.Value > 344.0 && m.Value < 344.04, "busbw at 4 GiB %v", m.Value)
				assert.Equal(t, m.Status, "pass")
			}
			if m.Status != "skip" {
				judged++
			}
		}
		assert.Equal(t, judged, 18, "9 sizes (16 MiB..4 GiB) x 2 placements judged")
	}
}

// A baseline at another scope is a skip naming the scopes that exist, not a
// silent pass.
func TestCheckOtherScopeSkips(t *testing.T) {
	code, out, _ := cli(t, "check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "8", "--format", "json", healthy+"/nccl.all_reduce/all_reduce.log")
	assert.Equal(t, code, 1)
	assert.Assert(t, strings.Contains(out, "no baseline for nccl.all_reduce at scope 1x8 (nodes x GPUs per node) in SKU h200; it has 1x2"), out)
	// ... but its rank-count check still fails: the log shows 2 ranks, not 8.
	assert.Assert(t, strings.Contains(out, "rank count: 2 distinct rank lines, expected 8"), out)
}

func writeFile(t *testing.T, name, content string) string {
	p := filepath.Join(t.TempDir(), name)
	assert.NilError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func readFile(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	assert.NilError(t, err)
	return string(b)
}

// Bad input never passes and never panics: a clear error naming the file.
func TestCheckBadInput(t *testing.T) {
	real := readFile(t, healthy+"/nccl.all_reduce/all_reduce.log")
	cut := real[:strings.Index(real, "  1073741824")+30]
	cases := []struct {
		name, file, content, want string
	}{
		{"empty", "empty.log", "", "output is empty in empty.log"},
		{"garbage", "garbage.log", "\x00\x01 this is not nccl-tests output\n\xff\xfe", "no result rows in garbage.log"},
		{"truncated mid-row", "cut.log", cut, "cut.log:"},
		{"another collective", "ag.log", readFile(t, healthy+"/nccl.all_gather/all_gather.log"), "ag.log is output of all_gather_perf, not all_reduce_perf"},
		{"bad JSON", "bad.json", `{"results": [`, "bad.json"},
		{"binary JSON", "bin.json", "\x89PNG\r\n\x1a\n\x00\x00", "bin.json"},
		{"JSON of another tool", "other.json", `{"name": "ib_write_bw", "bw_avg": 390.1}`, "no result rows in other.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			junit := filepath.Join(t.TempDir(), "j.xml")
			code, out, errs := cli(t, "check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", "--junit", junit, writeFile(t, c.file, c.content))
			assert.Equal(t, code, 3, out+errs)
			assert.Assert(t, strings.Contains(out, "ERROR"), out)
			assert.Assert(t, strings.Contains(readFile(t, junit), c.want), readFile(t, junit))
		})
	}
}

// A degraded recording (NVLink P2P disabled) fails, and the JUnit failure
// says measured busbw against the band.
func TestCheckDegradedFails(t *testing.T) {
	log := degradedLog(t)
	junit := filepath.Join(t.TempDir(), "j.xml")
	code, out, _ := cli(t, "check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", "--junit", junit, log)
	assert.Equal(t, code, 1, out)
	x := readFile(t, junit)
	// The log's -J JSON, kept beside it in the results folder, is judged.
	assert.Assert(t, strings.Contains(x, `<failure message="busbw out-of-place 25.7 GB/s at 16 MiB below 180.8 (baseline 212.8 -15%)`), x)
	assert.Assert(t, strings.Contains(x, "fail busbw out-of-place 27.71 GB/s at 4 GiB, reference baseline 344.52, band >= 310.1"), x)
}

// degradedLog is a real all_reduce run on 2 x H200 with NCCL_P2P_DISABLE=1.
func degradedLog(t *testing.T) string {
	return "../../testdata/recordings/h200x2-2026-11-30/ga-p2poff/raw/nccl.all_reduce/all_reduce.log"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

var (
	standinOnce  sync.Once
	standinBuilt string // the one build of the stand-in, in its own folder
	standinErr   error
)

// standin returns a fresh folder holding the stand-in benchmark under the
// nccl-tests names and ib_write_bw's, links to one build per test binary:
// a test may replace a name or look for stragglers by its own folder.
func standin(t *testing.T) string {
	t.Helper()
	standinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gpuaccept-standin-")
		if err != nil {
			standinErr = err
			return
		}
		standinBuilt = filepath.Join(dir, "standin")
		if out, err := exec.Command("go", "build", "-o", standinBuilt, "../../internal/standin").CombinedOutput(); err != nil {
			standinErr = fmt.Errorf("build the stand-in: %w\n%s", err, out)
		}
	})
	assert.NilError(t, standinErr)
	bin := t.TempDir()
	for _, c := range []string{"all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf", "broadcast_perf", "sendrecv_perf", "ib_write_bw"} {
		assert.NilError(t, os.Symlink(standinBuilt, filepath.Join(bin, c)))
	}
	return bin
}

// The local launcher runs the real planned command lines; the stand-in
// replays the recorded H200 outputs. The results folder has everything.
func TestRunLocalWithStandin(t *testing.T) {
	bin := standin(t)
	rec, _ := filepath.Abs(healthy)
	t.Setenv("STANDIN_RECORDINGS", rec)
	t.Setenv("HF_TOKEN", "hf_do_not_leak_me_12345")
	out := t.TempDir()
	junit := filepath.Join(out, "ci.xml")
	code, stdout, errs := cli(t, "--sku", "h200", "--suite", "singlenode", "--launcher", "local", "--gpus-per-node", "2",
		"--param", "bindir="+bin, "--param", "env.MY_TOKEN=ghp_planted secret; 123", "--out", out, "--junit", junit)
	assert.Equal(t, code, 0, stdout+errs)
	assert.Assert(t, strings.Contains(stdout, "6 pass"), stdout)
	for _, f := range []string{layout.Results, layout.JUnit, layout.Table, "raw/nccl.all_reduce/all_reduce.log", "raw/nccl.all_reduce/all_reduce.files/all_reduce.json", "raw/nccl.all_reduce/outputs.json"} {
		assert.Assert(t, fileExists(filepath.Join(out, f)), f)
	}
	assert.Assert(t, strings.Contains(readFile(t, junit), `<property name="nccl_version" value="2.28.9">`))
	assert.Assert(t, !strings.Contains(readFile(t, junit), "ghp_planted"))
	// The stand-in dumped its environment into the -J JSON, as nccl-tests
	// does: the token is in no file of the results folder.
	js := readFile(t, filepath.Join(out, "raw/nccl.all_reduce/all_reduce.files/all_reduce.json"))
	assert.Assert(t, strings.Contains(js, `"HF_TOKEN=[REDACTED]"`), js[:300])
	assert.NilError(t, filepath.Walk(out, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			assert.Assert(t, !strings.Contains(readFile(t, p), "hf_do_not_leak_me"), "token leaked into %s", p)
			assert.Assert(t, !strings.Contains(readFile(t, p), "ghp_planted"), "token parameter leaked into %s", p)
		}
		return err
	}))
	res := readFile(t, filepath.Join(out, layout.Results))
	assert.Assert(t, strings.Contains(res, `all_reduce_perf -b 8 -e 4G -f 2 -g 2 -c 1 -J all_reduce.json`), res[:500])

	// The same folder replays to the same verdict.
	code, stdout, errs = cli(t, "--sku", "h200", "--suite", "singlenode", "--launcher", "replay", "--replay-dir", out, "--gpus-per-node", "2", "--out", t.TempDir())
	assert.Equal(t, code, 0, stdout+errs)
	assert.Assert(t, strings.Contains(stdout, "6 pass"), stdout)
}

func TestRunTimeoutIsAnError(t *testing.T) {
	bin := standin(t)
	rec, _ := filepath.Abs(healthy)
	t.Setenv("STANDIN_RECORDINGS", rec)
	t.Setenv("STANDIN_SLEEP", "5m")
	code, stdout, errs := cli(t, "--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--test", "nccl.all_reduce",
		"--param", "bindir="+bin, "--out", t.TempDir(), "--timeout", "1s")
	assert.Equal(t, code, 3, stdout+errs)
	assert.Assert(t, strings.Contains(stdout, "stopped: timed out after"), stdout)
	assert.Assert(t, strings.Contains(stdout, "(limit 1s); "), stdout)
}

func TestDryRun(t *testing.T) {
	code, out, errs := cli(t, "--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--dry-run", "--param", "bindir=/opt/nccl tests/build", "--param", "mode=mpi",
		"--param", "env.WANDB_API_KEY=0123456789abcdef")
	assert.Equal(t, code, 0, errs)
	assert.Assert(t, strings.Contains(out, "WANDB_API_KEY=[REDACTED] mpirun"), out)
	assert.Assert(t, !strings.Contains(out, "0123456789abcdef"), out)
	assert.Assert(t, strings.Contains(out, "mpirun"), out)
	assert.Assert(t, strings.Contains(out, "-np 2 --map-by ppr:2:node"), out)
	assert.Assert(t, strings.Contains(out, "'/opt/nccl tests/build/all_reduce_perf' -b 8 -e 4G -f 2 -g 1 -c 1 -J all_reduce.json"), out)
	// Each test's command is headed by a comment naming it; a shell runs
	// the lines as they are.
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	assert.Equal(t, len(lines), 12, out)
	for i, test := range []string{"nccl.all_reduce", "nccl.all_gather", "nccl.reduce_scatter", "nccl.alltoall", "nccl.broadcast", "nccl.sendrecv"} {
		assert.Equal(t, lines[2*i], "# "+test)
		assert.Assert(t, strings.Contains(lines[2*i+1], "/opt/nccl tests/build/"+strings.TrimPrefix(test, "nccl.")+"_perf'"), lines[2*i+1])
	}
	sh := exec.Command("sh", "-n")
	sh.Stdin = strings.NewReader(out)
	b, err := sh.CombinedOutput()
	assert.NilError(t, err, "the dry run is not shell: %s", b)
}

// A dry run into a results folder a run would refuse keeps naming that
// folder in its commands, and warns; it writes nothing there.
func TestDryRunIntoUsedFolder(t *testing.T) {
	used := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(used, "old.txt"), nil, 0o644))
	for _, c := range []struct {
		out  string
		note bool
	}{{filepath.Join(t.TempDir(), "new"), false}, {used, true}} {
		code, out, errs := cli(t, "--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--dry-run", "--out", c.out,
			"--launcher", "ssh", "--hosts", "node1", "--test", "nccl.all_reduce")
		assert.Equal(t, code, 0, out+errs)
		assert.Equal(t, strings.Contains(errs, "results folder "+c.out+" already holds files; give a new or empty --out: the run itself would stop here"), c.note, errs)
		ents, err := os.ReadDir(used)
		assert.NilError(t, err)
		assert.Equal(t, len(ents), 1, "the dry run wrote into %s", used)
	}
}

// A plugin that panics costs its own test an error; the others still run.
func TestCrashingPluginCostsOneTest(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\nGPUACCEPT_TEST_CRASHY=1 exec " + os.Args[0] + "\n"
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "gpuaccept-plugin-crashy"), []byte(script), 0o755))
	skus := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(skus, "x.yaml"), []byte(`sku: x
gpus_per_node: 2
suites:
  s:
    tests:
      - test: crashy.boom
      - test: nccl.all_reduce
`), 0o644))
	code, out, errs := cli(t, "--sku", "x", "--suite", "s", "--baselines", skus, "--plugin-path", dir, "--launcher", "replay", "--replay-dir", healthy, "--out", t.TempDir())
	assert.Equal(t, code, 3, out+errs)
	assert.Assert(t, strings.Contains(out, "plugin crashy: parse boom: plugin process died: panic: hostile output"), out)
	assert.Assert(t, strings.Contains(out, "no baseline for nccl.all_reduce in SKU x"), out)
}

func TestList(t *testing.T) {
	for what, want := range map[string]string{"skus": "h200", "suites": "singlenode", "tests": "nccl.hypercube", "plugins": "nccl", "launchers": "replay"} {
		code, out, errs := cli(t, "list", what)
		assert.Equal(t, code, 0, errs)
		assert.Assert(t, strings.Contains(out, want), what+": "+out)
	}
}

func TestBaselineValidate(t *testing.T) {
	code, out, _ := cli(t, "baseline", "validate")
	assert.Equal(t, code, 0)
	assert.Assert(t, strings.Contains(out, "ok  baselines/h200.yaml: sku h200"), out)
	bad := writeFile(t, "bad.yaml", "sku: b\nbaselines:\n  - test: nccl.all_reduce\n    scope: {nodes: 1, gpus_per_node: 2}\n    metric: busbw\n    unit: GB/s\n    tolerance: 10%\n")
	code, out, _ = cli(t, "baseline", "validate", bad)
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(out, `bad.yaml: line 7: field "tolerance" is not known here`), out)
	code, out, _ = cli(t, "baseline", "show", "h200")
	assert.Equal(t, code, 0)
	assert.Assert(t, strings.Contains(out, "nccl.all_reduce      1x2    busbw   placement=out-of-place  4 GiB                  344.52   GB/s    min -10%, warn_min -5%, warn_max +50%"), out)
	assert.Assert(t, strings.Contains(out, "nccl.all_reduce      1x2    busbw   placement=out-of-place  64 MiB                 266.59   GB/s    min -15%, warn_min -8%, warn_max +50%"), out)
}

// The results folders of real GPU runs replay to the verdicts they got on
// the GPUs, against today's baseline.
func TestRealRunsReplay(t *testing.T) {
	const dir = "../../testdata/recordings/h200x2-2026-11-30-final/"
	for run, want := range map[string]int{"single": 0, "mpi": 0, "p2poff": 1} {
		args := []string{"--sku", "h200", "--suite", "singlenode", "--launcher", "replay", "--replay-dir", dir + run, "--gpus-per-node", "2", "--out", t.TempDir()}
		if run == "p2poff" {
			args = append(args, "--test", "nccl.all_reduce", "--test", "nccl.alltoall")
		}
		code, out, errs := cli(t, args...)
		assert.Equal(t, code, want, "%s: %s%s", run, out, errs)
	}
}

// check reads how a results folder's step ended: a run that exited 3
// does not pass because its log looks whole.
func TestCheckSeesRecordedExitCode(t *testing.T) {
	dir := t.TempDir()
	src := readFile(t, healthy+"/nccl.all_reduce/all_reduce.log")
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "all_reduce.log"), []byte(src), 0o644))
	assert.NilError(t, os.WriteFile(filepath.Join(dir, layout.Outputs), []byte(`[{"step":"all_reduce","exit_code":3,"log":"all_reduce.log"}]`), 0o644))
	code, out, _ := cli(t, "check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", "--format", "json", filepath.Join(dir, "all_reduce.log"))
	assert.Equal(t, code, 3, out)
	assert.Assert(t, strings.Contains(out, "exited with status 3 (NCCL error)"), out)
}

// A log from another GPU model does not sign an H200 off.
func TestCheckOtherGPUModelFails(t *testing.T) {
	log := writeFile(t, "h100.log", strings.ReplaceAll(readFile(t, healthy+"/nccl.all_reduce/all_reduce.log"), "NVIDIA H200", "NVIDIA H100 80GB HBM3"))
	code, out, _ := cli(t, "check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", "--format", "json", log)
	assert.Equal(t, code, 1, out)
	assert.Assert(t, strings.Contains(out, `GPU model: the output shows \"NVIDIA H100 80GB HBM3\", SKU h200 is \"H200\"`), out)
}

// Hosts and node counts: the hosts given are the cluster under test, and
// whatever differs from what the suite or --nodes says is said, not done
// silently.
func TestHostsAndNodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"fewer hosts than the suite's nodes", []string{"--hosts", "node1"},
			[]string{"note: suite multinode runs on 2 nodes by default; running on the 1 host given", "# nccl.all_reduce"}},
		{"--nodes below the hosts", []string{"--hosts", "node1,node2,node3", "--nodes", "2"},
			[]string{"note: --nodes 2: using the first 2 of the 3 hosts given (node1,node2)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--sku", "a100-ndmv4", "--suite", "multinode", "--launcher", "replay", "--replay-dir", t.TempDir(), "--dry-run"}, tc.args...)
			_, out, errs := cli(t, args...)
			for _, w := range tc.want {
				assert.Assert(t, strings.Contains(out+errs, w), "want %q in\n%s\n%s", w, out, errs)
			}
		})
	}
}

// The exit code of every kind of outcome, as README.md's table gives it,
// on real recordings: a failure wins over an error, nothing judged is not
// green, usage is told apart from a test that errored.
// siteSKU writes the built-in h200 SKU file as a site's own, h200-site,
// into a fresh folder (--baselines DIR) without the baseline entries of
// the tests named ("*": without any, a site's file before its first
// recording) and without datasheet floors (its own ceilings, none with a
// floor: what no entry judges is measured, not judged), and returns the
// folder.
func siteSKU(t *testing.T, drop ...string) string {
	t.Helper()
	b, err := os.ReadFile("../../baselines/h200.yaml")
	assert.NilError(t, err)
	b = regexp.MustCompile(`, floor: [0-9.]+`).ReplaceAll(b, nil)
	head, body, ok := strings.Cut(string(b), "\nbaselines:\n")
	assert.Assert(t, ok, "baselines/h200.yaml has no baselines: block")
	head = strings.Replace(head, "\nsku: h200\n", "\nsku: h200-site\n", 1)
	entries := strings.Split(body, "\n  - test: ")
	kept := []string{entries[0]}
	for _, e := range entries[1:] {
		name, _, _ := strings.Cut(e, "\n")
		if !slices.Contains(drop, "*") && !slices.Contains(drop, name) {
			kept = append(kept, e)
		}
	}
	out := head + "\nbaselines:\n" + strings.Join(kept, "\n  - test: ")
	if len(kept) == 1 {
		out = head + "\nbaselines: []\n"
	}
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "h200-site.yaml"), []byte(out), 0o644))
	return dir
}

// readmeExitCodes reads the table of README.md's "Exit codes" section:
// the first cell of each row (what the run did) and its exit code.
func readmeExitCodes(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	assert.NilError(t, err)
	_, sec, ok := strings.Cut(string(b), "\n### Exit codes\n")
	assert.Assert(t, ok, "README.md has no Exit codes section")
	rows := map[string]int{}
	for _, line := range strings.Split(sec, "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) < 3 || strings.HasPrefix(line, "| the run |") {
			continue
		}
		code, err := strconv.Atoi(cells[1])
		assert.NilError(t, err, "README.md, Exit codes: row %q", line)
		rows[strings.TrimPrefix(cells[0], "| ")] = code
	}
	assert.Assert(t, len(rows) >= 9, "README.md, Exit codes: %d rows read", len(rows))
	return rows
}

// TestExitCodes runs every row of README.md's "Exit codes" table through
// the CLI on recorded outputs (check, a replayed run, report, a dry run):
// each case names its row, and fails when the row's code changes in the
// README or in what the command exits; a row without a case fails too.
// The JSON report's status agrees with the exit code.
func TestExitCodes(t *testing.T) {
	good := healthy + "/nccl.all_reduce/all_reduce.log"
	p2poff := "../../testdata/recordings/h200x2-2026-11-30-final/p2poff/raw/nccl.all_reduce/all_reduce.log"
	// The H200 node suite as run live against the 1x1 baseline: health
	// first, then gemm, hbm and hostlink; P2P and the collectives skip
	// (min_gpus) on one GPU.
	node := "../../testdata/recordings/h200x1-2026-12-01/node/baselined/suite"
	// Edit: the out-of-bounds footer line dropped, so that gate could not
	// be made (a warn).
	short := writeFile(t, "short.log", regexp.MustCompile(`(?m)^# Out of bounds values.*\n`).ReplaceAllString(readFile(t, good), ""))
	empty := writeFile(t, "empty.log", "")
	checkAs := func(sku, scope string, files ...string) []string {
		n, g, _ := strings.Cut(scope, "x")
		return append([]string{"check", "--sku", sku, "--test", "nccl.all_reduce", "--nodes", n, "--gpus-per-node", g, "--format", "json"}, files...)
	}
	check := func(scope string, files ...string) []string { return checkAs("h200", scope, files...) }
	replayNodeInto := func(out string, skuArgs ...string) []string {
		return append([]string{"--suite", "node", "--launcher", "replay", "--gpus-per-node", "1", "--replay-dir", node, "--format", "json", "--out", out}, skuArgs...)
	}
	replayNode := func(skuArgs ...string) []string { return replayNodeInto(t.TempDir(), skuArgs...) }
	noGemm := siteSKU(t, "gemm.matmul")
	// A folder of a run that measured gemm with no entry: report rebuilds
	// its verdict from the tests.
	unjudged := filepath.Join(t.TempDir(), "unjudged")
	code, out, errs := cli(t, replayNodeInto(unjudged, "--sku", "h200-site", "--baselines", noGemm)...)
	assert.Equal(t, code, exitNothingJudged, out+errs)
	const (
		pass    = "every test passed"
		warn    = "some warned, none failed or errored"
		fail    = "a test FAILed (outside its band, a correctness gate, a suspect named)"
		failErr = "a FAIL and an ERROR together"
		errOnly = "ERROR only (a test could not run — no PyTorch, no binary or interpreter, a driver or CUDA the tool could not initialise, no recording in a replay folder —, its output could not be judged — empty, cut short, another tool's file —, a broken build such as independent runs)"
		none    = "everything skipped: nothing judged (no baseline at the scope, no entry for the series measured)"
		notJud  = "a benchmark measured, not judged (no baseline entry at the scope for it), the rest passed or warned"
		usage   = "usage or configuration error (bad flag, malformed SKU file, unknown test, results folder not empty, a dry run that cannot be planned; `report` of a folder that no longer matches its manifest)"
		intr    = "interrupted (Ctrl-C, SIGTERM) before anything failed"
	)
	cases := []struct {
		row, name string
		args      []string
		code      int
		status    string
		// want is in what the command printed (stdout and stderr).
		want      string
		interrupt bool
	}{
		{row: pass, name: "check", args: check("1x2", good), code: 0, status: "pass"},
		// The tests min_gpus skips on one GPU ran nothing: the run is
		// signed off on the rest.
		{row: pass, name: "node suite, collectives not applicable on one GPU", args: replayNode("--sku", "h200"), code: 0, status: "pass"},
		{row: warn, name: "check", args: check("1x2", short), code: 0, status: "warn"},
		{row: fail, name: "check", args: check("1x2", p2poff), code: 1, status: "fail"},
		{row: fail, name: "run", args: []string{"--sku", "h200", "--suite", "singlenode", "--launcher", "replay", "--gpus-per-node", "2", "--test", "nccl.all_reduce",
			"--replay-dir", "../../testdata/recordings/h200x2-2026-11-30-final/p2poff", "--out", t.TempDir(), "--format", "json"}, code: 1, status: "fail"},
		{row: failErr, name: "check", args: check("1x2", p2poff, empty), code: 1, status: "fail"},
		{row: errOnly, name: "check", args: check("1x2", empty), code: 3, status: "error"},
		// volcengine-hpcpni has all_reduce baselines at 1x8 and 2x8 only, and
		// no GPU model to compare: every gate holds, nothing is judged.
		{row: none, name: "check", args: checkAs("volcengine-hpcpni", "1x2", good), code: 4, status: "skip"},
		{row: none, name: "dry run", args: []string{"--sku", "h200", "--suite", "singlenode", "--dry-run"}, code: 4, want: "dry run: no benchmark would be judged at scope 1x8"},
		// Issue 28: a site's SKU file before its first recording; health
		// passed, gemm, hbm and hostlink measured and judged by nothing.
		{row: notJud, name: "health passed, no benchmark judged", args: replayNode("--sku", "h200-site", "--baselines", siteSKU(t, "*")), code: 4, status: "skip",
			want: "not signed off: measured, not judged: gemm.matmul, hbm.bandwidth, hostlink.pcie (no baseline entry judges them at scope 1x1 in SKU h200-site"},
		{row: notJud, name: "hbm and hostlink passed, gemm not judged", args: replayNode("--sku", "h200-site", "--baselines", noGemm), code: 4, status: "skip",
			want: "not signed off: measured, not judged: gemm.matmul (no baseline entry judges it at scope 1x1"},
		{row: notJud, name: "dry run", args: []string{"--sku", "h200-site", "--baselines", noGemm, "--suite", "node", "--gpus-per-node", "1", "--dry-run"}, code: 4,
			want: "dry run: the run would not be signed off: measured, not judged: gemm.matmul (no baseline entry judges it at scope 1x1"},
		{row: notJud, name: "report", args: []string{"report", unjudged, "--format", "json"}, code: 4, status: "skip", want: "not signed off: measured, not judged: gemm.matmul"},
		{row: usage, name: "no scope", args: []string{"check", "--sku", "h200", "--test", "nccl.all_reduce", good}, code: 2},
		{row: usage, name: "unknown SKU", args: []string{"check", "--sku", "h999", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", good}, code: 2},
		// Ctrl-C before the first test ends (a run's SKU check, which asks
		// the plugins, would stop first: the demo's runs are planned).
		{row: intr, name: "demo", args: []string{"demo"}, code: exitInterrupted, interrupt: true, want: "interrupted"},
	}
	rows := readmeExitCodes(t)
	covered := map[string]bool{}
	for _, c := range cases {
		readme, ok := rows[c.row]
		assert.Assert(t, ok, "case %s/%s: README.md's Exit codes table has no row %q", c.row, c.name, c.row)
		assert.Equal(t, readme, c.code, "README.md, Exit codes, row %q", c.row)
		covered[c.row] = true
	}
	for row := range rows {
		assert.Assert(t, covered[row], "README.md, Exit codes: no case runs row %q", row)
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("exit %d/%s", c.code, c.name), func(t *testing.T) {
			if c.interrupt {
				old := cliopts.SignalContext
				defer func() { cliopts.SignalContext = old }()
				cliopts.SignalContext = func() (context.Context, context.CancelFunc) {
					ctx, cancel := context.WithCancel(context.Background())
					cancel() // Ctrl-C before the first test ends
					return ctx, cancel
				}
			}
			code, out, errs := cli(t, c.args...)
			assert.Equal(t, code, c.code, out+errs)
			if c.status != "" {
				var doc struct{ Status string }
				assert.NilError(t, json.Unmarshal([]byte(out), &doc), out)
				assert.Equal(t, doc.Status, c.status, "the run's verdict agrees with its exit code")
			}
			assert.Assert(t, strings.Contains(out+errs, c.want), "want %q in\n%s%s", c.want, out, errs)
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for code, want := range map[int]int{exitOK: exitInterrupted, exitError: exitInterrupted, exitNothingJudged: exitInterrupted, exitFail: exitFail} {
		assert.Equal(t, signoff.Interrupted(ctx, code), want, "interrupted after exit %d", code)
		assert.Equal(t, signoff.Interrupted(context.Background(), code), code)
	}
}
