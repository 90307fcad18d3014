package main

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/signoff"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

const reportUsage = `Usage: gpuaccept report RESULTS_DIR [flags]

Rebuilds every report of a results folder (results.json, junit.xml,
report.html, summary.md, table.txt) from what it holds: the journal of
finished tests, the raw outputs and the copy of the baseline. A run stopped
by Ctrl-C, a killed gpuaccept or a lost node gets its reports this way; the
tests it did not finish are listed as errors. A folder without manifest.json
is signed off (manifest written, --sign-key signs it, the sign-off digest
printed); one that has a manifest keeps it, and --sign-key signs it only
while every file still matches it. Prints the report in --format and exits
as its verdicts say (0 pass, 1 fail, 3 error, 4 nothing judged or a
benchmark measured and not judged; an interrupted run's unfinished tests
are errors here, not 130). The verdict is derived from the tests, never
read from results.json's status.
`

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

// loadRun reads the run a results folder holds (resultsdir.Load) and
// keeps the folder it recorded in c, so the reports rebuilt show it as
// the run did.
func (c *common) loadRun(dir string) (*result.Run, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, usageError{fmt.Errorf("results folder %s: not a folder", dir)}
	}
	run, recorded, err := resultsdir.Load(dir)
	if err != nil {
		return nil, err
	}
	if err := rawInFolder(dir, run); err != nil {
		return nil, err
	}
	c.recorded = recorded
	return run, nil
}

// rawInFolder refuses a run whose raw outputs (those of every test and
// attempt) are not all regular files inside dir reached through no link:
// report quotes them and verify re-parses them, so a FIFO would hang them
// and a link out of the folder would quote or judge what is elsewhere. A
// raw output that is missing is left to the reports (and the manifest).
func rawInFolder(dir string, run *result.Run) error {
	var tests []result.Test
	for _, t := range run.Tests {
		tests = append(append(tests, t.Attempts...), t)
	}
	for _, t := range tests {
		for _, r := range t.Raw {
			if err := safefs.Check(dir, r); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				return fmt.Errorf("raw output of %s: %w", t.Name, err)
			}
		}
	}
	return nil
}
