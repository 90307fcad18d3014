package batch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// StagingDir is where the job of the test whose raw folder is dir writes:
// dir/name (RESULTS/raw/TEST/.slurm), absolute.
func StagingDir(dir, name string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("staging folder for %s: %w", dir, err)
	}
	return filepath.Join(abs, name), nil
}

// ending is how a job (or the script inside an allocation) ended.
type ending struct {
	// State is the job's final state (a job of its own); zero inside an
	// allocation.
	State State
	// Stopped says why gpuaccept stopped it (timeout, Ctrl-C, a failed
	// query); empty when it ended by itself.
	Stopped string
}

// Launch runs j through s: it renders the script into a fresh staging
// folder, submits it and follows the job to its end (j.Batch) or runs it
// here inside the allocation, collects every step's outputs into the
// test's raw folder, and removes the staging folder. A script that could
// not be submitted is kept (o.ScriptFile) and its error returned.
func Launch(ctx context.Context, req launch.Request, j Job, s Scheduler, o Options) ([]plan.Output, error) {
	script, cmds, err := Render(j, s, o)
	if err != nil {
		return nil, err
	}
	// A staging folder from an earlier attempt would mix outputs.
	if err := os.RemoveAll(j.Dir); err != nil {
		return nil, fmt.Errorf("clear staging folder %s: %w", j.Dir, err)
	}
	if _, err := launch.MkdirRaw(req, "."); err != nil {
		return nil, err
	}
	if err := os.Mkdir(j.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create staging folder: %w", err)
	}
	// The script holds the steps' environment, secrets included: only the
	// redacted copy outlives the run.
	defer os.RemoveAll(j.Dir)
	path := filepath.Join(j.Dir, ScriptName)
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		return nil, fmt.Errorf("write batch script: %w", err)
	}
	var end ending
	if j.Batch {
		end, err = submit(ctx, req, j, s, o, path)
	} else {
		end, err = runInside(ctx, req, j, s, o, path)
	}
	if err != nil {
		// The script that could not be submitted is kept for the user.
		if werr := writeRedacted(req, o.ScriptFile, strings.NewReader(script)); werr != nil {
			err = fmt.Errorf("%w (and: %v)", err, werr)
		}
		return nil, err
	}
	return collect(req, j, s, o, cmds, end, script)
}

// submit submits the script, follows the job to its end, and cancels it
// when the test times out, ctx is cancelled or following fails.
func submit(ctx context.Context, req launch.Request, j Job, s Scheduler, o Options, path string) (ending, error) {
	// Ctrl-C while the submit command runs must not leave a job submitted
	// whose id gpuaccept never learnt: it finishes (bounded), then ctx
	// counts.
	id, err := s.Submit(context.WithoutCancel(ctx), j, path)
	if err != nil {
		return ending{}, fmt.Errorf("submit batch job for %s: %w", req.Test, err)
	}
	st, why := Follow(ctx, s, id, req.Timeout, o)
	if sg, ok := s.(Signaller); ok && strings.HasPrefix(why, "timed out") && hasEvidence(j.Plan) && ctx.Err() == nil {
		st = awaitEvidence(ctx, s, sg, id, st, o)
	}
	if why != "" {
		st = Cancel(s, id, st, o)
	}
	return ending{State: st, Stopped: why}, nil
}

// hasEvidence says the plan has evidence steps.
func hasEvidence(p plan.Plan) bool {
	for _, s := range p.Steps {
		if s.Role == plan.Evidence {
			return true
		}
	}
	return false
}

// awaitEvidence signals job id's script that the test's time ran out and
// polls until the job ended (its evidence collected, its steps stopped),
// o.EvidenceWait passed, or ctx ended; it returns the last state seen.
func awaitEvidence(ctx context.Context, s Scheduler, sg Signaller, id string, last State, o Options) State {
	wait := or(o.EvidenceWait, DefaultEvidenceWait)
	ctx, stop := context.WithTimeout(ctx, wait)
	defer stop()
	if sg.SignalEvidence(ctx, id) != nil {
		return last
	}
	poll := or(o.Poll, DefaultPoll)
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(poll):
		}
		if st, err := s.Query(ctx, id); err == nil {
			last = st
			if st.Ended {
				return st
			}
		}
	}
	return last
}

// lostAfter is how many queries in a row may fail (a controller
// restarting) before the job counts as lost.
const lostAfter = 5

// Follow polls job id until it ends, the test's timeout (counted from the
// job's start, so time in the queue does not use it up) expires,
// o.PendingTimeout expires while it is queued, ctx is cancelled, or the
// scheduler stops knowing the job. It returns the last state seen and,
// when it gave up on the job, why (for the steps' errors: "timed out
// after 4s of running; job 12 cancelled with scancel"); the caller then
// cancels it.
func Follow(ctx context.Context, s Scheduler, id string, timeout time.Duration, o Options) (State, string) {
	poll := or(o.Poll, DefaultPoll)
	cancelled := "cancelled with " + o.CancelCommand
	submitted := time.Now()
	var started time.Time
	var last State
	unknown := 0
	for {
		st, err := s.Query(ctx, id)
		switch {
		case err == nil:
			unknown = 0
			last = st
			if st.Ended {
				return st, ""
			}
			if started.IsZero() && !st.Queued {
				started = time.Now()
			}
		case ctx.Err() == nil:
			unknown++
			if unknown >= lostAfter {
				return last, fmt.Sprintf("lost track of job %s: %v", id, err)
			}
		}
		if ctx.Err() != nil {
			return last, fmt.Sprintf("cancelled; job %s %s", id, cancelled)
		}
		if !started.IsZero() && timeout > 0 && time.Since(started) > timeout {
			return last, fmt.Sprintf("timed out after %s of running; job %s %s", time.Since(started).Round(time.Second), id, cancelled)
		}
		if started.IsZero() && o.PendingTimeout > 0 && time.Since(submitted) > o.PendingTimeout {
			return last, fmt.Sprintf("job %s still pending after %s (reason %s); %s", id, time.Since(submitted).Round(time.Second), last.Reason, cancelled)
		}
		select {
		case <-ctx.Done():
		case <-time.After(poll):
		}
	}
}

// Cancel cancels job id and waits (o.CancelWait) until the scheduler says
// it ended, so the outputs are complete and nothing runs on; it returns
// the last state seen (last when none).
func Cancel(s Scheduler, id string, last State, o Options) State {
	ctx, stop := context.WithTimeout(context.Background(), or(o.CancelWait, DefaultCancelWait))
	defer stop()
	_ = s.Cancel(ctx, id)
	for ctx.Err() == nil {
		st, err := s.Query(ctx, id)
		if err == nil {
			last = st
			if st.Ended {
				return st
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
		// Again: a job submitted a moment ago may have been queued in a
		// state the first cancel raced.
		_ = s.Cancel(ctx, id)
	}
	return last
}

// runInside runs the script with bash inside the current allocation, as
// its own process group, and stops it on timeout or ctx cancellation:
// SIGTERM (the scheduler's step starter passes it to the tasks), SIGKILL
// after o.KillGrace, then the scheduler's StepCanceller for the steps of
// this test still alive.
func runInside(ctx context.Context, req launch.Request, j Job, s Scheduler, o Options, path string) (ending, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	out, err := os.Create(filepath.Join(j.Dir, OutputName))
	if err != nil {
		return ending{}, fmt.Errorf("create job output: %w", err)
	}
	defer out.Close()
	cmd := exec.Command("bash", path)
	cmd.Dir = j.Dir
	cmd.Env = o.Environ
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Stdout, cmd.Stderr = out, out
	// What the script left on this node ends with it, whichever way.
	end, err := launch.RunGroup(ctx, cmd, launch.GroupStop{Name: JobName(j.Test), Grace: or(o.KillGrace, DefaultKillGrace)})
	if err != nil {
		return ending{}, fmt.Errorf("start the script inside allocation: %w", err)
	}
	if end.Stopped == "" {
		return ending{}, nil
	}
	if sc, ok := s.(StepCanceller); ok {
		cctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
		defer stop()
		sc.CancelSteps(cctx, JobName(j.Test)+".")
	}
	return ending{Stopped: end.Stopped + "; steps stopped"}, nil
}
