package rankstart

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// Family is the MPI implementation a starter belongs to: it decides the
// dialect of what a launcher adds to the starter's line (Open MPI's MCA
// parameters, Hydra's remote shell program) and what an operator that runs
// the ranks itself is told (mpi-operator's mpiImplementation).
type Family string

// The families of the registered starters.
const (
	// FamilyOpenMPI is Open MPI and what is built on it (HPC-X).
	FamilyOpenMPI Family = "openmpi"
	// FamilyMPICH is MPICH's Hydra process manager (also MVAPICH and
	// Intel MPI, which share its options).
	FamilyMPICH Family = "mpich"
	// FamilySlurm is Slurm's srun, which starts the ranks of the
	// allocation it runs in itself, through a PMI plugin.
	FamilySlurm Family = "slurm"
)

// Starter is one rank starter: how one MPI implementation (or Slurm)
// starts a step's ranks.
type Starter interface {
	// Name is the starter's registry name, the --mpi-flavor value.
	Name() string
	// Family is the MPI implementation it belongs to.
	Family() Family
	// Argv returns the starter's argv for step s: process count, ranks
	// per node, hosts, forwarded environment (by name only), then
	// o.ExtraArgs, and s.Argv unchanged at the end, so a launcher may put
	// shell text between the starter's words and the program. The
	// error names the step and what cannot be rendered.
	Argv(s plan.Step, o Options) ([]string, error)
	// Env returns the variables ("NAME=value") the starter itself needs
	// in its environment beside its argv; nil when none.
	Env(o Options) []string
}

// The registered starters' names.
const (
	// FlavorOpenMPI is Open MPI's mpirun (4.x and 5.x), the default.
	FlavorOpenMPI = "openmpi"
	// FlavorMPICH is MPICH's mpiexec with the Hydra process manager.
	FlavorMPICH = "mpich"
	// FlavorHPCX is NVIDIA HPC-X: Open MPI's mpirun with HCOLL, whose
	// collectives are turned off (see Options.DisableHCOLL).
	FlavorHPCX = "hpcx"
	// FlavorSrun is Slurm's srun; the slurm launcher chooses it with
	// --slurm-mpi, not --mpi-flavor.
	FlavorSrun = "srun"
)

var (
	regMu    sync.Mutex
	starters = map[string]Starter{}
)

func init() {
	Register(openMPI{name: FlavorOpenMPI})
	Register(openMPI{name: FlavorHPCX, hcoll: true})
	Register(mpich{})
	Register(srun{})
}

// Register adds a starter under its Name. An empty name or a name
// registered twice panics: two starters answering to one --mpi-flavor is
// a build mistake.
func Register(s Starter) {
	regMu.Lock()
	defer regMu.Unlock()
	name := s.Name()
	if name == "" {
		panic("rankstart.Register: starter without a name")
	}
	if _, dup := starters[name]; dup {
		panic(fmt.Sprintf("rankstart.Register: rank starter %q registered twice", name))
	}
	starters[name] = s
}

// Names lists the registered starters, sorted.
func Names() []string {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]string, 0, len(starters))
	for n := range starters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the starter registered as name ("" is Open MPI), or an
// error listing the registered ones.
func Lookup(name string) (Starter, error) {
	if name == "" {
		name = FlavorOpenMPI
	}
	regMu.Lock()
	s, ok := starters[name]
	regMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown MPI flavor %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// Default is Open MPI's mpirun, the starter when none is named.
func Default() Starter {
	s, err := Lookup(FlavorOpenMPI)
	if err != nil {
		panic(err) // registered in this package's init
	}
	return s
}

// MPIFlavors lists the starters --mpi-flavor may name, sorted: every
// registered one but those of a scheduler (srun), which the scheduler's
// launcher picks itself.
func MPIFlavors() []string {
	var out []string
	for _, n := range Names() {
		if s, err := Lookup(n); err == nil && s.Family() != FamilySlurm {
			out = append(out, n)
		}
	}
	return out
}

// ForMPIFlavor returns the starter --mpi-flavor names ("" is Open MPI):
// the one every launcher starts MPI steps with. An error names the flag:
// an unknown name, or srun, which starts the ranks of a Slurm allocation
// only and which the slurm launcher chooses with --slurm-mpi.
func ForMPIFlavor(name string) (Starter, error) {
	s, err := Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("--mpi-flavor: unknown MPI flavor %q (known: %s)", name, strings.Join(MPIFlavors(), ", "))
	}
	if s.Family() == FamilySlurm {
		return nil, fmt.Errorf("--mpi-flavor %s: srun starts the ranks of a Slurm allocation, not across hosts itself: with --launcher slurm, choose it with --slurm-mpi pmix or pmi2 (--mpi-flavor names the mpirun of --slurm-mpi mpirun: %s)",
			name, strings.Join(MPIFlavors(), ", "))
	}
	return s, nil
}

// AcrossHosts says s can start ranks across hosts a launcher names:
// every starter but srun, which starts those of the Slurm allocation it
// runs in (the slurm launcher picks it with --slurm-mpi). The error names
// the starter.
func AcrossHosts(s Starter) error {
	if s != nil && s.Family() == FamilySlurm {
		return fmt.Errorf("rank starter %s starts the ranks of a Slurm allocation only, not across hosts it is given (with --launcher slurm, --slurm-mpi pmix or pmi2 chooses it)", s.Name())
	}
	return nil
}

// Or returns s, or Default when s is nil: a launcher built without a
// starter (tests) starts ranks with Open MPI.
func Or(s Starter) Starter {
	if s == nil {
		return Default()
	}
	return s
}
