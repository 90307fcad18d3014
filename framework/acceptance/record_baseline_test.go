package acceptance

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/record"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/plugins/gemm"
	"github.com/gpuaccept/gpuaccept/plugins/hbm"
	"github.com/gpuaccept/gpuaccept/plugins/health"
	"github.com/gpuaccept/gpuaccept/plugins/hostlink"
	"github.com/gpuaccept/gpuaccept/plugins/nccl"
	"github.com/gpuaccept/gpuaccept/plugins/train"
)

// h200Plugins are the plugins of every test of the h200 SKU file, which
// must validate as a whole.
var h200Plugins = inProcess{nccl.PluginName: nccl.Plugin{}, gemm.PluginName: gemm.Plugin{}, hbm.PluginName: hbm.Plugin{},
	hostlink.PluginName: hostlink.Plugin{}, health.PluginName: health.Plugin{}, train.PluginName: train.Plugin{}}

// Names lets the in-process plugins stand for the host where recording
// looks tests up (TestCatalog).
func (p inProcess) Names() []string {
	var names []string
	for n := range p {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// recordOptions records into the built-in h200 file from the real logs of
// inputs (a 1x2 scope), writing to stdout and stderr.
func recordOptions(t *testing.T, inputs []string, stdout, stderr *bytes.Buffer) RecordOptions {
	cat, err := sku.LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	s, err := cat.Get("h200")
	assert.NilError(t, err)
	file, err := cat.File("h200")
	assert.NilError(t, err)
	opt := record.DefaultOptions()
	opt.Now = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	return RecordOptions{Plugins: h200Plugins, SKU: s, File: file, Inputs: inputs, Nodes: 1, GPUsPerNode: 2, Record: opt,
		Command: "gpuaccept baseline record --sku h200", Version: "test",
		Check: SKUChecker(context.Background(), h200Plugins, nil), Stdout: stdout, Stderr: stderr}
}

// baseline record from its runs to the file: the entries of the tests
// recorded, the header naming this recording, the file validated, the
// summary on stderr; and every refusal naming what it refused.
func TestRecordBaseline(t *testing.T) {
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	o := recordOptions(t, []string{"nccl.all_reduce=" + healthyLog}, &stdout, &stderr)
	assert.NilError(t, RecordBaseline(ctx, o))
	text := stdout.String()
	assert.Assert(t, strings.Contains(text, "values of one run of nccl.all_reduce at 1x2, band: the floors"), text)
	assert.Assert(t, strings.Contains(text, "# Recorded 2026-12-07 from 1 run of nccl.all_reduce at 1x2.\n") && strings.Contains(text, "# Command: gpuaccept baseline record --sku h200\n"), text)
	assert.Assert(t, strings.HasPrefix(stderr.String(), "record: ") && strings.Contains(stderr.String(), " from 1 run of 1 test\n"), stderr.String())

	out := filepath.Join(t.TempDir(), "h200.yaml")
	stdout.Reset()
	stderr.Reset()
	o.Out = out
	assert.NilError(t, RecordBaseline(ctx, o))
	assert.Equal(t, stdout.Len(), 0)
	data, err := os.ReadFile(out)
	assert.NilError(t, err)
	assert.Equal(t, string(data), text, "the file holds what stdout would")
	assert.Assert(t, strings.HasSuffix(stderr.String(), "record: wrote "+out+"\n"), stderr.String())

	cases := []struct {
		name string
		edit func(*RecordOptions)
		want string
	}{
		{"no runs", func(o *RecordOptions) { o.Inputs = nil }, "baseline record: no runs given (results folders, raw folders or TEST=LOGFILE), and no --repeat"},
		{"a bad scope", func(o *RecordOptions) { o.Nodes = 0 }, "--nodes and --gpus-per-node: "},
		{"a log that is not there", func(o *RecordOptions) { o.Inputs = []string{"nccl.all_reduce=no/such.log"} }, "record: "},
		{"runs spread past the floor", func(o *RecordOptions) { o.Inputs = append(o.Inputs, "nccl.all_reduce="+p2poffLog) },
			"record: busbw {placement=out-of-place} at 8 MiB of nccl.all_reduce at 1x2: the runs spread so far apart"},
		{"a file that no longer validates", func(o *RecordOptions) {
			o.Check = func([]byte, string) (*sku.SKU, error) { return nil, errors.New("line 3: bad") }
		}, "record: the recorded file does not validate: line 3: bad"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := recordOptions(t, []string{"nccl.all_reduce=" + healthyLog}, &bytes.Buffer{}, &bytes.Buffer{})
			c.edit(&o)
			assert.ErrorContains(t, RecordBaseline(ctx, o), c.want)
		})
	}
}

// --repeat runs the suite that many times, each into its own folder under
// the results folder with the SKU and --baselines added, and stops at a
// run that could not run; the runs, not the RUN arguments, are recorded.
func TestRecordBaselineRepeat(t *testing.T) {
	root := t.TempDir()
	var stderr bytes.Buffer
	o := recordOptions(t, []string{"--suite", "singlenode"}, &bytes.Buffer{}, &stderr)
	o.Repeat, o.Results, o.RunArgs, o.Baselines = 2, root, []string{"--suite", "singlenode"}, "site"
	var calls [][]string
	o.Run = func(args []string) (int, error) {
		calls = append(calls, args)
		return result.ExitUsage, errors.New("no launcher")
	}
	err := RecordBaseline(context.Background(), o)
	assert.Error(t, err, "record: run 1 of 2: no launcher")
	assert.DeepEqual(t, calls, [][]string{{"--sku", "h200", "--suite", "singlenode", "--baselines", "site", "--out", filepath.Join(root, "run-1")}})
	assert.Equal(t, stderr.String(), "record: run 1 of 2 into "+filepath.Join(root, "run-1")+"\n")

	calls = nil
	o.Run = func(args []string) (int, error) { calls = append(calls, args); return result.ExitFail, nil }
	dirs, err := repeatRuns(o)
	assert.NilError(t, err, "a run that failed its tests still ran: record judges the runs it reads")
	assert.DeepEqual(t, dirs, []string{filepath.Join(root, "run-1"), filepath.Join(root, "run-2")})
	o.Run = func([]string) (int, error) { return result.ExitUsage, nil }
	_, err = repeatRuns(o)
	assert.Error(t, err, "record: run 1 of 2: could not run")
	o.Repeat = 0
	dirs, err = repeatRuns(o)
	assert.NilError(t, err)
	assert.DeepEqual(t, dirs, o.Inputs)
}

// baseline diff's OLD and NEW: a SKU's name from the catalog, a file by
// its path; a file with problems is refused with all of them, and a name
// the catalog does not hold is named.
func TestDiffSKUs(t *testing.T) {
	ctx := context.Background()
	cat, err := sku.LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	catalog := func() (*sku.Catalog, error) { return cat, nil }
	check := SKUChecker(ctx, h200Plugins, nil)
	dir := t.TempDir()
	data, err := cat.File("h200")
	assert.NilError(t, err)
	good := filepath.Join(dir, "h200.yaml")
	assert.NilError(t, os.WriteFile(good, data, 0o644))
	bad := filepath.Join(dir, "bad.yaml")
	assert.NilError(t, os.WriteFile(bad, []byte("name: bad\ngpus_per_node: x\n"), 0o644))

	skus, err := DiffSKUs(ctx, [2]string{"h200", good}, catalog, h200Plugins, check)
	assert.NilError(t, err)
	assert.Equal(t, skus[0].Name, "h200")
	assert.Equal(t, skus[1].File, good)

	_, err = DiffSKUs(ctx, [2]string{"h200", bad}, catalog, h200Plugins, check)
	assert.ErrorContains(t, err, "baseline diff: fix these first (gpuaccept baseline validate FILE):\n"+bad)
	_, err = DiffSKUs(ctx, [2]string{"nosuchsku", good}, catalog, h200Plugins, check)
	assert.ErrorContains(t, err, "baseline diff: ")
	assert.ErrorContains(t, err, "nosuchsku")
	_, err = DiffSKUs(ctx, [2]string{filepath.Join(dir, "missing.yaml"), good}, catalog, h200Plugins, check)
	assert.ErrorContains(t, err, "baseline diff: ")
}

// SKUChecker joins the launcher's check to the parse and the plugins'
// check, in one error.
func TestSKUChecker(t *testing.T) {
	cat, err := sku.LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	data, err := cat.File("h200")
	assert.NilError(t, err)
	ctx := context.Background()
	s, err := SKUChecker(ctx, h200Plugins, nil)(data, "h200.yaml")
	assert.NilError(t, err)
	assert.Equal(t, s.Name, "h200")
	_, err = SKUChecker(ctx, h200Plugins, func(*sku.SKU) error { return errors.New("kubernetes: no image") })(data, "h200.yaml")
	assert.ErrorContains(t, err, "kubernetes: no image")
	_, err = SKUChecker(ctx, h200Plugins, nil)([]byte(":\n- ["), "broken.yaml")
	assert.ErrorContains(t, err, "broken.yaml")
}
