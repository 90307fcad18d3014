package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// cliWithin is cli bounded by d: a command that hangs (on a FIFO it opens
// for reading) or panics (a bad flag value used as a slice bound) fails the
// test naming the command instead of stopping the whole test binary.
func cliWithin(t *testing.T, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	type res struct {
		code       int
		out, errs  string
		panicked   any
		panicStack string
	}
	ch := make(chan res, 1)
	go func() {
		var r res
		var out, errb bytes.Buffer
		defer func() {
			if p := recover(); p != nil {
				r.panicked = p
			}
			r.out, r.errs = out.String(), errb.String()
			ch <- r
		}()
		r.code = run(args, &out, &errb)
	}()
	select {
	case r := <-ch:
		if r.panicked != nil {
			t.Fatalf("gpuaccept %s panicked: %v", strings.Join(args, " "), r.panicked)
		}
		return r.code, r.out, r.errs
	case <-time.After(d):
		t.Fatalf("gpuaccept %s did not end within %s: it hangs on a file it should refuse", strings.Join(args, " "), d)
	}
	return 0, "", ""
}

// signedOff makes a results folder the way a customer gets one: gpuaccept
// check --out on the real healthy all_reduce recording (reports, journal,
// raw/, baseline copy, manifest).
func signedOff(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "signoff")
	code, out, errs := cli(t, "check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2",
		"--out", dir, healthy+"/nccl.all_reduce/all_reduce.log")
	assert.Equal(t, code, 0, out+errs)
	return dir
}

// victim is a file outside the results folder that root could own: no
// command may change it through a link planted in the folder.
func victim(t *testing.T) (string, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "shadow")
	const content = "root:$6$do-not-touch:19000:0:99999:7:::\n"
	assert.NilError(t, os.WriteFile(p, []byte(content), 0o600))
	return p, content
}

// Every file gpuaccept report writes into a results folder, and the
// --junit/--html files it is given, replaced by a link to a file outside:
// report must refuse by name and leave the target as it was.
func TestReportNeverWritesThroughALink(t *testing.T) {
	cases := []struct {
		name string
		// link is the path (relative to the folder) replaced by a link
		// to the victim; flag, when set, is given with the link's path.
		link, flag string
		// remove deletes the file first (report recreates what is
		// missing, the manifest included).
		remove bool
	}{
		{name: layout.Results, link: layout.Results},
		{name: layout.JUnit, link: layout.JUnit},
		{name: layout.HTML, link: layout.HTML},
		{name: layout.Markdown, link: layout.Markdown},
		{name: layout.Table, link: layout.Table},
		{name: "manifest.json recreated", link: layout.Manifest, remove: true},
		{name: "--junit FILE", link: "../out-junit.xml", flag: "--junit"},
		{name: "--html FILE", link: "../out-report.html", flag: "--html"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := signedOff(t)
			target, content := victim(t)
			p := filepath.Join(dir, c.link)
			os.Remove(p)
			assert.NilError(t, os.Symlink(target, p))
			args := []string{"report", dir}
			if c.flag != "" {
				args = append(args, c.flag, p)
			}
			code, out, errs := cliWithin(t, 30*time.Second, args...)
			assert.Equal(t, code, 2, out+errs)
			assert.Assert(t, strings.Contains(errs, filepath.Base(c.link)) && strings.Contains(errs, "symbolic link"), errs)
			assert.Equal(t, readFile(t, target), content, "written through the link %s", c.link)
		})
	}
}

// Files gpuaccept verify and report read from raw/ (and the journal they
// rebuild the run from) replaced by a FIFO, a link to /dev/zero or a link
// out of the folder: refused by name, exit 2, no hang, and nothing of the
// outside file in what they print or write.
func TestVerifyAndReportRefuseSpecialFiles(t *testing.T) {
	const log = "raw/nccl.all_reduce/all_reduce.log"
	outside := func(t *testing.T) string {
		// A real log with a marker line, so that reading it would pass.
		p := filepath.Join(t.TempDir(), "elsewhere.log")
		assert.NilError(t, os.WriteFile(p, []byte("# OUTSIDE-THE-FOLDER\n"+readFile(t, healthy+"/nccl.all_reduce/all_reduce.log")), 0o644))
		return p
	}
	cases := []struct {
		name, file, want string
		plant            func(t *testing.T, p string)
	}{
		{"FIFO as raw log", log, "named pipe", func(t *testing.T, p string) { assert.NilError(t, syscall.Mkfifo(p, 0o644)) }},
		{"link to /dev/zero as raw log", log, "symbolic link", func(t *testing.T, p string) { assert.NilError(t, os.Symlink("/dev/zero", p)) }},
		{"link out of the folder as raw log", log, "symbolic link", func(t *testing.T, p string) { assert.NilError(t, os.Symlink(outside(t), p)) }},
		{"FIFO as journal", layout.Journal, "named pipe", func(t *testing.T, p string) { assert.NilError(t, syscall.Mkfifo(p, 0o644)) }},
		{"link out of the folder as journal", layout.Journal, "symbolic link", func(t *testing.T, p string) {
			assert.NilError(t, os.Symlink(filepath.Join(t.TempDir(), layout.Journal), p))
		}},
	}
	for _, c := range cases {
		for _, cmd := range []string{"verify", "report"} {
			t.Run(cmd+" "+c.name, func(t *testing.T) {
				dir := signedOff(t)
				p := filepath.Join(dir, c.file)
				assert.NilError(t, os.Remove(p))
				c.plant(t, p)
				code, out, errs := cliWithin(t, 30*time.Second, cmd, dir)
				if cmd == "verify" {
					// verify names a raw output that is no regular file as a
					// finding (exit 1: not the sign-off), and refuses to read
					// a journal or results.json that is one (exit 2).
					assert.Assert(t, code == 1 || code == 2, out+errs)
					assert.Assert(t, strings.Contains(out+errs, c.file) && (strings.Contains(out+errs, "not a regular file") || strings.Contains(out+errs, c.want)), "stderr: %s\nstdout: %s", errs, out)
				} else {
					assert.Equal(t, code, 2, out+errs)
					assert.Assert(t, strings.Contains(errs, c.file) && strings.Contains(errs, c.want), "stderr: %s\nstdout: %s", errs, out)
				}
				junit, _ := os.ReadFile(filepath.Join(dir, layout.JUnit))
				assert.Assert(t, !strings.Contains(out+errs+string(junit), "OUTSIDE-THE-FOLDER"), "read a file out of the folder")
			})
		}
	}
}

// A recording served by --launcher replay that is a link out of
// --replay-dir, or a FIFO, is refused by name; the run does not hang and
// does not pass on what the link points at.
func TestReplayRefusesLinksAndSpecialFiles(t *testing.T) {
	recording := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "recordings")
		assert.NilError(t, os.MkdirAll(filepath.Join(dir, "nccl.all_reduce"), 0o755))
		return dir
	}
	cases := []struct {
		name, want string
		plant      func(t *testing.T, p string)
	}{
		{"link out of the folder", "symbolic link", func(t *testing.T, p string) {
			real, err := filepath.Abs(healthy + "/nccl.all_reduce/all_reduce.log")
			assert.NilError(t, err)
			assert.NilError(t, os.Symlink(real, p))
		}},
		{"link to /dev/zero", "symbolic link", func(t *testing.T, p string) { assert.NilError(t, os.Symlink("/dev/zero", p)) }},
		{"FIFO", "named pipe", func(t *testing.T, p string) { assert.NilError(t, syscall.Mkfifo(p, 0o644)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := recording(t)
			c.plant(t, filepath.Join(dir, "nccl.all_reduce", "all_reduce.log"))
			code, out, errs := cliWithin(t, 60*time.Second, "--sku", "h200", "--suite", "singlenode", "--launcher", "replay", "--replay-dir", dir,
				"--gpus-per-node", "2", "--test", "nccl.all_reduce", "--format", "json", "--out", filepath.Join(t.TempDir(), "out"))
			assert.Equal(t, code, 3, out+errs) // the test's error
			assert.Assert(t, strings.Contains(out, "nccl.all_reduce/all_reduce.log") && strings.Contains(out, c.want), out)
		})
	}
}

// Bad flag values are usage errors naming the flag, never a panic and
// never a silent "no limit".
func TestBadFlagValues(t *testing.T) {
	base := []string{"--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--dry-run", "--test", "nccl.all_reduce"}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"run --nodes -1 with hosts", []string{"--nodes", "-1", "--hosts", "localhost"}, 2, "--nodes -1: want 1 to 131072"},
		{"run --nodes -1", []string{"--nodes", "-1"}, 2, "--nodes -1: want 1 to 131072"},
		{"localise --nodes -1", []string{"localise", "--nodes", "-1", "--hosts", "node1,node2", "--launcher", "ssh"}, 2, "--nodes -1: want 1 to 131072"},
		// The largest int64 overflowed the rank count ("expected 1 (-1x-1)").
		{"run --nodes int64 max", []string{"--nodes", "9223372036854775807"}, 2, "--nodes 9223372036854775807: want 1 to 131072"},
		{"localise --nodes int64 max", []string{"localise", "--nodes", "9223372036854775807", "--hosts", "node1,node2", "--launcher", "ssh"}, 2, "--nodes 9223372036854775807: want 1 to 131072"},
		{"--gpus-per-node 4096", []string{"--gpus-per-node", "4096"}, 2, "--gpus-per-node 4096: want 1 to 1024"},
		{"check --nodes int64 max", []string{"check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "9223372036854775807", "--gpus-per-node", "2", healthy + "/nccl.all_reduce/all_reduce.log"}, 2, "nodes 9223372036854775807: want 1 to 131072"},
		{"--retries past the cap", []string{"--retries", "9223372036854775807"}, 2, "--retries 9223372036854775807: want 0 to 10"},
		{"localise --localise-tolerance NaN", []string{"localise", "--localise-tolerance", "NaN", "--hosts", "node1,node2", "--launcher", "ssh"}, 2, "--localise-tolerance NaN: want a fraction between 0 and 1"},
		{"minbytes above maxbytes", []string{"--param", "minbytes=10G"}, 2, "parameters minbytes 10G and maxbytes 4G: the smallest size is above the largest"},
		{"run --nodes 0 is the suite's", []string{"--nodes", "0"}, 0, "# nccl.all_reduce"},
		{"--gpus-per-node -2", []string{"--gpus-per-node", "-2"}, 2, "--gpus-per-node -2: want 1 to 1024"},
		{"--timeout -5s", []string{"--timeout", "-5s"}, 2, "--timeout -5s: want a limit above zero"},
		{"--timeout 0", []string{"--timeout", "0"}, 2, "--timeout 0s: want a limit above zero"},
		{"localise --timeout -5s", []string{"localise", "--timeout", "-5s", "--hosts", "node1,node2", "--launcher", "ssh"}, 2, "--timeout -5s: want a limit above zero"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{}, base...)
			if len(c.args) > 0 && c.args[0] == "check" {
				args = c.args
			} else if len(c.args) > 0 && c.args[0] == "localise" {
				args = append([]string{"localise", "--sku", "h200", "--suite", "multinode", "--gpus-per-node", "2", "--dry-run", "--test", "nccl.all_reduce"}, c.args[1:]...)
			} else {
				args = append(args, c.args...)
			}
			code, out, errs := cliWithin(t, 60*time.Second, args...)
			assert.Equal(t, code, c.code, out+errs)
			assert.Assert(t, strings.Contains(out+errs, c.want), out+errs)
		})
	}
}

// A non-finite number in a real recording, edited by the test: the parser
// names file and line, the test is an error, and the results folder is
// whole (every report, a journal that reads back, a manifest).
func TestNonFiniteNumbersInALog(t *testing.T) {
	real := readFile(t, healthy+"/nccl.all_reduce/all_reduce.log")
	// The 4 GiB row: 12484.2 us, algbw 344.03, busbw 344.03 out-of-place.
	const row = "  4294967296    1073741824     float     sum      -1  12484.2  344.03  344.03       0"
	assert.Assert(t, strings.Contains(real, row))
	line := 1 + strings.Count(real[:strings.Index(real, row)], "\n")
	cases := []struct{ name, edited string }{
		{"busbw +Inf", "  4294967296    1073741824     float     sum      -1  12484.2  344.03    +Inf       0"},
		{"algbw 1e309", "  4294967296    1073741824     float     sum      -1  12484.2   1e309  344.03       0"},
		{"time nan", "  4294967296    1073741824     float     sum      -1      nan  344.03  344.03       0"},
		{"busbw -inf", "  4294967296    1073741824     float     sum      -1  12484.2  344.03    -inf       0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := writeFile(t, "edited.log", strings.Replace(real, row, c.edited, 1))
			dir := filepath.Join(t.TempDir(), "out")
			code, out, errs := cliWithin(t, 60*time.Second, "check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2",
				"--format", "json", "--out", dir, log)
			assert.Equal(t, code, 3, out+errs) // the test's error
			var doc struct {
				Status string
				Tests  []struct{ Status, Message string }
			}
			assert.NilError(t, json.Unmarshal([]byte(out), &doc), out+errs)
			assert.Equal(t, doc.Tests[0].Status, "error")
			assert.Assert(t, strings.Contains(doc.Tests[0].Message, fmt.Sprintf("edited.log:%d", line)), doc.Tests[0].Message)
			for _, f := range []string{layout.Results, layout.JUnit, layout.HTML, layout.Markdown, layout.Table, layout.Manifest, layout.Journal} {
				assert.Assert(t, fileExists(filepath.Join(dir, f)), "results folder lacks %s", f)
			}
			_, err := journal.Read(dir)
			assert.NilError(t, err)
			code, out, errs = cliWithin(t, 60*time.Second, "verify", dir)
			assert.Equal(t, code, 0, out+errs)
		})
	}
}

// An environment variable name no shell can export is refused by every
// launcher, local included, and a dry run never prints one unquoted.
func TestBadEnvNamesRefused(t *testing.T) {
	for _, name := range []string{"$(id)", "A B", "1X", "X;reboot"} {
		for _, launcher := range [][]string{{"--launcher", "local"}, {"--launcher", "ssh", "--hosts", "node1"}} {
			t.Run(launcher[1]+" "+name, func(t *testing.T) {
				args := append([]string{"--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--dry-run", "--test", "nccl.all_reduce",
					"--param", "env." + name + "=1"}, launcher...)
				code, out, errs := cliWithin(t, 60*time.Second, args...)
				assert.Equal(t, code, 2, out+errs)
				assert.Assert(t, strings.Contains(out+errs, fmt.Sprintf("environment variable name %q is not a shell name", name)), out+errs)
				assert.Assert(t, !strings.Contains(out, name+"=1"), "printed unquoted: %s", out)
			})
		}
	}
}

// Files the user names for output (check --junit/--html, baseline record
// --out) planted as links, as another user can in /tmp: refused by name,
// the target unchanged.
func TestNamedOutputsNeverWrittenThroughALink(t *testing.T) {
	logArgs := []string{"check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", healthy + "/nccl.all_reduce/all_reduce.log"}
	cases := []struct {
		name string
		args func(link string) []string
	}{
		{"check --junit", func(link string) []string { return append(append([]string{}, logArgs...), "--junit", link) }},
		{"check --html", func(link string) []string { return append(append([]string{}, logArgs...), "--html", link) }},
		{"baseline record --out", func(link string) []string {
			return []string{"baseline", "record", "--sku", "h200", "--out", link, "../../testdata/recordings/h200x2-2026-11-30-final/p2poff"}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target, content := victim(t)
			link := filepath.Join(t.TempDir(), "out")
			assert.NilError(t, os.Symlink(target, link))
			code, out, errs := cliWithin(t, 60*time.Second, c.args(link)...)
			assert.Equal(t, code, 2, out+errs)
			assert.Assert(t, strings.Contains(errs, link+" is a symbolic link"), errs)
			assert.Equal(t, readFile(t, target), content)
		})
	}
}

// Files the user names for input that turn out FIFOs (a --hostfile, a SKU
// file to validate or diff): refused by name, never waited on.
func TestNamedInputsRefuseFIFOs(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "in")
	assert.NilError(t, syscall.Mkfifo(fifo, 0o644))
	for name, args := range map[string][]string{
		"--hostfile":        {"--sku", "h200", "--suite", "singlenode", "--dry-run", "--hostfile", fifo},
		"baseline validate": {"baseline", "validate", fifo},
		"baseline diff":     {"baseline", "diff", "h200", fifo},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errs := cliWithin(t, 30*time.Second, args...)
			assert.Assert(t, code != 0, out+errs)
			assert.Assert(t, strings.Contains(out+errs, fifo+" is a named pipe (FIFO)"), out+errs)
		})
	}
}

// The files check finds by itself beside a log it is given (outputs.json,
// the step's -J file in STEP.files/) are read only as regular files of
// that folder: a link there, planted to lead out of a results folder, is
// not followed, and nothing of its target reaches the new folder.
func TestCheckFollowsNoLinkBesideALog(t *testing.T) {
	// Each target reads as what the link pretends to be, so that what
	// of it would be used shows in the folder.
	for link, target := range map[string]string{
		"all_reduce.files/all_reduce.json": `{"root":"only-root-may-read-this"}`,
		layout.Outputs:                     `[{"step":"all_reduce","log":"all_reduce.log","command":"only-root-may-read-this"}]`,
		// The folder itself a link, to one holding all_reduce.json.
		"all_reduce.files": `{"root":"only-root-may-read-this"}`,
	} {
		t.Run(link, func(t *testing.T) {
			secret := filepath.Join(t.TempDir(), "shadow")
			assert.NilError(t, os.WriteFile(secret, []byte(target), 0o600))
			src := copyDir(t, healthy+"/nccl.all_reduce")
			// copyDir keeps only what the recording has: give it an
			// outputs.json where it has none, to be replaced by the link.
			p := filepath.Join(src, link)
			assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			if link == "all_reduce.files" {
				folder := t.TempDir()
				assert.NilError(t, os.Rename(secret, filepath.Join(folder, "all_reduce.json")))
				secret = folder
			}
			assert.NilError(t, os.RemoveAll(p))
			assert.NilError(t, os.Symlink(secret, p))
			out := filepath.Join(t.TempDir(), "out")
			code, stdout, errs := cli(t, "check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2",
				"--out", out, filepath.Join(src, "all_reduce.log"))
			assert.Equal(t, code, 0, stdout+errs)
			assert.NilError(t, filepath.Walk(out, func(p string, fi os.FileInfo, err error) error {
				if err != nil || fi.IsDir() {
					return err
				}
				data, err := os.ReadFile(p)
				assert.NilError(t, err)
				assert.Assert(t, !strings.Contains(string(data), "only-root-may-read-this"), "%s holds the link's target", p)
				return nil
			}))
		})
	}
}

// A log and its -J file as a results folder keeps them (STEP.log,
// STEP.files/STEP.json), both given, are one run, as copied into one
// folder they would be.
func TestCheckJoinsALogAndItsFilesJSON(t *testing.T) {
	code, out, errs := cli(t, "check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", "--format", "json",
		healthy+"/nccl.all_reduce/all_reduce.log", healthy+"/nccl.all_reduce/all_reduce.files/all_reduce.json")
	assert.Equal(t, code, 0, out+errs)
	assert.Assert(t, strings.Count(out, `"name": "nccl.all_reduce`) == 1 && !strings.Contains(out, "nccl.all_reduce["), "two runs:\n%s", out)
}

// --out that is a symbolic link (to an empty folder) is refused before
// anything runs: nothing is written through a link.
func TestOutIsALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	assert.NilError(t, os.Mkdir(target, 0o755))
	link := filepath.Join(dir, "out")
	assert.NilError(t, os.Symlink(target, link))
	for _, args := range [][]string{
		{"--sku", "h200", "--suite", "node", "--launcher", "local", "--gpus-per-node", "1", "--dry-run=false", "--out", link},
		{"check", "--sku", "h200", "--test", "gemm.matmul", "--nodes", "1", "--gpus-per-node", "1", "--out", link, "../../testdata/recordings/h200x1-2026-12-01/node/node-1/raw/gemm.matmul/alone.log"},
	} {
		code, out, errs := cli(t, args...)
		assert.Equal(t, code, 2, out+errs)
		assert.Assert(t, strings.Contains(errs, "is a symbolic link; give a real folder as --out"), errs)
		ents, err := os.ReadDir(target)
		assert.NilError(t, err)
		assert.Equal(t, len(ents), 0, "%v written through the link", args)
	}
}
