package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"gotest.tools/v3/assert"
)

// folder is a results folder as a run leaves it: raw outputs, baseline
// copy, journal and every report.
func folder(t *testing.T) string {
	dir := t.TempDir()
	for p, content := range map[string]string{
		"raw/nccl.all_reduce/all_reduce.log":                   "#  Avg bus bandwidth    : 150.2\n",
		"raw/nccl.all_reduce/all_reduce.files/all_reduce.json": `{"results":[]}`,
		"raw/nccl.all_reduce/outputs.json":                     `[]`,
		"baseline/h200.yaml":                                   "sku: h200\n",
		layout.Journal:                                         `{"run":{}}` + "\n",
		layout.Results:                                         "{}",
		layout.JUnit:                                           "<testsuites/>",
		layout.HTML:                                            "<html>",
		layout.Markdown:                                        "**PASS**",
		layout.Table:                                           "PASS",
	} {
		write(t, filepath.Join(dir, p), content)
	}
	return dir
}

func write(t *testing.T, p, content string) {
	t.Helper()
	assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	assert.NilError(t, os.WriteFile(p, []byte(content), 0o644))
}

func problems(t *testing.T, dir string, m *Manifest) []string {
	t.Helper()
	ps, err := Check(dir, m)
	assert.NilError(t, err)
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	return got
}

// wantPrefixes checks that got has one line per want, in order, each
// starting with it.
func wantPrefixes(t *testing.T, got, want []string) {
	t.Helper()
	assert.Equal(t, len(got), len(want), "%q", got)
	for i, w := range want {
		assert.Assert(t, strings.HasPrefix(got[i], w), "line %d: %q, want it to start %q", i, got[i], w)
	}
}

// Every file a customer reads is covered: a change to any of them, one
// removed or one added anywhere in the folder is named.
func TestCheck(t *testing.T) {
	cases := []struct {
		name   string
		change func(dir string)
		want   []string
	}{
		{"untouched", func(string) {}, nil},
		{"raw output edited", func(dir string) {
			os.WriteFile(filepath.Join(dir, "raw/nccl.all_reduce/all_reduce.log"), []byte("#  Avg bus bandwidth    : 350.2\n"), 0o644)
		}, []string{"raw/nccl.all_reduce/all_reduce.log: edited since the run"}},
		{"baseline edited", func(dir string) {
			os.WriteFile(filepath.Join(dir, "baseline/h200.yaml"), []byte("sku: h200 \n"), 0o644)
		}, []string{"baseline/h200.yaml: edited since the run"}},
		{"journal edited", func(dir string) {
			os.WriteFile(filepath.Join(dir, layout.Journal), []byte(`{"run":{"sku":"x"}}`), 0o644)
		},
			[]string{layout.Journal + ": edited since the run"}},
		{"results.json edited", func(dir string) { os.WriteFile(filepath.Join(dir, layout.Results), []byte(`{"status":"pass"}`), 0o644) },
			[]string{"results.json: edited since the run"}},
		{"junit.xml edited", func(dir string) {
			os.WriteFile(filepath.Join(dir, layout.JUnit), []byte("<testsuites></testsuites>"), 0o644)
		},
			[]string{"junit.xml: edited since the run"}},
		{"report.html edited", func(dir string) { os.WriteFile(filepath.Join(dir, layout.HTML), []byte("<html> "), 0o644) },
			[]string{"report.html: edited since the run"}},
		{"summary.md edited", func(dir string) { os.WriteFile(filepath.Join(dir, layout.Markdown), []byte("**FAIL**"), 0o644) },
			[]string{"summary.md: edited since the run"}},
		{"table.txt edited", func(dir string) { os.WriteFile(filepath.Join(dir, layout.Table), []byte("FAIL"), 0o644) },
			[]string{"table.txt: edited since the run"}},
		{"raw output removed", func(dir string) {
			os.Remove(filepath.Join(dir, "raw/nccl.all_reduce/all_reduce.files/all_reduce.json"))
		}, []string{"raw/nccl.all_reduce/all_reduce.files/all_reduce.json: missing"}},
		{"report removed", func(dir string) { os.Remove(filepath.Join(dir, layout.Table)) }, []string{"table.txt: missing"}},
		{"raw output added", func(dir string) { os.WriteFile(filepath.Join(dir, "raw/nccl.all_reduce/extra.log"), nil, 0o644) },
			[]string{"raw/nccl.all_reduce/extra.log: added since the run (not in the manifest)"}},
		{"file added beside the reports", func(dir string) { os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("all good"), 0o644) },
			[]string{"notes.txt: added since the run (not in the manifest)"}},
		{"folder of files added", func(dir string) { write(t, filepath.Join(dir, "extra/a/b.html"), "<html>") },
			[]string{"extra/a/b.html: added since the run (not in the manifest)"}},
		{"symlink added", func(dir string) {
			assert.NilError(t, os.Symlink("/etc/hostname", filepath.Join(dir, "raw/nccl.all_reduce/host.log")))
		}, []string{"raw/nccl.all_reduce/host.log: not a regular file: a symbolic link"}},
		{"report replaced by a symlink", func(dir string) {
			assert.NilError(t, os.Remove(filepath.Join(dir, layout.HTML)))
			assert.NilError(t, os.Symlink("/etc/hostname", filepath.Join(dir, layout.HTML)))
		}, []string{"report.html: not a regular file: a symbolic link"}},
		{"FIFO added", func(dir string) {
			assert.NilError(t, syscall.Mkfifo(filepath.Join(dir, "raw/nccl.all_reduce/pipe.log"), 0o644))
		}, []string{"raw/nccl.all_reduce/pipe.log: not a regular file: a named pipe (FIFO)"}},
		{"signature added", func(dir string) { os.WriteFile(filepath.Join(dir, layout.SigFile), []byte("sig"), 0o644) }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := folder(t)
			m, err := Write(dir, "test", "h200")
			assert.NilError(t, err)
			assert.Equal(t, m.Format, Format)
			assert.Equal(t, m.Baseline.Path, "baseline/h200.yaml")
			assert.Equal(t, len(m.Files), 10, "raw outputs, baseline, journal and the 5 reports")
			c.change(dir)
			m, err = Read(dir)
			assert.NilError(t, err)
			done := make(chan []string)
			go func() { done <- problems(t, dir, m) }()
			select {
			case got := <-done:
				wantPrefixes(t, got, c.want)
			case <-time.After(20 * time.Second):
				t.Fatal("Check hangs")
			}
		})
	}
}

// A results folder made by a gpuaccept before manifest format 2 lists its
// raw outputs, baseline copy and journal only: those still check, the
// reports it never listed are not called added (verify re-derives them),
// any other file is.
func TestCheckLegacy(t *testing.T) {
	legacy := func(t *testing.T) (string, *Manifest) {
		dir := folder(t)
		m, err := Build(dir, "test", "h200")
		assert.NilError(t, err)
		m.Format = 0
		var files []Entry
		for _, e := range m.Files {
			if !strings.Contains(e.Path, ".") || strings.HasPrefix(e.Path, "raw/") || strings.HasPrefix(e.Path, "baseline/") || e.Path == layout.Journal {
				files = append(files, e)
			}
		}
		m.Files = files
		return dir, m
	}
	dir, m := legacy(t)
	assert.Equal(t, len(m.Files), 5)
	assert.Assert(t, m.Legacy())
	assert.DeepEqual(t, problems(t, dir, m), []string(nil))

	dir, m = legacy(t)
	write(t, filepath.Join(dir, layout.HTML), "<html>forged")
	write(t, filepath.Join(dir, "notes.txt"), "x")
	write(t, filepath.Join(dir, "raw/nccl.all_reduce/all_reduce.log"), "x")
	wantPrefixes(t, problems(t, dir, m), []string{"notes.txt: added since the run", "raw/nccl.all_reduce/all_reduce.log: edited since the run"})

	// The manifest format 1 as the Nov-30 sessions wrote it reads as legacy.
	var old Manifest
	assert.NilError(t, json.Unmarshal([]byte(`{"gpuaccept_version":"dev","sku":"h200","files":[]}`), &old))
	assert.Assert(t, old.Legacy())
}

// Rewriting a manifest would bless whatever changed since the run.
func TestWriteRefusesToReplace(t *testing.T) {
	dir := folder(t)
	_, err := Write(dir, "test", "h200")
	assert.NilError(t, err)
	sum1, err := Sum(dir)
	assert.NilError(t, err)
	_, err = Write(dir, "test", "h200")
	assert.ErrorContains(t, err, "write manifest")
	sum2, _ := Sum(dir)
	assert.Equal(t, sum1, sum2)
}

// A folder holding something other than files and folders is not signed
// off: the manifest would hash what a link points to, or hang on a pipe.
func TestWriteRefusesSpecialFiles(t *testing.T) {
	dir := folder(t)
	assert.NilError(t, os.Symlink("/etc/hostname", filepath.Join(dir, "raw/nccl.all_reduce/host.log")))
	_, err := Write(dir, "test", "h200")
	assert.ErrorContains(t, err, "raw/nccl.all_reduce/host.log is a symbolic link")
	assert.Assert(t, !exists(filepath.Join(dir, layout.Manifest)))
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func TestNoBaselineIsAProblem(t *testing.T) {
	dir := folder(t)
	os.RemoveAll(filepath.Join(dir, layout.Baseline))
	m, err := Write(dir, "test", "h200")
	assert.NilError(t, err)
	assert.DeepEqual(t, problems(t, dir, m), []string{"baseline/h200.yaml: the manifest names no baseline file"})
}

// The sub-runs of a localisation keep results folders of their own under
// the main one; every file in them is covered like the main run's.
func TestCheckSubRuns(t *testing.T) {
	const sub = "localise/nccl.all_reduce/pairs/n1-n3-r1"
	const sub2 = "localise/nccl.all_reduce/per-node/n2"
	mk := func(t *testing.T) string {
		dir := folder(t)
		for p, content := range map[string]string{
			sub + "/raw/nccl.all_reduce/all_reduce.log":  "#  Avg bus bandwidth    : 41.7\n",
			sub + "/raw/nccl.all_reduce/outputs.json":    `[]`,
			sub + "/baseline/h200.yaml":                  "sku: h200\n",
			sub + "/" + layout.Journal:                   `{"run":{}}` + "\n",
			sub + "/results.json":                        "{}",
			sub + "/report.html":                         "<html>",
			sub2 + "/raw/nccl.all_gather/all_gather.log": "#  Avg bus bandwidth    : 380.2\n",
			sub2 + "/" + layout.Journal:                  `{"run":{}}` + "\n",
			"localise/notes.txt":                         "scratch",
		} {
			write(t, filepath.Join(dir, p), content)
		}
		return dir
	}
	subs, err := SubRuns(mk(t))
	assert.NilError(t, err)
	assert.DeepEqual(t, subs, []string{sub, sub2})

	cases := []struct {
		name   string
		change func(dir string)
		want   []string
	}{
		{"untouched", func(string) {}, nil},
		{"sub-run report edited", func(dir string) { os.WriteFile(filepath.Join(dir, sub, layout.HTML), []byte("<html>x"), 0o644) },
			[]string{sub + "/report.html: edited since the run"}},
		{"sub-run raw output edited", func(dir string) {
			os.WriteFile(filepath.Join(dir, sub, "raw/nccl.all_reduce/all_reduce.log"), []byte("#  Avg bus bandwidth    : 91.7\n"), 0o644)
		}, []string{sub + "/raw/nccl.all_reduce/all_reduce.log: edited since the run"}},
		{"sub-run journal edited", func(dir string) {
			os.WriteFile(filepath.Join(dir, sub2, layout.Journal), []byte(`{"run":{"sku":"x"}}`), 0o644)
		}, []string{sub2 + "/" + layout.Journal + ": edited since the run"}},
		{"sub-run removed", func(dir string) { os.RemoveAll(filepath.Join(dir, sub2)) }, []string{
			sub2 + "/" + layout.Journal + ": missing", sub2 + "/raw/nccl.all_gather/all_gather.log: missing"}},
		{"sub-run raw output added", func(dir string) {
			os.WriteFile(filepath.Join(dir, sub, "raw/nccl.all_reduce/extra.log"), nil, 0o644)
		}, []string{sub + "/raw/nccl.all_reduce/extra.log: added since the run"}},
		{"note beside the sub-runs edited", func(dir string) { os.WriteFile(filepath.Join(dir, "localise/notes.txt"), []byte("x"), 0o644) },
			[]string{"localise/notes.txt: edited since the run"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := mk(t)
			m, err := Write(dir, "test", "h200")
			assert.NilError(t, err)
			assert.Equal(t, len(m.Files), 10+6+2+1, "main: 10; sub-runs: 6 and 2; the note")
			c.change(dir)
			wantPrefixes(t, problems(t, dir, m), c.want)
		})
	}
}

// The sign-off digest is the SHA-256 of manifest.json: a manifest made
// again over the very same files has another one.
func TestDigest(t *testing.T) {
	dir := folder(t)
	_, err := Write(dir, "test", "h200")
	assert.NilError(t, err)
	d, err := Digest(dir)
	assert.NilError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, layout.Manifest))
	assert.NilError(t, err)
	sum := sha256.Sum256(data)
	assert.Equal(t, d, "sha256:"+hex.EncodeToString(sum[:]))

	assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
	_, err = Write(dir, "test", "h200")
	assert.NilError(t, err)
	d2, err := Digest(dir)
	assert.NilError(t, err)
	assert.Assert(t, d2 != d, "a regenerated manifest must not have the sign-off digest")

	h := hex.EncodeToString(sum[:])
	for _, c := range []struct{ in, want, err string }{
		{"sha256:" + h, h, ""},
		{h, h, ""},
		{"SHA256:" + strings.ToUpper(h), h, ""},
		{"  sha256:" + h + "\n", h, ""},
		{"sha512:" + h, "", `digest "sha512:` + h[:8]},
		{"sha256:" + h[:63], "", "want sha256: and 64 hex digits"},
		{"sha256:" + h[:63] + "g", "", "want sha256: and 64 hex digits"},
		{"", "", "empty"},
	} {
		got, err := ParseDigest(c.in)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, c.in)
			continue
		}
		assert.NilError(t, err, c.in)
		assert.Equal(t, got, c.want)
	}
}

// manifest.json itself is read like the files it lists: never through a
// link, never from a pipe.
func TestReadRefusesSpecialManifest(t *testing.T) {
	dir := folder(t)
	assert.NilError(t, syscall.Mkfifo(filepath.Join(dir, layout.Manifest), 0o644))
	done := make(chan error)
	go func() { _, err := Read(dir); done <- err }()
	select {
	case err := <-done:
		assert.ErrorContains(t, err, "manifest.json is a named pipe (FIFO)")
	case <-time.After(20 * time.Second):
		t.Fatal("Read hangs on a pipe")
	}
	dir = folder(t)
	assert.NilError(t, os.Symlink("/etc/hostname", filepath.Join(dir, layout.Manifest)))
	_, err := Sum(dir)
	assert.ErrorContains(t, err, "manifest.json is a symbolic link")
}

// A manifest that gives a key twice (two "files" lists: Go keeps the
// last, other readers the first) is refused, naming the key (issue 29,
// F5).
func TestReadRefusesDuplicateKey(t *testing.T) {
	dir := t.TempDir()
	doc := `{"format":2,"gpuaccept_version":"dev","sku":"h200","created":"2026-12-07T00:00:00Z","files":[],"files":[]}`
	assert.NilError(t, os.WriteFile(filepath.Join(dir, layout.Manifest), []byte(doc), 0o644))
	_, err := Read(dir)
	assert.ErrorContains(t, err, `duplicate key "files" in the top-level object`)
	assert.ErrorContains(t, err, layout.Manifest)
}
