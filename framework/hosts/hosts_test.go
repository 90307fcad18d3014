package hosts

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestParseFile(t *testing.T) {
	data := []byte(`# Open MPI form, as Volcano writes /etc/volcano/mpiworker.host
node-1 slots=8
node-2 slots=8 max_slots=8   # trailing comment

# MPICH form and bare names
node-3:8
node-4.cluster.local
a4-vm-1 port=222 slots=4
`)
	got, err := ParseFile(data, "hosts.txt")
	assert.NilError(t, err)
	assert.DeepEqual(t, got, []Host{{"node-1", 8}, {"node-2", 8}, {"node-3", 8}, {"node-4.cluster.local", 0}, {"a4-vm-1", 4}})
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"node1 slots=eight\n", "hosts.txt line 1: slot count \"eight\" is not a number"},
		{"ok\nnode;reboot\n", "hosts.txt line 2: host \"node;reboot\" is not a host name"},
		{"$(id) slots=1\n", "host \"$(id)\" is not a host name"},
		{"node1 cpus=8\n", `hosts.txt line 1: "node1 cpus=8" is not one of host, host:N, host slots=N`},
		{"-oProxyCommand=x\n", `host "-oProxyCommand=x" is not a host name`},
	} {
		_, err := ParseFile([]byte(c.in), "hosts.txt")
		assert.ErrorContains(t, err, c.want)
	}
	_, err := ParseList("node1,node2:0")
	assert.ErrorContains(t, err, `--hosts: host "node2:0": slot count "0" must be a positive number`)
	got, err := ParseList("node1:8, node2:8")
	assert.NilError(t, err)
	assert.DeepEqual(t, Names(got), []string{"node1", "node2"})
}

func FuzzParseFile(f *testing.F) {
	f.Add([]byte("node-1 slots=8\nnode-2:8\n# c\n"))
	f.Add([]byte("x slots=99999999999999999999\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		hs, err := ParseFile(data, "f")
		if err != nil {
			return
		}
		for _, h := range hs {
			if !Valid(h.Name) || h.Slots < 0 {
				t.Fatalf("accepted %+v", h)
			}
		}
	})
}
