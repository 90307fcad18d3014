package signoff

// This file: verify of a burn-in folder (gpuaccept run --duration /
// --cycles): the folder's seal, every cycle verified as the run it is,
// and the burn-in's record and reports re-derived from the cycles.

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/burnin"
	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
)

// VerifyBurnIn verifies the burn-in folder dir with o (the digest and
// signature are the burn-in folder's own), writes its account to w and
// returns whether it failed: a cycle that does not verify, a file the
// manifest does not match, a record or report its cycles do not give.
func VerifyBurnIn(ctx context.Context, dir string, o Options, w io.Writer) (failed bool, err error) {
	m, err := manifest.Read(dir)
	if err != nil {
		return false, err
	}
	sum, err := manifest.Sum(dir)
	if err != nil {
		return false, err
	}
	r := &Result{Manifest: m, Sum: sum}
	r.add("", "burn-in %s: manifest sha256 %s, made by gpuaccept %s, SKU %s, %d files", dir, sum, quoteVersion(m.Version), m.SKU, len(m.Files))
	r.checkSeal(dir, o)
	problems, rec, err := burnin.Verify(ctx, dir, func(d string) (*result.Run, error) {
		run, _, err := resultsdir.Load(d)
		return run, err
	}, func(ctx context.Context, d string) []string {
		res, err := Verify(ctx, d, o.forCycle())
		if err != nil {
			return []string{err.Error()}
		}
		// A cycle cut short keeps its tests that were never started or
		// finished with no raw output: what verify says of those, and
		// only of those, is no finding of the burn-in; every other line
		// (its files, the tests that did run) stands.
		cut := res.Run != nil && burnin.Interrupted(res.Run)
		var out []string
		for _, l := range res.Lines {
			if cut && cutLine(l.Text) {
				continue
			}
			if l.Kind == Mismatch || l.Kind == Rejudged {
				out = append(out, l.String())
			}
		}
		for _, p := range ClearSecrets(d) {
			out = append(out, "MISMATCH "+p)
		}
		return out
	})
	if err != nil {
		return false, err
	}
	for _, p := range problems {
		r.add(Mismatch, "%s", p)
	}
	r.WriteLines(w)
	if r.Findings > 0 {
		fmt.Fprintf(w, "verify: FAILED: %s; this burn-in folder is not the sign-off its manifest describes\n", result.Count(r.Findings, "finding"))
		return true, nil
	}
	fmt.Fprintln(w, redact.PrintableLine(fmt.Sprintf("verify: OK: every file matches the manifest, each of the %s verifies as a run, and %s and its reports are what the cycles give: %s",
		result.Count(rec.Ran, "cycle"), burnin.File, burnin.Verdict(rec))))
	return false, nil
}

// forCycle is o for one cycle of a burn-in: the digest and signature
// given are the burn-in folder's, not the cycle's.
func (o Options) forCycle() Options {
	o.Digest, o.AllowedSigners, o.Identity = "", "", ""
	return o
}

// cutLine says a line of verify's account is about a test a cycle cut
// short never finished (result.CutMessage): one with no raw output, or
// verify's own word for the raw outputs of one.
func cutLine(text string) bool {
	_, quoted, ok := strings.Cut(text, "recorded an error with no raw output (")
	return ok && result.CutMessage(quoted) || strings.Contains(text, "the raw outputs of a test that did not finish")
}
