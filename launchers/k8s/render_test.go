package k8s

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	"k8s.io/utils/ptr"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

func testSKU(t *testing.T) *sku.SKU {
	t.Helper()
	data, err := os.ReadFile("testdata/a4x.yaml")
	assert.NilError(t, err)
	s, err := sku.Parse(data, "testdata/a4x.yaml")
	assert.NilError(t, err)
	return s
}

// allGather is the plan the nccl plugin makes for all_gather over MPI.
func allGather(nodes, gpus int) launch.Request {
	return launch.Request{
		Test:     "nccl.all_gather",
		Timeout:  30 * time.Minute,
		Topology: plan.Topology{Scope: plan.Scope{Nodes: nodes, GPUsPerNode: gpus}},
		Plan: plan.Plan{Steps: []plan.Step{{
			Name: "all_gather", Argv: []string{"all_gather_perf", "-b", "1K", "-e", "8G", "-f", "2", "-g", "1", "-J", "all_gather.json"},
			Env: map[string]string{"NCCL_DEBUG": "INFO"}, Procs: nodes * gpus, ProcsPerNode: gpus, MPI: true, Files: []string{"all_gather.json"},
		}}},
	}
}

func pairedWriteBW() launch.Request {
	return launch.Request{
		Test:     "ibperf.write_bw",
		Timeout:  30 * time.Minute,
		Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 1}, Hosts: []string{"node-a", "node-b"}},
		Plan: plan.Plan{Steps: []plan.Step{
			{Name: "server", Role: "server", Argv: []string{"ib_write_bw", "-d", "mlx5_0", "--report_gbits"}, Procs: 1, ProcsPerNode: 1, Host: 0, ReadyMarker: "Waiting for client", Timeout: 2 * time.Minute},
			{Name: "client", Role: "client", Argv: []string{"ib_write_bw", "-d", "mlx5_0", "--report_gbits", "node-a"}, Procs: 1, ProcsPerNode: 1, Host: 1},
		}},
	}
}

// The manifests of every flavor, for a 2-node MPI test, a 1-node test and
// a server/client pair, are what the golden files hold (go test -update
// rewrites them after a deliberate change; review the diff).
func TestCommandsGolden(t *testing.T) {
	cases := []struct {
		name   string
		flavor string
		req    launch.Request
		hosts  []string // --hosts
	}{
		{"job-2node", FlavorJob, allGather(2, 4), nil},
		{"job-1node", FlavorJob, allGather(1, 4), nil},
		{"job-paired", FlavorJob, pairedWriteBW(), nil},
		{"jobset-2node", FlavorJobSet, allGather(2, 4), nil},
		{"volcano-2node", FlavorVolcano, allGather(2, 4), nil},
		{"mpijob-2node", FlavorMPIJob, allGather(2, 4), nil},
		{"mpijob-1node", FlavorMPIJob, allGather(1, 4), nil},
		{"job-2node-pinned", FlavorJob, allGather(2, 4), []string{"gpu-node-1", "gpu-node-0"}},
		{"jobset-2node-pinned", FlavorJobSet, allGather(2, 4), []string{"gpu-node-1", "gpu-node-0"}},
		{"volcano-2node-pinned", FlavorVolcano, allGather(2, 4), []string{"gpu-node-1", "gpu-node-0"}},
		{"mpijob-2node-pinned", FlavorMPIJob, allGather(2, 4), []string{"gpu-node-1", "gpu-node-0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := New(Config{SKU: testSKU(t), Flavor: c.flavor, Namespace: "acceptance", Hosts: c.hosts})
			assert.NilError(t, err)
			l.RunID = "ga-0000test"
			cmds, err := l.Commands(c.req)
			assert.NilError(t, err)
			golden.Assert(t, strings.Join(cmds, "---\n"), filepath.Join(c.name+".yaml"))
		})
	}
}

// What the SKU asks for lands on the pods, and the pods of a multi-node
// step get the key Secret, spread over nodes, and find each other by name.
func TestRenderCarriesSKU(t *testing.T) {
	l, err := New(Config{SKU: testSKU(t), Namespace: "acceptance", Queue: "override-q"})
	assert.NilError(t, err)
	l.RunID = "ga-0000test"
	r, err := l.render(allGather(2, 4), "ga-0000test-1", "acceptance", nil)
	assert.NilError(t, err)
	assert.Assert(t, r.secret != nil)
	w := r.steps[0]
	assert.Equal(t, w.pods, 2)
	assert.DeepEqual(t, w.hosts, []string{"ga-0000test-1-all-gather-0.ga-0000test-1-all-gather", "ga-0000test-1-all-gather-1.ga-0000test-1-all-gather"})
	y, err := YAML(r.objects())
	assert.NilError(t, err)
	for _, want := range []string{
		"nvidia.com/gpu: \"4\"", "nvidia.com/mlnxnics: \"4\"", "k8s.v1.cni.cncf.io/networks: hostdev-net", "medium: Memory", "sizeLimit: 250Gi",
		"- IPC_LOCK", "cloud.google.com/gke-accelerator: nvidia-gb200", "value: present", "kueue.x-k8s.io/queue-name: override-q",
		"name: NCCL_SOCKET_IFNAME", "name: NCCL_DEBUG", "topologyKey: kubernetes.io/hostname", "secretName: ga-0000test-1-ssh",
		"--host ga-0000test-1-all-gather-0.ga-0000test-1-all-gather:4,ga-0000test-1-all-gather-1.ga-0000test-1-all-gather:4",
		"-x NCCL_DEBUG -x NCCL_SOCKET_IFNAME",
	} {
		assert.Assert(t, strings.Contains(y, want), "missing %q in\n%s", want, y)
	}
}

// A client step reaches its server by the server pod's DNS name.
func TestRenderPairedClientFindsServer(t *testing.T) {
	l, err := New(Config{Image: "img:1"})
	assert.NilError(t, err)
	l.RunID = "ga-0000test"
	r, err := l.render(pairedWriteBW(), "ga-0000test-1", "ns", nil)
	assert.NilError(t, err)
	assert.Assert(t, r.secret == nil, "no ssh for single-pod steps")
	srv, cli := r.steps[0], r.steps[1]
	assert.Equal(t, srv.hosts[0], "ga-0000test-1-server-0.ga-0000test-1-server")
	assert.Equal(t, cli.step.Argv[len(cli.step.Argv)-1], srv.hosts[0])
	assert.Equal(t, cli.step.Env["GPUACCEPT_SERVER_HOST"], srv.hosts[0])
	assert.Equal(t, len(srv.objects), 2, "server: Service + Job")
	assert.Equal(t, len(cli.objects), 1, "client: Job only")
}

func TestNewRejects(t *testing.T) {
	bad := func(k *sku.Kubernetes) *sku.SKU { return &sku.SKU{Name: "x", File: "x.yaml", Kubernetes: k} }
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no image", Config{}, "needs a container image"},
		{"flavor", Config{Image: "i", Flavor: "pytorchjob"}, `--k8s-flavor "pytorchjob"`},
		{"quantity", Config{SKU: bad(&sku.Kubernetes{Image: "i", Resources: map[string]string{"rdma/ib": "lots"}, Line: 7})}, `x.yaml: line 7: field kubernetes.resources: rdma/ib: "lots" is not a quantity`},
		{"shm", Config{SKU: bad(&sku.Kubernetes{Image: "i", ShmSize: "big", Line: 3})}, "x.yaml: line 3: field kubernetes.shm_size"},
		{"resource name", Config{SKU: bad(&sku.Kubernetes{Image: "i", Resources: map[string]string{"no spaces": "1"}})}, `field kubernetes.resources: name "no spaces"`},
		{"gpu twice", Config{SKU: bad(&sku.Kubernetes{Image: "i", GPUResource: "amd.com/gpu", Resources: map[string]string{"amd.com/gpu": "8"}})}, "is the gpu_resource"},
		{"label value", Config{SKU: bad(&sku.Kubernetes{Image: "i", NodeSelector: map[string]string{"a": "b c"}})}, "field kubernetes.node_selector: a: value"},
		{"env name", Config{SKU: bad(&sku.Kubernetes{Image: "i", Env: map[string]string{"1X": "b"}})}, "field kubernetes.env"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.cfg)
			assert.ErrorContains(t, err, c.want)
		})
	}
}

func TestDeadline(t *testing.T) {
	cases := []struct {
		test, step time.Duration
		want       *int64
	}{
		{0, 0, nil},
		{30 * time.Minute, 0, ptr.To(int64(1860))},
		{30 * time.Minute, 2 * time.Minute, ptr.To(int64(180))},
		{0, 90 * time.Second, ptr.To(int64(150))},
		{time.Minute, 2 * time.Minute, ptr.To(int64(120))},
		{1500 * time.Millisecond, 0, ptr.To(int64(62))},
	}
	for _, c := range cases {
		assert.DeepEqual(t, deadline(c.test, c.step), c.want)
	}
}

func TestObjectName(t *testing.T) {
	cases := []struct {
		parts []string
		max   int
		want  string
	}{
		{[]string{"ga-1", "all_reduce"}, 40, "ga-1-all-reduce"},
		{[]string{"ga-1", "Write.BW"}, 40, "ga-1-write-bw"},
		{[]string{"ga-1", strings.Repeat("x", 60)}, 20, "ga-1-xxxxxxxxxxxxxxx"},
		{[]string{"ga-1", "x_____________y"}, 6, "ga-1-x"},
	}
	for _, c := range cases {
		assert.Equal(t, objectName(c.max, c.parts...), c.want)
	}
}

// Every container of every pod carries plan.HostsEnv: the test's nodes as
// the pods' DNS names, in node order, the names mpirun's --host and the
// client's server address use.
func TestRenderHostsEnv(t *testing.T) {
	hostsEnv := regexp.MustCompile(`- name: GPUACCEPT_HOSTS\n\s+value: (\S+)\n`)
	containers := regexp.MustCompile(`(?m)^\s+containers:$`)
	ag := func(i int) string { return fmt.Sprintf("ga-0000test-1-all-gather-%d.ga-0000test-1-all-gather", i) }
	cases := []struct {
		name   string
		flavor string
		req    launch.Request
		want   []string // one per pod template
	}{
		{"job 2 nodes", FlavorJob, allGather(2, 4), []string{ag(0) + "," + ag(1)}},
		{"job 1 node", FlavorJob, allGather(1, 4), []string{ag(0)}},
		{"jobset 2 nodes", FlavorJobSet, allGather(2, 4), repeat(2, "ga-0000test-1-all-gather-lead-0-0.ga-0000test-1-all-gather,ga-0000test-1-all-gather-worker-0-0.ga-0000test-1-all-gather")},
		{"volcano 3 nodes", FlavorVolcano, allGather(3, 4), repeat(2, "ga-0000test-1-all-gather-lead-0.ga-0000test-1-all-gather,ga-0000test-1-all-gather-worker-0.ga-0000test-1-all-gather,ga-0000test-1-all-gather-worker-1.ga-0000test-1-all-gather")},
		{"mpijob 2 nodes", FlavorMPIJob, allGather(2, 4), repeat(2, "ga-0000test-1-all-gather-worker-0.ga-0000test-1-all-gather,ga-0000test-1-all-gather-worker-1.ga-0000test-1-all-gather")},
		{"mpijob 1 node", FlavorMPIJob, allGather(1, 4), []string{ag(0)}},
		{"paired", FlavorJob, pairedWriteBW(), repeat(2, "ga-0000test-1-server-0.ga-0000test-1-server,ga-0000test-1-client-0.ga-0000test-1-client")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := New(Config{SKU: testSKU(t), Flavor: c.flavor, Namespace: "acceptance"})
			assert.NilError(t, err)
			l.RunID = "ga-0000test"
			r, err := l.render(c.req, "ga-0000test-1", "acceptance", nil)
			assert.NilError(t, err)
			y, err := YAML(r.objects())
			assert.NilError(t, err)
			var got []string
			for _, m := range hostsEnv.FindAllStringSubmatch(y, -1) {
				got = append(got, m[1])
			}
			assert.DeepEqual(t, got, c.want)
			assert.Equal(t, len(containers.FindAllString(y, -1)), len(c.want), "one per pod template:\n%s", y)
			assert.Assert(t, !strings.Contains(y, "@host"), y)
		})
	}
}

func repeat(n int, s string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// The launcher's flags reach its Config typed, and a bad value is an
// error naming the flag, where the command line's values used to be read
// by name with their errors dropped (a --k8s-pending-timeout of 0 was
// silently 5 minutes).
func TestBuildFromFlags(t *testing.T) {
	cases := []struct {
		args     []string
		o        launch.Options
		parseErr string
		want     string
	}{
		{args: []string{"--k8s-pending-timeout", "0s", "--image", "i"}, want: "--k8s-pending-timeout 0s: want a time limit above zero"},
		{args: []string{"--k8s-pending-timeout", "soon"}, parseErr: `invalid argument "soon" for "--k8s-pending-timeout"`},
		{args: []string{"--k8s-flavor", "pytorchjob", "--image", "i"}, want: `--k8s-flavor "pytorchjob": want one of job, jobset, volcano, mpijob`},
		{args: []string{"--image", "i"}, o: launch.Options{MPIFlavor: "srun"}, want: "launcher k8s: --mpi-flavor srun: srun starts the ranks of a Slurm allocation"},
		{args: []string{"--image", "i"}, o: launch.Options{Hosts: []string{"node_1"}}, want: "launcher k8s: --hosts:"},
		{args: []string{}, o: launch.Options{SKU: &sku.SKU{Name: "x", File: "x.yaml"}}, want: "launcher k8s needs a container image holding the benchmarks, mpirun and sshd, and none is given: give --image, or a site file (--site) with kubernetes.image, or kubernetes.image in x.yaml"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			cfg := &Config{Flavor: FlavorJob, PendingTimeout: 5 * time.Minute}
			cfg.Bind(fs)
			err := fs.Parse(c.args)
			if c.parseErr != "" {
				assert.ErrorContains(t, err, c.parseErr)
				return
			}
			assert.NilError(t, err)
			_, err = cfg.Build(c.o)
			assert.ErrorContains(t, err, c.want)
		})
	}
	// Through the registry: every flag's value lands where it belongs.
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	cfgs, err := launch.Bind(fs)
	assert.NilError(t, err)
	assert.NilError(t, fs.Parse([]string{"--image", "reg/img:1", "--namespace", "acc", "--k8s-queue", "q", "--k8s-flavor", "jobset", "--k8s-pending-timeout", "90s"}))
	l, err := cfgs.New(Name, launch.Options{Hosts: []string{"gpu-node-1"}, MPIArgs: []string{"--mca", "btl", "tcp"}, MPIFlavor: "hpcx"})
	assert.NilError(t, err)
	cfg := l.(*Launcher).cfg
	assert.Equal(t, cfg.Image, "reg/img:1")
	assert.Equal(t, cfg.Namespace, "acc")
	assert.Equal(t, cfg.Queue, "q")
	assert.Equal(t, cfg.Flavor, FlavorJobSet)
	assert.Equal(t, cfg.PendingTimeout, 90*time.Second)
	assert.DeepEqual(t, cfg.Hosts, []string{"gpu-node-1"})
	assert.DeepEqual(t, cfg.Start.ExtraArgs, []string{"--mca", "btl", "tcp"})
	assert.Equal(t, cfg.Starter.Name(), "hpcx")

	// --queue, the old name of --k8s-queue, still sets the queue: no
	// other launcher of this build binds it.
	fs = pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfgs, err = launch.Bind(fs)
	assert.NilError(t, err)
	assert.NilError(t, fs.Parse([]string{"--image", "i", "--queue", "old-q"}))
	l, err = cfgs.New(Name, launch.Options{})
	assert.NilError(t, err)
	assert.Equal(t, l.(*Launcher).cfg.Queue, "old-q")
}

// --mpi-flavor reaches the pods: the lead runs the flavor's starter, Open
// MPI's MCA parameters go only to Open MPI, and mpi-operator is told the
// implementation.
func TestRenderMPIFlavor(t *testing.T) {
	for _, c := range []struct {
		flavor, k8sFlavor string
		want, not         []string
	}{
		{"mpich", FlavorJob, []string{"mpiexec -n 8 -ppn 4 -hosts ", "-genvlist "}, []string{"plm_rsh_args", "orte_keep_fqdn_hostnames", "mpirun"}},
		{"hpcx", FlavorJob, []string{"mpirun --allow-run-as-root -np 8", "--mca plm_rsh_args", "-mca coll_hcoll_enable 0"}, nil},
		{"mpich", FlavorMPIJob, []string{"mpiImplementation: MPICH", "mpiexec -n 8 -ppn 4"}, []string{"mpiImplementation: OpenMPI"}},
		// HCOLL is off for Open MPI under k8s as under ssh and slurm
		// (before, only ssh turned it off).
		{"openmpi", FlavorMPIJob, []string{"mpiImplementation: OpenMPI", "mpirun --allow-run-as-root -np 8", "-mca coll_hcoll_enable 0"}, nil},
	} {
		t.Run(c.flavor+"-"+c.k8sFlavor, func(t *testing.T) {
			cfg := &Config{Flavor: c.k8sFlavor, PendingTimeout: time.Minute}
			l, err := cfg.Build(launch.Options{SKU: testSKU(t), MPIFlavor: c.flavor})
			assert.NilError(t, err)
			out, err := l.Commands(allGather(2, 4))
			assert.NilError(t, err)
			all := strings.Join(out, "\n")
			for _, w := range c.want {
				assert.Assert(t, strings.Contains(all, w), "want %q in\n%s", w, all)
			}
			for _, n := range c.not {
				assert.Assert(t, !strings.Contains(all, n), "%q in\n%s", n, all)
			}
		})
	}
}
