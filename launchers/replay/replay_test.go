package replay

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

func TestReplay(t *testing.T) {
	fsys := fstest.MapFS{
		"nccl.all_reduce/all_reduce.log":                   {Data: []byte("# nccl-tests\nexport HF_TOKEN=hf_abcdef123\n")},
		"nccl.all_reduce/all_reduce.files/all_reduce.json": {Data: []byte(`{"env": ["API_KEY=abc"]}`)},
		"nccl.all_reduce/" + layout.Outputs:                {Data: []byte(`[{"step":"all_reduce","exit_code":4,"host":"vm","command":"all_reduce_perf -g 2"}]`)},
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
	_, err = (&Config{Dir: "/nonexistent"}).Build(launch.Options{})
	assert.Assert(t, err != nil && strings.Contains(err.Error(), `--replay-dir "/nonexistent": not a folder`), "%v", err)
}

// Recordings in --replay-dir that are links out of it (to a log, to
// /dev/zero) or FIFOs: the step's LaunchError refuses them by name, without
// blocking and without copying what the link points at.
func TestReplayRefusesLinksAndSpecialFiles(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.log")
	assert.NilError(t, os.WriteFile(outside, []byte("OUTSIDE-THE-FOLDER\n"), 0o644))
	cases := []struct {
		name, file, want string
		plant            func(t *testing.T, p string)
	}{
		{"log a link out", "all_reduce.log", "all_reduce.log is a symbolic link", func(t *testing.T, p string) { assert.NilError(t, os.Symlink(outside, p)) }},
		{"log a link to /dev/zero", "all_reduce.log", "all_reduce.log is a symbolic link", func(t *testing.T, p string) { assert.NilError(t, os.Symlink("/dev/zero", p)) }},
		{"log a FIFO", "all_reduce.log", "all_reduce.log is a named pipe (FIFO)", func(t *testing.T, p string) { assert.NilError(t, syscall.Mkfifo(p, 0o644)) }},
		{"file a link out", "all_reduce.files/all_reduce.json", "all_reduce.json is a symbolic link", func(t *testing.T, p string) { assert.NilError(t, os.Symlink(outside, p)) }},
		{"file a FIFO", "all_reduce.files/all_reduce.json", "all_reduce.json is a named pipe (FIFO)", func(t *testing.T, p string) { assert.NilError(t, syscall.Mkfifo(p, 0o644)) }},
		{"test folder a link out", ".", "nccl.all_reduce is a symbolic link", func(t *testing.T, p string) {
			assert.NilError(t, os.RemoveAll(p))
			assert.NilError(t, os.Symlink(filepath.Dir(outside), p))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := t.TempDir()
			test := filepath.Join(rec, "nccl.all_reduce")
			assert.NilError(t, os.MkdirAll(filepath.Join(test, "all_reduce.files"), 0o755))
			assert.NilError(t, os.WriteFile(filepath.Join(test, "all_reduce.log"), []byte("# nccl-tests\n"), 0o644))
			assert.NilError(t, os.WriteFile(filepath.Join(test, "all_reduce.files/all_reduce.json"), []byte("{}"), 0o644))
			p := filepath.Join(test, c.file)
			if c.file != "." {
				assert.NilError(t, os.Remove(p))
			}
			c.plant(t, p)
			l, err := (&Config{Dir: rec}).Build(launch.Options{})
			assert.NilError(t, err)
			dir := t.TempDir()
			steps := []plan.Step{{Name: "all_reduce", Argv: []string{"x"}, Procs: 1, ProcsPerNode: 1, Files: []string{"all_reduce.json"}}}
			done := make(chan string, 1)
			go func() {
				// A refused folder stops the test (the error); a refused
				// file, its step (the LaunchError).
				outs, err := l.Launch(context.Background(), launch.Request{Test: "nccl.all_reduce", Plan: plan.Plan{Steps: steps}, Dir: dir})
				if err != nil {
					done <- err.Error()
					return
				}
				done <- outs[0].LaunchError
			}()
			var why string
			select {
			case why = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("replay did not return within 10 s: it blocks on a file it should refuse")
			}
			assert.Assert(t, strings.Contains(why, c.want), why)
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					data, _ := os.ReadFile(p)
					assert.Assert(t, !strings.Contains(string(data), "OUTSIDE-THE-FOLDER"), "copied %s from outside", p)
				}
				return nil
			})
		})
	}
}
