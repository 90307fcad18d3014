package k8s

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/plugins/ibperf"
)

// writeBWPairs is the plan plugins/ibperf makes for ib_write_bw over the
// HCA pairs given (servers first, then clients), for hosts (nil: the
// hosts are the launcher's to place, the client argv says @host0@).
func writeBWPairs(t *testing.T, pairs string, hosts []string) launch.Request {
	t.Helper()
	topo := plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 1}, Hosts: hosts}
	p, err := ibperf.Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "write_bw", Params: map[string]string{"pairs": pairs}, Topology: topo})
	assert.NilError(t, err)
	return launch.Request{Test: "ibperf.write_bw", Timeout: 30 * time.Minute, Topology: topo, Plan: p}
}

// With several ib_write_bw pairs every client reaches the server pod of
// its own pair (server.i for client.i), in its argv and in
// GPUACCEPT_SERVER_HOST, in the dry-run manifests of every flavor.
func TestRenderEachClientFindsItsServer(t *testing.T) {
	server := func(i string) string {
		n := "ga-0000test-1-server-" + i
		return n + "-0." + n
	}
	cases := []struct {
		name   string
		flavor string
		pairs  string
		hosts  []string
		want   map[string]string // client step name -> server pod DNS name
	}{
		{"job 2 pairs, hosts unknown", FlavorJob, "ionic_7:ionic_1,ionic_6:ionic_2", nil,
			map[string]string{"client.0": server("0"), "client.1": server("1")}},
		{"job 3 pairs, hosts given", FlavorJob, "mlx5_0:mlx5_0,mlx5_1:mlx5_1,mlx5_2:mlx5_2", []string{"node-a", "node-b"},
			map[string]string{"client.0": server("0"), "client.1": server("1"), "client.2": server("2")}},
		{"volcano 2 pairs", FlavorVolcano, "ionic_7:ionic_1,ionic_6:ionic_2", nil,
			map[string]string{"client.0": "ga-0000test-1-server-0-lead-0.ga-0000test-1-server-0", "client.1": "ga-0000test-1-server-1-lead-0.ga-0000test-1-server-1"}},
		{"jobset 2 pairs", FlavorJobSet, "ionic_7:ionic_1,ionic_6:ionic_2", nil,
			map[string]string{"client.0": "ga-0000test-1-server-0-lead-0-0.ga-0000test-1-server-0", "client.1": "ga-0000test-1-server-1-lead-0-0.ga-0000test-1-server-1"}},
	}
	serverEnv := regexp.MustCompile(`- name: GPUACCEPT_SERVER_HOST\n\s+value: (\S+)\n`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := New(Config{Image: "img:1", Flavor: c.flavor})
			assert.NilError(t, err)
			l.RunID = "ga-0000test"
			docs, err := l.Commands(writeBWPairs(t, c.pairs, c.hosts))
			assert.NilError(t, err)
			seen := 0
			for _, d := range docs {
				head, obj, _ := strings.Cut(d, "\n")
				step, command, _ := strings.Cut(strings.TrimPrefix(head, "# step "), ": ")
				want, ok := c.want[step]
				if !ok {
					continue
				}
				m := serverEnv.FindStringSubmatch(obj)
				assert.Assert(t, m != nil, "no GPUACCEPT_SERVER_HOST in %s:\n%s", step, obj)
				assert.Equal(t, m[1], want, "%s: GPUACCEPT_SERVER_HOST", step)
				assert.Assert(t, strings.HasSuffix(command, " "+want), "%s: command does not end with %s: %s", step, want, command)
				for other, o := range c.want {
					if o != want {
						assert.Assert(t, !strings.Contains(obj, o), "%s names %s's server %s:\n%s", step, other, o, obj)
					}
				}
				seen++
			}
			assert.Equal(t, seen, len(c.want), "client objects in\n%s", strings.Join(docs, "---\n"))
		})
	}
}
