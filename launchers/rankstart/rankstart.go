// Package rankstart answers "how are the ranks started": a registry of
// rank starters (Open MPI's mpirun, MPICH's Hydra mpiexec, HPC-X, Slurm's
// srun), each turning a plan step into the argv that starts its ranks. The
// launchers answer "where" (this host, a hostfile, a Slurm allocation,
// pods) and all take their starter from here, by the --mpi-flavor name
// (launch.Options.MPIFlavor, through ForMPIFlavor), so each starter's line
// is written once and every flavor works under every launcher. A new
// starter is a type implementing Starter, registered in an init function
// of this package.
package rankstart

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// Options shape the rank starter's command line.
type Options struct {
	// Hosts, when set, are the hosts the ranks go on: mpirun's --host
	// h1:K,h2:K (Hydra's -hosts) with K the step's processes per node,
	// srun's --nodelist; empty means the starter's default (this host, or
	// the allocation it detects).
	Hosts []string
	// AllowRoot adds --allow-run-as-root (Open MPI refuses root otherwise).
	AllowRoot bool
	// ExtraArgs go after mpirun's own options (e.g. "--mca", "btl", "self,tcp").
	ExtraArgs []string
	// Environ is the environment the starter runs in; nil means os.Environ().
	// Variables from it whose names start with PassPrefixes are forwarded to
	// remote ranks with -x, as are the step's own Env names.
	Environ []string
	// RemoteShell is the command (argv) the starter reaches other hosts
	// with, e.g. ssh -p 2222 -i KEY -o ...; empty means the starter's
	// default (plain ssh). Open MPI and HPC-X take it as one string in
	// plm_rsh_agent, which they split at spaces, so no word may hold
	// whitespace. MPICH's Hydra takes an executable only: see
	// RemoteShellExec.
	RemoteShell []string
	// RemoteShellExec is the path of an executable that runs RemoteShell
	// with its arguments appended (RemoteShellScript writes one), for
	// flavors that take a program, not a command line (MPICH/Hydra's
	// -launcher-exec). Needed there when RemoteShell has more than one word.
	RemoteShellExec string
	// BindTo is the process binding (--bind-to VALUE: none, core, numa,
	// socket, ...); empty leaves the starter's default.
	BindTo string
	// WorkDir is the folder every rank starts in, on every host (mpirun
	// --wdir); empty leaves the starter's default (its own folder).
	WorkDir string
	// MCA are MCA parameters (name, value) for Open MPI and HPC-X:
	// --mca NAME VALUE each, after the starter's own options (the site's
	// mpi.mca, framework/site). MPICH has none: its starter refuses them.
	MCA [][2]string
	// DisableHCOLL adds -mca coll_hcoll_enable 0 (Open MPI and HPC-X):
	// Mellanox HCOLL's MPI collectives are not what nccl-tests measures and
	// a fabric without its setup hangs in MPI_Init (seed 000 turns it off
	// the same way). The HPC-X flavor always adds it.
	DisableHCOLL bool
	// JobName names the step to Slurm (srun --job-name); empty leaves it
	// out. Other starters ignore it.
	JobName string
	// PMI is srun's --mpi plugin (pmix, pmi2); empty means none (not an
	// MPI job). Other starters ignore it.
	PMI string
}

func hostSlots(hosts []string, per int) string {
	hs := make([]string, len(hosts))
	for i, h := range hosts {
		hs[i] = fmt.Sprintf("%s:%d", h, per)
	}
	return strings.Join(hs, ",")
}

// RemoteShellScript returns a POSIX shell script that runs the remote shell
// command with the starter's arguments appended, for
// Options.RemoteShellExec.
func RemoteShellScript(remoteShell []string) string {
	return "#!/bin/sh\n# written by gpuaccept: the remote shell for the rank starter\nexec " + ShellJoin(remoteShell) + " \"$@\"\n"
}

// PassPrefixes name the variables forwarded to every rank even when the
// plan does not mention them: NCCL and UCX tuning and the library path, the
// ones whose absence on a remote rank silently changes results.
var PassPrefixes = []string{"NCCL_", "UCX_", "LD_LIBRARY_PATH", "CUDA_", "HIP_", "ROCR_", "RCCL_", "OMPI_MCA_"}

// NeedsStarter reports whether a step needs a rank starter: an MPI job, or
// more than one process.
func NeedsStarter(s plan.Step) bool { return s.MPI || s.Procs > 1 }

// ForwardedNames lists, sorted, the variables a rank starter must forward:
// the step's Env and those of environ matching PassPrefixes.
func ForwardedNames(s plan.Step, environ []string) []string {
	if environ == nil {
		environ = os.Environ()
	}
	set := map[string]bool{}
	for k := range s.Env {
		set[k] = true
	}
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		for _, p := range PassPrefixes {
			if strings.HasPrefix(k, p) {
				set[k] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Environ returns base with the step's Env added (the step wins), as a
// process environment.
func Environ(base []string, s plan.Step) []string {
	out := make([]string, 0, len(base)+len(s.Env))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := s.Env[k]; !over {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+s.Env[k])
	}
	return out
}

// CheckEnvNames returns an error naming the first (by sort order) of the
// step's Env names that a POSIX shell cannot export or mpirun forward
// (letters, digits and '_', not starting with a digit): every launcher
// writes them into a shell script or command line.
// The rule is plan.EnvName, the one every launcher and plugin uses.
func CheckEnvNames(s plan.Step) error { return s.CheckEnv() }

// ShellJoin renders argv as one POSIX shell command line, quoting every word
// that needs it, so a printed command can be pasted into a shell and does
// exactly what gpuaccept ran.
func ShellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}

// ShellQuote quotes one word for a POSIX shell: unchanged when it holds only
// safe characters, else in single quotes with embedded quotes escaped.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// EnvPrefix renders a step's Env as "NAME=value ..." words for a printed
// command line, sorted by name.
func EnvPrefix(s plan.Step) string {
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		// NAME='a b', not 'NAME=a b': a quoted word is no assignment.
		parts[i] = k + "=" + ShellQuote(s.Env[k])
		if !plan.EnvName(k) {
			// Refused before anything runs (plan.Step.CheckEnv); if one
			// is printed all the same, it is one quoted word, not code.
			parts[i] = ShellQuote(k + "=" + s.Env[k])
		}
	}
	return strings.Join(parts, " ")
}

// CommandLine renders a step's command line as plan.Output.Command and
// --dry-run show it: the step's Env as NAME=value words (EnvPrefix), then
// line, the already shell-quoted command.
func CommandLine(s plan.Step, line string) string {
	if env := EnvPrefix(s); env != "" {
		return env + " " + line
	}
	return line
}
