package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// plant is a secret format of framework/redact/testdata/secrets.yaml:
// how a log shows it (Line), as an environment entry (Env), and the values
// that must not come out (Secrets).
type plant struct {
	Name    string   `yaml:"name"`
	Line    string   `yaml:"line"`
	Want    string   `yaml:"want"`
	Secrets []string `yaml:"secrets"`
	Env     string   `yaml:"env"`
}

func plants(t *testing.T) []plant {
	t.Helper()
	data, err := os.ReadFile("../../framework/redact/testdata/secrets.yaml")
	assert.NilError(t, err)
	var ps []plant
	assert.NilError(t, yaml.Unmarshal(data, &ps))
	assert.Assert(t, len(ps) >= 40)
	return ps
}

// ncclJSONString is s as nccl-tests' -J writer escapes a string (JSON,
// "/" written "\/" too, as the "env" arrays under testdata/recordings
// show).
func ncclJSONString(s string) string {
	b, _ := json.Marshal(s)
	return strings.ReplaceAll(string(b), "/", `\/`)
}

// plantedRecording copies the healthy H200 all_reduce recording into a new
// folder with every secret of the corpus planted, as a benchmark's output
// would hold them: every Line in the text log after its first line (where
// a wrapper script's trace, an env dump or an error would be), every Env
// in the -J JSON's "env" array. It is a recordings folder (replay,
// STANDIN_RECORDINGS) and its files are check's input.
func plantedRecording(t *testing.T, ps []plant) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "planted")
	src := healthy + "/nccl.all_reduce/"
	assert.NilError(t, os.MkdirAll(filepath.Join(dir, "nccl.all_reduce", "all_reduce.files"), 0o755))
	log := readFile(t, src+"all_reduce.log")
	first, rest, _ := strings.Cut(log, "\n")
	var lines, env []string
	for _, p := range ps {
		lines = append(lines, p.Line)
		env = append(env, "  "+ncclJSONString(p.Env))
	}
	log = first + "\n" + strings.Join(lines, "\n") + "\n" + rest
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "nccl.all_reduce", "all_reduce.log"), []byte(log), 0o644))
	js := readFile(t, src+"all_reduce.files/all_reduce.json")
	envList := regexp.MustCompile(`("env": \[\n)`)
	planted := envList.ReplaceAllLiteralString(js, "\"env\": [\n"+strings.Join(env, ",\n")+",\n")
	assert.Assert(t, planted != js)
	assert.Assert(t, json.Valid([]byte(planted)))
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "nccl.all_reduce", "all_reduce.files", "all_reduce.json"), []byte(planted), 0o644))
	return dir
}

// artifacts gathers what commands printed and the folders they wrote.
type artifacts struct {
	printed []string // "COMMAND: stdout+stderr"
	roots   []string // folders and files written
}

func (a *artifacts) cli(t *testing.T, want []int, args ...string) string {
	t.Helper()
	code, out, errs := cli(t, args...)
	// The command line holds the secrets it plants: it is no output.
	a.printed = append(a.printed, strings.Join(args[:min(3, len(args))], " ")+"...:\n"+out+errs)
	ok := false
	for _, w := range want {
		ok = ok || code == w
	}
	assert.Assert(t, ok, "%s: exit %d, want %v\n%s%s", strings.Join(args[:min(3, len(args))], " "), code, want, out, errs)
	return out
}

// check greps every file under the roots, and everything printed, for
// every secret of ps, naming the file and the secret's format. files is
// the least number of files looked at.
func (a *artifacts) check(t *testing.T, ps []plant, files int) {
	t.Helper()
	n := 0
	for _, root := range a.roots {
		assert.NilError(t, filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			n++
			data := readFile(t, p)
			for _, pl := range ps {
				for _, s := range pl.Secrets {
					assert.Check(t, !strings.Contains(data, s), "%s: secret of %s leaked into %s", s, pl.Name, p)
					if js := strings.Trim(ncclJSONString(s), `"`); js != s {
						assert.Check(t, !strings.Contains(data, js), "%s: secret of %s leaked, JSON-escaped, into %s", s, pl.Name, p)
					}
				}
			}
			return nil
		}))
	}
	assert.Assert(t, n >= files, "only %d files looked at", n)
	for _, out := range a.printed {
		cmd, _, _ := strings.Cut(out, "\n")
		for _, pl := range ps {
			for _, s := range pl.Secrets {
				assert.Check(t, !strings.Contains(out, s), "%s: secret of %s printed by %s", s, pl.Name, cmd)
			}
		}
	}
}

// tookRoot says the plant reached a results folder: the text log's copy
// holds every Line masked (as the pattern masks it when exact; a run that
// knows the values from its environment may mask more), the JSON's copy
// every Env's name.
func tookRoot(t *testing.T, ps []plant, raw string, exact bool) {
	t.Helper()
	log := readFile(t, filepath.Join(raw, "all_reduce.log"))
	js := readFile(t, filepath.Join(raw, "all_reduce.files", "all_reduce.json"))
	assert.Assert(t, json.Valid([]byte(js)), "the masked -J JSON is no JSON any more")
	assert.Assert(t, strings.Count(log, "[REDACTED]") >= len(ps))
	for _, p := range ps {
		assert.Check(t, !exact || strings.Contains(log, p.Want), "%s: the log's copy lacks %q", p.Name, p.Want)
		name, _, _ := strings.Cut(p.Env, "=")
		assert.Check(t, strings.Contains(js, `"`+name+"="), "%s: the JSON's copy lacks %s", p.Name, name)
	}
}

// Every secret format of the corpus, planted in a text log and in a -J
// JSON's env array, reaches no file of a check --out folder, no report
// written beside it and nothing check prints, in every format; verify
// re-judges the masked copies and signs them off; report rebuilds the
// reports from them without a secret either.
func TestNoSecretFromCheck(t *testing.T) {
	ps := plants(t)
	rec := plantedRecording(t, ps)
	log, js := filepath.Join(rec, "nccl.all_reduce", "all_reduce.log"), filepath.Join(rec, "nccl.all_reduce", "all_reduce.files", "all_reduce.json")
	out := t.TempDir()
	var a artifacts
	a.roots = []string{out}
	args := []string{"check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2"}
	folder := filepath.Join(out, "check")
	// The log finds its JSON in all_reduce.files/, as in a results folder.
	a.cli(t, []int{0, 1}, append(args, "--out", folder, "--junit", filepath.Join(out, "ci.xml"), "--html", filepath.Join(out, "page.html"), "--format", "json", log)...)
	for _, f := range []string{"table", "markdown"} {
		a.cli(t, []int{0, 1}, append(args, "--format", f, log)...)
	}
	a.cli(t, []int{0, 1}, append(args, "--format", "markdown", "--junit", filepath.Join(out, "ci2.xml"), "--out", filepath.Join(out, "json-alone"), js)...)
	tookRoot(t, ps, filepath.Join(folder, layout.Raw, "nccl.all_reduce"), true)
	verified := a.cli(t, []int{0}, "verify", folder)
	assert.Assert(t, strings.Contains(verified, "verify: OK"), verified)
	// A diagnostic quoting the line it could not read: the 1 MiB row of
	// the planted log with its out-of-place time edited into a secret.
	row := regexp.MustCompile(`(?m)^( +1048576 +262144 +float +sum +-1 +)19\.72`)
	planted := readFile(t, log)
	assert.Assert(t, row.MatchString(planted))
	quoted := filepath.Join(t.TempDir(), "all_reduce.log")
	assert.NilError(t, os.WriteFile(quoted, []byte(row.ReplaceAllString(planted, "${1}HF_TOKEN=hf_plantedInARow0000000000000000000")), 0o644))
	ps = append(ps, plant{Name: "quoted-row", Secrets: []string{"hf_plantedInARow0000000000000000000"}})
	shown := a.cli(t, []int{0, 1, 2, 3, 4}, append(args, "--format", "json", "--out", filepath.Join(out, "quoted"), "--junit", filepath.Join(out, "quoted.xml"), quoted)...)
	assert.Assert(t, strings.Contains(shown, "result row not understood"), "no diagnostic quotes the row:\n%s", shown)
	a.cli(t, []int{0, 1, 2, 3, 4}, append(args, "--format", "markdown", quoted)...)
	a.cli(t, []int{0, 1}, "report", folder, "--format", "json")
	a.check(t, ps, 10)
}

// The same for a run through the local launcher: the stand-in replays the
// planted log and writes its own environment, which holds every Env, into
// its -J JSON as nccl-tests does; then replay of the planted recording,
// report, verify, baseline record from the folders, and localise through
// the replay launcher.
func TestNoSecretFromRunReplayRecordLocalise(t *testing.T) {
	ps := plants(t)
	rec := plantedRecording(t, ps)
	bin := standin(t)
	out := t.TempDir()
	var a artifacts
	a.roots = []string{out}
	h200 := []string{"--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--test", "nccl.all_reduce"}
	run := filepath.Join(out, "run")
	t.Run("run", func(t *testing.T) {
		t.Setenv("STANDIN_RECORDINGS", rec)
		for _, p := range ps {
			k, v, _ := strings.Cut(p.Env, "=")
			t.Setenv(k, v)
		}
		a.cli(t, []int{0, 1}, append(h200, "--launcher", "local", "--param", "bindir="+bin, "--out", run,
			"--junit", filepath.Join(out, "run.xml"), "--html", filepath.Join(out, "run.html"), "--format", "json")...)
	})
	tookRoot(t, ps, filepath.Join(run, layout.Raw, "nccl.all_reduce"), false)
	replay := filepath.Join(out, "replay")
	a.cli(t, []int{0, 1}, append(h200, "--launcher", "replay", "--replay-dir", rec, "--out", replay, "--format", "markdown")...)
	tookRoot(t, ps, filepath.Join(replay, layout.Raw, "nccl.all_reduce"), true)
	for _, dir := range []string{run, replay} {
		a.cli(t, []int{0, 1}, "report", dir)
		verified := a.cli(t, []int{0}, "verify", dir)
		assert.Assert(t, strings.Contains(verified, "verify: OK"), verified)
	}
	// A results folder replays and records as it is.
	a.cli(t, []int{0, 1}, append(h200, "--launcher", "replay", "--replay-dir", run, "--out", filepath.Join(out, "rereplay"))...)
	a.cli(t, []int{0}, "baseline", "record", "--sku", "h200", "--out", filepath.Join(out, "h200.yaml"), run, replay)
	a.cli(t, []int{0}, "baseline", "record", "--sku", "h200", "--nodes", "1", "--gpus-per-node", "2", "nccl.all_reduce="+filepath.Join(rec, "nccl.all_reduce", "all_reduce.log"))
	// The per-node runs replay the planted all_reduce (the rest of the
	// single-node suite has no recording there and errors).
	a.cli(t, []int{3}, "localise", "--sku", "h200", "--suite", "multinode", "--test", "nccl.all_reduce", "--gpus-per-node", "2",
		"--launcher", "replay", "--replay-dir", rec, "--hosts", "node1,node2", "--out", filepath.Join(out, "localise"), "--format", "json")
	tookRoot(t, ps, filepath.Join(out, "localise", "localise", "nccl.all_reduce", "per-node", "node1", layout.Raw, "nccl.all_reduce"), true)
	a.check(t, ps, 30)
}

// Parameters and command lines: every Env given as --param env.NAME=...
// is masked in a dry run's commands and in a run's results; a secret in a
// flag's bad value (every format's) is masked in the error that echoes it.
func TestNoSecretFromParamsAndErrors(t *testing.T) {
	ps := plants(t)
	bin := standin(t)
	var a artifacts
	args := []string{"--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--test", "nccl.all_reduce", "--param", "bindir=" + bin}
	for _, p := range ps {
		args = append(args, "--param", "env."+p.Env)
	}
	a.cli(t, []int{0}, append(args, "--dry-run")...)
	a.cli(t, []int{0}, append(args, "--dry-run", "--launcher", "slurm", "--partition", "gpu", "--slurm-mpi", "mpirun")...)
	out := t.TempDir()
	a.roots = []string{out}
	rec, _ := filepath.Abs(healthy)
	t.Setenv("STANDIN_RECORDINGS", rec)
	a.cli(t, []int{0, 1}, append(args, "--out", filepath.Join(out, "run"), "--format", "json")...)
	for _, p := range ps {
		// A flag's bad value, echoed by its error on stderr: every format,
		// as an environment entry and as a log shows it.
		a.cli(t, []int{2}, "--sku", "h200", "--suite", "singlenode", "--timeout", p.Env)
		a.cli(t, []int{2}, "check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", p.Line, "--gpus-per-node", "2")
		if strings.HasPrefix(p.Name, "host-user-password") || strings.HasPrefix(p.Name, "url-") {
			_, v, _ := strings.Cut(p.Env, "=")
			a.cli(t, []int{2}, "--sku", "h200", "--suite", "singlenode", "--hosts", v)
			a.cli(t, []int{2}, "localise", "--sku", "h200", "--suite", "multinode", "--hosts", v+",node9")
			a.cli(t, []int{2}, "check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", v)
		}
	}
	a.check(t, ps, 5)
}

// The masking leaves what gpuaccept says of itself alone: no help text,
// listing or baseline shown has a Mask in it (KEY=VALUE in usage text,
// "PASS: SKU h200" in a verdict, max_tokens_per_rank in a Mori output).
func TestNothingMaskedInOwnOutput(t *testing.T) {
	var runs [][]string
	for _, c := range []string{"run", "check", "list", "baseline", "report", "verify", "demo", "clean", "localise", "help"} {
		runs = append(runs, []string{c, "--help"})
	}
	for _, l := range []string{"skus", "suites", "tests", "plugins", "launchers"} {
		runs = append(runs, []string{"list", l})
	}
	for _, s := range []string{"h200", "h100", "mi355x", "gb200-a4x", "a100-ndmv4", "b200-a4", "volcengine-hpcpni"} {
		runs = append(runs, []string{"baseline", "show", s})
	}
	runs = append(runs, []string{"demo"}, []string{"--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--dry-run"})
	for _, args := range runs {
		_, out, errs := cli(t, args...)
		assert.Assert(t, len(out+errs) > 0, args)
		assert.Assert(t, !strings.Contains(out+errs, "[REDACTED]"), "%v:\n%s%s", args, out, errs)
	}
}

// A sign-off that holds a secret in clear (written before gpuaccept masked
// it, or by hand) fails verify, which names the file and line, even with
// a manifest that matches it.
func TestVerifyFindsUnmaskedSecret(t *testing.T) {
	dir := replayRun(t)
	log := filepath.Join(dir, layout.Raw, "nccl.all_reduce", "all_reduce.log")
	data := readFile(t, log)
	first, rest, _ := strings.Cut(data, "\n")
	assert.NilError(t, os.WriteFile(log, []byte(first+"\n+ export HF_TOKEN=hf_plantedUnmaskedToken00000000000000\n"+rest), 0o644))
	assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
	_, err := manifest.Write(dir, "test", "h200")
	assert.NilError(t, err)
	code, out, errs := cli(t, "verify", dir)
	assert.Equal(t, code, 1, out+errs)
	assert.Assert(t, strings.Contains(out, "MISMATCH raw/nccl.all_reduce/all_reduce.log: line 2 holds a secret in clear"), out)
	assert.Assert(t, !strings.Contains(out+errs, "hf_plantedUnmasked"), out+errs)
}

// A secret in clear in another form than its bytes (a token split by
// invisible characters, fullwidth, as HTML entities; a known value as
// base64 or hex; any of them in a .gz file) fails verify too.
func TestVerifyFindsEncodedSecret(t *testing.T) {
	const known = "Zq9xPLmW3vTr7Ka2"
	t.Setenv("MY_API_TOKEN", known)
	gz := func(s string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write([]byte(s))
		_ = w.Close()
		return b.Bytes()
	}
	for _, c := range []struct {
		what, file string
		data       []byte
	}{
		{"ZWSP", "notes.txt", []byte("token: ghp_\u200bplantedVerifyToken0000000000000000000001\n")},
		{"fullwidth", "notes.txt", []byte("token: ｇｈｐ＿plantedVerifyToken0000000000000000000001\n")},
		{"entities", "notes.txt", []byte("token: &#103;&#104;&#112;&#95;plantedVerifyToken0000000000000000000001\n")},
		{"base64 of a known value", "notes.txt", []byte("blob: " + base64.StdEncoding.EncodeToString([]byte("x="+known)) + "\n")},
		{"hex of a known value", "notes.txt", []byte("blob: " + hex.EncodeToString([]byte(known)) + "\n")},
		{"gz", "notes.txt.gz", gz("ok\ntoken: ghp_plantedVerifyToken0000000000000000000001\n")},
	} {
		t.Run(c.what, func(t *testing.T) {
			dir := replayRun(t)
			assert.NilError(t, os.WriteFile(filepath.Join(dir, c.file), c.data, 0o644))
			assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
			_, err := manifest.Write(dir, "test", "h200")
			assert.NilError(t, err)
			code, out, errs := cli(t, "verify", dir)
			assert.Equal(t, code, 1, out+errs)
			assert.Assert(t, strings.Contains(out, c.file+": line "), out)
			assert.Assert(t, strings.Contains(out, "holds a secret in clear"), out)
		})
	}
}
