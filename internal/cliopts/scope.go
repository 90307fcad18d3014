package cliopts

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/hosts"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/site"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/framework/skuauto"
	"github.com/gpuaccept/gpuaccept/launchers/k8s"
	"github.com/gpuaccept/gpuaccept/launchers/local"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// ScopeFlags are the flags of where and how tests run, declared once for
// run, localise and health so that the commands cannot drift apart.
type ScopeFlags struct {
	launcher, hostList, hostFile, mpiFlavor, siteFile string
	nodes, gpus                                       int
	timeout                                           time.Duration
	params, mpiArgs                                   []string
	launchers                                         *launch.Configs
	// bindErr is launch.Bind's: a flag name two launchers (or a launcher
	// and the command) bind; Validate returns it.
	bindErr error
	fs      *pflag.FlagSet
}

// Add adds the scope flags to fs; timeout is --timeout's default. The
// launchers' own flags are bound by Bind, after the command's flags.
func (f *ScopeFlags) Add(fs *pflag.FlagSet, timeout time.Duration) {
	f.fs = fs
	fs.StringVar(&f.launcher, "launcher", local.Name, "where the steps run: "+strings.Join(launch.Names(), ", "))
	fs.IntVar(&f.nodes, "nodes", 0, "number of nodes (default: the hosts given, else the suite's)")
	fs.IntVar(&f.gpus, "gpus-per-node", 0, "GPUs per node (default: the SKU's)")
	fs.StringVar(&f.hostList, "hosts", "", "comma-separated node names (host or host:slots)")
	fs.StringVar(&f.hostFile, "hostfile", "", "file with one node per line (Open MPI or MPICH form)")
	fs.StringArrayVar(&f.params, "param", nil, "KEY=VALUE test parameter for every test, overriding the suite's; PLUGIN:KEY=VALUE or TEST:KEY=VALUE for one plugin's or one test's (repeatable; gpuaccept list tests shows them)")
	fs.StringVar(&f.mpiFlavor, "mpi-flavor", rankstart.FlavorOpenMPI, "rank starter of MPI steps, under every launcher: "+strings.Join(rankstart.MPIFlavors(), ", ")+" (with --launcher slurm: the mpirun of --slurm-mpi mpirun)")
	fs.StringArrayVar(&f.mpiArgs, "mpi-arg", nil, "extra argument for mpirun (repeatable), e.g. --mpi-arg=--mca --mpi-arg=btl_tcp_if_include --mpi-arg=lo")
	fs.StringVar(&f.siteFile, "site", "", "site file: what makes a launch work on this cluster (image, binaries, env scripts, MPI options, pod shape; framework/site, examples/sites/)")
	fs.DurationVar(&f.timeout, "timeout", timeout, "time limit per test; on expiry everything the test started is stopped")
}

// Bind adds the launchers' flags (launch.Bind).
func (f *ScopeFlags) Bind() { f.launchers, f.bindErr = launch.Bind(f.fs) }

// Validate checks the scope flags alone, before anything is read: a
// launcher's flags only with that launcher (launch.Configs.Check; also are
// launcher flags the command reads whatever the launcher).
func (f *ScopeFlags) Validate(also ...string) error {
	if f.bindErr != nil {
		return f.bindErr
	}
	if err := f.launchers.Check(f.launcher, also...); err != nil {
		return UsageError{err}
	}
	if err := (acceptance.Request{Nodes: f.nodes, GPUsPerNode: f.gpus}).Validate(); err != nil {
		return UsageError{err}
	}
	if f.timeout <= 0 {
		return UsageError{fmt.Errorf("--timeout %s: want a limit above zero, such as 30m: a test without one could hang the run, and what it started, for ever", f.timeout)}
	}
	return nil
}

// Scope is what the scope flags give once read: the site file, the hosts,
// the plugin host and the command's signal context, and what --sku auto
// found. Close releases the plugin host and the context.
type Scope struct {
	site  *site.Site
	hosts []hosts.Host
	host  *pluginapi.Host
	// Ctx is the command's signal context; Close cancels it.
	Ctx      context.Context
	autoGPUs int
	autoNote []string
	// Close releases the plugin host and cancels Ctx.
	Close func()
}

// Complete reads the site file and the hosts, starts the plugin host and
// the signal context (into c.Ctx), and resolves --sku auto (its probe on
// probeNodes nodes, 0: by the scope's rule). On error nothing is left
// open; the code is the exit code.
func (f *ScopeFlags) Complete(c *Common, dryRun bool, probeNodes int, stderr io.Writer) (*Scope, int, error) {
	st, err := loadSite(f.siteFile)
	if err != nil {
		return nil, result.ExitUsage, err
	}
	if err := st.CheckScopes(c.Host().Names()); err != nil {
		return nil, result.ExitUsage, UsageError{err}
	}
	if !f.fs.Changed("mpi-flavor") {
		f.mpiFlavor = "" // the site's mpi.flavor, else Open MPI
	}
	hs, err := acceptance.ReadHosts(f.hostList, f.hostFile)
	if err != nil {
		return nil, result.ExitUsage, UsageError{err}
	}
	host := c.Host()
	ctx, stop := SignalContext()
	c.Ctx = ctx
	sc := &Scope{site: st, hosts: hs, host: host, Ctx: ctx, Close: func() { stop(); host.Close() }}
	if c.SKU != skuauto.Auto {
		return sc, result.ExitPass, nil
	}
	ch, err := f.auto(c, sc, dryRun, probeNodes, stderr)
	if err != nil {
		interrupted := ctx.Err() != nil // before close cancels ctx
		sc.Close()
		if interrupted {
			return nil, result.ExitInterrupted, fmt.Errorf("--sku auto: interrupted (Ctrl-C or SIGTERM) while %s read the nodes' GPUs", skuauto.ProbeTest)
		}
		return nil, result.ExitUsage, err
	}
	sc.autoGPUs, sc.autoNote = ch.GPUsPerNode, []string{ch.Note()}
	return sc, result.ExitPass, nil
}

// auto runs --sku auto's probe (acceptance.AutoSKU) with the command's
// own launcher flags, hosts and site, sets c.SKU to the SKU picked and
// says the choice on stderr. Every refusal is a usage error.
func (f *ScopeFlags) auto(c *Common, sc *Scope, dryRun bool, probeNodes int, stderr io.Writer) (*skuauto.Choice, error) {
	if probeNodes == 0 {
		probeNodes = f.nodes
	}
	ch, err := acceptance.AutoSKU(sc.Ctx, acceptance.AutoOptions{Catalog: func() (*sku.Catalog, error) { return c.Catalog(stderr) },
		Plugins: sc.host, NewLauncher: f.newLauncher(nil, sc.site, false), Nodes: probeNodes, GPUsPerNode: f.gpus, Hosts: hosts.Names(sc.hosts),
		Out: c.Out, Timeout: f.timeout, DryRun: dryRun, PodGPUs: f.launcher == k8s.Name, Site: sc.site})
	if err != nil {
		return nil, UsageError{err}
	}
	fmt.Fprintln(stderr, ch.Line())
	c.SKU = ch.SKU.Name
	return ch, nil
}

// Prepare is the command's acceptance.Prepare from the scope flags, the
// common flags and what Complete read (sc).
func (f *ScopeFlags) Prepare(cmd acceptance.Command, c *Common, sc *Scope, suite string, tests []string, stdout, stderr io.Writer) (acceptance.Prepare, error) {
	cat, err := c.Catalog(stderr)
	if err != nil {
		return acceptance.Prepare{}, err
	}
	var others []string
	for _, n := range launch.Names() {
		if n != local.Name {
			others = append(others, n)
		}
	}
	return acceptance.Prepare{Request: acceptance.Request{Command: cmd, Suite: suite, Tests: tests, Params: f.params, Site: sc.site,
		Nodes: f.nodes, GPUsPerNode: f.gpus, Hosts: sc.hosts, AutoGPUs: sc.autoGPUs,
		OneHost: f.launcher == local.Name, Launcher: f.launcher, OtherLaunchers: others},
		Catalog: cat, SKUName: c.SKU, Out: c.Out, Timeout: f.timeout, Plugins: sc.host, OnThisHost: f.launcher == local.Name,
		Launchers: func(s *sku.SKU, dryRun bool) acceptance.NewLauncher { return f.newLauncher(s, sc.site, dryRun) },
		AutoNote:  sc.autoNote, Version: c.Version, Stdout: stdout, Stderr: stderr, Now: time.Now()}, nil
}

// newLauncher builds the command's launcher, of SKU s (nil: none known
// yet) with the site file, on the hosts each run gives it.
func (f *ScopeFlags) newLauncher(s *sku.SKU, st *site.Site, dryRun bool) acceptance.NewLauncher {
	opts := launch.Options{MPIFlavor: f.mpiFlavor, MPIArgs: f.mpiArgs, SKU: s, DryRun: dryRun, Site: st}
	return func(hosts []string) (launch.Launcher, error) {
		o := opts
		o.Hosts = hosts
		return f.launchers.New(f.launcher, o)
	}
}

// loadSite reads --site (site.LoadForRun); a malformed file is a usage
// error listing its problems with file, line and field.
func loadSite(path string) (*site.Site, error) {
	s, err := site.LoadForRun(path)
	if err != nil {
		return nil, UsageError{err}
	}
	return s, nil
}
