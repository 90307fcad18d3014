package acceptance

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// check judges a real log against the baseline, with --out into a
// results folder; the command line's mistakes are refused first, each
// naming what is wrong.
func TestCheck(t *testing.T) {
	cat, err := sku.LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	s, err := cat.Get("h200")
	assert.NilError(t, err)
	file, err := cat.File("h200")
	assert.NilError(t, err)
	ctx := context.Background()
	ok := CheckOptions{SKU: s, Test: "nccl.all_reduce", Nodes: 1, GPUsPerNode: 2, Files: []string{healthyLog}, Baseline: file, Plugins: h200Plugins, Version: "test"}

	run, err := Check(ctx, ok)
	assert.NilError(t, err)
	assert.Equal(t, len(run.Tests), 1)
	assert.Equal(t, run.Tests[0].Status, result.Pass)

	o := ok
	o.Out = filepath.Join(t.TempDir(), "out")
	_, err = Check(ctx, o)
	assert.NilError(t, err)
	_, err = os.Stat(filepath.Join(o.Out, layout.Baseline, "h200.yaml"))
	assert.NilError(t, err, "the results folder keeps the baseline")

	cases := []struct {
		name string
		edit func(*CheckOptions)
		want string
	}{
		{"no scope", func(o *CheckOptions) { o.Nodes = 0 }, "check needs --nodes and --gpus-per-node, both >= 1"},
		{"a test no plugin offers", func(o *CheckOptions) { o.Test = "nccl.all_reduse" }, "nccl.all_reduse"},
		{"an --out that holds files", func(o *CheckOptions) { o.Out = filepath.Dir(healthyLog) }, filepath.Dir(healthyLog)},
		{"a log that is not there", func(o *CheckOptions) { o.Files = []string{"no/such.log"} }, "no/such.log"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := ok
			c.edit(&o)
			_, err := Check(ctx, o)
			assert.ErrorContains(t, err, c.want)
		})
	}
}
