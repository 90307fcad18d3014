package acceptance

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/hosts"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/site"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Command names the command a Request is resolved for: run, localise,
// health and check share one set of rules and differ only where a rule
// says so.
type Command string

// The commands Resolve knows.
const (
	CommandRun      Command = "run"
	CommandLocalise Command = "localise"
	CommandHealth   Command = "health"
	CommandCheck    Command = "check"
)

// Request is what a command line asks for, as given: the zero value of a
// field is "not given", so that Resolve can pick the default. Errors name
// the flags (--nodes, --param, ...) the fields come from.
type Request struct {
	Command Command
	// SKU is the SKU under test (--sku, or the one --sku auto picked).
	SKU *sku.SKU
	// Suite is the suite of SKU (--suite); "" only for check, which
	// judges one test of no suite.
	Suite string
	// Tests are the --test values: every one must be a test of Suite.
	Tests []string
	// Params are the --param values, KEY=VALUE, PLUGIN:KEY=VALUE or
	// TEST:KEY=VALUE.
	Params []string
	// Site is the site file (--site); nil for none. Its parameters of the
	// suite's plugins and tests lie under Params.
	Site *site.Site
	// Nodes and GPUsPerNode are --nodes and --gpus-per-node; 0: not given.
	Nodes, GPUsPerNode int
	// Hosts are the nodes of --hosts and --hostfile (ReadHosts), in
	// order, with the slot counts written.
	Hosts []hosts.Host
	// AutoGPUs is the GPUs per node --sku auto counted; 0 when the SKU
	// was named. It stands in for an absent --gpus-per-node.
	AutoGPUs int
	// SlurmCheck is health --slurm-check: this node only.
	SlurmCheck bool
	// OneHost says the launcher (Launcher) runs on this host only; a
	// health check of more nodes through it is refused, naming
	// OtherLaunchers.
	OneHost        bool
	Launcher       string
	OtherLaunchers []string
}

// Resolved is a Request resolved against its SKU: what a command hands
// to Setup.
type Resolved struct {
	// Suite is the suite the command runs; nil for check.
	Suite *sku.Suite
	// Topology is the scope (nodes >= 1, GPUs per node >= 1) and the
	// hosts the run uses.
	Topology plan.Topology
	// Params are the test parameters: the command line's over the site's.
	Params map[string]string
	// Notes say where a default or the hosts given changed what was
	// asked ("using the first 2 of the 3 hosts given"), for stderr.
	Notes []string
}

// Validate checks what a Request holds without its SKU: the counts'
// ranges. It is what a command checks before anything is read, so that a
// bad count is named first.
func (r Request) Validate() error {
	for _, f := range []struct {
		name   string
		n, max int
	}{{"nodes", r.Nodes, plan.MaxNodes}, {"gpus-per-node", r.GPUsPerNode, plan.MaxGPUsPerNode}} {
		// A negative count would slice the host list out of range; one
		// too large overflows the rank count.
		if f.n < 0 || f.n > f.max {
			return fmt.Errorf("--%s %d: want 1 to %d (or leave it out for the default)", f.name, f.n, f.max)
		}
	}
	return nil
}

// Resolve resolves r into the suite, the topology and the parameters a
// command runs with, by the one set of rules run, localise, health and
// check share:
//
//   - nodes: --nodes; else the hosts given, all of them; else the suite's
//     count; else 1. --nodes below the hosts given takes the first ones
//     (a note). health --slurm-check is this node: 1.
//   - GPUs per node: --gpus-per-node; else what --sku auto counted; else
//     the SKU's. A host's slot count other than that is noted, unused.
//   - parameters: --param over the site file's for the suite's plugins
//     and tests; a scope naming neither is an error.
//   - check names its scope: --nodes and --gpus-per-node, no defaults.
//
// Every error is the command line's (a usage error), naming the flag.
func Resolve(r Request) (Resolved, error) {
	var out Resolved
	if r.SKU == nil {
		return out, errors.New("Request.SKU: nil")
	}
	if r.Command == CommandCheck {
		if r.Nodes < 1 || r.GPUsPerNode < 1 {
			// Guessing the scope would judge against the wrong baseline
			// and fail the rank count; the logs' scope must be said.
			return out, errors.New("check needs --nodes and --gpus-per-node, both >= 1: the scope the logs ran at picks the baseline and the expected rank count")
		}
		if err := plan.CheckCounts(r.Nodes, r.GPUsPerNode); err != nil {
			return out, fmt.Errorf("--nodes and --gpus-per-node: %w", err)
		}
		out.Topology = plan.Topology{Scope: plan.Scope{Nodes: r.Nodes, GPUsPerNode: r.GPUsPerNode}}
		return out, nil
	}
	if err := r.Validate(); err != nil {
		return out, err
	}
	su, ok := r.SKU.Suites[r.Suite]
	if !ok {
		return out, fmt.Errorf("SKU %s has no suite %q (known: %s)", r.SKU.Name, r.Suite, strings.Join(r.SKU.SuiteNames(), ", "))
	}
	out.Suite = su
	pm, err := ParseParams(r.Params)
	if err != nil {
		return out, err
	}
	if err := paramScopes(pm, su); err != nil {
		return out, err
	}
	if err := suiteHas(su, r.Suite, r.Tests); err != nil {
		return out, err
	}
	out.Params = withSiteParams(pm, r.Site, su)
	if err := noDeclaredParam(out.Params); err != nil {
		return out, err
	}
	names := hosts.Names(r.Hosts)
	topo, notes := nodesOf(r.Nodes, names, su.Nodes)
	if r.Command == CommandRun && r.Nodes == 0 && len(names) > 0 && su.Nodes > 0 && su.Nodes != len(names) {
		// The hosts given are the cluster under test: all of them take
		// part, whatever node count the suite names by default.
		notes = append(notes, fmt.Sprintf("suite %s runs on %s by default; running on the %s given (--nodes sets the count)", r.Suite, result.Count(su.Nodes, "node"), result.Count(len(names), "host")))
	}
	if r.SlurmCheck {
		topo.Nodes = 1
	}
	gpusFrom := "--gpus-per-node"
	switch {
	case r.GPUsPerNode > 0:
		topo.GPUsPerNode = r.GPUsPerNode
	case r.AutoGPUs > 0:
		topo.GPUsPerNode, gpusFrom = r.AutoGPUs, "the GPUs --sku auto counted"
	default:
		topo.GPUsPerNode, gpusFrom = r.SKU.GPUsPerNode, "SKU "+r.SKU.Name+"'s GPUs per node"
	}
	if n := slotsIgnored(r.Hosts, topo.GPUsPerNode); n != "" {
		notes = append(notes, fmt.Sprintf("the slots given (%s) are not used: every node runs %s (%s)", n, result.Count(topo.GPUsPerNode, "GPU"), gpusFrom))
	}
	if topo.Nodes < 1 || topo.GPUsPerNode < 1 {
		return out, fmt.Errorf("--nodes %d / --gpus-per-node %d: both must be >= 1", topo.Nodes, topo.GPUsPerNode)
	}
	if r.Command == CommandLocalise && len(topo.Hosts) < 2 {
		return out, errors.New("localise needs the nodes to narrow down: --hosts or --hostfile with 2 or more")
	}
	if r.Command == CommandHealth && r.OneHost && topo.Nodes > 1 {
		// The launcher would refuse every check at launch (an ERROR, exit
		// 3, and a results folder of nothing): the scope is the mistake.
		asked := fmt.Sprintf("suite %s needs %s", r.Suite, result.Count(topo.Nodes, "node"))
		if r.Nodes > 0 {
			asked = fmt.Sprintf("--nodes %d asks for %s", r.Nodes, result.Count(r.Nodes, "node"))
		} else if len(names) > 1 {
			asked = fmt.Sprintf("%s are given", result.Count(len(names), "host"))
		}
		return out, fmt.Errorf("%s, but launcher %s runs on this host only: give --nodes 1 to check this node, or another --launcher (%s) with --hosts or --hostfile to check %s", asked, r.Launcher, strings.Join(r.OtherLaunchers, ", "), result.Count(topo.Nodes, "node"))
	}
	out.Topology, out.Notes = topo, notes
	return out, nil
}

// ProbeTopology is the scope --sku auto's probe runs at, before any SKU
// is known: the nodes by Resolve's rule (no suite: 1 by default), and
// --gpus-per-node, else maxGPUs (Slurm and Kubernetes give a step only
// the GPUs it asks for: the probe asks for as many as any SKU's node has).
func ProbeTopology(nodes, gpus int, names []string, maxGPUs int) plan.Topology {
	topo, _ := nodesOf(nodes, names, 0)
	topo.GPUsPerNode = gpus
	if gpus == 0 {
		topo.GPUsPerNode = max(maxGPUs, 1)
	}
	return topo
}

// nodesOf is the node rule of Resolve: nodes given, else every host
// given, else the suite's count, else 1; the hosts used, and a note when
// nodes drops some of the hosts given.
func nodesOf(nodes int, names []string, suiteNodes int) (plan.Topology, []string) {
	topo := plan.Topology{Scope: plan.Scope{Nodes: nodes}, Hosts: names}
	var notes []string
	switch {
	case nodes == 0 && len(names) > 0:
		topo.Nodes = len(names)
	case nodes == 0:
		topo.Nodes = max(suiteNodes, 1)
	case len(names) > nodes:
		notes = append(notes, fmt.Sprintf("--nodes %d: using the first %d of the %s given (%s)", nodes, nodes, result.Count(len(names), "host"), strings.Join(names[:nodes], ",")))
		topo.Hosts = names[:nodes]
	}
	return topo, notes
}

// ReadHosts reads --hosts (list) and --hostfile (file) into the hosts
// given, in order. The slot counts people write (host:8, host slots=8)
// are kept, but GPUs per node come from --gpus-per-node (Resolve notes
// the difference). A host given twice is an error: every launcher would
// run two ranks' worth on it, or pair it with itself in a localisation.
func ReadHosts(list, file string) ([]hosts.Host, error) {
	var hs []hosts.Host
	if list != "" {
		l, err := hosts.ParseList(list)
		if err != nil {
			return nil, err
		}
		hs = append(hs, l...)
	}
	if file != "" {
		data, err := safefs.ReadNamed(file, 64<<20)
		if err != nil {
			return nil, fmt.Errorf("read --hostfile: %w", err)
		}
		l, err := hosts.ParseFile(data, file)
		if err != nil {
			return nil, err
		}
		hs = append(hs, l...)
	}
	seen := map[string]bool{}
	for _, h := range hosts.Names(hs) {
		if seen[h] {
			return nil, fmt.Errorf("host %s is listed twice in --hosts/--hostfile; give each node once (its ranks come from --gpus-per-node)", h)
		}
		seen[h] = true
	}
	return hs, nil
}

// ParseParams parses --param values, KEY=VALUE, into a map (a key given
// twice keeps its last value).
func ParseParams(kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--param %q: want KEY=VALUE", kv)
		}
		m[k] = v
	}
	return m, nil
}

// slotsIgnored lists the hosts given slot counts other than gpus, the
// GPUs every node runs ("node2:4"), for the note that says so: a rank
// count per node differing between nodes is not what a run does. ""
// when every count given is gpus.
func slotsIgnored(hs []hosts.Host, gpus int) string {
	var odd []string
	for _, h := range hs {
		if h.Slots != 0 && h.Slots != gpus {
			odd = append(odd, fmt.Sprintf("%s:%d", h.Name, h.Slots))
		}
	}
	return strings.Join(odd, ", ")
}

// suiteHas checks that every --test names a test of the suite, with the
// names a mistyped one could have meant.
func suiteHas(su *sku.Suite, suite string, tests []string) error {
	names := make([]string, len(su.Tests))
	for i, t := range su.Tests {
		names[i] = t.Test
	}
	for _, t := range tests {
		if !su.Has(t) {
			return fmt.Errorf("--test %s: not a test of suite %s%s (its tests: %s)", t, suite, DidYouMean(t, names), strings.Join(names, ", "))
		}
	}
	return nil
}

// scopesOf are the parameter scopes of su: its plugins and its tests, in
// order, each once.
func scopesOf(su *sku.Suite) []string {
	known := map[string]bool{}
	var names []string
	for _, st := range su.Tests {
		plugin, _, _ := strings.Cut(st.Test, ".")
		for _, n := range []string{plugin, st.Test} {
			if !known[n] {
				known[n] = true
				names = append(names, n)
			}
		}
	}
	return names
}

// paramScopes checks that every "SCOPE:KEY" parameter names a plugin or a
// test of the suite, so a typo does not silently drop the parameter.
func paramScopes(pm map[string]string, su *sku.Suite) error {
	names := scopesOf(su)
	known := map[string]bool{}
	for _, n := range names {
		known[n] = true
	}
	for k := range pm {
		if scope, _, ok := strings.Cut(k, ":"); ok && !known[scope] {
			return fmt.Errorf("--param %s: %q is neither a plugin nor a test of the suite (known: %s)", k, scope, strings.Join(names, ", "))
		}
	}
	return nil
}

// noDeclaredParam refuses a parameter sku.DeclaredParam given on the
// command line or by the site file: the plugin would read other metrics
// than the SKU file's, which judge, draw and record them.
func noDeclaredParam(pm map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(pm)) {
		key := k
		if i := strings.LastIndex(k, ":"); i >= 0 {
			key = k[i+1:]
		}
		if key == sku.DeclaredParam {
			return fmt.Errorf("--param %s (or the site file's params): the metrics a test reports are declared in the SKU file, under the suite test's metrics:, beside the bands that judge them", k)
		}
	}
	return nil
}

// withSiteParams lays the site's parameters of the plugins and tests su
// runs under the command line's pm: a --param of the same key, scoped or
// not, wins. pm is changed and returned.
func withSiteParams(pm map[string]string, st *site.Site, su *sku.Suite) map[string]string {
	if st == nil {
		return pm
	}
	for k, v := range st.ParamsFor(scopesOf(su)) {
		_, key, _ := strings.Cut(k, ":")
		if _, given := pm[k]; given {
			continue
		}
		if _, given := pm[key]; given {
			continue
		}
		pm[k] = v
	}
	return pm
}
