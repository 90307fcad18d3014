package torchbench

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/plugins/internal/toolfail"
)

// Seen holds which results each GPU of each node gave: host → GPU index →
// item ("bf16 alone", "copy", "h2d") → true.
type Seen map[string]map[int]map[string]bool

// Add records item for GPU gpu of host.
func (s Seen) Add(host string, gpu int, item string) {
	if s[host] == nil {
		s[host] = map[int]map[string]bool{}
	}
	if s[host][gpu] == nil {
		s[host][gpu] = map[string]bool{}
	}
	s[host][gpu][item] = true
}

// hostName renders a host for messages, "" as "host unknown" (outputs of
// the script before it named its node).
func hostName(h string) string {
	if h == "" {
		return "host unknown"
	}
	return "host " + h
}

// Complete returns the completeness gates of a test whose every GPU
// 0..GPUsPerNode-1 of every node must give every one of items: a failed
// check per node that misses one ("host vm: GPU 3: no bf16 alone"), with
// Check.Host naming the node; a failed check when fewer nodes reported
// than the topology has, or when torch on a node sees fewer GPUs than the
// topology's GPUs per node. hosts are the nodes the output names (Output.
// Hosts, "" for records without a host); o gives the info and error
// records. A node that reported nothing at all is in no record and is
// named by the node count check only. what names the results in
// messages ("gemm").
//
// A gap the output explains as a setup error (toolfail.Setup: "import
// torch: No module named 'torch'", "torch sees no GPU", "bash: python3:
// command not found") is no measured failure: its check is a warning and
// cause says why, for the plugin's Parsed.Error, so the test ends ERROR
// (fix the setup) unless the hardware failed elsewhere. The gaps setup
// explains: a node's missing GPUs when that node's own records say it
// could not run (records naming no node: only in a topology of one
// node); missing nodes when an error record of a node not present says
// so (a line naming no node, a stray "bash: ...: command not found",
// may be the present node's own: it explains no missing node); and no result from any
// node unless a hardware error (toolfail.Hardware: "uncorrectable ECC
// error encountered") says the device failed — an output that holds no
// result of the script at all (empty, another tool's, cut before its
// first record) measured nothing, which is an error whatever it says.
// cause is "" when no gap is left to setup.
func Complete(topo plan.Topology, o Output, hosts []string, items []string, seen Seen, what string) (checks []result.Check, cause string) {
	g := topo.GPUsPerNode
	setup, hardware := blame(o)
	present := map[string]bool{}
	for _, h := range hosts {
		present[h] = true
	}
	if len(hosts) == 0 {
		msg := fmt.Sprintf("no %s result from any node (%s expected %d nodes x %d GPUs)", what, topo.Scope, topo.Nodes, g)
		if e, ok := anyOf(hardware, nil); ok {
			return []result.Check{{Name: what + " results", OK: false, Message: msg + "; the device failed: " + e.String()}}, ""
		}
		c := result.Check{Name: what + " results", OK: false, Warn: true, Message: msg + ": nothing was measured"}
		if e, ok := anyOf(setup, nil); ok {
			cause = toolfail.CouldNotRun + e.String()
			c.Message += "; " + cause
		}
		return []result.Check{c}, cause
	}
	var causes []string
	nodes := result.Check{Name: "node count", OK: len(hosts) >= topo.Nodes}
	if !nodes.OK {
		nodes.Message = fmt.Sprintf("%d node(s) reported (%s), the topology has %d", len(hosts), strings.Join(names(hosts), ", "), topo.Nodes)
		// Errors of nodes with no result: theirs explain the gap. A line
		// that names no node (a stray "bash: ...: command not found") may
		// be any node's, the one that ran included: it explains no other
		// node's silence.
		if _, hw := anyOf(hardware, present); !hw {
			if e, ok := anyOf(named(setup), present); ok {
				nodes.Warn = true
				why := toolfail.CouldNotRun + e.String()
				nodes.Message += "; " + why
				causes = append(causes, why)
			}
		}
	}
	checks = append(checks, nodes)
	for _, h := range hosts {
		var lost []string
		for gpu := 0; gpu < g; gpu++ {
			var miss []string
			for _, it := range items {
				if !seen[h][gpu][it] {
					miss = append(miss, it)
				}
			}
			if len(miss) == len(items) && len(items) > 0 {
				lost = append(lost, fmt.Sprintf("GPU %d: no result", gpu))
			} else if len(miss) > 0 {
				lost = append(lost, fmt.Sprintf("GPU %d: no %s", gpu, strings.Join(miss, ", ")))
			}
		}
		c := result.Check{Name: what + " results " + hostName(h), OK: len(lost) == 0, Host: h}
		if !c.OK {
			c.Message = fmt.Sprintf("%s: %s (every GPU 0..%d must have each of: %s)", hostName(h), strings.Join(lost, "; "), g-1, strings.Join(items, ", "))
			// A node's own error records explain its gaps; records that
			// name no node only where the topology has one node (then
			// they can be no other node's).
			if e, ok := setup[h]; ok && (h != "" || topo.Nodes == 1) && len(hardware[h]) == 0 {
				c.Warn = true
				why := toolfail.CouldNotRun + e[0].String()
				c.Message += "; " + why
				causes = append(causes, why)
			}
		}
		checks = append(checks, c)
	}
	for _, in := range o.Infos {
		if in.GPUs < g {
			checks = append(checks, result.Check{Name: "GPUs seen " + hostName(in.Host), OK: false, Host: in.Host,
				Message: fmt.Sprintf("%s: torch sees %d GPU(s), the topology has %d per node (line %d)", hostName(in.Host), in.GPUs, g, in.Line)})
		}
	}
	return checks, strings.Join(causes, "; ")
}

// classed is an error record read by toolfail.
type classed struct {
	Error
	pattern *toolfail.Pattern
}

// String renders the error for messages: "host a, line 3: import torch:
// No module named 'torch'", "line 3: ..." when the record names no host.
func (c classed) String() string {
	if c.Host == "" {
		return fmt.Sprintf("line %d: %s", c.Line, c.Message)
	}
	return fmt.Sprintf("host %s, line %d: %s", c.Host, c.Line, c.Message)
}

// blame sorts o's error records by toolfail's kind, per host ("" for
// records that name none), in line order.
func blame(o Output) (setup, hardware map[string][]classed) {
	setup, hardware = map[string][]classed{}, map[string][]classed{}
	for _, e := range o.Errors {
		switch k, p := toolfail.Classify(e.Message); k {
		case toolfail.Setup:
			setup[e.Host] = append(setup[e.Host], classed{e, p})
		case toolfail.Hardware:
			hardware[e.Host] = append(hardware[e.Host], classed{e, p})
		}
	}
	return setup, hardware
}

// anyOf returns the first error (by line) of a host not in except; nil
// except: of any host.
func anyOf(by map[string][]classed, except map[string]bool) (classed, bool) {
	var best classed
	found := false
	for h, es := range by {
		if except[h] && h != "" {
			continue
		}
		if !found || es[0].Line < best.Line {
			best, found = es[0], true
		}
	}
	return best, found
}

// named is by without the errors that name no host.
func named(by map[string][]classed) map[string][]classed {
	out := make(map[string][]classed, len(by))
	for h, es := range by {
		if h != "" {
			out[h] = es
		}
	}
	return out
}

func names(hosts []string) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		if h == "" {
			h = "host unknown"
		}
		out[i] = h
	}
	return out
}

// ErrorChecks returns a warning check per node whose output has error
// records or tracebacks (not Stray lines): the script said it could not
// measure something,
// which a sign-off shows but which is no measured failure (a missing
// result fails Complete's gates). name names the output ("default.jsonl").
func ErrorChecks(o Output, name string) []result.Check {
	byHost := map[string][]string{}
	for _, e := range o.Errors {
		if e.Stray {
			continue
		}
		byHost[e.Host] = append(byHost[e.Host], fmt.Sprintf("%s:%d: %s", name, e.Line, e.Message))
	}
	hosts := make([]string, 0, len(byHost))
	for h := range byHost {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var checks []result.Check
	for _, h := range hosts {
		checks = append(checks, result.Check{Name: "torchbench errors " + hostName(h), OK: false, Warn: true, Host: h,
			Message: strings.Join(byHost[h], "; ")})
	}
	return checks
}

// Facts returns the info keys of o: "gpu" (the device model, which the
// judge's GPU gate reads), "torchversion", "cudaversion" or "hipversion",
// "hosts" (the hosts named, comma-separated), "gpus" (device count per
// node when the nodes agree); and a failed check when the nodes' or GPUs'
// models differ (a mixed node must not pass as the SKU). models are the
// device names other records gave (GEMM.Name), keyed by GPUKey.
func Facts(o Output, models map[string]string) (map[string]string, []result.Check) {
	info := map[string]string{}
	seen := map[string][]string{} // model → "host:gpu"
	var hosts []string
	for _, in := range o.Infos {
		if in.Host != "" && !contains(hosts, in.Host) {
			hosts = append(hosts, in.Host)
		}
		set := func(k, v string) {
			if v != "" && info[k] == "" {
				info[k] = v
			}
		}
		set("torchversion", in.Torch)
		set("cudaversion", in.CUDA)
		set("hipversion", in.HIP)
		if in.GPUs > 0 {
			if v := info["gpus"]; v == "" || v == strconv.Itoa(in.GPUs) {
				info["gpus"] = strconv.Itoa(in.GPUs)
			} else {
				info["gpus"] = "mixed"
			}
		}
		for i, n := range in.Names {
			seen[n] = append(seen[n], GPUKey(in.Host, i))
		}
	}
	if len(seen) == 0 {
		for key, n := range models {
			if n != "" {
				seen[n] = append(seen[n], key)
			}
		}
	}
	for _, h := range o.Hosts() {
		if h != "" && !contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) > 0 {
		info["hosts"] = strings.Join(hosts, ",")
	}
	if info["gpus"] == "mixed" {
		delete(info, "gpus")
	}
	var all []string
	for n := range seen {
		all = append(all, n)
	}
	// The most common model is the node's, on a tie the one of the first
	// GPU listed; the others are named.
	first := map[string]string{}
	for n, ks := range seen {
		sort.Strings(ks)
		first[n] = ks[0]
	}
	sort.Slice(all, func(i, j int) bool {
		if len(seen[all[i]]) != len(seen[all[j]]) {
			return len(seen[all[i]]) > len(seen[all[j]])
		}
		return first[all[i]] < first[all[j]]
	})
	var checks []result.Check
	if len(all) > 0 {
		info["gpu"] = all[0]
	}
	if len(all) > 1 {
		var odd []string
		for _, n := range all[1:] {
			odd = append(odd, fmt.Sprintf("%q on %s", n, strings.Join(seen[n], ", ")))
		}
		checks = append(checks, result.Check{Name: "GPU model uniform", OK: false,
			Message: fmt.Sprintf("most GPUs are %q, but %s", all[0], strings.Join(odd, "; "))})
	}
	return info, checks
}

// GPUKey names GPU gpu of host in messages: "gpu-7 GPU 3", or "GPU 3"
// when the host is unknown.
func GPUKey(host string, gpu int) string {
	if host == "" {
		return "GPU " + strconv.Itoa(gpu)
	}
	return host + " GPU " + strconv.Itoa(gpu)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
