package version

import (
	"runtime/debug"
	"testing"

	"gotest.tools/v3/assert"
)

// The version set at build time wins, then the module's, then the VCS
// revision's first 12 characters; without any, "dev".
func TestOf(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}}
	cases := []struct {
		name string
		set  string
		bi   *debug.BuildInfo
		want string
	}{
		{"set", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}}, "v1.2.3"},
		{"module", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}, Settings: rev}, "v0.9.0"},
		{"devel with a revision", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev}, "dev-0123456789ab"},
		{"short revision", "", &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123"}}}, "dev"},
		{"no build info", "", nil, "dev"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, of(c.set, c.bi), c.want)
		})
	}
	assert.Equal(t, Of("x"), "x")
}
