package hang

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// fieldDir holds the real hangs (testdata/field/README.md has the format;
// the hang: key of each case.yaml is what this reader must make of it).
const fieldDir = "../../../testdata/field/hang"

// hangCase is a case.yaml's hang: key. A field left out is not checked.
type hangCase struct {
	TimedOutRanks []int  `yaml:"timed_out_ranks"`
	Op            string `yaml:"op"`
	Seq           int64  `yaml:"seq"`
	LastCompleted int64  `yaml:"last_completed"`
	TimeoutMS     int64  `yaml:"timeout_ms"`
	Warns         int    `yaml:"warns"`
	IBTimeouts    []struct {
		Host string `yaml:"host"`
		Peer string `yaml:"peer"`
	} `yaml:"ib_timeouts"`
	RAS *struct {
		Ranks    int    `yaml:"ranks"`
		Nodes    int    `yaml:"nodes"`
		Status   string `yaml:"status"`
		Errors   string `yaml:"errors"`
		Listed   []int  `yaml:"listed"`
		ListedAt int64  `yaml:"listed_at"`
		OthersAt int64  `yaml:"others_at"`
	} `yaml:"ras"`
	Stacks       int `yaml:"stacks"`
	InCollective int `yaml:"in_collective"`
	Outside      []struct {
		PID   string `yaml:"pid"`
		Frame string `yaml:"frame"`
	} `yaml:"outside"`
	// Suspect is the node Suspect must name, "none" for nil.
	Suspect string `yaml:"suspect"`
}

func readCase(t *testing.T, dir string) (hangCase, Evidence) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "case.yaml"))
	assert.NilError(t, err)
	var doc struct {
		Hang *hangCase `yaml:"hang"`
	}
	assert.NilError(t, yaml.Unmarshal(data, &doc), dir)
	assert.Assert(t, doc.Hang != nil, "%s: case.yaml has no hang: key", dir)
	ents, err := os.ReadDir(dir)
	assert.NilError(t, err)
	var all Evidence
	for _, en := range ents {
		if en.Name() == "case.yaml" || en.IsDir() {
			continue
		}
		f, err := os.Open(filepath.Join(dir, en.Name()))
		assert.NilError(t, err)
		e, err := Read(en.Name(), f)
		f.Close()
		assert.NilError(t, err)
		all = e // one file per case
	}
	return *doc.Hang, all
}

// TestFieldHang reads every real hang of testdata/field/hang and holds the
// reader to what a careful engineer reads from it.
func TestFieldHang(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(fieldDir, "*"))
	assert.NilError(t, err)
	assert.Assert(t, len(dirs) >= 8, "the corpus shrank: %v", dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			want, e := readCase(t, dir)
			if want.TimedOutRanks != nil {
				var got []int
				for _, w := range e.Waits {
					got = append(got, w.Rank)
				}
				sort.Ints(got)
				assert.DeepEqual(t, got, want.TimedOutRanks)
				for _, w := range e.Waits {
					if want.Op != "" {
						assert.Equal(t, w.Op, want.Op, "rank %d line %d", w.Rank, w.Line)
					}
					if want.Seq != 0 {
						assert.Equal(t, w.Seq, want.Seq)
					}
					if want.TimeoutMS != 0 {
						assert.Equal(t, w.TimeoutMS, want.TimeoutMS)
						assert.Assert(t, w.RanMS >= w.TimeoutMS, "ran %d ms, limit %d", w.RanMS, w.TimeoutMS)
					}
				}
			}
			if want.LastCompleted != 0 {
				assert.Assert(t, len(e.Progress) > 0, "no watchdog progress line read")
				for _, p := range e.Progress {
					assert.Equal(t, p.LastCompleted, want.LastCompleted)
					assert.Equal(t, p.Seq, want.Seq)
				}
			}
			if want.Warns != 0 {
				assert.Equal(t, e.Warns, want.Warns)
			}
			if want.IBTimeouts != nil {
				assert.Equal(t, len(e.IB), want.Warns)
				for _, ib := range e.IB {
					assert.Equal(t, ib.Host, want.IBTimeouts[0].Host)
					assert.Equal(t, ib.Peer, want.IBTimeouts[0].Peer)
				}
			}
			if w := want.RAS; w != nil {
				r := e.RAS
				assert.Assert(t, r != nil, "no RAS report read")
				assert.Equal(t, r.Ranks, w.Ranks)
				assert.Equal(t, r.Nodes, w.Nodes)
				assert.Equal(t, r.Status, w.Status)
				assert.Equal(t, r.Errors, w.Errors)
				var listed []int
				for _, l := range r.Listed {
					listed = append(listed, l.Rank)
				}
				assert.DeepEqual(t, listed, w.Listed)
				if w.ListedAt != 0 {
					assert.Equal(t, r.Op, want.Op)
					assert.Equal(t, r.Counts[w.ListedAt], len(w.Listed))
					assert.Equal(t, r.Counts[w.OthersAt], w.Ranks-len(w.Listed))
				}
			}
			if want.Stacks != 0 {
				in := 0
				var outside []Stack
				for _, s := range e.Stacks {
					if s.Collective != "" {
						in += len(s.Threads)
					} else {
						outside = append(outside, s)
					}
				}
				assert.Equal(t, e.threads(), want.Stacks)
				assert.Equal(t, in, want.InCollective)
				assert.Equal(t, len(outside), len(want.Outside))
				for i, o := range want.Outside {
					assert.DeepEqual(t, outside[i].Threads, []string{o.PID})
					assert.Equal(t, outside[i].Top, o.Frame)
				}
			}
			s := e.Suspect("")
			if want.Suspect == "none" {
				assert.Assert(t, s == nil, "suspect %+v", s)
			} else {
				assert.Assert(t, s != nil && s.Host == want.Suspect, "suspect %+v, want %s", s, want.Suspect)
			}
			assert.Assert(t, e.Summary() != "", "nothing summarised")
		})
	}
}

// TestSuspect holds the rules that name a node to the real reports they
// were written for, with the one change that makes each name one.
func TestSuspect(t *testing.T) {
	ras, err := os.ReadFile(filepath.Join(fieldDir, "nccl-1911-ras-mismatch-allgather", "ras.txt"))
	assert.NilError(t, err)
	for _, tc := range []struct {
		name, text, host string
		want             string // the suspect's host, "" for none
		reason           string
	}{
		// The real report: the listed ranks are ahead (641 of 640).
		{name: "ras listed ahead", text: string(ras)},
		// The same report had the two ranks been behind: they name their node.
		{name: "ras listed behind", text: strings.NewReplacer("operation 640", "operation 642").Replace(string(ras)), want: "10.137.190.124", reason: "ranks 12-13 (10.137.190.124) launched AllGather only up to operation 641"},
		// The driver's XID line, as health's tests give it, read on a node.
		{name: "xid", text: "[ 8123.4] NVRM: Xid (PCI:0000:00:06.0): 79, pid=1, GPU has fallen off the bus.\n", host: "node2", want: "node2", reason: "node2 GPU 0000:00:06.0 XID 79"},
		// The evidence step's procs lines of a node whose ranks were
		// stopped (the stand-in's and SIGSTOP's state): its ranks named.
		{name: "stopped ranks", text: "gpuaccept-evidence|node2|procs|5001 T do_signal_stop 9 all_reduce_perf -b 8\n" +
			"gpuaccept-evidence|node2|procs|5000 T do_signal_stop 8 all_reduce_perf -b 8\n" +
			"gpuaccept-evidence|node1|procs|4000 S futex_wait_queue 0 all_reduce_perf -b 8\n",
			want: "node2", reason: "ranks 8-9 (node2) never went on: node2 pid 5001 (all_reduce_perf -b 8) stopped (state T), and 1 more of its processes"},
		{name: "xid without a host", text: "[ 8123.4] NVRM: Xid (PCI:0000:00:06.0): 79, pid=1, GPU has fallen off the bus.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Read("x", strings.NewReader(tc.text))
			assert.NilError(t, err)
			s := e.Suspect(tc.host)
			if tc.want == "" {
				assert.Assert(t, s == nil, "%+v", s)
				return
			}
			assert.Assert(t, s != nil)
			assert.Equal(t, s.Host, tc.want)
			assert.Assert(t, strings.Contains(s.Reason, tc.reason), s.Reason)
		})
	}
}

func TestRanges(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{{nil, ""}, {[]int{3}, "3"}, {[]int{8, 9, 10, 11, 12, 13, 14, 15}, "8-15"}, {[]int{0, 3, 4}, "0, 3-4"}} {
		assert.Equal(t, Ranges(tc.in), tc.want)
	}
}

// FuzzRead: no input panics the reader, and what it reads stays within
// the input's lines.
func FuzzRead(f *testing.F) {
	dirs, _ := filepath.Glob(filepath.Join(fieldDir, "*", "*"))
	for _, p := range dirs {
		if filepath.Base(p) == "case.yaml" {
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Read("fuzz", strings.NewReader(s))
		if err != nil {
			return
		}
		for _, w := range e.Waits {
			if w.Line < 1 || w.Line > e.Lines {
				t.Fatalf("wait on line %d of %d", w.Line, e.Lines)
			}
		}
		_ = e.Summary()
		_ = e.Suspect("h")
	})
}

// The evidence script, run for real beside a stopped process of the same
// test (same GPUACCEPT_HOSTS) and a running one, lists both with their
// states and names this host for the stopped one; a process of another
// test is not listed.
func TestScriptFindsAStoppedRank(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	hosts := "hangtest-" + strconv.Itoa(os.Getpid())
	start := func(hostsEnv string) *exec.Cmd {
		c := exec.Command("sleep", "60")
		c.Env = append(os.Environ(), plan.HostsEnv+"="+hostsEnv)
		assert.NilError(t, c.Start())
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c
	}
	stopped, running, other := start(hosts), start(hosts), start(hosts+"-other")
	assert.NilError(t, stopped.Process.Signal(syscall.SIGSTOP))
	// The kernel shows the stop once the signal is delivered.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", stopped.Process.Pid))
		if strings.Contains(string(b), ") T ") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	sh := exec.Command("/bin/sh", "-c", Script, "gpuaccept-evidence", "0")
	sh.Env = append(os.Environ(), plan.HostsEnv+"="+hosts)
	out, err := sh.CombinedOutput()
	assert.NilError(t, err, string(out))
	e, err := Read("evidence.0.log", strings.NewReader(string(out)))
	assert.NilError(t, err)
	states := map[int]string{}
	for _, p := range e.Procs {
		states[p.PID] = p.State
	}
	assert.Equal(t, states[stopped.Process.Pid], "T", "%s", out)
	assert.Equal(t, states[running.Process.Pid], "S", "%s", out)
	_, listed := states[other.Process.Pid]
	assert.Assert(t, !listed, "a process of another test listed:\n%s", out)
	hn, _ := os.Hostname()
	s := e.Suspects("")
	assert.Equal(t, len(s), 1, "%+v", s)
	assert.Equal(t, s[0].Host, hn)
	assert.Assert(t, strings.Contains(s[0].Reason, fmt.Sprintf("pid %d (sleep 60) stopped (state T)", stopped.Process.Pid)), s[0].Reason)
}

// A RAS report the evidence step carries (its ras section) is read as the
// report itself: the prefix is the evidence step's, the lines NCCL's.
func TestEvidenceCarriesRAS(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(fieldDir, "nccl-1911-ras-mismatch-allgather", "ras.txt"))
	assert.NilError(t, err)
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		b.WriteString(EvidencePrefix + "node0|ras|" + l + "\n")
	}
	e, err := Read("evidence.0.log", strings.NewReader(b.String()))
	assert.NilError(t, err)
	assert.Assert(t, e.RAS != nil)
	assert.Equal(t, e.RAS.Ranks, 32)
	assert.Equal(t, e.RAS.Errors, "MISMATCH")
	assert.Equal(t, len(e.RAS.Listed), 2)
	assert.Equal(t, e.RAS.Counts[640], 30)
}
