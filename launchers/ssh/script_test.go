package ssh

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// runScript runs a remote script with the local sh, as sshd's sh -s would.
func runScript(t testing.TB, script string) (string, error) {
	cmd := exec.Command("sh", "-s")
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Arguments and environment values reach the program byte for byte,
// whatever shell syntax they hold: nothing in them is run.
func TestStepScriptQuoting(t *testing.T) {
	wd := filepath.Join(t.TempDir(), "run", "x.y.step")
	canary := filepath.Join(t.TempDir(), "canary")
	for _, v := range []string{
		"plain", "", "a b", "it's", `"double"`, "$(touch " + canary + ")", "`touch " + canary + "`", "; touch " + canary,
		"$HOME", "a\nb", "tab\there", "\\", "'; touch " + canary + "; '", "*", "~", "--flag=x", "é ü 日本",
	} {
		t.Run(v, func(t *testing.T) {
			out, err := runScript(t, stepScript(wd, map[string]string{"V": v}, []string{"sh", "-c", `printf '[%s]' "$1" "$V"; printf '%s' "$PWD"`, "sh", v}))
			assert.NilError(t, err, out)
			assert.Equal(t, out, "["+v+"]["+v+"]"+wd)
			_, err = os.Stat(canary)
			assert.Assert(t, os.IsNotExist(err), "a value ran as a command")
		})
	}
	pg, err := os.ReadFile(filepath.Join(wd, pgidFile))
	assert.NilError(t, err)
	assert.Assert(t, strings.TrimSpace(string(pg)) != "", "process group recorded")
}

func FuzzStepScriptQuoting(f *testing.F) {
	f.Add("$(id)", "a'b")
	f.Add("\n;\n", "`x`")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, arg, val string) {
		if strings.ContainsRune(arg+val, 0) {
			return // no argv or environment holds a NUL
		}
		out, err := runScript(t, stepScript(filepath.Join(dir, "wd"), map[string]string{"V": val}, []string{"sh", "-c", `printf '[%s]' "$1" "$V"`, "sh", arg}))
		if err != nil || out != "["+arg+"]["+val+"]" {
			t.Fatalf("arg %q val %q: got %q, %v", arg, val, out, err)
		}
	})
}

// The kill script stops a group that ignores SIGTERM, and whatever still
// works in the folder after leaving the group, then removes the folder.
func TestKillScript(t *testing.T) {
	base := t.TempDir()
	wd := filepath.Join(base, "gpuaccept-run", "x.y.hang")
	pids := filepath.Join(base, "pids")
	// A session of its own, as sshd gives each connection.
	cmd := exec.Command("setsid", "sh", "-s")
	cmd.Stdin = strings.NewReader(stepScript(wd, nil, []string{"sh", "-c",
		`trap '' TERM; sleep 300 & echo $! > ` + pids + `; setsid sleep 301 & echo $! >> ` + pids + `; echo $$ >> ` + pids + `; wait`}))
	assert.NilError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(pids)
		if len(strings.Fields(string(data))) == 3 {
			break
		}
		assert.Assert(t, time.Now().Before(deadline), "step did not start")
		time.Sleep(50 * time.Millisecond)
	}
	out, err := runScript(t, killScript(wd, 300*time.Millisecond, true))
	assert.NilError(t, err, out)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the step's shell still runs")
	}
	for _, p := range strings.Fields(read(t, pids)) {
		deadline := time.Now().Add(3 * time.Second)
		for {
			st, err := os.ReadFile("/proc/" + p + "/stat")
			if err != nil || strings.Contains(string(st), ") Z ") {
				break
			}
			assert.Assert(t, time.Now().Before(deadline), "pid %s still runs: %s", p, st)
			time.Sleep(50 * time.Millisecond)
		}
	}
	_, err = os.Stat(wd)
	assert.Assert(t, os.IsNotExist(err), "folder left: %v", err)
}

func TestEnvNameRejected(t *testing.T) {
	l, err := New(Config{}, []string{"n1"}, nil)
	assert.NilError(t, err)
	s := plan.Step{Name: "a", Argv: []string{"true"}, Procs: 1, ProcsPerNode: 1, Env: map[string]string{"X;touch /tmp/p": "1"}}
	_, err = l.Commands(launch.Request{Test: "x.y", Plan: plan.Plan{Steps: []plan.Step{s}}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}}})
	assert.ErrorContains(t, err, `environment variable name "X;touch /tmp/p" is not a shell name`)
}
