package acceptance

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/signoff"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/internal/fakehealth"
	"github.com/gpuaccept/gpuaccept/plugins/rccl"
)

// seedAllReduce is AMD's real two-node MI355X all_reduce (seed 004,
// hosts Aliyun3 and Aliyun1), which passes mi355x's 2x8 baseline.
const seedAllReduce = "../../testdata/recordings/mi355x-seed004/multinode/raw/rccl.all_reduce/all_reduce.log"

var withHealth = inProcess{"rccl": rccl.Plugin{}, fakehealth.PluginName: fakehealth.Plugin{}}

// preflightSKU is the shipped mi355x SKU file with a suite "checked"
// whose health test comes after its benchmark, so that the run must
// reorder it: the file's bytes (kept in the results folder) and the SKU.
func preflightSKU(t *testing.T) ([]byte, *sku.SKU) {
	t.Helper()
	data, err := baselines.FS.ReadFile("mi355x.yaml")
	assert.NilError(t, err)
	suite := "\nsuites:\n  checked:\n    description: health first, then the two-node all_reduce\n    nodes: 2\n    tests:\n" +
		"      - test: rccl.all_reduce\n        params: {minbytes: \"16\", maxbytes: 16G, stepfactor: \"2\", iters: \"20\", warmup: \"5\", check: \"1\"}\n" +
		"      - test: fakehealth.node\n"
	data = bytes.Replace(data, []byte("\nsuites:\n"), []byte(suite), 1)
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "mi355x.yaml"), data, 0o644))
	cat, err := sku.Load(os.DirFS(dir), dir)
	assert.NilError(t, err)
	s, err := cat.Get("mi355x")
	assert.NilError(t, err)
	return data, s
}

// healthLauncher prints the health test's report and serves the real
// all_reduce log; it counts what it launched.
type healthLauncher struct{ launched []string }

func (l *healthLauncher) Name() string { return "recorded" }

func (l *healthLauncher) Commands(req launch.Request) ([]string, error) {
	return []string{req.Test}, nil
}

func (l *healthLauncher) Launch(_ context.Context, req launch.Request) ([]plan.Output, error) {
	l.launched = append(l.launched, req.Test)
	data := []byte(fakehealth.Report(req.Plan))
	if req.Test == "rccl.all_reduce" {
		var err error
		if data, err = os.ReadFile(seedAllReduce); err != nil {
			return nil, err
		}
	}
	var outs []plan.Output
	for _, st := range req.Plan.Steps {
		w, p, err := launch.CreateLog(req, st.Name)
		if err != nil {
			return nil, err
		}
		w.Write(data)
		w.Close()
		outs = append(outs, plan.Output{Step: st.Name, Log: p, Command: strings.Join(st.Argv, " ")})
	}
	return outs, nil
}

// preflightRun runs suite "checked" on Aliyun3 and Aliyun1 with the
// health report given, localising everything (--localise), and signs the
// folder off.
func preflightRun(t *testing.T, report string) (*result.Run, *healthLauncher, string) {
	t.Helper()
	data, s := preflightSKU(t)
	l := &healthLauncher{}
	dir := filepath.Join(t.TempDir(), "results")
	var stderr bytes.Buffer
	o := RunOptions{
		Setup: Setup{SKU: s, Suite: "checked", Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}, Hosts: []string{"Aliyun3", "Aliyun1"}},
			Params: map[string]string{"fakehealth:report": report}, Timeout: time.Minute, Dir: dir, LauncherName: l.Name(),
			NewLauncher: func([]string) (launch.Launcher, error) { return l, nil }, Plugins: withHealth, Version: "test", Baseline: data,
			Stderr: &stderr},
		Launcher: l, LocaliseAll: true,
	}
	run, err := Run(context.Background(), o)
	assert.NilError(t, err)
	var out bytes.Buffer
	_, err = signoff.Finish(context.Background(), run, s, signoff.FinishOptions{Format: "table", Stdout: &out, Stderr: &stderr, Plugins: withHealth})
	assert.NilError(t, err)
	return run, l, out.String()
}

func verifyLines(t *testing.T, dir string) (int, string) {
	t.Helper()
	res, err := signoff.Verify(context.Background(), dir, signoff.Options{Plugins: withHealth, Version: "test"})
	assert.NilError(t, err)
	var b strings.Builder
	for _, l := range res.Lines {
		b.WriteString(l.String() + "\n")
	}
	return res.Findings, b.String()
}

// The health test runs first, though the suite lists it last. A failed
// check on Aliyun1 names the node in the run (BadNodes, the table's
// summary) and skips the benchmark with its reason, launching nothing
// more and localising nothing; a healthy report runs the benchmark (and
// --localise narrows down the benchmark only).
// verify accepts both folders.
func TestPreflight(t *testing.T) {
	const reason = "node Aliyun1 failed health: GA-TEST-ECC uncorrected_ECC_errors_on_GPU_3"
	cases := []struct {
		name, report string
		status       result.Status
		launched     []string
		bench        result.Status
		benchMessage string
		bad          []result.BadNode
		summary      string
		localised    []string
	}{
		{"Aliyun1 bad", "Aliyun3=ok,Aliyun1=GA-TEST-ECC:uncorrected_ECC_errors_on_GPU_3", result.Fail, []string{"fakehealth.node"},
			result.Skip, reason, []result.BadNode{{Host: "Aliyun1", Code: "GA-TEST-ECC", Check: "node health", Message: "uncorrected_ECC_errors_on_GPU_3", Test: "fakehealth.node"}},
			"; 1 bad node: Aliyun1 (GA-TEST-ECC)\n", nil},
		{"healthy", "Aliyun3=ok,Aliyun1=ok", result.Pass, []string{"fakehealth.node", "rccl.all_reduce"},
			result.Pass, "", nil, "ms)\n", []string{"rccl.all_reduce"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run, l, table := preflightRun(t, c.report)
			assert.DeepEqual(t, l.launched, c.launched)
			if c.bad != nil {
				assert.Equal(t, run.Tests[0].Message, "node Aliyun1 failed health: GA-TEST-ECC uncorrected_ECC_errors_on_GPU_3 (1 of 2 checks failed)")
			}
			assert.Equal(t, len(run.Tests), 2)
			health, bench := run.Tests[0], run.Tests[1]
			assert.Equal(t, health.Name, "fakehealth.node")
			assert.Assert(t, health.Preflight)
			assert.Equal(t, bench.Name, "rccl.all_reduce")
			assert.Assert(t, !bench.Preflight)
			assert.Equal(t, bench.Status, c.bench, bench.Message)
			if c.benchMessage != "" {
				assert.Equal(t, bench.Message, c.benchMessage)
			}
			assert.DeepEqual(t, run.BadNodes, c.bad)
			assert.Equal(t, run.Status, c.status)
			// --localise narrows down the benchmark that ran, never the
			// health test nor a test skipped for a bad node.
			var localised []string
			for _, lo := range run.Localisations {
				localised = append(localised, lo.Test)
			}
			assert.DeepEqual(t, localised, c.localised)
			assert.Assert(t, strings.HasSuffix(table, c.summary), table)
			if c.bad != nil {
				assert.Assert(t, strings.Contains(table, "GA-TEST-ECC"), table)
				back, err := journal.Read(run.Dir)
				assert.NilError(t, err)
				assert.DeepEqual(t, back.BadNodes, c.bad)
				data, err := os.ReadFile(filepath.Join(run.Dir, layout.Results))
				assert.NilError(t, err)
				assert.Assert(t, strings.Contains(string(data), `"bad_nodes"`), layout.Results)
			}
			n, lines := verifyLines(t, run.Dir)
			assert.Equal(t, n, 0, lines)
		})
	}
}

// editJournal rewrites the journal line of test with edit and makes the
// manifest again, as a forger with write access would.
func editJournal(t *testing.T, dir, test string, edit func(tst *result.Test)) {
	t.Helper()
	p := filepath.Join(dir, layout.Journal)
	data, err := os.ReadFile(p)
	assert.NilError(t, err)
	var out []string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var rec struct {
			Test *result.Test `json:"test"`
		}
		assert.NilError(t, json.Unmarshal([]byte(line), &rec))
		if rec.Test != nil && rec.Test.Name == test {
			edit(rec.Test)
			b, err := json.Marshal(rec)
			assert.NilError(t, err)
			line = string(b)
		}
		out = append(out, line)
	}
	assert.NilError(t, os.WriteFile(p, []byte(strings.Join(out, "\n")+"\n"), 0o644))
	assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
	_, err = manifest.Write(dir, "test", "mi355x")
	assert.NilError(t, err)
}

// A skip "for a bad node" is believed only when the preflight test's raw
// outputs, judged again, found that node bad with that fault: a benchmark
// rewritten to such a skip after a healthy preflight, or naming another
// node or code than the preflight found, is a finding; so is a benchmark
// recorded as a preflight test, which its plugin does not declare.
func TestVerifyPreflightSkips(t *testing.T) {
	skipped := func(reason string) func(*result.Test) {
		return func(tst *result.Test) {
			*tst = result.Test{Name: tst.Name, Status: result.Skip, Message: reason, Scope: tst.Scope, Metrics: []result.Judged{}}
		}
	}
	cases := []struct {
		name, report string
		edit         func(*result.Test)
		want         string
	}{
		{"healthy preflight", "Aliyun3=ok,Aliyun1=ok", skipped("node Aliyun1 failed health: GA-TEST-ECC uncorrected_ECC_errors"),
			"MISMATCH rccl.all_reduce: recorded a skip (node Aliyun1 failed health: GA-TEST-ECC uncorrected_ECC_errors) with no raw output, but the raw outputs of the run's preflight tests, judged again, find no node bad"},
		{"another node", "Aliyun3=ok,Aliyun1=GA-TEST-ECC:uncorrected", skipped("node Aliyun3 failed health: GA-TEST-ECC uncorrected"),
			"judged again, give: node Aliyun1 failed health: GA-TEST-ECC uncorrected"},
		{"another code", "Aliyun3=ok,Aliyun1=GA-TEST-ECC:uncorrected", skipped("node Aliyun1 failed health: GA-TEST-XID uncorrected"),
			"judged again, give: node Aliyun1 failed health: GA-TEST-ECC uncorrected"},
		{"benchmark claimed a preflight test", "Aliyun3=ok,Aliyun1=ok", func(tst *result.Test) { tst.Preflight = true },
			"REJUDGED rccl.all_reduce: recorded as a preflight test, but plugin rccl does not declare it one"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run, _, _ := preflightRun(t, c.report)
			if run.Tests[1].Status != result.Skip {
				assert.NilError(t, os.RemoveAll(filepath.Join(run.Dir, resultsdir.TestDir("rccl.all_reduce"))))
			}
			editJournal(t, run.Dir, "rccl.all_reduce", c.edit)
			n, lines := verifyLines(t, run.Dir)
			assert.Assert(t, n > 0, lines)
			assert.Assert(t, strings.Contains(lines, c.want), "want %q in\n%s", c.want, lines)
		})
	}
}

// The line of --slurm-check names the first bad node, its code and
// reason, on one line whatever the message held, and the exit code is
// the run's.
func TestHealthLine(t *testing.T) {
	health := func(status result.Status, message string, checks ...result.Check) *result.Run {
		run := &result.Run{Tests: []result.Test{{Name: "health.node", Preflight: true, Status: status, Message: message, Checks: checks}}}
		run.Finish()
		return run
	}
	ecc := result.Check{Name: "ECC", Host: "node1", Code: "GA-TEST-ECC", Message: "2 uncorrected\nerrors"}
	pcie := result.Check{Name: "PCIe", Host: "node1", Code: "GA-TEST-PCIE", Message: "x8"}
	remap := result.Check{Name: "row remap failure", Host: "vm", Code: "GA-GPU-ROWREMAP-FAIL", Message: "vm: GPU 0 (00000000:00:06.0): a row remap failed"}
	cases := []struct {
		name string
		run  *result.Run
		line string
		code int
	}{
		{"ok", health(result.Pass, "2 health checks passed", result.Check{Name: "ECC", OK: true, Host: "node1"}), "gpuaccept health: OK", 0},
		{"warn is ok", health(result.Warn, "not verifiable"), "gpuaccept health: OK", 0},
		{"bad node", health(result.Fail, "", ecc), "gpuaccept health: FAIL node1 GA-TEST-ECC: 2 uncorrected errors", 1},
		{"two checks", health(result.Fail, "", ecc, pcie), "gpuaccept health: FAIL node1 GA-TEST-ECC: 2 uncorrected errors (and 1 more check)", 1},
		{"three checks", health(result.Fail, "", ecc, pcie, pcie), "gpuaccept health: FAIL node1 GA-TEST-ECC: 2 uncorrected errors (and 2 more checks)", 1},
		// health.node's messages start with the node, for tables: the
		// line names it once.
		{"message names the node", health(result.Fail, "", remap), "gpuaccept health: FAIL vm GA-GPU-ROWREMAP-FAIL: GPU 0 (00000000:00:06.0): a row remap failed", 1},
		{"two nodes", health(result.Fail, "", ecc, remap), "gpuaccept health: FAIL node1 GA-TEST-ECC: 2 uncorrected errors (and 1 more node)", 1},
		{"failed with no node named", health(result.Fail, "rank count: 1, want 2"), "gpuaccept health: FAIL here: health.node: rank count: 1, want 2", 1},
		{"error", health(result.Error, "launch: nvidia-smi: not found"), "gpuaccept health: ERROR here: health.node: launch: nvidia-smi: not found", 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			line, code := HealthLine(c.run, "here")
			assert.Equal(t, line, c.line)
			assert.Equal(t, code, c.code)
		})
	}
}

// HealthSuite finds the suite of the preflight tests, or says why not.
func TestHealthSuite(t *testing.T) {
	_, s := preflightSKU(t)
	suite, tests, err := HealthSuite(context.Background(), withHealth, s, "")
	assert.NilError(t, err)
	assert.Equal(t, suite, "checked")
	assert.DeepEqual(t, tests, []string{"fakehealth.node"})
	_, _, err = HealthSuite(context.Background(), withHealth, s, "singlenode")
	assert.ErrorContains(t, err, "suite singlenode of SKU mi355x has no preflight test")
	_, _, err = HealthSuite(context.Background(), withHealth, shippedSKU(t, "mi355x"), "")
	assert.ErrorContains(t, err, "no suite of SKU mi355x has a preflight test")
}
