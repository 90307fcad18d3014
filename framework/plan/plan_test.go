package plan

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
)

func TestHostRefs(t *testing.T) {
	for _, c := range []struct {
		word string
		i    int
		ok   bool
	}{{HostRef(0), 0, true}, {HostRef(12), 12, true}, {"@host@", 0, false}, {"@host-1@", 0, false}, {"@host01@", 0, false}, {"x@host0@", 0, false}, {"node0", 0, false}} {
		i, ok := HostRefIndex(c.word)
		assert.Equal(t, ok, c.ok, c.word)
		assert.Equal(t, i, c.i, c.word)
	}
	p := Plan{Steps: []Step{
		{Name: "server.0", Argv: []string{"ib_write_bw", "-d", "mlx5_0"}},
		{Name: "client.0", Argv: []string{"ib_write_bw", "-d", "mlx5_1", HostRef(0)}, Env: map[string]string{"MASTER_ADDR": HostRef(1), "X": "@host0@suffix"}},
	}}
	got, err := p.ResolveHostRefs(TopologyHosts(Topology{Scope: Scope{Nodes: 2, GPUsPerNode: 8}, Hosts: []string{"n1", "n2"}}))
	assert.NilError(t, err)
	assert.DeepEqual(t, got.Steps[1].Argv, []string{"ib_write_bw", "-d", "mlx5_1", "n1"})
	assert.DeepEqual(t, got.Steps[1].Env, map[string]string{"MASTER_ADDR": "n2", "X": "@host0@suffix"})
	assert.Equal(t, p.Steps[1].Argv[3], HostRef(0), "the plan resolved is a copy")
	_, err = p.ResolveHostRefs(TopologyHosts(Topology{Scope: Scope{Nodes: 1, GPUsPerNode: 8}, Hosts: []string{"n1"}}))
	assert.ErrorContains(t, err, "step client.0: host of node 1: topology 1x8 names 1 hosts")
}

func TestHostListRefs(t *testing.T) {
	for _, c := range []struct {
		word string
		n    int
		ok   bool
	}{{HostListRef(1), 1, true}, {HostListRef(16), 16, true}, {"@hostlist0@", 0, false}, {"@hostlist02@", 0, false}, {"@hostlist@", 0, false}, {"@hostlist2@x", 0, false}, {HostRef(2), 0, false}} {
		n, ok := HostListRefCount(c.word)
		assert.Equal(t, ok, c.ok, c.word)
		assert.Equal(t, n, c.n, c.word)
	}
	_, ok := HostRefIndex(HostListRef(2))
	assert.Assert(t, !ok, "a host list is no single host")

	p := Plan{Steps: []Step{
		{Name: "server.0", Argv: []string{"ib_write_bw"}},
		{Name: "client.0", Argv: []string{"ib_write_bw", HostListRef(2)}, Env: map[string]string{HostsEnv: "set by a plugin", "A": "b"}},
	}}
	cases := []struct {
		nodes int
		want  string
	}{{0, "n1"}, {1, "n1"}, {2, "n1,n2"}, {3, "n1,n2,n3"}}
	for _, c := range cases {
		got, err := p.WithHostsEnv(c.nodes).ResolveHostRefs(TopologyHosts(Topology{Scope: Scope{Nodes: 3, GPUsPerNode: 8}, Hosts: []string{"n1", "n2", "n3"}}))
		assert.NilError(t, err)
		for _, s := range got.Steps {
			assert.Equal(t, s.Env[HostsEnv], c.want, "step %s, %d nodes", s.Name, c.nodes)
		}
		assert.Equal(t, got.Steps[1].Env["A"], "b")
		assert.Equal(t, got.Steps[1].Argv[1], "n1,n2")
	}
	assert.Equal(t, p.Steps[1].Env[HostsEnv], "set by a plugin", "WithHostsEnv copies")
	assert.Assert(t, p.Steps[0].Env == nil)

	_, err := p.WithHostsEnv(2).ResolveHostRefs(TopologyHosts(Topology{Scope: Scope{Nodes: 1, GPUsPerNode: 8}, Hosts: []string{"n1"}}))
	assert.ErrorContains(t, err, "step server.0: host of node 1: topology 1x8 names 1 hosts")
}

// A step's Env names are written into shell scripts and command lines by
// every launcher: Validate (which the plugin host runs on every plan)
// refuses one a shell cannot export.
func TestValidateEnvNames(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"NCCL_DEBUG", true}, {"_x9", true}, {"a", true},
		{"$(id)", false}, {"A B", false}, {"1X", false}, {"X;reboot", false}, {"A=B", false}, {"", false}, {"A-B", false}, {"É", false},
	} {
		p := Plan{Steps: []Step{{Name: "s", Argv: []string{"x"}, Procs: 1, ProcsPerNode: 1, Env: map[string]string{c.name: "1"}}}}
		err := p.Validate()
		if c.ok {
			assert.NilError(t, err, c.name)
			assert.Assert(t, EnvName(c.name))
			continue
		}
		assert.Error(t, err, fmt.Sprintf("step s: environment variable name %q is not a shell name (letters, digits and _, not starting with a digit)", c.name))
		assert.Assert(t, !EnvName(c.name), c.name)
	}
}
