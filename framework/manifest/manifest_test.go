package manifest

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/journal"
)

func folder(t *testing.T) string {
	dir := t.TempDir()
	for p, content := range map[string]string{
		"raw/nccl.all_reduce/all_reduce.log":                   "#  Avg bus bandwidth    : 150.2\n",
		"raw/nccl.all_reduce/all_reduce.files/all_reduce.json": `{"results":[]}`,
		"raw/nccl.all_reduce/outputs.json":                     `[]`,
		"baseline/h200.yaml":                                   "sku: h200\n",
		journal.File:                                           `{"run":{}}` + "\n",
		"results.json":                                         "{}",
	} {
		p = filepath.Join(dir, p)
		assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		assert.NilError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name   string
		change func(dir string)
		want   []string
	}{
		{"untouched", func(string) {}, nil},
		{"reports rebuilt", func(dir string) { os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"status":"pass"}`), 0o644) }, nil},
		{"raw output edited", func(dir string) {
			os.WriteFile(filepath.Join(dir, "raw/nccl.all_reduce/all_reduce.log"), []byte("#  Avg bus bandwidth    : 350.2\n"), 0o644)
		}, []string{"raw/nccl.all_reduce/all_reduce.log: edited since the run"}},
		{"baseline edited", func(dir string) {
			os.WriteFile(filepath.Join(dir, "baseline/h200.yaml"), []byte("sku: h200 \n"), 0o644)
		},
			[]string{"baseline/h200.yaml: edited since the run"}},
		{"raw output removed", func(dir string) {
			os.Remove(filepath.Join(dir, "raw/nccl.all_reduce/all_reduce.files/all_reduce.json"))
		},
			[]string{"raw/nccl.all_reduce/all_reduce.files/all_reduce.json: missing"}},
		{"raw output added", func(dir string) { os.WriteFile(filepath.Join(dir, "raw/nccl.all_reduce/extra.log"), nil, 0o644) },
			[]string{"raw/nccl.all_reduce/extra.log: added since the run"}},
		{"journal edited", func(dir string) { os.WriteFile(filepath.Join(dir, journal.File), []byte(`{"run":{"sku":"x"}}`), 0o644) },
			[]string{journal.File + ": edited since the run"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := folder(t)
			m, err := Write(dir, "test", "h200")
			assert.NilError(t, err)
			assert.Equal(t, m.Baseline.Path, "baseline/h200.yaml")
			assert.Equal(t, len(m.Files), 5, "raw outputs, baseline and journal; not the reports")
			c.change(dir)
			m, err = Read(dir)
			assert.NilError(t, err)
			ps, err := Check(dir, m)
			assert.NilError(t, err)
			assert.Equal(t, len(ps), len(c.want), "%v", ps)
			for i, w := range c.want {
				assert.Assert(t, len(ps[i].String()) >= len(w) && ps[i].String()[:len(w)] == w, ps[i].String())
			}
		})
	}
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

func TestNoBaselineIsAProblem(t *testing.T) {
	dir := folder(t)
	os.RemoveAll(filepath.Join(dir, "baseline"))
	m, err := Write(dir, "test", "h200")
	assert.NilError(t, err)
	ps, err := Check(dir, m)
	assert.NilError(t, err)
	assert.Equal(t, len(ps), 1)
	assert.Equal(t, ps[0].String(), "baseline/h200.yaml: the manifest names no baseline file")
}

// The sub-runs of a localisation keep results folders of their own under
// the main one; their raw outputs, baseline copies and journals are the
// evidence against a suspect and are covered like the main run's, their
// reports are not.
func TestCheckSubRuns(t *testing.T) {
	const sub = "localise/nccl.all_reduce/pairs/n1-n3-r1"
	const sub2 = "localise/nccl.all_reduce/per-node/n2"
	mk := func(t *testing.T) string {
		dir := folder(t)
		for p, content := range map[string]string{
			sub + "/raw/nccl.all_reduce/all_reduce.log":  "#  Avg bus bandwidth    : 41.7\n",
			sub + "/raw/nccl.all_reduce/outputs.json":    `[]`,
			sub + "/baseline/h200.yaml":                  "sku: h200\n",
			sub + "/" + journal.File:                     `{"run":{}}` + "\n",
			sub + "/results.json":                        "{}",
			sub + "/report.html":                         "<html>",
			sub2 + "/raw/nccl.all_gather/all_gather.log": "#  Avg bus bandwidth    : 380.2\n",
			sub2 + "/" + journal.File:                    `{"run":{}}` + "\n",
			// Not a results folder (no journal): not covered.
			"localise/notes.txt": "scratch",
		} {
			p = filepath.Join(dir, p)
			assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			assert.NilError(t, os.WriteFile(p, []byte(content), 0o644))
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
		{"sub-run report rebuilt", func(dir string) { os.WriteFile(filepath.Join(dir, sub, "report.html"), []byte("<html>x"), 0o644) }, nil},
		{"sub-run raw output edited", func(dir string) {
			os.WriteFile(filepath.Join(dir, sub, "raw/nccl.all_reduce/all_reduce.log"), []byte("#  Avg bus bandwidth    : 91.7\n"), 0o644)
		}, []string{sub + "/raw/nccl.all_reduce/all_reduce.log: edited since the run"}},
		{"sub-run journal edited", func(dir string) {
			os.WriteFile(filepath.Join(dir, sub2, journal.File), []byte(`{"run":{"sku":"x"}}`), 0o644)
		}, []string{sub2 + "/" + journal.File + ": edited since the run"}},
		{"sub-run removed", func(dir string) { os.RemoveAll(filepath.Join(dir, sub2)) }, []string{
			sub2 + "/" + journal.File + ": missing", sub2 + "/raw/nccl.all_gather/all_gather.log: missing"}},
		{"sub-run raw output added", func(dir string) {
			os.WriteFile(filepath.Join(dir, sub, "raw/nccl.all_reduce/extra.log"), nil, 0o644)
		}, []string{sub + "/raw/nccl.all_reduce/extra.log: added since the run"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := mk(t)
			m, err := Write(dir, "test", "h200")
			assert.NilError(t, err)
			assert.Equal(t, len(m.Files), 5+4+2, "main: 5; sub-runs: 2 raw + baseline + journal, 1 raw + journal")
			c.change(dir)
			ps, err := Check(dir, m)
			assert.NilError(t, err)
			var got []string
			for _, p := range ps {
				got = append(got, p.String())
			}
			assert.Equal(t, len(got), len(c.want), "%v", got)
			for i, w := range c.want {
				assert.Assert(t, len(got[i]) >= len(w) && got[i][:len(w)] == w, got[i])
			}
		})
	}
}
