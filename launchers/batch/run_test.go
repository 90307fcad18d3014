package batch

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// queue is a Scheduler whose job goes through states: each query answers
// the next of states (the last one stays), or fails while fail says so.
type queue struct {
	here
	mu        sync.Mutex
	states    []State
	fail      bool
	cancelled int
}

func (q *queue) Query(context.Context, string) (State, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail {
		return State{}, errors.New("slurm_load_jobs error: Unable to contact slurm controller")
	}
	st := q.states[0]
	if len(q.states) > 1 {
		q.states = q.states[1:]
	}
	return st, nil
}

func (q *queue) Cancel(context.Context, string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.cancelled++
	q.states = []State{{ID: "7", State: "CANCELLED", Ended: true}}
	q.fail = false
	return nil
}

// Follow's ends, in the words the steps' errors and the tests read.
func TestFollow(t *testing.T) {
	pending := State{ID: "7", State: "PENDING", Queued: true, Reason: "BeginTime"}
	running := State{ID: "7", State: "RUNNING"}
	done := State{ID: "7", State: "COMPLETED", Ended: true}
	for _, c := range []struct {
		name      string
		q         *queue
		timeout   time.Duration
		pending   time.Duration
		cancel    bool // ctx cancelled after a few polls
		state     string
		why       string // a regexp
		cancelled bool
	}{
		{"ends by itself", &queue{states: []State{pending, running, running, done}}, time.Minute, 0, false, "COMPLETED", `^$`, false},
		// The test's time counts from the job's start: a long queue
		// does not use it up.
		{"queued longer than the timeout", &queue{states: append(append(make([]State, 0, 20), repeat(pending, 15)...), done)}, 50 * time.Millisecond, 0, false, "COMPLETED", `^$`, false},
		{"timed out running", &queue{states: []State{running}}, 50 * time.Millisecond, 0, false, "CANCELLED", `^timed out after [0-9]+s of running; job 7 cancelled with cancel$`, true},
		{"pending bound", &queue{states: []State{pending}}, time.Minute, 50 * time.Millisecond, false, "CANCELLED", `^job 7 still pending after [0-9]+s \(reason BeginTime\); cancelled with cancel$`, true},
		{"lost", &queue{states: []State{running}, fail: true}, time.Minute, 0, false, "CANCELLED", `^lost track of job 7: slurm_load_jobs error: Unable to contact slurm controller$`, true},
		{"cancelled", &queue{states: []State{running}}, time.Minute, 0, true, "CANCELLED", `^cancelled; job 7 cancelled with cancel$`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := testOptions()
			o.Poll, o.PendingTimeout = 5*time.Millisecond, c.pending
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				time.AfterFunc(30*time.Millisecond, cancel)
			}
			st, why := Follow(ctx, c.q, "7", c.timeout, o)
			if why != "" {
				st = Cancel(c.q, "7", st, o)
			}
			assert.Assert(t, regexp.MustCompile(c.why).MatchString(why), "%q", why)
			assert.Equal(t, st.State, c.state)
			assert.Equal(t, c.q.cancelled > 0, c.cancelled)
		})
	}
}

func repeat(s State, n int) []State {
	out := make([]State, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// A job's state as messages give it.
func TestStateString(t *testing.T) {
	st := State{ID: "8", State: "TIMEOUT", Meaning: "the job reached its time limit (--time)", Reason: "TimeLimit", ExitCode: "0:15", Nodes: "n1"}
	assert.Equal(t, st.String(), "job 8 TIMEOUT (the job reached its time limit (--time); reason TimeLimit; exit code 0:15; nodes n1)")
	st = State{ID: "6", State: "PENDING", Reason: "None", Nodes: "None assigned"}
	assert.Equal(t, st.String(), "job 6 PENDING")
	assert.Assert(t, !strings.Contains(State{ID: "1", State: "R"}.String(), "("))
}
