package launch

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// fakeConfig is a launcher Config with one flag; Build fails on a bad
// value, naming the flag.
type fakeConfig struct {
	Level int
}

func (c *fakeConfig) Bind(fs *pflag.FlagSet) {
	fs.IntVar(&c.Level, "fake-level", c.Level, "fake: a level from 0 to 9")
}

func (c *fakeConfig) Build(o Options) (Launcher, error) {
	if c.Level < 0 || c.Level > 9 {
		return nil, &flagError{"--fake-level"}
	}
	return fakeLauncher{level: c.Level, hosts: o.Hosts}, nil
}

type flagError struct{ flag string }

func (e *flagError) Error() string { return e.flag + ": want 0 to 9" }

type fakeLauncher struct {
	level int
	hosts []string
}

func (fakeLauncher) Name() string { return "fake" }
func (fakeLauncher) Launch(ctx context.Context, req Request) ([]plan.Output, error) {
	return nil, nil
}
func (fakeLauncher) Commands(req Request) ([]string, error) { return nil, nil }

func init() {
	Register("fake", func() Config { return &fakeConfig{Level: 3} })
}

// Two packages claiming one --launcher value is a build mistake: the
// second registration panics, and so do an empty name and a nil
// constructor; the first registration stays.
func TestRegisterDuplicatePanics(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func() Config
	}{
		{"fake", func() Config { return &fakeConfig{} }},
		{"", func() Config { return &fakeConfig{} }},
		{"other", nil},
	} {
		func() {
			defer func() {
				assert.Assert(t, recover() != nil, "Register(%q) did not panic", c.name)
			}()
			Register(c.name, c.f)
		}()
	}
	l, err := New("fake", Options{})
	assert.NilError(t, err)
	assert.Equal(t, l.(fakeLauncher).level, 3, "the first registration's defaults")
	assert.Assert(t, !strings.Contains(strings.Join(Names(), ","), "other"))
}

// The flags a launcher binds reach its Config, one fresh Config per
// command line; a bad value is the Config's error, naming the flag; an
// unknown name lists those that exist.
func TestBindBuildsFromFlags(t *testing.T) {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfgs, err := Bind(fs)
	assert.NilError(t, err)
	assert.NilError(t, fs.Parse([]string{"--fake-level", "7"}))
	l, err := cfgs.New("fake", Options{Hosts: []string{"n1"}})
	assert.NilError(t, err)
	assert.Equal(t, l.(fakeLauncher).level, 7)
	assert.DeepEqual(t, l.(fakeLauncher).hosts, []string{"n1"})

	// Another command line starts from the defaults again.
	fs2 := pflag.NewFlagSet("run", pflag.ContinueOnError)
	cfgs2, err := Bind(fs2)
	assert.NilError(t, err)
	assert.NilError(t, fs2.Parse([]string{"--fake-level", "12"}))
	_, err = cfgs2.New("fake", Options{})
	assert.Error(t, err, "--fake-level: want 0 to 9")
	l, err = cfgs.New("fake", Options{})
	assert.NilError(t, err)
	assert.Equal(t, l.(fakeLauncher).level, 7)

	_, err = cfgs.New("pbs", Options{})
	assert.ErrorContains(t, err, `unknown launcher "pbs" (known: `)
	assert.ErrorContains(t, err, "fake")
	assert.ErrorContains(t, cfgs.Check("pbs"), `unknown launcher "pbs" (known: `)
}

// testConfig is a launcher Config of the flags given: name -> default
// (a bool when the default is "true" or "false", else a string), with
// the shared and renamed names it declares.
type testConfig struct {
	flags   [][2]string
	shared  []string
	aliases map[string]string
	// short gives the first flag a shorthand; twice binds it twice.
	short, twice bool
	vals         map[string]*string
	bools        map[string]*bool
}

func (c *testConfig) Bind(fs *pflag.FlagSet) {
	c.vals, c.bools = map[string]*string{}, map[string]*bool{}
	for i, f := range c.flags {
		sh := ""
		if i == 0 && c.short {
			sh = "q"
		}
		if f[1] == "true" || f[1] == "false" {
			c.bools[f[0]] = fs.BoolP(f[0], sh, f[1] == "true", "a switch")
			continue
		}
		c.vals[f[0]] = fs.StringP(f[0], sh, f[1], "a value")
	}
	if c.twice {
		fs.String(c.flags[0][0], "", "again")
	}
}

func (c *testConfig) Build(o Options) (Launcher, error) { return fakeLauncher{}, nil }

// sharingConfig and renamingConfig declare what testConfig holds.
type sharingConfig struct{ *testConfig }

func (c sharingConfig) SharedFlags() []string { return c.shared }

type renamingConfig struct{ *testConfig }

func (c renamingConfig) Aliases() map[string]string { return c.aliases }

func (c *testConfig) config() Config {
	switch {
	case c.shared != nil:
		return sharingConfig{c}
	case c.aliases != nil:
		return renamingConfig{c}
	}
	return c
}

// testLaunchers are a command's launchers in the shapes the real ones
// have: one without flags (local), schedulers with their own names, a
// pair sharing an ssh option, and a renamed --queue.
func testLaunchers() (map[string]*testConfig, []registered) {
	cs := map[string]*testConfig{
		"bare":   {},
		"batch":  {flags: [][2]string{{"partition", ""}, {"batch-exclusive", "true"}, {"ssh-key", ""}}, shared: []string{"ssh-key"}},
		"kube":   {flags: [][2]string{{"namespace", ""}, {"kube-queue", ""}}, aliases: map[string]string{"queue": "kube-queue"}},
		"remote": {flags: [][2]string{{"remote-port", "22"}, {"ssh-key", ""}}, shared: []string{"ssh-key"}},
	}
	var regs []registered
	for _, n := range []string{"bare", "batch", "kube", "remote"} {
		c := cs[n]
		regs = append(regs, registered{n, c.config})
	}
	return cs, regs
}

// A launcher's flags are accepted only with that launcher: given with
// another, Check (and New) names the flag and the launcher that owns it;
// a shared flag goes with either of its launchers and sets both; an old
// name works while it is unambiguous and is owned like the new one.
func TestLauncherFlagsOwned(t *testing.T) {
	for _, c := range []struct {
		launcher string
		args     []string
		alsoRead []string // what the command reads itself
		want     string   // "" for accepted
	}{
		{"bare", nil, nil, ""},
		{"bare", []string{"--partition", "gpu"}, nil, "--partition is a flag of launcher batch; this run's launcher is bare (--launcher)"},
		{"bare", []string{"--partition", "gpu", "--namespace", "acc"}, nil, "--partition is a flag of launcher batch, --namespace is a flag of launcher kube; this run's launcher is bare"},
		{"bare", []string{"--batch-exclusive=true"}, nil, "--batch-exclusive is a flag of launcher batch;"},
		{"bare", []string{"--batch-exclusive"}, nil, "--batch-exclusive is a flag of launcher batch;"},
		{"batch", []string{"--partition", "gpu", "--batch-exclusive=false"}, nil, ""},
		{"batch", []string{"--namespace", "acc"}, nil, "--namespace is a flag of launcher kube; this run's launcher is batch"},
		{"batch", []string{"--remote-port", "2222"}, nil, "--remote-port is a flag of launcher remote; this run's launcher is batch"},
		{"kube", []string{"--namespace", "acc", "--kube-queue", "q"}, nil, ""},
		{"kube", []string{"--queue", "q"}, nil, ""},
		{"batch", []string{"--queue", "q"}, nil, "--queue is a flag of launcher kube; this run's launcher is batch"},
		{"kube", []string{"--ssh-key", "k"}, nil, "--ssh-key is a flag of launchers batch and remote; this run's launcher is kube"},
		{"batch", []string{"--ssh-key", "k"}, nil, ""},
		{"remote", []string{"--ssh-key", "k", "--remote-port", "2222"}, nil, ""},
		{"remote", []string{"--partition", "gpu"}, nil, "--partition is a flag of launcher batch; this run's launcher is remote"},
		{"bare", []string{"--namespace", "acc"}, []string{"namespace"}, ""},
		{"bare", []string{"--namespace", "acc", "--kube-queue", "q"}, []string{"namespace"}, "--kube-queue is a flag of launcher kube; this run's launcher is bare"},
	} {
		t.Run(c.launcher+" "+strings.Join(c.args, " "), func(t *testing.T) {
			fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			_, regs := testLaunchers()
			cfgs, err := bind(fs, regs)
			assert.NilError(t, err)
			assert.NilError(t, fs.Parse(c.args))
			err = cfgs.Check(c.launcher, c.alsoRead...)
			if c.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, c.want)
			if c.alsoRead == nil {
				_, err = cfgs.New(c.launcher, Options{})
				assert.ErrorContains(t, err, c.want)
			}
		})
	}
}

// A shared flag is one flag on the command line whose value lands in
// every Config that binds it; an old name sets the new name's field.
func TestSharedAndOldNamesSetEveryConfig(t *testing.T) {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cs, regs := testLaunchers()
	_, err := bind(fs, regs)
	assert.NilError(t, err)
	assert.NilError(t, fs.Parse([]string{"--ssh-key", "/k", "--queue", "q", "--batch-exclusive=false"}))
	assert.Equal(t, *cs["batch"].vals["ssh-key"], "/k")
	assert.Equal(t, *cs["remote"].vals["ssh-key"], "/k")
	assert.Equal(t, *cs["kube"].vals["kube-queue"], "q")
	assert.Equal(t, *cs["batch"].bools["batch-exclusive"], false)
	assert.Equal(t, *cs["remote"].vals["remote-port"], "22", "an untouched flag keeps its default")
}

// An old name that is ambiguous is not bound: the command's own flag,
// or another launcher's flag of that name, keeps it; two launchers
// claiming one old name lose it both.
func TestOldNameOnlyWhereUnambiguous(t *testing.T) {
	for _, c := range []struct {
		name      string
		command   bool // the command binds --queue itself
		pbs       bool // a launcher pbs binds --queue
		otherOld  bool // a launcher lsf has --queue as an old name too
		args      []string
		launcher  string
		want      string // Check's error; "" accepted
		parseFail string
	}{
		{name: "only kube", args: []string{"--queue", "q"}, launcher: "kube"},
		{name: "pbs owns it", pbs: true, args: []string{"--queue", "q"}, launcher: "kube", want: "--queue is a flag of launcher pbs; this run's launcher is kube"},
		{name: "pbs owns it, with pbs", pbs: true, args: []string{"--queue", "q"}, launcher: "pbs"},
		{name: "the command owns it", command: true, args: []string{"--queue", "q"}, launcher: "kube"},
		{name: "two old names", otherOld: true, args: []string{"--queue", "q"}, launcher: "kube", parseFail: "unknown flag: --queue"},
		{name: "two old names, new name", otherOld: true, args: []string{"--kube-queue", "q"}, launcher: "kube"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			if c.command {
				fs.String("queue", "", "the command's")
			}
			_, regs := testLaunchers()
			if c.pbs {
				regs = append(regs, registered{"pbs", (&testConfig{flags: [][2]string{{"queue", ""}}}).config})
			}
			if c.otherOld {
				regs = append(regs, registered{"lsf", (&testConfig{flags: [][2]string{{"lsf-queue", ""}}, aliases: map[string]string{"queue": "lsf-queue"}}).config})
			}
			cfgs, err := bind(fs, regs)
			assert.NilError(t, err)
			err = fs.Parse(c.args)
			if c.parseFail != "" {
				assert.ErrorContains(t, err, c.parseFail)
				return
			}
			assert.NilError(t, err)
			if c.want == "" {
				assert.NilError(t, cfgs.Check(c.launcher))
				return
			}
			assert.ErrorContains(t, cfgs.Check(c.launcher), c.want)
		})
	}
}

// A name bound twice is an error of Bind naming the flag and who binds
// it, never pflag's panic at start: two launchers without declaring it
// shared, shared but unlike, a launcher and the command, a launcher
// binding it twice itself, a shorthand, an old name for no flag.
func TestBindRefusesNamesBoundTwice(t *testing.T) {
	for _, c := range []struct {
		name    string
		command string // a flag the command binds first
		extra   []registered
		want    string
	}{
		{name: "two launchers", extra: []registered{{"pbs", (&testConfig{flags: [][2]string{{"partition", ""}}}).config}},
			want: "--partition is bound by launchers batch and pbs, and launcher batch does not declare it shared"},
		{name: "shared by one only", extra: []registered{{"pbs", (&testConfig{flags: [][2]string{{"ssh-key", ""}}}).config}},
			want: "--ssh-key is bound by launchers batch, remote and pbs, and launcher pbs does not declare it shared"},
		{name: "shared but unlike", extra: []registered{{"pbs", (&testConfig{flags: [][2]string{{"ssh-key", "/etc/key"}}, shared: []string{"ssh-key"}}).config}},
			want: `shared flag --ssh-key: launcher batch binds it as string (default ""), launcher pbs as string (default "/etc/key")`},
		{name: "the command's", command: "namespace", want: "launcher kube binds --namespace, a flag of the command itself"},
		{name: "twice in one launcher", extra: []registered{{"pbs", (&testConfig{flags: [][2]string{{"pbs-queue", ""}}, twice: true}).config}},
			want: "binding the flags of launcher pbs: pbs flag redefined: pbs-queue"},
		{name: "shorthand", extra: []registered{{"pbs", (&testConfig{flags: [][2]string{{"pbs-queue", ""}}, short: true}).config}},
			want: "launcher pbs gives --pbs-queue the shorthand -q"},
		{name: "old name of nothing", extra: []registered{{"pbs", (&testConfig{flags: [][2]string{{"pbs-queue", ""}}, aliases: map[string]string{"q2": "pbs-q"}}).config}},
			want: "launcher pbs: old name --q2 stands for --pbs-q, which the launcher does not bind"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			if c.command != "" {
				fs.String(c.command, "", "the command's")
			}
			_, regs := testLaunchers()
			_, err := bind(fs, append(regs, c.extra...))
			assert.ErrorContains(t, err, c.want)
		})
	}
}

// The help lists the command's flags first, then each launcher's under
// its name, with old names and shared flags said; launcher flags are
// not in the command's own list.
func TestHelpGroupsFlagsByLauncher(t *testing.T) {
	var out strings.Builder
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(&out)
	fs.String("sku", "", "the SKU")
	fs.Usage = func() { fmt.Fprintf(fs.Output(), "Usage: run\nFlags:\n%s", fs.FlagUsages()) }
	_, regs := testLaunchers()
	_, err := bind(fs, regs)
	assert.NilError(t, err)
	assert.ErrorIs(t, fs.Parse([]string{"--help"}), pflag.ErrHelp)
	help := out.String()
	own, launchers, ok := strings.Cut(help, "Launcher flags (each accepted only with its --launcher):")
	assert.Assert(t, ok, help)
	assert.Assert(t, strings.Contains(own, "--sku"), help)
	for _, name := range []string{"--partition", "--namespace", "--ssh-key", "--queue"} {
		assert.Assert(t, !strings.Contains(own, name), "%s in the command's own list:\n%s", name, help)
	}
	var at []int
	for _, want := range []string{
		"  --launcher bare: no flags of its own\n",
		"  --launcher batch:\n",
		"--partition string",
		"(--ssh-key is shared by launchers batch, remote)",
		"  --launcher kube:\n",
		"--kube-queue string",
		"--queue: old name of --kube-queue (deprecated; kept while no other launcher binds it)",
		"  --launcher remote:\n",
		"--remote-port string",
		"(--ssh-key is shared by launchers batch, remote)",
	} {
		i := strings.Index(launchers, want)
		assert.Assert(t, i >= 0, "want %q in\n%s", want, launchers)
		if len(at) > 0 && want != "(--ssh-key is shared by launchers batch, remote)" {
			assert.Assert(t, i > at[len(at)-1], "%q out of order in\n%s", want, launchers)
		}
		at = append(at, i)
	}
	assert.Equal(t, strings.Count(launchers, "--ssh-key string"), 2, "listed under each launcher that reads it:\n%s", launchers)
}
