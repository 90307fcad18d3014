// Package cliopts holds the flag groups gpuaccept's commands share, in
// kubectl's shape: each group declares its flags on a command's flag set
// (Add), checks them alone (Validate) and resolves them into what the
// framework takes (Complete, Prepare). cmd/gpuaccept declares each
// command's flag set from these groups, calls the framework and maps the
// exit code; framework/ never imports this package (layers_test.go).
package cliopts

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/history"
	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/report"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/signoff"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// UsageError is a bad command line or configuration: the command exits
// 2 (result.ExitUsage) with a hint.
type UsageError struct{ error }

// Usage wraps err as a UsageError.
func Usage(err error) UsageError { return UsageError{err} }

// Unwrap returns the error wrapped.
func (u UsageError) Unwrap() error { return u.error }

// NewFlags is a command's flag set named name: errors return (not exit),
// flags print in the order declared, and --help prints usage then the
// flags, on stderr.
func NewFlags(name, usage string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// Common are the flags shared by run, check and demo (and some of them
// by list, baseline, report, verify), and what the command sets up from
// them.
type Common struct {
	SKU, Out, JUnit, Format, PluginPath, HTML string
	// Cats is the SKU catalog (--baselines: Cats.Dir), loaded once.
	Cats acceptance.CatalogLoader
	// History is --history: the results store a finished folder is
	// appended to (history.Append); "" the default, history.Off none.
	History string
	// Compare is --compare: acceptance, last or a digest; "" none.
	Compare string
	// OutDeleted says the results folder is removed when the command ends
	// (the demo without --out), so no message may send the user to it.
	OutDeleted bool
	// Ctx is the command's signal context (SignalContext); Finish turns
	// an interrupted run's exit code into result.ExitInterrupted.
	Ctx context.Context
	// SignKey is --sign-key, loaded into Key before anything runs.
	SignKey string
	Key     *manifest.Key
	// Recorded is the results folder the run recorded, for a folder read
	// back (gpuaccept report); "" for the run's own.
	Recorded string
	// Version is this binary's version (framework/version.Of), recorded
	// in a run's results.
	Version string
}

// AddSign adds --sign-key, of the commands that sign a results folder off.
func (c *Common) AddSign(fs *pflag.FlagSet) {
	fs.StringVar(&c.SignKey, "sign-key", "", "ssh private key (ed25519, RSA, ECDSA) that signs manifest.json at sign-off into manifest.json.sig (SSHSIG, namespace gpuaccept: ssh-keygen -Y verify checks it); an encrypted key takes its passphrase from env "+manifest.PassphraseEnv)
}

// LoadKey loads --sign-key, so that a key that cannot sign stops the
// command before it runs anything, and checks --compare, the other flag
// of what the command does once its folder is signed; a key that cannot
// be loaded or a --compare that names nothing is a UsageError.
func (c *Common) LoadKey() error {
	if err := history.CheckAgainst(c.Compare); err != nil {
		return UsageError{fmt.Errorf("--compare: %w", err)}
	}
	if c.SignKey == "" {
		return nil
	}
	k, err := manifest.LoadKeyEnv(c.SignKey)
	if err != nil {
		return UsageError{err}
	}
	c.Key = k
	return nil
}

// CommonFlags are the flags of Common, in the order Add adds them.
var CommonFlags = []string{"sku", "baselines", "out", "junit", "html", "format", "plugin-path", "history", "compare"}

// Add adds every common flag: those of the commands that run or judge
// tests and report on them (run, localise, check).
func (c *Common) Add(fs *pflag.FlagSet) { c.AddOnly(fs, CommonFlags...) }

// AddOnly adds the common flags named (of CommonFlags), so that a command
// takes only the flags it uses: one it would ignore is an unknown flag.
// An unknown name is a programming error and panics.
func (c *Common) AddOnly(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		switch n {
		case "sku":
			fs.StringVar(&c.SKU, "sku", "", "SKU whose baseline judges the results (gpuaccept list skus); run and health take auto: the SKU whose gpu_variant lists the GPU the nodes show")
		case "baselines":
			fs.StringVar(&c.Cats.Dir, "baselines", "", BaselinesUsage)
		case "out":
			fs.StringVar(&c.Out, "out", "", "results folder (default gpuaccept-results/SKU-SUITE-TIME for runs; none for check)")
		case "junit":
			fs.StringVar(&c.JUnit, "junit", "", "also write JUnit XML to this file")
		case "html":
			fs.StringVar(&c.HTML, "html", "", "also write the HTML report (plots against the baseline bands) to this file")
		case "format":
			fs.StringVar(&c.Format, "format", "table", "report on stdout: table, json or markdown")
		case "plugin-path":
			fs.StringVar(&c.PluginPath, "plugin-path", os.Getenv("GPUACCEPT_PLUGIN_PATH"), "folders (colon-separated) searched for external gpuaccept-plugin-NAME executables (env GPUACCEPT_PLUGIN_PATH)")
		case "history":
			AddHistory(fs, &c.History)
		case "compare":
			fs.StringVar(&c.Compare, "compare", "", "after the report, each point against the results store's earlier value of the same GPU, NIC or node: acceptance, last, or a run's digest (sha256:...)")
		default:
			panic("AddOnly: no common flag " + n)
		}
	}
}

// BaselinesUsage is --baselines' help.
const BaselinesUsage = "folder of the site's SKU files (SKU.yaml), used beside the built-in ones; a file named after a built-in SKU takes its place"

// Catalog loads the SKU files once (acceptance.CatalogLoader); each
// built-in SKU a site's file replaces is said on stderr, once.
func (c *Common) Catalog(stderr io.Writer) (*sku.Catalog, error) { return c.Cats.Load(stderr) }

// Host is the command's plugin host (pluginapi.NewHost); the caller
// closes it.
func (c *Common) Host() *pluginapi.Host { return pluginapi.NewHost(c.PluginPath) }

// Finish writes the reports of a finished run (s judged it; nil when
// unknown) and signs its results folder off (signoff.Finish), with the
// command's --junit, --html, --format and --sign-key; it returns the
// exit code.
func (c *Common) Finish(run *result.Run, s *sku.SKU, stdout, stderr io.Writer) (int, error) {
	// The hardware list is read from the raw outputs by the plugins.
	host := c.Host()
	defer host.Close()
	code, err := signoff.Finish(c.Ctx, run, s, signoff.FinishOptions{
		Recorded: c.Recorded, JUnit: c.JUnit, HTML: c.HTML, Format: c.Format,
		Key: c.Key, OutDeleted: c.OutDeleted, Stdout: stdout, Stderr: stderr, Plugins: host,
	})
	// Every signed folder goes to the results store, keyed by the
	// hardware its raw outputs show; a replay of recordings measured no
	// hardware here, and a store that fails loses the run nothing.
	ctx := c.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if err == nil && run.Dir != "" && !c.OutDeleted && run.Launcher != result.ReplayLauncher {
		if herr := history.Append(ctx, c.History, run.Dir); herr != nil {
			fmt.Fprintln(stderr, redact.PrintableLine(redact.String("warning: "+herr.Error())))
		}
	}
	if err == nil && run.Dir != "" && !c.OutDeleted && c.Compare != "" {
		// A JSON report on stdout stays one JSON document.
		w := stdout
		if c.Format == "json" {
			w = stderr
		}
		c.compare(ctx, run.Dir, w, stderr)
	}
	return code, err
}

// ValidFormat checks --format (report.CheckFormat); a bad one is a
// UsageError.
func ValidFormat(f string) error {
	if err := report.CheckFormat(f); err != nil {
		return UsageError{err}
	}
	return nil
}

// SignalContext is a command's context, cancelled by Ctrl-C or SIGTERM; a
// variable so that a test can interrupt a command in process.
var SignalContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// GivenEmpty are the flags among names given on the command line with an
// empty value ("--digest ”"), which a command refuses rather than reads
// as not given.
func GivenEmpty(fs *pflag.FlagSet, names ...string) []string {
	var empty []string
	for _, f := range names {
		if fs.Changed(f) && fs.Lookup(f).Value.String() == "" {
			empty = append(empty, f)
		}
	}
	return empty
}

// compare prints --compare's lines for the signed folder dir; a store
// that cannot answer is a warning, as for the append.
func (c *Common) compare(ctx context.Context, dir string, stdout, stderr io.Writer) {
	lines, err := history.CompareFolder(ctx, c.History, dir, c.Compare)
	if err != nil {
		fmt.Fprintln(stderr, redact.PrintableLine(redact.String("warning: --compare: "+err.Error())))
		return
	}
	fmt.Fprintf(stdout, "compared with the results store (--compare %s): %s\n", redact.PrintableLine(c.Compare), result.Count(len(lines), "point"))
	for _, l := range lines {
		fmt.Fprintln(stdout, "  "+redact.PrintableLine(redact.String(l)))
	}
}
