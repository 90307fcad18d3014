package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

// A rank that hangs on one node (the stand-in stops itself after the
// 256 MiB row, as a rank stopped with SIGSTOP on a GPU machine) under the
// local launcher: when the test's time runs out the evidence step lists
// the test's processes before anything is stopped, the verdict is a FAIL
// naming the node and the stopped process, the evidence is in raw/ and
// covered by the manifest, and nothing is left running.
func TestRunHangNamesTheNode(t *testing.T) {
	bin := standin(t)
	rec, _ := filepath.Abs(healthy)
	t.Setenv("STANDIN_RECORDINGS", rec)
	t.Setenv("STANDIN_HANG_HOST", "localhost")
	t.Setenv("STANDIN_HANG_AFTER", "268435456")
	out := t.TempDir()
	code, stdout, errs := cli(t, "--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--test", "nccl.all_reduce",
		"--param", "bindir="+bin, "--param", "evidence=true", "--out", out, "--timeout", "3s")
	assert.Equal(t, code, 1, stdout+errs)
	// The limit, not the limit and the evidence's time; the stop said once.
	assert.Assert(t, strings.Contains(stdout, "stopped: timed out after 3s (limit 3s); evidence collected in "), stdout)
	assert.Equal(t, strings.Count(stdout, "process group killed"), 1, stdout)
	var res struct {
		Tests []struct {
			Status, Message string
			Checks          []struct {
				Name, Host, Message string
				OK                  bool
			}
		}
	}
	assert.NilError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, layout.Results))), &res))
	assert.Equal(t, len(res.Tests), 1)
	tt := res.Tests[0]
	assert.Equal(t, tt.Status, "fail", tt.Message)
	assert.Assert(t, strings.Contains(tt.Message, "timed out after 256 MiB (the largest size measured)"), tt.Message)
	assert.Assert(t, strings.Contains(tt.Message, "all_reduce_perf"), tt.Message)
	assert.Assert(t, strings.Contains(tt.Message, "stopped (state T)"), tt.Message)
	var suspect string
	for _, c := range tt.Checks {
		if c.Name == "hang.suspect" && !c.OK {
			suspect = c.Host
		}
	}
	assert.Assert(t, suspect != "", "no failed hang.suspect check naming a host: %+v", tt.Checks)
	ev := filepath.Join(out, "raw", "nccl.all_reduce", "evidence.0.log")
	assert.Assert(t, strings.Contains(readFile(t, ev), "gpuaccept-evidence|"), readFile(t, ev))
	assert.Assert(t, strings.Contains(readFile(t, filepath.Join(out, layout.Manifest)), "raw/nccl.all_reduce/evidence.0.log"))
	assert.DeepEqual(t, testenv.ProcessesWith(bin), []string(nil))
}

// The attacker trial's run: beside the hung test a local user's process
// that carries GPUACCEPT_HOSTS=localhost (all the local launcher sets),
// stopped, with terminal escapes and a forged procs line in its words, and
// one of another uid (as root); a rank that prints evidence lines naming
// node7, node8 and a host with an escape. The verdict still names this
// node for the test's own stopped rank, none of theirs, and keeps the
// rows measured.
func TestRunHangHostile(t *testing.T) {
	bin := standin(t)
	recs := t.TempDir()
	src, _ := filepath.Abs(filepath.Join(healthy, "nccl.all_reduce"))
	dst := filepath.Join(recs, "nccl.all_reduce")
	assert.NilError(t, os.MkdirAll(filepath.Join(dst, "all_reduce.files"), 0o755))
	log := readFile(t, filepath.Join(src, "all_reduce.log"))
	forged := "gpuaccept-evidence|node7|procs|4242 T - 0 /usr/bin/all_reduce_perf\n" +
		"gpuaccept-evidence|node8|xid|NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n" +
		"gpuaccept-evidence|node7\x1b]0;x\a|procs|4242 T - 0 /usr/bin/all_reduce_perf\n"
	assert.NilError(t, os.WriteFile(filepath.Join(dst, "all_reduce.log"), []byte(strings.Replace(log, "# Using devices\n", forged+"# Using devices\n", 1)), 0o644))
	if js, err := os.ReadFile(filepath.Join(src, "all_reduce.files", "all_reduce.json")); err == nil {
		assert.NilError(t, os.WriteFile(filepath.Join(dst, "all_reduce.files", "all_reduce.json"), js, 0o644))
	}
	var foreign []int
	start := func(name string, c *exec.Cmd) {
		c.Env = append(os.Environ(), "GPUACCEPT_HOSTS=localhost")
		assert.NilError(t, c.Start(), name)
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		foreign = append(foreign, c.Process.Pid)
	}
	// mal.sh: stops itself, so that it would read as a hung rank.
	mal := []string{"-c", `exec -a "$0" bash -c 'kill -STOP $$; sleep 1000' x --token=argvsecret222 "$1"`, "/opt/evil\x1b[2J\x1b]0;owned\a", "\n12345 D nvidia_wait 3 forged rank line"}
	start("same uid", exec.Command("bash", mal...))
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("setpriv"); err == nil {
			start("another uid", exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "bash"}, mal...)...))
		}
	}
	t.Setenv("STANDIN_RECORDINGS", recs)
	t.Setenv("STANDIN_HANG_HOST", "localhost")
	t.Setenv("STANDIN_HANG_AFTER", "268435456")
	out := t.TempDir()
	code, stdout, errs := cli(t, "--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--test", "nccl.all_reduce",
		"--param", "bindir="+bin, "--param", "evidence=true", "--out", out, "--timeout", "3s")
	assert.Equal(t, code, 1, stdout+errs)
	var res struct {
		Tests []struct {
			Status, Message string
			Metrics         []json.RawMessage
			Checks          []struct {
				Name, Host, Message string
				OK                  bool
			}
		}
	}
	assert.NilError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, layout.Results))), &res))
	assert.Equal(t, len(res.Tests), 1)
	tt := res.Tests[0]
	assert.Equal(t, tt.Status, "fail", tt.Message)
	assert.Assert(t, len(tt.Metrics) > 0, "the rows measured were dropped")
	hn, _ := os.Hostname()
	var suspects []string
	for _, c := range tt.Checks {
		if c.Name == "hang.suspect" && !c.OK {
			suspects = append(suspects, c.Host)
		}
	}
	assert.DeepEqual(t, suspects, []string{hn})
	for _, bad := range []string{"node7", "node8", "evil", "owned", "argvsecret", "12345", "\x1b"} {
		assert.Assert(t, !strings.Contains(tt.Message, bad), "%q in %s", bad, tt.Message)
	}
	ev := readFile(t, filepath.Join(out, "raw", "nccl.all_reduce", "evidence.0.log"))
	for _, pid := range foreign {
		assert.Assert(t, !strings.Contains(ev, "|procs|"+strconv.Itoa(pid)+" "), "pid %d listed:\n%s", pid, ev)
		assert.Assert(t, !strings.Contains(ev, "== "+strconv.Itoa(pid)+"\n"), "pid %d traced:\n%s", pid, ev)
	}
}
