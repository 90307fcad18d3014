// Package site reads a site file (--site): what makes a launch work on one
// cluster, as opposed to what a GPU model is judged by (the SKU file). Two
// clusters of the same GPUs differ in their container image, where the
// benchmarks were built, the scripts that set the fabric's NCCL variables,
// the interfaces MPI must use, the pods' network attachments, resource
// claims and node labels; the seeds wrote these into their hand-made jobs.
// A site file states them once, and every launcher takes them from
// launch.Options.Site the same way (rank starter options through
// launchers/rankstart.FromLaunch, step environment and scripts through
// launch's wrapper, pod shape through the k8s launcher).
//
//	site: aks-ndmv4                 # a name for messages
//	source: seeds/000 lines 285-415 # where the settings come from
//	params:                         # plugin or test parameters, by scope
//	  nccl: {bindir: /workspace/nccl-tests/build, json: "false"}
//	env: {NCCL_TOPO_FILE: /workspace/ndv4-topo.xml}
//	env_scripts: [/usr/local/gib/scripts/set_nccl_env.sh]
//	mpi:
//	  flavor: openmpi               # --mpi-flavor when not given
//	  bind_to: numa
//	  mca: {btl: "self,tcp", btl_tcp_if_include: eth0}
//	  hcoll: false                  # Open MPI's HCOLL collectives (default off)
//	  args: ["--mca", "plm_rsh_no_tree_spawn", "1"]
//	kubernetes:                     # the SKU's kubernetes fields, laid over its own
//	  image: registry.example/nccl-tests:2.19
//	  annotations: {k8s.v1.cni.cncf.io/networks: "hostdev-net,..."}
//	  launcher: {annotations: {}, node_selector: {}, resources: {cpu: "1"}}
//	  compute_domain: {claim: compute-domain-channel}
//	  host_paths: [{path: /home/kubernetes/bin/gib, mount: /usr/local/gib}]
//
// Decoding is strict, as SKU files are (framework/sku's helpers): a
// misspelt key, a value of the wrong type or a rule broken is a problem
// naming the file, the line and the field.
package site

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Site is a site file.
type Site struct {
	// Name names the site in messages.
	Name string `yaml:"site"`
	// Description and Source say what the site is and where its settings
	// come from (a seed's lines, a runbook); read by people only.
	Description string `yaml:"description"`
	Source      string `yaml:"source"`
	// Params are test parameters by scope: a plugin ("nccl") or a test
	// ("nccl.all_reduce"), then key to value, as --param SCOPE:KEY=VALUE
	// would give them. They lie over the suite's parameters; a --param of
	// the same key wins. Scopes the suite does not run are ignored: a site
	// serves every suite. gpuaccept verify holds a run to the suite's
	// parameters, save those a suite test lists as the site's
	// (sku.SuiteTest.SiteParams: the NIC map); a changed verdict from any
	// other is a finding.
	Params map[string]map[string]string `yaml:"params"`
	// Env is set for every process of every step (plan.Step.Env), under
	// every launcher; a step's own variables win.
	Env map[string]string `yaml:"env"`
	// EnvScripts are sourced, in order, by every process of every step
	// before the program starts (on every rank, inside the rank starter),
	// so what they export reaches the benchmark on every node, as seed
	// 001 sources /usr/local/gib/scripts/set_nccl_env.sh. Absolute paths.
	EnvScripts []string `yaml:"env_scripts"`
	// Shell sources EnvScripts; empty means /bin/sh (POSIX "."). A script
	// that needs bash wants /bin/bash here.
	Shell string `yaml:"shell"`
	// MPI shapes the rank starter's command line.
	MPI *MPI `yaml:"mpi"`
	// Kubernetes shapes the pods of the k8s launcher.
	Kubernetes *Kubernetes `yaml:"kubernetes"`

	// File is the file's name as given to Parse.
	File  string         `yaml:"-"`
	lines map[string]int `yaml:"-"`
}

// MPI is how ranks are started on the site, under every launcher.
type MPI struct {
	// Flavor is the rank starter (launchers/rankstart name) when
	// --mpi-flavor is not given.
	Flavor string `yaml:"flavor"`
	// BindTo is the process binding: none, core, numa, socket, ...
	// (mpirun --bind-to, Hydra -bind-to, srun --cpu-bind).
	BindTo string `yaml:"bind_to"`
	// MCA are Open MPI / HPC-X MCA parameters, name to value: mpirun --mca
	// NAME VALUE, in name order (srun: OMPI_MCA_NAME in the environment).
	// MPICH has none and refuses them.
	MCA map[string]string `yaml:"mca"`
	// HCOLL leaves Mellanox HCOLL's MPI collectives on; by default every
	// launcher turns them off (-mca coll_hcoll_enable 0, as seed 000 does):
	// they are not what the benchmarks measure, and a fabric without their
	// setup hangs in MPI_Init.
	HCOLL bool `yaml:"hcoll"`
	// Args are further rank starter arguments, before --mpi-arg's.
	Args []string `yaml:"args"`
	Line int      `yaml:"-"`
}

// Kubernetes is the site's part of the pods: every field of the SKU file's
// kubernetes section (sku.Kubernetes: image, resources, annotations,
// node_selector, privileged, ...), laid over the SKU's key by key for the
// pods that hold ranks, and what only a site knows: the rankless launcher
// pod's own shape, an IMEX ComputeDomain and host folders to mount.
type Kubernetes struct {
	// Pods are the SKU file's kubernetes fields, written at this
	// section's top level.
	Pods sku.Kubernetes `yaml:"-"`
	// Launcher is the shape of a pod that holds no rank (the MPIJob
	// flavour's launcher): it gets none of the rank pods' annotations
	// (network attachments), node selector or resources (GPU, RDMA), only
	// these.
	Launcher *Role `yaml:"launcher"`
	// ComputeDomain asks for an NVIDIA IMEX ComputeDomain per multi-node
	// step (resource.nvidia.com/v1beta1, numNodes = the step's nodes) and
	// puts its channel claim on every rank pod, as seed 001 does for
	// multi-node NVLink on GB200.
	ComputeDomain *ComputeDomain `yaml:"compute_domain"`
	// HostPaths are node folders mounted into every pod (GKE's
	// /home/kubernetes/bin/gib at /usr/local/gib, seed 001).
	HostPaths []*HostPath `yaml:"host_paths"`
	Line      int         `yaml:"-"`
}

// Role is the shape of one kind of pod.
type Role struct {
	Annotations  map[string]string `yaml:"annotations"`
	NodeSelector map[string]string `yaml:"node_selector"`
	// Resources are requests = limits, name to quantity.
	Resources map[string]string `yaml:"resources"`
	Line      int               `yaml:"-"`
}

// ComputeDomain is the IMEX ComputeDomain a multi-node step's pods share.
type ComputeDomain struct {
	// Claim is the name of the pods' resource claim of the domain's
	// channel; empty means "compute-domain-channel" (seed 001's).
	Claim string `yaml:"claim"`
	Line  int    `yaml:"-"`
}

// HostPath is a node folder mounted into every pod.
type HostPath struct {
	// Path is the folder on the node, Mount where the pods see it; both
	// absolute.
	Path  string `yaml:"path"`
	Mount string `yaml:"mount"`
	Line  int    `yaml:"-"`
}

// DefaultClaim is the claim name of a ComputeDomain without one.
const DefaultClaim = "compute-domain-channel"

// ClaimName is the claim's name, DefaultClaim when empty.
func (c *ComputeDomain) ClaimName() string {
	if c.Claim == "" {
		return DefaultClaim
	}
	return c.Claim
}

// Load reads the site file at path; errors as Parse's.
func Load(path string) (*Site, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read site file: %w", err)
	}
	return Parse(data, path)
}

// LoadForRun reads --site for a run: "" is no site file (nil, nil). The
// site's secret values join this process's environment, which every
// masking of the run reads (redact.FromEnv): they reach each rank, and so
// its output, the reports and the journal. Errors as Load's, or naming
// the variable that could not be set.
func LoadForRun(path string) (*Site, error) {
	if path == "" {
		return nil, nil
	}
	s, err := Load(path)
	if err != nil {
		return nil, err
	}
	for _, kv := range s.SecretEnv() {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return nil, fmt.Errorf("site %s: env %s: %w", path, k, err)
		}
	}
	return s, nil
}

// Parse reads a site file's content; name is its name for messages. A
// malformed file gives a *sku.Problems error listing every problem with its
// line and field, and a nil Site.
func Parse(data []byte, name string) (*Site, error) {
	var root yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, sku.NewProblems(name, []error{sku.Problem{Message: "empty file"}})
		}
		return nil, sku.NewProblems(name, []error{sku.SyntaxProblem(err, data)})
	}
	if len(root.Content) == 0 {
		return nil, sku.NewProblems(name, []error{sku.Problem{Message: "empty file"}})
	}
	type raw Site
	var s Site
	top := root.Content[0]
	errs := []error{sku.StrictDecode(top, (*raw)(&s))}
	s.File = name
	s.lines = map[string]int{}
	if top.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(top.Content); i += 2 {
			s.lines[top.Content[i].Value] = top.Content[i].Line
		}
	}
	errs = append(errs, s.validate()...)
	if err := sku.NewProblems(name, errs); err != nil {
		return nil, err
	}
	return &s, nil
}

// UnmarshalYAML reads the mpi section strictly and records its line.
func (m *MPI) UnmarshalYAML(n *yaml.Node) error {
	type raw MPI
	if err := sku.StrictDecode(n, (*raw)(m)); err != nil {
		return err
	}
	m.Line = n.Line
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m.MCA)) {
		if k == "" || strings.ContainsAny(k, " \t\n=") {
			errs = append(errs, sku.ProblemAt(n.Line, "mpi.mca", "%q is not an MCA parameter name", k))
		}
		if k == "coll_hcoll_enable" {
			errs = append(errs, sku.ProblemAt(n.Line, "mpi.mca", "coll_hcoll_enable is mpi.hcoll's: say hcoll: true to leave HCOLL on"))
		}
		if strings.ContainsAny(m.MCA[k], "\n\x00") {
			errs = append(errs, sku.ProblemAt(n.Line, "mpi.mca", "%s: a value holds a line break", k))
		}
	}
	switch m.BindTo {
	case "", "none", "hwthread", "core", "l1cache", "l2cache", "l3cache", "numa", "socket", "package", "board":
	default:
		errs = append(errs, sku.ProblemAt(n.Line, "mpi.bind_to", "%q is not a binding (none, core, numa, socket, ...)", m.BindTo))
	}
	return sku.AsTypeError(errs...)
}

// UnmarshalYAML reads the kubernetes section strictly: the SKU's fields
// with sku.Kubernetes' rules, and the site's own.
func (k *Kubernetes) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return sku.AsTypeError(sku.ProblemAt(n.Line, "kubernetes", "want a mapping"))
	}
	// The site's own keys go to this struct, the others to sku.Kubernetes
	// (its own strict decoding and rules); a key of neither is named with
	// the keys of both.
	type raw Kubernetes
	own, pods := *n, *n
	own.Content, pods.Content = nil, nil
	ownKeys := map[string]bool{"launcher": true, "compute_domain": true, "host_paths": true}
	podKeys := yamlKeys(reflect.TypeOf(sku.Kubernetes{}))
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i]
		switch {
		case ownKeys[key.Value]:
			own.Content = append(own.Content, n.Content[i], n.Content[i+1])
		case podKeys[key.Value]:
			pods.Content = append(pods.Content, n.Content[i], n.Content[i+1])
		default:
			known := slices.Sorted(maps.Keys(ownKeys))
			known = append(known, slices.Sorted(maps.Keys(podKeys))...)
			sort.Strings(known)
			errs = append(errs, sku.ProblemAt(key.Line, "", "field %q is not known here (known: %s)", key.Value, strings.Join(known, ", ")))
		}
	}
	errs = append(errs, sku.StrictDecode(&own, (*raw)(k)), pods.Decode(&k.Pods))
	k.Line, k.Pods.Line = n.Line, n.Line
	for i, h := range k.HostPaths {
		switch {
		case h == nil:
			errs = append(errs, sku.ProblemAt(n.Line, "kubernetes.host_paths", "entry %d is empty", i+1))
		case !strings.HasPrefix(h.Path, "/") || !strings.HasPrefix(h.Mount, "/"):
			errs = append(errs, sku.ProblemAt(h.Line, "kubernetes.host_paths", "path %q and mount %q must both be absolute", h.Path, h.Mount))
		}
	}
	return sku.AsTypeError(errs...)
}

// yamlKeys are the yaml names of t's fields.
func yamlKeys(t reflect.Type) map[string]bool {
	m := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			m[name] = true
		}
	}
	return m
}

// UnmarshalYAML reads a role strictly and records its line.
func (r *Role) UnmarshalYAML(n *yaml.Node) error {
	type raw Role
	if err := sku.StrictDecode(n, (*raw)(r)); err != nil {
		return err
	}
	r.Line = n.Line
	return nil
}

// UnmarshalYAML reads a compute domain strictly and records its line.
func (c *ComputeDomain) UnmarshalYAML(n *yaml.Node) error {
	type raw ComputeDomain
	if err := sku.StrictDecode(n, (*raw)(c)); err != nil {
		return err
	}
	c.Line = n.Line
	return nil
}

// UnmarshalYAML reads a host path strictly and records its line.
func (h *HostPath) UnmarshalYAML(n *yaml.Node) error {
	type raw HostPath
	if err := sku.StrictDecode(n, (*raw)(h)); err != nil {
		return err
	}
	h.Line = n.Line
	return nil
}

// validate checks the rules across the top-level fields.
func (s *Site) validate() []error {
	var errs []error
	for _, scope := range slices.Sorted(maps.Keys(s.Params)) {
		if scope == "" || strings.ContainsAny(scope, ": \t") {
			errs = append(errs, sku.ProblemAt(s.lines["params"], "params", "scope %q: want a plugin (nccl) or a test (nccl.all_reduce)", scope))
		}
		for key := range s.Params[scope] {
			if key == "" || strings.Contains(key, ":") {
				errs = append(errs, sku.ProblemAt(s.lines["params"], "params", "%s: key %q: want a parameter name (bindir, env.NCCL_DEBUG)", scope, key))
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if !plan.EnvName(k) {
			errs = append(errs, sku.ProblemAt(s.lines["env"], "env", "%q is not a variable name (letters, digits, _)", k))
		}
	}
	for _, f := range s.EnvScripts {
		if !strings.HasPrefix(f, "/") || strings.ContainsAny(f, "\n\x00") {
			errs = append(errs, sku.ProblemAt(s.lines["env_scripts"], "env_scripts", "%q: want an absolute path on the nodes", f))
		}
	}
	if s.Shell != "" && !strings.HasPrefix(s.Shell, "/") {
		errs = append(errs, sku.ProblemAt(s.lines["shell"], "shell", "%q: want an absolute path (/bin/bash)", s.Shell))
	}
	return errs
}

// ParamsFor returns the site's parameters of the scopes among scopes
// (plugins and tests a suite runs) as --param keys, SCOPE:KEY to value.
func (s *Site) ParamsFor(scopes []string) map[string]string {
	out := map[string]string{}
	if s == nil {
		return out
	}
	for _, sc := range scopes {
		for k, v := range s.Params[sc] {
			out[sc+":"+k] = v
		}
	}
	return out
}

// Step returns s as it runs on the site: the site's Env under the step's
// own, and its program behind the shell that sources EnvScripts (so each
// rank sources them where it runs). A nil Site returns s unchanged.
func (st *Site) Step(s plan.Step) plan.Step {
	if st == nil {
		return s
	}
	if len(st.Env) > 0 {
		env := maps.Clone(st.Env)
		maps.Copy(env, s.Env)
		s.Env = env
	}
	if len(st.EnvScripts) > 0 && len(s.Argv) > 0 {
		shell := st.Shell
		if shell == "" {
			shell = "/bin/sh"
		}
		var b strings.Builder
		for _, f := range st.EnvScripts {
			// A script that is missing stops the step with its name, not a
			// benchmark run without the fabric's settings (a POSIX shell's
			// "." of a missing file ends the shell before any "||").
			// The path is quoted in the message too: inside "..." the
			// shell would expand $(...) and backquotes in it.
			fmt.Fprintf(&b, "if [ -r %s ]; then . %s; else echo \"gpuaccept: site script \"%s\" is missing on $(hostname)\" >&2; exit 127; fi; ", quote(f), quote(f), quote(f))
		}
		b.WriteString(`exec "$@"`)
		s.Argv = append([]string{shell, "-c", b.String(), "gpuaccept-site"}, s.Argv...)
	}
	return s
}

// quote single-quotes a word for sh.
func quote(w string) string { return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'" }

// MCA returns the site's MCA parameters as name, value pairs in name
// order; none for a nil Site or section.
func (s *Site) MCA() [][2]string {
	if s == nil || s.MPI == nil {
		return nil
	}
	keys := make([]string, 0, len(s.MPI.MCA))
	for k := range s.MPI.MCA {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][2]string, len(keys))
	for i, k := range keys {
		out[i] = [2]string{k, s.MPI.MCA[k]}
	}
	return out
}

// Where names a field of the file for messages: "FILE: field F".
func (s *Site) Where(field string) string {
	if s == nil {
		return "the site file"
	}
	return fmt.Sprintf("%s: field %s", s.File, field)
}

// SecretEnv are the site's environment entries whose names are secret
// ones (redact.SecretName: *_TOKEN, *PASSWORD, ...), as NAME=VALUE: the
// masking of what a run writes and prints must know their values, which
// reach every rank and so its output.
func (s *Site) SecretEnv() []string {
	if s == nil {
		return nil
	}
	var out []string
	for k, v := range s.Env {
		if v != "" && redact.SecretName(k) {
			out = append(out, k+"="+v)
		}
	}
	sort.Strings(out)
	return out
}

// CheckScopes reports the params scopes of s that name none of plugins
// (the plugins gpuaccept finds: built-in and on the plugin path), as
// --param SCOPE:KEY does: a typo ("ncl") would otherwise be ignored as a
// scope of another suite. A test scope is checked by its plugin. The
// error is a *sku.Problems naming the file, the line and the field; nil
// when every scope names a plugin.
func (s *Site) CheckScopes(plugins []string) error {
	if s == nil {
		return nil
	}
	var errs []error
	for _, scope := range slices.Sorted(maps.Keys(s.Params)) {
		plugin, _, _ := strings.Cut(scope, ".")
		if !slices.Contains(plugins, plugin) {
			errs = append(errs, sku.ProblemAt(s.lines["params"], "params", "scope %q names no plugin (known: %s)", scope, strings.Join(plugins, ", ")))
		}
	}
	if len(errs) > 0 {
		return sku.NewProblems(s.File, errs)
	}
	return nil
}
