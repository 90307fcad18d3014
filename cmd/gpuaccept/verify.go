package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gpuaccept/gpuaccept"
	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/burnin"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/signoff"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
)

var verifyUsage = help("verify")

func cmdVerify(args []string, stdout, stderr io.Writer) (int, error) {
	var c cliopts.Common
	var digest, allowed, identity string
	var strict bool
	fs := cliopts.NewFlags("verify", verifyUsage, stderr)
	fs.StringVar(&digest, "digest", "", "sign-off digest printed at sign-off (sha256:HEX): manifest.json must be that one")
	fs.StringVar(&allowed, "allowed-signers", "", "allowed signers file (ssh-keygen(1), ALLOWED SIGNERS) to check manifest.json.sig against")
	fs.StringVar(&identity, "identity", "", "the signer's identity in --allowed-signers (operator@site)")
	fs.BoolVar(&strict, "strict-baseline", false, "a kept baseline copy that is not this gpuaccept's built-in SKU file is a finding, not a note")
	fs.StringVar(&c.PluginPath, "plugin-path", os.Getenv("GPUACCEPT_PLUGIN_PATH"), "folders (colon-separated) searched for external gpuaccept-plugin-NAME executables (env GPUACCEPT_PLUGIN_PATH)")
	if err := fs.Parse(args); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	if fs.NArg() != 1 {
		return exitUsage, cliopts.Usage(errors.New("verify takes one RESULTS_DIR"))
	}
	o := signoff.Options{Version: getVersion(), Builtin: baselines.FS, StrictBaseline: strict, Recordings: gpuaccept.Recordings}
	if err := o.Signers(digest, allowed, identity, cliopts.GivenEmpty(fs, "digest", "allowed-signers", "identity")); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	dir := fs.Arg(0)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return exitUsage, cliopts.Usage(fmt.Errorf("results folder %s: not a folder", dir))
	}
	host := c.Host()
	defer host.Close()
	o.Plugins = host
	ctx, stop := cliopts.SignalContext()
	defer stop()
	if burnin.IsBurnIn(dir) {
		return cliopts.VerifyBurnIn(ctx, dir, o, stdout)
	}
	res, err := signoff.Verify(ctx, dir, o)
	if err != nil {
		return exitUsage, oneLine{err}
	}
	res.WriteLines(stdout)
	if ctx.Err() != nil {
		// Re-judging stopped half way: its differences say nothing.
		return exitInterrupted, errors.New("verify: interrupted (Ctrl-C or SIGTERM) before every verdict was re-judged")
	}
	if res.WriteVerdict(stdout, dir) {
		return exitFail, nil
	}
	return exitOK, nil
}

// oneLine is an error of verify printed as one line (redact.PrintableLine):
// what it quotes of the folder (a file name, a journal line) cannot start
// a line of its own.
type oneLine struct{ err error }

func (e oneLine) Error() string { return redact.PrintableLine(e.err.Error()) }
func (e oneLine) Unwrap() error { return e.err }
