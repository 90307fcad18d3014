// Package ibperf is the test plugin for perftest's RDMA bandwidth tools
// (ib_write_bw, ib_read_bw, ib_send_bw), with host memory or GPUDirect
// RDMA (--use_rocm / --use_cuda, dmabuf variants): it plans one server and
// one client per NIC pair, every pair at once, and parses their outputs
// into Gb/s per message size.
package ibperf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// PluginName is the plugin's name: its tests are "ibperf.NAME".
const PluginName = "ibperf"

// The plugin is built into gpuaccept: registered for gpuaccept plugin
// serve ibperf and the lists of built-in plugins (pluginapi.Builtins).
func init() { pluginapi.Register(PluginName, Plugin{}) }

// Version is the plugin's version, reported by Describe.
const Version = "0.1.0"

// ReadyMarker is the line fragment the server prints when it listens: the
// launcher starts the next step once it shows.
const ReadyMarker = "Waiting for client to connect"

// clientReady is the first line a client prints once connected (perftest's
// RESULT_LINE rule): it lets the next pair's client start, so all pairs
// run at once.
const clientReady = "---------------------------------------"

// tests are the offered tests: the perftest binary and whether the buffers
// are in GPU memory.
var tests = []struct {
	name, bin, what string
	gdr             bool
}{
	{"write_bw", "ib_write_bw", "RDMA write bandwidth, host memory", false},
	{"write_bw_gdr", "ib_write_bw", "RDMA write bandwidth, GPU memory (GPUDirect RDMA)", true},
	{"read_bw", "ib_read_bw", "RDMA read bandwidth, host memory", false},
	{"send_bw", "ib_send_bw", "RDMA send bandwidth, host memory", false},
}

// Params are the parameters every ibperf test takes, with defaults.
var Params = []pluginapi.Param{
	{Name: "bindir", Description: "folder holding the perftest binaries (a ROCm or CUDA build for the _gdr tests); empty: found on PATH"},
	{Name: PairsParam, Description: "NIC map, SERVER_HCA:CLIENT_HCA,...: which HCA of the first node talks to which HCA of the second (e.g. ionic_7:ionic_1; ionic_mapping.sh finds it); empty: the topology's NICs paired by name"},
	{Name: "server_addr", Description: "address the clients connect to; empty: the first host (--hosts), the server's node as the launcher places it, or localhost on one node"},
	{Name: "port", Default: "18515", Description: "TCP port of the first pair; pair i uses port+i (-p)"},
	{Name: "ib_port", Description: "HCA port (-i); empty: perftest's default (1)"},
	{Name: "gid_index", Description: "GID index (-x), e.g. 1 or 3 for RoCE"},
	{Name: "qps", Description: "queue pairs (-q)"},
	{Name: "bidirectional", Default: "true", Description: "both directions at once (-b); the reported bandwidth is the sum"},
	{Name: "size", Description: "one message size in bytes (-s); empty: every size 2 B .. 8 MiB (-a)"},
	{Name: "iters", Unit: "iterations", Description: "iterations per size (-n)"},
	{Name: "duration", Unit: "s", Description: "run each size this long instead of a number of iterations (-D); the peak is then not measured"},
	{Name: "tclass", Description: "traffic class (--tclass), e.g. 104"},
	{Name: "gdr", Default: "rocm", Description: "GPU memory API of the _gdr tests: rocm (--use_rocm=G), rocm_dmabuf (adds --use_rocm_dmabuf), cuda (--use_cuda=G) or cuda_dmabuf (adds --use_cuda_dmabuf)"},
	{Name: "gpus", Default: "0", Description: "GPU index per pair for the _gdr tests, comma-separated, reused cyclically (e.g. 1, or 0,1,2,3,4,5,6,7)"},
	{Name: "cpu_util", Default: "false", Description: "report CPU utilisation (--cpu_util)"},
	{Name: "out_json", Default: "true", Description: "also write perftest's JSON report (--out_json; needs perftest >= 24.x)"},
	{Name: "force", Default: "true", Description: "-F: do not fail on a CPU frequency scaling warning"},
	{Name: "extra", Description: "extra perftest arguments for both sides, space-separated"},
	{Name: "env.NAME", Description: "environment variable NAME for both sides"},
}

// PairLabel is the metric label naming the HCA pair of a point,
// "SERVER_HCA:CLIENT_HCA" (Pair.Label); the plugin declares it
// (TestInfo.PairLabel) with the parameter that takes the map.
const PairLabel = "pair"

// PairsParam is the parameter that takes the HCA pair map (ParsePairs),
// declared as the tests' TestInfo.HCAMapParam.
const PairsParam = "pairs"

// Roles are the roles of a pair's steps, server first (StepName names
// them), declared as the tests' TestInfo.Roles.
var Roles = []string{"server", "client"}

var pairLabels = []string{PairLabel}

// Plugin implements pluginapi.Plugin for perftest.
type Plugin struct{}

// Describe implements pluginapi.Plugin.
func (Plugin) Describe(context.Context) (pluginapi.Description, error) {
	d := pluginapi.Description{Name: PluginName, Version: Version}
	for _, t := range tests {
		d.Tests = append(d.Tests, pluginapi.TestInfo{
			Name:        t.name,
			Description: fmt.Sprintf("perftest %s: %s, one server/client per NIC pair, all pairs at once", t.bin, t.what),
			Params:      Params,
			Metrics: []pluginapi.MetricInfo{
				{Name: "bw_avg", Unit: "Gb/s", Description: "average bandwidth per message size and NIC pair (both directions summed with -b)", Labels: pairLabels,
					Better: result.BetterHigher, Plot: result.PlotCurve, Record: true},
				{Name: "bw_peak", Unit: "Gb/s", Description: "peak bandwidth per message size and NIC pair; absent when perftest does not measure it (-D)", Labels: pairLabels,
					Better: result.BetterHigher},
				{Name: "msg_rate", Unit: "Mpps", Description: "message rate per message size and NIC pair", Labels: pairLabels, Better: result.BetterHigher},
				// Neither better higher nor lower: a busy-polling CPU is
				// how perftest measures; a band bounds it as written.
				{Name: "cpu_util", Unit: "%", Description: "CPU utilisation per message size (--cpu_util)", Labels: pairLabels},
			},
			HCAMapParam: PairsParam,
			PairLabel:   PairLabel,
			Roles:       Roles,
		})
	}
	return d, nil
}

// Pair is one server/client pair of HCAs.
type Pair struct {
	// Server is the HCA on the server's node, Client the one on the
	// client's node.
	Server, Client string
}

// Label is the pair as metrics name it: "ionic_7:ionic_1".
func (p Pair) Label() string { return p.Server + ":" + p.Client }

type settings struct {
	bindir, serverAddr, ibPort, gid, qps, size, iters, duration, tclass, gdr string
	pairs                                                                    []Pair
	gpus                                                                     []string
	port                                                                     int
	bidir, cpuUtil, outJSON, force                                           bool
	extra                                                                    []string
	env                                                                      map[string]string
}

// ParsePairs parses a NIC map "srv:cli,srv:cli" (a lone name pairs with
// itself). Errors name the entry: one that is no pair, or a pair given
// twice.
func ParsePairs(s string) ([]Pair, error) {
	var out []Pair
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		a, b, ok := strings.Cut(e, ":")
		if !ok {
			b = a
		}
		a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		if !hcaName(a) || !hcaName(b) {
			return nil, fmt.Errorf("%q is not SERVER_HCA:CLIENT_HCA", e)
		}
		if slices.Contains(out, Pair{a, b}) {
			// A pair measured twice pads the coverage a report shows
			// (points of one NIC counted as another's).
			return nil, fmt.Errorf("%q is listed twice", e)
		}
		out = append(out, Pair{a, b})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no pair in %q", s)
	}
	return out, nil
}

func hcaName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func parseParams(p map[string]string, topo plan.Topology) (settings, error) {
	s := settings{port: 18515, bidir: true, outJSON: true, force: true, gdr: "rocm", gpus: []string{"0"}}
	env, err := pluginapi.ParseParams(p, Params, func(k, v string) (err error) {
		switch k {
		case "bindir":
			s.bindir = v
		case PairsParam:
			s.pairs, err = ParsePairs(v)
		case "server_addr":
			if strings.ContainsAny(v, " \t\n") {
				err = fmt.Errorf("%q is not a host name or address", v)
			}
			s.serverAddr = v
		case "port":
			s.port, err = pluginapi.PortParam(k, v)
		case "ib_port", "gid_index", "qps", "iters", "duration", "tclass":
			err = pluginapi.CountParam(k, v)
			*map[string]*string{"ib_port": &s.ibPort, "gid_index": &s.gid, "qps": &s.qps, "iters": &s.iters, "duration": &s.duration, "tclass": &s.tclass}[k] = v
		case "size":
			if v != "" {
				n, e := result.ParseBytes(v)
				if e != nil {
					err = e
				}
				v = strconv.FormatInt(n, 10)
			}
			s.size = v
		case "gdr":
			if v != "rocm" && v != "rocm_dmabuf" && v != "cuda" && v != "cuda_dmabuf" {
				err = fmt.Errorf("%q is not rocm, rocm_dmabuf, cuda or cuda_dmabuf", v)
			}
			s.gdr = v
		case "gpus":
			s.gpus = nil
			for _, g := range strings.Split(v, ",") {
				g = strings.TrimSpace(g)
				if n, e := strconv.Atoi(g); e != nil || n < 0 {
					return fmt.Errorf("%q is not a GPU index", g)
				}
				s.gpus = append(s.gpus, g)
			}
		case "bidirectional":
			s.bidir, err = pluginapi.BoolParam(k, v)
		case "cpu_util":
			s.cpuUtil, err = pluginapi.BoolParam(k, v)
		case "out_json":
			s.outJSON, err = pluginapi.BoolParam(k, v)
		case "force":
			s.force, err = pluginapi.BoolParam(k, v)
		case "extra":
			s.extra = strings.Fields(v)
		}
		return err
	})
	s.env = env
	if err != nil {
		return s, err
	}
	if s.iters != "" && s.duration != "" {
		return s, fmt.Errorf("parameters iters and duration: give one (perftest -n or -D)")
	}
	if s.pairs == nil {
		for _, n := range topo.NICs {
			s.pairs = append(s.pairs, Pair{n, n})
		}
	}
	return s, nil
}

func testInfo(name string) (bin string, gdr, ok bool) {
	for _, t := range tests {
		if t.name == name {
			return t.bin, t.gdr, true
		}
	}
	return "", false, false
}

// StepName names a pair's steps: "server.0", "client.0".
func StepName(role string, pair int) string { return role + "." + strconv.Itoa(pair) }

// JSONName is the --out_json file of a step.
func JSONName(step string) string { return step + ".json" }

// Plan implements pluginapi.Plugin: for every pair a server on the first
// node and a client on the second (both on the one node of a 1-node
// topology, a loopback between two HCAs), servers first, each waited for
// until it listens, then the clients, each started as soon as the previous
// one has connected.
func (Plugin) Plan(_ context.Context, req pluginapi.PlanRequest) (plan.Plan, error) {
	bin, gdr, ok := testInfo(req.Test)
	if !ok {
		names := make([]string, len(tests))
		for i, t := range tests {
			names[i] = t.name
		}
		return plan.Plan{}, pluginapi.UnknownTest(PluginName, req.Test, names)
	}
	s, err := parseParams(req.Params, req.Topology)
	if err != nil {
		return plan.Plan{}, fmt.Errorf("ibperf.%s: %w", req.Test, err)
	}
	t := req.Topology
	if t.Nodes < 1 || t.Nodes > 2 {
		return plan.Plan{}, pluginapi.TopologyError(PluginName+"."+req.Test, t, "one node (loopback) or two nodes (server and client)")
	}
	if len(s.pairs) == 0 {
		return plan.Plan{}, fmt.Errorf("ibperf.%s: no NIC pairs: set parameter pairs (e.g. pairs=ionic_7:ionic_1)", req.Test)
	}
	addr := s.serverAddr
	switch {
	case addr != "":
	case len(t.Hosts) > 0:
		addr = t.Hosts[0]
	case t.Nodes == 1:
		addr = "localhost"
	default:
		// Hosts unknown before the launch (a scheduler that allocates
		// later, pods): the launcher puts the server node's host there.
		addr = plan.HostRef(0)
	}
	if s.bindir != "" {
		bin = filepath.Join(s.bindir, bin)
	}
	clientHost := 0
	if t.Nodes == 2 {
		clientHost = 1
	}
	var servers, clients []plan.Step
	for i, p := range s.pairs {
		for _, role := range Roles {
			name := StepName(role, i)
			hca := p.Server
			if role == "client" {
				hca = p.Client
			}
			argv := []string{bin, "-d", hca, "-p", strconv.Itoa(s.port + i)}
			for _, o := range []struct{ flag, v string }{{"-i", s.ibPort}, {"-x", s.gid}, {"-q", s.qps}, {"-s", s.size}, {"-n", s.iters}, {"-D", s.duration}, {"--tclass", s.tclass}} {
				if o.v != "" {
					argv = append(argv, o.flag, o.v)
				}
			}
			if s.size == "" {
				argv = append(argv, "-a")
			}
			if s.force {
				argv = append(argv, "-F")
			}
			if s.bidir {
				argv = append(argv, "-b")
			}
			argv = append(argv, "--report_gbits")
			if s.cpuUtil {
				argv = append(argv, "--cpu_util")
			}
			if gdr {
				g := s.gpus[i%len(s.gpus)]
				api, dmabuf, _ := strings.Cut(s.gdr, "_")
				argv = append(argv, "--use_"+api+"="+g)
				if dmabuf != "" {
					argv = append(argv, "--use_"+api+"_dmabuf")
				}
			}
			step := plan.Step{Name: name, Role: role, Procs: 1, ProcsPerNode: 1}
			if s.outJSON {
				argv = append(argv, "--out_json", "--out_json_file="+JSONName(name))
				step.Files = []string{JSONName(name)}
			}
			argv = append(argv, s.extra...)
			if role == "client" {
				argv = append(argv, addr)
				step.Host = clientHost
				if i < len(s.pairs)-1 {
					step.ReadyMarker = clientReady
				}
			} else {
				step.ReadyMarker = ReadyMarker
			}
			step.Argv = argv
			if len(s.env) > 0 {
				step.Env = s.env
			}
			if role == "server" {
				servers = append(servers, step)
			} else {
				clients = append(clients, step)
			}
		}
	}
	return plan.Plan{Steps: append(servers, clients...)}, nil
}

// sweepMax is the largest size of perftest's -a sweep (2 B .. 8 MiB).
const sweepMax = 1 << 23

// side is one parsed step output.
type side struct {
	out  plan.Output
	text *Output
	js   *Output
	errs []string
}

func readSide(o plan.Output) side {
	sd := side{out: o}
	if o.Log != "" {
		f, err := os.Open(o.Log)
		if err != nil {
			sd.errs = append(sd.errs, fmt.Sprintf("open log: %v", err))
		} else {
			sd.text, err = ParseText(f, filepath.Base(o.Log))
			f.Close()
			if err != nil {
				sd.errs = append(sd.errs, err.Error())
			}
		}
	}
	for name, path := range o.Files {
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			sd.errs = append(sd.errs, fmt.Sprintf("open %s: %v", name, err))
			continue
		}
		js, err := ParseJSON(f, filepath.Base(path))
		f.Close()
		if err != nil {
			sd.errs = append(sd.errs, err.Error())
			continue
		}
		sd.js = js
	}
	if o.LaunchError != "" {
		sd.errs = append(sd.errs, o.LaunchError)
	} else if o.ExitCode != 0 {
		sd.errs = append(sd.errs, fmt.Sprintf("exited with status %d", o.ExitCode))
	}
	return sd
}

// device is the HCA a side ran on as its output shows it: the settings
// block's Device, else the first HCA its errors name (a side that failed
// before printing its settings: "IB device mlx5_3 not found").
func (sd *side) device() string {
	if sd == nil || sd.text == nil {
		return ""
	}
	if sd.text.Device != "" {
		return sd.text.Device
	}
	for _, e := range sd.text.Errors {
		if d := NamedDevice(e.Text); d != "" {
			return d
		}
	}
	return ""
}

// devNotFound are the failure reports of an HCA the host does not show.
var devNotFound = []string{"Unable to find the Infiniband/RoCE device", "Did not detect devices", "No IB devices found", "Failed to get IB devices list", "Couldn't get device list"}

// devHint follows the first of them in an output: what they mean.
const devHint = " (the HCA is not visible on that host: wrong -d name, driver down, or no RDMA device in the container)"

// queryFailed are perftest's reports of an HCA that opened but did not
// answer ibv_query_device: "Couldn't get device attributes" (perftest
// before 4948417, with MLNX_OFED's verbs) and " Failed to query device
// attributes" (src/perftest_communication.c).
var queryFailed = []string{"Couldn't get device attributes", "Failed to query device attributes"}

// queryHint follows the first of them: seen when the kernel was upgraded
// under an older user-space verbs stack (libfabric#5149: kernel 5.1 with
// the packages that worked on 4.15).
const queryHint = " (the HCA did not answer ibv_query_device: the kernel's RDMA driver and the user-space verbs library, rdma-core or MLNX_OFED, do not match?)"

// hint says, after a failure report, what it means where perftest's words
// do not.
func hint(text string) string {
	if notFoundRE.MatchString(text) {
		return devHint
	}
	for _, m := range queryFailed {
		if strings.Contains(text, m) {
			return queryHint
		}
	}
	for _, m := range devNotFound {
		if strings.Contains(text, m) {
			return devHint
		}
	}
	return ""
}

// Parse implements pluginapi.Plugin: metrics of each pair come from its
// client's output (the server's when the client has none); both sides'
// errors count.
func (Plugin) Parse(_ context.Context, req pluginapi.ParseRequest) (result.Parsed, error) {
	if p, ok := pluginapi.NoOutputs(req); ok {
		return p, nil
	}
	var p result.Parsed
	_, gdr, known := testInfo(req.Test)
	planned := len(req.Params) > 0
	s, perr := parseParams(req.Params, req.Topology)
	if perr != nil {
		planned = false
	}
	type pairOut struct {
		idx            int
		server, client *side
		// label names the pair in messages; byFile when no HCA was known
		// and it is the log's file name.
		label  string
		byFile bool
	}
	pairs := map[string]*pairOut{}
	var order []string
	for _, o := range req.Outputs {
		role, idx := o.Role, -1
		if r, n, ok := strings.Cut(o.Step, "."); ok && (r == "server" || r == "client") {
			role = r
			idx, _ = strconv.Atoi(n)
		}
		key := strconv.Itoa(idx)
		if idx < 0 {
			key = o.Step // a log judged offline: a pair of its own
		}
		po := pairs[key]
		if po == nil {
			po = &pairOut{idx: idx}
			pairs[key] = po
			order = append(order, key)
		}
		sd := readSide(o)
		if role == "server" {
			po.server = &sd
		} else {
			po.client = &sd
		}
	}
	var errs []string
	var gpu string
	best := map[string]float64{}
	// First every pair's name and HCAs, so that an error line can be given
	// to the pair of the HCA it names, whichever log it stands in.
	type hcas struct{ server, client string }
	devs := map[string]hcas{}
	for _, key := range order {
		po := pairs[key]
		var d hcas
		if planned && po.idx >= 0 && po.idx < len(s.pairs) {
			d = hcas{s.pairs[po.idx].Server, s.pairs[po.idx].Client}
			po.label = s.pairs[po.idx].Label()
		} else {
			d = hcas{po.server.device(), po.client.device()}
			switch {
			case d.server != "" && d.client != "":
				// Both sides judged offline: named as a planned pair is.
				po.label = Pair{Server: d.server, Client: d.client}.Label()
			case d.client != "":
				po.label = d.client
			case d.server != "":
				po.label = d.server
			case key == "check" || po.idx < 0:
				// A log judged alone that names no HCA: named by its file.
				for _, sd := range []*side{po.client, po.server} {
					if sd != nil && sd.out.Log != "" {
						po.label, po.byFile = filepath.Base(sd.out.Log), true
					}
				}
			}
			if po.label == "" {
				po.label = key
			}
		}
		devs[key] = d
	}
	owner := func(role, dev string) string {
		for _, key := range order {
			if d := devs[key]; role == "server" && d.server == dev || role != "server" && d.client == dev {
				return key
			}
		}
		return ""
	}
	for _, key := range order {
		po := pairs[key]
		var want *Pair
		if planned && po.idx >= 0 && po.idx < len(s.pairs) {
			want = &s.pairs[po.idx]
		}
		src := po.client
		if src == nil || src.text == nil || len(src.text.Rows) == 0 && (src.js == nil || len(src.js.Rows) == 0) {
			// A server log alone (no client given) is the source even
			// without rows: its own errors say why, not "no output".
			if po.server != nil && po.server.text != nil && (len(po.server.text.Rows) > 0 || src == nil) {
				src = po.server
			}
		}
		if planned && po.client == nil && po.server != nil {
			errs = append(errs, fmt.Sprintf("pair %s client: no output", po.label))
		}
		label := po.label
		for _, sd := range []*side{po.server, po.client} {
			if sd == nil {
				continue
			}
			role := sideName(sd)
			for _, e := range sd.errs {
				errs = append(errs, fmt.Sprintf("pair %s %s: %s", label, role, e))
			}
			t := sd.text
			if t == nil {
				continue
			}
			log := filepath.Base(sd.out.Log)
			mine := devs[key].client
			if role == "server" {
				mine = devs[key].server
			}
			hinted := false
			for _, e := range t.Errors {
				line := fmt.Sprintf("%s:%d: %s", log, e.Line, e.Text)
				if h := hint(e.Text); h != "" && !hinted {
					line, hinted = line+h, true
				}
				named := NamedDevice(e.Text)
				switch other := owner(role, named); {
				case named == "" || named == mine || mine == "":
					errs = append(errs, fmt.Sprintf("pair %s %s: %s", label, role, line))
				case other != "":
					// Not this pair's: the pair whose HCA it names.
					errs = append(errs, fmt.Sprintf("pair %s %s: %s (printed in pair %s's output)", pairs[other].label, role, line, label))
				default:
					// No pair of these outputs has that HCA: said as its own.
					in := "pair " + label + "'s " + role
					if role == "output" {
						in = "the output of pair " + label
					}
					errs = append(errs, fmt.Sprintf("HCA %s: %s (printed in %s, whose HCA is %s)", named, line, in, mine))
				}
			}
			for _, w := range t.Warnings {
				p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Source: fmt.Sprintf("%s:%d", log, w.Line),
					Message: fmt.Sprintf("pair %s %s: %s", label, role, w.Text)})
			}
			if t.GPU != "" && gpu == "" {
				gpu = t.GPU
			}
			if known && t.Test != "" {
				c := result.Check{Name: "GPU memory " + label + " " + role, OK: t.GPUMemory == gdr}
				switch {
				case !c.OK && gdr && t.GPUMemType == cudaMalloc:
					c.Message = fmt.Sprintf("%s used host memory: its CUDA buffers are %s (--cuda_mem_type=4), not a GPUDirect RDMA run", sd.out.Step, cudaMalloc)
				case !c.OK && gdr:
					c.Message = fmt.Sprintf("%s used host memory: not a GPUDirect RDMA run (no --use_rocm/--use_cuda?)", sd.out.Step)
				case !c.OK:
					c.Message = fmt.Sprintf("%s used GPU memory in a host-memory test (%s:%d)", sd.out.Step, log, t.GPULine)
				}
				p.Checks = append(p.Checks, c)
			}
			if want != nil {
				hca := want.Server
				if role == "client" {
					hca = want.Client
				}
				if got := sd.device(); got != "" && got != hca {
					how := "ran on"
					if t.Device == "" {
						how = "names, in its errors,"
					}
					p.Checks = append(p.Checks, result.Check{Name: "HCA " + label + " " + role,
						Message: fmt.Sprintf("%s %s %s, planned %s", sd.out.Step, how, got, hca)})
				}
			}
			if planned && t.Test != "" && t.Bidirectional != s.bidir {
				p.Checks = append(p.Checks, result.Check{Name: "direction " + label,
					Message: fmt.Sprintf("%s printed %q, bidirectional=%v was asked", sd.out.Step, t.Test, s.bidir)})
			}
		}
		// A server no client reached, after both sides' own errors: where
		// the client failed (it could not connect, its QP did not come
		// up), that is the reason and the server's wait says nothing more.
		waited := map[*side]bool{}
		for _, sd := range []*side{po.server, po.client} {
			if sd == nil || sd.text == nil || len(sd.text.NoClient) == 0 {
				continue
			}
			other := po.client
			if sd == po.client {
				other = po.server
			}
			if other != nil && (len(other.errs) > 0 || other.text != nil && len(other.text.Errors) > 0) {
				continue
			}
			for _, d := range sd.text.NoClient {
				errs = append(errs, fmt.Sprintf("pair %s %s: %s:%d: %s", label, sideName(sd), filepath.Base(sd.out.Log), d.Line, d.Text))
			}
			waited[sd] = true
		}
		if src == nil {
			errs = append(errs, fmt.Sprintf("pair %s: no output", label))
			continue
		}
		out := src.text
		if out == nil || len(out.Rows) == 0 {
			if src.js != nil && len(src.js.Rows) > 0 {
				out = src.js
				// The JSON has the text's unit: Gb/s as planned, unless
				// its MsgRate says otherwise.
				out.Unit = "Gb/sec"
				if u := RowUnit(out.Rows[0]); u == unitMiB {
					out.Unit = u
				}
				if planned {
					p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: fmt.Sprintf("pair %s: no result table in the text, using the JSON report (its last size only)", label)})
				}
			} else {
				if !waited[src] {
					// A server no client reached has said so above.
					errs = append(errs, fmt.Sprintf("pair %s: no result rows in %s", label, filepath.Base(src.out.Log)))
					if src.text != nil {
						for _, e := range src.text.Setup {
							errs = append(errs, fmt.Sprintf("%s:%d: %s", filepath.Base(src.out.Log), e.Line, e.Text))
						}
					}
				}
				continue
			}
		} else if !out.Closed {
			errs = append(errs, fmt.Sprintf("pair %s: %s ends inside the result table: output cut short", label, filepath.Base(src.out.Log)))
		}
		if out == src.text && src.js != nil && len(src.js.Rows) == 1 {
			if d := agree(out, src.js); d != "" {
				errs = append(errs, fmt.Sprintf("pair %s: %s and its JSON report disagree: %s", label, src.out.Step, d))
			}
		}
		// Rows joined from several runs' tails are one run per size, not
		// an -a sweep.
		sweep := (s.size == "" && planned || !planned && len(out.Rows) > 1) && !out.Joined
		if sweep && out.Rows[len(out.Rows)-1].Size < sweepMax && out.Closed {
			errs = append(errs, fmt.Sprintf("pair %s: the -a sweep ends at %s, not %s: truncated", label, result.FormatBytes(out.Rows[len(out.Rows)-1].Size), result.FormatBytes(sweepMax)))
		}
		labels := map[string]string{PairLabel: label}
		for _, r := range out.Rows {
			avg := out.GbPerSec(r.Avg)
			p.Metrics = append(p.Metrics, result.Metric{Name: "bw_avg", Value: avg, Unit: "Gb/s", Size: r.Size, Labels: labels})
			if !out.NoPeak && r.Peak > 0 {
				p.Metrics = append(p.Metrics, result.Metric{Name: "bw_peak", Value: out.GbPerSec(r.Peak), Unit: "Gb/s", Size: r.Size, Labels: labels})
			}
			p.Metrics = append(p.Metrics, result.Metric{Name: "msg_rate", Value: r.MsgRate, Unit: "Mpps", Size: r.Size, Labels: labels})
			if r.CPU >= 0 {
				p.Metrics = append(p.Metrics, result.Metric{Name: "cpu_util", Value: r.CPU, Unit: "%", Size: r.Size, Labels: labels})
			}
			if avg > best[label] {
				best[label] = avg
			}
		}
		if planned && out.CPUUtil != s.cpuUtil && out == src.text {
			p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: fmt.Sprintf("pair %s: cpu_util=%v asked, the table has CPU_Util: %v", label, s.cpuUtil, out.CPUUtil)})
		}
	}
	if planned {
		for i, pr := range s.pairs {
			if pairs[strconv.Itoa(i)] == nil {
				errs = append(errs, fmt.Sprintf("pair %s: no output", pr.Label()))
			}
		}
	}
	if len(best) > 1 {
		p.Checks = append(p.Checks, balance(best))
	}
	p.Info = map[string]string{}
	if gpu != "" {
		p.Info["gpu"] = gpu
	}
	labels := make([]string, 0, len(order))
	for _, k := range order {
		if !pairs[k].byFile {
			labels = append(labels, pairs[k].label)
		}
	}
	p.Info["hca_pairs"] = strings.Join(labels, ",")
	if len(errs) > 0 {
		p.Error = strings.Join(errs, "; ")
	}
	return p, nil
}

func sideName(sd *side) string {
	if sd.out.Role != "" {
		return sd.out.Role
	}
	if r, _, ok := strings.Cut(sd.out.Step, "."); ok && (r == "server" || r == "client") {
		return r
	}
	return "output"
}

// balanceMin is the share of the best pair's bandwidth below which a pair
// is a finding: pairs of one node share the same NIC model and switch, so a
// pair far below its siblings is a bad cable, port or PCIe link.
const balanceMin = 0.9

// balance compares the best average bandwidth of each pair; of pairs tied
// at the top, the first by name is named.
func balance(best map[string]float64) result.Check {
	keys := make([]string, 0, len(best))
	for k := range best {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	top, topName := 0.0, ""
	for _, k := range keys {
		if best[k] > top {
			top, topName = best[k], k
		}
	}
	var slow []string
	for _, k := range keys {
		if best[k] < balanceMin*top {
			slow = append(slow, fmt.Sprintf("%s %.1f Gb/s", k, best[k]))
		}
	}
	c := result.Check{Name: "pair balance", OK: len(slow) == 0}
	if !c.OK {
		c.Message = fmt.Sprintf("below %.0f%% of the best pair (%s %.1f Gb/s): %s", balanceMin*100, topName, top, strings.Join(slow, ", "))
	}
	return c
}

// agree compares the JSON report's size with the same size in the text.
func agree(text, js *Output) string {
	j := js.Rows[0]
	for _, r := range text.Rows {
		if r.Size != j.Size {
			continue
		}
		if d := r.Avg - j.Avg; d > 0.01+0.001*j.Avg || -d > 0.01+0.001*j.Avg {
			return fmt.Sprintf("BW average at %s is %.2f in the text, %.2f in the JSON", result.FormatBytes(j.Size), r.Avg, j.Avg)
		}
		return ""
	}
	return fmt.Sprintf("the JSON's size %d is not in the text", j.Size)
}
