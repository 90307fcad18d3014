package hosts

import (
	"strings"
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
		{"admin:pw2Secret@h1\n", "hosts.txt line 1: a host entry with a user (USER[:PASSWORD]@HOST) is not supported"},
		{"h0\nroot@h1 slots=8\n", "hosts.txt line 2: a host entry with a user"},
	} {
		_, err := ParseFile([]byte(c.in), "hosts.txt")
		assert.ErrorContains(t, err, c.want)
		// The password of a USER:PASSWORD@HOST entry is never quoted back.
		assert.Assert(t, !strings.Contains(err.Error(), "pw2Secret"), err.Error())
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

// The hostfile forms in use, one per case: the file as people write it and
// the hosts it names.
func TestParseFileForms(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []Host
	}{
		{"open mpi, seed 004", "192.0.2.11 slots=8\n192.0.2.12 slots=8\n", []Host{{"192.0.2.11", 8}, {"192.0.2.12", 8}}},
		{"open mpi max-slots spelling", "n1 slots=4 max-slots=8\n", []Host{{"n1", 4}}},
		{"mpich with comments, as Hydra's README shows", "# This is a sample host file\ndonner:2     # The first 2 procs\nfoo:3\n", []Host{{"donner", 2}, {"foo", 3}}},
		{"plain names, CRLF and tabs", "gpu-node-1\r\n\tgpu-node-2 \r\n\r\n", []Host{{"gpu-node-1", 0}, {"gpu-node-2", 0}}},
		{"only comments", "# nothing yet\n\n   # still nothing\n", nil},
		{"volcano mpiworker.host (seed 000)", "nccl-allreduce-job1-mpiworker-0.nccl-allreduce-job1\nnccl-allreduce-job1-mpiworker-1.nccl-allreduce-job1\n",
			[]Host{{"nccl-allreduce-job1-mpiworker-0.nccl-allreduce-job1", 0}, {"nccl-allreduce-job1-mpiworker-1.nccl-allreduce-job1", 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseFile([]byte(c.in), "hosts")
			assert.NilError(t, err)
			assert.DeepEqual(t, got, c.want)
		})
	}
}

func TestValid(t *testing.T) {
	for s, want := range map[string]bool{
		"node1": true, "127.0.0.2": true, "a4-vm-1": true, "gpu_07.cluster.local": true,
		"": false, "-oProxyCommand=x": false, ".hidden": false, "a..b": false, "node1.": false,
		"node 1": false, "node;id": false, "$(id)": false, "`id`": false, "a|b": false, "::1": false, "n\n1": false,
		strings.Repeat("a", 254): false,
	} {
		assert.Equal(t, Valid(s), want, "%q", s)
	}
}

func FuzzParseList(f *testing.F) {
	f.Add("node1,node2:8")
	f.Add("127.0.0.1:8, 127.0.0.2:8")
	f.Add(",,:,")
	f.Fuzz(func(t *testing.T, s string) {
		hs, err := ParseList(s)
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
