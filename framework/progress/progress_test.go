package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

func TestPlainLines(t *testing.T) {
	var b bytes.Buffer
	d := New(&b, false)
	d.Started("nccl.all_reduce", "1x2 via local", 30*time.Minute, 1)
	d.Finished(result.Test{Name: "nccl.all_reduce", Status: result.Pass, Message: "14 points inside their bands", Duration: 9100 * time.Millisecond})
	d.Started("nccl.all_gather", "1x2 via local", 0, 2)
	d.Close()
	want := "nccl.all_reduce          start  1x2 via local, limit 30:00\n" +
		"nccl.all_reduce          PASS   14 points inside their bands (9.1s)\n" +
		"nccl.all_gather          start  1x2 via local, attempt 2\n"
	assert.Equal(t, b.String(), want)
	assert.Assert(t, !strings.Contains(b.String(), "\x1b"), "control characters in a CI log")
}

// On a terminal the running test's line is redrawn in place and replaced
// by its verdict: what is left on screen is the verdict lines only.
func TestLiveLines(t *testing.T) {
	var b bytes.Buffer
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	d := &Display{w: &b, live: true, now: func() time.Time { return now }, Expected: map[string]time.Duration{"nccl.all_reduce": 92 * time.Second}}
	d.Started("nccl.all_reduce", "1x2 via local", 30*time.Minute, 1)
	now = now.Add(75 * time.Second)
	d.mu.Lock()
	d.redraw("")
	d.mu.Unlock()
	assert.Assert(t, strings.HasSuffix(b.String(), "\x1b[1A\x1b[2K\rnccl.all_reduce          \\  1x2 via local, 1:15 elapsed, expected ~1:32 (last run), limit 30:00\n"), "%q", b.String())
	d.Finished(result.Test{Name: "nccl.all_reduce", Status: result.Fail, Message: "busbw below band"})
	assert.Assert(t, strings.HasSuffix(b.String(), "\x1b[1A\x1b[2K\rnccl.all_reduce          FAIL   busbw below band\n"), "%q", b.String())
	assert.Equal(t, d.drawn, 0)
	assert.Equal(t, screen(b.String()), "nccl.all_reduce          FAIL   busbw below band\n")
}

// New(..., true) redraws on a ticker; Close stops it and may be called twice
// (a deferred Close after the one before the final table).
func TestLiveClose(t *testing.T) {
	var b syncBuffer
	d := New(&b, true)
	d.Started("nccl.all_reduce", "1x2 via local", 0, 1)
	d.Close()
	d.Close()
	assert.Assert(t, strings.HasPrefix(b.String(), "\rnccl.all_reduce"), "%q", b.String())
	assert.Assert(t, strings.HasSuffix(b.String(), "\x1b[1A\x1b[2K\r"), "the live line is erased on Close: %q", b.String())
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// screen plays the escape sequences the display uses (cursor up, erase
// line, carriage return) and returns what a terminal would show.
func screen(s string) string {
	var lines []string
	cur := ""
	for len(s) > 0 {
		switch {
		case strings.HasPrefix(s, "\x1b[1A"):
			if len(lines) > 0 {
				cur, lines = lines[len(lines)-1], lines[:len(lines)-1]
			}
			s = s[4:]
		case strings.HasPrefix(s, "\x1b[2K"):
			cur = ""
			s = s[4:]
		case s[0] == '\r':
			s = s[1:]
		case s[0] == '\n':
			lines = append(lines, cur)
			cur = ""
			s = s[1:]
		default:
			cur += s[:1]
			s = s[1:]
		}
	}
	return strings.Join(lines, "\n") + "\n" + cur
}

func TestClock(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0:00", 7 * time.Second: "0:07", 750 * time.Second: "12:30", 3723 * time.Second: "1:02:03"} {
		assert.Equal(t, clock(d), want)
	}
}

// A name longer than the column widens it for every line of the run, so
// the status column stays in line.
func TestPlannedWidensNameColumn(t *testing.T) {
	for _, c := range []struct {
		planned []string
		col     int
	}{
		{nil, 25},
		{[]string{"nccl.all_reduce"}, 25},
		{[]string{"nccl.all_reduce", "primus.qwen2_5_32b_pretrain_1gpu"}, 33},
	} {
		var b bytes.Buffer
		d := New(&b, false)
		d.Planned(c.planned)
		d.Started("nccl.all_reduce", "1x8 via replay", 0, 1)
		d.Finished(result.Test{Name: "nccl.all_reduce", Status: result.Pass})
		if len(c.planned) > 1 {
			d.Finished(result.Test{Name: c.planned[1], Status: result.Skip, Message: "no plugin yet"})
		}
		for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
			status := strings.TrimLeft(line[strings.IndexByte(line, ' '):], " ")
			assert.Equal(t, len(line)-len(status), c.col, "%q", line)
		}
	}
}

// A retried test starts again before it finishes (the runner reports a
// verdict once, after the last attempt): the new attempt takes the place
// of the old one's live line, and the verdict leaves no live line behind.
func TestLiveRetryReplacesLine(t *testing.T) {
	var b bytes.Buffer
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	d := &Display{w: &b, live: true, now: func() time.Time { return now }}
	d.Started("nccl.all_reduce", "1x2 via local", 0, 1)
	now = now.Add(10 * time.Second)
	d.Started("nccl.all_reduce", "1x2 via local", 0, 2)
	assert.Equal(t, d.drawn, 1)
	assert.Assert(t, strings.HasSuffix(screen(b.String()), "0:00 elapsed, attempt 2\n"), "%q", screen(b.String()))
	d.Finished(result.Test{Name: "nccl.all_reduce", Status: result.Warn, Message: "passed on attempt 2 of 2"})
	assert.Equal(t, d.drawn, 0)
	assert.Equal(t, screen(b.String()), "nccl.all_reduce          WARN   passed on attempt 2 of 2\n")
}

// A test's message quotes its log, and a node's name comes from the
// hosts given: their control characters are escaped, plain and live,
// so that a log cannot rewrite the verdict lines (the display's own
// cursor movements stay).
func TestInjectedControlsEscaped(t *testing.T) {
	for _, live := range []bool{false, true} {
		var b bytes.Buffer
		now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
		d := &Display{w: &b, live: live, now: func() time.Time { return now }}
		d.Started("nccl.all_reduce[a\x1b[2K.log]", "1x2 via ssh on node\u202e1", 0, 1)
		d.Finished(result.Test{Name: "nccl.all_reduce[a\x1b[2K.log]", Status: result.Fail, Message: "busbw low\r\x1b[1A\x1b[2KALL PASS"})
		out := strings.ReplaceAll(b.String(), "\x1b[1A\x1b[2K", "")
		out = strings.ReplaceAll(out, "\r", "")
		assert.Assert(t, !strings.ContainsAny(out, "\x1b\r\u202e"), "live %v: %q", live, b.String())
		assert.Assert(t, strings.Contains(out, `FAIL   busbw low\r\x1b[1A\x1b[2KALL PASS`), "live %v: %q", live, out)
	}
}
