package acceptance

import (
	"bytes"
	"context"
	iofs "io/fs"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept"
	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/launchers/replay"
)

// demoOptions replays the embedded recordings against the built-in h200
// baseline, each run's sign-off noted in finished.
func demoOptions(t *testing.T, finished *[]string) (DemoOptions, *bytes.Buffer) {
	cat, err := sku.LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	s, err := cat.Get("h200")
	assert.NilError(t, err)
	file, err := cat.File("h200")
	assert.NilError(t, err)
	var stderr bytes.Buffer
	return DemoOptions{SKU: s, Baseline: file, Plugins: h200Plugins, Version: "test",
		Recordings: gpuaccept.Recordings, Demos: gpuaccept.DemoRecordings,
		Replay: func(fsys iofs.FS) (launch.Launcher, error) { return (&replay.Config{FS: fsys}).Build(launch.Options{}) },
		Base:   t.TempDir(), JUnit: "out/junit.xml",
		Finish: func(run *result.Run, dir, junit, html string) (int, error) {
			*finished = append(*finished, filepath.Base(dir)+" "+junit+" "+html+" "+string(run.Status))
			return run.ExitCode(), nil
		}, Stderr: &stderr}, &stderr
}

// The demo gives each recording the verdict it must: the healthy node
// passes, the one without NVLink P2P fails; each run is signed off in its
// own folder with its own report files.
func TestDemo(t *testing.T) {
	var finished []string
	o, stderr := demoOptions(t, &finished)
	statuses, code, err := Demo(context.Background(), o)
	assert.NilError(t, err)
	assert.Equal(t, code, result.ExitPass)
	assert.DeepEqual(t, statuses, []result.Status{result.Pass, result.Fail})
	assert.DeepEqual(t, finished, []string{"healthy out/junit-healthy.xml  pass", "p2p-off out/junit-p2p-off.xml  fail"})
	assert.Assert(t, strings.HasPrefix(stderr.String(), "\n== healthy: 2 x H200"), stderr.String())
}

// A verdict other than the one expected fails the demo, naming it; an
// interrupted demo is one.
func TestDemoRefuses(t *testing.T) {
	var finished []string
	o, _ := demoOptions(t, &finished)
	o.Demos = []gpuaccept.DemoRecording{gpuaccept.DemoRecordings[1]}
	o.Demos[0].Want = result.Pass
	_, code, err := Demo(context.Background(), o)
	assert.Equal(t, code, result.ExitFail)
	assert.ErrorContains(t, err, "ended fail, expected pass")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, code, err = Demo(ctx, o)
	assert.Equal(t, code, result.ExitInterrupted)
	assert.Error(t, err, "demo: interrupted (Ctrl-C or SIGTERM)")

	o.Demos[0].Dir = "no/such/folder"
	_, code, _ = Demo(context.Background(), o)
	assert.Equal(t, code, result.ExitUsage)
}

func TestDemoFile(t *testing.T) {
	for _, c := range []struct{ path, ext, want string }{
		{"report.html", ".html", "report-healthy.html"},
		{"out/j.xml", ".xml", "out/j-healthy.xml"},
		{"noext", ".xml", "noext-healthy.xml"},
		{"", ".xml", ""},
	} {
		assert.Equal(t, demoFile(c.path, c.ext, "healthy"), c.want)
	}
}
