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
	"github.com/gpuaccept/gpuaccept/launchers/replay"
)

var demoUsage = help("demo")

func cmdDemo(args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	fs := newFlags("demo", demoUsage, stderr)
	c.addOnly(fs, "baselines", "out", "junit", "html", "format", "plugin-path")
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	if err := validFormat(c.format); err != nil {
		return exitUsage, err
	}
	cat, err := c.catalog(stderr)
	if err != nil {
		return exitUsage, err
	}
	s, err := cat.Get("h200")
	if err != nil {
		return exitUsage, err
	}
	base := c.out
	if base == "" {
		if base, err = os.MkdirTemp("", "gpuaccept-demo-"); err != nil {
			return exitUsage, fmt.Errorf("create demo results folder: %w", err)
		}
		defer os.RemoveAll(base)
	}
	host := c.host()
	defer host.Close()
	ctx, stop := signalContext()
	defer stop()
	c.ctx = ctx
	baseline, err := c.cats.File(s)
	if err != nil {
		return exitUsage, err
	}
	replayer := func(fsys iofs.FS) (launch.Launcher, error) { return (&replay.Config{FS: fsys}).Build(launch.Options{}) }
	finish := func(run *result.Run, dir, junit, html string) (int, error) {
		dc := c
		dc.out, dc.outDeleted, dc.junit, dc.html = dir, c.out == "", junit, html
		return dc.finish(run, s, stdout, stderr)
	}
	statuses, code, err := acceptance.Demo(ctx, acceptance.DemoOptions{SKU: s, Baseline: baseline, Plugins: host, Version: getVersion(),
		Recordings: gpuaccept.Recordings, Demos: gpuaccept.DemoRecordings, Replay: replayer, Base: base, JUnit: c.junit, HTML: c.html,
		Finish: finish, Stderr: stderr})
	if err != nil {
		return code, err
	}
	where := "results folders under " + base
	if c.out == "" {
		where = "give --out DIR to keep the results folders"
	}
	fmt.Fprintf(stderr, "\ndemo: every verdict came out as expected (%v); %s\n", statuses, where)
	return exitOK, nil
}
