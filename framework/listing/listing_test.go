package listing

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// list tests shows each test with the parameters it takes: once per plugin
// when its tests share them, else under each test.
func TestListTestsParams(t *testing.T) {
	bindir := pluginapi.Param{Name: "bindir", Description: "binaries"}
	port := pluginapi.Param{Name: "port", Default: "18515", Description: "TCP port"}
	cases := []struct {
		name string
		d    pluginapi.Description
		want string
	}{
		{"shared", pluginapi.Description{Name: "p", Tests: []pluginapi.TestInfo{
			{Name: "a", Description: "A", Params: []pluginapi.Param{bindir}},
			{Name: "b", Description: "B", Params: []pluginapi.Param{bindir}}}},
			"p.a\tA\np.b\tB\n\tp parameters (--param KEY=VALUE):\n\t  bindir\tbinaries\n"},
		{"per test", pluginapi.Description{Name: "p", Tests: []pluginapi.TestInfo{
			{Name: "a", Description: "A", Params: []pluginapi.Param{bindir}},
			{Name: "b", Description: "B", Params: []pluginapi.Param{bindir, port}}}},
			"p.a\tA\n\tp.a parameters (--param KEY=VALUE):\n\t  bindir\tbinaries\n" +
				"p.b\tB\n\tp.b parameters (--param KEY=VALUE):\n\t  bindir\tbinaries\n\t  port\tTCP port (default 18515)\n"},
		{"none", pluginapi.Description{Name: "p", Tests: []pluginapi.TestInfo{{Name: "a", Description: "A"}}}, "p.a\tA\n"},
		{"no tests", pluginapi.Description{Name: "p"}, ""},
		{"metrics with what they mean", pluginapi.Description{Name: "p", Tests: []pluginapi.TestInfo{{Name: "a", Description: "A", Metrics: []pluginapi.MetricInfo{
			{Name: "tokens", Unit: "tokens/s", Better: result.BetterHigher, Plot: result.PlotLabels, Record: true},
			{Name: "time", Unit: "us", Better: result.BetterLower, Plot: result.PlotCurve},
			{Name: "util", Unit: "%"}}}}},
			"p.a\tA\n\tmetrics: tokens tokens/s (higher, labels, recorded), time us (lower, curve), util % (unknown)\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			Tests(&b, c.d)
			assert.Equal(t, b.String(), c.want)
		})
	}
}

// A flag a list would ignore is refused, naming what the list takes.
func TestCheckFlags(t *testing.T) {
	cases := []struct {
		what  string
		given []string
		want  string
	}{
		{"skus", []string{"sku", "format"}, ""},
		{"skus", []string{"plugin-path"}, "list skus does not take --plugin-path (it takes: --sku, --baselines, --format)"},
		{"tests", []string{"format", "baselines"}, "list tests does not take --baselines (it takes: --plugin-path, --format)"},
		{"launchers", []string{"sku"}, "list launchers does not take --sku (it takes: --format)"},
		{"nonsense", []string{"sku"}, ""}, // Write names the unknown list
	}
	for _, c := range cases {
		t.Run(c.what+" "+strings.Join(c.given, ","), func(t *testing.T) {
			err := CheckFlags(c.what, c.given)
			if c.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.Error(t, err, c.want)
		})
	}
	assert.Equal(t, flagList(nil), "no flags")
	assert.NilError(t, CheckFormat("json"))
	assert.Error(t, CheckFormat("yaml"), `list: unknown --format "yaml" (known: table, json)`)
}

// fakePlugins describes one plugin and fails to describe another.
type fakePlugins struct{}

func (fakePlugins) Names() []string { return []string{"good", "broken"} }

func (fakePlugins) Describe(_ context.Context, name string) (pluginapi.Description, error) {
	if name == "broken" {
		return pluginapi.Description{}, errors.New("exec: not found")
	}
	return pluginapi.Description{Name: "good", Version: "1.0", Tests: []pluginapi.TestInfo{{Name: "t", Description: "T",
		Params:  []pluginapi.Param{{Name: "n", Default: "8", Description: "size"}},
		Metrics: []pluginapi.MetricInfo{{Name: "bw", Unit: "GB/s", Better: result.BetterHigher, Record: true}}}}}, nil
}

// Every list in both formats, from real SKU files and a fake plugin host:
// the table rows and the JSON objects scripts read.
func TestWrite(t *testing.T) {
	cat, err := sku.LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	src := Sources{Catalog: func() (*sku.Catalog, error) { return cat, nil }, SKU: "h200", Plugins: fakePlugins{}, Launchers: []string{"local", "ssh"}}
	cases := []struct {
		what, format string
		// table: lines the output must hold; json: the objects' count and
		// a field of the first.
		lines []string
		n     int
		first string
	}{
		{what: "skus", format: "table", lines: []string{"h200  built-in  "}},
		{what: "skus", format: "json", n: 1, first: `"name":"h200"`},
		{what: "suites", format: "table", lines: []string{"h200  node  "}},
		{what: "suites", format: "json", n: len(cat.SKUs["h200"].SuiteNames()), first: `"sku":"h200"`},
		{what: "plugins", format: "table", lines: []string{"good    1.0  1 test", "broken  error: exec: not found"}},
		{what: "plugins", format: "json", n: 2, first: `"name":"good","version":"1.0","tests":1`},
		{what: "tests", format: "table", lines: []string{"good.t  T", "metrics: bw GB/s (higher, recorded)", "  n  size (default 8)"}},
		{what: "tests", format: "json", n: 2, first: `"test":"good.t","plugin":"good","plugin_version":"1.0","description":"T","params":[{"name":"n","default":"8","description":"size"}]`},
		{what: "launchers", format: "table", lines: []string{"local\nssh\n"}},
		{what: "launchers", format: "json", n: 2, first: `{"name":"local"}`},
	}
	for _, c := range cases {
		t.Run(c.what+" "+c.format, func(t *testing.T) {
			var b strings.Builder
			assert.NilError(t, Write(&b, c.what, c.format, src))
			if c.format == "table" {
				for _, l := range c.lines {
					assert.Assert(t, strings.Contains(b.String(), l), "no %q in\n%s", l, b.String())
				}
				return
			}
			var rows []json.RawMessage
			assert.NilError(t, json.Unmarshal([]byte(b.String()), &rows))
			assert.Equal(t, len(rows), c.n)
			var compact strings.Builder
			enc := json.NewEncoder(&compact)
			assert.NilError(t, enc.Encode(rows[0]))
			assert.Assert(t, strings.Contains(compact.String(), c.first), "%s", compact.String())
		})
	}
}

// What a list cannot show is an error, and JSON of nothing is [], not null.
func TestWriteErrors(t *testing.T) {
	cat, err := sku.LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	load := func() (*sku.Catalog, error) { return cat, nil }
	var b strings.Builder
	assert.ErrorContains(t, Write(&b, "nonsense", "table", Sources{}), `list "nonsense": want skus, suites, tests, plugins or launchers`)
	assert.ErrorContains(t, Write(&b, "skus", "table", Sources{Catalog: load, SKU: "no-such-sku"}), "no-such-sku")
	assert.ErrorContains(t, Write(&b, "suites", "json", Sources{Catalog: func() (*sku.Catalog, error) { return nil, errors.New("bad folder") }}), "bad folder")
	b.Reset()
	assert.NilError(t, Write(&b, "launchers", "json", Sources{}))
	assert.Equal(t, b.String(), "[]\n")
}
