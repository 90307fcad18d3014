package launch

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/site"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Options are what every launcher is built with, beside its own Config:
// the run's settings that are not one launcher's. Nothing in it is read
// by flag name.
type Options struct {
	// Hosts are the nodes under test, in node order (--hosts,
	// --hostfile); empty: the launcher finds them (an allocation, the
	// scheduler) or runs on this host. A launcher that cannot run on the
	// nodes named refuses them when it is built.
	Hosts []string
	// MPIFlavor names the rank starter of MPI steps (--mpi-flavor, a
	// launchers/rankstart name); empty means Open MPI's mpirun.
	MPIFlavor string
	// MPIArgs are extra arguments for the rank starter (--mpi-arg).
	MPIArgs []string
	// SKU is the SKU under test: a launcher that shapes its workloads by
	// the hardware (k8s's pods, from the SKU file's kubernetes section)
	// reads it; nil when there is none (tests).
	SKU *sku.SKU
	// DryRun says only Commands will be called: the launcher connects
	// nowhere when it is built (ssh skips its reachability check).
	DryRun bool
	// Site is what makes a launch work on this cluster (--site,
	// framework/site); nil: nothing beyond the SKU. Every launcher honours
	// it the same way: its MPI part through rankstart.FromLaunch, its
	// Env and EnvScripts on every step through the launcher New wraps,
	// its kubernetes part in the k8s launcher's pods.
	Site *site.Site
}

// Config is one launcher's own settings, typed, bound from its
// command-line flags. A launcher's package defines it beside the launcher
// and registers a constructor for it (Register).
type Config interface {
	// Bind adds the launcher's own flags to fs, with their defaults, so
	// that parsing fs sets the Config's fields. Flag names are shared by
	// all launchers (and the command's own flags): pflag panics on a name
	// bound twice, which every command-line test exercises. Each help text
	// starts with the launcher's name ("ssh: ...").
	Bind(fs *pflag.FlagSet)
	// Build checks the settings and builds a launcher for o. An error in
	// a setting names its flag ("--ssh-port 70000: not a TCP port").
	// Build does not change the Config: a localisation builds one
	// launcher per set of hosts from it.
	Build(o Options) (Launcher, error)
}

var (
	regMu    sync.Mutex
	registry = map[string]func() Config{}
)

// Register records a launcher under its --launcher name; newConfig
// returns a fresh Config holding the defaults of its flags. It is called
// from the launcher package's init function. An empty name, a nil
// constructor, or a name registered twice panics: two packages claiming
// one --launcher value is a build mistake, not a choice to make at run
// time.
func Register(name string, newConfig func() Config) {
	regMu.Lock()
	defer regMu.Unlock()
	if name == "" || newConfig == nil {
		panic(fmt.Sprintf("launch.Register(%q): empty name or nil constructor", name))
	}
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("launch.Register: launcher %q registered twice", name))
	}
	registry[name] = newConfig
}

// Names lists the registered launchers, sorted.
func Names() []string {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Configs holds one fresh Config of every registered launcher, bound to
// one command line by Bind.
type Configs struct {
	byName map[string]Config
}

// Bind makes a fresh Config of every registered launcher and binds its
// flags to fs, in launcher name order (so --help lists them so).
func Bind(fs *pflag.FlagSet) *Configs {
	c := &Configs{byName: map[string]Config{}}
	for _, n := range Names() {
		cfg := newConfig(n)
		cfg.Bind(fs)
		c.byName[n] = cfg
	}
	return c
}

func newConfig(name string) Config {
	regMu.Lock()
	f := registry[name]
	regMu.Unlock()
	if f == nil {
		return nil
	}
	return f()
}

// New builds the named launcher from its Config as the command line set
// it; a nil Configs means every flag's default. The error lists the
// launchers that exist when name is none of them.
func (c *Configs) New(name string, o Options) (Launcher, error) {
	var cfg Config
	if c != nil {
		cfg = c.byName[name]
	}
	if cfg == nil {
		cfg = newConfig(name)
	}
	if cfg == nil {
		return nil, fmt.Errorf("unknown launcher %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	l, err := cfg.Build(o)
	if err != nil || o.Site == nil {
		return l, err
	}
	return sited{Launcher: l, site: o.Site}, nil
}

// sited is a launcher whose requests' steps are first made what they are
// on the site (site.Site.Step: its environment and scripts), so every
// launcher runs them alike without knowing the site.
type sited struct {
	Launcher
	site *site.Site
}

func (s sited) req(r Request) Request {
	steps := make([]plan.Step, len(r.Plan.Steps))
	for i, st := range r.Plan.Steps {
		steps[i] = s.site.Step(st)
	}
	r.Plan.Steps = steps
	return r
}

// Launch implements Launcher.
func (s sited) Launch(ctx context.Context, r Request) ([]plan.Output, error) {
	return s.Launcher.Launch(ctx, s.req(r))
}

// Commands implements Launcher.
func (s sited) Commands(r Request) ([]string, error) { return s.Launcher.Commands(s.req(r)) }

// New builds the named launcher with its flags' defaults, for callers
// without a command line (tests, the demo).
func New(name string, o Options) (Launcher, error) {
	return (*Configs)(nil).New(name, o)
}
