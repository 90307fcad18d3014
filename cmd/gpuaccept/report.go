package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/signoff"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

var reportUsage = help("report")

func cmdReport(args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	fs := newFlags("report", reportUsage, stderr)
	fs.StringVar(&c.junit, "junit", "", "also write JUnit XML to this file")
	fs.StringVar(&c.html, "html", "", "also write the HTML report to this file")
	fs.StringVar(&c.format, "format", "table", "report on stdout: table, json or markdown")
	c.addSign(fs)
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	if err := validFormat(c.format); err != nil {
		return exitUsage, err
	}
	if fs.NArg() != 1 {
		return exitUsage, usageError{errors.New("report takes one RESULTS_DIR")}
	}
	if err := c.loadKey(); err != nil {
		return exitUsage, err
	}
	dir := fs.Arg(0)
	run, err := c.loadRun(dir)
	if err != nil {
		return exitUsage, err
	}
	s, _ := resultsdir.KeptBaseline(dir, run.SKU) // without it the plots have no bands
	if code, err := c.mayRebuild(dir, run, s, stderr); err != nil {
		// Nothing is written, nothing printed: the folder keeps what a
		// customer may still check against its manifest or signature, and
		// a verdict on stdout (a PASS a CI greps) would read as the
		// folder's while it is not the sign-off it was.
		return code, err
	}
	return c.finish(run, s, stdout, stderr)
}

// mayRebuild says whether report may write the folder's reports and sign
// it off (signoff.MayRebuild), printing what re-judging found. The exit
// code is 2: a folder that is not the sign-off it was is bad input, which
// CI must not read as faulty hardware (1).
func (c *common) mayRebuild(dir string, run *result.Run, s *sku.SKU, stderr io.Writer) (int, error) {
	host := c.host()
	defer host.Close()
	ctx, stop := signalContext()
	defer stop()
	diffs, err := signoff.MayRebuild(ctx, host, dir, run, s, c.key != nil)
	for _, d := range diffs {
		fmt.Fprintf(stderr, "REJUDGED %s\n", d)
	}
	if err != nil {
		return exitUsage, err
	}
	return 0, nil
}

// loadRun reads the run a results folder holds (resultsdir.LoadFolder)
// and keeps the folder it recorded in c, so the reports rebuilt show it as
// the run did.
func (c *common) loadRun(dir string) (*result.Run, error) {
	run, recorded, err := resultsdir.LoadFolder(dir)
	if err != nil {
		return nil, err
	}
	c.recorded = recorded
	return run, nil
}
