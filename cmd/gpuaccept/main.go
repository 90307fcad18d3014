// Command gpuaccept signs off GPU clusters: it runs a SKU's acceptance suite
// (nccl-tests, ...) through a launcher, judges every number against the
// SKU's golden baseline, and writes a table, JSON and JUnit XML.
//
// This file only parses flags and wires packages together; the flag groups
// the commands share live in internal/cliopts, the logic in framework/,
// plugins/ and launchers/.
package main

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/argmask"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	buildinfo "github.com/gpuaccept/gpuaccept/framework/version"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
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
	_ "github.com/gpuaccept/gpuaccept/plugins/telemetry"
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
		err = cliopts.Usage(fmt.Errorf("unknown command %q (commands: %s)", cmd, commandNames()))
	}
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		// An error may quote a file name from a folder someone handed
		// over: its escape sequences must not reach the terminal.
		fmt.Fprintln(stderr, "gpuaccept:", redact.Printable(err.Error()))
		var ue cliopts.UsageError
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

func cmdPlugin(args []string) (int, error) {
	if len(args) != 2 || args[0] != "serve" {
		return exitUsage, cliopts.Usage(errors.New("plugin: want serve NAME (gpuaccept starts this itself)"))
	}
	p, ok := pluginapi.Builtin(args[1])
	if !ok {
		return exitUsage, cliopts.Usage(fmt.Errorf("no built-in plugin %q", args[1]))
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
