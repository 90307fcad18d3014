package main

import (
	"fmt"
	"io"
	"strings"
)

// command is one gpuaccept command: the one table that dispatch, the
// usage text and the unknown-command message are made from.
type command struct {
	// name is what the user types; aliases are other spellings.
	name    string
	aliases []string
	// usage is its line(s) in the top usage, after "gpuaccept "; what is
	// its one-line summary, aligned beside (or under, when usage is long).
	usage, what string
	// hidden commands are not listed (gpuaccept starts them itself).
	hidden bool
	run    func(args []string, stdout, stderr io.Writer) (int, error)
}

// commands are gpuaccept's commands, in the order usage lists them. It is
// filled in init: the help command prints the usage made from it.
var commands []command

func init() {
	commands = []command{
		{name: "run", usage: "[run] --sku SKU --suite SUITE [flags]", what: "run a suite and judge it", run: cmdRun},
		{name: "localise", aliases: []string{"localize"}, usage: "localise --sku SKU --suite SUITE --hosts H1,H2,...",
			what: "find the node, HCA or link that slows a multi-node test", run: cmdLocalise},
		{name: "health", usage: "health --sku SKU [--suite SUITE] [--slurm-check]", what: "run only the preflight health checks (Slurm, Kubernetes modes)", run: cmdHealth},
		{name: "check", usage: "check --sku SKU --test TEST --nodes N --gpus-per-node G LOGFILE...", what: "judge existing logs offline", run: cmdCheck},
		{name: "list", usage: "list [skus|suites|tests|plugins|launchers] [--format table|json]", run: cmdList},
		{name: "baseline", usage: "baseline validate [FILE...] | show SKU [--yaml] | record --sku SKU RUN... | diff OLD NEW", run: cmdBaseline},
		{name: "demo", usage: "demo", what: "the whole pipeline on embedded real recordings", run: cmdDemo},
		{name: "report", usage: "report RESULTS_DIR", what: "rebuild every report of a results folder", run: cmdReport},
		{name: "verify", usage: "verify RESULTS_DIR [--digest D] [--allowed-signers F --identity ID]",
			what: "check a sign-off: every file, verdicts re-judged, reports re-derived", run: cmdVerify},
		{name: "history", usage: "history [import DIR... | drift] [--by node|gpu|nic|test] [--all] [--format F]",
			what: "every result by GPU serial, NIC and node; drift since acceptance", run: cmdHistory},
		{name: "clean", usage: "clean --run ID | --local", what: "delete what a Kubernetes run, or killed local runs, left behind", run: cmdClean},
		{name: "version", usage: "version", run: func(_ []string, stdout, _ io.Writer) (int, error) {
			fmt.Fprintln(stdout, "gpuaccept", getVersion())
			return exitOK, nil
		}},
		{name: "help", usage: "help", hidden: true, run: func(_ []string, stdout, _ io.Writer) (int, error) {
			fmt.Fprint(stdout, topUsage())
			return exitOK, nil
		}},
		{name: "plugin", usage: "plugin serve NAME", hidden: true, run: func(args []string, _, _ io.Writer) (int, error) { return cmdPlugin(args) }},
	}
}

// lookup finds the command named name (or one of its aliases).
func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
		for _, a := range c.aliases {
			if a == name {
				return c, true
			}
		}
	}
	return command{}, false
}

// commandNames lists the commands usage shows, for the unknown-command
// message.
func commandNames() string {
	var names []string
	for _, c := range commands {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	return strings.Join(names, ", ")
}

// usageColumn is where the summaries of the top usage start.
const usageColumn = 52

// topUsage is gpuaccept's usage, made from commands.
func topUsage() string {
	var b strings.Builder
	b.WriteString("gpuaccept signs off GPU clusters against golden baselines.\n\nUsage:\n")
	for _, c := range commands {
		if c.hidden {
			continue
		}
		line := "  gpuaccept " + c.usage
		switch {
		case c.what == "":
			b.WriteString(line + "\n")
		case len(line) < usageColumn-1:
			fmt.Fprintf(&b, "%-*s%s\n", usageColumn, line, c.what)
		default:
			fmt.Fprintf(&b, "%s\n%*s%s\n", line, usageColumn, "", c.what)
		}
	}
	b.WriteString(`
Run "gpuaccept COMMAND --help" for a command's flags.
Exit codes: 0 passed (warnings included), 1 a test failed (whatever else happened),
2 usage or configuration error, 3 a test errored and none failed, 4 not signed off:
nothing judged (every test skipped), or a benchmark measured with no baseline entry
at the scope, 130 interrupted (Ctrl-C, SIGTERM) before anything failed.
`)
	return b.String()
}
