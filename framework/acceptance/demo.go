package acceptance

// This file: gpuaccept demo, the whole pipeline on the recordings the
// binary embeds.

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path/filepath"
	"strings"

	"github.com/gpuaccept/gpuaccept"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/progress"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// DemoOptions are what gpuaccept demo replays its recordings with.
type DemoOptions struct {
	// SKU judges the recordings (h200); Baseline is its file's content.
	SKU      *sku.SKU
	Baseline []byte
	Plugins  runner.Plugins
	Version  string
	// Recordings holds the Demos' folders (gpuaccept.Recordings); Replay
	// builds the launcher that replays one of them.
	Recordings iofs.FS
	Demos      []gpuaccept.DemoRecording
	Replay     func(iofs.FS) (launch.Launcher, error)
	// Base is the folder of the demos' results folders, one per demo
	// named after it. JUnit and HTML ("": none) are the report files
	// asked for, each demo's named with its name before the extension.
	Base, JUnit, HTML string
	// Finish signs a demo's run off into its results folder dir with
	// its report files (signoff.Finish), returning its exit code.
	Finish func(run *result.Run, dir, junit, html string) (int, error)
	// Stderr receives the banners and the progress.
	Stderr io.Writer
}

// Demo replays each demo recording through the whole pipeline (plugin
// plan, launcher, parse, judge, reports) on 1 x 2 GPUs, and checks that
// each gives the verdict it must. It returns the statuses, in order, and
// the exit code: result.ExitInterrupted when ctx was cancelled,
// result.ExitFail for a verdict other than the one expected,
// result.ExitUsage for an error.
func Demo(ctx context.Context, o DemoOptions) ([]result.Status, int, error) {
	topo := plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}
	var statuses []result.Status
	for _, d := range o.Demos {
		sub, err := iofs.Sub(o.Recordings, d.Dir)
		if err != nil {
			return nil, result.ExitUsage, fmt.Errorf("open embedded recordings %s: %w", d.Dir, err)
		}
		l, err := o.Replay(sub)
		if err != nil {
			return nil, result.ExitUsage, err
		}
		// Banners go to stderr, with the progress: stdout is the reports
		// alone (--format json prints JSON documents only).
		fmt.Fprintf(o.Stderr, "\n== %s\n", d.Title)
		dir := filepath.Join(o.Base, d.Name)
		// The progress lines of a run: live on a terminal, plain elsewhere.
		disp := progress.For(o.Stderr)
		r := &runner.Runner{Plugins: o.Plugins, Launcher: l, SKU: o.SKU, Dir: dir, Version: o.Version, Events: disp, Params: d.Params, Baseline: o.Baseline}
		res, err := r.Run(ctx, "singlenode", topo)
		disp.Close()
		if ctx.Err() != nil {
			// Ctrl-C: exit as an interrupted run does (README, Exit codes),
			// not as a verdict that came out otherwise.
			return nil, result.ExitInterrupted, errors.New("demo: interrupted (Ctrl-C or SIGTERM)")
		}
		if err != nil {
			return nil, result.ExitUsage, err
		}
		code, err := o.Finish(res, dir, demoFile(o.JUnit, ".xml", d.Name), demoFile(o.HTML, ".html", d.Name))
		if code == result.ExitInterrupted || ctx.Err() != nil {
			if err == nil {
				err = errors.New("demo: interrupted (Ctrl-C or SIGTERM)")
			}
			return nil, result.ExitInterrupted, err
		}
		if err != nil {
			return nil, result.ExitUsage, err
		}
		if res.Status != d.Want {
			return nil, result.ExitFail, fmt.Errorf("demo: %s ended %s, expected %s", d.Title, res.Status, d.Want)
		}
		statuses = append(statuses, res.Status)
	}
	return statuses, result.ExitPass, nil
}

// demoFile names a demo's report file: path with "-NAME" before ext
// ("report.html" -> "report-healthy.html"); "" stays "".
func demoFile(path, ext, name string) string {
	if path == "" {
		return ""
	}
	return strings.TrimSuffix(path, ext) + "-" + name + ext
}
