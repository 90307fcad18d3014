// Command gpuaccept signs off GPU clusters: it runs a SKU's acceptance suite
// (nccl-tests, ...) through a launcher, judges every number against the
// SKU's golden baseline, and writes a table, JSON and JUnit XML.
//
// This file only parses flags and wires packages together; the logic lives
// in framework/, plugins/ and launchers/.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept"
	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/hosts"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/report"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	_ "github.com/gpuaccept/gpuaccept/launchers/local"
	_ "github.com/gpuaccept/gpuaccept/launchers/replay"
	"github.com/gpuaccept/gpuaccept/plugins/nccl"
)

// version is set at build time with -ldflags "-X main.version=..."; else
// the module version or VCS revision is used.
var version = ""

// builtins are the plugins compiled into gpuaccept and served by
// "gpuaccept plugin serve NAME".
var builtins = map[string]pluginapi.Plugin{
	nccl.PluginName: nccl.Plugin{},
}

// exit codes of the CLI contract.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// usageError is a bad command line or configuration: exit 2 with a hint.
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var code int
	var err error
	switch cmd {
	case "run":
		code, err = cmdRun(args, stdout, stderr)
	case "check":
		code, err = cmdCheck(args, stdout, stderr)
	case "list":
		code, err = cmdList(args, stdout, stderr)
	case "baseline":
		code, err = cmdBaseline(args, stdout, stderr)
	case "demo":
		code, err = cmdDemo(args, stdout, stderr)
	case "plugin":
		code, err = cmdPlugin(args)
	case "version":
		fmt.Fprintln(stdout, "gpuaccept", getVersion())
		return exitOK
	case "help":
		fmt.Fprint(stdout, topUsage)
		return exitOK
	default:
		err = usageError{fmt.Errorf("unknown command %q (commands: run, check, list, baseline, demo, version)", cmd)}
	}
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintln(stderr, "gpuaccept:", err)
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

const topUsage = `gpuaccept signs off GPU clusters against golden baselines.

Usage:
  gpuaccept [run] --sku SKU --suite SUITE [flags]   run a suite and judge it
  gpuaccept check --sku SKU --test TEST --nodes N --gpus-per-node G LOGFILE...
                                                    judge existing logs offline
  gpuaccept list [skus|suites|tests|plugins|launchers]
  gpuaccept baseline validate [FILE...] | show SKU
  gpuaccept demo                                    the whole pipeline on embedded real recordings
  gpuaccept version

Run "gpuaccept COMMAND --help" for a command's flags.
Exit codes: 0 nothing failed, 1 a test failed, 2 usage, configuration or infrastructure error.
`

func getVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}

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
	sku, baselinesDir, out, junit, format, pluginPath string
}

func (c *common) add(fs *pflag.FlagSet) {
	fs.StringVar(&c.sku, "sku", "", "SKU whose baseline judges the results (gpuaccept list skus)")
	fs.StringVar(&c.baselinesDir, "baselines", "", "folder of SKU files to use instead of the built-in ones")
	fs.StringVar(&c.out, "out", "", "results folder (default gpuaccept-results/SKU-SUITE-TIME for runs; none for check)")
	fs.StringVar(&c.junit, "junit", "", "also write JUnit XML to this file")
	fs.StringVar(&c.format, "format", "table", "report on stdout: table, json or markdown")
	fs.StringVar(&c.pluginPath, "plugin-path", os.Getenv("GPUACCEPT_PLUGIN_PATH"), "folders (colon-separated) searched for external gpuaccept-plugin-NAME executables (env GPUACCEPT_PLUGIN_PATH)")
}

func (c *common) catalog() (*sku.Catalog, error) {
	var fsys iofs.FS = baselines.FS
	dir := "baselines"
	if c.baselinesDir != "" {
		fsys, dir = os.DirFS(c.baselinesDir), c.baselinesDir
	}
	cat, err := sku.Load(fsys, dir)
	if err != nil {
		return nil, usageError{err}
	}
	return cat, nil
}

// getSKU loads the catalog and returns the --sku one.
func (c *common) getSKU() (*sku.SKU, error) {
	cat, err := c.catalog()
	if err != nil {
		return nil, err
	}
	s, err := cat.Get(c.sku)
	if err != nil {
		return nil, usageError{err}
	}
	return s, nil
}

func (c *common) host() *pluginapi.Host {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	sort.Strings(names)
	var path []string
	for _, p := range filepath.SplitList(c.pluginPath) {
		if p != "" {
			path = append(path, p)
		}
	}
	return &pluginapi.Host{Builtin: names, Path: path}
}

// finish writes the reports of a finished run and returns its exit code.
func (c *common) finish(run *result.Run, stdout io.Writer) (int, error) {
	if err := report.WriteFolder(run); err != nil {
		return exitUsage, err
	}
	if c.junit != "" {
		if err := report.WriteJUnit(c.junit, run); err != nil {
			return exitUsage, err
		}
	}
	if err := report.Write(stdout, c.format, run); err != nil {
		return exitUsage, err
	}
	if run.Status == result.Skip && len(run.Tests) > 0 {
		return run.ExitCode(), fmt.Errorf("nothing was judged: every test skipped (%s); check --sku, --nodes and --gpus-per-node against gpuaccept baseline show %s", run.Tests[0].Message, run.SKU)
	}
	return run.ExitCode(), nil
}

func validFormat(f string) error {
	for _, k := range report.Formats {
		if f == k {
			return nil
		}
	}
	return usageError{fmt.Errorf("unknown --format %q (known: %s)", f, strings.Join(report.Formats, ", "))}
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

const runUsage = `Usage: gpuaccept [run] --sku SKU --suite SUITE [flags]

Runs the SKU's suite through a launcher, judges every number against the
SKU's baseline, prints a table and writes a results folder (raw outputs,
results.json, junit.xml, table.txt).
`

func cmdRun(args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var suite, launcherName, hostsFlag, hostfile, replayDir string
	var nodes, gpus int
	var dryRun bool
	var timeout time.Duration
	var params, tests, mpiArgs []string
	// gpuaccept --help lands here: show the commands too.
	fs := newFlags("run", topUsage+"\n"+runUsage, stderr)
	c.add(fs)
	fs.StringVar(&suite, "suite", "", "suite to run (gpuaccept list suites)")
	fs.StringVar(&launcherName, "launcher", "local", "where the steps run: "+strings.Join(launch.Names(), ", "))
	fs.IntVar(&nodes, "nodes", 0, "number of nodes (default: the suite's)")
	fs.IntVar(&gpus, "gpus-per-node", 0, "GPUs per node (default: the SKU's)")
	fs.StringVar(&hostsFlag, "hosts", "", "comma-separated node names (host or host:slots)")
	fs.StringVar(&hostfile, "hostfile", "", "file with one node per line (Open MPI or MPICH form)")
	fs.StringArrayVar(&params, "param", nil, "KEY=VALUE test parameter for every test, overriding the suite's (repeatable; gpuaccept list tests shows them)")
	fs.StringArrayVar(&tests, "test", nil, "run only this test of the suite (repeatable)")
	fs.StringVar(&replayDir, "replay-dir", "", "recordings (or an old results folder) for --launcher replay")
	fs.StringArrayVar(&mpiArgs, "mpi-arg", nil, "extra argument for mpirun (repeatable), e.g. --mpi-arg=--mca --mpi-arg=btl_tcp_if_include --mpi-arg=lo")
	fs.BoolVar(&dryRun, "dry-run", false, "print the exact commands without running them")
	fs.DurationVar(&timeout, "timeout", 30*time.Minute, "time limit per test; on expiry everything the test started is stopped")
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	if fs.NArg() > 0 {
		return exitUsage, usageError{fmt.Errorf("unexpected arguments %q (run takes flags only)", fs.Args())}
	}
	if err := validFormat(c.format); err != nil {
		return exitUsage, err
	}
	if c.sku == "" || suite == "" {
		return exitUsage, usageError{errors.New("--sku and --suite are required (gpuaccept list suites)")}
	}
	s, err := c.getSKU()
	if err != nil {
		return exitUsage, err
	}
	su, ok := s.Suites[suite]
	if !ok {
		return exitUsage, usageError{fmt.Errorf("SKU %s has no suite %q (known: %s)", s.Name, suite, strings.Join(s.SuiteNames(), ", "))}
	}
	pm, err := parseParams(params)
	if err != nil {
		return exitUsage, err
	}
	hosts, err := readHosts(hostsFlag, hostfile)
	if err != nil {
		return exitUsage, err
	}
	topo := plan.Topology{Nodes: nodes, GPUsPerNode: gpus, Hosts: hosts}
	if topo.Nodes == 0 {
		topo.Nodes = su.Nodes
		if len(hosts) > 0 {
			topo.Nodes = len(hosts)
		}
	}
	if topo.Nodes == 0 {
		topo.Nodes = 1
	}
	if topo.GPUsPerNode == 0 {
		topo.GPUsPerNode = s.GPUsPerNode
	}
	if topo.Nodes < 1 || topo.GPUsPerNode < 1 {
		return exitUsage, usageError{fmt.Errorf("--nodes %d / --gpus-per-node %d: both must be >= 1", topo.Nodes, topo.GPUsPerNode)}
	}
	l, err := launch.New(launcherName, launch.Options{ReplayDir: replayDir, Hosts: hosts, MPIArgs: mpiArgs})
	if err != nil {
		return exitUsage, usageError{err}
	}
	host := c.host()
	defer host.Close()
	ctx, stop := signalContext()
	defer stop()
	if err := runner.ValidateSKU(ctx, host, s); err != nil {
		return exitUsage, usageError{err}
	}
	if !dryRun {
		if c.out, err = resultsDir(c.out, fmt.Sprintf("%s-%s-%s", s.Name, suite, time.Now().UTC().Format("20060102-150405"))); err != nil {
			return exitUsage, err
		}
	}
	r := &runner.Runner{Plugins: host, Launcher: l, SKU: s, Dir: c.out, Timeout: timeout, Params: pm, Only: tests,
		DryRun: dryRun, Progress: stderr, Version: getVersion()}
	if dryRun {
		r.Progress = stdout
	}
	res, err := r.Run(ctx, suite, topo)
	if err != nil {
		return exitUsage, usageError{err}
	}
	if dryRun {
		if res.Status == result.Error {
			return exitUsage, errors.New("dry run: some tests could not be planned (see above)")
		}
		// Say before anything runs when the baseline could not judge it.
		scope := sku.Scope{Nodes: topo.Nodes, GPUsPerNode: topo.GPUsPerNode}
		judged := 0
		for _, t := range res.Tests {
			if len(s.Entries(t.Name, scope)) > 0 {
				judged++
			} else if t.Message == "dry run" {
				fmt.Fprintf(stdout, "note: %s has no baseline at scope %s in SKU %s: it would not be judged\n", t.Name, scope, s.Name)
			}
		}
		if judged == 0 {
			return exitUsage, fmt.Errorf("dry run: nothing would be judged at scope %s (gpuaccept baseline show %s)", scope, s.Name)
		}
		return exitOK, nil
	}
	code, err := c.finish(res, stdout)
	fmt.Fprintf(stderr, "results: %s\n", c.out)
	return code, err
}

// resultsDir picks the results folder: out when given, which must not hold
// files already (a folder mixing two runs would replay and verify as one);
// else gpuaccept-results/NAME, with -2, -3, ... when two runs start in the
// same second.
func resultsDir(out, name string) (string, error) {
	if out != "" {
		if ents, err := os.ReadDir(out); err == nil && len(ents) > 0 {
			return "", usageError{fmt.Errorf("results folder %s already holds files; give a new or empty --out", out)}
		}
		return out, nil
	}
	base := filepath.Join("gpuaccept-results", name)
	dir := base
	for i := 2; ; i++ {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			return dir, nil
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}

func parseParams(kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError{fmt.Errorf("--param %q: want KEY=VALUE", kv)}
		}
		m[k] = v
	}
	return m, nil
}

// readHosts reads --hosts and --hostfile into node names. The slot counts
// people write (host:8, host slots=8) are accepted; GPUs per node come from
// --gpus-per-node.
func readHosts(list, file string) ([]string, error) {
	var hs []hosts.Host
	if list != "" {
		l, err := hosts.ParseList(list)
		if err != nil {
			return nil, usageError{err}
		}
		hs = append(hs, l...)
	}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, usageError{fmt.Errorf("read --hostfile: %w", err)}
		}
		l, err := hosts.ParseFile(data, file)
		if err != nil {
			return nil, usageError{err}
		}
		hs = append(hs, l...)
	}
	return hosts.Names(hs), nil
}

const checkUsage = `Usage: gpuaccept check --sku SKU --test TEST --nodes N --gpus-per-node G [flags] LOGFILE...

Judges existing output (nccl-tests text, or its -J JSON) against the SKU's
baseline without running anything. A JSON file joins the text log with the
same name stem (run.log + run.json); other files are judged one by one.
`

func cmdCheck(args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var test string
	var nodes, gpus int
	fs := newFlags("check", checkUsage, stderr)
	c.add(fs)
	fs.StringVar(&test, "test", "", "test the logs are output of, e.g. nccl.all_reduce (gpuaccept list tests)")
	fs.IntVar(&nodes, "nodes", 0, "number of nodes the logs ran on (required)")
	fs.IntVar(&gpus, "gpus-per-node", 0, "GPUs per node the logs ran on (required)")
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	if err := validFormat(c.format); err != nil {
		return exitUsage, err
	}
	if c.sku == "" || test == "" {
		return exitUsage, usageError{errors.New("--sku and --test are required")}
	}
	if fs.NArg() == 0 {
		return exitUsage, usageError{errors.New("no LOGFILE given")}
	}
	s, err := c.getSKU()
	if err != nil {
		return exitUsage, err
	}
	if nodes < 1 || gpus < 1 {
		// Guessing the scope would judge against the wrong baseline and
		// fail the rank count; the logs' scope must be said.
		return exitUsage, usageError{fmt.Errorf("check needs --nodes and --gpus-per-node, both >= 1: the scope the logs ran at picks the baseline and the expected rank count")}
	}
	host := c.host()
	defer host.Close()
	ctx, stop := signalContext()
	defer stop()
	if err := knownTest(ctx, host, test); err != nil {
		return exitUsage, usageError{err}
	}
	if err := runner.ValidateSKU(ctx, host, s); err != nil {
		return exitUsage, usageError{err}
	}
	res, err := runner.Check(ctx, host, s, test, plan.Topology{Nodes: nodes, GPUsPerNode: gpus}, fs.Args(), getVersion())
	if err != nil {
		return exitUsage, usageError{err}
	}
	if c.out != "" {
		if res.Dir, err = resultsDir(c.out, ""); err != nil {
			return exitUsage, err
		}
	}
	return c.finish(res, stdout)
}

// knownTest checks that a plugin offers the named test.
func knownTest(ctx context.Context, host *pluginapi.Host, name string) error {
	p, t, err := runner.SplitName(name)
	if err != nil {
		return err
	}
	d, err := host.Describe(ctx, p)
	if err != nil {
		return err
	}
	var names []string
	for _, ti := range d.Tests {
		if ti.Name == t {
			return nil
		}
		names = append(names, p+"."+ti.Name)
	}
	return fmt.Errorf("plugin %s has no test %q (known: %s)", p, t, strings.Join(names, ", "))
}

func cmdList(args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	fs := newFlags("list", "Usage: gpuaccept list [skus|suites|tests|plugins|launchers]\n", stderr)
	c.add(fs)
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	what := "skus"
	if fs.NArg() > 0 {
		what = fs.Arg(0)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	defer w.Flush()
	switch what {
	case "skus", "suites":
		cat, err := c.catalog()
		if err != nil {
			return exitUsage, err
		}
		for _, n := range cat.Names() {
			s := cat.SKUs[n]
			if what == "skus" {
				fmt.Fprintf(w, "%s\t%s\tsuites: %s\n", n, s.Description, strings.Join(s.SuiteNames(), ", "))
				continue
			}
			for _, sn := range s.SuiteNames() {
				su := s.Suites[sn]
				names := make([]string, len(su.Tests))
				for i, t := range su.Tests {
					names[i] = t.Test
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", n, sn, strings.Join(names, " "))
			}
		}
	case "tests", "plugins":
		host := c.host()
		defer host.Close()
		for _, p := range host.Names() {
			d, err := host.Describe(context.Background(), p)
			if err != nil {
				fmt.Fprintf(w, "%s\terror: %v\n", p, err)
				continue
			}
			if what == "plugins" {
				fmt.Fprintf(w, "%s\t%s\t%d tests\n", d.Name, d.Version, len(d.Tests))
				continue
			}
			for _, t := range d.Tests {
				fmt.Fprintf(w, "%s.%s\t%s\n", d.Name, t.Name, t.Description)
			}
			// Parameters once per plugin when its tests share them.
			if len(d.Tests) > 0 {
				fmt.Fprintf(w, "\t%s parameters (--param KEY=VALUE):\n", d.Name)
				for _, p := range d.Tests[0].Params {
					def := ""
					if p.Default != "" {
						def = " (default " + p.Default + ")"
					}
					fmt.Fprintf(w, "\t  %s\t%s%s\n", p.Name, p.Description, def)
				}
			}
		}
	case "launchers":
		for _, n := range launch.Names() {
			fmt.Fprintln(w, n)
		}
	default:
		return exitUsage, usageError{fmt.Errorf("list %q: want skus, suites, tests, plugins or launchers", what)}
	}
	return exitOK, nil
}

func cmdBaseline(args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		return exitUsage, usageError{errors.New("baseline: want validate [FILE...] or show SKU")}
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stderr, "Usage: gpuaccept baseline validate [--baselines DIR] [FILE...]\n       gpuaccept baseline show SKU\n")
		return exitOK, nil
	case "validate":
		var c common
		fs := newFlags("baseline validate", "Usage: gpuaccept baseline validate [--baselines DIR] [FILE...]\n", stderr)
		c.add(fs)
		if err := fs.Parse(args[1:]); err != nil {
			return exitUsage, usageError{err}
		}
		host := c.host()
		defer host.Close()
		ctx := context.Background()
		if fs.NArg() == 0 {
			cat, err := c.catalog()
			if err != nil {
				return exitUsage, err
			}
			for _, n := range cat.Names() {
				s := cat.SKUs[n]
				if err := runner.ValidateSKU(ctx, host, s); err != nil {
					return exitUsage, err
				}
				fmt.Fprintf(stdout, "ok  %s: sku %s, %d suites, %d baseline entries\n", s.File, s.Name, len(s.Suites), len(s.Baselines))
				for _, n := range runner.Unbaselined(s) {
					fmt.Fprintf(stdout, "    note: %s\n", n)
				}
			}
			return exitOK, nil
		}
		bad := 0
		for _, f := range fs.Args() {
			data, err := os.ReadFile(f)
			if err == nil {
				var s *sku.SKU
				if s, err = sku.Parse(data, f); err == nil {
					if err = runner.ValidateSKU(ctx, host, s); err == nil {
						fmt.Fprintf(stdout, "ok  %s: sku %s, %d suites, %d baseline entries\n", f, s.Name, len(s.Suites), len(s.Baselines))
						continue
					}
				}
			}
			bad++
			fmt.Fprintf(stdout, "BAD %v\n", err)
		}
		if bad > 0 {
			return exitUsage, fmt.Errorf("%d of %d files are malformed", bad, fs.NArg())
		}
		return exitOK, nil
	case "show":
		var c common
		fs := newFlags("baseline show", "Usage: gpuaccept baseline show SKU\n", stderr)
		c.add(fs)
		if err := fs.Parse(args[1:]); err != nil {
			return exitUsage, usageError{err}
		}
		if fs.NArg() != 1 {
			return exitUsage, usageError{errors.New("baseline show: want one SKU")}
		}
		cat, err := c.catalog()
		if err != nil {
			return exitUsage, err
		}
		s, err := cat.Get(fs.Arg(0))
		if err != nil {
			return exitUsage, usageError{err}
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "TEST\tSCOPE\tMETRIC\tLABELS\tSIZE\tVALUE\tUNIT\tBAND")
		var sources []string
		for _, e := range s.Baselines {
			labels := labelText(e.Labels)
			sources = append(sources, fmt.Sprintf("%s %s %s %s: %s", e.Test, e.Scope, e.Metric, labels, e.Source))
			if e.Value != nil {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\n", e.Test, e.Scope, e.Metric, labels, sizeText(int64(e.Size)), *e.Value, e.Unit, bandText(e.Band))
			}
			for _, p := range e.Points {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\n", e.Test, e.Scope, e.Metric, labels, sizeText(int64(p.Size)), p.Value, e.Unit, bandText(e.Band.Merge(p.Band)))
			}
		}
		if err := w.Flush(); err != nil {
			return exitUsage, err
		}
		fmt.Fprintln(stdout, "\nSources:")
		for _, src := range sources {
			fmt.Fprintln(stdout, "  "+src)
		}
		return exitOK, nil
	}
	return exitUsage, usageError{fmt.Errorf("baseline %q: want validate or show", args[0])}
}

func labelText(l map[string]string) string {
	var kv []string
	for k, v := range l {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// bandText renders a band's edges as written: "min -10%, warn_min -5%".
func bandText(b sku.Band) string {
	var parts []string
	for _, e := range []struct {
		name string
		b    sku.Bound
	}{{"min", b.Min}, {"warn_min", b.WarnMin}, {"max", b.Max}, {"warn_max", b.WarnMax}} {
		if e.b.IsSet() {
			parts = append(parts, e.name+" "+e.b.Text)
		}
	}
	return strings.Join(parts, ", ")
}

func sizeText(n int64) string {
	if n == 0 {
		return "-"
	}
	return result.FormatBytes(n)
}

const demoUsage = `Usage: gpuaccept demo [flags]

Runs the whole pipeline (plugin plan, launcher, parse, judge, reports) on
real nccl-tests recordings embedded in gpuaccept, with the replay launcher:
first a healthy 2 x H200 node, which passes its h200 baseline, then the same
node with NVLink peer-to-peer disabled (NCCL_P2P_DISABLE=1), which fails it.
No GPU is needed.
`

func cmdDemo(args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	fs := newFlags("demo", demoUsage, stderr)
	c.add(fs)
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	if err := validFormat(c.format); err != nil {
		return exitUsage, err
	}
	cat, err := c.catalog()
	if err != nil {
		return exitUsage, err
	}
	s, err := cat.Get("h200")
	if err != nil {
		return exitUsage, err
	}
	base := c.out
	if base == "" {
		if base, err = os.MkdirTemp("", "gpuaccept-demo-"); err != nil {
			return exitUsage, fmt.Errorf("create demo results folder: %w", err)
		}
		defer os.RemoveAll(base)
	}
	host := c.host()
	defer host.Close()
	ctx, stop := signalContext()
	defer stop()
	topo := plan.Topology{Nodes: 1, GPUsPerNode: 2}
	var statuses []result.Status
	for _, d := range gpuaccept.DemoRecordings {
		sub, err := iofs.Sub(gpuaccept.Recordings, d.Dir)
		if err != nil {
			return exitUsage, fmt.Errorf("open embedded recordings %s: %w", d.Dir, err)
		}
		l, err := launch.New("replay", launch.Options{ReplayFS: sub})
		if err != nil {
			return exitUsage, err
		}
		fmt.Fprintf(stdout, "\n== %s\n", d.Title)
		dc := c
		dc.out = filepath.Join(base, filepath.Base(d.Dir))
		if c.junit != "" {
			dc.junit = strings.TrimSuffix(c.junit, ".xml") + "-" + filepath.Base(d.Dir) + ".xml"
		}
		r := &runner.Runner{Plugins: host, Launcher: l, SKU: s, Dir: dc.out, Version: getVersion(), Progress: stderr, Params: d.Params}
		res, err := r.Run(ctx, "singlenode", topo)
		if err != nil {
			return exitUsage, err
		}
		if _, err := dc.finish(res, stdout); err != nil {
			return exitUsage, err
		}
		if res.Status != d.Want {
			return exitFail, fmt.Errorf("demo: %s ended %s, expected %s", d.Title, res.Status, d.Want)
		}
		statuses = append(statuses, res.Status)
	}
	where := "results folders under " + base
	if c.out == "" {
		where = "give --out DIR to keep the results folders"
	}
	fmt.Fprintf(stdout, "\ndemo: every verdict came out as expected (%v); %s\n", statuses, where)
	return exitOK, nil
}

func cmdPlugin(args []string) (int, error) {
	if len(args) != 2 || args[0] != "serve" {
		return exitUsage, usageError{errors.New("plugin: want serve NAME (gpuaccept starts this itself)")}
	}
	p, ok := builtins[args[1]]
	if !ok {
		return exitUsage, usageError{fmt.Errorf("no built-in plugin %q", args[1])}
	}
	pluginapi.Serve(p)
	return exitOK, nil
}
