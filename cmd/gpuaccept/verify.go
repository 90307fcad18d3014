package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/report"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/runner"
)

const verifyUsage = `Usage: gpuaccept verify RESULTS_DIR [flags]

Checks a sign-off without rerunning anything: every raw output, the kept
baseline copy and the journal against the SHA-256 in manifest.json (an
edited, missing or added file is named), results.json against the journal,
then parses the raw outputs again
and judges them against that baseline, comparing every verdict and number
with those recorded. Exit 0 when everything matches, 1 when something does
not, 2 when the folder cannot be read.
`

func cmdVerify(args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	fs := newFlags("verify", verifyUsage, stderr)
	fs.StringVar(&c.pluginPath, "plugin-path", os.Getenv("GPUACCEPT_PLUGIN_PATH"), "folders (colon-separated) searched for external gpuaccept-plugin-NAME executables (env GPUACCEPT_PLUGIN_PATH)")
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	if fs.NArg() != 1 {
		return exitUsage, usageError{errors.New("verify takes one RESULTS_DIR")}
	}
	dir := fs.Arg(0)
	m, err := manifest.Read(dir)
	if err != nil {
		return exitUsage, err
	}
	sum, err := manifest.Sum(dir)
	if err != nil {
		return exitUsage, err
	}
	fmt.Fprintf(stdout, "manifest %s: sha256 %s, made by gpuaccept %s (this is %s), SKU %s, %d files\n", dir, sum, m.Version, getVersion(), m.SKU, len(m.Files))
	problems, err := manifest.Check(dir, m)
	if err != nil {
		return exitUsage, err
	}
	bad := 0
	for _, p := range problems {
		fmt.Fprintf(stdout, "MISMATCH %s\n", p)
		bad++
	}
	run, err := loadRun(dir)
	if err != nil {
		return exitUsage, err
	}
	if data, err := os.ReadFile(filepath.Join(dir, report.ResultsFile)); err == nil {
		var shown result.Run
		if err := json.Unmarshal(data, &shown); err != nil {
			fmt.Fprintf(stdout, "MISMATCH %s: %v\n", report.ResultsFile, err)
			bad++
		} else {
			for _, d := range report.Disagreements(&shown, run) {
				fmt.Fprintf(stdout, "MISMATCH %s (gpuaccept report %s rebuilds it)\n", d, dir)
				bad++
			}
		}
	}
	s, err := keptBaseline(dir, m.SKU)
	if err != nil {
		fmt.Fprintf(stdout, "MISMATCH %v\n", err)
		bad++
	} else {
		host := c.host()
		defer host.Close()
		ctx, stop := signalContext()
		defer stop()
		for _, d := range runner.Rejudge(ctx, host, s, dir, run) {
			fmt.Fprintf(stdout, "REJUDGED %s\n", d)
			bad++
		}
	}
	// manifest.Check counts a manifest without a baseline file as a
	// problem, so m.Baseline is set from here on.
	if bad > 0 {
		fmt.Fprintf(stdout, "verify: FAILED: %d finding(s); this folder is not the sign-off its manifest describes\n", bad)
		return exitFail, nil
	}
	fmt.Fprintf(stdout, "verify: OK: %d files match the manifest; %d tests re-judged against %s give the recorded verdicts (run %s)\n",
		len(m.Files), len(run.Tests), m.Baseline.Path, run.Status)
	return exitOK, nil
}
