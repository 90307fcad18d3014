package resultsdir

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// A test's raw outputs must lie in the folder its name gives; any other
// is named, so that one run's outputs cannot back another test's verdict.
func TestRawFolder(t *testing.T) {
	cases := []struct {
		name string
		raw  []string
		want string // folder, or the error's text
		ok   bool
	}{
		{"nccl.all_reduce", []string{"raw/nccl.all_reduce/all_reduce.log", "raw/nccl.all_reduce/all_reduce.files/all_reduce.json"}, "nccl.all_reduce", true},
		{"nccl.all_reduce", []string{"raw/nccl.all_reduce.attempt-2/all_reduce.log"}, "nccl.all_reduce.attempt-2", true},
		{"nccl.all_reduce[b.log]", []string{"raw/nccl.all_reduce.2/b.log"}, "nccl.all_reduce.2", true},
		{"nccl.all_gather", []string{"raw/nccl.all_reduce/all_reduce.log"}, "is not in the folder of test nccl.all_gather (raw/nccl.all_gather/)", false},
		{"nccl.all_reduce", []string{"raw/nccl.all_reduce.-1/x.log"}, "is not in the folder of test", false},
		{"nccl.all_reduce", []string{"raw/nccl.all_reduce.attempt-/x.log"}, "is not in the folder of test", false},
		{"nccl.all_reduce", []string{"raw/../x.log"}, "is not under raw/TEST/", false},
		{"nccl.all_reduce", []string{layout.Results}, "is not under raw/TEST/", false},
		{"nccl.all_reduce", []string{"raw/nccl.all_reduce/a.log", "raw/nccl.all_gather/b.log"}, "are in different folders", false},
		{"nccl.all_reduce", nil, "no raw outputs kept", false},
	}
	for _, c := range cases {
		got, err := RawFolder(result.Test{Name: c.name, Raw: c.raw})
		if c.ok {
			assert.NilError(t, err, "%v", c.raw)
			assert.Equal(t, got, c.want)
			continue
		}
		assert.ErrorContains(t, err, c.want, "%v", c.raw)
	}
}

func TestDirs(t *testing.T) {
	assert.Equal(t, TestDir("nccl.all_reduce"), filepath.Join(layout.Raw, "nccl.all_reduce"))
	assert.Equal(t, AttemptDir("nccl.all_reduce", 2), filepath.Join(layout.Raw, "nccl.all_reduce.attempt-2"))
	assert.Equal(t, CheckDir("nccl.all_reduce", 1, 1), filepath.Join(layout.Raw, "nccl.all_reduce"))
	assert.Equal(t, CheckDir("nccl.all_reduce", 2, 3), filepath.Join(layout.Raw, "nccl.all_reduce.2"))
}

// outputs.json is read only as a regular file of the folder: a link to
// another file is refused, naming it; broken JSON names the file; beside
// a log given to check, a special file is not read.
func TestReadOutputs(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, layout.Raw, "nccl.all_reduce")
	assert.NilError(t, os.MkdirAll(dir, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(dir, layout.Outputs), []byte(`[{"step":"all_reduce","log":"all_reduce.log","exit_code":0}]`), 0o644))
	outs, err := ReadOutputs(root, "nccl.all_reduce")
	assert.NilError(t, err)
	assert.Equal(t, len(outs), 1)
	assert.Equal(t, outs[0].Log, "all_reduce.log")

	assert.NilError(t, os.WriteFile(filepath.Join(dir, layout.Outputs), []byte(`[{"step":`), 0o644))
	_, err = ReadOutputs(root, "nccl.all_reduce")
	assert.ErrorContains(t, err, filepath.Join(dir, layout.Outputs))

	other := filepath.Join(t.TempDir(), "o.json")
	assert.NilError(t, os.WriteFile(other, []byte(`[]`), 0o644))
	assert.NilError(t, os.Remove(filepath.Join(dir, layout.Outputs)))
	assert.NilError(t, os.Symlink(other, filepath.Join(dir, layout.Outputs)))
	_, err = ReadOutputs(root, "nccl.all_reduce")
	assert.Assert(t, err != nil && strings.Contains(err.Error(), "link"), "%v", err)
	// Beside a log the user named, found by gpuaccept: a link is not
	// followed, a FIFO not opened (it would hang).
	_, ok := ReadOutputsBeside(filepath.Join(dir, "all_reduce.log"))
	assert.Assert(t, !ok, "a link beside a log is read")
	assert.NilError(t, os.Remove(filepath.Join(dir, layout.Outputs)))
	assert.NilError(t, syscall.Mkfifo(filepath.Join(dir, layout.Outputs), 0o644))
	_, ok = ReadOutputsBeside(filepath.Join(dir, "all_reduce.log"))
	assert.Assert(t, !ok, "a FIFO beside a log is not read")
}

// results.json is one JSON document: a second one appended (read by some
// readers, not by others) or anything else after it is refused.
func TestDecodeOne(t *testing.T) {
	cases := []struct {
		data string
		want string // "" or the error's text
	}{
		{`{"status":"fail"}`, ""},
		{"{\"status\":\"fail\"}\n\n  \t", ""},
		{`{"status":"fail"}{"status":"pass"}`, "more than one JSON document: something follows the first, at byte 17"},
		{"{\"status\":\"fail\"}\n{\"status\":\"pass\"}\n", "more than one JSON document"},
		{`{"status":"fail"} x`, "more than one JSON document"},
		{`{"status":`, "unexpected EOF"},
		// Go keeps the last value of a key given twice, other readers the
		// first (issue 29, F5).
		{`{"status":"pass","tests":[],"status":"fail"}`, `duplicate key "status" in the top-level object`},
		{`{"status":"fail","tests":[{"name":"a","status":"pass","status":"fail"}]}`, `duplicate key "status" in tests[0]`},
	}
	for _, c := range cases {
		var run result.Run
		err := DecodeOne([]byte(c.data), &run)
		if c.want == "" {
			assert.NilError(t, err, c.data)
			assert.Equal(t, run.Status, result.Fail)
			continue
		}
		assert.ErrorContains(t, err, c.want, c.data)
	}
}

// A folder read back from results.json (no journal) takes the status its
// tests give, not the one the file stores.
func TestLoadRecomputesStatus(t *testing.T) {
	dir := t.TempDir()
	data := `{"status":"pass","sku":"h200","suite":"singlenode","scope":"1x2","tests":[{"name":"nccl.all_reduce","status":"fail","scope":"1x2","metrics":[]},{"name":"nccl.all_gather","status":"pass","scope":"1x2","metrics":[]}]}`
	assert.NilError(t, os.WriteFile(filepath.Join(dir, layout.Results), []byte(data), 0o644))
	run, _, err := Load(dir)
	assert.NilError(t, err)
	assert.Equal(t, run.Status, result.Fail)
	assert.NilError(t, os.WriteFile(filepath.Join(dir, layout.Results), []byte(data+data), 0o644))
	_, _, err = Load(dir)
	assert.ErrorContains(t, err, "more than one JSON document")
}

// Walk types the folders of raw/: an earlier attempt or a run of check is
// of its test, never a test of its own (baseline record once took
// raw/TEST.attempt-1 for a test named so); a step's files and what names
// no test are skipped.
func TestWalk(t *testing.T) {
	raw := filepath.Join(t.TempDir(), layout.Raw)
	for _, d := range []string{"nccl.all_reduce", "nccl.all_reduce" + layout.AttemptSep + "1", "nccl.all_reduce" + layout.AttemptSep + "12",
		"ibperf.write_bw.2", "all_reduce" + layout.FilesExt, "notatest", ".hidden", "gemm.matmul.attempt-x", "hbm.bandwidth.0"} {
		assert.NilError(t, os.MkdirAll(filepath.Join(raw, d), 0o755))
	}
	assert.NilError(t, os.WriteFile(filepath.Join(raw, "x.y"), nil, 0o644))
	got, err := Walk(raw)
	assert.NilError(t, err)
	assert.DeepEqual(t, got, []Folder{
		{Name: "gemm.matmul.attempt-x", Test: "gemm.matmul.attempt-x"},
		{Name: "hbm.bandwidth.0", Test: "hbm.bandwidth.0"},
		{Name: "ibperf.write_bw.2", Test: "ibperf.write_bw", Run: 2},
		{Name: "nccl.all_reduce", Test: "nccl.all_reduce"},
		{Name: "nccl.all_reduce.attempt-1", Test: "nccl.all_reduce", Attempt: 1},
		{Name: "nccl.all_reduce.attempt-12", Test: "nccl.all_reduce", Attempt: 12},
	})
	// Every folder the runner and check name reads back as what it holds.
	for _, c := range []struct {
		dir  string
		want Folder
	}{
		{TestDir("nccl.all_reduce"), Folder{Name: "nccl.all_reduce", Test: "nccl.all_reduce"}},
		{AttemptDir("nccl.all_reduce", 3), Folder{Name: "nccl.all_reduce.attempt-3", Test: "nccl.all_reduce", Attempt: 3}},
		{CheckDir("nccl.all_reduce", 2, 3), Folder{Name: "nccl.all_reduce.2", Test: "nccl.all_reduce", Run: 2}},
	} {
		f, ok := ParseFolder(filepath.Base(c.dir))
		assert.Assert(t, ok, c.dir)
		assert.DeepEqual(t, f, c.want)
	}
	_, err = Walk(filepath.Join(t.TempDir(), "none"))
	assert.ErrorContains(t, err, "read the raw outputs")
}

// A folder handed over is a folder, and its raw outputs regular files in
// it reached through no link: a FIFO would hang report and verify, a link
// out of the folder would have them quote or judge what is elsewhere. A
// missing raw output is left to the reports.
func TestLoadFolder(t *testing.T) {
	cases := []struct {
		name string
		raw  func(dir string) // makes raw/t/a.log
		want string
	}{
		{"regular file", func(dir string) {
			assert.NilError(t, os.WriteFile(filepath.Join(dir, "raw/t/a.log"), []byte("x"), 0o644))
		}, ""},
		{"missing", func(string) {}, ""},
		{"fifo", func(dir string) { assert.NilError(t, syscall.Mkfifo(filepath.Join(dir, "raw/t/a.log"), 0o644)) }, "raw output of t: "},
		{"link out", func(dir string) {
			out := filepath.Join(t.TempDir(), "elsewhere.log")
			assert.NilError(t, os.WriteFile(out, []byte("x"), 0o644))
			assert.NilError(t, os.Symlink(out, filepath.Join(dir, "raw/t/a.log")))
		}, "raw output of t: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			assert.NilError(t, os.MkdirAll(filepath.Join(dir, "raw/t"), 0o755))
			c.raw(dir)
			data := `{"status":"pass","sku":"h200","suite":"s","scope":"1x2","results_dir":"/was/here","tests":[{"name":"t","status":"pass","scope":"1x2","metrics":[],"raw":["raw/t/a.log"]}]}`
			assert.NilError(t, os.WriteFile(filepath.Join(dir, layout.Results), []byte(data), 0o644))
			run, recorded, err := LoadFolder(dir)
			if c.want != "" {
				assert.ErrorContains(t, err, c.want)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, run.Dir, dir)
			assert.Equal(t, recorded, "/was/here")
		})
	}
	f := filepath.Join(t.TempDir(), "file")
	assert.NilError(t, os.WriteFile(f, nil, 0o644))
	_, _, err := LoadFolder(f)
	assert.Error(t, err, "results folder "+f+": not a folder")
}
