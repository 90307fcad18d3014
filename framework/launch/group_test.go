package launch

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/proc"
	"gotest.tools/v3/assert"
)

// RunGroup's stop, as every launcher stops its local processes: First,
// then SIGTERM, then SIGKILL after Grace; a leader that exits by itself
// is waited for, its status kept.
func TestRunGroup(t *testing.T) {
	// The program notes SIGTERM and goes on, so only SIGKILL ends it.
	stubborn := `trap 'echo term' TERM; echo up; while :; do sleep 0.05; done`
	cases := []struct {
		name    string
		script  string
		timeout time.Duration
		grace   time.Duration
		first   bool
		want    string // the output
		exit    int
		// stopped is the prefix of GroupEnd.Stopped. The time it names is
		// measured from the process's start, after the deadline was set:
		// on a loaded machine it reads 199ms for a 200ms timeout.
		stopped string
		atLeast time.Duration
	}{
		{name: "exits by itself", script: "echo hi; exit 3", timeout: time.Minute, want: "hi\n", exit: 3},
		{name: "grace, then SIGKILL", script: stubborn, timeout: 200 * time.Millisecond, grace: 400 * time.Millisecond,
			want: "up\nterm\n", stopped: "timed out after ", atLeast: 600 * time.Millisecond},
		{name: "first runs before SIGTERM", script: stubborn, timeout: 200 * time.Millisecond, grace: 400 * time.Millisecond, first: true,
			want: "up\nfirst\nterm\n", stopped: "timed out after "},
		{name: "no grace: SIGKILL at once", script: stubborn, timeout: 200 * time.Millisecond,
			want: "up\n", stopped: "timed out after "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := &SyncWriter{W: &buf}
			cmd := exec.Command("sh", "-c", c.script)
			// stderr is left out: sh reports its sleep killed by SIGTERM
			// there ("Terminated"), or not, as the signal finds it.
			cmd.Stdout = w
			ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
			defer cancel()
			st := GroupStop{Name: "t", Grace: c.grace}
			if c.first {
				st.First = func() { w.Write([]byte("first\n")) }
			}
			began := time.Now()
			end, err := RunGroup(ctx, cmd, st)
			took := time.Since(began)
			assert.NilError(t, err)
			assert.Equal(t, buf.String(), c.want)
			assert.Assert(t, strings.HasPrefix(end.Stopped, c.stopped), "%q", end.Stopped)
			assert.Equal(t, end.Stopped == "", c.stopped == "")
			if c.stopped == "" {
				assert.Equal(t, proc.ExitCode(end.Err), c.exit)
			} else {
				assert.NilError(t, end.Err)
			}
			assert.Assert(t, took >= c.atLeast, "took %s", took)
			assert.Equal(t, len(end.Survivors), 0)
		})
	}
	_, err := RunGroup(context.Background(), exec.Command("/nonexistent/ib_write_bw"), GroupStop{Name: "t"})
	assert.ErrorContains(t, err, "/nonexistent/ib_write_bw")
}
