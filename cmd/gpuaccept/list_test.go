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
