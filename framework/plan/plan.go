// Package plan holds what a test plugin hands a launcher: the topology a test
// runs on and the steps (processes) to start. It is the contract between the
// "what to run" side (plugins) and the "where and how to run it" side
// (launchers); neither side knows the other.
package plan

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Topology is the set of machines a test runs on: its Scope (promoted:
// t.Nodes, t.GPUsPerNode, t.Ranks(), t.String()) and, when the launcher knows
// them, the machines' names.
type Topology struct {
	Scope
	// Hosts are the node names, when the launcher knows them before the run
	// (ssh hostfile, Slurm allocation). Empty for local and replay runs.
	Hosts []string `json:"hosts,omitempty"`
	// NICs are the HCA names per node (e.g. "mlx5_0"), when known.
	NICs []string `json:"nics,omitempty"`
}

// topologyJSON is Topology's JSON shape: the scope's counts as fields of
// their own, not its text form.
type topologyJSON struct {
	Nodes       int      `json:"nodes"`
	GPUsPerNode int      `json:"gpus_per_node"`
	Hosts       []string `json:"hosts,omitempty"`
	NICs        []string `json:"nics,omitempty"`
}

// MarshalJSON writes the topology as an object {"nodes", "gpus_per_node",
// "hosts", "nics"}. Without it the MarshalText promoted from Scope would
// write "1x2" and drop the hosts.
func (t Topology) MarshalJSON() ([]byte, error) {
	return json.Marshal(topologyJSON{t.Nodes, t.GPUsPerNode, t.Hosts, t.NICs})
}

// UnmarshalJSON reads what MarshalJSON writes (the counts are not checked:
// a plugin's request is checked where it is made).
func (t *Topology) UnmarshalJSON(data []byte) error {
	var j topologyJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*t = Topology{Scope: Scope{Nodes: j.Nodes, GPUsPerNode: j.GPUsPerNode}, Hosts: j.Hosts, NICs: j.NICs}
	return nil
}

// HostRef stands for the host of node i of the topology (0-based, the
// index Step.Host uses), as a whole argv word or env value, when a plugin
// plans before the hosts are known (a Slurm allocation, pods): the launcher
// puts the host's name, or the pod's DNS name, in its place before the step
// starts. Plugins use it only when Topology.Hosts is empty.
func HostRef(i int) string { return "@host" + strconv.Itoa(i) + "@" }

// HostRefIndex reports whether word is a HostRef, and of which node.
func HostRefIndex(word string) (int, bool) {
	n, ok := strings.CutPrefix(word, "@host")
	if !ok {
		return 0, false
	}
	n, ok = strings.CutSuffix(n, "@")
	i, err := strconv.Atoi(n)
	if !ok || err != nil || i < 0 || HostRef(i) != word {
		return 0, false
	}
	return i, true
}

// HostsEnv is the environment variable every process of every step sees,
// under every launcher that runs something: the names of the test's nodes,
// comma-separated, in node order (node i is the name HostRef(i) resolves
// to under that launcher: "localhost" under local, the --hosts names under
// ssh, the allocation's node names under Slurm, pod DNS names under
// Kubernetes). Launchers set it with Plan.WithHostsEnv, overriding any
// value a plugin or --param env.GPUACCEPT_HOSTS gave, so a workload (the
// stand-in program, a wrapper that logs where it ran) can tell which nodes
// take part in the run.
const HostsEnv = "GPUACCEPT_HOSTS"

// HostListRef stands for the names of nodes 0..n-1 of the topology joined
// by commas ("h0,h1"), as a whole argv word or env value: ResolveHostRefs
// (and a launcher that resolves at step start, like Slurm's script) puts
// them in its place. n >= 1.
func HostListRef(n int) string { return "@hostlist" + strconv.Itoa(n) + "@" }

// HostListRefCount reports whether word is a HostListRef, and of how many
// nodes.
func HostListRefCount(word string) (int, bool) {
	n, ok := strings.CutPrefix(word, "@hostlist")
	if !ok {
		return 0, false
	}
	n, ok = strings.CutSuffix(n, "@")
	c, err := strconv.Atoi(n)
	if !ok || err != nil || c < 1 || HostListRef(c) != word {
		return 0, false
	}
	return c, true
}

// WithHostsEnv returns a copy of p whose every step has HostsEnv set to
// HostListRef(nodes) (nodes below 1 count as 1), for the launcher to
// resolve like any HostRef; rank starters forward it with the rest of the
// step's Env (mpirun -x).
func (p Plan) WithHostsEnv(nodes int) Plan {
	if nodes < 1 {
		nodes = 1
	}
	out := Plan{Steps: make([]Step, len(p.Steps))}
	for i, s := range p.Steps {
		env := make(map[string]string, len(s.Env)+1)
		for k, v := range s.Env {
			env[k] = v
		}
		env[HostsEnv] = HostListRef(nodes)
		s.Env = env
		out.Steps[i] = s
	}
	return out
}

// ResolveHostRefs returns a copy of s whose argv words and env values that
// are HostRefs are replaced by host(i), and those that are HostListRef(n)
// by host(0),...,host(n-1) joined by commas. Errors: those of host.
func (s Step) ResolveHostRefs(host func(i int) (string, error)) (Step, error) {
	resolve := func(v string) (string, error) {
		if i, ok := HostRefIndex(v); ok {
			h, err := host(i)
			if err != nil {
				return "", fmt.Errorf("step %s: host of node %d: %w", s.Name, i, err)
			}
			return h, nil
		}
		if n, ok := HostListRefCount(v); ok {
			hs := make([]string, n)
			for i := range hs {
				h, err := host(i)
				if err != nil {
					return "", fmt.Errorf("step %s: host of node %d: %w", s.Name, i, err)
				}
				hs[i] = h
			}
			return strings.Join(hs, ","), nil
		}
		return v, nil
	}
	out := s
	out.Argv = make([]string, len(s.Argv))
	for i, a := range s.Argv {
		v, err := resolve(a)
		if err != nil {
			return Step{}, err
		}
		out.Argv[i] = v
	}
	if s.Env != nil {
		out.Env = make(map[string]string, len(s.Env))
		for k, v := range s.Env {
			r, err := resolve(v)
			if err != nil {
				return Step{}, err
			}
			out.Env[k] = r
		}
	}
	return out, nil
}

// ResolveHostRefs resolves the HostRefs of every step (Step.ResolveHostRefs).
func (p Plan) ResolveHostRefs(host func(i int) (string, error)) (Plan, error) {
	out := Plan{Steps: make([]Step, len(p.Steps))}
	for i, s := range p.Steps {
		r, err := s.ResolveHostRefs(host)
		if err != nil {
			return Plan{}, err
		}
		out.Steps[i] = r
	}
	return out, nil
}

// TopologyHosts resolves HostRefs from t.Hosts, for launchers that know the
// hosts before they start anything (ssh, local).
func TopologyHosts(t Topology) func(i int) (string, error) {
	return func(i int) (string, error) {
		if i < len(t.Hosts) {
			return t.Hosts[i], nil
		}
		return "", fmt.Errorf("topology %s names %d hosts", t, len(t.Hosts))
	}
}

// Monitor is the Role of a step that runs beside a test's own steps (the
// telemetry sampler): launchers start it first and stop it, not as a
// failure, once the others ended (launch.Sequence).
const Monitor = "monitor"

// Evidence is the Role of a step that collects what a hung test's nodes
// show (GPU state, new XIDs, the ranks' stacks): launchers start it only
// when the test's time runs out, before they stop anything, bound it by
// its own Timeout (launch.DefaultEvidenceTimeout when zero), and then
// stop the test's steps (launch.Sequence). A test that ends in time never
// runs it.
const Evidence = "evidence"

// Step is one program start: a single process, or an MPI job of several
// processes that a rank starter (mpirun, srun) launches together.
type Step struct {
	// Name identifies the step within its plan; it names the step's raw
	// output files, so it is a short word ([a-z0-9_.-]).
	Name string `json:"name"`
	// Role is empty for symmetric workloads, "server"/"client" for paired
	// ones such as ib_write_bw, Monitor or Evidence.
	Role string `json:"role,omitempty"`
	// Argv is the program and its arguments. Relative paths in it are
	// relative to the step's working directory, which the launcher creates
	// fresh for the step and from which it collects Files.
	Argv []string `json:"argv"`
	// Env is added to the environment of every process of the step, and
	// passed on explicitly by rank starters (mpirun -x NAME).
	Env map[string]string `json:"env,omitempty"`
	// Procs is the number of processes to start in total (>= 1).
	Procs int `json:"procs"`
	// ProcsPerNode is how many of them go on each node (>= 1).
	ProcsPerNode int `json:"procs_per_node"`
	// MPI says the processes form one MPI job and need a rank starter even
	// when Procs is 1.
	MPI bool `json:"mpi,omitempty"`
	// Host is the index into Topology.Hosts of the node a single-host step
	// (a server or a client) runs on; ignored for multi-node steps.
	Host int `json:"host,omitempty"`
	// ReadyMarker, when set, is a line fragment the launcher waits for in
	// this step's output before it starts the next step.
	ReadyMarker string `json:"ready_marker,omitempty"`
	// Timeout bounds the step's run time; zero means the run's own timeout.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Files are the names, relative to the working directory, of files the
	// step writes and the launcher must collect (e.g. nccl-tests' -J JSON).
	Files []string `json:"files,omitempty"`
}

// Plan is the ordered list of steps one test needs.
type Plan struct {
	Steps []Step `json:"steps"`
}

// Validate reports the first structural problem of the plan: a step without
// a name or argv, a duplicate name, or a process count below one.
func (p Plan) Validate() error {
	if len(p.Steps) == 0 {
		return fmt.Errorf("plan has no steps")
	}
	seen := map[string]bool{}
	for i, s := range p.Steps {
		switch {
		case !ValidName(s.Name):
			return fmt.Errorf("step %d: name %q is not a short word of [a-z0-9_.-]", i, s.Name)
		case seen[s.Name]:
			return fmt.Errorf("step %d: name %q used twice", i, s.Name)
		case len(s.Argv) == 0:
			return fmt.Errorf("step %q: empty argv", s.Name)
		case s.Procs < 1 || s.ProcsPerNode < 1:
			return fmt.Errorf("step %q: procs %d / procs per node %d must be >= 1", s.Name, s.Procs, s.ProcsPerNode)
		}
		if err := s.CheckEnv(); err != nil {
			return err
		}
		seen[s.Name] = true
	}
	return nil
}

// EnvName reports whether k can name an environment variable of a step:
// ASCII letters, digits and '_', not starting with a digit. That is what a
// POSIX shell exports and mpirun -x forwards, and every launcher writes the
// names into a shell script or a command line, so it is the one rule for
// all of them.
func EnvName(k string) bool {
	if k == "" || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// EnvNameError is the error for an Env name that is not an EnvName.
func EnvNameError(k string) error {
	return fmt.Errorf("environment variable name %q is not a shell name (letters, digits and _, not starting with a digit)", k)
}

// CheckEnv returns an error naming the step and the first (by sort order)
// of its Env names that is not an EnvName; nil when all are.
func (s Step) CheckEnv() error {
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !EnvName(k) {
			return fmt.Errorf("step %s: %w", s.Name, EnvNameError(k))
		}
	}
	return nil
}

// ValidName says s is a step name Validate accepts: 1 to 64 of
// [a-z0-9_.-], safe in a file name and a shell word.
func ValidName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return s != "." && s != ".."
}

// Output is what a launcher collected from one step: where its combined
// stdout and stderr and its files were written, and how it ended. Paths are
// absolute on the machine that runs gpuaccept, so an out-of-process plugin
// streams them instead of receiving them over RPC.
type Output struct {
	Step string `json:"step"`
	Role string `json:"role,omitempty"`
	// Host is where the step (or its first rank) ran, when known.
	Host string `json:"host,omitempty"`
	// RankHosts is the host each rank of the step ran on, index = rank
	// ("" for a rank that did not report), when the launcher learns it
	// (slurm: the STEP.ranks files its rank wrapper writes); nil otherwise.
	RankHosts []string `json:"rank_hosts,omitempty"`
	// ExitCode is the process's (or the rank starter's) exit status; -1
	// when it did not exit by itself (killed on timeout, not started).
	ExitCode int `json:"exit_code"`
	// LaunchError says why the step could not run or was stopped
	// (timeout, unreachable host, scheduler error); empty when it ran.
	LaunchError string `json:"launch_error,omitempty"`
	// Log is the path of the step's combined stdout and stderr.
	Log string `json:"log"`
	// Files maps each collected file name (Step.Files) to its path; a
	// file the step did not write is absent.
	Files map[string]string `json:"files,omitempty"`
	// Command is the command line that ran, as a shell would show it.
	Command string `json:"command,omitempty"`
}
