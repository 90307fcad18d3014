package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/report"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

const reportUsage = `Usage: gpuaccept report RESULTS_DIR [flags]

Rebuilds every report of a results folder (results.json, junit.xml,
report.html, summary.md, table.txt) from what it holds: the journal of
finished tests, the raw outputs and the copy of the baseline. A run stopped
by Ctrl-C, a killed gpuaccept or a lost node gets its reports this way; the
tests it did not finish are listed as errors. Prints the report in --format
and exits as the run would have (0, 1 or 2).
`

func cmdReport(args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	fs := newFlags("report", reportUsage, stderr)
	fs.StringVar(&c.junit, "junit", "", "also write JUnit XML to this file")
	fs.StringVar(&c.html, "html", "", "also write the HTML report to this file")
	fs.StringVar(&c.format, "format", "table", "report on stdout: table, json or markdown")
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	if err := validFormat(c.format); err != nil {
		return exitUsage, err
	}
	if fs.NArg() != 1 {
		return exitUsage, usageError{errors.New("report takes one RESULTS_DIR")}
	}
	dir := fs.Arg(0)
	run, err := loadRun(dir)
	if err != nil {
		return exitUsage, err
	}
	s, _ := keptBaseline(dir, run.SKU) // without it the plots have no bands
	return c.finish(run, s, stdout, stderr)
}

// loadRun reads the run a results folder holds: from its journal, which
// has every test that finished even when the run was stopped, else from
// results.json (folders of gpuaccept check --out).
func loadRun(dir string) (*result.Run, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, usageError{fmt.Errorf("results folder %s: not a folder", dir)}
	}
	run, err := journal.Read(dir)
	if errors.Is(err, iofs.ErrNotExist) {
		data, rerr := safefs.ReadFile(dir, report.ResultsFile, maxResults)
		if errors.Is(rerr, safefs.ErrRefused) {
			return nil, rerr
		}
		if rerr != nil {
			return nil, fmt.Errorf("results folder %s has neither %s nor %s", dir, journal.File, report.ResultsFile)
		}
		run = &result.Run{}
		if err := json.Unmarshal(data, run); err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, report.ResultsFile), err)
		}
	} else if err != nil {
		return nil, err
	}
	if err := rawInFolder(dir, run); err != nil {
		return nil, err
	}
	run.Dir = dir
	return run, nil
}

// maxResults bounds the results.json read back.
const maxResults = 1 << 30

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

// keptBaseline loads the copy of the SKU file a results folder keeps.
func keptBaseline(dir, name string) (*sku.SKU, error) {
	bdir := filepath.Join(dir, journal.BaselineDir)
	fsys, err := iofs.Sub(safefs.DirFS(dir), journal.BaselineDir)
	if err != nil {
		return nil, fmt.Errorf("baseline kept in the results folder: %w", err)
	}
	cat, err := sku.Load(fsys, bdir)
	if err != nil {
		return nil, fmt.Errorf("baseline kept in the results folder: %w", err)
	}
	return cat.Get(name)
}
