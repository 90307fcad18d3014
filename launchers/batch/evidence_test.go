package batch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// background submits the script as a bash process group on this host, as
// a scheduler runs a batch job: Query says it ended once it exited,
// SignalEvidence sends the script SIGUSR1 (scancel --signal=USR1 --batch),
// Cancel kills its group (scancel).
type background struct {
	here
	mu        sync.Mutex
	done      map[string]chan struct{}
	signalled bool
}

func (b *background) Submit(_ context.Context, j Job, path string) (string, error) {
	out, err := os.Create(filepath.Join(j.Dir, OutputName))
	if err != nil {
		return "", err
	}
	cmd := exec.Command("bash", path)
	cmd.Dir, cmd.Stdout, cmd.Stderr = j.Dir, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	id := strconv.Itoa(cmd.Process.Pid)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); out.Close(); close(done) }()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		b.done = map[string]chan struct{}{}
	}
	b.done[id] = done
	return id, nil
}

func (b *background) Query(_ context.Context, id string) (State, error) {
	b.mu.Lock()
	done := b.done[id]
	b.mu.Unlock()
	select {
	case <-done:
		return State{ID: id, State: "COMPLETED", Ended: true}, nil
	default:
		return State{ID: id, State: "RUNNING"}, nil
	}
}

func (b *background) Cancel(_ context.Context, id string) error {
	pid, _ := strconv.Atoi(id)
	return syscall.Kill(-pid, syscall.SIGKILL)
}

func (b *background) SignalEvidence(_ context.Context, id string) error {
	b.mu.Lock()
	b.signalled = true
	b.mu.Unlock()
	pid, _ := strconv.Atoi(id)
	return syscall.Kill(pid, syscall.SIGUSR1)
}

// A submitted job whose test runs out of time is signalled first: its
// script runs the evidence step while the hung step still runs (the
// evidence sees it), then stops it as timed out and ends, before the job
// is cancelled. A job that ends in time runs no evidence.
func TestSubmittedJobCollectsEvidence(t *testing.T) {
	o := testOptions()
	o.Poll = 200 * time.Millisecond
	o.EvidenceWait = 30 * time.Second
	run := func(t *testing.T, timeout time.Duration, work string) ([]plan.Output, *background) {
		dir := filepath.Join(t.TempDir(), "raw")
		st, err := StagingDir(dir, ".batch")
		assert.NilError(t, err)
		steps := []plan.Step{sh("work", "", work),
			{Name: "evidence.0", Role: plan.Evidence, Argv: []string{"/bin/sh", "-c", "ps -o stat= -p $(cat ../work.pid)"}, Procs: 1, ProcsPerNode: 1}}
		req := launch.Request{Test: "x.hang", Plan: plan.Plan{Steps: steps}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}},
			Dir: dir, Timeout: timeout}
		b := &background{}
		outs, err := Launch(context.Background(), req, Job{Test: req.Test, Dir: st, Plan: req.Plan, Topology: req.Topology, Batch: true}, b, o)
		assert.NilError(t, err)
		return outs, b
	}
	t.Run("timed out", func(t *testing.T) {
		outs, b := run(t, 2*time.Second, "echo $$ >../work.pid; exec sleep 300")
		assert.Assert(t, b.signalled)
		assert.Assert(t, strings.HasPrefix(outs[0].LaunchError, "timed out after "), outs[0].LaunchError)
		assert.Equal(t, outs[1].LaunchError, "")
		assert.Equal(t, outs[1].ExitCode, 0)
		log, err := os.ReadFile(outs[1].Log)
		assert.NilError(t, err)
		// The hung step was alive (sleeping) when the evidence ran.
		assert.Assert(t, strings.HasPrefix(strings.TrimSpace(string(log)), "S"), "%q", log)
	})
	t.Run("in time", func(t *testing.T) {
		outs, b := run(t, time.Minute, "echo $$ >../work.pid")
		assert.Assert(t, !b.signalled)
		assert.Equal(t, outs[0].LaunchError, "")
		assert.Equal(t, outs[1].LaunchError, launch.EvidenceNotRun)
	})
}
