package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

// A rank that hangs on one node (the stand-in stops itself after the
// 256 MiB row, as a rank stopped with SIGSTOP on a GPU machine) under the
// local launcher: when the test's time runs out the evidence step lists
// the test's processes before anything is stopped, the verdict is a FAIL
// naming the node and the stopped process, the evidence is in raw/ and
// covered by the manifest, and nothing is left running.
func TestRunHangNamesTheNode(t *testing.T) {
	bin := standin(t)
	rec, _ := filepath.Abs(healthy)
	t.Setenv("STANDIN_RECORDINGS", rec)
	t.Setenv("STANDIN_HANG_HOST", "localhost")
	t.Setenv("STANDIN_HANG_AFTER", "268435456")
	out := t.TempDir()
	code, stdout, errs := cli(t, "--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--test", "nccl.all_reduce",
		"--param", "bindir="+bin, "--param", "evidence=true", "--out", out, "--timeout", "3s")
	assert.Equal(t, code, 1, stdout+errs)
	assert.Assert(t, strings.Contains(stdout, "stopped: timed out after"), stdout)
	var res struct {
		Tests []struct {
			Status, Message string
			Checks          []struct {
				Name, Host, Message string
				OK                  bool
			}
		}
	}
	assert.NilError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, layout.Results))), &res))
	assert.Equal(t, len(res.Tests), 1)
	tt := res.Tests[0]
	assert.Equal(t, tt.Status, "fail", tt.Message)
	assert.Assert(t, strings.Contains(tt.Message, "timed out after 256 MiB (the largest size measured)"), tt.Message)
	assert.Assert(t, strings.Contains(tt.Message, "all_reduce_perf"), tt.Message)
	assert.Assert(t, strings.Contains(tt.Message, "stopped (state T)"), tt.Message)
	var suspect string
	for _, c := range tt.Checks {
		if c.Name == "hang.suspect" && !c.OK {
			suspect = c.Host
		}
	}
	assert.Assert(t, suspect != "", "no failed hang.suspect check naming a host: %+v", tt.Checks)
	ev := filepath.Join(out, "raw", "nccl.all_reduce", "evidence.0.log")
	assert.Assert(t, strings.Contains(readFile(t, ev), "gpuaccept-evidence|"), readFile(t, ev))
	assert.Assert(t, strings.Contains(readFile(t, filepath.Join(out, layout.Manifest)), "raw/nccl.all_reduce/evidence.0.log"))
	assert.DeepEqual(t, testenv.ProcessesWith(bin), []string(nil))
}
