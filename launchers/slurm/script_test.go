package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/launchers/batch"
)

func ncclStep() plan.Step {
	return plan.Step{Name: "all_reduce", Argv: []string{"/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1", "-J", "all_reduce.json"},
		Procs: 16, ProcsPerNode: 8, MPI: true, Files: []string{"all_reduce.json"},
		Env: map[string]string{"NCCL_TOPO_FILE": "/etc/ndv4 topo.xml", "NCCL_DEBUG": "INFO"}}
}

// The scripts as written, golden (go test ./launchers/slurm -run Golden -update).
func TestRenderGolden(t *testing.T) {
	topo := plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}
	server := plan.Step{Name: "server", Role: "server", Argv: []string{"ib_write_bw", "-d", "mlx5_0"}, Procs: 1, ProcsPerNode: 1, ReadyMarker: "Waiting for client"}
	client := plan.Step{Name: "client", Role: "client", Host: 1, Argv: []string{"ib_write_bw", "-d", "mlx5_0", "$SERVER"}, Procs: 1, ProcsPerNode: 1}
	for _, c := range []struct {
		name string
		j    job
	}{
		{"batch-mpirun.sh", job{Job: batch.Job{Test: "nccl.all_reduce", Dir: "/shared/results/raw/nccl.all_reduce/.slurm", Plan: plan.Plan{Steps: []plan.Step{ncclStep()}}, Topology: topo, Batch: true}, MPI: MPIMpirun, Time: "35", AllowRoot: true, Environ: []string{"NCCL_IB_HCA=mlx5", "HOME=/root", "API_TOKEN=x"}, Config: Config{Partition: "gpu", GPUs: GPUsPerNode, Exclusive: true, MPIArgs: []string{"--mca", "btl", "self,tcp"}}}},
		{"batch-pmix-pyxis.sh", job{Job: batch.Job{Test: "nccl.all_reduce", Dir: "/shared/results/raw/nccl.all_reduce/.slurm", Plan: plan.Plan{Steps: []plan.Step{ncclStep()}}, Topology: topo, Batch: true}, MPI: MPIPMIx, Time: "1:00:00", Config: Config{Partition: "gpu", Account: "acct-1", QOS: "high", Reservation: "accept_2026", GPUs: GPUsGres, Exclusive: true,
			SbatchArgs: []string{"--constraint=ib&nvlink", "--signal=B:USR1@60"}, Hosts: []string{"gpu-a01", "gpu-a02"},
			ContainerImage: "nvcr.io#nvidia/pytorch:24.05-py3", ContainerMounts: "/shared:/shared,/opt/nccl-tests:/opt/nccl-tests"}}},
		{"allocation-mpirun.sh", job{Job: batch.Job{Test: "nccl.all_reduce", Dir: "/shared/results/raw/nccl.all_reduce/.slurm", Plan: plan.Plan{Steps: []plan.Step{ncclStep()}}, Topology: topo}, MPI: MPIMpirun, AllocHosts: []string{"n1", "n2", "n3"}, Config: Config{GPUs: GPUsNone}}},
		{"batch-server-client.sh", job{Job: batch.Job{Test: "ibperf.write_bw", Dir: "/shared/r/raw/ibperf.write_bw/.slurm", Plan: plan.Plan{Steps: []plan.Step{server, client}}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 1}}, Batch: true}, MPI: MPIPMI2, Config: Config{GPUs: GPUsNone}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			script, cmds, err := render(c.j)
			assert.NilError(t, err)
			assert.Equal(t, len(cmds), len(c.j.Plan.Steps))
			golden.Assert(t, script, "golden/"+c.name)
		})
	}
}

// Values with shell or directive metacharacters never reach a script:
// rejected with the flag named.
func TestValidateRejects(t *testing.T) {
	ok := Config{MPI: MPIAuto, Mode: ModeAuto, GPUs: GPUsPerNode}
	for _, c := range []struct {
		name string
		edit func(*Config)
		err  string
	}{
		{"partition command substitution", func(c *Config) { c.Partition = "gpu$(reboot)" }, `--partition "gpu$(reboot)"`},
		{"partition semicolon", func(c *Config) { c.Partition = "gpu;reboot" }, `--partition "gpu;reboot"`},
		{"account newline", func(c *Config) { c.Account = "a\n#SBATCH --uid=0" }, "--account"},
		{"qos blank", func(c *Config) { c.QOS = "high prio" }, "--qos"},
		{"reservation backtick", func(c *Config) { c.Reservation = "r`id`" }, "--reservation"},
		{"sbatch-arg newline", func(c *Config) { c.SbatchArgs = []string{"--comment=x\nreboot"} }, "--sbatch-arg"},
		{"sbatch-arg not an option", func(c *Config) { c.SbatchArgs = []string{"reboot"} }, "want one sbatch option"},
		{"sbatch-arg quote", func(c *Config) { c.SbatchArgs = []string{`--comment="a"`} }, "without blanks, quotes"},
		{"host", func(c *Config) { c.Hosts = []string{"n1;reboot"} }, `host "n1;reboot"`},
		{"time", func(c *Config) { c.Time = "soon" }, `--time "soon"`},
		// Slurm reads a zero limit as none: a hung job would hold its
		// nodes for ever.
		{"time zero", func(c *Config) { c.Time = "0" }, `--time "0": no time limit`},
		{"time zero H:MM:SS", func(c *Config) { c.Time = "00:00:00" }, `--time "00:00:00": no time limit`},
		{"time zero days", func(c *Config) { c.Time = "0-0" }, `--time "0-0": no time limit`},
		{"time unlimited", func(c *Config) { c.Time = "UNLIMITED" }, `--time "UNLIMITED": no time limit`},
		{"time infinite", func(c *Config) { c.Time = "infinite" }, `--time "infinite": no time limit`},
		{"sbatch-arg time", func(c *Config) { c.SbatchArgs = []string{"--time=0"} }, `--sbatch-arg "--time=0": give the job's time limit with --time`},
		{"sbatch-arg -t", func(c *Config) { c.SbatchArgs = []string{"-t0"} }, `--sbatch-arg "-t0"`},
		{"mpi", func(c *Config) { c.MPI = "openmpi" }, `--slurm-mpi "openmpi"`},
		{"mode", func(c *Config) { c.Mode = "x" }, `--slurm-mode "x"`},
		{"gpus", func(c *Config) { c.GPUs = "all" }, `--slurm-gpus "all"`},
		{"container with mpirun", func(c *Config) { c.ContainerImage = "img"; c.MPI = MPIMpirun }, "--container-image runs the steps through pyxis"},
		{"mounts without image", func(c *Config) { c.ContainerMounts = "/a:/a" }, "--container-mounts needs --container-image"},
		{"image newline", func(c *Config) { c.ContainerImage = "img\nreboot" }, "--container-image"},
		{"poll", func(c *Config) { c.Poll = -time.Second }, "--slurm-poll -1s: want a duration of zero or more"},
		{"pending timeout", func(c *Config) { c.PendingTimeout = -time.Minute }, "--slurm-pending-timeout -1m0s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.edit(&cfg)
			assert.ErrorContains(t, cfg.Validate(), c.err)
		})
	}
	assert.NilError(t, ok.Validate())
}

func TestRenderRejects(t *testing.T) {
	base := job{Job: batch.Job{Test: "nccl.all_reduce", Dir: "/r/.slurm", Plan: plan.Plan{Steps: []plan.Step{ncclStep()}}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}, Batch: true}, MPI: MPIMpirun, Config: Config{GPUs: GPUsNone}}
	for _, c := range []struct {
		name string
		edit func(*job)
		err  string
	}{
		{"relative folder", func(j *job) { j.Dir = "r/.slurm" }, "must be an absolute path"},
		{"blank in results folder", func(j *job) { j.Dir = "/my results/.slurm" }, "choose an --out without them"},
		{"env name", func(j *job) { j.Plan.Steps[0].Env = map[string]string{"A;reboot": "1"} }, `environment variable name "A;reboot"`},
		{"empty plan", func(j *job) { j.Plan.Steps = nil }, "plan has no steps"},
		{"container and a colon in the folder", func(j *job) {
			j.MPI, j.Dir, j.Config.ContainerImage = MPIPMIx, "/r/a:b/.slurm", "img"
		}, "which pyxis' --container-mounts cannot take"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := base
			j.Plan = plan.Plan{Steps: append([]plan.Step(nil), base.Plan.Steps...)}
			c.edit(&j)
			_, _, err := render(j)
			assert.ErrorContains(t, err, c.err)
		})
	}
}

func TestJobMinutes(t *testing.T) {
	for in, want := range map[string]string{"30m": "30", "90s": "2", "2h": "120", "35": "35", "1:00:00": "1:00:00", "2-0": "2-0", "0:30": "0:30"} {
		got, err := jobMinutes(in)
		assert.NilError(t, err)
		assert.Equal(t, got, want, in)
	}
	for _, in := range []string{"-5m", "0s", "1h;x", "tomorrow", "0", "0:0", "UNLIMITED", "unlimited"} {
		_, err := jobMinutes(in)
		assert.Assert(t, err != nil, in)
	}
	j, err := (&Launcher{Config: Config{MPI: MPIMpirun, Mode: ModeSubmit, GPUs: GPUsNone}, Environ: []string{}}).newJob(t.Context(), requestFor(t, 25*time.Minute))
	assert.NilError(t, err)
	assert.Equal(t, j.Time, "30", "the test's timeout plus TimeSlack")
}

func requestFor(t *testing.T, timeout time.Duration) launch.Request {
	return launch.Request{Test: "nccl.all_reduce", Plan: plan.Plan{Steps: []plan.Step{ncclStep()}}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}, Dir: t.TempDir(), Timeout: timeout}
}

func TestSrunErrors(t *testing.T) {
	log := "srun: error:  mpi/pmix_v4: init: (null) [0]: mpi_pmix.c:195: pmi/pmix: can not load PMIx library\nsome output\nsrun: error: MPI: Unable to load any plugin\n"
	assert.Equal(t, strings.Join(srunErrorsIn(log), " | "), "srun: error:  mpi/pmix_v4: init: (null) [0]: mpi_pmix.c:195: pmi/pmix: can not load PMIx library | srun: error: MPI: Unable to load any plugin")
}

// Inside an allocation, hosts given pick some of its nodes (a
// localisation's runs side by side): mpirun and srun name them; a host
// outside the allocation is refused.
func TestAllocationPinsHosts(t *testing.T) {
	scontrol := func(_ context.Context, _ []string, name string, args ...string) (string, string, error) {
		switch a := name + " " + strings.Join(args, " "); a {
		case "scontrol show hostnames n[1-4]":
			return "n1\nn2\nn3\nn4\n", "", nil
		case "srun --mpi=list":
			// The test cluster's own answer.
			data, err := os.ReadFile("testdata/captured/srun-mpi-list.txt")
			return string(data), "", err
		}
		return "", "unexpected " + name, errors.New("exit status 1")
	}
	env := []string{"SLURM_JOB_ID=12", "SLURM_JOB_NODELIST=n[1-4]"}
	l := &Launcher{Config: Config{MPI: MPIMpirun, Mode: ModeAuto, GPUs: GPUsNone, Hosts: []string{"n5"}}, Environ: env, exec: scontrol}
	_, err := l.Commands(requestFor(t, 0))
	assert.ErrorContains(t, err, "host n5 is not a node of allocation 12 (n1,n2,n3,n4)")

	for _, tc := range []struct {
		mpi  string
		want string
	}{
		{MPIMpirun, "--map-by ppr:8:node --host n4:8,n2:8 "},
		{MPIPMIx, "--mpi=pmix --kill-on-bad-exit=1 --nodelist=n4,n2 "},
	} {
		l = &Launcher{Config: Config{MPI: tc.mpi, Mode: ModeAuto, GPUs: GPUsNone, Hosts: []string{"n4", "n2"}}, Environ: env, exec: scontrol}
		cmds, err := l.Commands(requestFor(t, 0))
		assert.NilError(t, err)
		script := strings.Join(cmds, "\n")
		assert.Assert(t, strings.Contains(script, tc.want), "want %q in\n%s", tc.want, script)
		assert.Assert(t, strings.Contains(script, "printf '%s\\n' n4 n2 >\"$job/hosts\""), script)
	}

	l = &Launcher{Config: Config{MPI: MPIMpirun, Mode: ModeAllocation, GPUs: GPUsNone}, Environ: []string{}}
	_, err = l.Commands(requestFor(t, 0))
	assert.ErrorContains(t, err, "--slurm-mode allocation: SLURM_JOB_ID is not set")
}

// Every server and client of a multi-pair ib_write_bw runs at once as a
// one-task step of its node, sharing the node (--overlap): without it the
// second server's srun waits for the first to end. Steps started by a
// rank starter keep their resources to themselves.
func TestRenderConcurrentPairsOverlap(t *testing.T) {
	var steps []plan.Step
	for i := 0; i < 4; i++ {
		steps = append(steps,
			plan.Step{Name: fmt.Sprintf("server.%d", i), Role: "server", Argv: []string{"ib_write_bw"}, Procs: 1, ProcsPerNode: 1, ReadyMarker: "Waiting"},
			plan.Step{Name: fmt.Sprintf("client.%d", i), Role: "client", Host: 1, Argv: []string{"ib_write_bw", "n1"}, Procs: 1, ProcsPerNode: 1})
	}
	for _, c := range []struct {
		name    string
		steps   []plan.Step
		overlap int
	}{
		{"four pairs", steps, 8},
		{"mpirun step", []plan.Step{ncclStep()}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, cmds, err := render(job{Job: batch.Job{Test: "ibperf.write_bw", Dir: "/shared/r/raw/ibperf.write_bw/.slurm", Plan: plan.Plan{Steps: c.steps}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}, Batch: true}, MPI: MPIPMI2, Config: Config{GPUs: GPUsNone}})
			assert.NilError(t, err)
			n := 0
			for _, cmd := range cmds {
				if strings.Contains(cmd, " --overlap ") {
					n++
				}
			}
			assert.Equal(t, n, c.overlap, "%q", cmds)
		})
	}
}

// --mpi-flavor reaches Slurm: under --slurm-mpi mpirun the MPI step
// starts with the flavor's own starter (it was always Open MPI's), while
// srun, the pmix/pmi2 start, is chosen by --slurm-mpi and refused as a
// flavor.
func TestMPIFlavor(t *testing.T) {
	j := job{Job: batch.Job{Test: "nccl.all_reduce", Dir: "/shared/results/raw/nccl.all_reduce/.slurm", Plan: plan.Plan{Steps: []plan.Step{ncclStep()}}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}, Batch: true}, MPI: MPIMpirun, Environ: []string{"HOME=/root"}, Config: Config{GPUs: GPUsNone}}
	for _, c := range []struct{ flavor, want string }{
		{"openmpi", `exec mpirun -np 16 --map-by ppr:8:node -x GPUACCEPT_HOSTS -x NCCL_DEBUG -x NCCL_TOPO_FILE -mca coll_hcoll_enable 0 /bin/sh -c`},
		{"hpcx", `-x NCCL_TOPO_FILE -mca coll_hcoll_enable 0 /bin/sh -c`},
		{"mpich", `exec mpiexec -n 16 -ppn 8 -genvlist GPUACCEPT_HOSTS,NCCL_DEBUG,NCCL_TOPO_FILE /bin/sh -c`},
	} {
		l, err := launch.New(Name, launch.Options{MPIFlavor: c.flavor})
		assert.NilError(t, err)
		jj := j
		jj.Config.Starter = l.(*Launcher).Config.Starter
		script, _, err := render(jj)
		assert.NilError(t, err)
		assert.Assert(t, strings.Contains(script, c.want), "%s: want %q in\n%s", c.flavor, c.want, script)
	}
	_, err := launch.New(Name, launch.Options{MPIFlavor: "srun"})
	assert.ErrorContains(t, err, "launcher slurm: --mpi-flavor srun: srun starts the ranks of a Slurm allocation")
	_, err = launch.New(Name, launch.Options{MPIFlavor: "lam"})
	assert.ErrorContains(t, err, `launcher slurm: --mpi-flavor: unknown MPI flavor "lam"`)
}

// A dry run of --slurm-mpi auto off the cluster (scontrol answers as it
// does on a host without slurm.conf, captured) prints the script with
// mpirun and says it assumed so; a real launch still needs the answer.
func TestDryRunAutoWithoutCluster(t *testing.T) {
	l := fakeSlurm(t, map[string]answer{"scontrol show": {stderr: captured(t, "scontrol-config-no-cluster.txt"), fail: true}})
	l.Config.MPI = MPIAuto
	cmds, err := l.Commands(requestFor(t, 0))
	assert.NilError(t, err)
	script := strings.Join(cmds, "\n")
	lines := strings.Split(script, "\n")
	assert.Assert(t, strings.HasPrefix(lines[0], "#!"), script)
	assert.Equal(t, lines[1], "# gpuaccept: dry run: "+AutoAssumed)
	assert.Assert(t, strings.Contains(script, "mpirun "), script)
	_, err = l.newJob(context.Background(), requestFor(t, 0))
	assert.ErrorContains(t, err, "--slurm-mpi auto: read the cluster's MpiDefault: scontrol: error: resolve_ctls_from_dns_srv")
}
