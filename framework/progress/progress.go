// Package progress shows a run as it goes. On a terminal each running test
// has one live line (what runs where, time elapsed, how long it took last
// time, its time limit) that is
// redrawn every second and replaced by its verdict when it ends; elsewhere
// (CI logs, files) it writes one plain line when a test starts and one when
// it ends, with no control characters.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// Display receives a runner's events (it implements runner.Events) and
// writes them to one writer. It is safe for concurrent use.
type Display struct {
	// Expected, when set before the run starts, holds how long each test
	// took last time (journal.LastDurations), shown beside the elapsed
	// time.
	Expected map[string]time.Duration

	w    io.Writer
	live bool
	now  func() time.Time

	mu      sync.Mutex
	width   int // of the test name column; 0: nameWidth
	running []*entry
	drawn   int // live lines on screen below the finished ones
	stop    chan struct{}
	done    chan struct{}
	closed  sync.Once
}

type entry struct {
	test, where string
	timeout     time.Duration
	expected    time.Duration
	attempt     int
	start       time.Time
}

// New returns a Display writing to w: live lines when live is true, plain
// lines otherwise.
func New(w io.Writer, live bool) *Display {
	d := &Display{w: w, live: live, now: time.Now}
	if live {
		d.stop, d.done = make(chan struct{}), make(chan struct{})
		go d.tick()
	}
	return d
}

// For returns a Display for w, live when w is a terminal (checked with
// golang.org/x/term), or writes to one through writers that have an
// Unwrap() io.Writer, and TERM is not "dumb".
func For(w io.Writer) *Display {
	live := false
	under := w
	// A masking writer (framework/redact) in front of the terminal.
	for u, ok := under.(interface{ Unwrap() io.Writer }); ok; u, ok = under.(interface{ Unwrap() io.Writer }) {
		under = u.Unwrap()
	}
	if f, ok := under.(*os.File); ok {
		live = term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb"
	}
	return New(w, live)
}

// nameWidth is the least width of the test name column.
const nameWidth = 24

// Planned tells the display the names of the tests the run will run
// (runner.Planner), so that the status column stays in line below the
// longest name.
func (d *Display) Planned(names []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range names {
		d.width = max(d.width, len(redact.PrintableLine(n)))
	}
}

// name pads a test name to the name column. Callers hold d.mu.
func (d *Display) name(n string) string {
	return fmt.Sprintf("%-*s", max(nameWidth, d.width), redact.PrintableLine(n))
}

// Started implements runner.Events.
func (d *Display) Started(test, where string, timeout time.Duration, attempt int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	// The names, hosts and messages shown come from files, nodes and
	// logs: a control character in them is escaped, as the escaping
	// writer in front of a terminal would (redact.Printable), and here
	// before the columns are padded.
	where = redact.PrintableLine(where)
	e := &entry{test: test, where: where, timeout: timeout, expected: d.Expected[test], attempt: attempt, start: d.now()}
	if !d.live {
		fmt.Fprintf(d.w, "%s start  %s%s\n", d.name(test), where, e.limit())
		return
	}
	// A retry starts its test again before any Finished (the runner gives
	// one verdict, after the last attempt): it replaces the old line.
	for i, r := range d.running {
		if r.test == test {
			d.running[i] = e
			d.redraw("")
			return
		}
	}
	d.running = append(d.running, e)
	d.redraw("")
}

// Finished implements runner.Events.
func (d *Display) Finished(t result.Test) {
	d.mu.Lock()
	defer d.mu.Unlock()
	line := fmt.Sprintf("%s %-5s  %s", d.name(t.Name), strings.ToUpper(string(t.Status)), redact.PrintableLine(t.Message))
	if t.Duration > 0 {
		line += fmt.Sprintf(" (%s)", t.Duration.Round(time.Millisecond))
	}
	if !d.live {
		fmt.Fprintln(d.w, line)
		return
	}
	for i, e := range d.running {
		if e.test == t.Name {
			d.running = append(d.running[:i], d.running[i+1:]...)
			break
		}
	}
	d.redraw(line)
}

// Close stops redrawing and leaves the finished lines on screen. It may be
// called more than once.
func (d *Display) Close() {
	if !d.live {
		return
	}
	d.closed.Do(func() {
		close(d.stop)
		<-d.done
		d.mu.Lock()
		defer d.mu.Unlock()
		d.running = nil
		d.redraw("")
	})
}

func (d *Display) tick() {
	defer close(d.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			d.mu.Lock()
			d.redraw("")
			d.mu.Unlock()
		}
	}
}

// redraw erases the live lines, prints finished (when not empty) for good,
// then the live lines again. Callers hold d.mu.
func (d *Display) redraw(finished string) {
	var b strings.Builder
	for i := 0; i < d.drawn; i++ {
		b.WriteString("\x1b[1A\x1b[2K")
	}
	b.WriteString("\r")
	if c, ok := d.w.(interface{ Control(string) error }); ok {
		// A writer that escapes what it shows (redact.Printed) takes
		// the display's own cursor movements apart from the text.
		c.Control(b.String())
		b.Reset()
	}
	if finished != "" {
		b.WriteString(finished + "\n")
	}
	now := d.now()
	for _, e := range d.running {
		fmt.Fprintf(&b, "%s %s  %s, %s elapsed%s\n", d.name(e.test), spinner(now.Sub(e.start)), e.where, clock(now.Sub(e.start)), e.limit())
	}
	d.drawn = len(d.running)
	io.WriteString(d.w, b.String())
}

func (e *entry) limit() string {
	s := ""
	if e.expected > 0 {
		s = ", expected ~" + clock(e.expected) + " (last run)"
	}
	if e.timeout > 0 {
		s += ", limit " + clock(e.timeout)
	}
	if e.attempt > 1 {
		s += fmt.Sprintf(", attempt %d", e.attempt)
	}
	return s
}

// clock renders a duration as people read a stopwatch: 0:07, 12:30, 1:02:03.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

func spinner(d time.Duration) string {
	frames := []string{"|", "/", "-", `\`}
	return frames[int(d/time.Second)%len(frames)]
}
