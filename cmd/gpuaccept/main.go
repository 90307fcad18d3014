// Command gpuaccept signs off GPU clusters: it runs a SKU's acceptance suite
// (nccl-tests, ...) through a launcher, judges every number against the
// SKU's golden baseline, and writes a table, JSON and JUnit XML.
//
// This file only parses flags and wires packages together; the logic lives
// in framework/, plugins/ and launchers/.
package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/argmask"
	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/report"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/signoff"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	buildinfo "github.com/gpuaccept/gpuaccept/framework/version"
	_ "github.com/gpuaccept/gpuaccept/launchers/k8s"
	_ "github.com/gpuaccept/gpuaccept/launchers/local"
	_ "github.com/gpuaccept/gpuaccept/launchers/replay"
	_ "github.com/gpuaccept/gpuaccept/launchers/slurm"
	_ "github.com/gpuaccept/gpuaccept/launchers/ssh"
	// The built-in plugins register themselves (pluginapi.Register), as
	// the launchers do (launch.Register).
	_ "github.com/gpuaccept/gpuaccept/plugins/gemm"
	_ "github.com/gpuaccept/gpuaccept/plugins/hbm"
	_ "github.com/gpuaccept/gpuaccept/plugins/health"
	_ "github.com/gpuaccept/gpuaccept/plugins/hostlink"
	_ "github.com/gpuaccept/gpuaccept/plugins/ibperf"
	_ "github.com/gpuaccept/gpuaccept/plugins/mori"
	_ "github.com/gpuaccept/gpuaccept/plugins/nccl"
	_ "github.com/gpuaccept/gpuaccept/plugins/rccl"
	_ "github.com/gpuaccept/gpuaccept/plugins/train"
	_ "github.com/gpuaccept/gpuaccept/plugins/workload"
)

// version is set at build time with -ldflags "-X main.version=..."; else
// the module version or VCS revision is used.
var version = ""

// exit codes of the CLI contract (README.md, "Exit codes").
const (
	exitOK            = result.ExitPass
	exitFail          = result.ExitFail
	exitUsage         = result.ExitUsage
	exitError         = result.ExitError
	exitNothingJudged = result.ExitNothingJudged
	exitInterrupted   = result.ExitInterrupted
)

// usageError is a bad command line or configuration: exit 2 with a hint.
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command of args with what it prints, on stdout and stderr
// alike (tables, JSON, dry runs, progress, errors), masked: see
// printedThrough.
func run(args []string, stdout, stderr io.Writer) int {
	so, se := printedThrough(args, stdout, stderr)
	defer se.Close()
	defer so.Close()
	return runMasked(args, so, se)
}

// printedThrough returns stdout and stderr behind the masking of
// framework/redact set up from args (argmask.Masking), with every control
// and format character escaped (redact.Printed): a file name, host name or
// benchmark output holding an ESC, a CR or a U+202E shows as \x1b, \r,
// \u202e.
func printedThrough(args []string, stdout, stderr io.Writer) (*redact.Writer, *redact.Writer) {
	red := argmask.Masking(args, os.Environ())
	return red.Printed(stdout), red.Printed(stderr)
}

func runMasked(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		// Nothing asked: what can be asked, and exit 2 so that a script
		// whose arguments went missing does not pass.
		fmt.Fprint(stderr, topUsage())
		return exitUsage
	case args[0] == "--version" || args[0] == "-version":
		args = []string{"version"}
	}
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var code int
	var err error
	if c, ok := lookup(cmd); ok {
		code, err = c.run(args, stdout, stderr)
	} else {
		err = usageError{fmt.Errorf("unknown command %q (commands: %s)", cmd, commandNames())}
	}
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		// An error may quote a file name from a folder someone handed
		// over: its escape sequences must not reach the terminal.
		fmt.Fprintln(stderr, "gpuaccept:", redact.Printable(err.Error()))
		var ue usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		if code == exitOK {
			code = exitUsage
		}
	}
	return code
}

// getVersion is this binary's version (framework/version.Of).
func getVersion() string { return buildinfo.Of(version) }

func newFlags(name, usage string, stderr io.Writer) *pflag.FlagSet {
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

// common flags shared by run, check and demo.
type common struct {
	sku, out, junit, format, pluginPath, html string
	// cats is the SKU catalog (--baselines: cats.Dir), loaded once.
	cats acceptance.CatalogLoader
	// outDeleted says the results folder is removed when the command ends
	// (the demo without --out), so no message may send the user to it.
	outDeleted bool
	// ctx is the command's signal context (signalContext); finish turns
	// an interrupted run's exit code into exitInterrupted.
	ctx context.Context
	// signKey is --sign-key, loaded into key before anything runs.
	signKey string
	key     *manifest.Key
	// recorded is the results folder the run recorded, for a folder read
	// back (gpuaccept report); "" for the run's own.
	recorded string
}

// addSign adds --sign-key, of the commands that sign a results folder off.
func (c *common) addSign(fs *pflag.FlagSet) {
	fs.StringVar(&c.signKey, "sign-key", "", "ssh private key (ed25519, RSA, ECDSA) that signs manifest.json at sign-off into manifest.json.sig (SSHSIG, namespace gpuaccept: ssh-keygen -Y verify checks it); an encrypted key takes its passphrase from env "+manifest.PassphraseEnv)
}

// loadKey loads --sign-key, so that a key that cannot sign stops the
// command before it runs anything.
func (c *common) loadKey() error {
	if c.signKey == "" {
		return nil
	}
	k, err := manifest.LoadKeyEnv(c.signKey)
	if err != nil {
		return usageError{err}
	}
	c.key = k
	return nil
}

// commonFlags are the flags of common, in the order add adds them.
var commonFlags = []string{"sku", "baselines", "out", "junit", "html", "format", "plugin-path"}

// add adds every common flag: those of the commands that run or judge
// tests and report on them (run, localise, check).
func (c *common) add(fs *pflag.FlagSet) { c.addOnly(fs, commonFlags...) }

// addOnly adds the common flags named (of commonFlags), so that a command
// takes only the flags it uses: one it would ignore is an unknown flag.
// An unknown name is a programming error and panics.
func (c *common) addOnly(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		switch n {
		case "sku":
			fs.StringVar(&c.sku, "sku", "", "SKU whose baseline judges the results (gpuaccept list skus); run and health take auto: the SKU whose gpu_variant lists the GPU the nodes show")
		case "baselines":
			fs.StringVar(&c.cats.Dir, "baselines", "", baselinesUsage)
		case "out":
			fs.StringVar(&c.out, "out", "", "results folder (default gpuaccept-results/SKU-SUITE-TIME for runs; none for check)")
		case "junit":
			fs.StringVar(&c.junit, "junit", "", "also write JUnit XML to this file")
		case "html":
			fs.StringVar(&c.html, "html", "", "also write the HTML report (plots against the baseline bands) to this file")
		case "format":
			fs.StringVar(&c.format, "format", "table", "report on stdout: table, json or markdown")
		case "plugin-path":
			fs.StringVar(&c.pluginPath, "plugin-path", os.Getenv("GPUACCEPT_PLUGIN_PATH"), "folders (colon-separated) searched for external gpuaccept-plugin-NAME executables (env GPUACCEPT_PLUGIN_PATH)")
		default:
			panic("addOnly: no common flag " + n)
		}
	}
}

// baselinesUsage is --baselines' help.
const baselinesUsage = "folder of the site's SKU files (SKU.yaml), used beside the built-in ones; a file named after a built-in SKU takes its place"

// catalog loads the SKU files once (acceptance.CatalogLoader); each
// built-in SKU a site's file replaces is said on stderr, once.
func (c *common) catalog(stderr io.Writer) (*sku.Catalog, error) { return c.cats.Load(stderr) }

// host is the command's plugin host (pluginapi.NewHost).
func (c *common) host() *pluginapi.Host { return pluginapi.NewHost(c.pluginPath) }

// finish writes the reports of a finished run (s judged it; nil when
// unknown) and signs its results folder off (signoff.Finish), with the
// command's --junit, --html, --format and --sign-key.
func (c *common) finish(run *result.Run, s *sku.SKU, stdout, stderr io.Writer) (int, error) {
	// The hardware list is read from the raw outputs by the plugins.
	host := c.host()
	defer host.Close()
	return signoff.Finish(c.ctx, run, s, signoff.FinishOptions{
		Recorded: c.recorded, JUnit: c.junit, HTML: c.html, Format: c.format,
		Key: c.key, OutDeleted: c.outDeleted, Stdout: stdout, Stderr: stderr, Plugins: host,
	})
}

// validFormat checks --format (report.CheckFormat).
func validFormat(f string) error {
	if err := report.CheckFormat(f); err != nil {
		return usageError{err}
	}
	return nil
}

// signalContext is a command's context, cancelled by Ctrl-C or SIGTERM; a
// variable so that a test can interrupt a command in process.
var signalContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func cmdPlugin(args []string) (int, error) {
	if len(args) != 2 || args[0] != "serve" {
		return exitUsage, usageError{errors.New("plugin: want serve NAME (gpuaccept starts this itself)")}
	}
	p, ok := pluginapi.Builtin(args[1])
	if !ok {
		return exitUsage, usageError{fmt.Errorf("no built-in plugin %q", args[1])}
	}
	pluginapi.Serve(p)
	return exitOK, nil
}

// helpFiles are the commands' help texts, one file a command (NAME.txt),
// printed by --help as they are.
//
//go:embed help/*.txt
var helpFiles embed.FS

// help is the help text of the command name (help/NAME.txt); a missing
// file is a programming error and panics at start.
func help(name string) string {
	data, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(err)
	}
	return string(data)
}
