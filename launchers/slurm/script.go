package slurm

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/launchers/batch"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// job is one test's Slurm job: the scheduler-neutral batch.Job and what
// Slurm's parts of the script are rendered from. It is the batch.Scheduler
// of that test.
type job struct {
	batch.Job
	// MPI is the resolved start: MPIMpirun, MPIPMIx or MPIPMI2.
	MPI string
	// Time is the #SBATCH --time value; empty: none.
	Time string
	// AllowRoot adds mpirun's --allow-run-as-root (the job runs as the user
	// who submits it).
	AllowRoot bool
	// Environ is the environment mpirun forwards variables from by name.
	Environ []string
	// AllocHosts are the allocation's nodes, when known at render time
	// (allocation mode); mpirun is pinned to the first Topology.Nodes of them
	// when the allocation is larger.
	AllocHosts []string
	// Pinned says the test runs on the hosts given (Config.Hosts), a part
	// of the allocation (a localisation's runs): every step names its
	// nodes, as the allocation's other nodes may be busy with another run.
	Pinned bool
	Config Config
	// l runs Slurm's commands for Submit, Query and Cancel.
	l *Launcher
}

// render is the script of j and each step's start line (batch.Render).
func render(j job) (string, []string, error) {
	j.Job.Hosts = j.Config.Hosts
	return batch.Render(j.Job, j, j.options())
}

// Header implements batch.Scheduler: the #SBATCH directives of a job of
// its own, and what the script is. Directive values were validated by
// Config.Validate.
func (j job) Header(b batch.Job) ([]string, error) {
	var h []string
	t := b.Topology
	perNode := 1
	for _, s := range b.Plan.Steps {
		if s.ProcsPerNode > perNode {
			perNode = s.ProcsPerNode
		}
	}
	if b.Batch {
		if strings.ContainsAny(b.Dir, " \t\"'\\") {
			return nil, fmt.Errorf("results folder %q holds blanks, quotes or backslashes, which #SBATCH --output cannot take: choose an --out without them", b.Dir)
		}
		c := j.Config
		d := func(format string, a ...any) { h = append(h, fmt.Sprintf("#SBATCH "+format, a...)) }
		d("--job-name=%s", batch.JobName(b.Test))
		d("--nodes=%d", t.Nodes)
		d("--ntasks-per-node=%d", perNode)
		switch c.GPUs {
		case GPUsPerNode:
			d("--gpus-per-node=%d", t.GPUsPerNode)
		case GPUsGres:
			d("--gres=gpu:%d", t.GPUsPerNode)
		}
		if c.Exclusive {
			d("--exclusive")
		}
		if j.Time != "" {
			d("--time=%s", j.Time)
		}
		// sbatch expands %j and friends in --output; a literal % is %%.
		d("--output=%s", strings.ReplaceAll(filepath.Join(b.Dir, batch.OutputName), "%", "%%"))
		for _, f := range []struct{ name, v string }{{"partition", c.Partition}, {"account", c.Account}, {"qos", c.QOS}, {"reservation", c.Reservation}} {
			if f.v != "" {
				d("--%s=%s", f.name, f.v)
			}
		}
		if len(b.Hosts) > 0 {
			d("--nodelist=%s", strings.Join(b.Hosts, ","))
		}
		for _, a := range c.SbatchArgs {
			d("%s", a)
		}
	}
	h = append(h, fmt.Sprintf("# gpuaccept: test %s on %d node(s) x %d GPU(s), MPI start: %s.", b.Test, t.Nodes, t.GPUsPerNode, j.MPI))
	if b.Batch {
		h = append(h, "# Outputs go to the folder below, which every node must see at the same path.")
	} else {
		h = append(h, "# Runs inside the allocation $SLURM_JOB_ID; outputs go to the folder below,", "# which every node must see at the same path.")
	}
	return h, nil
}

// NodesCommand implements batch.Scheduler.
func (j job) NodesCommand() string { return `scontrol show hostnames "$SLURM_JOB_NODELIST"` }

// start is the run's starter options (Config.Start); without them HCOLL
// is off for Open MPI, as under every launcher.
func (j job) start() rankstart.Options {
	if j.Config.Start == nil {
		return rankstart.Options{DisableHCOLL: rankstart.Or(j.Config.Starter).Family() == rankstart.FamilyOpenMPI}
	}
	return *j.Config.Start
}

// srunEnv is what srun's ranks of an MPI step need in their environment
// from the run's starter options (rankstart's srun Env: OMPI_MCA_...), as
// NAME=value.
func srunEnv(j job, s plan.Step) []string {
	if !(rankstart.NeedsStarter(s) && s.MPI) || j.MPI == MPIMpirun {
		return nil
	}
	st, err := rankstart.Lookup(rankstart.FlavorSrun)
	if err != nil {
		return nil
	}
	return st.Env(j.start())
}

// StepStart implements batch.Scheduler: the rank starter's command line
// for one step (mpirun of --mpi-flavor, or srun), and the environment
// srun's MPI ranks need.
func (j job) StepStart(b batch.Job, s plan.Step, wrapped []string) (string, []string, error) {
	env := srunEnv(j, s)
	mpi := rankstart.NeedsStarter(s) && s.MPI
	if mpi && j.MPI == MPIMpirun {
		var hs []string
		if len(j.AllocHosts) > b.Topology.Nodes || j.Pinned {
			hs = j.AllocHosts[:b.Topology.Nodes]
		}
		argv, err := rankstart.Or(j.Config.Starter).Argv(plan.Step{Name: s.Name, Argv: wrapped, Env: s.Env, Procs: s.Procs, ProcsPerNode: s.ProcsPerNode, MPI: true},
			rankstart.Merge(j.start(), rankstart.Options{Hosts: hs, AllowRoot: j.AllowRoot, ExtraArgs: j.Config.MPIArgs, Environ: j.Environ}))
		if err != nil {
			return "", nil, err
		}
		return batch.JoinWithJob(argv), env, nil
	}
	o := rankstart.Options{JobName: batch.JobName(b.Test) + "." + s.Name}
	if mpi {
		// The run's binding, and its MCA settings and HCOLL's switch as
		// the environment (srun has no --mca; srunEnv exports them).
		o = rankstart.Merge(j.start(), o)
		o.ExtraArgs = nil
		o.PMI = j.MPI
	}
	single := !rankstart.NeedsStarter(s)
	if c := j.Config; c.ContainerImage != "" {
		// The ranks write into the staging folder and run in the step's
		// working folder, so the container sees both at the host's path.
		if strings.ContainsAny(b.Dir, ",: \t\"'\\") {
			return "", nil, fmt.Errorf("results folder %q holds a comma, colon, blank or quote, which pyxis' --container-mounts cannot take: choose an --out without them", b.Dir)
		}
		mounts := b.Dir + ":" + b.Dir
		if c.ContainerMounts != "" {
			mounts = c.ContainerMounts + "," + mounts
		}
		o.ExtraArgs = append(o.ExtraArgs, "--container-image="+c.ContainerImage, "--container-mounts="+mounts,
			"--container-workdir="+batch.StepWork(b.Dir, s.Name))
	}
	if j.Pinned && !single {
		o.Hosts = j.AllocHosts[:(s.Procs+s.ProcsPerNode-1)/s.ProcsPerNode]
	}
	srun, err := rankstart.Lookup(rankstart.FlavorSrun)
	if err != nil {
		return "", nil, err
	}
	argv, err := srun.Argv(plan.Step{Name: s.Name, Argv: wrapped, Procs: s.Procs, ProcsPerNode: s.ProcsPerNode, MPI: s.MPI}, o)
	if err != nil {
		return "", nil, err
	}
	// The starter's words end with the program: the node of a single
	// step goes between them, as shell text.
	argv = argv[:len(argv)-len(wrapped)]
	line := batch.JoinWithJob(argv)
	if single && (s.Role != "" || s.Host > 0 || j.Pinned) {
		// A server or client runs on its own node of the allocation, and
		// the servers and clients of several pairs (ib_write_bw, one per
		// HCA pair) at once: --overlap, or the second step on a node waits
		// for the first to end ("Requested nodes are busy", a step taking
		// every CPU of its nodes since Slurm 20.11) while the first waits
		// for its client. A pinned step (a localisation's run on some
		// nodes of the allocation) names its node too.
		overlap := ""
		if s.Role != "" || s.Host > 0 {
			overlap = " --overlap"
		}
		line += overlap + " --nodelist=" + batch.HostWord(s.Host)
	}
	return line + " " + batch.JoinWithJob(wrapped), env, nil
}
