package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/report"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

const verifyUsage = `Usage: gpuaccept verify RESULTS_DIR [flags]

Checks a sign-off without rerunning anything: every raw output, the kept
baseline copy and the journal against the SHA-256 in manifest.json (an
edited, missing or added file is named), that no file holds a secret in
clear, results.json against the journal, then parses the raw outputs again
and judges them against that baseline, comparing every verdict and number
with those recorded. The runs of a localisation (results folders under
localise/) are covered by the manifest and re-judged the same way, and
the verdicts the localisation recorded from them compared with their
journals. Exit 0 when everything matches, 1 when something does
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
	for _, p := range clearSecrets(dir) {
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
		for _, d := range verifySubRuns(ctx, host, s, dir, run) {
			fmt.Fprintln(stdout, d)
			bad++
		}
	}
	// manifest.Check counts a manifest without a baseline file as a
	// problem, so m.Baseline is set from here on.
	if bad > 0 {
		fmt.Fprintf(stdout, "verify: FAILED: %d finding(s); this folder is not the sign-off its manifest describes\n", bad)
		return exitFail, nil
	}
	subs := ""
	if n := len(subRunDirs(run)); n > 0 {
		subs = fmt.Sprintf(", as do the %d runs of %d localisation(s)", n, len(run.Localisations))
	}
	fmt.Fprintf(stdout, "verify: OK: %d files match the manifest; %d tests re-judged against %s give the recorded verdicts%s (run %s)\n",
		len(m.Files), len(run.Tests), m.Baseline.Path, subs, run.Status)
	return exitOK, nil
}

// subRunDirs are the results folders of the localisations' runs, each
// once (a per-node run's tests are several SubRuns of one folder), with
// the SubRuns recorded from each.
func subRunDirs(run *result.Run) []subRunDir {
	var out []subRunDir
	at := map[string]int{}
	for _, l := range run.Localisations {
		for _, st := range l.Stages {
			for _, r := range st.Runs {
				if r.Dir == "" {
					continue
				}
				i, ok := at[r.Dir]
				if !ok {
					i = len(out)
					at[r.Dir] = i
					out = append(out, subRunDir{dir: r.Dir, test: l.Test})
				}
				out[i].runs = append(out[i].runs, subRunOf{stage: st.Name, run: r})
			}
		}
	}
	return out
}

type subRunOf struct {
	stage string
	run   result.SubRun
}

type subRunDir struct {
	dir, test string
	runs      []subRunOf
}

// verifySubRuns checks the localisations' runs the way verify checks the
// main one (their files are in the main manifest): each run's folder is
// read back from its journal, its raw outputs re-judged against its own
// baseline copy (or the main one), and each verdict the localisation
// recorded from it compared with its journal's. A run that could not
// start (error) may have no folder.
func verifySubRuns(ctx context.Context, host runner.Plugins, s *sku.SKU, dir string, run *result.Run) []string {
	var out []string
	for _, sd := range subRunDirs(run) {
		folder := filepath.Join(dir, filepath.FromSlash(sd.dir))
		sub, err := journal.Read(folder)
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) && sd.runs[0].run.Status == result.Error {
				continue
			}
			out = append(out, fmt.Sprintf("MISMATCH localisation of %s: run %s: %v", sd.test, sd.dir, err))
			continue
		}
		for _, r := range sd.runs {
			got := result.Status("")
			for _, t := range sub.Tests {
				if t.Name == r.run.Test {
					got = t.Status
				}
			}
			if got != r.run.Status {
				if got == "" {
					got = "no such test"
				}
				out = append(out, fmt.Sprintf("MISMATCH localisation of %s: %s round %d on %s: recorded %s %s, its journal (%s) says %s",
					sd.test, r.stage, r.run.Round, strings.Join(r.run.Hosts, ","), r.run.Test, r.run.Status, sd.dir, got))
			}
		}
		ss := s
		if kept, err := keptBaseline(folder, sub.SKU); err == nil {
			ss = kept
		}
		for _, d := range runner.Rejudge(ctx, host, ss, folder, sub) {
			out = append(out, fmt.Sprintf("REJUDGED %s: %s", sd.dir, d))
		}
	}
	return out
}
