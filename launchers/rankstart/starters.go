package rankstart

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

func checkCounts(s plan.Step) error {
	if s.Procs < 1 || s.ProcsPerNode < 1 {
		return fmt.Errorf("step %s: %d processes, %d per node: both must be >= 1", s.Name, s.Procs, s.ProcsPerNode)
	}
	return nil
}

// openMPI is Open MPI's mpirun; with hcoll it is HPC-X's, which always
// turns HCOLL's collectives off.
type openMPI struct {
	name  string
	hcoll bool
}

func (o openMPI) Name() string { return o.name }
func (openMPI) Family() Family { return FamilyOpenMPI }

// Argv renders mpirun's line. Values of the step's Env are not on the
// command line: the caller puts them in mpirun's environment and mpirun
// forwards them by name (-x NAME), so nothing needs quoting twice and no
// value shows in process listings.
func (m openMPI) Argv(s plan.Step, o Options) ([]string, error) {
	if err := checkCounts(s); err != nil {
		return nil, err
	}
	argv := []string{"mpirun"}
	if o.AllowRoot {
		argv = append(argv, "--allow-run-as-root")
	}
	argv = append(argv, "-np", strconv.Itoa(s.Procs), "--map-by", fmt.Sprintf("ppr:%d:node", s.ProcsPerNode))
	if len(o.Hosts) > 0 {
		argv = append(argv, "--host", hostSlots(o.Hosts, s.ProcsPerNode))
	}
	for _, n := range ForwardedNames(s, o.Environ) {
		argv = append(argv, "-x", n)
	}
	if o.BindTo != "" {
		argv = append(argv, "--bind-to", o.BindTo)
	}
	if o.WorkDir != "" {
		argv = append(argv, "--wdir", o.WorkDir)
	}
	if len(o.RemoteShell) > 0 {
		for _, w := range o.RemoteShell {
			if w == "" || strings.ContainsAny(w, " \t\n") {
				return nil, fmt.Errorf("step %s: remote shell word %q is empty or holds whitespace, which Open MPI's plm_rsh_agent cannot carry (it splits at spaces)", s.Name, w)
			}
		}
		argv = append(argv, "--mca", "plm_rsh_agent", strings.Join(o.RemoteShell, " "))
	}
	for _, kv := range o.MCA {
		argv = append(argv, "--mca", kv[0], kv[1])
	}
	if o.DisableHCOLL || m.hcoll {
		argv = append(argv, "-mca", "coll_hcoll_enable", "0")
	}
	argv = append(argv, o.ExtraArgs...)
	return append(argv, s.Argv...), nil
}

// Env is PRTE_MCA_plm_ssh_agent with a RemoteShell: Open MPI 5 starts
// ranks through PRRTE, which reads its ssh agent from plm_ssh_agent, not
// Open MPI 4's plm_rsh_agent (Open MPI 4 ignores the variable).
func (openMPI) Env(o Options) []string {
	if len(o.RemoteShell) == 0 {
		return nil
	}
	return []string{"PRTE_MCA_plm_ssh_agent=" + strings.Join(o.RemoteShell, " ")}
}

// mpich is MPICH's Hydra mpiexec. Hydra has no --allow-run-as-root and
// no MCA parameters; -genvlist forwards variables by name like -x.
type mpich struct{}

func (mpich) Name() string           { return FlavorMPICH }
func (mpich) Family() Family         { return FamilyMPICH }
func (mpich) Env(o Options) []string { return nil }

func (mpich) Argv(s plan.Step, o Options) ([]string, error) {
	if err := checkCounts(s); err != nil {
		return nil, err
	}
	if o.DisableHCOLL {
		return nil, fmt.Errorf("step %s: HCOLL is an Open MPI / HPC-X component; MPICH has no coll_hcoll_enable", s.Name)
	}
	if len(o.MCA) > 0 {
		return nil, fmt.Errorf("step %s: MCA parameter %s is Open MPI's; MPICH has no MCA parameters (the site's mpi.mca): give Hydra's own options in mpi.args", s.Name, o.MCA[0][0])
	}
	argv := []string{"mpiexec", "-n", strconv.Itoa(s.Procs), "-ppn", strconv.Itoa(s.ProcsPerNode)}
	if len(o.Hosts) > 0 {
		argv = append(argv, "-hosts", hostSlots(o.Hosts, s.ProcsPerNode))
	}
	if names := ForwardedNames(s, o.Environ); len(names) > 0 {
		argv = append(argv, "-genvlist", strings.Join(names, ","))
	}
	if o.BindTo != "" {
		argv = append(argv, "-bind-to", o.BindTo)
	}
	if o.WorkDir != "" {
		argv = append(argv, "-wdir", o.WorkDir)
	}
	switch {
	case o.RemoteShellExec != "":
		argv = append(argv, "-launcher", "ssh", "-launcher-exec", o.RemoteShellExec)
	case len(o.RemoteShell) == 1:
		argv = append(argv, "-launcher", "ssh", "-launcher-exec", o.RemoteShell[0])
	case len(o.RemoteShell) > 1:
		return nil, fmt.Errorf("step %s: MPICH's -launcher-exec takes a program, not the command %q: write it with RemoteShellScript and set RemoteShellExec", s.Name, ShellJoin(o.RemoteShell))
	}
	argv = append(argv, o.ExtraArgs...)
	return append(argv, s.Argv...), nil
}

// srun is Slurm's srun inside an allocation: it starts every rank itself
// (through o.PMI for an MPI job) and forwards the whole environment, so
// AllowRoot, RemoteShell, WorkDir and BindTo mean nothing to it. Hosts
// become --nodelist, after o.ExtraArgs.
type srun struct{}

func (srun) Name() string   { return FlavorSrun }
func (srun) Family() Family { return FamilySlurm }

// Env is the MCA parameters and HCOLL's switch as Open MPI reads them from
// the environment (OMPI_MCA_NAME), since srun has no --mca: ranks of an
// Open MPI job started by srun take them from there, and other MPIs
// ignore the names.
func (srun) Env(o Options) []string {
	var env []string
	for _, kv := range o.MCA {
		env = append(env, "OMPI_MCA_"+kv[0]+"="+kv[1])
	}
	if o.DisableHCOLL {
		env = append(env, "OMPI_MCA_coll_hcoll_enable=0")
	}
	return env
}

// srunBind maps mpirun's --bind-to values to srun's --cpu-bind.
var srunBind = map[string]string{"none": "none", "core": "cores", "socket": "sockets", "package": "sockets", "numa": "ldoms", "hwthread": "threads", "board": "boards"}

func (srun) Argv(s plan.Step, o Options) ([]string, error) {
	if err := checkCounts(s); err != nil {
		return nil, err
	}
	pmi := o.PMI
	if pmi == "" {
		pmi = "none"
	}
	argv := []string{"srun"}
	if o.JobName != "" {
		argv = append(argv, "--job-name="+o.JobName)
	}
	nodes := (s.Procs + s.ProcsPerNode - 1) / s.ProcsPerNode
	argv = append(argv, "--nodes="+strconv.Itoa(nodes), "--ntasks="+strconv.Itoa(s.Procs), "--ntasks-per-node="+strconv.Itoa(s.ProcsPerNode),
		"--mpi="+pmi, "--kill-on-bad-exit=1")
	if o.BindTo != "" {
		b, ok := srunBind[o.BindTo]
		if !ok {
			return nil, fmt.Errorf("step %s: binding %q has no srun --cpu-bind equivalent (none, core, socket, numa, hwthread, board)", s.Name, o.BindTo)
		}
		argv = append(argv, "--cpu-bind="+b)
	}
	argv = append(argv, o.ExtraArgs...)
	if len(o.Hosts) > 0 {
		argv = append(argv, "--nodelist="+strings.Join(o.Hosts, ","))
	}
	return append(argv, s.Argv...), nil
}
