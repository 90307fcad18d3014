package proc

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// A run whose steps are held less than fully says so, naming what is
// missing and what can then escape; a full hold says nothing.
func TestWeakerContainment(t *testing.T) {
	noNs := "no pid namespace (pid namespace: fork/exec /proc/self/exe: operation not permitted)"
	for _, c := range []struct {
		name  string
		s     *session
		wants []string
	}{
		{"pid namespace", &session{ns: nsPid, cgMode: modeV2}, nil},
		{"user namespace, no cgroup", &session{ns: nsUser, cgMode: modeNone, cgWhy: "no cgroup: none asked for"}, nil},
		{"no namespace, a cgroup", &session{ns: nsOff, nsWhy: noNs, cgMode: modeV2},
			[]string{"weaker containment", "no pid namespace", "CAP_SYS_ADMIN", "root cgroup", "setsid", "kill -9", "clean --local", "framework/proc/README.md"}},
		{"neither", &session{ns: nsOff, nsWhy: noNs, cgMode: modeNone, cgWhy: "no cgroup (v2: read-only file system)"},
			[]string{"weaker containment", "no pid namespace", "no cgroup (v2: read-only file system)", "setsid", "kill -9", "clean --local"}},
		{"namespace turned off", &session{ns: nsOff, nsWhy: "no pid namespace: none asked for (GPUACCEPT_PIDNS=off)", cgMode: modeV2},
			[]string{"GPUACCEPT_PIDNS=off"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.s.weaker()
			if c.wants == nil {
				assert.Equal(t, got, "")
				return
			}
			for _, w := range c.wants {
				assert.Assert(t, strings.Contains(got, w), "%q not in %q", w, got)
			}
		})
	}
}
