package argmask

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// A flag's values are found in both spellings, anywhere, after "--" too;
// a flag at the end without its value gives none.
func TestFlagValues(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--param", "a=1", "--param=b=2"}, []string{"a=1", "b=2"}},
		{[]string{"record", "--sku", "h200", "--", "--param", "env.HF_TOKEN=x"}, []string{"env.HF_TOKEN=x"}},
		{[]string{"--params", "a=1", "--param"}, nil},
		{nil, nil},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			assert.DeepEqual(t, FlagValues(c.args, "param"), c.want)
		})
	}
}

// Every source of a secret the masking must know before the flags are
// parsed: the environment, a secret --param, a password in --hosts, and a
// site file's secret env; a site file that cannot be read gives none.
func TestMasking(t *testing.T) {
	dir := t.TempDir()
	siteFile := filepath.Join(dir, "site.yaml")
	assert.NilError(t, os.WriteFile(siteFile, []byte("site: lab\nenv:\n  MY_SERVICE_TOKEN: sitesecret42\n  NCCL_DEBUG: info\n"), 0o644))
	cases := []struct {
		name    string
		args    []string
		environ []string
		secret  string
	}{
		{"environment", nil, []string{"HF_TOKEN=envsecret42"}, "envsecret42"},
		{"param", []string{"--param", "env.HF_TOKEN=paramsecret42"}, nil, "paramsecret42"},
		{"hosts", []string{"--hosts", "admin:hostsecret42@node1"}, nil, "hostsecret42"},
		{"site", []string{"--site=" + siteFile}, nil, "sitesecret42"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Masking(c.args, c.environ).String("it printed " + c.secret + " here")
			assert.Assert(t, !strings.Contains(got, c.secret), "%s", got)
			assert.Assert(t, strings.HasPrefix(got, "it printed "), "%s", got)
		})
	}
	assert.DeepEqual(t, siteSecrets([]string{"--site", siteFile}), []string{"sitesecret42"})
	assert.Assert(t, siteSecrets([]string{"--site", filepath.Join(dir, "missing.yaml")}) == nil)
	// Not secret: printed as it is.
	assert.Equal(t, Masking([]string{"--site", siteFile}, nil).String("NCCL_DEBUG info"), "NCCL_DEBUG info")
}
