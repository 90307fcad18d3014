package cliopts

import (
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	_ "github.com/gpuaccept/gpuaccept/launchers/local"
)

// flagNames lists the flags of fs in the order they were declared.
func flagNames(fs *pflag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return names
}

// A command takes only the common flags it names, in the order it names
// them; a name no flag has is a programming error.
func TestAddOnly(t *testing.T) {
	cases := []struct {
		name  string
		add   func(c *Common, fs *pflag.FlagSet)
		want  []string
		panic bool
	}{
		{"every flag", func(c *Common, fs *pflag.FlagSet) { c.Add(fs) }, CommonFlags, false},
		{"list's", func(c *Common, fs *pflag.FlagSet) { c.AddOnly(fs, "sku", "baselines", "plugin-path") }, []string{"sku", "baselines", "plugin-path"}, false},
		{"with --sign-key", func(c *Common, fs *pflag.FlagSet) { c.AddOnly(fs, "format"); c.AddSign(fs) }, []string{"format", "sign-key"}, false},
		{"an unknown name", func(c *Common, fs *pflag.FlagSet) { c.AddOnly(fs, "suite") }, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c Common
			fs := NewFlags("x", "", io.Discard)
			if tc.panic {
				assert.Assert(t, is.Panics(func() { tc.add(&c, fs) }))
				return
			}
			tc.add(&c, fs)
			assert.DeepEqual(t, flagNames(fs), tc.want)
		})
	}
}

// A bad --format, an unreadable --sign-key and a scope that cannot run
// are usage errors (exit 2), each naming what was wrong.
func TestUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		err  func() error
		want string
	}{
		{"--format", func() error { return ValidFormat("yaml") }, "yaml"},
		{"--sign-key", func() error {
			c := Common{SignKey: filepath.Join(t.TempDir(), "no-key")}
			return c.LoadKey()
		}, "no-key"},
		{"--timeout", func() error {
			var f ScopeFlags
			fs := NewFlags("run", "", io.Discard)
			f.Add(fs, 30*time.Minute)
			f.Bind()
			assert.NilError(t, fs.Parse([]string{"--timeout", "0s"}))
			return f.Validate()
		}, "--timeout 0s: want a limit above zero"},
		{"--nodes", func() error {
			var f ScopeFlags
			fs := NewFlags("run", "", io.Discard)
			f.Add(fs, 30*time.Minute)
			f.Bind()
			assert.NilError(t, fs.Parse([]string{"--nodes", "-1"}))
			return f.Validate()
		}, "nodes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			var ue UsageError
			assert.Assert(t, errors.As(err, &ue), "%v is not a UsageError", err)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	var c Common
	assert.NilError(t, c.LoadKey(), "no --sign-key loads nothing")
	assert.NilError(t, ValidFormat("markdown"))
}

// run takes --localise and --no-localise; localise, which localises
// whatever it is given, does not.
func TestLocaliseFlags(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want bool
	}{{"run", true}, {"localise", false}} {
		var lf LocaliseFlags
		fs := NewFlags(tc.cmd, "", io.Discard)
		lf.Add(fs, tc.cmd)
		assert.Equal(t, fs.Lookup("localise") != nil, tc.want, tc.cmd)
		assert.Equal(t, fs.Lookup("no-localise") != nil, tc.want, tc.cmd)
		assert.Assert(t, fs.Lookup("localise-strategy") != nil, tc.cmd)
	}
}
