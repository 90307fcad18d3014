package main

import (
	"fmt"
	"io"
	iofs "io/fs"
	"os"

	"github.com/gpuaccept/gpuaccept"
	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
	"github.com/gpuaccept/gpuaccept/launchers/replay"
)

var demoUsage = help("demo")

func cmdDemo(args []string, stdout, stderr io.Writer) (int, error) {
	var c cliopts.Common
	fs := cliopts.NewFlags("demo", demoUsage, stderr)
	c.AddOnly(fs, "baselines", "out", "junit", "html", "format", "plugin-path")
	if err := fs.Parse(args); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	if err := cliopts.ValidFormat(c.Format); err != nil {
		return exitUsage, err
	}
	cat, err := c.Catalog(stderr)
	if err != nil {
		return exitUsage, err
	}
	s, err := cat.Get("h200")
	if err != nil {
		return exitUsage, err
	}
	base := c.Out
	if base == "" {
		if base, err = os.MkdirTemp("", "gpuaccept-demo-"); err != nil {
			return exitUsage, fmt.Errorf("create demo results folder: %w", err)
		}
		defer os.RemoveAll(base)
	}
	host := c.Host()
	defer host.Close()
	ctx, stop := cliopts.SignalContext()
	defer stop()
	c.Ctx = ctx
	baseline, err := c.Cats.File(s)
	if err != nil {
		return exitUsage, err
	}
	replayer := func(fsys iofs.FS) (launch.Launcher, error) { return (&replay.Config{FS: fsys}).Build(launch.Options{}) }
	finish := func(run *result.Run, dir, junit, html string) (int, error) {
		dc := c
		dc.Out, dc.OutDeleted, dc.JUnit, dc.HTML = dir, c.Out == "", junit, html
		return dc.Finish(run, s, stdout, stderr)
	}
	statuses, code, err := acceptance.Demo(ctx, acceptance.DemoOptions{SKU: s, Baseline: baseline, Plugins: host, Version: getVersion(),
		Recordings: gpuaccept.Recordings, Demos: gpuaccept.DemoRecordings, Replay: replayer, Base: base, JUnit: c.JUnit, HTML: c.HTML,
		Finish: finish, Stderr: stderr})
	if err != nil {
		return code, err
	}
	where := "results folders under " + base
	if c.Out == "" {
		where = "give --out DIR to keep the results folders"
	}
	fmt.Fprintf(stderr, "\ndemo: every verdict came out as expected (%v); %s\n", statuses, where)
	return exitOK, nil
}
