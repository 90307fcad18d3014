package textdiag

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// The lines are real output lines (testdata/README.md of nccltests names
// their sources) under the labels each wrapper prints.
func TestPrefixLen(t *testing.T) {
	const row = "  4294967296    1073741824     float     sum      -1    12484   344.03  344.03      0"
	tests := []struct {
		name, label, rest string
	}{
		{"none", "", row},
		{"none on a comment", "", "# Out of bounds values : 0 OK"},
		{"mpirun --tag-output", "[1,0]<stdout>:", "#  Rank  0 Group  0 Pid   1550 on         vm device  0 [0000:00:06] NVIDIA H200"},
		{"mpirun --tag-output stderr", "[1,12]<stderr>:", "vm: Test NCCL failure common.cu:1550"},
		{"PRRTE --tag-output", "[prterun-vm-1550@1,3]<stdout>: ", row},
		{"srun --label", "0: ", row},
		{"srun --label padded", " 7: ", row},
		{"MPICH -prepend-rank", "[0] ", row},
		{"torchrun", "[default0]:", "Round 1 duration(us) [1, 2]"},
		{"kubectl --prefix", "[pod/nccl-test-worker-0/mpi-worker] ", row},
		{"kubectl --timestamps nano", "2024-05-01T12:00:00.123456789Z ", row},
		{"kubectl --timestamps whole second", "2024-05-01T12:00:00Z ", "# Avg bus bandwidth    : 103.407"},
		{"RFC 3339 offset", "2024-05-01T12:00:00.5+02:00 ", row},
		{"kubectl --prefix --timestamps", "[pod/p/c] 2024-05-01T12:00:00.123456789Z ", row},
		{"kubectl over mpirun", "2024-05-01T12:00:00.123456789Z [1,0]<stdout>:", "# nThread 1 nGpus 1"},
		{"kubectl --prefix over srun", "[pod/p/c] 12: ", row},
		// SkyPilot's console (skypilot-org/skypilot@088eebc2
		// examples/gcp_gpu_direct_tcpx/README.md): Ray's prefix of each
		// node's task, mpirun's label after it.
		{"SkyPilot head", "(head, rank=0, pid=3808) ", "All nodes: 10.100.9.12:8,10.100.10.12:8"},
		{"SkyPilot worker on another node", "(worker1, rank=1, pid=2769, ip=10.100.10.12) ", "Worker nodes"},
		{"SkyPilot over mpirun", "(head, rank=0, pid=3808) [1,0]<stdout>:", "#  Rank  8 Group  0 Pid   4926 on nc-d87e1263-worker1 device  0 [0000:8f:00] NVIDIA H200"},
		// The same head line as Ray prints it to a terminal: its colour
		// codes (Style.DIM, Fore.CYAN, Style.RESET_ALL) around the label.
		{"Ray colour codes", "\x1b[2m\x1b[36m(head, rank=0, pid=3808)\x1b[0m ", "All nodes: 10.100.9.12:8,10.100.10.12:8"},
		{"Ray without a task name", "(pid=3808, ip=10.100.10.12) ", row},
		{"kubectl --timestamps over SkyPilot", "2024-05-01T12:00:00Z (head, rank=0, pid=3808) [1,0]<stdout>:", "# Avg bus bandwidth    : 122.073"},
		// What must stay the program's own text.
		{"NCCL's own timestamp", "", "[2026-11-30 06:20:33] vm:1223:1223 [0] bootstrap.cc:114 NCCL WARN Bootstrap : no socket interface found"},
		{"NCCL INFO host prefix", "", "vm:1199:1211 [1] NCCL INFO comm 0x55ea629b9a70 rank 1 nRanks 2"},
		{"a time of day", "", "06:20:11 something"},
		{"a date without T", "", "2026-11-30 06:20:11"},
		{"bracketed word with a blank", "", "[Gloo] Rank 0 is connected to 1 peer ranks"},
		{"pod with no container", "", "[pod/p] x"},
		{"tag-output without rank", "", "[1,]<stdout>:x"},
		{"empty brackets", "", "[] x"},
		{"blanks only", "", "   "},
		{"CRLF kept in the text", "0: ", "# Avg bus bandwidth    : 103.407 \r"},
		{"units line without its '#'", "", "(B)    (elements)             (us)  (GB/s)  (GB/s)"},
		{"parentheses without pid=", "", "(raylet) [2024-05-01 12:00:00] x"},
		{"pid= without digits", "", "(head, rank=0, pid=) x"},
		{"ip= without an address", "", "(head, rank=0, pid=3808, ip=) x"},
		{"no blank after the label", "", "(head, rank=0, pid=3808)x"},
		{"pid= inside a word", "", "(head, rank=0,xpid=3808) x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			line := tc.label + tc.rest
			assert.Equal(t, PrefixLen(line), len(tc.label), "%q", line)
			assert.Equal(t, PrefixLen([]byte(line)), len(tc.label))
		})
	}
}

// A line of many labels is not stripped to its end: at most prefixMax.
func TestPrefixLenBounded(t *testing.T) {
	line := strings.Repeat("0: ", 100) + "x"
	assert.Equal(t, PrefixLen(line), 3*prefixMax)
}

// FuzzPrefixLen checks that PrefixLen never panics, stays within the line,
// reads strings and bytes alike, and that a label stands on its own: the
// line cut after its labels has the same labels.
func FuzzPrefixLen(f *testing.F) {
	for _, s := range []string{
		"[1,0]<stdout>:#  Rank  0", "0: # nThread", "[pod/a/b] 2024-05-01T12:00:00.123456789Z [1,0]<stderr>: x",
		"2024-05-01T12:00:00+02:00 y", "[0] 8 2 float", "[default0]:Round 1", "[prterun-h-1@1,0]<stdout>: z", "\r\n", "[",
		"(head, rank=0, pid=3808) [1,0]<stdout>:#", "(worker1, rank=1, pid=2769, ip=10.100.10.12) W", "\x1b[2m\x1b[36m(pid=1)\x1b[0m x", "(", "\x1b[",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		n := PrefixLen(line)
		if n < 0 || n > len(line) {
			t.Fatalf("PrefixLen %d of %d bytes", n, len(line))
		}
		if b := PrefixLen([]byte(line)); b != n {
			t.Fatalf("string %d, bytes %d", n, b)
		}
		if m := PrefixLen(line[:n]); m != n {
			t.Fatalf("labels %q give %d, the line %d", line[:n], m, n)
		}
	})
}
