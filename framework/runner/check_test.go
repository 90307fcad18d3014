package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

func TestGroupFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a/run.log", "a/run.json", "b/run.log", "r/all_reduce.log", "r/all_reduce.files/all_reduce.json", "c/other.txt"} {
		p := filepath.Join(dir, f)
		assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		assert.NilError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
	in := func(f string) string { return filepath.Join(dir, f) }
	groups, err := groupFiles([]string{in("a/run.log"), in("a/run.json"), in("b/run.log"), in("r/all_reduce.log"), in("c/other.txt")}, t.TempDir(), nil)
	assert.NilError(t, err)
	assert.Equal(t, len(groups), 4)
	// run.log + run.json side by side are one run.
	assert.Equal(t, groups[0].outs[0].Log, in("a/run.log"))
	assert.DeepEqual(t, groups[0].outs[0].Files, map[string]string{"run.json": in("a/run.json")})
	// Same name in another folder: labelled by path.
	assert.Equal(t, groups[0].label, in("a/run.log"))
	assert.Equal(t, groups[1].label, in("b/run.log"))
	// A results folder's log finds its -J file in STEP.files/.
	assert.DeepEqual(t, groups[2].outs[0].Files, map[string]string{"all_reduce.json": in("r/all_reduce.files/all_reduce.json")})
	assert.Equal(t, groups[3].label, "other.txt")

	// A paired test's sides in one folder are one run, named by their
	// file names or by the outputs.json of a results folder; a second
	// folder's pair is another run.
	for _, f := range []string{"p/server.0.log", "p/client.0.log", "p/server.1.log", "p/client.1.log", "q/server.0.log", "q/client.0.log", "o/srv.log", "o/cli.log"} {
		p := filepath.Join(dir, f)
		assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		assert.NilError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
	assert.NilError(t, os.WriteFile(in("o/outputs.json"), []byte(`[{"step":"server.0","role":"server","host":"n1","log":"srv.log"},{"step":"client.0","role":"client","host":"n2","log":"cli.log"}]`), 0o644))
	groups, err = groupFiles([]string{in("p/server.0.log"), in("p/client.0.log"), in("p/server.1.log"), in("p/client.1.log"), in("q/client.0.log"), in("q/server.0.log"), in("o/srv.log"), in("o/cli.log")}, t.TempDir(), []string{"server", "client"})
	assert.NilError(t, err)
	type side struct{ Step, Role, Host, Log string }
	var got [][]side
	for _, g := range groups {
		var ss []side
		for _, o := range g.outs {
			ss = append(ss, side{o.Step, o.Role, o.Host, o.Log})
		}
		got = append(got, ss)
	}
	assert.DeepEqual(t, got, [][]side{
		{{"server.0", "server", "", in("p/server.0.log")}, {"client.0", "client", "", in("p/client.0.log")}, {"server.1", "server", "", in("p/server.1.log")}, {"client.1", "client", "", in("p/client.1.log")}},
		{{"client.0", "client", "", in("q/client.0.log")}, {"server.0", "server", "", in("q/server.0.log")}},
		{{"server.0", "server", "n1", in("o/srv.log")}, {"client.0", "client", "n2", in("o/cli.log")}},
	})
	assert.Equal(t, groups[2].label, "srv.log+cli.log")

	// The grouping follows the roles the test declares, not the names
	// ibperf happens to use: without roles the sides are runs of their
	// own; with roles sender and receiver, their logs pair.
	groups, err = groupFiles([]string{in("p/server.0.log"), in("p/client.0.log")}, t.TempDir(), nil)
	assert.NilError(t, err)
	assert.Equal(t, len(groups), 2)
	assert.Equal(t, groups[0].outs[0].Role, "")
	for _, f := range []string{"s/sender.0.log", "s/receiver.0.log"} {
		assert.NilError(t, os.MkdirAll(filepath.Dir(in(f)), 0o755))
		assert.NilError(t, os.WriteFile(in(f), []byte("x"), 0o644))
	}
	groups, err = groupFiles([]string{in("s/sender.0.log"), in("s/receiver.0.log")}, t.TempDir(), []string{"sender", "receiver"})
	assert.NilError(t, err)
	assert.Equal(t, len(groups), 1)
	assert.Equal(t, groups[0].outs[1].Step+" "+groups[0].outs[1].Role, "receiver.0 receiver")

	_, err = groupFiles([]string{in("missing.log")}, t.TempDir(), nil)
	assert.ErrorContains(t, err, "missing.log: no such file")
}

// ib_write_bw logs named as people name them (ibwb-server.log,
// ibwb-client.log) pair by what they hold: the server's log holds the
// ready line its plan marks ("Waiting for client to connect"), so check
// judges the two as one run, as server.0.log and client.0.log are. The
// logs are real ones renamed: seed 004's pair, and the two pods' consoles
// of k8s-rdma-shared-dev-plugin issue 112 (plugins/ibperf/testdata/issues).
func TestCheckPairsSidesByContent(t *testing.T) {
	ctx := context.Background()
	mi355x := getSKU(t, "mi355x")
	two := plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}
	const issue112 = "../../plugins/ibperf/testdata/issues/k8s-rdma-shared-dev-plugin-issue112/"
	copyAs := func(t *testing.T, dir, src, name string) string {
		data, err := os.ReadFile(src)
		assert.NilError(t, err)
		p := filepath.Join(dir, name)
		assert.NilError(t, os.WriteFile(p, data, 0o644))
		return p
	}
	for _, c := range []struct {
		name, from string
		order      []string // the renamed files, in the order given
	}{
		{"seed 004, server first", seedPair, []string{"ibwb-server.log", "ibwb-client.log"}},
		{"seed 004, client first", seedPair, []string{"ibwb-client.log", "ibwb-server.log"}},
		{"issue 112", issue112, []string{"ibwb-server.log", "ibwb-client.log"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			named, err := Check(ctx, plugins, mi355x, "ibperf.write_bw", two, []string{c.from + "server.0.log", c.from + "client.0.log"}, "test")
			assert.NilError(t, err)
			assert.Equal(t, len(named.Tests), 1)
			dir := t.TempDir()
			var files []string
			for _, n := range c.order {
				role, _, _ := strings.Cut(strings.TrimPrefix(n, "ibwb-"), ".")
				files = append(files, copyAs(t, dir, c.from+role+".0.log", n))
			}
			run, err := Check(ctx, plugins, mi355x, "ibperf.write_bw", two, files, "test")
			assert.NilError(t, err)
			assert.Equal(t, len(run.Tests), 1, "one run, not two: %v", run.Tests)
			got := verdictOf(t, run)
			// Messages quote the logs by name: the names differ, nothing else.
			got.Message = strings.NewReplacer("ibwb-server.log", "server.0.log", "ibwb-client.log", "client.0.log").Replace(got.Message)
			assert.DeepEqual(t, got, verdictOf(t, named))
		})
	}
	// Two servers' logs (no client among them) stay runs of their own.
	dir := t.TempDir()
	files := []string{copyAs(t, dir, seedPair+"server.0.log", "a-server.log"), copyAs(t, dir, issue112+"server.0.log", "b-server.log")}
	run, err := Check(ctx, plugins, mi355x, "ibperf.write_bw", two, files, "test")
	assert.NilError(t, err)
	assert.Equal(t, len(run.Tests), 2)
}
