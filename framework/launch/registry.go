package launch

import (
	"context"
	"fmt"
	"io"
	"slices"
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
	// that parsing fs sets the Config's fields. fs is the launcher's own
	// set: the registry (launch.Bind) moves its flags onto the command
	// line, accepts them only with this launcher (Configs.Check), and
	// lists them in the help under the launcher's name. A name another
	// launcher or the command binds too is an error of launch.Bind
	// unless every launcher binding it declares it shared (Sharer).
	// Flags have long names only (no shorthand).
	Bind(fs *pflag.FlagSet)
	// Build checks the settings and builds a launcher for o. An error in
	// a setting names its flag ("--ssh-port 70000: not a TCP port").
	// Build does not change the Config: a localisation builds one
	// launcher per set of hosts from it.
	Build(o Options) (Launcher, error)
}

// Sharer is a Config that reads a flag another launcher reads too (an
// MPI or ssh option of two launchers that start ranks alike). A name
// every launcher binding it lists in SharedFlags, with one type and one
// default, is bound once on the command line and its value set in each
// of their Configs; it is accepted with any of them.
type Sharer interface {
	Config
	// SharedFlags are the names (without --) of the Config's flags that
	// other launchers bind too.
	SharedFlags() []string
}

// Renamer is a Config some of whose flags had another name before.
// An old name keeps working, hidden from the help and deprecated (pflag
// says "use --NEW" on stderr when it is given), as long as it is
// unambiguous: when the command, a launcher or another launcher's old
// name binds it too, the old name is not bound, and only the other
// meaning stays.
type Renamer interface {
	Config
	// Aliases maps each old name (without --) to the name of the
	// Config's flag it now is.
	Aliases() map[string]string
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
	// order is the launchers' names, sorted.
	order []string
	// own is each launcher's own flag set, for its group in the help.
	own map[string]*pflag.FlagSet
	// owners are the launchers that read a flag, sorted, by every name
	// it is bound under (an old name included).
	owners map[string][]string
	// aliases are the old names bound, by launcher: old name to new.
	aliases map[string]map[string]string
	// given are the launcher flags the command line set, as typed, in
	// the order given.
	given []string
	// alsoRead are the flags the command read whatever the launcher, as
	// its last successful Check accepted them: New checks again with them
	// (health's --taint-on-fail reads k8s's --kubeconfig under local).
	alsoRead []string
}

// registered is one launcher's name and Config constructor.
type registered struct {
	name      string
	newConfig func() Config
}

// Bind makes a fresh Config of every registered launcher and binds its
// flags to fs, hidden from fs's own list: fs's Usage is wrapped to print
// them after it, grouped by launcher in name order. Bind comes after the
// command's own flags are bound. The error names the flag and who binds
// it when two launchers, or a launcher and the command, bind one name
// without declaring it shared (Sharer), and when a launcher binds a name
// twice or gives a flag a shorthand: a build mistake, which every
// command's --help test finds.
func Bind(fs *pflag.FlagSet) (*Configs, error) {
	names := Names()
	regs := make([]registered, len(names))
	regMu.Lock()
	for i, n := range names {
		regs[i] = registered{n, registry[n]}
	}
	regMu.Unlock()
	return bind(fs, regs)
}

// use is one launcher's binding of a flag name.
type use struct {
	launcher string
	flag     *pflag.Flag
}

func bind(fs *pflag.FlagSet, regs []registered) (*Configs, error) {
	c := &Configs{byName: map[string]Config{}, own: map[string]*pflag.FlagSet{},
		owners: map[string][]string{}, aliases: map[string]map[string]string{}}
	uses := map[string][]use{}
	var order []string
	for _, r := range regs {
		cfg := r.newConfig()
		own := pflag.NewFlagSet(r.name, pflag.ContinueOnError)
		own.SortFlags = false
		own.SetOutput(io.Discard)
		if err := bindOwn(cfg, own); err != nil {
			return nil, fmt.Errorf("binding the flags of launcher %s: %w", r.name, err)
		}
		var err error
		own.VisitAll(func(f *pflag.Flag) {
			switch {
			case err != nil:
			case f.Shorthand != "":
				err = fmt.Errorf("launcher %s gives --%s the shorthand -%s: launcher flags have long names only", r.name, f.Name, f.Shorthand)
			case fs.Lookup(f.Name) != nil:
				err = fmt.Errorf("launcher %s binds --%s, a flag of the command itself: rename the launcher's (e.g. --%s-%s)", r.name, f.Name, r.name, f.Name)
			}
			if len(uses[f.Name]) == 0 {
				order = append(order, f.Name)
			}
			uses[f.Name] = append(uses[f.Name], use{r.name, f})
		})
		if err != nil {
			return nil, err
		}
		c.byName[r.name], c.own[r.name] = cfg, own
		c.order = append(c.order, r.name)
	}
	for _, name := range order {
		us := uses[name]
		if err := sharedAlike(name, us, c.byName); err != nil {
			return nil, err
		}
		p := &proxy{c: c, name: name}
		for _, u := range us {
			p.values = append(p.values, u.flag.Value)
			c.owners[name] = append(c.owners[name], u.launcher)
		}
		f := us[0].flag
		fs.AddFlag(&pflag.Flag{Name: name, Usage: f.Usage, Value: p, DefValue: f.DefValue, NoOptDefVal: f.NoOptDefVal, Hidden: true})
	}
	if err := c.bindAliases(fs); err != nil {
		return nil, err
	}
	usage := fs.Usage
	fs.Usage = func() {
		if usage != nil {
			usage()
		} else {
			fmt.Fprintf(fs.Output(), "Flags:\n%s", fs.FlagUsages())
		}
		c.PrintHelp(fs.Output())
	}
	return c, nil
}

// bindOwn calls cfg.Bind, turning pflag's panic at a name bound twice
// into an error.
func bindOwn(cfg Config, own *pflag.FlagSet) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	cfg.Bind(own)
	return nil
}

// sharedAlike checks a name bound by several launchers: each must
// declare it shared, and one type and default must serve them all.
func sharedAlike(name string, us []use, cfgs map[string]Config) error {
	if len(us) < 2 {
		return nil
	}
	var who []string
	for _, u := range us {
		who = append(who, u.launcher)
	}
	for _, u := range us {
		sh, ok := cfgs[u.launcher].(Sharer)
		if !ok || !slices.Contains(sh.SharedFlags(), name) {
			return fmt.Errorf("--%s is bound by launchers %s, and launcher %s does not declare it shared: rename one (e.g. --%s-%s), or declare it in SharedFlags of each if it means the same to all",
				name, andList(who), u.launcher, u.launcher, name)
		}
		if t, d := u.flag.Value.Type(), u.flag.DefValue; t != us[0].flag.Value.Type() || d != us[0].flag.DefValue {
			return fmt.Errorf("shared flag --%s: launcher %s binds it as %s (default %q), launcher %s as %s (default %q): a shared flag has one type and default",
				name, us[0].launcher, us[0].flag.Value.Type(), us[0].flag.DefValue, u.launcher, t, d)
		}
	}
	return nil
}

// bindAliases binds every launcher's unambiguous old names (Renamer).
func (c *Configs) bindAliases(fs *pflag.FlagSet) error {
	claims := map[string][]string{}
	for _, n := range c.order {
		r, ok := c.byName[n].(Renamer)
		if !ok {
			continue
		}
		for old, now := range r.Aliases() {
			if c.own[n].Lookup(now) == nil {
				return fmt.Errorf("launcher %s: old name --%s stands for --%s, which the launcher does not bind", n, old, now)
			}
			claims[old] = append(claims[old], n)
		}
	}
	olds := make([]string, 0, len(claims))
	for old := range claims {
		olds = append(olds, old)
	}
	sort.Strings(olds)
	for _, old := range olds {
		if len(claims[old]) > 1 || fs.Lookup(old) != nil {
			continue // ambiguous: the other meaning, if any, stays
		}
		n := claims[old][0]
		now := c.byName[n].(Renamer).Aliases()[old]
		f := fs.Lookup(now)
		fs.AddFlag(&pflag.Flag{Name: old, Usage: f.Usage, Value: &proxy{c: c, name: old, values: f.Value.(*proxy).values},
			DefValue: f.DefValue, NoOptDefVal: f.NoOptDefVal})
		if err := fs.MarkDeprecated(old, "use --"+now); err != nil {
			return fmt.Errorf("marking --%s deprecated: %w", old, err)
		}
		c.owners[old] = c.owners[now]
		if c.aliases[n] == nil {
			c.aliases[n] = map[string]string{}
		}
		c.aliases[n][old] = now
	}
	return nil
}

// proxy is a launcher flag on the command line: it sets the value in
// every Config that binds the name, and records that it was given.
type proxy struct {
	c      *Configs
	name   string
	values []pflag.Value
}

func (p *proxy) String() string { return p.values[0].String() }
func (p *proxy) Type() string   { return p.values[0].Type() }

func (p *proxy) Set(s string) error {
	for _, v := range p.values {
		if err := v.Set(s); err != nil {
			return err
		}
	}
	if !slices.Contains(p.c.given, p.name) {
		p.c.given = append(p.c.given, p.name)
	}
	return nil
}

// Check refuses the launcher flags given that launcher does not read:
// the error names each and the launcher(s) that own it ("--partition is
// a flag of launcher slurm; this run's launcher is local"). alsoRead
// names (without --) the launcher flags the command itself reads this
// time whatever the launcher (health's --taint-on-fail reads k8s's
// --kubeconfig): they pass. An unknown launcher is an error listing
// those that exist. A nil Configs (no command line) passes.
func (c *Configs) Check(launcher string, alsoRead ...string) error {
	if c == nil {
		return nil
	}
	if c.byName[launcher] == nil {
		return unknownLauncher(launcher)
	}
	var wrong []string
	for _, name := range c.given {
		owners := c.owners[name]
		if slices.Contains(owners, launcher) || slices.Contains(alsoRead, name) {
			continue
		}
		w := "launcher "
		if len(owners) > 1 {
			w = "launchers "
		}
		wrong = append(wrong, fmt.Sprintf("--%s is a flag of %s%s", name, w, andList(owners)))
	}
	if len(wrong) == 0 {
		c.alsoRead = alsoRead
		return nil
	}
	return fmt.Errorf("%s; this run's launcher is %s (--launcher)", strings.Join(wrong, ", "), launcher)
}

// andList is "a", "a and b", "a, b and c".
func andList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func unknownLauncher(name string) error {
	return fmt.Errorf("unknown launcher %q (known: %s)", name, strings.Join(Names(), ", "))
}

// PrintHelp writes the launchers' flags to w, a group per launcher in
// name order, each flag accepted only with that launcher.
func (c *Configs) PrintHelp(w io.Writer) {
	fmt.Fprintln(w, "\nLauncher flags (each accepted only with its --launcher):")
	for _, n := range c.order {
		own := c.own[n]
		if !own.HasFlags() {
			fmt.Fprintf(w, "  --launcher %s: no flags of its own\n", n)
			continue
		}
		fmt.Fprintf(w, "  --launcher %s:\n%s", n, own.FlagUsages())
		olds := make([]string, 0, len(c.aliases[n]))
		for old := range c.aliases[n] {
			olds = append(olds, old)
		}
		sort.Strings(olds)
		for _, old := range olds {
			fmt.Fprintf(w, "      --%s: old name of --%s (deprecated; kept while no other launcher binds it)\n", old, c.aliases[n][old])
		}
		for _, name := range sortedKeys(c.owners) {
			if o := c.owners[name]; len(o) > 1 && slices.Contains(o, n) && own.Lookup(name) != nil {
				fmt.Fprintf(w, "      (--%s is shared by launchers %s)\n", name, strings.Join(o, ", "))
			}
		}
	}
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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
// launchers that exist when name is none of them, and is Check's when
// the command line gave another launcher's flags.
func (c *Configs) New(name string, o Options) (Launcher, error) {
	var cfg Config
	if c != nil {
		cfg = c.byName[name]
	}
	if cfg == nil {
		cfg = newConfig(name)
	}
	if cfg == nil {
		return nil, unknownLauncher(name)
	}
	var also []string
	if c != nil {
		also = c.alsoRead
	}
	if err := c.Check(name, also...); err != nil {
		return nil, err
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
