package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
)

func TestReplay(t *testing.T) {
	fsys := fstest.MapFS{
		"nccl.all_reduce/all_reduce.log":                   {Data: []byte("# nccl-tests\nexport HF_TOKEN=hf_abcdef123\n")},
		"nccl.all_reduce/all_reduce.files/all_reduce.json": {Data: []byte(`{"env": ["API_KEY=abc"]}`)},
		"nccl.all_reduce/" + launch.OutputsFile:            {Data: []byte(`[{"step":"all_reduce","exit_code":4,"host":"vm","command":"all_reduce_perf -g 2"}]`)},
		"nccl.all_gather/all_gather.log":                   {Data: []byte("x\n")},
	}
	l := &Launcher{FS: fsys, Where: "test"}
	dir := t.TempDir()
	steps := []plan.Step{{Name: "all_reduce", Argv: []string{"x"}, Procs: 1, ProcsPerNode: 1, Files: []string{"all_reduce.json"}}}
	outs, err := l.Launch(context.Background(), launch.Request{Test: "nccl.all_reduce", Plan: plan.Plan{Steps: steps}, Dir: dir})
	assert.NilError(t, err)
	o := outs[0]
	assert.Equal(t, o.ExitCode, 4)
	assert.Equal(t, o.Host, "vm")
	assert.Equal(t, o.Command, "all_reduce_perf -g 2")
	log, _ := os.ReadFile(o.Log)
	assert.Equal(t, string(log), "# nccl-tests\nexport HF_TOKEN=[REDACTED]\n")
	js, _ := os.ReadFile(o.Files["all_reduce.json"])
	assert.Equal(t, string(js), `{"env": ["API_KEY=[REDACTED]"]}`)
	assert.Equal(t, filepath.Dir(o.Log), dir)

	outs, err = l.Launch(context.Background(), launch.Request{Test: "nccl.broadcast", Plan: plan.Plan{Steps: []plan.Step{{Name: "broadcast"}}}, Dir: dir})
	assert.NilError(t, err)
	assert.Equal(t, outs[0].LaunchError, "no recording nccl.broadcast/broadcast.log in test")
	assert.Equal(t, outs[0].ExitCode, -1)
}

func TestNewNeedsADir(t *testing.T) {
	_, err := launch.New(Name, launch.Options{})
	assert.ErrorContains(t, err, "launcher replay needs --replay-dir")
	_, err = launch.New(Name, launch.Options{ReplayDir: "/nonexistent"})
	assert.Assert(t, err != nil && strings.Contains(err.Error(), `"/nonexistent": not a folder`))
}
