package runner

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/plugins/ibperf"
	"github.com/gpuaccept/gpuaccept/plugins/nccl"
)

var plugins = inProcess{"nccl": nccl.Plugin{}, "ibperf": ibperf.Plugin{}}

// Real recordings: a healthy 1x2 H200 all_reduce (text and its -J file)
// and seed 004's ib_write_bw pair.
const (
	h200Log  = "../../testdata/recordings/h200-1x2-healthy/nccl.all_reduce/all_reduce.log"
	h200JSON = "../../testdata/recordings/h200-1x2-healthy/nccl.all_reduce/all_reduce.files/all_reduce.json"
	seedPair = "../../testdata/recordings/mi355x-seed004/multinode/raw/ibperf.write_bw/"
)

func getSKU(t *testing.T, name string) *sku.SKU {
	t.Helper()
	c, err := sku.Load(baselines.FS, "baselines")
	assert.NilError(t, err)
	s, err := c.Get(name)
	assert.NilError(t, err)
	return s
}

// gz writes src gzip-compressed to dir/name.
func gz(t *testing.T, src, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	assert.NilError(t, err)
	return writeGz(t, data, dir, name)
}

func writeGz(t *testing.T, data []byte, dir, name string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write(data)
	assert.NilError(t, err)
	assert.NilError(t, zw.Close())
	p := filepath.Join(dir, name)
	assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	assert.NilError(t, os.WriteFile(p, b.Bytes(), 0o644))
	return p
}

// withStdin makes r the check input "-" for the test.
func withStdin(t *testing.T, r *bytes.Reader) {
	t.Helper()
	old := Stdin
	Stdin = r
	t.Cleanup(func() { Stdin = old })
}

// verdict is what must not change with the way a file is given.
type verdict struct {
	Status  result.Status
	Message string
	Metrics int
	Busbw   float64
}

func verdictOf(t *testing.T, run *result.Run) verdict {
	t.Helper()
	assert.Equal(t, len(run.Tests), 1)
	tt := run.Tests[0]
	v := verdict{Status: tt.Status, Message: tt.Message, Metrics: len(tt.Metrics)}
	for _, m := range tt.Metrics {
		if m.Size == 1<<30 && (m.Name == "busbw" || m.Name == "bw_avg") && v.Busbw == 0 {
			v.Busbw = m.Value
		}
	}
	return v
}

// A .gz and standard input are judged as the plain file is: same status,
// message and numbers, the text joined by its -J JSON, both sides of a
// pair together.
func TestCheckReadsGzipAndStdin(t *testing.T) {
	ctx := context.Background()
	h200, mi355x := getSKU(t, "h200"), getSKU(t, "mi355x")
	one := plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}
	// The recording's log finds its -J file in all_reduce.files/.
	plain, err := Check(ctx, plugins, h200, "nccl.all_reduce", one, []string{h200Log}, "test")
	assert.NilError(t, err)
	want := verdictOf(t, plain)
	assert.Equal(t, want.Status, result.Pass, "%+v", want)
	assert.Assert(t, want.Busbw > 300, "%+v", want)
	assert.Equal(t, len(plain.Tests[0].Raw), 2, "the log and its JSON")
	dir := t.TempDir()
	logData, err := os.ReadFile(h200Log)
	assert.NilError(t, err)
	alone := filepath.Join(dir, "alone", "all_reduce.log")
	assert.NilError(t, os.MkdirAll(filepath.Dir(alone), 0o755))
	assert.NilError(t, os.WriteFile(alone, logData, 0o644))
	textOnly, err := Check(ctx, plugins, h200, "nccl.all_reduce", one, []string{alone}, "test")
	assert.NilError(t, err)
	jsonData, err := os.ReadFile(h200JSON)
	assert.NilError(t, err)
	plainJSON := filepath.Join(dir, "b", "all_reduce.json")
	assert.NilError(t, os.MkdirAll(filepath.Dir(plainJSON), 0o755))
	assert.NilError(t, os.WriteFile(plainJSON, jsonData, 0o644))

	for _, c := range []struct {
		name  string
		files []string
		stdin []byte
		want  verdict
		raw   []string
	}{
		{"text and JSON, both .gz", []string{gz(t, h200Log, dir, "a/all_reduce.log.gz"), gz(t, h200JSON, dir, "a/all_reduce.json.gz")}, nil,
			want, []string{filepath.Join(dir, "a/all_reduce.log.gz"), filepath.Join(dir, "a/all_reduce.json.gz")}},
		{"a .gz text joins its plain JSON", []string{gz(t, h200Log, dir, "b/all_reduce.log.gz"), plainJSON}, nil,
			want, []string{filepath.Join(dir, "b/all_reduce.log.gz"), plainJSON}},
		{"a .gz log of a results folder finds its .gz JSON in STEP.files/", []string{gz(t, h200Log, dir, "c/all_reduce.log.gz")}, nil,
			want, []string{filepath.Join(dir, "c/all_reduce.log.gz"), gz(t, h200JSON, dir, "c/all_reduce.files/all_reduce.json.gz")}},
		{"standard input", []string{"-"}, logData, verdictOf(t, textOnly), []string{"-"}},
		{"standard input, gzip", []string{"-"}, gzBytes(t, logData), verdictOf(t, textOnly), []string{"-"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.stdin != nil {
				withStdin(t, bytes.NewReader(c.stdin))
			}
			run, err := Check(ctx, plugins, h200, "nccl.all_reduce", one, c.files, "test")
			assert.NilError(t, err)
			assert.DeepEqual(t, verdictOf(t, run), c.want)
			assert.DeepEqual(t, run.Tests[0].Raw, c.raw)
		})
	}

	t.Run("both sides of a pair, .gz", func(t *testing.T) {
		two := plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}
		plain, err := Check(ctx, plugins, mi355x, "ibperf.write_bw", two, []string{seedPair + "server.0.log", seedPair + "client.0.log"}, "test")
		assert.NilError(t, err)
		d := t.TempDir()
		run, err := Check(ctx, plugins, mi355x, "ibperf.write_bw", two,
			[]string{gz(t, seedPair+"server.0.log", d, "server.0.log.gz"), gz(t, seedPair+"client.0.log", d, "client.0.log.gz")}, "test")
		assert.NilError(t, err)
		assert.DeepEqual(t, verdictOf(t, run), verdictOf(t, plain))
		assert.Equal(t, run.Tests[0].Status, result.Pass, run.Tests[0].Message)
	})
}

func gzBytes(t *testing.T, data []byte) []byte {
	t.Helper()
	p := writeGz(t, data, t.TempDir(), "x.gz")
	out, err := os.ReadFile(p)
	assert.NilError(t, err)
	return out
}

// check --out keeps what it read: the decompressed bytes (standard input's
// as raw/TEST/stdin), under the names the plugins judged, so that the
// folder re-judges to the same verdicts (what gpuaccept verify does).
func TestCheckIntoKeepsWhatItRead(t *testing.T) {
	ctx := context.Background()
	h200 := getSKU(t, "h200")
	one := plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}
	logData, err := os.ReadFile(h200Log)
	assert.NilError(t, err)
	jsonData, err := os.ReadFile(h200JSON)
	assert.NilError(t, err)
	src := t.TempDir()
	for _, c := range []struct {
		name  string
		files []string
		stdin []byte
		kept  map[string][]byte
	}{
		{".gz", []string{gz(t, h200Log, src, "all_reduce.log.gz"), gz(t, h200JSON, src, "all_reduce.json.gz")}, nil,
			map[string][]byte{"raw/nccl.all_reduce/all_reduce.log": logData, "raw/nccl.all_reduce/all_reduce.files/all_reduce.json": jsonData}},
		{"standard input, gzip", []string{"-"}, gzBytes(t, logData),
			map[string][]byte{"raw/nccl.all_reduce/stdin": logData}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.stdin != nil {
				withStdin(t, bytes.NewReader(c.stdin))
			}
			dir := t.TempDir()
			run, err := CheckInto(ctx, plugins, h200, "nccl.all_reduce", one, c.files, "test", dir, nil)
			assert.NilError(t, err)
			var raw []string
			for p, want := range c.kept {
				got, err := os.ReadFile(filepath.Join(dir, p))
				assert.NilError(t, err)
				assert.Assert(t, bytes.Equal(got, want), "%s: %d bytes, want the %d read", p, len(got), len(want))
				raw = append(raw, p)
			}
			assert.DeepEqual(t, sorted(run.Tests[0].Raw), sorted(raw))
			data, err := os.ReadFile(filepath.Join(dir, "raw/nccl.all_reduce", layout.Outputs))
			assert.NilError(t, err)
			var outs []plan.Output
			assert.NilError(t, json.Unmarshal(data, &outs))
			assert.Equal(t, len(outs), 1)
			assert.Assert(t, !strings.HasSuffix(outs[0].Log, ".gz") && !filepath.IsAbs(outs[0].Log), outs[0].Log)
			assert.DeepEqual(t, Rejudge(ctx, plugins, h200, dir, run), []string(nil))
		})
	}
}

func writeFile(t *testing.T, data []byte, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	assert.NilError(t, os.WriteFile(p, data, 0o644))
	return p
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// Input that cannot be read whole is an error naming it, before anything
// is judged: a .gz that is not gzip, one cut short, one that decompresses
// past MaxInputBytes, standard input given twice.
func TestCheckInputErrors(t *testing.T) {
	ctx := context.Background()
	h200 := getSKU(t, "h200")
	one := plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}
	dir := t.TempDir()
	whole := gz(t, h200Log, dir, "whole.log.gz")
	data, err := os.ReadFile(whole)
	assert.NilError(t, err)
	cut := filepath.Join(dir, "cut.log.gz")
	assert.NilError(t, os.WriteFile(cut, data[:len(data)/2], 0o644))
	notGz := filepath.Join(dir, "plain.log.gz")
	logData, err := os.ReadFile(h200Log)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(notGz, logData, 0o644))
	for _, c := range []struct {
		name  string
		files []string
		want  string
	}{
		{"not gzip", []string{notGz}, "log file " + notGz + ": not gzip data (gzip: invalid header)"},
		{"cut short", []string{cut}, "log file " + cut + ": gzip data cut short or corrupt after "},
		{"stdin twice", []string{"-", "-"}, "log file -: standard input given twice"},
		{"a log and its .gz", []string{writeFile(t, logData, dir, "both/all_reduce.log"), gz(t, h200Log, dir, "both/all_reduce.log.gz")}, "is given too, compressed or not"},
		// Read as they were, a FIFO hung check and /dev/zero filled the
		// results folder until the disk was full.
		{"a FIFO", []string{fifo(t, dir, "pipe.log")}, "log file " + filepath.Join(dir, "pipe.log") + ": not a regular file: a named pipe (FIFO)"},
		{"a device", []string{"/dev/zero"}, "log file /dev/zero: not a regular file: a device"},
	} {
		t.Run(c.name, func(t *testing.T) {
			withStdin(t, bytes.NewReader(logData))
			_, err := Check(ctx, plugins, h200, "nccl.all_reduce", one, c.files, "test")
			assert.ErrorContains(t, err, c.want)
		})
	}

	t.Run("decompression bomb", func(t *testing.T) {
		old := MaxInputBytes
		MaxInputBytes = 1 << 20
		t.Cleanup(func() { MaxInputBytes = old })
		// 64 MiB of the real log repeated compresses to well under 1 MiB.
		bomb := writeGz(t, bytes.Repeat(logData, (64<<20)/len(logData)), dir, "bomb.log.gz")
		fi, err := os.Stat(bomb)
		assert.NilError(t, err)
		assert.Assert(t, fi.Size() < 1<<20, "%d", fi.Size())
		tmp := t.TempDir()
		_, err = groupFiles([]string{bomb}, tmp, nil)
		assert.ErrorContains(t, err, "log file "+bomb+": more than 1 MiB once read (the cap on one check input): not judged")
		copyInfo, err := os.Stat(filepath.Join(tmp, "1", "bomb.log"))
		assert.NilError(t, err)
		assert.Assert(t, copyInfo.Size() <= MaxInputBytes+1, "wrote %d bytes", copyInfo.Size())
	})
}

func fifo(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	assert.NilError(t, syscall.Mkfifo(p, 0o644))
	return p
}

// What check --out copies into the results folder is capped apart from
// what it judges: a .gz a few MiB long that decompresses to just under
// MaxInputBytes is judged, but not written out whole under raw/ (and
// hashed) by --out; the error says the limit and nothing is copied.
func TestCheckOutKeepsAtMostMaxKeptBytes(t *testing.T) {
	ctx := context.Background()
	h200 := getSKU(t, "h200")
	one := plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}
	logData, err := os.ReadFile(h200Log)
	assert.NilError(t, err)
	old := MaxKeptBytes
	MaxKeptBytes = 1 << 20
	t.Cleanup(func() { MaxKeptBytes = old })
	// The real log, then blank lines to 3 MiB: under MaxInputBytes, over
	// MaxKeptBytes, a few KiB compressed.
	big := writeGz(t, append(slices.Clone(logData), bytes.Repeat([]byte("\n"), 3<<20-len(logData))...), t.TempDir(), "all_reduce.log.gz")
	run, err := Check(ctx, plugins, h200, "nccl.all_reduce", one, []string{big}, "test")
	assert.NilError(t, err, "judged without --out")
	assert.Equal(t, len(run.Tests), 1)
	out := filepath.Join(t.TempDir(), "out")
	_, err = CheckInto(ctx, plugins, h200, "nccl.all_reduce", one, []string{big}, "test", out, nil)
	assert.ErrorContains(t, err, "more than the 1 MiB check --out keeps")
	var kept int64
	filepath.Walk(out, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			kept += fi.Size()
		}
		return nil
	})
	assert.Assert(t, kept <= MaxKeptBytes, "wrote %d bytes", kept)
	// Two logs, each under the cap, over it together.
	half := writeGz(t, append(slices.Clone(logData), bytes.Repeat([]byte("\n"), 600<<10-len(logData))...), t.TempDir(), "all_reduce.log.gz")
	half2 := writeGz(t, append(slices.Clone(logData), bytes.Repeat([]byte("\n"), 600<<10-len(logData))...), t.TempDir(), "all_reduce.log.gz")
	_, err = CheckInto(ctx, plugins, h200, "nccl.all_reduce", one, []string{half, half2}, "test", filepath.Join(t.TempDir(), "out"), nil)
	assert.ErrorContains(t, err, "more than the 1 MiB check --out keeps")
}
