package main

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			listTests(&b, c.d)
			assert.Equal(t, b.String(), c.want)
		})
	}
}

// The built-in catalog (issue 30): `list skus` shows every data-centre SKU
// sold today and every seed SKU, each with a node and a multinode suite,
// and `list suites` shows health.node in each SKU's node suite, so
// `--suite node` runs node health first on any of them.
func TestListSkusCatalog(t *testing.T) {
	want := []string{
		"a100-40gb", "a100-80gb", "h100", "h100-nvl", "h100-pcie", "h200", "h200-nvl",
		"b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi350x", "mi355x",
		"b200-a4", "gb200-a4x", "a100-ndmv4", "volcengine-hpcpni",
	}
	var out, errb strings.Builder
	code, err := cmdList([]string{"skus"}, &out, &errb)
	assert.NilError(t, err)
	assert.Equal(t, code, exitOK)
	skus := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Fields(l)
		i := strings.Index(l, "suites: ")
		assert.Assert(t, len(f) > 0 && i >= 0, "line without suites: %q", l)
		skus[f[0]] = l[i+len("suites: "):]
	}
	out.Reset()
	code, err = cmdList([]string{"suites"}, &out, &errb)
	assert.NilError(t, err)
	assert.Equal(t, code, exitOK)
	suiteTests := map[string]string{} // "sku suite" -> its tests
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Fields(l)
		assert.Assert(t, len(f) >= 3, "list suites line %q", l)
		suiteTests[f[0]+" "+f[1]] = " " + strings.Join(f[2:], " ") + " "
	}
	for _, name := range want {
		t.Run(name, func(t *testing.T) {
			suites, ok := skus[name]
			assert.Assert(t, ok, "list skus does not show %s:\n%s", name, out.String())
			for _, s := range []string{"node", "multinode"} {
				assert.Assert(t, strings.Contains(", "+suites+",", ", "+s+","), "%s has no %s suite (suites: %s)", name, s, suites)
			}
			node := suiteTests[name+" node"]
			assert.Assert(t, strings.Contains(node, " health.node "), "%s node suite has no health.node: %s", name, node)
			for _, tst := range []string{"gemm.matmul", "hbm.bandwidth", "hostlink.pcie", "hostlink.p2p"} {
				assert.Assert(t, strings.Contains(node, " "+tst+" "), "%s node suite has no %s: %s", name, tst, node)
			}
			coll := " nccl.all_reduce "
			if strings.HasPrefix(name, "mi") {
				coll = " rccl.all_reduce "
			}
			assert.Assert(t, strings.Contains(node, coll), "%s node suite has no%s: %s", name, coll, node)
		})
	}
}
