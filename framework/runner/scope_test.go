package runner

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

func TestScopedParams(t *testing.T) {
	params := map[string]string{
		"iters":                  "20",
		"bindir":                 "/opt/all",
		"rccl:bindir":            "/opt/rccl-tests/build",
		"rccl.alltoall:maxbytes": "128M",
		"mori:python":            "python3.12",
	}
	tests := []struct {
		test string
		want map[string]string
	}{
		{"rccl.all_reduce", map[string]string{"iters": "20", "bindir": "/opt/rccl-tests/build"}},
		{"rccl.alltoall", map[string]string{"iters": "20", "bindir": "/opt/rccl-tests/build", "maxbytes": "128M"}},
		{"mori.ep_intranode", map[string]string{"iters": "20", "bindir": "/opt/all", "python": "python3.12"}},
		{"nccl.all_reduce", map[string]string{"iters": "20", "bindir": "/opt/all"}},
	}
	for _, tc := range tests {
		t.Run(tc.test, func(t *testing.T) {
			assert.DeepEqual(t, ScopedParams(params, tc.test), tc.want)
		})
	}
}

// A stopped test says why first (interrupt or time limit), whatever the
// plugin made of the cut-short output, and keeps its points; a failed one
// then says what failed.
func TestStopped(t *testing.T) {
	live, cancelled := context.Background(), func() context.Context {
		c, cancel := context.WithCancel(context.Background())
		cancel()
		return c
	}()
	points := []result.Judged{{Metric: result.Metric{Name: "busbw", Size: 8, Value: 1}}}
	for _, c := range []struct {
		name   string
		ctx    context.Context
		launch string
		parsed result.Test
		want   string
		status result.Status
	}{
		{"interrupted", cancelled, "cancelled; process group killed", result.Test{Status: result.Error, Message: "parse: rpc error: context canceled", Metrics: points},
			"stopped: the run was interrupted (Ctrl-C or SIGTERM) after 2s; process group killed; the 1 point measured before the stop is kept", result.Error},
		{"interrupted, no launch error", cancelled, "", result.Test{Status: result.Error, Message: "parse: context canceled"},
			"stopped: the run was interrupted (Ctrl-C or SIGTERM) after 2s; nothing was measured before the stop", result.Error},
		{"local time limit", live, "timed out after 1.001s; process group killed", result.Test{Status: result.Pass},
			"stopped: timed out after 1.001s (limit 1s); process group killed; nothing was measured before the stop", result.Error},
		{"slurm time limit", live, "timed out after 4s of running; job 7 cancelled with scancel", result.Test{Status: result.Error},
			"stopped: timed out after 4s of running (limit 1s); job 7 cancelled with scancel; nothing was measured before the stop", result.Error},
		{"scheduler time limit", live, "wait for job: context deadline exceeded", result.Test{Status: result.Fail, Message: "busbw low", Metrics: points},
			"stopped: timed out after 2s (limit 1s); wait for job: context deadline exceeded; busbw low", result.Fail},
		// The trial's hung nccl test: the plugin's message quotes the
		// step's launch error; the stop is said once.
		{"hung, evidence names a node", live, "timed out after 1s; evidence collected in 1m0s; process group killed",
			result.Test{Status: result.Fail, Message: "hang.suspect: timed out after 256 MiB (the largest size measured): vm pid 1156 (all_reduce_perf -b 8 ...) stopped (state T); timed out after 1s; evidence collected in 1m0s; process group killed; output ends at 256 MiB but sizes up to 4 GiB were asked for: truncated", Metrics: points},
			"stopped: timed out after 1s (limit 1s); evidence collected in 1m0s; process group killed; hang.suspect: timed out after 256 MiB (the largest size measured): vm pid 1156 (all_reduce_perf -b 8 ...) stopped (state T); output ends at 256 MiB but sizes up to 4 GiB were asked for: truncated", result.Fail},
		{"not stopped", live, "", result.Test{Status: result.Pass, Message: "18 points inside their bands"}, "18 points inside their bands", result.Pass},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.parsed
			if why := stopReason(c.ctx, time.Second, []plan.Output{{Step: "x", LaunchError: c.launch}}, 2*time.Second); why != "" {
				got = stopped(got, why)
				// A fail's message names what failed (a hung test's node):
				// the verdict after the stop, not a footnote.
				if c.parsed.Message != "" && c.status != result.Fail {
					assert.DeepEqual(t, got.Diagnostics, []result.Diagnostic{{Level: result.Info, Message: "as judged: " + c.parsed.Message}})
				}
			}
			assert.Equal(t, got.Message, c.want)
			assert.Equal(t, got.Status, c.status)
			assert.Equal(t, len(got.Metrics), len(c.parsed.Metrics))
		})
	}
}
