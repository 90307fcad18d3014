package signoff

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

func TestValueDiffs(t *testing.T) {
	const metric = `{"name":"busbw","value":%s,"unit":"GB/s","size":4294967296,"labels":{"placement":"in-place","redop":"sum","type":"float"},"status":"pass"}`
	m := func(v string) string { return strings.Replace(metric, "%s", v, 1) }
	doc := func(status, metrics, extra string) string {
		return `{"status":"` + status + `","tests":[{"name":"nccl.all_reduce","metrics":[` + metrics + `],"checks":[{"name":"rank count","ok":true}]}]` + extra + `}`
	}
	want := doc("pass", m("344.031485"), "")
	cases := []struct {
		name, have string
		diffs      []string
	}{
		{"same", want, nil},
		{"same number written otherwise", doc("pass", m("344.0314850"), ""), nil},
		{"status", doc("warn", m("344.031485"), ""), []string{`status is "warn", re-derived from raw/ and the journal: "pass"`}},
		{"value", doc("pass", m("144.031485"), ""), []string{
			"tests[nccl.all_reduce].metrics[busbw[in-place] at 4 GiB redop=sum type=float].value is 144.031485, re-derived from raw/ and the journal: 344.031485"}},
		{"value as a string", doc("pass", m(`"344.031485"`), ""), []string{
			`tests[nccl.all_reduce].metrics[busbw[in-place] at 4 GiB redop=sum type=float].value is "344.031485", re-derived from raw/ and the journal: 344.031485`}},
		{"label", doc("pass", strings.Replace(m("344.031485"), `"sum"`, `"max"`, 1), ""), []string{
			"tests[nccl.all_reduce].metrics[busbw[in-place] at 4 GiB redop=max type=float] is not in the re-derived run",
			"tests[nccl.all_reduce].metrics[busbw[in-place] at 4 GiB redop=sum type=float] is missing, re-derived from raw/ and the journal: {"}},
		{"metric added", doc("pass", m("344.031485")+","+strings.Replace(m("1"), "in-place", "out-of-place", 1), ""), []string{
			"tests[nccl.all_reduce].metrics[busbw[out-of-place] at 4 GiB redop=sum type=float] is not in the re-derived run"}},
		{"key added", doc("pass", m("344.031485"), `,"waiver":"signed by hand"`), []string{`waiver is "signed by hand", the re-derived run has none`}},
		{"key left out", `{"status":"pass"}`, []string{`tests is missing, re-derived from raw/ and the journal: [{`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := valueDiffs([]byte(c.have), []byte(want))
			assert.NilError(t, err)
			assert.Equal(t, len(got), len(c.diffs), "%q", got)
			for i, d := range c.diffs {
				assert.Assert(t, strings.HasPrefix(got[i], d), "%q, want it to start %q", got[i], d)
			}
		})
	}
	_, err := valueDiffs([]byte(`{"status":`), []byte(want))
	assert.ErrorContains(t, err, "not JSON")

	// A list of things without names is compared by position, and many
	// differences are counted past the first 20.
	var a, b []string
	for i := 0; i < 30; i++ {
		a, b = append(a, "1"), append(b, "2")
	}
	got, err := valueDiffs([]byte("["+strings.Join(a, ",")+"]"), []byte("["+strings.Join(b, ",")+"]"))
	assert.NilError(t, err)
	assert.Equal(t, len(got), 21)
	assert.Equal(t, got[0], "[0] is 1, re-derived from raw/ and the journal: 2")
	assert.Equal(t, got[20], "and 10 more differences")
}

func TestByteDiff(t *testing.T) {
	assert.Equal(t, byteDiff([]byte("a\nb\n"), []byte("a\nb\n")), "")
	assert.Equal(t, byteDiff([]byte("a\nb\nc"), []byte("a\nB\nc")), `from line 2: "b", re-rendered "B"`)
	assert.Equal(t, byteDiff([]byte("a\n"), []byte("a\nb")), `from line 2: "", re-rendered "b"`)
}

// signedFolder is a results folder whose one test was skipped (nothing to
// re-judge: no plugin needed), its reports written by WriteReports and
// signed off by gpuaccept version.
func signedFolder(t *testing.T, version string) string {
	t.Helper()
	return signedFolderWith(t, version, nil)
}

// signedFolderWith is signedFolder whose test carries tel.
func signedFolderWith(t *testing.T, version string, tel *result.Telemetry) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "results")
	assert.NilError(t, os.MkdirAll(dir, 0o755))
	data, err := baselines.FS.ReadFile("h200.yaml")
	assert.NilError(t, err)
	assert.NilError(t, journal.SaveBaseline(dir, "h200", data))
	// The node suite skips the collectives on one GPU (min_gpus: 2).
	one := plan.Scope{Nodes: 1, GPUsPerNode: 1}
	run := &result.Run{SKU: "h200", Suite: "node", Launcher: "local", Scope: one, Version: version, Dir: dir, Selected: []string{"nccl.all_reduce"},
		Started: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), Tests: []result.Test{}}
	w, err := journal.Create(dir, run, []string{"nccl.all_reduce"})
	assert.NilError(t, err)
	tst := result.Test{Name: "nccl.all_reduce", Status: result.Skip, Message: "needs at least 2 GPUs, scope 1x1 has 1", Scope: one, Metrics: []result.Judged{}, Telemetry: tel}
	assert.NilError(t, w.Add(tst))
	run.Tests = append(run.Tests, tst)
	run.Duration = 3 * time.Second
	assert.NilError(t, w.End(run.Duration))
	assert.NilError(t, w.Close())
	run.Finish()
	assert.NilError(t, WriteReports(run, nil, ""))
	_, err = manifest.Write(dir, version, "h200")
	assert.NilError(t, err)
	return dir
}

func lines(r *Result) string {
	var b strings.Builder
	for _, l := range r.Lines {
		b.WriteString(l.String() + "\n")
	}
	return b.String()
}

// The reports written are the ones verify renders again: against the
// kept baseline copy, with the results folder the run recorded, wherever
// the folder is now.
func TestWriteReportsRenderAgain(t *testing.T) {
	dir := signedFolder(t, "v1")
	moved := filepath.Join(t.TempDir(), "moved")
	assert.NilError(t, os.Rename(dir, moved))
	page, err := os.ReadFile(filepath.Join(moved, layout.HTML))
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(string(page), "<dt>baseline</dt><dd>baseline/h200.yaml</dd>"), "the kept copy, named inside the folder")
	res, err := Verify(context.Background(), moved, Options{Version: "v1"})
	assert.NilError(t, err)
	assert.Equal(t, res.Findings, 0, lines(res))
	assert.DeepEqual(t, res.Rederived, []string{layout.Results})
	assert.DeepEqual(t, res.Rerendered, []string{layout.JUnit, layout.HTML, layout.Markdown, layout.Table})
}

// The telemetry a test carries renders again byte for byte from the
// journal: report.html's figures and table, the table's and summary.md's
// line, junit.xml's property. Its figures are a real nvidia-smi sampling's
// (testdata/recordings/h100x1-2026-12-07/smi/query-gpu.csv: idle 345 MHz,
// 71.69 W, 38 C, clocks.max.sm 1980 MHz, power.limit 700 W, PCIe gen 5
// x16); the HW slowdown sample at 1110 MHz and the load power and
// temperature are placeholders.
func TestTelemetryReportsRenderAgain(t *testing.T) {
	t0 := float64(time.Date(2026, 12, 1, 9, 0, 2, 0, time.UTC).Unix())
	g := result.GPUTelemetry{Host: "vm", GPU: "0", Tool: "nvidia-smi", Samples: 3, First: t0, Last: t0 + 2, PowerLimit: 700, PCIeGen: 5, PCIeWidth: 16,
		SMClock: &result.Range{Min: 345, Median: 1110, Max: 1980}, Power: &result.Range{Min: 71.69, Median: 650, Max: 650}, Temp: &result.Range{Min: 38, Median: 62, Max: 62},
		Slowdown: map[string]int{"hw_slowdown": 1},
		Series:   []result.TelemetryPoint{{T: t0, SMClock: 345, Power: 71.69, Temp: 38}, {T: t0 + 1, SMClock: 1110, Power: 650, Temp: 62, Slowdown: "hw_slowdown"}, {T: t0 + 2, SMClock: 1980, Power: 650, Temp: 62}}}
	dir := signedFolderWith(t, "v1", &result.Telemetry{GPUs: []result.GPUTelemetry{g}})
	for _, f := range []string{layout.HTML, layout.Markdown, layout.Table, layout.JUnit} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		assert.NilError(t, err)
		assert.Assert(t, strings.Contains(string(data), "HW slowdown in 1 of 3 samples"), "%s lacks the telemetry", f)
	}
	res, err := Verify(context.Background(), dir, Options{Version: "v1"})
	assert.NilError(t, err)
	assert.Equal(t, res.Findings, 0, lines(res))
	assert.DeepEqual(t, res.Rerendered, []string{layout.JUnit, layout.HTML, layout.Markdown, layout.Table})
}

// A report that renders otherwise is a finding, whoever made the folder:
// before issue 29's F1, one of another version was held to its hash in a
// sealed manifest with only its verdict line re-derived, and a folder
// claiming "dev " had every report say PASS over a hidden FAIL. Now the
// version a folder states changes only the remedy verify gives.
func TestVerifyReportsOfAnotherVersion(t *testing.T) {
	forge := func(t *testing.T, dir string) {
		p := filepath.Join(dir, layout.Markdown)
		data, err := os.ReadFile(p)
		assert.NilError(t, err)
		assert.NilError(t, os.WriteFile(p, []byte(strings.Replace(string(data), "SKIP", "PASS", 1)), 0o644))
		assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
		_, err = manifest.Write(dir, "v1", "h200")
		assert.NilError(t, err)
	}
	dir := signedFolder(t, "v1")
	forge(t, dir)
	res, err := Verify(context.Background(), dir, Options{Version: "v1"})
	assert.NilError(t, err)
	assert.Equal(t, res.Findings, 1, lines(res))
	assert.Assert(t, strings.Contains(lines(res), "MISMATCH summary.md: differs from the one re-rendered from the journal and the baseline copy, from line 1"), lines(res))

	for _, o := range []Options{{Version: "v2"}, {Version: "v2", Digest: res.Sum}} {
		res, err = Verify(context.Background(), dir, o)
		assert.NilError(t, err)
		assert.Equal(t, res.Findings, 1, lines(res))
		assert.Assert(t, strings.Contains(lines(res), `MISMATCH summary.md: differs from the one this gpuaccept ("v2") renders from the journal and the baseline copy, from line 1`), lines(res))
		assert.Assert(t, strings.Contains(lines(res), `the manifest says gpuaccept "v1" made it`), lines(res))
		assert.Assert(t, strings.Contains(lines(res), "gpuaccept report DIR with this version"), lines(res))
	}

	// A layout of its own with the same verdict line, sealed, is a
	// finding all the same (it was a note).
	dir = signedFolder(t, "v1")
	p := filepath.Join(dir, layout.Markdown)
	data, err := os.ReadFile(p)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(p, append([]byte("# Sign-off\n\n"), data...), 0o644))
	assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
	_, err = manifest.Write(dir, "v1", "h200")
	assert.NilError(t, err)
	sum, err := manifest.Sum(dir)
	assert.NilError(t, err)
	res, err = Verify(context.Background(), dir, Options{Version: "v2", Digest: sum})
	assert.NilError(t, err)
	assert.Equal(t, res.Findings, 1, lines(res))
	assert.Assert(t, strings.Contains(lines(res), `MISMATCH summary.md: differs from the one this gpuaccept ("v2") renders`), lines(res))
}

func TestVerifyVersionAndSKU(t *testing.T) {
	dir := signedFolder(t, "v1")
	assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
	_, err := manifest.Write(dir, "v0", "h100")
	assert.NilError(t, err)
	res, err := Verify(context.Background(), dir, Options{Version: "v1"})
	assert.NilError(t, err)
	for _, w := range []string{`MISMATCH manifest.json says gpuaccept "v0" made the run, the journal says "v1"`, "MISMATCH manifest.json is of SKU h100, the journal of SKU h200"} {
		assert.Assert(t, strings.Contains(lines(res), w), "want %q in\n%s", w, lines(res))
	}
}

// The reports the layout of a results folder defines
// (layout.Reports, which verify holds every file to) are those Render
// writes: a report added there and not here would be a finding in every
// folder.
func TestRenderedReportsAreTheLayouts(t *testing.T) {
	dir := signedFolder(t, "v1")
	run, recorded, err := resultsdir.Load(dir)
	assert.NilError(t, err)
	reports, err := Render(run, nil, recorded)
	assert.NilError(t, err)
	var names []string
	for _, r := range reports {
		names = append(names, r.Name)
	}
	sort.Strings(names)
	want := append([]string(nil), layout.Reports...)
	sort.Strings(want)
	assert.DeepEqual(t, names, want)
}
