package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	gojunit "github.com/joshdk/go-junit"
	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// replayRun makes a results folder from the healthy H200 recording, the
// way a run on the GPUs makes one.
func replayRun(t *testing.T, extra ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "results")
	code, stdout, errs := cli(t, append([]string{"--sku", "h200", "--suite", "singlenode", "--launcher", "replay", "--replay-dir", healthy,
		"--gpus-per-node", "2", "--out", out}, extra...)...)
	assert.Equal(t, code, 0, stdout+errs)
	return out
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	assert.NilError(t, filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	}))
	return dst
}

func edit(t *testing.T, p string, re, repl string) {
	t.Helper()
	data := readFile(t, p)
	changed := regexp.MustCompile(re).ReplaceAllString(data, repl)
	assert.Assert(t, changed != data, "edit of %s changed nothing", p)
	assert.NilError(t, os.WriteFile(p, []byte(changed), 0o644))
}

// A sign-off checks out untouched; an edited raw output, baseline copy or
// journal is caught, with the file named, and a changed number is caught
// again by re-judging.
// verifyChanged runs gpuaccept verify on a copy of the results folder
// signed after change tampered with it, and wants its exit code and every
// line of want in its output (the folder's path written DIR).
func verifyChanged(t *testing.T, signed string, change func(dir string), code int, want []string) {
	t.Helper()
	dir := copyDir(t, signed)
	change(dir)
	got, out, errs := cli(t, "verify", dir)
	out = strings.ReplaceAll(out, dir, "DIR")
	assert.Equal(t, got, code, out+errs)
	for _, w := range want {
		assert.Assert(t, strings.Contains(out, w), "want %q in\n%s", w, out)
	}
}

func TestVerify(t *testing.T) {
	signed := replayRun(t)
	for _, f := range []string{layout.Manifest, "baseline/h200.yaml", layout.Journal, layout.HTML, layout.Markdown, layout.JUnit} {
		assert.Assert(t, fileExists(filepath.Join(signed, f)), f)
	}
	cases := []struct {
		name   string
		change func(dir string)
		code   int
		want   []string
	}{
		// 20 raw outputs, baseline copy and journal; 5 reports.
		{"untouched", func(string) {}, 0, []string{"verify: OK: 26 files match the manifest; 6 tests re-judged against baseline/h200.yaml (built-in h200 baseline) give the recorded verdicts (run pass)"}},
		{"reports rebuilt", func(dir string) {
			code, out, errs := cli(t, "report", dir)
			assert.Equal(t, code, 0, out+errs)
		}, 0, []string{"verify: OK"}},
		{"raw output edited", func(dir string) {
			// all_reduce at 4 GiB, out-of-place busbw 344.0 -> 144.0 GB/s
			edit(t, filepath.Join(dir, "raw/nccl.all_reduce/all_reduce.files/all_reduce.json"), `("size": 4294967296,[^}]*"out_of_place": \{[^}]*"bus_bw": )3`, "${1}1")
		}, 1, []string{
			"MISMATCH raw/nccl.all_reduce/all_reduce.files/all_reduce.json: edited since the run",
			"REJUDGED nccl.all_reduce: recorded pass, re-judged error (all_reduce.log and all_reduce.json disagree",
			"REJUDGED nccl.all_reduce: busbw[out-of-place] at 4 GiB redop=sum type=float recorded as 344.031485 GB/s, raw output says 144.031485",
		}},
		{"baseline edited", func(dir string) {
			edit(t, filepath.Join(dir, "baseline/h200.yaml"), `\{size: 4G, value: [0-9.]+\}`, "{size: 4G, value: 420.0}")
		}, 1, []string{
			"MISMATCH baseline/h200.yaml: edited since the run",
			"REJUDGED nccl.all_reduce: recorded pass, re-judged fail",
		}},
		{"verdict edited in the journal", func(dir string) {
			edit(t, filepath.Join(dir, layout.Journal), `"status":"pass","expected"`, `"status":"warn","expected"`)
		}, 1, []string{"MISMATCH journal.jsonl: edited since the run", "REJUDGED nccl.all_"}},
		{"verdict edited in results.json", func(dir string) {
			edit(t, filepath.Join(dir, layout.Results), `"status": "pass",(\n  "sku")`, `"status": "warn",${1}`)
		}, 1, []string{"MISMATCH results.json: edited since the run", `MISMATCH results.json: status is "warn", re-derived from raw/ and the journal: "pass"`}},
		{"raw output removed", func(dir string) {
			assert.NilError(t, os.Remove(filepath.Join(dir, "raw/nccl.sendrecv/sendrecv.log")))
		}, 1, []string{"MISMATCH raw/nccl.sendrecv/sendrecv.log: missing"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { verifyChanged(t, signed, c.change, c.code, c.want) })
	}
	code, _, errs := cli(t, "verify", t.TempDir())
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(errs, "read manifest"), errs)
}

// standinSuite writes a SKU folder whose suite "stops" runs all_reduce,
// then an all_gather that hangs (the stand-in sleeps), then alltoall.
func standinSuite(t *testing.T) string {
	dir := t.TempDir()
	src := readFile(t, "../../baselines/h200.yaml")
	suite := "suites:\n  stops:\n    nodes: 1\n    params: {maxbytes: 4G}\n    tests:\n      - test: nccl.all_reduce\n" +
		"      - test: nccl.all_gather\n        params: {env.STANDIN_SLEEP: 60s}\n      - test: nccl.alltoall\n"
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "h200.yaml"), []byte(strings.Replace(src, "suites:\n", suite, 1)), 0o644))
	return dir
}

// killStragglers kills, by pid, the stand-in processes still running from
// bin (orphaned when their gpuaccept was killed).
func killStragglers(t *testing.T, bin string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil || !strings.HasPrefix(string(data), bin) {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(filepath.Base(filepath.Dir(p)), &pid); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// childrenServingPlugins lists the pids of parent's children that serve a
// plugin ("... plugin serve NAME").
func childrenServingPlugins(parent int) []int {
	var pids []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
		var state string
		var ppid int
		if _, err := fmt.Sscan(rest, &state, &ppid); err != nil || ppid != parent {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
		if strings.Contains(string(cmdline), "plugin\x00serve") {
			var pid int
			fmt.Sscan(filepath.Base(filepath.Dir(p)), &pid)
			pids = append(pids, pid)
		}
	}
	return pids
}

// isZombie reports whether pid has exited and waits to be reaped.
func isZombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
	var state string
	fmt.Sscan(rest, &state)
	return state == "Z"
}

// Nothing lost: a run stopped by Ctrl-C, or killed outright while a test
// hangs, leaves the finished test's result and raw outputs on disk, and
// gpuaccept report rebuilds every report from them.
func TestStoppedRunKeepsResults(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			bin := standin(t)
			defer killStragglers(t, bin)
			rec, _ := filepath.Abs(healthy)
			out := filepath.Join(t.TempDir(), "results")
			cmd := exec.Command(os.Args[0], "--sku", "h200", "--suite", "stops", "--baselines", standinSuite(t), "--launcher", "local",
				"--gpus-per-node", "2", "--param", "bindir="+bin, "--out", out)
			cmd.Env = append(os.Environ(), "GPUACCEPT_TEST_AS_CLI=1", "STANDIN_RECORDINGS="+rec)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			assert.NilError(t, cmd.Start())
			// Wait until all_reduce is journaled and all_gather has printed
			// its curve (the stand-in prints the whole recording, then
			// sleeps; the launcher creates the log before the step starts,
			// so the file alone says nothing was printed yet).
			deadline := time.Now().Add(60 * time.Second)
			for !(strings.Count(readIfExists(filepath.Join(out, layout.Journal)), "\n") >= 2 && strings.Contains(readIfExists(filepath.Join(out, "raw/nccl.all_gather/all_gather.log")), "Avg bus bandwidth")) {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("the run did not get to all_gather: %s %s", stdout.String(), stderr.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			plugins := childrenServingPlugins(cmd.Process.Pid)
			assert.Assert(t, len(plugins) > 0, "no plugin process found under the run")
			assert.NilError(t, cmd.Process.Signal(sig))
			err := cmd.Wait()
			assert.Assert(t, err != nil, "the run ended well after %s", sig)
			if sig == syscall.SIGINT {
				// Nothing had failed when Ctrl-C came: 130, not an error's 3.
				assert.Equal(t, cmd.ProcessState.ExitCode(), 130, stderr.String())
				assert.Assert(t, strings.Contains(stderr.String(), "interrupted (Ctrl-C or SIGTERM)"), stderr.String())
			}
			// Its plugin processes follow it, even after SIGKILL.
			for _, pid := range plugins {
				deadline := time.Now().Add(15 * time.Second)
				for syscall.Kill(pid, 0) == nil && !isZombie(pid) {
					if time.Now().After(deadline) {
						syscall.Kill(pid, syscall.SIGKILL)
						t.Fatalf("plugin process %d outlived its gpuaccept (%s)", pid, sig)
					}
					time.Sleep(100 * time.Millisecond)
				}
			}

			if sig == syscall.SIGINT {
				// Ctrl-C: the launcher stopped the hung test; reports written.
				assert.Assert(t, fileExists(filepath.Join(out, layout.Results)), stderr.String())
			} else {
				assert.Assert(t, !fileExists(filepath.Join(out, layout.Results)), "a killed run wrote its reports?")
			}
			assert.Assert(t, fileExists(filepath.Join(out, "raw/nccl.all_reduce/all_reduce.log")))
			code, stdoutR, errs := cli(t, "report", out, "--format", "json")
			assert.Equal(t, code, 3, stdoutR+errs)
			var run result.Run
			assert.NilError(t, json.Unmarshal([]byte(stdoutR), &run))
			assert.Equal(t, len(run.Tests), 3)
			assert.Equal(t, run.Tests[0].Name, "nccl.all_reduce")
			assert.Equal(t, run.Tests[0].Status, result.Pass)
			assert.Equal(t, run.Tests[1].Status, result.Error)
			if sig == syscall.SIGINT {
				// The hung test says it was stopped, not that parsing failed.
				assert.Assert(t, strings.HasPrefix(run.Tests[1].Message, "stopped: the run was interrupted (Ctrl-C or SIGTERM) after "), run.Tests[1].Message)
				assert.Assert(t, strings.Contains(run.Tests[1].Message, "; process group killed; "), run.Tests[1].Message)
				// The stand-in printed its curve before it hung: kept.
				assert.Assert(t, strings.HasSuffix(run.Tests[1].Message, fmt.Sprintf("; the %d points measured before the stop are kept", len(run.Tests[1].Metrics))), run.Tests[1].Message)
				assert.Assert(t, len(run.Tests[1].Metrics) > 0)
				assert.Assert(t, !strings.Contains(run.Tests[1].Message, "parse:"), run.Tests[1].Message)
			}
			assert.Equal(t, run.Tests[2].Status, result.Error)
			for _, f := range []string{layout.Results, layout.JUnit, layout.HTML, layout.Markdown, layout.Table, layout.Manifest} {
				assert.Assert(t, fileExists(filepath.Join(out, f)), f)
			}
			// A stopped run is no sign-off: verify cannot re-derive the
			// verdicts of the tests that did not finish, nor of a site's
			// suite against the built-in SKU rules, and the stand-in
			// prints the recordings gpuaccept ships. Those, and nothing
			// else, are its findings.
			code, vout, _ := cli(t, "verify", out)
			assert.Equal(t, code, 1, vout)
			onlyFindings(t, vout, "recorded an error with no raw output (not ", "of the raw outputs are byte for byte the recordings this gpuaccept ships",
				`suite "stops" is not a suite of this gpuaccept's built-in h200 baseline`, ": the raw outputs of a test that did not finish")
		})
	}
}

// No secret in any artifact: a token planted in the run's environment,
// which the stand-in writes into its -J JSON as nccl-tests does, and a
// secret parameter appear nowhere in the results folder, the extra JUnit
// and HTML files, or what gpuaccept printed; not after report and verify
// either.
func TestNoSecretInAnyArtifact(t *testing.T) {
	bin := standin(t)
	rec, _ := filepath.Abs(healthy)
	t.Setenv("STANDIN_RECORDINGS", rec)
	const token, param = "hf_Zx81planted0secret77Q", "glpat-planted-param-9931"
	t.Setenv("HF_TOKEN", token)
	dir := t.TempDir()
	out := filepath.Join(dir, "results")
	junit, html := filepath.Join(dir, "ci.xml"), filepath.Join(dir, "page.html")
	code, stdout, errs := cli(t, "--sku", "h200", "--suite", "singlenode", "--launcher", "local", "--gpus-per-node", "2", "--retries", "1",
		"--param", "bindir="+bin, "--param", "env.GITLAB_TOKEN="+param, "--out", out, "--junit", junit, "--html", html, "--format", "markdown")
	assert.Equal(t, code, 0, stdout+errs)
	printed := stdout + errs
	code, o, e := cli(t, "report", out, "--format", "json")
	assert.Equal(t, code, 0, o+e)
	printed += o + e
	// The stand-in prints the recordings gpuaccept ships, as if on this
	// machine's GPUs: verify says that, and nothing else.
	code, o, e = cli(t, "verify", out)
	assert.Equal(t, code, 1, o+e)
	assert.Assert(t, strings.Contains(o, "verify: FAILED: 1 finding") && strings.Contains(o, "of the raw outputs are byte for byte the recordings this gpuaccept ships"), o)
	printed += o + e
	// The plant took: the token reached the raw JSON, masked.
	assert.Assert(t, strings.Contains(readFile(t, filepath.Join(out, "raw/nccl.all_reduce/all_reduce.files/all_reduce.json")), "HF_TOKEN=[REDACTED]"))
	files := 0
	assert.NilError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			files++
			data := readFile(t, p)
			assert.Assert(t, !strings.Contains(data, token), "token leaked into %s", p)
			assert.Assert(t, !strings.Contains(data, param), "secret parameter leaked into %s", p)
		}
		return err
	}))
	assert.Assert(t, files > 25, "only %d files looked at", files)
	assert.Assert(t, !strings.Contains(printed, token) && !strings.Contains(printed, param), printed)
}

// --retries: a test that errors and then passes is a warn, and every
// attempt is its own JUnit testsuite with its own raw outputs.
func TestRetries(t *testing.T) {
	bin := standin(t)
	rec, _ := filepath.Abs(healthy)
	t.Setenv("STANDIN_RECORDINGS", rec)
	mark := filepath.Join(t.TempDir(), "failed-once")
	// all_reduce_perf fails its first start (as a flaky node would), then
	// replays the recording.
	real := filepath.Join(bin, "all_reduce_perf.real")
	assert.NilError(t, os.Rename(filepath.Join(bin, "all_reduce_perf"), real))
	script := "#!/bin/bash\nif [ ! -e " + mark + " ]; then touch " + mark + "; echo 'NCCL WARN transport failure'; exit 3; fi\nexec -a \"$0\" " + real + " \"$@\"\n"
	assert.NilError(t, os.WriteFile(filepath.Join(bin, "all_reduce_perf"), []byte(script), 0o755))
	out := filepath.Join(t.TempDir(), "results")
	code, stdout, errs := cli(t, "--sku", "h200", "--suite", "singlenode", "--launcher", "local", "--gpus-per-node", "2",
		"--test", "nccl.all_reduce", "--retries", "2", "--param", "bindir="+bin, "--out", out, "--format", "json")
	assert.Equal(t, code, 0, stdout+errs)
	var run result.Run
	assert.NilError(t, json.Unmarshal([]byte(stdout), &run))
	tt := run.Tests[0]
	assert.Equal(t, tt.Status, result.Warn)
	assert.Assert(t, strings.HasPrefix(tt.Message, "passed on attempt 2 of 2; attempt 1: "), tt.Message)
	assert.Equal(t, len(tt.Attempts), 1)
	assert.Equal(t, tt.Attempts[0].Status, result.Error)
	assert.DeepEqual(t, tt.Attempts[0].Raw, []string{"raw/nccl.all_reduce.attempt-1/all_reduce.log"})
	assert.Assert(t, strings.Contains(readFile(t, filepath.Join(out, tt.Attempts[0].Raw[0])), "NCCL WARN transport failure"))
	suites, err := gojunit.IngestFile(filepath.Join(out, layout.JUnit))
	assert.NilError(t, err)
	assert.Equal(t, len(suites), 2)
	assert.Equal(t, suites[0].Name, "nccl.all_reduce (attempt 1 of 2)")
	assert.Equal(t, suites[0].Tests[0].Status, gojunit.StatusError)
	assert.Equal(t, suites[1].Name, "nccl.all_reduce (attempt 2 of 2)")
	// The attempts verify; the stand-in prints the recordings gpuaccept
	// ships, which verify names.
	code, vout, _ := cli(t, "verify", out)
	assert.Equal(t, code, 1, vout)
	onlyFindings(t, vout, "1 file of the raw outputs are byte for byte the recordings this gpuaccept ships")
}

// onlyFindings wants at least one finding in verify's output out, and
// each to hold one of allowed.
func onlyFindings(t *testing.T, out string, allowed ...string) {
	t.Helper()
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "MISMATCH ") && !strings.HasPrefix(l, "REJUDGED ") {
			continue
		}
		n++
		ok := false
		for _, a := range allowed {
			ok = ok || strings.Contains(l, a)
		}
		assert.Assert(t, ok, "unexpected finding %q in\n%s", l, out)
	}
	assert.Assert(t, n > 0, out)
}

// check takes the report flags of a run: old logs get the same reports.
func TestCheckReports(t *testing.T) {
	dir := t.TempDir()
	out, html, junit := filepath.Join(dir, "out"), filepath.Join(dir, "page.html"), filepath.Join(dir, "j.xml")
	code, stdout, errs := cli(t, "check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2",
		"--out", out, "--html", html, "--junit", junit, "--format", "markdown", degradedLog(t))
	assert.Equal(t, code, 1, stdout+errs)
	assert.Assert(t, strings.HasPrefix(stdout, "**gpuaccept FAIL: SKU h200, suite check"), stdout)
	assert.Assert(t, strings.Contains(stdout, "| nccl.all_reduce | FAIL   |"), stdout)
	for _, f := range []string{html, junit, filepath.Join(out, layout.HTML), filepath.Join(out, layout.JUnit), filepath.Join(out, layout.Results)} {
		assert.Assert(t, fileExists(f), f)
	}
	page := readFile(t, html)
	assert.Assert(t, strings.Contains(page, `data-curves="2" data-bands="2"`), "plot of the checked log against the band")
	// A check folder re-renders too.
	code, o, e := cli(t, "report", out)
	assert.Equal(t, code, 1, o+e)
}

func readIfExists(p string) string {
	data, _ := os.ReadFile(p)
	return string(data)
}

// Every shipped recording, replayed into a results folder, verifies clean:
// verify re-judges the raw outputs and must find the numbers recorded, for
// every plugin's metrics (Mori-EP's differ only in phase, stat and rank).
func TestEveryRecordingVerifies(t *testing.T) {
	const r = "../../testdata/recordings/"
	h200 := []string{"--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2"}
	for _, c := range []struct {
		dir  string
		args []string
		code int
	}{
		{"h200-1x2-healthy", h200, 0},
		{"h200-1x2-mpi", append(h200, "--test", "nccl.all_reduce"), 0},
		{"h200x2-2026-11-30/ga-single/raw", h200, 0},
		{"h200x2-2026-11-30/ga-single2/raw", h200, 0},
		{"h200x2-2026-11-30/ga-mpi/raw", h200, 0},
		{"h200x2-2026-11-30/ga-p2poff/raw", h200, 1},
		{"h200x2-2026-11-30-final/single", h200, 0},
		{"h200x2-2026-11-30-final/mpi", h200, 0},
		{"h200x2-2026-11-30-final/p2poff", append(h200, "--test", "nccl.all_reduce", "--test", "nccl.alltoall"), 1},
		{"mi355x-seed004/singlenode", []string{"--sku", "mi355x", "--suite", "singlenode"}, 0},
		{"mi355x-seed004/multinode", []string{"--sku", "mi355x", "--suite", "multinode", "--param", seedPair}, 0},
	} {
		t.Run(c.dir, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "results")
			code, stdout, errs := cli(t, append(append([]string{}, c.args...), "--launcher", "replay", "--replay-dir", r+c.dir, "--out", out)...)
			assert.Equal(t, code, c.code, stdout+errs)
			code, stdout, errs = cli(t, "verify", out)
			assert.Equal(t, code, 0, stdout+errs)
			assert.Assert(t, strings.Contains(stdout, "verify: OK: "), stdout)
		})
	}
}

// Results folders written on real GPUs (2 x H200, see the folder's README)
// verify as they are, on any machine: the sign-off a vendor hands over. The
// recorded baseline from five runs gpuaccept ran itself validates.
func TestRealGPUResultsVerify(t *testing.T) {
	const r = "../../testdata/recordings/h200x2-2026-11-30-s2/"
	for _, c := range []struct{ dir, run string }{{"single", "run pass"}, {"p2poff", "run fail"}} {
		t.Run(c.dir, func(t *testing.T) {
			// verify writes nothing, but work on a copy all the same.
			dir := filepath.Join(t.TempDir(), c.dir)
			assert.NilError(t, os.CopyFS(dir, os.DirFS(r+c.dir)))
			// The reports this gpuaccept renders otherwise are findings,
			// sealed or not (issue 29, F1: they were notes when sealed).
			code, stdout, errs := cli(t, "verify", dir)
			assert.Equal(t, code, 1, stdout+errs)
			assert.Assert(t, strings.Contains(stdout, `MISMATCH report.html: not hashed by a format 1 manifest, and this gpuaccept ("dev") renders it otherwise`), stdout)
			// Their manifests (format 1) do not hash the reports: results.json
			// is re-derived all the same, and the reports that render as
			// they did are compared byte for byte; report.html (laid out
			// otherwise since) and, for the failing run, summary.md (its
			// findings now follow the message, reason first), table.txt
			// and summary.md (a Basis column since issue 30) are bound by
			// nothing, even sealed: findings (gpuaccept report makes them
			// again).
			code, stdout, errs = cli(t, "verify", dir, "--digest", digestOf(t, r+c.dir))
			assert.Equal(t, code, 1, stdout+errs)
			findings := []string{
				`MISMATCH table.txt: not hashed by a format 1 manifest, and this gpuaccept ("dev") renders it otherwise`,
				`MISMATCH summary.md: not hashed by a format 1 manifest, and this gpuaccept ("dev") renders it otherwise`,
				`MISMATCH report.html: not hashed by a format 1 manifest, and this gpuaccept ("dev") renders it otherwise`,
			}
			for _, w := range append([]string{"format 1: raw outputs, baseline copy and journal only", "verify: FAILED: " + result.Count(len(findings), "finding")}, findings...) {
				assert.Assert(t, strings.Contains(stdout, w), "want %q in\n%s", w, stdout)
			}
			// Made again by gpuaccept report, the reports are this
			// version's and re-render: the run verifies.
			rebuilt := filepath.Join(t.TempDir(), c.dir)
			assert.NilError(t, os.CopyFS(rebuilt, os.DirFS(r+c.dir)))
			for _, f := range []string{layout.HTML, layout.Markdown} {
				assert.NilError(t, os.Remove(filepath.Join(rebuilt, f)))
			}
			cli(t, "report", rebuilt)
			code, stdout, errs = cli(t, "verify", rebuilt, "--digest", digestOf(t, r+c.dir))
			assert.Equal(t, code, 0, stdout+errs)
			assert.Assert(t, strings.Contains(stdout, "verify: OK: ") && strings.Contains(stdout, c.run), stdout)
			assert.Assert(t, strings.Contains(stdout, "results.json re-derived value by value, junit.xml, report.html, summary.md and table.txt re-rendered byte for byte"), stdout)
			edit(t, filepath.Join(dir, layout.Results), `("name": "data validation",\n\s+"ok": )true`, "${1}false")
			code, stdout, _ = cli(t, "verify", dir, "--digest", digestOf(t, r+c.dir))
			assert.Equal(t, code, 1, stdout)
			assert.Assert(t, strings.Contains(stdout, "MISMATCH results.json: tests[nccl.all_reduce].checks[data validation].ok is false"), stdout)
		})
	}
	code, stdout, errs := cli(t, "baseline", "validate", r+"h200-recorded.yaml")
	assert.Equal(t, code, 0, stdout+errs)
}

// check --out makes a results folder verify checks like a run's: logs
// kept under raw/, manifest, baseline copy, journal; an edited kept log is
// caught.
func TestCheckFolderVerifies(t *testing.T) {
	const r = "../../testdata/recordings/"
	ib := r + "mi355x-seed004/multinode/raw/ibperf.write_bw/"
	for _, c := range []struct {
		name  string
		args  []string
		code  int
		tests int
		edit  string // a kept file, relative to the folder
	}{
		{"nccl log and its JSON", []string{"--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", degradedLog(t)}, 1, 1,
			"raw/nccl.all_reduce/all_reduce.files/all_reduce.json"},
		{"two nccl logs", []string{"--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", healthy + "/nccl.all_reduce/all_reduce.log",
			r + "h200x2-2026-11-30-final/mpi/raw/nccl.all_reduce/all_reduce.log"}, 0, 2, "raw/nccl.all_reduce.2/all_reduce.log"},
		{"ibperf pair", []string{"--sku", "mi355x", "--test", "ibperf.write_bw", "--nodes", "2", "--gpus-per-node", "8", ib + "server.0.log", ib + "client.0.log"}, 0, 1,
			"raw/ibperf.write_bw/client.0.log"},
		{"mori", []string{"--sku", "mi355x", "--test", "mori.ep_internode", "--nodes", "2", "--gpus-per-node", "8",
			r + "mi355x-seed004/multinode/raw/mori.ep_internode/ep_internode.log"}, 0, 1, "raw/mori.ep_internode/ep_internode.log"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "check")
			code, stdout, errs := cli(t, append(append([]string{"check", "--out", out}, c.args...), "--format", "json")...)
			assert.Equal(t, code, c.code, stdout+errs)
			code, vout, verrs := cli(t, "verify", out)
			assert.Equal(t, code, 0, vout+verrs)
			assert.Assert(t, strings.Contains(vout, result.Count(c.tests, "test")+" re-judged"), vout)
			// A number changed in a kept log is caught twice: by its hash
			// and by re-judging.
			p := filepath.Join(out, c.edit)
			edit(t, p, `([0-9])\.([0-9])`, "${2}.${1}")
			code, vout, _ = cli(t, "verify", out)
			assert.Equal(t, code, 1, vout)
			assert.Assert(t, strings.Contains(vout, "MISMATCH "+c.edit+": edited since the run"), vout)
			assert.Assert(t, strings.Contains(vout, "REJUDGED "), vout)
		})
	}
}

// report never rewrites or signs off a folder whose sign-off it would
// hide, and prints no verdict of it on stdout (a CI grepping stdout would
// read PASS): one that no longer matches its manifest keeps its files (exit 2),
// a signed one whose manifest is gone is not signed off again, and one
// signed now with --sign-key is signed only if its raw outputs give the
// recorded verdicts. verify finds a signature that no longer matches the
// manifest with no allowed signers, and refuses empty flags.
func TestReportNeverHidesATamperedSignOff(t *testing.T) {
	key, _ := sshKey(t, "ed25519", "")
	checked := func(t *testing.T, sign bool) string {
		dir := filepath.Join(t.TempDir(), "out")
		args := []string{"check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", "--out", dir}
		if sign {
			args = append(args, "--sign-key", key)
		}
		code, out, errs := cli(t, append(args, healthy+"/nccl.all_reduce/all_reduce.log")...)
		assert.Equal(t, code, 0, out+errs)
		return dir
	}
	const raw = "raw/nccl.all_reduce/all_reduce.log"
	t.Run("edited with a manifest: nothing rewritten", func(t *testing.T) {
		dir := checked(t, false)
		junit := readFile(t, filepath.Join(dir, layout.JUnit))
		edit(t, filepath.Join(dir, raw), `343\.5`, "143.5")
		code, out, errs := cli(t, "report", dir)
		assert.Equal(t, code, 2, out+errs) // bad input, not faulty hardware
		assert.Equal(t, out, "", "a verdict printed for a folder report refuses")
		assert.Assert(t, strings.Contains(errs, "not rebuilt") && strings.Contains(errs, raw+": edited since the run"), errs)
		assert.Equal(t, readFile(t, filepath.Join(dir, layout.JUnit)), junit, "junit.xml rewritten")
	})
	t.Run("signed, manifest removed: not signed off again", func(t *testing.T) {
		dir := checked(t, true)
		assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
		code, out, errs := cli(t, "report", dir)
		assert.Equal(t, code, 2, out+errs) // bad input, not faulty hardware
		assert.Equal(t, out, "", "a verdict printed for a folder report refuses")
		assert.Assert(t, strings.Contains(errs, "holds manifest.json.sig but no manifest.json"), errs)
		_, err := os.Stat(filepath.Join(dir, layout.Manifest))
		assert.Assert(t, os.IsNotExist(err), "a manifest was written")
	})
	t.Run("no manifest, raw edited, --sign-key: not signed", func(t *testing.T) {
		dir := checked(t, false)
		assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
		edit(t, filepath.Join(dir, raw), `343\.5`, "143.5")
		code, out, errs := cli(t, "report", dir, "--sign-key", key)
		assert.Equal(t, code, 2, out+errs) // bad input, not faulty hardware
		assert.Equal(t, out, "", "a verdict printed for a folder report refuses")
		assert.Assert(t, strings.Contains(errs, "not signed: the raw outputs") && strings.Contains(errs, "REJUDGED nccl.all_reduce"), errs)
		_, err := os.Stat(filepath.Join(dir, layout.SigFile))
		assert.Assert(t, os.IsNotExist(err), "signed")
	})
	t.Run("signature over another manifest: verify finds it without allowed signers", func(t *testing.T) {
		dir := checked(t, true)
		edit(t, filepath.Join(dir, layout.Manifest), `"sku": "h200"`, `"sku":  "h200"`)
		code, out, errs := cli(t, "verify", dir)
		assert.Equal(t, code, 1, out+errs)
		assert.Assert(t, strings.Contains(out, "MISMATCH manifest.json.sig does not match manifest.json"), out)
	})
	t.Run("empty verify flags", func(t *testing.T) {
		dir := checked(t, false)
		for _, f := range []string{"--digest", "--allowed-signers", "--identity"} {
			code, out, errs := cli(t, "verify", dir, f, "")
			assert.Equal(t, code, 2, out+errs)
			assert.Assert(t, strings.Contains(errs, f+" is empty"), errs)
		}
	})
}

// A run that measured benchmarks it did not judge is not signed off
// whatever its results.json says: report and verify derive the verdict
// from the tests (result.Run.Finish), so a status edited to "pass" comes
// back as NOT SIGNED OFF, exit 4, from the journal or from results.json
// alone, and verify names the edit.
func TestForgedPassOfUnjudgedRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results")
	code, stdout, errs := cli(t, "--sku", "h200-site", "--baselines", siteSKU(t, "*"), "--suite", "node", "--launcher", "replay", "--gpus-per-node", "1",
		"--replay-dir", "../../testdata/recordings/h200x1-2026-12-01/node/baselined/suite", "--out", out)
	assert.Equal(t, code, exitNothingJudged, stdout+errs)
	assert.Assert(t, strings.Contains(stdout, "NOT SIGNED OFF: SKU h200-site, suite node, scope 1x1"), stdout)
	code, stdout, errs = cli(t, "verify", out)
	assert.Equal(t, code, 0, stdout+errs)
	assert.Assert(t, strings.Contains(stdout, "NOTE the run is not signed off (status skip): measured, not judged: gemm.matmul, hbm.bandwidth, hostlink.pcie"), stdout)
	// OK is the folder's, not a sign-off: the last line says the run is not.
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	last := lines[len(lines)-1]
	assert.Assert(t, strings.HasPrefix(last, "verify: OK: "), last)
	assert.Assert(t, strings.Contains(last, "(run skip: NOT SIGNED OFF: measured, not judged: gemm.matmul, hbm.bandwidth, hostlink.pcie (no baseline entry judges them at scope 1x1 in SKU h200-site: gpuaccept baseline show h200-site))"), last)

	// results.json opens with the run's own status.
	forge := func(dir string) {
		edit(t, filepath.Join(dir, layout.Results), `^\{\n  "status": "skip"`, "{\n  \"status\": \"pass\"")
	}
	forged := copyDir(t, out)
	forge(forged)
	code, stdout, errs = cli(t, "verify", forged)
	assert.Equal(t, code, 1, stdout+errs)
	assert.Assert(t, strings.Contains(stdout, "MISMATCH results.json"), stdout)

	for name, drop := range map[string][]string{"journal": {layout.Manifest}, "results.json only": {layout.Manifest, layout.Journal}} {
		t.Run(name, func(t *testing.T) {
			dir := copyDir(t, out)
			forge(dir)
			for _, f := range drop {
				assert.NilError(t, os.Remove(filepath.Join(dir, f)))
			}
			code, stdout, errs := cli(t, "report", dir)
			assert.Equal(t, code, exitNothingJudged, stdout+errs)
			assert.Assert(t, strings.Contains(stdout, "NOT SIGNED OFF: SKU h200-site"), stdout)
			assert.Assert(t, !strings.Contains(stdout, "PASS: SKU"), stdout)
		})
	}
}

// A check whose only test measured and was not judged is not signed off,
// and every report says so as the exit code (4) does: the table and
// summary.md head it NOT SIGNED OFF naming the test (not SKIP, which reads
// as if nothing ran) and show what it measured, junit.xml ends with the
// failing "sign-off" case, and verify's OK line says the run it vouches
// for is not signed off. Real output: the H200's 1x1 nccl-tests
// all_reduce (no 1x1 entry in SKU h200, and a collective has no datasheet
// floor). The busy H100's gemm of issue 28, measured and not judged then,
// fails the datasheet floor now (TestCheckOnTheDatasheetFloor).
func TestCheckMeasuredNotJudgedIsNotSignedOff(t *testing.T) {
	cases := []struct {
		name, sku, test, log string
		measured             string
	}{
		{"nccl 1x1", "h200", "nccl.all_reduce", "../../testdata/field/h200/1x1-suite-all_reduce/all_reduce.log", "busbw in-place 0.0 GB/s @ 4 GiB"}, // one rank: nccl-tests prints busbw 0
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			code, out, errs := cli(t, "check", "--sku", c.sku, "--test", c.test, "--nodes", "1", "--gpus-per-node", "1", "--out", dir, c.log)
			assert.Equal(t, code, exitNothingJudged, out+errs)
			nj := fmt.Sprintf("measured, not judged: %s (no baseline entry judges it at scope 1x1 in SKU %s: gpuaccept baseline show %s)", c.test, c.sku, c.sku)
			head := fmt.Sprintf("NOT SIGNED OFF: SKU %s, suite check, scope 1x1, launcher check: 1 skip; %s", c.sku, nj)
			assert.Assert(t, strings.Contains(out, head), out)
			assert.Assert(t, !strings.Contains(out, "SKIP: SKU"), out)
			assert.Assert(t, strings.Contains(out, "│ SKIP   │       │ "+c.measured), "measured figure missing:\n%s", out)
			summary := readFile(t, filepath.Join(dir, layout.Markdown))
			assert.Assert(t, strings.HasPrefix(summary, "**gpuaccept "+head), summary)
			assert.Assert(t, strings.Contains(summary, "| "+c.measured), summary)
			junit := readFile(t, filepath.Join(dir, layout.JUnit))
			assert.Assert(t, strings.Contains(junit, `<testcase name="sign-off" classname="gpuaccept.`+c.sku+`.check">`), junit)
			assert.Assert(t, strings.Contains(junit, `<failure message="not signed off: `+nj+`" type="not-signed-off">`), junit)
			code, out, errs = cli(t, "verify", dir)
			assert.Equal(t, code, 0, out+errs) // the folder is the sign-off its manifest describes
			lines := strings.Split(strings.TrimSpace(out), "\n")
			last := lines[len(lines)-1]
			assert.Assert(t, strings.HasPrefix(last, "verify: OK: "), last)
			assert.Assert(t, strings.Contains(last, "(run skip: NOT SIGNED OFF: "+nj+")"), last)
		})
	}
}

// With no baseline entry (the built-in h100 without its 1x1 entries), the
// SKU's datasheet floors judge a benchmark, and every report names that
// basis (issue 30): the 1-GPU H100's idle
// matmul passes and the same GPU held busy by a competing matmul fails
// (testdata/recordings/h100x1-2026-12-07, issue28), the table's Basis
// column, results.json per test and per point, the JUnit property and
// the summary line saying "floor"; verify re-derives the basis, and a
// results.json that claims a golden basis for floor-judged points is a
// finding.
func TestCheckOnTheDatasheetFloor(t *testing.T) {
	const rec = "../../testdata/recordings/h100x1-2026-12-07/issue28/"
	cases := []struct {
		name, log string
		code      int
		first     string
	}{
		{"idle", rec + "node-1/raw/gemm.matmul/alone.log", exitOK, "PASS: SKU h100, suite check, scope 1x1, launcher check: 1 pass; judged on: 1 floor"},
		{"busy", rec + "busy/raw/gemm.matmul/alone.log", exitFail, "FAIL: SKU h100, suite check, scope 1x1, launcher check: 1 fail; judged on: 1 floor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			code, out, errs := cli(t, "check", "--sku", "h100", "--baselines", h100Without1x1(t, nil), "--test", "gemm.matmul", "--nodes", "1", "--gpus-per-node", "1", "--out", dir, c.log)
			assert.Equal(t, code, c.code, out+errs)
			assert.Assert(t, strings.Contains(out, c.first), out)
			assert.Assert(t, regexp.MustCompile(`│ gemm\.matmul │ (PASS|FAIL) +│ floor │`).MatchString(out), out)
			var res struct {
				Tests []struct {
					Basis   []string `json:"basis"`
					Metrics []struct {
						Basis string `json:"basis"`
					} `json:"metrics"`
				} `json:"tests"`
			}
			assert.NilError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(dir, layout.Results))), &res))
			assert.DeepEqual(t, res.Tests[0].Basis, []string{"floor"})
			for _, m := range res.Tests[0].Metrics {
				assert.Equal(t, m.Basis, "floor")
			}
			assert.Assert(t, strings.Contains(readFile(t, filepath.Join(dir, layout.JUnit)), `<property name="basis" value="floor">`))
			code, out, errs = cli(t, "verify", dir)
			assert.Equal(t, code, 0, out+errs)

			forged := copyDir(t, dir)
			edit(t, filepath.Join(forged, layout.Results), `"basis": \[\n\s*"floor"\n\s*\]`, `"basis": ["golden"]`)
			code, out, errs = cli(t, "verify", forged)
			assert.Equal(t, code, 1, out+errs)
			assert.Assert(t, strings.Contains(out, `MISMATCH results.json: tests[gemm.matmul].basis[0] is "golden", re-derived from raw/ and the journal: "floor"`), out)
		})
	}
}
