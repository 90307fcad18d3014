package ibperf

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

const issues = "testdata/issues/"

// parseOutputs parses outputs as gpuaccept check hands them over: each log
// named by its step when it is one side of a pair (server.N, client.N),
// else step "check".
func parseOutputs(t *testing.T, params map[string]string, logs ...string) result.Parsed {
	t.Helper()
	return parseTest(t, "write_bw", params, logs...)
}

// parseTest is parseOutputs for another test (write_bw_gdr, send_bw).
func parseTest(t *testing.T, test string, params map[string]string, logs ...string) result.Parsed {
	t.Helper()
	var outs []plan.Output
	for _, l := range logs {
		o := plan.Output{Step: "check", Log: l}
		if step := strings.TrimSuffix(filepath.Base(l), ".log"); pairedName(step) {
			o.Step = step
			o.Role, _, _ = strings.Cut(step, ".")
		}
		outs = append(outs, o)
	}
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: test, Params: params, Topology: twoNodes, Outputs: outs})
	assert.NilError(t, err)
	return p
}

func pairedName(step string) bool {
	r, n, ok := strings.Cut(step, ".")
	return ok && (r == "server" || r == "client") && n != "" && strings.Trim(n, "0123456789") == ""
}

func TestNamedDevice(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"IB device rxe2 not found", "rxe2"},
		{"Couldn't get context for mlx5_0", "mlx5_0"},
		{"Couldn't open IB device mlx5_bond_0", "mlx5_bond_0"},
		{"Couldn't get context for the device", ""},
		{"Unable to find the Infiniband/RoCE device", ""},
		{"Couldn't connect to 192.168.125.211:18515", ""},
	} {
		assert.Equal(t, NamedDevice(c.text), c.want, c.text)
	}
}

// An HCA that is not there, or not usable, is the step's error, in
// perftest's words and with what they mean; real outputs of public
// threads (testdata/issues/README.md).
func TestDeviceMissingIsTheStepsError(t *testing.T) {
	for _, c := range []struct {
		name   string
		params map[string]string
		logs   []string
		want   []string
	}{
		{"no devices in the container (k8s-rdma-shared-dev-plugin#169)", nil,
			[]string{issues + "k8s-rdma-shared-dev-plugin-issue169-no-devices.txt"},
			[]string{"pair k8s-rdma-shared-dev-plugin-issue169-no-devices.txt output: k8s-rdma-shared-dev-plugin-issue169-no-devices.txt:2: Did not detect devices (the HCA is not visible on that host",
				"k8s-rdma-shared-dev-plugin-issue169-no-devices.txt:4: Unable to find the Infiniband/RoCE device",
				"no result rows"}},
		{"a named HCA not found (linux-rdma, rxe in a net namespace)", nil,
			[]string{issues + "linux-rdma-rxe-netns-send-bw-device-not-found.txt"},
			[]string{"pair rxe2 output: linux-rdma-rxe-netns-send-bw-device-not-found.txt:1: IB device rxe2 not found (the HCA is not visible",
				"linux-rdma-rxe-netns-send-bw-device-not-found.txt:2: Unable to find the Infiniband/RoCE device"}},
		{"planned: the server's HCA not found, the client cannot connect", map[string]string{"pairs": "rxe2:rxe1", "out_json": "false"},
			[]string{copyAs(t, issues+"linux-rdma-rxe-netns-send-bw-device-not-found.txt", "server.0.log"), copyAs(t, issues+"perftest-pr228-couldnt-connect.txt", "client.0.log")},
			[]string{"pair rxe2:rxe1 server: server.0.log:1: IB device rxe2 not found", "pair rxe2:rxe1 client: client.0.log:1: Couldn't connect to 192.168.125.211:18515"}},
		{"QP cannot reach RTR (k8s-rdma-shared-dev-plugin#112, both sides)", nil,
			[]string{issues + "k8s-rdma-shared-dev-plugin-issue112/server.0.log", issues + "k8s-rdma-shared-dev-plugin-issue112/client.0.log"},
			[]string{"pair mlx5_0 client: client.0.log:20: Failed to modify QP 218 to RTR", "pair mlx5_0 client: client.0.log:21: Unable to Connect the HCA's through the link"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := parseOutputs(t, c.params, c.logs...)
			for _, w := range c.want {
				assert.Assert(t, strings.Contains(p.Error, w), "want %q in %s", w, p.Error)
			}
			for _, ch := range p.Checks {
				assert.Assert(t, ch.OK || !strings.HasPrefix(ch.Name, "HCA"), "%+v", ch)
			}
		})
	}
}

// libibverbs' warnings about drivers it could not load are not failures:
// the server went on to listen (perftest#262).
func TestLibibverbsWarningsAreNotErrors(t *testing.T) {
	o := parseFile(t, issues+"perftest-issue262-write-bw-server-libibverbs-warnings.txt")
	assert.Equal(t, len(o.Errors), 0, "%+v", o.Errors)
	assert.Assert(t, o.Waiting)
	assert.Equal(t, o.Device, "rocep4s0f0")
}

func copyAs(t *testing.T, src, name string) string {
	t.Helper()
	return edited(t, src, name, func(s string) string { return s + "\n" })
}

// An error line belongs to the HCA it names, not to the log it stands in:
// a log that holds two runs (a loop over HCAs; older perftest named the
// HCA it failed on, "Couldn't get context for mlx5_0") reports the failed
// run under its own HCA. Made from seed 004's real outputs with the edits
// named.
func TestErrorsBelongToTheHCATheyName(t *testing.T) {
	srv, cli := seed+"ibperf.write_bw/server.0.log", seed+"ibperf.write_bw/client.0.log"
	failedFirst := func(hca string) func(string) string {
		return func(s string) string { return "Couldn't get context for " + hca + "\n" + s }
	}
	t.Run("another pair's HCA, two pairs from one folder", func(t *testing.T) {
		// Pair 1 is pair 0's logs moved to ionic_6:ionic_2; its server's log
		// starts with a failed run on ionic_7, pair 0's server HCA.
		s1 := edited(t, srv, "server.1.log", func(s string) string {
			return failedFirst("ionic_7")(strings.Replace(s, "Device : ionic_7", "Device : ionic_6", 1))
		})
		c1 := edited(t, cli, "client.1.log", func(s string) string { return strings.Replace(s, "Device : ionic_1", "Device : ionic_2", 1) })
		p := parseOutputs(t, nil, srv, cli, s1, c1)
		assert.Equal(t, p.Info["hca_pairs"], "ionic_7:ionic_1,ionic_6:ionic_2")
		assert.Equal(t, p.Error, "pair ionic_7:ionic_1 server: server.1.log:1: Couldn't get context for ionic_7 (printed in pair ionic_6:ionic_2's output)")
	})
	t.Run("an HCA no pair has, one log", func(t *testing.T) {
		p := parseOutputs(t, nil, edited(t, cli, "loop.log", failedFirst("ionic_0")))
		assert.Equal(t, p.Error, "HCA ionic_0: loop.log:1: Couldn't get context for ionic_0 (printed in the output of pair ionic_1, whose HCA is ionic_1)")
		assert.Equal(t, metricAt(p, "bw_avg", 8<<20), 779.21, "the run on ionic_1 is still read")
	})
	t.Run("planned: a side's own HCA", func(t *testing.T) {
		p := parseOutputs(t, map[string]string{"pairs": "ionic_7:ionic_1", "out_json": "false"},
			edited(t, srv, "server.0.log", failedFirst("ionic_7")), cli)
		assert.Assert(t, strings.HasPrefix(p.Error, "pair ionic_7:ionic_1 server: server.0.log:1: Couldn't get context for ionic_7"), p.Error)
	})
}
