package ibperf

import (
	"math"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// dpuScript is a script's log, not one perftest run (field corpus,
// minxinhao/test_ibv): per series an echoed title and header, then
// "ib_send_bw -s SIZE | tail -2" of one server per size, its last row and
// closing rule; the second series' servers never got a client.
const dpuScript = field + "dpu-send-bw-script-remote-never-connected/server.0.log"

// Rows after a closing rule are the next run's tail: all 16 sizes of the
// first series are read, and the second series, banners only, is a server
// no client reached, named by its series.
func TestJoinedTails(t *testing.T) {
	o := parseFile(t, dpuScript)
	assert.Equal(t, len(o.Rows), 16, "1 B .. 32 KiB, one run each")
	assert.Assert(t, o.Joined && o.Closed)
	assert.Equal(t, o.Rows[15].Size, int64(32768))
	assert.Equal(t, o.Rows[15].Avg, 11911.94)
	assert.Equal(t, len(o.Errors), 0, "%+v", o.Errors)
	assert.DeepEqual(t, o.NoClient, []Diag{{Line: 37, Text: `no client connected: "Waiting for client to connect" 15 times (lines 37-65) with nothing a connected server prints after it, in the series "host send to remote-dpu" (table header at line 36)`}})

	p := parseTest(t, "send_bw", nil, dpuScript)
	assert.Equal(t, p.Error, `pair 0 server: server.0.log:37: `+o.NoClient[0].Text)
	got := metricAt(p, "bw_avg", 32768)
	assert.Assert(t, math.Abs(got-99.93) < 0.01, "11911.94 MiB/s is %v Gb/s", got)
}

// One size of the first series whose server no client reached, as the
// second series shows it: that size's row and rule replaced by the
// banner's last two lines. The rows on both sides of it are read, and the
// wait is said in its own series.
func TestJoinedTailsOneSizeNeverConnected(t *testing.T) {
	row := regexp.MustCompile(`(?m)^ 4096 .*\n-+\n`)
	p := edited(t, dpuScript, "server.0.log", func(s string) string {
		return row.ReplaceAllString(s, "* Waiting for client to connect... *\n************************************\n")
	})
	o := parseFile(t, p)
	assert.Equal(t, len(o.Rows), 15)
	assert.Equal(t, o.Rows[12].Size, int64(8192), "the row after the banner is read")
	assert.Equal(t, len(o.NoClient), 2)
	assert.Equal(t, o.NoClient[0], Diag{Line: 27, Text: `no client connected: "Waiting for client to connect" at line 27 with nothing a connected server prints after it, in the series "host send to local-dpu" (table header at line 2)`})
	assert.Equal(t, o.NoClient[1].Line, 37)
}

// A banner is answered by what a connected run prints next: the settings
// block, the QPs' addresses, an error. Real server logs that went on have
// no unanswered wait; a server log that ends at its banner, or at
// rdma_cm's, has one.
func TestWaitsAnswered(t *testing.T) {
	for _, c := range []struct {
		file string
		want []int // lines of unanswered banners
	}{
		{seed + "ibperf.write_bw/server.0.log", nil},
		{seed + "ibperf.write_bw_gdr/server.0.log", nil},
		{field + "moc-h100-cx7-write-bw-gdr-far-gpu/server.0.log", nil},      // TCP banner, CUDA set-up, then rdma_cm's wait and addresses
		{field + "moc-h100-cx7-write-bw-32qp-server-only/server.0.log", nil}, // rdma_cm
		{field + "kernel51-mlx5-write-bw-couldnt-create-qp/server.0.log", nil},
		{issues + "perftest-issue262-write-bw-server-libibverbs-warnings.txt", nil},
		{issues + "perftest-pr21-write-bw-cuda-v100-server.txt", nil},
		{issues + "k8s-rdma-shared-dev-plugin-issue112/server.0.log", []int{4}},
	} {
		o := parseFile(t, c.file)
		var got []int
		for _, d := range o.NoClient {
			got = append(got, d.Line)
		}
		assert.DeepEqual(t, got, c.want)
	}
	// The 32-QP server cut after rdma_cm's wait: killed before a client
	// came.
	cut := edited(t, field+"moc-h100-cx7-write-bw-32qp-server-only/server.0.log", "server.0.log", func(s string) string {
		return s[:strings.Index(s, " local address:")]
	})
	o := parseFile(t, cut)
	assert.DeepEqual(t, o.NoClient, []Diag{{Line: 21, Text: `no client connected: "Waiting for client rdma_cm QP to connect" at line 21 with nothing a connected server prints after it`}})
}

// A server log alone is its pair's source: its own errors, or the client
// that never came, are the reason, not "no output". Where the client's log
// says why it failed, the server's wait adds nothing.
func TestServerLogAlone(t *testing.T) {
	p := parseOutputs(t, nil, field+"k8s-ubuntu1804-image-write-bw-no-device/server.0.log")
	assert.Assert(t, strings.Contains(p.Error, "server.0.log:3: Unable to find the Infiniband/RoCE device"), p.Error)
	assert.Assert(t, strings.HasSuffix(p.Error, "; pair 0: no result rows in server.0.log"), p.Error)
	assert.Assert(t, !strings.Contains(p.Error, "no output"), p.Error)

	k8s := issues + "k8s-rdma-shared-dev-plugin-issue112/"
	p = parseOutputs(t, nil, k8s+"server.0.log")
	assert.Equal(t, p.Error, `pair 0 server: server.0.log:4: no client connected: "Waiting for client to connect" at line 4 with nothing a connected server prints after it`)
	p = parseOutputs(t, nil, k8s+"server.0.log", k8s+"client.0.log")
	assert.Assert(t, !strings.Contains(p.Error, "no client connected"), p.Error)
	assert.Assert(t, strings.Contains(p.Error, "Failed to modify QP 218 to RTR"), p.Error)

	// Planned, the client's output missing: said as the client's.
	p = parseOutputs(t, map[string]string{"pairs": "ionic_7:ionic_1", "out_json": "false"}, seed+"ibperf.write_bw/server.0.log")
	assert.Equal(t, p.Error, "pair ionic_7:ionic_1 client: no output")
	assert.Equal(t, metricAt(p, "bw_avg", 8<<20), 779.21, "the server's table is read")
}

// An HCA that opened but did not answer ibv_query_device (libfabric#5149,
// kernel 5.1 under the verbs stack that worked on 4.15): said with what it
// means.
func TestDeviceAttributesHint(t *testing.T) {
	d := field + "kernel51-mlx5-write-bw-couldnt-create-qp/"
	p := parseOutputs(t, nil, d+"server.0.log", d+"client.0.log")
	assert.Assert(t, strings.Contains(p.Error, "server.0.log:5: Couldn't get device attributes (the HCA did not answer ibv_query_device: the kernel's RDMA driver and the user-space verbs library"), p.Error)
	assert.Assert(t, strings.Contains(p.Error, "Failed to create QP."), p.Error)
}
