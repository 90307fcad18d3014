// Package rankstart answers "how are the ranks started": it turns a plan
// step into the argv of a rank starter (Open MPI's mpirun) or a plain
// process. The launchers answer "where" (this host, a hostfile, a Slurm
// allocation, pods) and all use this package, so the mpirun line is written
// once.
package rankstart

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// Options shape the rank starter's command line.
type Options struct {
	// Hosts, when set, are passed to mpirun as --host h1:K,h2:K with K the
	// step's processes per node; empty means mpirun's default (this host,
	// or the allocation it detects).
	Hosts []string
	// AllowRoot adds --allow-run-as-root (Open MPI refuses root otherwise).
	AllowRoot bool
	// ExtraArgs go after mpirun's own options (e.g. "--mca", "btl", "self,tcp").
	ExtraArgs []string
	// Environ is the environment the starter runs in; nil means os.Environ().
	// Variables from it whose names start with PassPrefixes are forwarded to
	// remote ranks with -x, as are the step's own Env names.
	Environ []string
}

// PassPrefixes name the variables forwarded to every rank even when the
// plan does not mention them: NCCL and UCX tuning and the library path, the
// ones whose absence on a remote rank silently changes results.
var PassPrefixes = []string{"NCCL_", "UCX_", "LD_LIBRARY_PATH", "CUDA_", "HIP_", "ROCR_", "RCCL_", "OMPI_MCA_"}

// NeedsStarter reports whether a step needs a rank starter: an MPI job, or
// more than one process.
func NeedsStarter(s plan.Step) bool { return s.MPI || s.Procs > 1 }

// OpenMPI returns the mpirun argv for a step. Values of the step's Env are
// not on the command line: the caller puts them in mpirun's environment and
// mpirun forwards them by name (-x NAME), so nothing needs quoting twice and
// no value shows in process listings.
func OpenMPI(s plan.Step, o Options) ([]string, error) {
	if s.Procs < 1 || s.ProcsPerNode < 1 {
		return nil, fmt.Errorf("step %s: %d processes, %d per node: both must be >= 1", s.Name, s.Procs, s.ProcsPerNode)
	}
	argv := []string{"mpirun"}
	if o.AllowRoot {
		argv = append(argv, "--allow-run-as-root")
	}
	argv = append(argv, "-np", strconv.Itoa(s.Procs), "--map-by", fmt.Sprintf("ppr:%d:node", s.ProcsPerNode))
	if len(o.Hosts) > 0 {
		hs := make([]string, len(o.Hosts))
		for i, h := range o.Hosts {
			hs[i] = fmt.Sprintf("%s:%d", h, s.ProcsPerNode)
		}
		argv = append(argv, "--host", strings.Join(hs, ","))
	}
	for _, n := range ForwardedNames(s, o.Environ) {
		argv = append(argv, "-x", n)
	}
	argv = append(argv, o.ExtraArgs...)
	return append(argv, s.Argv...), nil
}

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
	}
	return strings.Join(parts, " ")
}
