package signoff

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/report"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// WriteLines writes verify's account (Lines) to w, each line one line
// (redact.PrintableLine): a name with a line feed in it cannot print a
// "verify: OK" of its own.
func (r *Result) WriteLines(w io.Writer) {
	for _, l := range r.Lines {
		fmt.Fprintln(w, redact.PrintableLine(l.String()))
	}
}

// WriteVerdict writes verify's end to w: a MISMATCH line for each file of
// dir holding a secret in clear (ClearSecrets), each a finding, then the
// last line, "verify: FAILED" counting the findings or OKLine. It returns
// whether the folder failed.
func (r *Result) WriteVerdict(w io.Writer, dir string) (failed bool) {
	findings := r.Findings
	for _, p := range ClearSecrets(dir) {
		fmt.Fprintf(w, "MISMATCH %s\n", redact.PrintableLine(p))
		findings++
	}
	if findings > 0 {
		fmt.Fprintf(w, "verify: FAILED: %s; this folder is not the sign-off its manifest describes\n", result.Count(findings, "finding"))
		return true
	}
	fmt.Fprintln(w, redact.PrintableLine(r.OKLine()))
	return false
}

// OKLine is verify's last line for a folder with no finding: how many
// files match the manifest, the tests re-judged against which baseline,
// the run's verdict (and, for a run not signed off, why), the reports
// re-derived, the digest and signer checked, and whether the raw outputs
// are gpuaccept's own recordings. Only for a Result with no Findings:
// its Manifest and Run are set.
func (r *Result) OKLine() string {
	// manifest.Check counts a manifest without a baseline file as a
	// finding, so r.Manifest.Baseline is set from here on.
	subs := ""
	if r.SubRuns > 0 {
		subs = fmt.Sprintf(", as do the %s of %s", result.Count(r.SubRuns, "run"), result.Count(r.Localisations, "localisation"))
	}
	whose := ""
	if r.Baseline != "" {
		whose = " (" + r.Baseline + " " + r.Run.SKU + " baseline)"
	}
	replayed := ""
	if r.Replay {
		replayed = "; its raw outputs are the recordings gpuaccept ships: no sign-off of hardware"
	}
	return fmt.Sprintf("verify: OK: %s %s the manifest; %s re-judged against %s%s %s the recorded verdicts%s (run %s)%s%s%s",
		result.Count(len(r.Manifest.Files), "file"), result.Noun(len(r.Manifest.Files), "matches", "match"), result.Count(len(r.Run.Tests), "test"), r.Manifest.Baseline.Path, whose, result.Noun(len(r.Run.Tests), "gives", "give"), subs, runVerdict(r.Run), rederived(r), sealed(r), replayed)
}

// runVerdict is the run's status as verify's OK line gives it: "pass" or
// "warn" alone, and for a run that is not signed off the status, then its
// verdict word and why ("skip: NOT SIGNED OFF: measured, not judged:
// ...", "fail: FAIL: failed: hbm.bandwidth"): verify's OK says the folder
// is the sign-off its manifest describes, which a reader must not take
// for a signed-off run.
func runVerdict(run *result.Run) string {
	names := func(st result.Status) string {
		var out []string
		for _, t := range run.Tests {
			if t.Status == st {
				out = append(out, t.Name)
			}
		}
		if len(out) > 5 {
			out = append(out[:5], fmt.Sprintf("and %d more", len(out)-5))
		}
		return strings.Join(out, ", ")
	}
	why := ""
	switch run.Status {
	case result.Pass, result.Warn:
		return string(run.Status)
	case result.Skip:
		why = run.NotJudgedText()
		if why == "" {
			why = "nothing was judged"
		}
	case result.Fail:
		switch n := names(result.Fail); {
		case n != "":
			why = "failed: " + n
		case len(run.BadNodes) > 0:
			var hosts []string
			for _, b := range run.BadNodes {
				if !slices.Contains(hosts, b.Host) {
					hosts = append(hosts, b.Host)
				}
			}
			why = "failed health: " + strings.Join(hosts, ", ")
		default:
			var sus []string
			for _, l := range run.Localisations {
				for _, x := range l.Suspects {
					sus = append(sus, x.Name()+" ("+l.Test+")")
				}
			}
			why = "suspects named: " + strings.Join(sus, ", ")
		}
	case result.Error:
		why = "errored: " + names(result.Error)
	}
	return fmt.Sprintf("%s: %s: %s", run.Status, report.Verdict(run), why)
}

// rederived says which reports of the folder were found as they derive
// from its evidence.
func rederived(res *Result) string {
	var parts []string
	for _, n := range res.Rederived {
		if n == layout.Results {
			parts = append(parts, n+" re-derived value by value")
		}
	}
	if n := len(res.Rerendered); n > 0 {
		list := strings.Join(res.Rerendered, ", ")
		if n > 1 {
			list = strings.Join(res.Rerendered[:n-1], ", ") + " and " + res.Rerendered[n-1]
		}
		parts = append(parts, list+" re-rendered byte for byte")
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

// sealed says what sealed the folder: the digest checked, the signer.
func sealed(res *Result) string {
	var parts []string
	if res.Digest {
		parts = append(parts, "sign-off digest checked")
	}
	if res.Signer != nil {
		parts = append(parts, "signed by "+res.Signer.Identity)
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}
