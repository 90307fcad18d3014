package main

import (
	"errors"
	"io"

	"github.com/gpuaccept/gpuaccept/framework/burnin"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
)

var reportUsage = help("report")

func cmdReport(args []string, stdout, stderr io.Writer) (int, error) {
	var c cliopts.Common
	fs := cliopts.NewFlags("report", reportUsage, stderr)
	fs.StringVar(&c.JUnit, "junit", "", "also write JUnit XML to this file")
	fs.StringVar(&c.HTML, "html", "", "also write the HTML report to this file")
	fs.StringVar(&c.Format, "format", "table", "report on stdout: table, json or markdown")
	c.AddSign(fs)
	if err := fs.Parse(args); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	if err := cliopts.ValidFormat(c.Format); err != nil {
		return exitUsage, err
	}
	if fs.NArg() != 1 {
		return exitUsage, cliopts.Usage(errors.New("report takes one RESULTS_DIR"))
	}
	if err := c.LoadKey(); err != nil {
		return exitUsage, err
	}
	dir := fs.Arg(0)
	if c.Version = getVersion(); burnin.IsBurnIn(dir) {
		return c.RebuildBurnIn(dir, stdout, stderr)
	}
	run, err := c.LoadRun(dir)
	if err != nil {
		return exitUsage, err
	}
	s, _ := resultsdir.KeptBaseline(dir, run.SKU) // without it the plots have no bands
	if code, err := c.MayRebuild(dir, run, s, stderr); err != nil {
		// Nothing is written, nothing printed: the folder keeps what a
		// customer may still check against its manifest or signature, and
		// a verdict on stdout (a PASS a CI greps) would read as the
		// folder's while it is not the sign-off it was.
		return code, err
	}
	return c.Finish(run, s, stdout, stderr)
}
