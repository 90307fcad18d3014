package launch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// DefaultLinger is how long steps still running in the background may go
// on after a step failed before a Sequence stops them: long enough for a
// server whose own client has just ended to write its last lines.
const DefaultLinger = 10 * time.Second

// StepFunc runs step i of a Sequence to its end and returns its output.
// ctx ends when the step must stop: the test's or the step's own timeout,
// Ctrl-C, or the Sequence stopping it after another step failed
// (StopReason says which); the step then stops what it started before it
// returns. ready is to be called once the step's ReadyMarker shows in its
// output (a MarkerWriter does it); calling it again, or for a step without
// a marker, does nothing.
type StepFunc func(ctx context.Context, i int, ready func()) plan.Output

// Sequence runs the steps of one plan in the order and with the overlap
// every launcher gives them, whatever runs a step (a process here, ssh, a
// pod); a launcher supplies only how one step runs (Run).
//
// Order. Steps start in plan order, and step i+1 never starts before step
// i has started.
//
// Background steps. A step with a ReadyMarker (a server: ib_write_bw's
// "Waiting for client to connect") starts, and the next step starts once
// the marker shows in its output, not after a sleep; it keeps running
// beside the steps after it.
//
// Parallel groups. Consecutive steps with Role "client" and no ReadyMarker
// start together, so a plan "server1 server2 client1 client2" runs both
// pairs at once. Any other step without a ReadyMarker is a group of its
// own. A group is waited for, together with every background step started
// before it, before the next step starts: "server1 client1 server2
// client2" runs the pairs one after the other.
//
// Failure. A step fails when it ends with a LaunchError or a non-zero exit
// status, or, having a ReadyMarker, ends before the marker showed. After a
// failure no step that has not started yet starts (its Output says why:
// `not started: step server ended before its readiness line "..."
// showed`); the steps of the failed step's own group run to their end
// (each client talks to its own server, and what it measured stands); then
// the background steps still running, which were started for steps that
// have ended or will never start, are given Linger to end by themselves
// and are stopped ("stopped after step client1 failed (exit status 1)"),
// rather than waiting for a client until the test's timeout.
//
// Monitors. A step with Role plan.Monitor (the telemetry sampler beside
// a test) starts in the background like a server: the next step starts
// once its ReadyMarker showed, it ended, or MonitorReadyWait passed (a
// sampler slow to start never holds the test up). No step waits for a
// monitor, and a monitor never fails the plan: once every other step has
// ended the monitors are stopped with the cause MonitorStopped.
//
// Timeouts. Timeout bounds the whole plan and a step's own Timeout that
// step alone, from its start. When the plan's time is up (or ctx is
// cancelled) every running step is stopped through its ctx and the steps
// not started yet say "not started: the test timed out first" (or
// "cancelled first"). Launch returns once every started step has returned.
//
// Evidence. A step with Role plan.Evidence is not started with the rest:
// when the plan's Timeout runs out, every evidence step starts at once,
// while the test's steps still run (their stacks and GPU state are what it
// collects), each bounded by its own Timeout (DefaultEvidenceTimeout when
// zero); once they all returned the test's steps are stopped ("timed
// out"). A plan that ends in time, or is cancelled, runs none: their
// outputs say EvidenceNotRun.
type Sequence struct {
	// Steps are the plan's steps, as the launcher runs them.
	Steps []plan.Step
	// Timeout bounds the whole plan (Request.Timeout); zero: ctx alone.
	Timeout time.Duration
	// Run runs one step to its end.
	Run StepFunc
	// NotStarted returns the output of step i when it is not started,
	// with LaunchError why; nil gives Step, Role, ExitCode -1 and why.
	NotStarted func(i int, why string) plan.Output
	// Linger is how long background steps may run on after a failure
	// before they are stopped; zero means DefaultLinger.
	Linger time.Duration
}

// MonitorStopped is the stop cause (StopReason) of a monitor step once the
// test's own steps ended: its LaunchError starts with it, which is no
// failure.
const MonitorStopped = "stopped: the test's steps ended"

// DefaultEvidenceTimeout bounds an evidence step without a Timeout of its
// own: long enough for nvidia-smi, the kernel log and a stack dump of each
// rank of a node, short enough that a hung test does not wait much longer.
const DefaultEvidenceTimeout = 60 * time.Second

// EvidenceNotRun is the LaunchError of an evidence step that did not run
// because the test did not time out; it is no failure.
const EvidenceNotRun = "not run: the test did not time out"

// MonitorReadyWait bounds how long the next step waits for a monitor's
// ReadyMarker.
const MonitorReadyWait = 30 * time.Second

// stopCause is why a Sequence stopped a step, read back by StopReason.
// timedOut: the plan's time ran out (after its evidence was collected),
// said as a deadline is; limit is the plan's Timeout and evidence how
// long collecting took, so the time out is not said to be the two added.
type stopCause struct {
	why             string
	timedOut        bool
	limit, evidence time.Duration
}

func (c *stopCause) Error() string { return c.why }

// StopReason says why a step's ctx ended, for its LaunchError: "timed
// out after D" (D since began; "timed out" when began is zero; a plan
// whose evidence was collected first: "timed out after LIMIT; evidence
// collected in D"),
// "cancelled" (Ctrl-C, SIGTERM), or why the Sequence stopped it ("stopped
// after step client1 failed (exit status 1)"). The runner tells a test cut
// short by its time limit or by Ctrl-C by the first two, so they are kept
// word for word.
func StopReason(ctx context.Context, began time.Time) string {
	var sc *stopCause
	cause := errors.As(context.Cause(ctx), &sc)
	if cause && !sc.timedOut {
		return sc.why
	}
	if cause || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		if began.IsZero() {
			return "timed out"
		}
		if cause && sc.limit > 0 {
			return fmt.Sprintf("timed out after %s; evidence collected in %s", sc.limit, sc.evidence.Round(time.Millisecond))
		}
		return fmt.Sprintf("timed out after %s", time.Since(began).Round(time.Millisecond))
	}
	return "cancelled"
}

// run is one started step.
type run struct {
	i     int
	ready chan struct{} // closed once its marker showed
	done  chan struct{} // closed once Run returned and its output is in
	stop  context.CancelCauseFunc
	once  sync.Once
}

func (r *run) markReady() { r.once.Do(func() { close(r.ready) }) }

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Launch runs the steps (see Sequence) and returns one Output per step,
// in plan order.
func (q Sequence) Launch(ctx context.Context) []plan.Output {
	outs := make([]plan.Output, len(q.Steps))
	var (
		mu       sync.Mutex
		evidence []int
		// expired is closed once the plan's time ran out and evidence is
		// being collected: nothing starts after it.
		expired   = make(chan struct{})
		collected chan struct{}
		// ended is set once the test's steps all ended: a timer firing
		// after it collects nothing.
		ended atomic.Bool
	)
	for i, s := range q.Steps {
		if s.Role == plan.Evidence {
			evidence = append(evidence, i)
		}
	}
	if q.Timeout > 0 && len(evidence) == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, q.Timeout)
		defer cancel()
	} else if q.Timeout > 0 {
		// The steps keep running while the evidence is collected, so
		// their ctx has no deadline: the timer stops them after it.
		parent := ctx
		var stopAll context.CancelCauseFunc
		ctx, stopAll = context.WithCancelCause(ctx)
		defer stopAll(nil)
		collected = make(chan struct{})
		t := time.AfterFunc(q.Timeout, func() {
			defer close(collected)
			if ended.Load() {
				return
			}
			close(expired)
			began := time.Now()
			q.collect(parent, evidence, outs, &mu)
			stopAll(&stopCause{why: "timed out", timedOut: true, limit: q.Timeout, evidence: time.Since(began)})
		})
		defer func() {
			if !t.Stop() {
				<-collected
			}
			q.evidenceNotRun(evidence, outs)
		}()
	} else {
		defer q.evidenceNotRun(evidence, outs)
	}
	linger := q.Linger
	if linger <= 0 {
		linger = DefaultLinger
	}
	var (
		failure string                // the first failure: "step X failed (...)"
		failed  = make(chan struct{}) // closed with the first failure
		all     []*run
		// monitors run beside the rest and are stopped at the end.
		monitors []*run
	)
	start := func(i int) *run {
		s := q.Steps[i]
		sctx, stop := context.WithCancelCause(ctx)
		r := &run{i: i, ready: make(chan struct{}), done: make(chan struct{}), stop: stop}
		all = append(all, r)
		go func() {
			defer close(r.done)
			defer stop(nil)
			c := sctx
			if s.Timeout > 0 {
				var cancel context.CancelFunc
				c, cancel = context.WithTimeout(sctx, s.Timeout)
				defer cancel()
			}
			o := q.Run(c, i, r.markReady)
			mu.Lock()
			defer mu.Unlock()
			outs[i] = o
			if why := stepFailure(s, o, closed(r.ready)); why != "" && failure == "" && s.Role != plan.Monitor && s.Role != plan.Evidence {
				failure = why
				close(failed)
			}
		}()
		return r
	}
	firstFailure := func() string {
		mu.Lock()
		defer mu.Unlock()
		return failure
	}
	// stopBackground gives the steps still running Linger to end by
	// themselves, then stops them, naming the failure.
	stopped := false
	stopBackground := func(why string) {
		stopped = true
		t := time.NewTimer(linger)
		defer t.Stop()
		expired := false
		for _, r := range all {
			if q.Steps[r.i].Role == plan.Monitor {
				continue // stopped with the rest at the end
			}
			if !expired {
				select {
				case <-r.done:
					continue
				case <-t.C:
					expired = true
				case <-ctx.Done():
					return // every step is stopped through ctx already
				}
			}
			r.stop(&stopCause{why: "stopped after " + why})
		}
	}
	blocked := ""
	for i := 0; i < len(q.Steps); {
		if blocked == "" {
			// The test's own end first: the steps it stopped fail too,
			// but they are not what kept the rest from starting.
			if closed(expired) {
				blocked = "not started: the test timed out first"
			} else if ctx.Err() != nil {
				blocked = "not started: the test " + StopReason(ctx, time.Time{}) + " first"
			} else if why := firstFailure(); why != "" {
				blocked = "not started: " + why
				stopBackground(why)
			}
		}
		s := q.Steps[i]
		if s.Role == plan.Evidence {
			i++ // run by the timer alone
			continue
		}
		if blocked != "" {
			outs[i] = q.notStarted(i, blocked)
			i++
			continue
		}
		if s.Role == plan.Monitor {
			r := start(i)
			monitors = append(monitors, r)
			t := time.NewTimer(MonitorReadyWait)
			select {
			case <-r.ready:
			case <-r.done:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			i++
			continue
		}
		if s.ReadyMarker != "" {
			r := start(i)
			select {
			case <-r.ready:
			case <-r.done:
			case <-ctx.Done():
			}
			i++
			continue
		}
		j := i + 1
		if s.Role == "client" {
			for j < len(q.Steps) && q.Steps[j].Role == "client" && q.Steps[j].ReadyMarker == "" {
				j++
			}
		}
		group := make([]*run, 0, j-i)
		for k := i; k < j; k++ {
			group = append(group, start(k))
		}
		for _, r := range group {
			<-r.done
		}
		// Everything started so far ends before the next step starts,
		// unless a failure means the rest stop instead.
		for _, r := range all {
			if q.Steps[r.i].Role == plan.Monitor {
				continue
			}
			select {
			case <-r.done:
			case <-failed:
			}
		}
		i = j
	}
	if why := firstFailure(); why != "" && !stopped {
		stopBackground(why)
	}
	for _, r := range all {
		if q.Steps[r.i].Role != plan.Monitor {
			<-r.done
		}
	}
	ended.Store(true)
	for _, r := range monitors {
		r.stop(&stopCause{why: MonitorStopped})
		<-r.done
	}
	return outs
}

// collect runs the evidence steps idx together, each bounded by its own
// Timeout or DefaultEvidenceTimeout, under ctx (the caller's, without
// the plan's deadline), and returns once all returned.
func (q Sequence) collect(ctx context.Context, idx []int, outs []plan.Output, mu *sync.Mutex) {
	var wg sync.WaitGroup
	for _, i := range idx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := q.Steps[i].Timeout
			if d <= 0 {
				d = DefaultEvidenceTimeout
			}
			c, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			o := q.Run(c, i, func() {})
			mu.Lock()
			outs[i] = o
			mu.Unlock()
		}()
	}
	wg.Wait()
}

// evidenceNotRun fills the outputs of the evidence steps that did not run.
func (q Sequence) evidenceNotRun(idx []int, outs []plan.Output) {
	for _, i := range idx {
		if outs[i].Step == "" && outs[i].LaunchError == "" && outs[i].Log == "" {
			outs[i] = q.notStarted(i, EvidenceNotRun)
		}
	}
}

// stepFailure says how a step that ended failed ("step client1 failed
// (exit status 1)"), or "" when it did not.
func stepFailure(s plan.Step, o plan.Output, wasReady bool) string {
	switch {
	case s.ReadyMarker != "" && !wasReady:
		return fmt.Sprintf("step %s ended before its readiness line %q showed", s.Name, s.ReadyMarker)
	case o.LaunchError != "":
		return fmt.Sprintf("step %s failed (%s)", s.Name, o.LaunchError)
	case o.ExitCode != 0:
		return fmt.Sprintf("step %s failed (exit status %d)", s.Name, o.ExitCode)
	}
	return ""
}

func (q Sequence) notStarted(i int, why string) plan.Output {
	if q.NotStarted != nil {
		return q.NotStarted(i, why)
	}
	s := q.Steps[i]
	return plan.Output{Step: s.Name, Role: s.Role, ExitCode: -1, LaunchError: why}
}
