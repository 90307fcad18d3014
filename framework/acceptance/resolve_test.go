package acceptance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/hosts"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/site"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// resolveSKU is a SKU of 8 GPUs a node with a 1-node suite, a 2-node
// suite and a health suite, as baselines/h200.yaml has them.
func resolveSKU() *sku.SKU {
	return &sku.SKU{Name: "h200", GPUsPerNode: 8, Suites: map[string]*sku.Suite{
		"singlenode": {Nodes: 1, Tests: []*sku.SuiteTest{{Test: "nccl.all_reduce"}, {Test: "gemm.matmul"}}},
		"multinode":  {Nodes: 2, Tests: []*sku.SuiteTest{{Test: "nccl.all_reduce"}, {Test: "ibperf.write_bw"}}},
		"node":       {Tests: []*sku.SuiteTest{{Test: "health.node"}}},
	}}
}

func hs(names ...string) []hosts.Host {
	var out []hosts.Host
	for _, n := range names {
		name, slots, _ := strings.Cut(n, ":")
		h := hosts.Host{Name: name}
		if slots != "" {
			h.Slots = int(slots[0] - '0')
		}
		out = append(out, h)
	}
	return out
}

// One rule of scope for run, localise, health and check (issue 31, 2):
// the defaults, the hosts given, --sku auto's count and the notes, from
// a Request alone, no command line.
func TestResolveTopology(t *testing.T) {
	cases := []struct {
		name      string
		req       Request
		nodes     int
		gpus      int
		hosts     []string
		notes     []string
		wantError string
	}{
		{name: "run: the suite's nodes, the SKU's GPUs", req: Request{Command: CommandRun, Suite: "multinode"}, nodes: 2, gpus: 8},
		{name: "run: a suite of no count runs on 1 node", req: Request{Command: CommandRun, Suite: "node"}, nodes: 1, gpus: 8},
		{name: "run: every host given, noted against the suite's count", req: Request{Command: CommandRun, Suite: "multinode", Hosts: hs("a", "b", "c")},
			nodes: 3, gpus: 8, hosts: []string{"a", "b", "c"},
			notes: []string{"suite multinode runs on 2 nodes by default; running on the 3 hosts given (--nodes sets the count)"}},
		{name: "localise: every host given, no note", req: Request{Command: CommandLocalise, Suite: "multinode", Hosts: hs("a", "b", "c")},
			nodes: 3, gpus: 8, hosts: []string{"a", "b", "c"}},
		{name: "health: every host given", req: Request{Command: CommandHealth, Suite: "node", Hosts: hs("a", "b")}, nodes: 2, gpus: 8, hosts: []string{"a", "b"}},
		{name: "--nodes below the hosts takes the first", req: Request{Command: CommandHealth, Suite: "node", Nodes: 2, Hosts: hs("a", "b", "c")},
			nodes: 2, gpus: 8, hosts: []string{"a", "b"}, notes: []string{"--nodes 2: using the first 2 of the 3 hosts given (a,b)"}},
		{name: "--gpus-per-node wins over --sku auto's count", req: Request{Command: CommandRun, Suite: "singlenode", GPUsPerNode: 2, AutoGPUs: 4}, nodes: 1, gpus: 2},
		{name: "--sku auto's count over the SKU's", req: Request{Command: CommandRun, Suite: "singlenode", AutoGPUs: 4}, nodes: 1, gpus: 4},
		{name: "slots other than the GPUs are noted", req: Request{Command: CommandRun, Suite: "multinode", Hosts: hs("a:8", "b:4")},
			nodes: 2, gpus: 8, hosts: []string{"a", "b"}, notes: []string{"the slots given (b:4) are not used: every node runs 8 GPUs (SKU h200's GPUs per node)"}},
		{name: "slots noted against --sku auto's count", req: Request{Command: CommandHealth, Suite: "node", Hosts: hs("a:8"), AutoGPUs: 4},
			nodes: 1, gpus: 4, hosts: []string{"a"}, notes: []string{"the slots given (a:8) are not used: every node runs 4 GPUs (the GPUs --sku auto counted)"}},
		{name: "health --slurm-check is this node", req: Request{Command: CommandHealth, Suite: "multinode", SlurmCheck: true}, nodes: 1, gpus: 8},
		{name: "health of 2 nodes through a one-host launcher", req: Request{Command: CommandHealth, Suite: "multinode", OneHost: true, Launcher: "local", OtherLaunchers: []string{"ssh", "slurm"}},
			wantError: "suite multinode needs 2 nodes, but launcher local runs on this host only: give --nodes 1 to check this node, or another --launcher (ssh, slurm)"},
		{name: "health of the hosts given through a one-host launcher", req: Request{Command: CommandHealth, Suite: "node", Hosts: hs("a", "b"), OneHost: true, Launcher: "local"},
			wantError: "2 hosts are given, but launcher local"},
		{name: "health --nodes 3 through a one-host launcher", req: Request{Command: CommandHealth, Suite: "node", Nodes: 3, OneHost: true, Launcher: "local"},
			wantError: "--nodes 3 asks for 3 nodes, but launcher local"},
		{name: "run through a one-host launcher is the launcher's to refuse", req: Request{Command: CommandRun, Suite: "multinode", OneHost: true}, nodes: 2, gpus: 8},
		{name: "localise needs 2 hosts", req: Request{Command: CommandLocalise, Suite: "multinode", Hosts: hs("a")}, wantError: "localise needs the nodes to narrow down"},
		{name: "--nodes out of range", req: Request{Command: CommandRun, Suite: "multinode", Nodes: -1}, wantError: "--nodes -1: want 1 to 131072"},
		{name: "--gpus-per-node out of range", req: Request{Command: CommandHealth, Suite: "node", GPUsPerNode: 4096}, wantError: "--gpus-per-node 4096: want 1 to 1024"},
		{name: "no such suite", req: Request{Command: CommandRun, Suite: "nope"}, wantError: `SKU h200 has no suite "nope" (known: multinode, node, singlenode)`},
		{name: "check: the scope given", req: Request{Command: CommandCheck, Nodes: 2, GPUsPerNode: 4}, nodes: 2, gpus: 4},
		{name: "check: no default scope", req: Request{Command: CommandCheck, Nodes: 1}, wantError: "check needs --nodes and --gpus-per-node, both >= 1"},
		{name: "check: counts out of range", req: Request{Command: CommandCheck, Nodes: 1 << 40, GPUsPerNode: 2}, wantError: "--nodes and --gpus-per-node: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.req.SKU = resolveSKU()
			got, err := Resolve(c.req)
			if c.wantError != "" {
				assert.ErrorContains(t, err, c.wantError)
				return
			}
			assert.NilError(t, err)
			if len(got.Topology.Hosts) == 0 {
				got.Topology.Hosts = nil // none given: empty or nil alike
			}
			assert.DeepEqual(t, got.Topology, plan.Topology{Scope: plan.Scope{Nodes: c.nodes, GPUsPerNode: c.gpus}, Hosts: c.hosts})
			assert.DeepEqual(t, got.Notes, c.notes)
		})
	}
}

// Parameters: the command line's over the site file's, scopes checked,
// --test checked against the suite.
func TestResolveParams(t *testing.T) {
	st := &site.Site{Params: map[string]map[string]string{
		"nccl":            {"bindir": "/site/nccl", "minbytes": "1M"},
		"nccl.all_reduce": {"iters": "50"},
		"rccl":            {"bindir": "/site/rccl"}, // not a plugin of the suite: left out
	}}
	cases := []struct {
		name      string
		params    []string
		tests     []string
		site      *site.Site
		want      map[string]string
		wantError string
	}{
		{name: "none", want: map[string]string{}},
		{name: "the site's, of the suite's plugins and tests", site: st,
			want: map[string]string{"nccl:bindir": "/site/nccl", "nccl:minbytes": "1M", "nccl.all_reduce:iters": "50"}},
		{name: "a --param wins, scoped or not", site: st, params: []string{"bindir=/mine", "nccl.all_reduce:iters=5"},
			want: map[string]string{"bindir": "/mine", "nccl:minbytes": "1M", "nccl.all_reduce:iters": "5"}},
		{name: "a key given twice keeps the last", params: []string{"iters=1", "iters=2"}, want: map[string]string{"iters": "2"}},
		{name: "no value", params: []string{"novalue"}, wantError: `--param "novalue": want KEY=VALUE`},
		{name: "no key", params: []string{"=1"}, wantError: `--param "=1": want KEY=VALUE`},
		{name: "a scope of no plugin or test", params: []string{"rcl:bindir=/x"}, wantError: `--param rcl:bindir: "rcl" is neither a plugin nor a test of the suite (known: nccl, nccl.all_reduce, gemm, gemm.matmul)`},
		{name: "--test of the suite", tests: []string{"gemm.matmul"}, want: map[string]string{}},
		{name: "--test not of the suite", tests: []string{"all_reduce"}, wantError: "--test all_reduce: not a test of suite singlenode; did you mean nccl.all_reduce? (its tests: nccl.all_reduce, gemm.matmul)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Resolve(Request{Command: CommandRun, SKU: resolveSKU(), Suite: "singlenode", Params: c.params, Tests: c.tests, Site: c.site})
			if c.wantError != "" {
				assert.ErrorContains(t, err, c.wantError)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, got.Params, c.want)
		})
	}
}

// --sku auto's probe runs before a SKU is known: the node rule without a
// suite, and as many GPUs as any SKU's node has.
func TestProbeTopology(t *testing.T) {
	cases := []struct {
		name        string
		nodes, gpus int
		hosts       []string
		maxGPUs     int
		want        plan.Topology
	}{
		{"nothing given", 0, 0, nil, 8, plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 8}}},
		{"the hosts given", 0, 0, []string{"a", "b"}, 8, plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}, Hosts: []string{"a", "b"}}},
		{"--nodes below the hosts", 1, 2, []string{"a", "b"}, 8, plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}, Hosts: []string{"a"}}},
		{"no SKU with GPUs", 0, 0, nil, 0, plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.DeepEqual(t, ProbeTopology(c.nodes, c.gpus, c.hosts, c.maxGPUs), c.want)
		})
	}
}

func TestReadHosts(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "hostfile")
	assert.NilError(t, os.WriteFile(file, []byte("c slots=8\nd\n"), 0o644))
	cases := []struct {
		name, list, file string
		want             []hosts.Host
		wantError        string
	}{
		{name: "none"},
		{name: "list then file", list: "a:8,b", file: file, want: []hosts.Host{{Name: "a", Slots: 8}, {Name: "b"}, {Name: "c", Slots: 8}, {Name: "d"}}},
		{name: "a host twice", list: "c", file: file, wantError: "host c is listed twice in --hosts/--hostfile"},
		{name: "no hostfile", file: filepath.Join(dir, "nope"), wantError: "read --hostfile: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReadHosts(c.list, c.file)
			if c.wantError != "" {
				assert.ErrorContains(t, err, c.wantError)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, got, c.want)
		})
	}
}

// A gpuaccept-results planted in the working directory as a symbolic link
// (or a file) is refused, not followed: root running gpuaccept would
// otherwise write its results wherever the link's owner points it. A
// given --out must be a real, empty folder.
func TestResultsDir(t *testing.T) {
	cases := []struct {
		name      string
		plant     func(t *testing.T)
		out       string
		want      string
		wantError string
	}{
		{name: "a real folder", want: filepath.Join("gpuaccept-results", "h200-x")},
		{name: "parent a link to a folder", plant: func(t *testing.T) { assert.NilError(t, os.Symlink(t.TempDir(), "gpuaccept-results")) },
			wantError: "gpuaccept-results in the working directory is a symbolic link"},
		{name: "parent a dangling link", plant: func(t *testing.T) { assert.NilError(t, os.Symlink("/nonexistent/x", "gpuaccept-results")) },
			wantError: "gpuaccept-results in the working directory is a symbolic link"},
		{name: "parent a file", plant: func(t *testing.T) { assert.NilError(t, os.WriteFile("gpuaccept-results", nil, 0o644)) },
			wantError: "gpuaccept-results in the working directory is not a folder"},
		{name: "a name taken by a link is taken", plant: func(t *testing.T) {
			assert.NilError(t, os.Mkdir("gpuaccept-results", 0o755))
			assert.NilError(t, os.Symlink("/nonexistent/x", filepath.Join("gpuaccept-results", "h200-x")))
		}, want: filepath.Join("gpuaccept-results", "h200-x-2")},
		{name: "--out new", out: "new", want: "new"},
		{name: "--out empty", plant: func(t *testing.T) { assert.NilError(t, os.Mkdir("empty", 0o755)) }, out: "empty", want: "empty"},
		{name: "--out holding files", plant: func(t *testing.T) {
			assert.NilError(t, os.Mkdir("used", 0o755))
			assert.NilError(t, os.WriteFile(filepath.Join("used", "x"), nil, 0o644))
		}, out: "used", wantError: "results folder used already holds files"},
		{name: "--out a link", plant: func(t *testing.T) { assert.NilError(t, os.Symlink(t.TempDir(), "link")) }, out: "link",
			wantError: "results folder link is a symbolic link"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			if c.plant != nil {
				c.plant(t)
			}
			got, err := ResultsDir(c.out, "h200-x")
			if c.wantError != "" {
				assert.ErrorContains(t, err, c.wantError)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, got, c.want)
		})
	}
}

func TestDirName(t *testing.T) {
	at := time.Date(2026, 12, 7, 19, 5, 9, 0, time.FixedZone("CET", 3600))
	assert.Equal(t, DirName("h200", "multinode", at), "h200-multinode-20261207-180509")
	assert.Equal(t, DirName("h200", "", at), "h200-20261207-180509")
}

func TestSlurmNode(t *testing.T) {
	t.Setenv("SLURMD_NODENAME", "gpu-node-17")
	assert.Equal(t, SlurmNode(), "gpu-node-17")
	t.Setenv("SLURMD_NODENAME", "")
	host, _ := os.Hostname()
	assert.Equal(t, SlurmNode(), host)
}

// The names a mistyped test could have meant (the CLI's messages: issue
// 22's conventions).
func TestDidYouMean(t *testing.T) {
	known := []string{"nccl.all_reduce", "nccl.all_gather", "rccl.all_reduce", "ibperf.write_bw", "gemm.matmul"}
	cases := []struct{ name, want string }{
		{"all_reduce", "; did you mean nccl.all_reduce or rccl.all_reduce?"},
		{"nccl.allreduce", "; did you mean nccl.all_reduce?"},
		{"All-Reduce", "; did you mean nccl.all_reduce or rccl.all_reduce?"},
		{"nccl.all_gater", "; did you mean nccl.all_gather?"},
		{"write-bw", "; did you mean ibperf.write_bw?"},
		{"hbm.copy", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, DidYouMean(c.name, known), c.want)
		})
	}
}
