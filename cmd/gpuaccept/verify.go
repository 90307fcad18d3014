package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gpuaccept/gpuaccept"
	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/signoff"
)

const verifyUsage = `Usage: gpuaccept verify RESULTS_DIR [--digest sha256:HEX] [--allowed-signers FILE --identity ID] [flags]

Checks a sign-off without rerunning anything: every file of the folder
against the SHA-256 in manifest.json (an edited, missing or added file, a
link or a pipe is named) and that no file holds a secret in clear; with
--digest, manifest.json against the
sign-off digest printed at sign-off (a manifest made again is caught);
with --allowed-signers and --identity, manifest.json.sig as ssh-keygen -Y
verify -n gpuaccept checks it. Then it parses the raw outputs again and
judges them against the kept baseline copy, comparing every verdict,
message, number, check and host with those recorded; compares results.json
value by value with the run re-derived from the journal; and renders
junit.xml, report.html, summary.md and table.txt again, comparing them
byte for byte: a report that renders otherwise is a finding whatever
version the folder says made it (gpuaccept report DIR renders them
again). Every file the manifest lists must be one of a results folder's
layout (look-alike names are named as such), and results.json, journal
lines and the manifest must give no key twice. The run's status is
recomputed from its tests. The kept baseline copy is
compared with this gpuaccept's built-in SKU file of that name: when it is
a site's own, verify says so and which verdicts and bands the built-in
one would give (a note; a finding with --strict-baseline), and a suite,
skip or test the built-in file would not give is a finding. The runs of a
localisation (results folders under localise/) are checked the same way,
and what the localisation recorded from them (verdicts, figures, slow
runs, node suspects) re-derived from them. What verify cannot recompute
from the raw outputs and the SKU rules is a finding (README.md, "Reports
and sign-off"): no journal, a suite not in the baseline, a parameter that
changes the verdict, an error with no raw output, a raw folder no test
claims, raw outputs that are the recordings gpuaccept ships in a run that
is no replay. Exit 0 when
everything matches, 1 when something does not, 2 when the folder cannot be
read, 130 when interrupted (the exit codes of the verdicts themselves are
gpuaccept report's).
`

func cmdVerify(args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var digest, allowed, identity string
	var strict bool
	fs := newFlags("verify", verifyUsage, stderr)
	fs.StringVar(&digest, "digest", "", "sign-off digest printed at sign-off (sha256:HEX): manifest.json must be that one")
	fs.StringVar(&allowed, "allowed-signers", "", "allowed signers file (ssh-keygen(1), ALLOWED SIGNERS) to check manifest.json.sig against")
	fs.StringVar(&identity, "identity", "", "the signer's identity in --allowed-signers (operator@site)")
	fs.BoolVar(&strict, "strict-baseline", false, "a kept baseline copy that is not this gpuaccept's built-in SKU file is a finding, not a note")
	fs.StringVar(&c.pluginPath, "plugin-path", os.Getenv("GPUACCEPT_PLUGIN_PATH"), "folders (colon-separated) searched for external gpuaccept-plugin-NAME executables (env GPUACCEPT_PLUGIN_PATH)")
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	if fs.NArg() != 1 {
		return exitUsage, usageError{errors.New("verify takes one RESULTS_DIR")}
	}
	o := signoff.Options{Version: getVersion(), AllowedSigners: allowed, Identity: identity, Builtin: baselines.FS, StrictBaseline: strict, Recordings: gpuaccept.Recordings}
	if digest != "" {
		d, err := manifest.ParseDigest(digest)
		if err != nil {
			return exitUsage, usageError{fmt.Errorf("--digest: %w", err)}
		}
		o.Digest = d
	}
	for _, f := range []string{"digest", "allowed-signers", "identity"} {
		// An empty value (--digest "$D" with D unset) would check nothing
		// and still say OK.
		if fs.Changed(f) && fs.Lookup(f).Value.String() == "" {
			return exitUsage, usageError{fmt.Errorf("--%s is empty: give a value or leave the flag out", f)}
		}
	}
	if (allowed == "") != (identity == "") {
		return exitUsage, usageError{errors.New("--allowed-signers and --identity go together: the file of allowed signers, and whose signature it must be")}
	}
	dir := fs.Arg(0)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return exitUsage, usageError{fmt.Errorf("results folder %s: not a folder", dir)}
	}
	host := c.host()
	defer host.Close()
	o.Plugins = host
	ctx, stop := signalContext()
	defer stop()
	res, err := signoff.Verify(ctx, dir, o)
	if err != nil {
		return exitUsage, oneLine{err}
	}
	// Every line printed is one line (redact.PrintableLine): a name with
	// a line feed in it cannot print a "verify: OK" of its own.
	for _, l := range res.Lines {
		fmt.Fprintln(stdout, redact.PrintableLine(l.String()))
	}
	if ctx.Err() != nil {
		// Re-judging stopped half way: its differences say nothing.
		return exitInterrupted, errors.New("verify: interrupted (Ctrl-C or SIGTERM) before every verdict was re-judged")
	}
	findings := res.Findings
	for _, p := range signoff.ClearSecrets(dir) {
		fmt.Fprintf(stdout, "MISMATCH %s\n", redact.PrintableLine(p))
		findings++
	}
	if findings > 0 {
		fmt.Fprintf(stdout, "verify: FAILED: %s; this folder is not the sign-off its manifest describes\n", result.Count(findings, "finding"))
		return exitFail, nil
	}
	ok := res.OKLine()
	fmt.Fprintln(stdout, redact.PrintableLine(ok))
	return exitOK, nil
}

// oneLine is an error of verify printed as one line (redact.PrintableLine):
// what it quotes of the folder (a file name, a journal line) cannot start
// a line of its own.
type oneLine struct{ err error }

func (e oneLine) Error() string { return redact.PrintableLine(e.err.Error()) }
func (e oneLine) Unwrap() error { return e.err }
