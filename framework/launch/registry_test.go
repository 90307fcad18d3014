package launch

import (
	"context"
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
	cfgs := Bind(fs)
	assert.NilError(t, fs.Parse([]string{"--fake-level", "7"}))
	l, err := cfgs.New("fake", Options{Hosts: []string{"n1"}})
	assert.NilError(t, err)
	assert.Equal(t, l.(fakeLauncher).level, 7)
	assert.DeepEqual(t, l.(fakeLauncher).hosts, []string{"n1"})

	// Another command line starts from the defaults again.
	fs2 := pflag.NewFlagSet("run", pflag.ContinueOnError)
	cfgs2 := Bind(fs2)
	assert.NilError(t, fs2.Parse([]string{"--fake-level", "12"}))
	_, err = cfgs2.New("fake", Options{})
	assert.Error(t, err, "--fake-level: want 0 to 9")
	l, err = cfgs.New("fake", Options{})
	assert.NilError(t, err)
	assert.Equal(t, l.(fakeLauncher).level, 7)

	_, err = cfgs.New("pbs", Options{})
	assert.ErrorContains(t, err, `unknown launcher "pbs" (known: `)
	assert.ErrorContains(t, err, "fake")

	// A flag name bound twice is a build mistake too: pflag panics.
	defer func() { assert.Assert(t, recover() != nil, "binding --fake-level twice did not panic") }()
	(&fakeConfig{}).Bind(fs)
}
