package main

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
)

// The docs that list the built-in plugins list the registry's
// (pluginapi.Builtins: the plugins main.go imports register themselves),
// no more and no fewer: a plugin added or dropped updates them, and the
// failure says what to write.
func TestBuiltinPluginsListedInDocs(t *testing.T) {
	want := pluginapi.Builtins()
	for _, c := range []struct {
		file string
		list *regexp.Regexp // the sentence that lists them
	}{
		{"../../README.md", regexp.MustCompile("The built-in plugins \\(([^;]*);")},
		{"../../docs/ARCHITECTURE.md", regexp.MustCompile("one package per tool family \\(([^;]*);")},
		{"../../framework/pluginapi/CONTRACT.md", regexp.MustCompile("A built-in plugin \\(([^:]*):")},
	} {
		data, err := os.ReadFile(c.file)
		assert.NilError(t, err)
		m := c.list.FindStringSubmatch(strings.Join(strings.Fields(string(data)), " "))
		assert.Assert(t, m != nil, "%s: no list of the built-in plugins (%s)", c.file, c.list)
		var got []string
		for _, n := range regexp.MustCompile("`([a-z0-9_-]+)`").FindAllStringSubmatch(m[1], -1) {
			got = append(got, n[1])
		}
		sort.Strings(got)
		assert.DeepEqual(t, got, want)
	}
}
