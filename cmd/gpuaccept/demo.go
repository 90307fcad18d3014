package main

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuaccept/gpuaccept"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/progress"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/launchers/replay"
)

const demoUsage = `Usage: gpuaccept demo [flags]

Runs the whole pipeline (plugin plan, launcher, parse, judge, reports) on
real nccl-tests recordings embedded in gpuaccept, with the replay launcher:
first a healthy 2 x H200 node, which passes its h200 baseline, then the same
node with NVLink peer-to-peer disabled (NCCL_P2P_DISABLE=1), which fails it.
No GPU is needed.
`

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
	topo := plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}
	var statuses []result.Status
	for _, d := range gpuaccept.DemoRecordings {
		sub, err := iofs.Sub(gpuaccept.Recordings, d.Dir)
		if err != nil {
			return exitUsage, fmt.Errorf("open embedded recordings %s: %w", d.Dir, err)
		}
		l, err := (&replay.Config{FS: sub}).Build(launch.Options{})
		if err != nil {
			return exitUsage, err
		}
		// Banners go to stderr, with the progress: stdout is the reports
		// alone (--format json prints JSON documents only).
		fmt.Fprintf(stderr, "\n== %s\n", d.Title)
		dc := c
		dc.out = filepath.Join(base, d.Name)
		dc.outDeleted = c.out == ""
		if c.junit != "" {
			dc.junit = strings.TrimSuffix(c.junit, ".xml") + "-" + d.Name + ".xml"
		}
		baseline, err := c.skuFile(s)
		if err != nil {
			return exitUsage, err
		}
		// The progress lines of a run: live on a terminal, plain elsewhere.
		disp := progress.For(stderr)
		r := &runner.Runner{Plugins: host, Launcher: l, SKU: s, Dir: dc.out, Version: getVersion(), Events: disp, Params: d.Params, Baseline: baseline}
		res, err := r.Run(ctx, "singlenode", topo)
		disp.Close()
		if ctx.Err() != nil {
			// Ctrl-C: exit as an interrupted run does (README, Exit codes),
			// not as a verdict that came out otherwise.
			return exitInterrupted, errors.New("demo: interrupted (Ctrl-C or SIGTERM)")
		}
		if err != nil {
			return exitUsage, err
		}
		if c.html != "" {
			dc.html = strings.TrimSuffix(c.html, ".html") + "-" + d.Name + ".html"
		}
		code, err := dc.finish(res, s, stdout, stderr)
		if code == exitInterrupted || ctx.Err() != nil {
			return exitInterrupted, errOr(err, "demo: interrupted (Ctrl-C or SIGTERM)")
		}
		if err != nil {
			return exitUsage, err
		}
		if res.Status != d.Want {
			return exitFail, fmt.Errorf("demo: %s ended %s, expected %s", d.Title, res.Status, d.Want)
		}
		statuses = append(statuses, res.Status)
	}
	where := "results folders under " + base
	if c.out == "" {
		where = "give --out DIR to keep the results folders"
	}
	fmt.Fprintf(stderr, "\ndemo: every verdict came out as expected (%v); %s\n", statuses, where)
	return exitOK, nil
}
