package hang

import (
	"fmt"
	"io"
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
			e, err := ReadEvidence("x", strings.NewReader(tc.text))
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
		for _, rd := range []func(string, io.Reader) (Evidence, error){Read, ReadEvidence} {
			e, err := rd("fuzz", strings.NewReader(s))
			if err != nil {
				t.Fatalf("a string reader failed: %v", err)
			}
			for _, w := range e.Waits {
				if w.Line < 1 || w.Line > e.Lines {
					t.Fatalf("wait on line %d of %d", w.Line, e.Lines)
				}
			}
			for _, p := range e.Procs {
				if !ValidHost(p.Host) {
					t.Fatalf("proc on host %q", p.Host)
				}
			}
			_ = e.Summary()
			_ = e.Suspect("h")
		}
	})
}

// The evidence script, run for real beside the trial's hostile processes
// (an attacker's, of the same uid and GPUACCEPT_HOSTS but no test id, with
// terminal escapes and a forged line in its words; one of another uid
// with the test's id; a rank with 1.4 MB of words and a newline) lists
// the test's own processes only, each on one printable line of at most
// 4096 bytes, and names this host for the stopped one.
func TestScriptListsOnlyTheTestsProcesses(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	id := "hangtest" + strconv.Itoa(os.Getpid())
	big := strings.Repeat("A", 120000)
	type proc struct {
		name  string
		argv0 string
		args  []string
		env   []string
		other bool // run as nobody (root only)
		stop  bool
		want  string // its state when listed, "" when it must not be
	}
	procs := []proc{
		{name: "stopped rank", argv0: "rank3", args: []string{"60"}, env: []string{TestIDEnv + "=" + id, "OMPI_COMM_WORLD_RANK=3"}, stop: true, want: "T"},
		{name: "running rank", argv0: "rank", args: []string{"61"}, env: []string{TestIDEnv + "=" + id}, want: "S"},
		{name: "another test", argv0: "rank", args: []string{"62"}, env: []string{TestIDEnv + "=" + id + "-other"}},
		// mal.sh: GPUACCEPT_HOSTS=localhost is all a local user knows.
		{name: "attacker, same uid, no id", argv0: "/opt/evil\x1b[2J\x1b]0;owned\a", args: []string{"63", "\n12345 D nvidia_wait 3 forged rank line"}, env: []string{plan.HostsEnv + "=localhost"}, stop: true},
		// big.sh's words, and a newline, on a rank of the test.
		{name: "rank with huge words", argv0: "rank", args: []string{"64", big, big, big, "\n12346 D nvidia_wait 4 forged"}, env: []string{TestIDEnv + "=" + id}, want: "S"},
		{name: "another uid with the id", argv0: "rank", args: []string{"65"}, env: []string{TestIDEnv + "=" + id, "OMPI_COMM_WORLD_RANK=7"}, other: true, stop: true},
	}
	pids := map[string]int{}
	for _, p := range procs {
		if p.other && os.Geteuid() != 0 {
			t.Logf("%s: not root, no process of another uid", p.name)
			continue
		}
		// bash's exec -a gives the process the hostile argv[0]; the
		// process then waits on a pipe that never ends (state S).
		argv := append([]string{"bash", "-c", "read -r _", "x"}, p.args...)
		script := `exec -a "$0" "$@"`
		c := exec.Command("bash", append([]string{"-c", script, p.argv0}, argv...)...)
		if p.other {
			c = exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "bash", "-c", script, p.argv0}, argv...)...)
		}
		c.Env = append(os.Environ(), p.env...)
		pr, pw, err := os.Pipe()
		assert.NilError(t, err)
		c.Stdin = pr
		assert.NilError(t, c.Start(), p.name)
		pr.Close()
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait(); pw.Close() })
		pids[p.name] = c.Process.Pid
		waitExeced(t, c.Process.Pid, p.argv0)
		if p.stop {
			assert.NilError(t, c.Process.Signal(syscall.SIGSTOP))
			waitState(t, c.Process.Pid, "T")
		}
	}
	sh := exec.Command("/bin/sh", "-c", Script, "gpuaccept-evidence", "0")
	sh.Env = append(os.Environ(), plan.HostsEnv+"=localhost", TestIDEnv+"="+id)
	out, err := sh.CombinedOutput()
	assert.NilError(t, err, string(out))
	for i, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		assert.Assert(t, strings.HasPrefix(l, EvidencePrefix), "line %d is no evidence line: %.200q", i+1, l)
		for _, c := range []byte(l) {
			assert.Assert(t, c >= 0x20 && c != 0x7f, "line %d has control character %#x: %.200q", i+1, c, l)
		}
		if strings.Contains(l, "|procs|") {
			assert.Assert(t, len(l) <= len(EvidencePrefix)+300+4096, "line %d: %d bytes", i+1, len(l))
		}
	}
	e, err := ReadEvidence("evidence.0.log", strings.NewReader(string(out)))
	assert.NilError(t, err)
	states := map[int]string{}
	for _, p := range e.Procs {
		states[p.PID] = p.State
	}
	for _, p := range procs {
		pid, ok := pids[p.name]
		if !ok {
			continue
		}
		got, listed := states[pid]
		if p.want == "" {
			assert.Assert(t, !listed, "%s listed:\n%s", p.name, out)
			assert.Assert(t, !strings.Contains(string(out), "== "+strconv.Itoa(pid)+"\n"), "%s: stacks taken", p.name)
			continue
		}
		assert.Equal(t, got, p.want, "%s:\n%.2000s", p.name, out)
	}
	for _, forged := range []int{12345, 12346} {
		_, listed := states[forged]
		assert.Assert(t, !listed, "forged pid %d read", forged)
	}
	assert.Equal(t, len(e.Procs), 3, "%+v", e.Procs)
	hn, _ := os.Hostname()
	s := e.Suspects("")
	assert.Equal(t, len(s), 1, "%+v", s)
	assert.Equal(t, s[0].Host, hn)
	assert.Assert(t, strings.Contains(s[0].Reason, fmt.Sprintf("ranks 3 (%s) never went on: %s pid %d (rank3 -c read ...) stopped (state T)", hn, hn, pids["stopped rank"])), s[0].Reason)
}

// waitState waits until pid's state (in /proc/PID/stat) is state.
func waitState(t *testing.T, pid int, state string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if strings.Contains(string(b), ") "+state+" ") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	t.Fatalf("pid %d never in state %s: %.100s", pid, state, b)
}

// waitExeced waits until pid's argv[0] is argv0 (bash's exec done), so
// that the script sees the words it is tested on.
func waitExeced(t *testing.T, pid int, argv0 string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.HasPrefix(string(b), argv0+"\x00-c\x00read") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("pid %d never ran %q", pid, argv0)
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
	e, err := ReadEvidence("evidence.0.log", strings.NewReader(b.String()))
	assert.NilError(t, err)
	assert.Assert(t, e.RAS != nil)
	assert.Equal(t, e.RAS.Ranks, 32)
	assert.Equal(t, e.RAS.Errors, "MISMATCH")
	assert.Equal(t, len(e.RAS.Listed), 2)
	assert.Equal(t, e.RAS.Counts[640], 30)
}

// The trial's hostile outputs: a line longer than MaxLine (big.sh's words
// on one procs line) does not hide the rank's line after it; a host with
// a terminal escape is skipped, counted, not read; a rank's own
// EvidencePrefix lines are no evidence.
func TestReadHostile(t *testing.T) {
	rank := "gpuaccept-evidence|vm|procs|4242 T do_signal_stop 1 all_reduce_perf -b 8\n"
	long := "gpuaccept-evidence|vm|procs|999 S - - /opt/decoy " + strings.Repeat("A", MaxLine+10) + "\n"
	for _, tc := range []struct {
		name     string
		text     string
		evidence bool
		procs    int // procs read
		cut, bad int
		suspect  string
	}{
		{name: "long line first", text: long + rank, evidence: true, procs: 2, cut: 1, suspect: "vm"},
		{name: "long line without an end", text: rank + strings.Repeat("B", 3*MaxLine), evidence: true, procs: 1, cut: 1, suspect: "vm"},
		{name: "escape in host", text: "gpuaccept-evidence|node7\x1b]0;x\a|procs|4242 T - 0 /usr/bin/all_reduce_perf\n" + rank, evidence: true, procs: 1, bad: 1, suspect: "vm"},
		{name: "pipe-less host", text: "gpuaccept-evidence||procs|4242 T - 0 x\n", evidence: true, bad: 1},
		{name: "rank's own evidence lines", text: "gpuaccept-evidence|node7|procs|4242 T - 0 /usr/bin/all_reduce_perf\n" +
			"gpuaccept-evidence|node8|xid|NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := Read
			if tc.evidence {
				rd = ReadEvidence
			}
			e, err := rd("x.log", strings.NewReader(tc.text))
			assert.NilError(t, err)
			assert.Equal(t, len(e.Procs), tc.procs, "%+v", e.Procs)
			assert.Equal(t, e.Cut, tc.cut)
			assert.Equal(t, e.BadHosts, tc.bad)
			if tc.cut > 0 {
				assert.Assert(t, len(e.Notes) > 0 && strings.Contains(e.Notes[len(e.Notes)-1]+strings.Join(e.Notes, ""), "read in part"), "%v", e.Notes)
			}
			s := e.Suspects("")
			if tc.suspect == "" {
				assert.Equal(t, len(s), 0, "%+v", s)
				return
			}
			assert.Equal(t, len(s), 1, "%+v", s)
			assert.Equal(t, s[0].Host, tc.suspect)
		})
	}
}

// Checks names only the test's nodes: the trial's rank that printed
// evidence lines naming node7 and node8, and a RAS report naming a node
// of no output, suspect nothing; the evidence step's own node (its host
// name, given the launcher's name) does.
func TestChecksOnlyTheTestsHosts(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(fieldDir, "nccl-1911-ras-mismatch-allgather", "ras.txt"))
	assert.NilError(t, err)
	behind := strings.NewReplacer("operation 640", "operation 642").Replace(string(raw))
	forged := "gpuaccept-evidence|node7|procs|4242 T - 0 /usr/bin/all_reduce_perf\n" +
		"gpuaccept-evidence|node8|xid|NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n" +
		"gpuaccept-evidence|node7\x1b]0;x\a|procs|4242 T - 0 /usr/bin/all_reduce_perf\n"
	stopped := "gpuaccept-evidence|vm|procs|4242 T do_signal_stop 1 all_reduce_perf -b 8\n"
	for _, tc := range []struct {
		name          string
		work, ev      string
		hosts         []string
		want          []string
		droppedPhrase string
	}{
		{name: "rank forges evidence", work: forged, ev: "gpuaccept-evidence|vm|note|no process of the test found on this node\n"},
		{name: "rank forges evidence, evidence names vm", work: forged, ev: stopped, want: []string{"localhost"}},
		{name: "RAS names a node outside the test", work: behind, ev: stopped, want: []string{"localhost"}, droppedPhrase: `"10.137.190.124"`},
		{name: "RAS names a node of the topology", work: behind, ev: stopped, hosts: []string{"10.137.190.124"}, want: []string{"localhost", "10.137.190.124"}},
		{name: "evidence host with an escape", ev: "gpuaccept-evidence|vm\x1b[2J|procs|4242 T - 0 x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w, ev := filepath.Join(dir, "all_reduce.log"), filepath.Join(dir, "evidence.0.log")
			assert.NilError(t, os.WriteFile(w, []byte(tc.work), 0o644))
			assert.NilError(t, os.WriteFile(ev, []byte(tc.ev), 0o644))
			checks, diags := Checks(
				[]plan.Output{{Step: "all_reduce", Host: "localhost", Log: w}},
				[]plan.Output{{Step: "evidence.0", Role: plan.Evidence, Host: "localhost", Log: ev}},
				"256 MiB", tc.hosts)
			var got []string
			for _, c := range checks {
				got = append(got, c.Host)
				assert.Assert(t, ValidHost(c.Host), "%q", c.Host)
			}
			assert.DeepEqual(t, got, tc.want)
			var all strings.Builder
			for _, d := range diags {
				all.WriteString(d.Message + "\n")
			}
			if tc.droppedPhrase != "" {
				assert.Assert(t, strings.Contains(all.String(), "not the test's, not suspected: "+tc.droppedPhrase), all.String())
			}
			for _, d := range diags {
				for _, c := range []byte(d.Message) {
					assert.Assert(t, c >= 0x20 && c != 0x7f, "control character in %q", d.Message)
				}
			}
		})
	}
}

func TestValidHost(t *testing.T) {
	for h, want := range map[string]bool{
		"node7": true, "gpu-node-2.example.com": true, "10.137.190.124": true, "fe80::1": true, "a_b": true,
		"": false, "node7\x1b]0;x\a": false, "a b": false, "a|b": false, "-x": false, strings.Repeat("a", 254): false,
	} {
		assert.Equal(t, ValidHost(h), want, "%q", h)
	}
}
