package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
)

// p2poffAllReduce is nccl.all_reduce of the real H200 run with NVLink
// peer-to-peer disabled (NCCL_P2P_DISABLE=1): it fails the h200 baseline.
const p2poffAllReduce = "../../testdata/recordings/h200x2-2026-11-30-final/p2poff/raw/nccl.all_reduce"

// failedRun makes the results folder of a singlenode run in which one
// test failed: the healthy H200 recording with its nccl.all_reduce taken
// from the run with NVLink peer-to-peer disabled.
func failedRun(t *testing.T, extra ...string) string {
	t.Helper()
	replay := filepath.Join(t.TempDir(), "replay")
	assert.NilError(t, os.CopyFS(replay, os.DirFS(healthy)))
	assert.NilError(t, os.RemoveAll(filepath.Join(replay, "nccl.all_reduce")))
	assert.NilError(t, os.CopyFS(filepath.Join(replay, "nccl.all_reduce"), os.DirFS(p2poffAllReduce)))
	out := filepath.Join(t.TempDir(), "results")
	code, stdout, errs := cli(t, append([]string{"--sku", "h200", "--suite", "singlenode", "--launcher", "replay", "--replay-dir", replay,
		"--gpus-per-node", "2", "--out", out}, extra...)...)
	assert.Equal(t, code, 1, stdout+errs)
	return out
}

// resign makes the manifest of a forged folder again, as a forger who
// holds the signing key does with gpuaccept report: the digest verify is
// given is the forged manifest's.
func resign(t *testing.T, dir string) []string {
	t.Helper()
	assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
	cli(t, "report", dir)
	if !fileExists(filepath.Join(dir, layout.Manifest)) {
		_, err := manifest.Write(dir, "dev", "h200")
		assert.NilError(t, err)
	}
	return []string{"--digest", digestOf(t, dir)}
}

// editJournalTest rewrites the journal line of test name with change.
func editJournalTest(t *testing.T, dir, name string, change func(*result.Test)) {
	t.Helper()
	p := filepath.Join(dir, layout.Journal)
	lines := strings.Split(strings.TrimSuffix(readFile(t, p), "\n"), "\n")
	found := false
	for i, l := range lines {
		var rec struct {
			Test *result.Test `json:"test"`
		}
		if json.Unmarshal([]byte(l), &rec) != nil || rec.Test == nil || rec.Test.Name != name {
			continue
		}
		change(rec.Test)
		data, err := json.Marshal(rec)
		assert.NilError(t, err)
		lines[i], found = string(data), true
	}
	assert.Assert(t, found, "no journal line of %s", name)
	assert.NilError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}

// rejudgedAs replaces test name of the folder's journal by what its raw
// outputs give with params: the forger's consistent journal.
func rejudgedAs(t *testing.T, dir, name string, params map[string]string) {
	t.Helper()
	run, _, err := resultsdir.Load(dir)
	assert.NilError(t, err)
	s, err := resultsdir.KeptBaseline(dir, run.SKU)
	assert.NilError(t, err)
	host := (&cliopts.Common{}).Host()
	defer host.Close()
	editJournalTest(t, dir, name, func(tt *result.Test) {
		tt.Params = params
		got, err := runner.JudgeAgain(context.Background(), host, s, dir, run, *tt)
		assert.NilError(t, err)
		got.Raw, got.Duration, got.Preflight, got.Params, got.Started = tt.Raw, tt.Duration, tt.Preflight, tt.Params, tt.Started
		*tt = got
	})
}

// The forgeries of issue 29: a failed run, or a check that failed, made
// into a folder every file of which matches a fresh sign-off. verify
// re-derives every verdict it reports, the run's included, from the raw
// outputs and the SKU rules; what it cannot re-derive is a finding.
func TestVerifyRefusesForgedSignOffs(t *testing.T) {
	failed := failedRun(t)
	xid := filepath.Join(t.TempDir(), "xid")
	code, out, errs := cli(t, "check", "--sku", "h200", "--test", "health.node", "--nodes", "1", "--gpus-per-node", "1", "--out", xid,
		"../../plugins/health/testdata/h200/dmesg-xid79.txt")
	assert.Equal(t, code, 1, out+errs)
	dropFailed := func(suite string) func(string) {
		return func(dir string) {
			assert.NilError(t, os.RemoveAll(filepath.Join(dir, "raw/nccl.all_reduce")))
			edit(t, filepath.Join(dir, layout.Journal), `(?m)^\{"test":\{"name":"nccl\.all_reduce".*\n`, ``)
			edit(t, filepath.Join(dir, layout.Journal), `"nccl\.all_reduce",`, ``)
			edit(t, filepath.Join(dir, layout.Journal), `"suite":"singlenode"`, `"suite":"`+suite+`"`)
		}
	}
	replayed := replayRun(t)
	cases := []struct {
		name   string
		signed string
		change func(dir string)
		want   []string
	}{
		{"failed test dropped, suite renamed check", failed, dropFailed("check"),
			[]string{`MISMATCH suite "check" with launcher "replay": only gpuaccept check writes suite "check"`}},
		{"failed test dropped, suite renamed a look-alike", failed, dropFailed("singl\u0435node"),
			[]string{`MISMATCH suite "singl\u0435node" is not a suite of baseline/h200.yaml`}},
		{"failed test dropped, suite renamed one the baseline has not", failed, dropFailed("nosuch"),
			[]string{`MISMATCH suite "nosuch" is not a suite of baseline/h200.yaml`}},
		{"no journal, run status pass", failed, func(dir string) {
			assert.NilError(t, os.Remove(filepath.Join(dir, layout.Journal)))
			edit(t, filepath.Join(dir, layout.Results), `"status": "fail",(\n  "sku")`, `"status": "pass",${1}`)
		}, []string{"MISMATCH journal.jsonl: missing: the run cannot be re-derived from results.json"}},
		{"second document appended to results.json", failed, func(dir string) {
			f, err := os.OpenFile(filepath.Join(dir, layout.Results), os.O_APPEND|os.O_WRONLY, 0)
			assert.NilError(t, err)
			_, err = f.WriteString(`{"status":"pass"}` + "\n")
			assert.NilError(t, err)
			assert.NilError(t, f.Close())
		}, []string{"MISMATCH results.json: more than one JSON document"}},
		{"a fail made an error by deleting its raw outputs", failed, func(dir string) {
			assert.NilError(t, os.RemoveAll(filepath.Join(dir, "raw/nccl.all_reduce")))
			editJournalTest(t, dir, "nccl.all_reduce", func(tt *result.Test) {
				*tt = result.Test{Name: tt.Name, Status: result.Error, Message: "could not start: launcher lost", Scope: tt.Scope, Metrics: []result.Judged{}}
			})
		}, []string{"REJUDGED nccl.all_reduce: recorded an error with no raw output"}},
		{"raw folder no test claims", failed, func(dir string) {
			assert.NilError(t, os.CopyFS(filepath.Join(dir, resultsdir.AttemptDir("nccl.all_reduce", 1)), os.DirFS(filepath.Join(dir, resultsdir.TestDir("nccl.all_reduce")))))
		}, []string{"MISMATCH raw/nccl.all_reduce.attempt-1: no test or attempt of the journal has its raw outputs there"}},
		{"forged parameter in a check folder", xid, func(dir string) {
			rejudgedAs(t, dir, "health.node", map[string]string{"xid_fatal": "48"})
		}, []string{`MISMATCH health.node ran with parameters suite check does not give: xid_fatal=48 (--param or an edited journal): judged with the suite's own, the raw outputs give health.node: fail, not pass`}},
		{"another version claimed, junit.xml says no failure", failed, func(dir string) {
			edit(t, filepath.Join(dir, layout.JUnit), `failures="[1-9][0-9]*"`, `failures="0"`)
			edit(t, filepath.Join(dir, layout.Journal), `"gpuaccept_version":"dev"`, `"gpuaccept_version":"v0.9.0"`)
			edit(t, filepath.Join(dir, layout.Results), `"gpuaccept_version": "dev"`, `"gpuaccept_version": "v0.9.0"`)
			assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
			_, err := manifest.Write(dir, "v0.9.0", "h200")
			assert.NilError(t, err)
		}, []string{`MISMATCH junit.xml: differs from the one this gpuaccept ("dev") renders from the journal and the baseline copy, from line`, `the manifest says gpuaccept "v0.9.0" made it`}},
		{"legacy manifest, junit.xml says no failure", failed, func(dir string) {
			edit(t, filepath.Join(dir, layout.JUnit), `failures="[1-9][0-9]*"`, `failures="0"`)
			assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
			m, err := manifest.Write(dir, "dev", "h200")
			assert.NilError(t, err)
			var files []manifest.Entry
			for _, f := range m.Files {
				if strings.HasPrefix(f.Path, "raw/") || strings.HasPrefix(f.Path, "baseline/") || f.Path == layout.Journal {
					files = append(files, f)
				}
			}
			m.Format, m.Files = 0, files
			data, err := json.MarshalIndent(m, "", "  ")
			assert.NilError(t, err)
			assert.NilError(t, os.WriteFile(filepath.Join(dir, layout.Manifest), data, 0o644))
		}, []string{`MISMATCH junit.xml: not hashed by a format 1 manifest`}},
		// The H200 recordings that ship in the binary, relabelled as a run
		// on a Slurm cluster.
		{"the shipped recordings relabelled a slurm run", replayed, func(dir string) {
			edit(t, filepath.Join(dir, layout.Journal), `"launcher":"replay"`, `"launcher":"slurm"`)
		}, []string{"MISMATCH 12 files of the raw outputs are byte for byte the recordings this gpuaccept ships (raw/",
			"they were recorded on the project's own machine, not on the cluster this run (launcher slurm) names"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, c.signed)
			c.change(dir)
			var args []string
			switch {
			case strings.Contains(c.name, "version") || strings.Contains(c.name, "legacy"):
				args = []string{"--digest", digestOf(t, dir)}
			case strings.Contains(c.name, "appended"):
				// gpuaccept report would render results.json again.
				regenerate(t, dir)
				args = []string{"--digest", digestOf(t, dir)}
			default:
				args = resign(t, dir)
			}
			code, out, errs := cli(t, append([]string{"verify", dir}, args...)...)
			out = strings.ReplaceAll(out, dir, "DIR")
			assert.Equal(t, code, 1, out+errs)
			assert.Assert(t, strings.Contains(out, "verify: FAILED"), out)
			for _, w := range c.want {
				assert.Assert(t, strings.Contains(out, w), "want %q in\n%s", w, out)
			}
		})
	}
}

// A replay of the shipped recordings (the demo, --launcher replay)
// verifies, saying it is no sign-off of hardware, and which hosts and
// GPUs its raw outputs name.
func TestVerifySaysAReplayOfShippedRecordings(t *testing.T) {
	code, out, errs := cli(t, "verify", replayRun(t))
	assert.Equal(t, code, 0, out+errs)
	for _, w := range []string{"NOTE 12 files of the raw outputs are the recordings this gpuaccept ships (raw/",
		"the run is a replay of them (launcher replay), no sign-off of any cluster's hardware",
		"; its raw outputs are the recordings gpuaccept ships: no sign-off of hardware\n",
		// What a customer matches with the machines received.
		"\nthe raw outputs name hosts vm; GPUs NVIDIA H200\n"} {
		assert.Assert(t, strings.Contains(out, w), "want %q in\n%s", w, out)
	}
}

// report recomputes the run's status from its tests: a results.json whose
// top-level status says pass over failed tests (no journal to read) does
// not print PASS nor exit 0.
func TestReportRecomputesRunStatus(t *testing.T) {
	dir := copyDir(t, failedRun(t))
	assert.NilError(t, os.Remove(filepath.Join(dir, layout.Journal)))
	assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
	edit(t, filepath.Join(dir, layout.Results), `"status": "fail",(\n  "sku")`, `"status": "pass",${1}`)
	code, out, errs := cli(t, "report", dir)
	assert.Equal(t, code, 1, out+errs)
	assert.Assert(t, strings.Contains(out, "FAIL: SKU h200, suite singlenode"), out)
}

// A rule added to the kept baseline copy (min_gpus: 4) makes the failed
// test a skip that runs nothing: the built-in suite runs it, so its
// verdict against the built-in baseline cannot be re-derived.
func TestVerifySkipByKeptBaselineOnly(t *testing.T) {
	builtin, err := os.ReadFile("../../baselines/h200.yaml")
	assert.NilError(t, err)
	lax := strings.Replace(string(builtin), "    tests:\n      - test: nccl.all_reduce\n", "    tests:\n      - test: nccl.all_reduce\n        min_gpus: 4\n", 1)
	assert.Assert(t, lax != string(builtin))
	bl := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(bl, "h200.yaml"), []byte(lax), 0o644))
	replay := filepath.Join(t.TempDir(), "replay")
	assert.NilError(t, os.CopyFS(replay, os.DirFS(healthy)))
	assert.NilError(t, os.RemoveAll(filepath.Join(replay, "nccl.all_reduce")))
	assert.NilError(t, os.CopyFS(filepath.Join(replay, "nccl.all_reduce"), os.DirFS(p2poffAllReduce)))
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errs := cli(t, "--sku", "h200", "--baselines", bl, "--suite", "singlenode", "--launcher", "replay", "--replay-dir", replay,
		"--gpus-per-node", "2", "--out", dir)
	assert.Equal(t, code, 0, out+errs)
	code, out, errs = cli(t, "verify", dir)
	assert.Equal(t, code, 1, out+errs)
	assert.Assert(t, strings.Contains(out, "MISMATCH nccl.all_reduce: skipped by the kept copy's suite singlenode (needs at least 4 GPUs"), out)
	assert.Assert(t, !strings.Contains(out, "the raw outputs give the same verdicts"), out)
}

// retriedRun makes the results folder of a run with --retries 2 in which
// nccl.all_reduce errors on its first attempt (as a flaky node does) and
// passes on the second: a WARN, its first attempt kept in
// raw/nccl.all_reduce.attempt-1 and in the journal.
func retriedRun(t *testing.T) string {
	t.Helper()
	bin := standin(t)
	rec, _ := filepath.Abs(healthy)
	t.Setenv("STANDIN_RECORDINGS", rec)
	flaky := t.TempDir()
	mark := filepath.Join(flaky, "failed-once")
	script := "#!/bin/bash\nif [ ! -e " + mark + " ]; then touch " + mark + "; echo 'NCCL WARN transport failure'; exit 3; fi\nexec -a \"$0\" " + filepath.Join(bin, "all_reduce_perf") + " \"$@\"\n"
	assert.NilError(t, os.WriteFile(filepath.Join(flaky, "all_reduce_perf"), []byte(script), 0o755))
	out := filepath.Join(t.TempDir(), "results")
	code, stdout, errs := cli(t, "--sku", "h200", "--suite", "singlenode", "--launcher", "local", "--gpus-per-node", "2",
		"--test", "nccl.all_reduce", "--retries", "2", "--param", "bindir="+flaky, "--out", out)
	assert.Equal(t, code, 0, stdout+errs)
	return out
}

// Issue 29: a retried test's first attempt deleted (its raw folder and
// its place in the test's attempts) and the WARN made a PASS, re-signed.
// The run records the retries it allowed and every attempt as it ends
// (a journal line of its own, and each attempt's number), so the
// attempt taken out is found.
func TestVerifyDeletedAttempt(t *testing.T) {
	dir := retriedRun(t)
	run, _, err := resultsdir.Load(dir)
	assert.NilError(t, err)
	assert.Assert(t, run.Retries != nil && *run.Retries == 2)
	assert.Equal(t, run.Tests[0].Status, result.Warn)
	assert.Equal(t, run.Tests[0].Attempt, 2)
	assert.Equal(t, len(run.Ended), 1)
	assert.Equal(t, run.Ended[0].Attempt, 1)
	assert.Equal(t, run.Ended[0].Status, result.Error)
	// The shipped recordings replayed by the stand-in are named whatever
	// the forgery.
	shipped := "of the raw outputs are byte for byte the recordings this gpuaccept ships"
	code, out, _ := cli(t, "verify", dir)
	assert.Equal(t, code, 1, out)
	onlyFindings(t, out, shipped)

	deleteAttempt := func(renumber bool) func(string) {
		return func(dir string) {
			assert.NilError(t, os.RemoveAll(filepath.Join(dir, resultsdir.AttemptDir("nccl.all_reduce", 1))))
			rejudgedAs(t, dir, "nccl.all_reduce", nil)
			editJournalTest(t, dir, "nccl.all_reduce", func(tt *result.Test) {
				tt.Attempts, tt.Attempt = nil, 2
				if renumber {
					tt.Attempt = 1
				}
			})
		}
	}
	for _, c := range []struct {
		name   string
		change func(string)
		want   []string
	}{
		{"first attempt deleted, WARN made PASS", deleteAttempt(false), []string{
			"MISMATCH nccl.all_reduce: its last attempt is attempt 2, but the run keeps 0 earlier attempts",
			"MISMATCH nccl.all_reduce: the journal recorded 1 attempt ending before its last (1 error), the test keeps 0"}},
		{"first attempt deleted, last renumbered 1", deleteAttempt(true), []string{
			"MISMATCH nccl.all_reduce: the journal recorded 1 attempt ending before its last (1 error), the test keeps 0"}},
		{"more attempts than the run allowed", func(dir string) {
			edit(t, filepath.Join(dir, layout.Journal), `"retries":2`, `"retries":0`)
		}, []string{"MISMATCH nccl.all_reduce: 2 attempts, but the run allowed 0 retries (--retries)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			forged := copyDir(t, dir)
			c.change(forged)
			digest := resign(t, forged)
			run, _, err := resultsdir.Load(forged)
			assert.NilError(t, err)
			code, out, _ := cli(t, append([]string{"verify", forged}, digest...)...)
			assert.Equal(t, code, 1, out)
			for _, w := range c.want {
				assert.Assert(t, strings.Contains(out, w), "want %q in\n%s", w, out)
			}
			onlyFindings(t, out, append(c.want, shipped)...)
			if c.name != "more attempts than the run allowed" {
				assert.Equal(t, run.Tests[0].Status, result.Pass) // the forgery is a PASS
			}
		})
	}
}
