package launch

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// behaviour is what a fake step does: it becomes ready (calls ready) once
// readyAfter has passed, unless neverReady; then it runs until until is
// closed (nil: at once), or until its ctx ends, and exits with exit.
type behaviour struct {
	readyAfter time.Duration
	neverReady bool
	until      chan struct{}
	exit       int
	// closes is closed when the step ends by itself: its peer's until.
	closes chan struct{}
}

// recorder runs fake steps and logs "start NAME" and "end NAME" in the
// order they happen.
type recorder struct {
	mu  sync.Mutex
	log []string
	do  map[string]behaviour
}

func (r *recorder) note(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, s)
}

func (r *recorder) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

func (r *recorder) run(steps []plan.Step) StepFunc {
	return func(ctx context.Context, i int, ready func()) plan.Output {
		s := steps[i]
		b := r.do[s.Name]
		r.note("start " + s.Name)
		began := time.Now()
		out := plan.Output{Step: s.Name, Role: s.Role, ExitCode: -1}
		if !b.neverReady {
			select {
			case <-time.After(b.readyAfter):
				ready()
			case <-ctx.Done():
			}
		}
		select {
		case <-ctx.Done():
			out.LaunchError = StopReason(ctx, began) + "; fake killed"
			r.note("stopped " + s.Name)
			return out
		case <-orClosed(b.until):
		}
		if b.closes != nil {
			close(b.closes)
		}
		r.note("end " + s.Name)
		out.ExitCode = b.exit
		return out
	}
}

// orClosed is c, or a closed channel when c is nil.
func orClosed(c chan struct{}) chan struct{} {
	if c != nil {
		return c
	}
	d := make(chan struct{})
	close(d)
	return d
}

func server(name string) plan.Step {
	return plan.Step{Name: name, Role: "server", ReadyMarker: "Waiting for client to connect"}
}

func client(name string) plan.Step { return plan.Step{Name: name, Role: "client"} }

func before(t *testing.T, log []string, a, b string) {
	t.Helper()
	ia, ib := -1, -1
	for i, e := range log {
		if e == a && ia < 0 {
			ia = i
		}
		if e == b && ib < 0 {
			ib = i
		}
	}
	assert.Assert(t, ia >= 0 && ib >= 0 && ia < ib, "want %q before %q in %q", a, b, log)
}

func launchErrors(outs []plan.Output) map[string]string {
	m := map[string]string{}
	for _, o := range outs {
		m[o.Step] = o.LaunchError
	}
	return m
}

// A server's readiness releases its client while it keeps running; two
// servers then two clients run both pairs at once (each client waits for
// the other to have started, which only a parallel start gives).
func TestSequenceServersThenClientsRunTogether(t *testing.T) {
	steps := []plan.Step{server("server1"), server("server2"), client("client1"), client("client2")}
	served1, served2 := make(chan struct{}), make(chan struct{})
	both := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	started := 0
	r := &recorder{do: map[string]behaviour{
		"server1": {readyAfter: 30 * time.Millisecond, until: served1},
		"server2": {readyAfter: 30 * time.Millisecond, until: served2},
		"client1": {until: both, closes: served1},
		"client2": {until: both, closes: served2},
	}}
	run := r.run(steps)
	q := Sequence{Steps: steps, Timeout: 10 * time.Second, Run: func(ctx context.Context, i int, ready func()) plan.Output {
		if steps[i].Role == "client" {
			mu.Lock()
			started++
			if started == 2 {
				once.Do(func() { close(both) })
			}
			mu.Unlock()
		}
		return run(ctx, i, ready)
	}}
	outs := q.Launch(context.Background())
	assert.DeepEqual(t, launchErrors(outs), map[string]string{"server1": "", "server2": "", "client1": "", "client2": ""})
	log := r.events()
	before(t, log, "start server2", "start client1")
	before(t, log, "start client1", "end server1")
	// That the clients ran at once is proven by their ending at all: each
	// waits until the other's start was asked for. The recorder logs a
	// start after that, so its order against "end client1" is a race.
}

// Pairs planned one after the other run one after the other: a client's
// group is waited for with its server before the next server starts.
func TestSequenceSerialPairs(t *testing.T) {
	steps := []plan.Step{server("server1"), client("client1"), server("server2"), client("client2")}
	served1, served2 := make(chan struct{}), make(chan struct{})
	r := &recorder{do: map[string]behaviour{
		"server1": {until: served1}, "client1": {closes: served1},
		"server2": {until: served2}, "client2": {closes: served2},
	}}
	outs := Sequence{Steps: steps, Timeout: 10 * time.Second, Run: r.run(steps)}.Launch(context.Background())
	assert.DeepEqual(t, launchErrors(outs), map[string]string{"server1": "", "server2": "", "client1": "", "client2": ""})
	log := r.events()
	before(t, log, "end server1", "start server2")
	before(t, log, "end client1", "start server2")
}

func TestSequenceFailures(t *testing.T) {
	hang := make(chan struct{}) // never closed: a server nobody serves
	defer close(hang)
	cases := []struct {
		name  string
		steps []plan.Step
		do    map[string]behaviour
		want  map[string]string
		// within bounds the whole test: a failure must not wait for
		// the plan's timeout (1 minute).
		within time.Duration
	}{
		{
			// ssh's TestServerDiesBeforeReady, without ssh.
			name:  "server ends before its marker",
			steps: []plan.Step{server("server"), client("client")},
			do:    map[string]behaviour{"server": {neverReady: true, exit: 1}},
			want: map[string]string{"server": "",
				"client": `not started: step server ended before its readiness line "Waiting for client to connect" showed`},
			within: 5 * time.Second,
		},
		{
			// The first server is left hanging by its client's failure,
			// the second has no client left: both are stopped after
			// Linger, not at the test's timeout.
			name:  "a client fails before its marker",
			steps: []plan.Step{server("server1"), server("server2"), {Name: "client1", Role: "client", ReadyMarker: "---"}, client("client2")},
			do: map[string]behaviour{"server1": {until: hang}, "server2": {until: hang},
				"client1": {neverReady: true, exit: 1}},
			want: map[string]string{
				"server1": `stopped after step client1 ended before its readiness line "---" showed; fake killed`,
				"server2": `stopped after step client1 ended before its readiness line "---" showed; fake killed`,
				"client1": "",
				"client2": `not started: step client1 ended before its readiness line "---" showed`},
			within: 5 * time.Second,
		},
		{
			// client2 and its server end as they would; client1's server
			// waits for it forever, so it is stopped once its group is
			// over; the step after the group does not start.
			name:  "a client of a group fails",
			steps: []plan.Step{server("server1"), server("server2"), client("client1"), client("client2"), {Name: "after"}},
			do: map[string]behaviour{"server1": {until: hang}, "server2": {readyAfter: 10 * time.Millisecond},
				"client1": {exit: 1}, "client2": {readyAfter: 200 * time.Millisecond}},
			want: map[string]string{
				"server1": "stopped after step client1 failed (exit status 1); fake killed",
				"server2": "", "client1": "", "client2": "",
				"after": "not started: step client1 failed (exit status 1)"},
			within: 5 * time.Second,
		},
		{
			name:   "a plain step fails",
			steps:  []plan.Step{{Name: "a"}, {Name: "b"}},
			do:     map[string]behaviour{"a": {exit: 2}},
			want:   map[string]string{"a": "", "b": "not started: step a failed (exit status 2)"},
			within: 5 * time.Second,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{do: c.do}
			start := time.Now()
			outs := Sequence{Steps: c.steps, Timeout: time.Minute, Linger: 100 * time.Millisecond, Run: r.run(c.steps)}.Launch(context.Background())
			assert.Assert(t, time.Since(start) < c.within, "took %s", time.Since(start))
			assert.DeepEqual(t, launchErrors(outs), c.want)
			for i, o := range outs {
				assert.Equal(t, o.Step, c.steps[i].Name, "outputs in plan order")
			}
		})
	}
}

// A server that never becomes ready holds its client back until the
// test's time is up; then it is stopped and the client says why it never
// ran. A step's own Timeout stops that step alone.
func TestSequenceTimeouts(t *testing.T) {
	never := make(chan struct{})
	defer close(never)
	steps := []plan.Step{server("server"), client("client")}
	r := &recorder{do: map[string]behaviour{"server": {neverReady: true, until: never}}}
	outs := Sequence{Steps: steps, Timeout: 200 * time.Millisecond, Run: r.run(steps)}.Launch(context.Background())
	assert.Assert(t, strings.HasPrefix(outs[0].LaunchError, "timed out after "), outs[0].LaunchError)
	assert.Equal(t, outs[1].LaunchError, "not started: the test timed out first")
	assert.Equal(t, outs[1].ExitCode, -1)

	steps = []plan.Step{{Name: "slow", Timeout: 100 * time.Millisecond}, {Name: "next"}}
	r = &recorder{do: map[string]behaviour{"slow": {until: never}}}
	outs = Sequence{Steps: steps, Timeout: time.Minute, Run: r.run(steps)}.Launch(context.Background())
	assert.Assert(t, strings.HasPrefix(outs[0].LaunchError, "timed out after "), outs[0].LaunchError)
	// The test's own time is not up: the step's timeout is a failure.
	assert.Assert(t, strings.HasPrefix(outs[1].LaunchError, "not started: step slow failed (timed out after "), outs[1].LaunchError)

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	steps = []plan.Step{server("server"), client("client")}
	r = &recorder{do: map[string]behaviour{"server": {neverReady: true, until: never}}}
	outs = Sequence{Steps: steps, Run: r.run(steps)}.Launch(ctx)
	assert.Equal(t, outs[0].LaunchError, "cancelled; fake killed")
	assert.Equal(t, outs[1].LaunchError, "not started: the test cancelled first")
}

// NotStarted gives a launcher's own fields (host, command) to a step it
// never ran.
func TestSequenceNotStartedOutput(t *testing.T) {
	steps := []plan.Step{{Name: "a"}, {Name: "b", Role: "client"}}
	r := &recorder{do: map[string]behaviour{"a": {exit: 1}}}
	outs := Sequence{Steps: steps, Run: r.run(steps), NotStarted: func(i int, why string) plan.Output {
		return plan.Output{Step: steps[i].Name, Host: "n1", Command: "cmd " + steps[i].Name, ExitCode: -1, LaunchError: why}
	}}.Launch(context.Background())
	want := plan.Output{Step: "b", Host: "n1", Command: "cmd b", ExitCode: -1, LaunchError: "not started: step a failed (exit status 1)"}
	assert.DeepEqual(t, outs[1], want)
	assert.DeepEqual(t, r.events(), []string{"start a", "end a"})
}

func TestStopReason(t *testing.T) {
	began := time.Now().Add(-1500 * time.Millisecond)
	timedOut, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	stopped, stop := context.WithCancelCause(context.Background())
	stop(&stopCause{why: "stopped after step c failed (exit status 1)"})
	// A step timeout under a stopped parent: the parent's reason wins,
	// as it ended first.
	under, cancel3 := context.WithTimeout(stopped, time.Hour)
	defer cancel3()
	for _, c := range []struct {
		ctx   context.Context
		began time.Time
		want  string
	}{
		{timedOut, time.Time{}, "timed out"},
		{cancelled, began, "cancelled"},
		{stopped, began, "stopped after step c failed (exit status 1)"},
		{under, began, "stopped after step c failed (exit status 1)"},
	} {
		assert.Equal(t, StopReason(c.ctx, c.began), c.want)
	}
	got := StopReason(timedOut, began)
	assert.Assert(t, strings.HasPrefix(got, "timed out after 1.5"), got)
	// After evidence: the limit, and the evidence's time apart.
	afterEvidence, stop2 := context.WithCancelCause(context.Background())
	stop2(&stopCause{why: "timed out", timedOut: true, limit: 3 * time.Second, evidence: time.Minute})
	assert.Equal(t, StopReason(afterEvidence, began), "timed out after 3s; evidence collected in 1m0s")
}

// A monitor (the telemetry sampler) runs beside the test's steps: the
// test does not wait for it, it is stopped with MonitorStopped once they
// ended, and its failing (a sampler that exits 1, or never shows its
// marker) fails nothing. A failing step still stops the rest at once,
// not after Linger spent waiting on the monitor.
func TestSequenceMonitors(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	mon := plan.Step{Name: "telemetry.0", Role: plan.Monitor, ReadyMarker: "sampling"}
	cases := []struct {
		name string
		do   map[string]behaviour
		want map[string]string
	}{
		{"steps pass", map[string]behaviour{"telemetry.0": {until: hang}, "work": {}},
			map[string]string{"telemetry.0": MonitorStopped + "; fake killed", "work": ""}},
		{"monitor fails alone", map[string]behaviour{"telemetry.0": {neverReady: true, exit: 1}, "work": {}},
			map[string]string{"telemetry.0": "", "work": ""}},
		{"step fails", map[string]behaviour{"telemetry.0": {until: hang}, "work": {exit: 1}},
			map[string]string{"telemetry.0": MonitorStopped + "; fake killed", "work": ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			steps := []plan.Step{mon, {Name: "work", Procs: 1, ProcsPerNode: 1}}
			r := &recorder{do: c.do}
			began := time.Now()
			outs := Sequence{Steps: steps, Timeout: time.Minute, Linger: 20 * time.Second, Run: r.run(steps)}.Launch(context.Background())
			assert.DeepEqual(t, launchErrors(outs), c.want)
			assert.Assert(t, time.Since(began) < 5*time.Second, "took %s: waited on the monitor", time.Since(began))
			before(t, r.events(), "start telemetry.0", "start work")
		})
	}
}

// Evidence steps run only when the test's time runs out, all at once,
// while the test's steps still run (a stack dump needs the hung process),
// and only once they returned are the steps stopped, as timed out; a test
// that ends in time, or is cancelled, runs none. An evidence step is
// bounded by its own timeout and fails nothing.
func TestSequenceEvidence(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	ev := func(name string, timeout time.Duration) plan.Step {
		return plan.Step{Name: name, Role: plan.Evidence, Timeout: timeout}
	}
	t.Run("timed out", func(t *testing.T) {
		steps := []plan.Step{{Name: "work"}, {Name: "after"}, ev("evidence.0", 0), ev("evidence.1", 100*time.Millisecond)}
		r := &recorder{do: map[string]behaviour{"work": {until: hang}, "evidence.1": {until: hang}}}
		outs := Sequence{Steps: steps, Timeout: 200 * time.Millisecond, Run: r.run(steps)}.Launch(context.Background())
		ev := r.events()
		// Evidence starts before the hung step is stopped, and ends (or
		// is cut at its own bound) before it.
		before(t, ev, "start work", "start evidence.0")
		before(t, ev, "end evidence.0", "stopped work")
		before(t, ev, "stopped evidence.1", "stopped work")
		// The limit, not the limit and the evidence's time added.
		assert.Assert(t, strings.HasPrefix(outs[0].LaunchError, "timed out after 200ms; evidence collected in "), outs[0].LaunchError)
		assert.Equal(t, outs[1].LaunchError, "not started: the test timed out first")
		assert.Equal(t, outs[2].LaunchError, "")
		assert.Equal(t, outs[2].Step, "evidence.0")
		assert.Assert(t, strings.HasPrefix(outs[3].LaunchError, "timed out after 1"), outs[3].LaunchError)
	})
	t.Run("in time", func(t *testing.T) {
		steps := []plan.Step{{Name: "work"}, ev("evidence.0", 0)}
		r := &recorder{do: map[string]behaviour{}}
		outs := Sequence{Steps: steps, Timeout: time.Minute, Run: r.run(steps)}.Launch(context.Background())
		assert.DeepEqual(t, r.events(), []string{"start work", "end work"})
		assert.DeepEqual(t, outs[1], plan.Output{Step: "evidence.0", Role: plan.Evidence, ExitCode: -1, LaunchError: EvidenceNotRun})
	})
	t.Run("failed", func(t *testing.T) {
		steps := []plan.Step{{Name: "work"}, {Name: "next"}, ev("evidence.0", 0)}
		r := &recorder{do: map[string]behaviour{"work": {exit: 1}}}
		outs := Sequence{Steps: steps, Timeout: time.Minute, Run: r.run(steps)}.Launch(context.Background())
		assert.DeepEqual(t, r.events(), []string{"start work", "end work"})
		assert.Equal(t, outs[2].LaunchError, EvidenceNotRun)
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		steps := []plan.Step{{Name: "work"}, ev("evidence.0", 0)}
		r := &recorder{do: map[string]behaviour{"work": {until: hang}}}
		outs := Sequence{Steps: steps, Timeout: time.Minute, Run: r.run(steps)}.Launch(ctx)
		assert.DeepEqual(t, r.events(), []string{"start work", "stopped work"})
		assert.Equal(t, outs[0].LaunchError, "cancelled; fake killed")
		assert.Equal(t, outs[1].LaunchError, EvidenceNotRun)
	})
}
