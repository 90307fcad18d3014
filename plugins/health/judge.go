package health

// This file: the checks of each node, and across nodes.

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/plugins/internal/toolfail"
)

// node is what the sections of one node say, parsed.
type node struct {
	host       string
	gpus       []gpu
	gpuSource  bool // a source listing every GPU (-q -x, the CSV, amd-smi, rocm-smi) was read
	nvidia     bool // an nvidia-smi source was read
	nvlink     []nvlinkGPU
	nvlinkSeen bool
	xids       []xid
	lost       []lostGPU
	kernelSeen bool
	dcgm       *dcgmRun
	ports      []ibPort
	ibSeen     bool
	absent     map[string]string // section -> tool
	sections   []string          // the sections the node printed, absent ones included
	// toolFailed is the first GPU tool section that could not reach the
	// driver (toolfail.Setup): "nvsmi-xml: NVIDIA-SMI has failed ...".
	toolFailed string
}

// amdTool names the AMD GPU tool whose sections the node printed
// (collect.sh runs amd-smi, else rocm-smi), "" for none.
func (nd node) amdTool() string {
	for _, s := range nd.sections {
		switch {
		case strings.HasPrefix(s, "amdsmi-"):
			return "amd-smi"
		case strings.HasPrefix(s, "rocmsmi"):
			return "rocm-smi"
		}
	}
	return ""
}

// checks collects a node's checks.
type checks struct {
	p    *result.Parsed
	host string
}

func (c checks) add(name string, ok bool, code, msg string) {
	c.addCheck(result.Check{Name: name, OK: ok, Message: msg, Code: code})
}

func (c checks) warn(name, code, msg string) {
	c.addCheck(result.Check{Name: name, OK: false, Warn: true, Message: msg, Code: code})
}

func (c checks) addCheck(ch result.Check) {
	ch.Host = c.host
	if c.host != "" {
		ch.Message = c.host + ": " + ch.Message
	}
	if ch.OK {
		ch.Code = ""
	}
	c.p.Checks = append(c.p.Checks, ch)
}

// readNode parses n's sections; parse errors are returned, the sections
// that parsed are used.
func readNode(p *result.Parsed, n *nodeInput) (node, []string) {
	nd := node{host: n.host, absent: map[string]string{}, sections: n.order}
	var errs []string
	var xmlGPUs, textGPUs, csvGPUs, amdStatic, amdMetric, rocm, amdText []gpu
	amdRead := false
	for _, name := range n.order {
		s := n.sections[name]
		if s.absent != "" {
			nd.absent[name] = s.absent
			p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Info, Message: fmt.Sprintf("%s%s is not installed: its checks are not made", hostPrefix(n.host), s.absent), Source: s.file})
			continue
		}
		if s.exit > 0 && name != "kernel-log" && name != "dcgm" && name != "dcgm-text" {
			p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: fmt.Sprintf("%s%s exited with status %d: %s", hostPrefix(n.host), name, s.exit, clip(firstText(s))), Source: s.where()})
			if k, _ := toolfail.Classify(firstText(s)); k == toolfail.Setup {
				// The tool could not reach the driver ("NVIDIA-SMI has
				// failed because it couldn't communicate with the NVIDIA
				// driver", "Failed to initialize NVML: Driver/library
				// version mismatch"): its text is no output to judge (an
				// nvlink --status that printed only this lists no link,
				// which must not pass), and the error says why.
				errs = append(errs, fmt.Sprintf("%s: %s%s could not run (setup, not hardware): %s", s.where(), hostPrefix(n.host), name, clip(firstText(s))))
				if name != "nvlink" && !strings.HasPrefix(name, "ib") && nd.toolFailed == "" {
					nd.toolFailed = name + ": " + clip(firstText(s))
				}
				continue
			}
		}
		var err error
		var gs []gpu
		// A second output of one kind (a paste of two commands: addPart's
		// "KIND#2") is merged with the first, the worse value winning.
		switch kindOf(name) {
		case "nvsmi-xml":
			gs, err = parseXML(s)
			xmlGPUs = mergeWorse(xmlGPUs, gs)
			nd.gpuSource = nd.gpuSource || err == nil
		case "nvsmi-text":
			var notes []string
			gs, notes, err = parseSMITextNotes(s)
			textGPUs = mergeWorse(textGPUs, gs)
			for _, m := range notes {
				p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: hostPrefix(n.host) + m, Source: s.where()})
			}
			nd.gpuSource = nd.gpuSource || err == nil
		case "nvsmi-csv":
			gs, err = parseCSV(s)
			csvGPUs = mergeWorse(csvGPUs, gs)
			nd.gpuSource = nd.gpuSource || err == nil
		case "nvsmi-table":
			// The default table holds a few of the CSV's fields.
			gs, err = parseSMITable(s)
			csvGPUs = mergeWorse(csvGPUs, gs)
			nd.gpuSource = nd.gpuSource || err == nil
		case "nvlink":
			nd.nvlink, nd.nvlinkSeen = parseNVLink(s), true
		case "amdsmi-static":
			gs, err = parseAMDStatic(s)
			amdStatic = fillAMD(amdStatic, gs)
			amdRead = amdRead || err == nil
		case "amdsmi-metric":
			gs, err = parseAMDMetric(s)
			amdMetric = fillAMD(amdMetric, gs)
			amdRead = amdRead || err == nil
		case "rocmsmi":
			gs, err = parseROCmSMI(s)
			rocm = fillAMD(rocm, gs)
			amdRead = amdRead || err == nil
		case "amdsmi-text", "rocmsmi-text":
			var notes []line
			gs, notes, err = parseAMDText(s)
			amdText = fillAMD(amdText, gs)
			amdRead = amdRead || err == nil
			if err != nil && name == "rocmsmi-text" && s.exit >= 0 && len(notes) > 0 {
				// collect.sh's rocm-smi --showrasinfo on a GPU without RAS
				// (RSMI_STATUS_NOT_SUPPORTED): the GPUs are its JSON's; no
				// ECC count is read, which the missing check shows.
				p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: fmt.Sprintf("%srocm-smi --showrasinfo printed no RAS table (%s): no ECC check", hostPrefix(n.host), clip(notes[0].text)), Source: s.where()})
				err, notes = nil, nil
			}
			if err == nil {
				for _, l := range notes {
					p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: hostPrefix(n.host) + clip(l.text), Source: fmt.Sprintf("%s:%d", s.file, l.no)})
				}
			}
		case "kernel-log":
			nd.xids, nd.lost, nd.kernelSeen = parseXIDs(s), parseLostGPUs(s), true
		case "dcgm":
			var run *dcgmRun
			run, err = parseDCGM(s)
			if run == nil {
				// A dcgmi that printed its table, or only its "Error:
				// ..." line, where -j was asked for.
				if t := s.text(); dcgmTableHead.MatchString(t) || dcgmRunError.MatchString(t) {
					run, err = parseDCGMText(s)
				}
			}
			nd.dcgm = joinDCGM(nd.dcgm, run)
		case "dcgm-text":
			var run *dcgmRun
			run, err = parseDCGMText(s)
			nd.dcgm = joinDCGM(nd.dcgm, run)
		case "ibstat", "ibdevinfo":
			// People paste ibstat and ibv_devinfo (or ibstatus) into one
			// file: both readers run on it, and a port both list is one.
			ports, notes := parseIBStat(s)
			more, notes2 := parseIBDevinfo(s)
			nd.ports, nd.ibSeen = mergeIB(mergeIB(nd.ports, ports), more), true
			for _, l := range append(notes, notes2...) {
				p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: hostPrefix(n.host) + clip(l.text), Source: fmt.Sprintf("%s:%d", s.file, l.no)})
			}
			if len(ports)+len(more) == 0 && len(notes)+len(notes2) == 0 && kindOf(name) == "ibdevinfo" {
				err = fmt.Errorf("%s: no InfiniBand port could be read (ibv_devinfo's hca_id/port blocks, ibstatus's or ibstat's)", s.where())
			}
		case "ib-sysfs":
			sys := parseIBSysfs(s)
			nd.ibSeen = true
			if len(nd.ports) == 0 {
				nd.ports = sys
			} else {
				// ibstat read first: sysfs adds the GIDs, width and model.
				nd.ports = mergeIB(nd.ports, sys)
			}
		default:
			p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Info, Message: fmt.Sprintf("%ssection %s is collected but not judged by this version", hostPrefix(n.host), name), Source: s.where()})
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(nd.ports) > maxIBPorts {
		// A hostile or broken log: that node's error, not a stall of the
		// parse, and the other nodes are still judged.
		errs = append(errs, fmt.Sprintf("%s%sover %d InfiniBand/RoCE ports listed (a real node has tens): its ports are not judged", ibWhere(n), nodeLabel(n.host), maxIBPorts))
		nd.ports, nd.ibSeen = nil, false
	}
	if len(xmlGPUs) == 0 {
		// -q text is the same document as -q -x (gpusOf).
		xmlGPUs = textGPUs
	}
	nd.gpus = merge(xmlGPUs, csvGPUs)
	nd.nvidia = len(nd.gpus) > 0 || nd.gpuSource
	if amdRead {
		// amd-smi's static and metric lists, else rocm-smi's, are the
		// node's AMD GPUs (collect.sh runs rocm-smi only without amd-smi).
		amd := mergeAMD(amdStatic, amdMetric)
		if len(amdStatic) == 0 && len(amdMetric) == 0 {
			amd = rocm
		}
		// The text views fill what the JSON lacks (or are all there is).
		amd = fillAMD(amd, amdText)
		nd.gpus = append(nd.gpus, amd...)
		nd.gpuSource = true
	}
	return nd, errs
}

// joinDCGM is the findings of two dcgmi diag runs of one node pasted
// into one file: every test's findings of both, so that a Fail in
// either fails it.
func joinDCGM(a, b *dcgmRun) *dcgmRun {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	out := *a
	out.findings = append(append([]dcgmFinding(nil), a.findings...), b.findings...)
	return &out
}

// mergeWorse joins two lists of one node's GPUs read by the same tool
// (nvidia-smi -q pasted twice: two moments, or -i 0 and -i 1): a GPU of
// both, by bus id (else index), keeps the worse of each value (the
// higher error count, a pending or failed remap, the narrower link,
// ECC off, more clock event reasons), so that a paste never hides a
// fault one of its outputs shows; a GPU only the second lists is added.
func mergeWorse(a, b []gpu) []gpu {
	if len(a) == 0 {
		return b
	}
	out := merge(a, b)
	for _, c := range b {
		found := false
		for i := range out {
			g := &out[i]
			if !(c.busID != "" && strings.EqualFold(c.busID, g.busID) || c.busID == "" && c.index == g.index) {
				continue
			}
			found = true
			g.uncorrVol, g.uncorrAgg = max(g.uncorrVol, c.uncorrVol), max(g.uncorrAgg, c.uncorrAgg)
			for _, v := range []struct {
				dst *string
				src string
			}{{&g.retiredPending, c.retiredPending}, {&g.remapPending, c.remapPending}, {&g.remapFail, c.remapFail}} {
				if v.src == "Yes" {
					*v.dst = "Yes"
				}
			}
			if known(c.eccMode) && c.eccMode != "Enabled" {
				g.eccMode = c.eccMode
			}
			if c.widthCur >= 0 && c.widthCur < g.widthCur {
				g.widthCur = c.widthCur
			}
			if c.genMax >= 0 && c.genMax < g.genMax {
				g.genMax = c.genMax
			}
			if c.hasReasons {
				g.reasons |= c.reasons
			}
		}
		if !found {
			out = append(out, c)
		}
	}
	return out
}

// ibWhere is "FILE: " of n's first IB section, for its error.
func ibWhere(n *nodeInput) string {
	for _, name := range n.order {
		switch kindOf(name) {
		case "ibstat", "ibdevinfo", "ib-sysfs":
			return n.sections[name].file + ": "
		}
	}
	return ""
}

// nodeLabel is "node HOST: ", or "" for a file of no node's name.
func nodeLabel(h string) string {
	if h == "" {
		return ""
	}
	return "node " + h + ": "
}

func hostPrefix(h string) string {
	if h == "" {
		return ""
	}
	return h + ": "
}

func firstText(s *section) string {
	if len(s.lines) == 0 {
		return ""
	}
	return s.lines[0].text
}

// judgeNodes makes every check of every node, then the ones across nodes.
func judgeNodes(p *result.Parsed, inputs []*nodeInput, s settings, topo plan.Topology) []string {
	var errs []string
	var nodes []node
	for _, in := range inputs {
		nd, e := readNode(p, in)
		errs = append(errs, e...)
		nodes = append(nodes, nd)
	}
	models := map[string]int{}
	for _, nd := range nodes {
		judgeNode(p, nd, s)
		for _, g := range nd.gpus {
			if g.name != "" {
				models[g.name]++
			}
		}
	}
	if m := majority(models); m != "" {
		if p.Info == nil {
			p.Info = map[string]string{}
		}
		p.Info["gpu"] = m
		var hosts []string
		for _, nd := range nodes {
			if nd.host != "" {
				hosts = append(hosts, nd.host)
			}
		}
		if len(hosts) > 0 {
			p.Info["hosts"] = strings.Join(hosts, ",")
		}
	}
	for _, g := range firstGPUs(nodes) {
		if g.driver != "" {
			if p.Info == nil {
				p.Info = map[string]string{}
			}
			p.Info["driver_version"] = g.driver
			break
		}
	}
	if hw := result.HardwareValue(hardwareOf(nodes)); hw != "" {
		if p.Info == nil {
			p.Info = map[string]string{}
		}
		p.Info[result.HardwareInfo] = hw
	}
	sameAcross(p, nodes, "driver version", "GA-DRIVER-MISMATCH", func(g gpu) string { return g.driver })
	sameAcross(p, nodes, "VBIOS version", "GA-VBIOS-MISMATCH", func(g gpu) string { return g.vbios })
	if len(inputs) > 0 && topo.Nodes > 0 && hasHosts(nodes) && len(nodes) != topo.Nodes {
		p.Checks = append(p.Checks, result.Check{Name: "node count", OK: false,
			Message: fmt.Sprintf("%s reported, the topology has %d: a node that did not report was not checked", result.Count(len(nodes), "node"), topo.Nodes)})
	}
	return errs
}

func hasHosts(nodes []node) bool {
	for _, n := range nodes {
		if n.host != "" {
			return true
		}
	}
	return false
}

func firstGPUs(nodes []node) []gpu {
	for _, n := range nodes {
		if len(n.gpus) > 0 {
			return n.gpus
		}
	}
	return nil
}

// majority is the most common key, the smaller on a tie; "" for none.
func majority(m map[string]int) string {
	best, n := "", 0
	for k, c := range m {
		if c > n || c == n && k < best {
			best, n = k, c
		}
	}
	return best
}

// sameAcross fails, on each node, the GPUs whose value differs from the
// most common one over all nodes' GPUs (driver, VBIOS). Nothing is
// checked where fewer than two GPUs give a value.
func sameAcross(p *result.Parsed, nodes []node, name, code string, value func(gpu) string) {
	count := map[string]int{}
	total := 0
	for _, nd := range nodes {
		for _, g := range nd.gpus {
			if v := value(g); v != "" {
				count[v]++
				total++
			}
		}
	}
	if total < 2 {
		return
	}
	want := majority(count)
	tie := false
	for v, n := range count {
		tie = tie || v != want && n == count[want]
	}
	for _, nd := range nodes {
		var odd []string
		seen := false
		for _, g := range nd.gpus {
			v := value(g)
			if v == "" {
				continue
			}
			seen = true
			if v != want || tie {
				odd = append(odd, fmt.Sprintf("%s has %s", g.label(), v))
			}
		}
		if !seen {
			continue
		}
		c := checks{p, nd.host}
		if len(odd) > 0 && tie {
			// No value is the most common: which node is odd cannot be
			// told, so each fails, naming what the others have.
			c.add(name, false, code, fmt.Sprintf("%s; the GPUs of the nodes disagree (%s)", strings.Join(odd, ", "), valueCounts(count)))
		} else if len(odd) > 0 {
			c.add(name, false, code, fmt.Sprintf("%s; the other GPUs have %s", strings.Join(odd, ", "), want))
		} else if len(count) > 1 {
			c.add(name, true, "", fmt.Sprintf("%s, as most GPUs", want))
		} else {
			c.add(name, true, "", fmt.Sprintf("%s on every GPU", want))
		}
	}
}

// valueCounts is "A on 2 GPUs, B on 1 GPU", values sorted.
func valueCounts(count map[string]int) string {
	var vs []string
	for v := range count {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	for i, v := range vs {
		vs[i] = v + " on " + result.Count(count[v], "GPU")
	}
	return strings.Join(vs, ", ")
}

// judgeNode makes the checks of one node from what its sections say.
func judgeNode(p *result.Parsed, nd node, s settings) {
	c := checks{p, nd.host}
	if nd.gpuSource {
		judgeGPUs(c, nd, s)
		judgeAMD(c, nd.gpus)
	} else if nd.toolFailed != "" && s.gpus > 0 {
		// The GPU tool is there but could not reach the driver: no GPU
		// is known bad, the check could not be made (a warning; the
		// parse error makes the test an error): fix the driver, then
		// check again. Not a failed check: a node a check fails is a bad
		// node, and a run with one fails (result.Run.Finish).
		c.warn("GPU count", "", fmt.Sprintf("no GPU could be counted, %s expected: %s", result.Count(s.gpus, "GPU", "GPUs"), nd.toolFailed))
	} else if t, ok := nd.absent["nvsmi-xml"]; ok && s.gpus > 0 {
		if amd := nd.amdTool(); amd != "" {
			// amd-smi or rocm-smi is there but printed nothing readable
			// (the parse error says what): the GPUs may be there, but
			// none could be counted.
			c.warn("GPU count", "GA-TOOL-MISSING", fmt.Sprintf("%s is not installed and %s's output could not be read: %s expected, none could be counted", t, amd, result.Count(s.gpus, "GPU", "GPUs")))
		} else {
			// A node that should have GPUs and has no tool to show one:
			// no driver, or no GPU; it must not take jobs.
			c.add("GPU count", false, "GA-GPU-COUNT", fmt.Sprintf("no GPU tool (nvidia-smi, amd-smi, rocm-smi) found: %s expected, none could be counted", result.Count(s.gpus, "GPU", "GPUs")))
		}
	}
	if nd.nvlinkSeen {
		judgeNVLink(c, nd, s)
	}
	amdOnly := !nd.nvidia && (nd.gpuSource || nd.amdTool() != "")
	if nd.kernelSeen && amdOnly {
		// XIDs are NVIDIA's driver's: the kernel log of an AMD node is
		// searched for none, so no XID check is made on it.
		c.p.Diagnostics = append(c.p.Diagnostics, result.Diagnostic{Level: result.Info, Message: hostPrefix(nd.host) + "XIDs are NVIDIA's: not looked for on a node of AMD GPUs"})
	} else if nd.kernelSeen {
		judgeXIDs(c, nd, s)
		judgeLost(c, nd)
	} else if _, ok := nd.absent["kernel-log"]; ok && nd.gpuSource && !amdOnly {
		// No readable kernel log (an unprivileged pod: dmesg denied, no
		// journal): XIDs were not looked for, which is no pass.
		c.warn("XID", "GA-TOOL-MISSING", "the kernel log could not be read (dmesg denied, no journal): XIDs not checked")
	}
	if nd.dcgm != nil {
		judgeDCGM(c, nd.dcgm)
	} else if t, ok := nd.absent["dcgm"]; ok && s.dcgmLevel > 0 {
		c.warn("DCGM diag", "GA-TOOL-MISSING", fmt.Sprintf("%s is not installed: dcgmi diag -r %d was not run", t, s.dcgmLevel))
	}
	if nd.ibSeen {
		judgeIB(c, nd, s)
	} else if _, ok := nd.absent["ib-sysfs"]; ok && (s.hcas > 0 || s.ibRate > 0) {
		c.warn("HCA count", "GA-TOOL-MISSING", "no /sys/class/infiniband (no RDMA driver loaded): the SKU expects InfiniBand/RoCE ports")
	}
}

func judgeGPUs(c checks, nd node, s settings) {
	gs := nd.gpus
	if s.gpus > 0 || len(gs) == 0 {
		ok := len(gs) == s.gpus
		c.add("GPU count", ok, "GA-GPU-COUNT", fmt.Sprintf("%s, %d expected", result.Count(len(gs), "GPU"), s.gpus))
	}
	models := map[string]int{}
	for _, g := range gs {
		if g.name != "" {
			models[g.name]++
		}
	}
	if len(models) > 0 {
		want := majority(models)
		var odd []string
		for _, g := range gs {
			if g.name != "" && g.name != want {
				odd = append(odd, fmt.Sprintf("%s is %s", g.label(), g.name))
			}
		}
		if len(odd) > 0 {
			c.add("GPU model", false, "GA-GPU-MODEL", fmt.Sprintf("%s; the other GPUs are %s", strings.Join(odd, ", "), want))
		} else {
			c.add("GPU model", true, "", fmt.Sprintf("%d x %s", len(gs), want))
		}
	}
	// perGPU makes one check over the GPUs that report the value: bad
	// returns the problem of a GPU ("" for none).
	perGPU := func(name, code string, has func(gpu) bool, bad func(gpu) string, okMsg string) {
		var probs []string
		n := 0
		for _, g := range gs {
			if !has(g) {
				continue
			}
			n++
			if b := bad(g); b != "" {
				probs = append(probs, g.label()+": "+b)
			}
		}
		if n == 0 {
			return
		}
		if len(probs) > 0 {
			c.add(name, false, code, strings.Join(probs, "; "))
		} else {
			c.add(name, true, "", fmt.Sprintf(okMsg, result.Count(n, "GPU")))
		}
	}
	perGPU("ECC mode", "GA-GPU-ECC-OFF", func(g gpu) bool { return known(g.eccMode) }, func(g gpu) string {
		if g.eccMode != "Enabled" {
			return "ECC " + g.eccMode
		}
		return ""
	}, "ECC enabled on %s")
	perGPU("uncorrected ECC", "GA-GPU-ECC-UNCORR", func(g gpu) bool { return g.uncorrVol >= 0 }, func(g gpu) string {
		if g.uncorrVol > 0 {
			return fmt.Sprintf("%d uncorrected ECC %s since the driver loaded (volatile), %s in its lifetime", g.uncorrVol, result.Noun(int(min(g.uncorrVol, 2)), "error"), countText(g.uncorrAgg))
		}
		return ""
	}, "no uncorrected ECC errors on %s since the driver loaded")
	// The lifetime count alone warns: row remapping has likely repaired
	// the rows, and a pending or failed remap is its own check.
	var agg []string
	for _, g := range gs {
		if g.uncorrAgg > 0 && g.uncorrVol <= 0 {
			agg = append(agg, fmt.Sprintf("%s: %d uncorrected ECC %s in its lifetime (aggregate), none since the driver loaded", g.label(), g.uncorrAgg, result.Noun(int(min(g.uncorrAgg, 2)), "error")))
		}
	}
	if len(agg) > 0 {
		c.warn("uncorrected ECC history", "GA-GPU-ECC-AGGREGATE", strings.Join(agg, "; "))
	}
	perGPU("retired pages", "GA-GPU-RETIRED-PENDING", func(g gpu) bool { return g.retiredPending != "" }, func(g gpu) string {
		if g.retiredPending == "Yes" {
			return "pages pending retirement"
		}
		return ""
	}, "no page retirement pending on %s")
	perGPU("row remap pending", "GA-GPU-ROWREMAP-PENDING", func(g gpu) bool { return g.remapPending != "" }, func(g gpu) string {
		if g.remapPending == "Yes" {
			return "a row remap is pending (takes effect at the next GPU reset)"
		}
		return ""
	}, "no row remap pending on %s")
	perGPU("row remap failure", "GA-GPU-ROWREMAP-FAIL", func(g gpu) bool { return g.remapFail != "" }, func(g gpu) string {
		if g.remapFail == "Yes" {
			return "a row remap failed"
		}
		return ""
	}, "no failed row remap on %s")
	perGPU("clock events", "GA-GPU-THROTTLE", func(g gpu) bool { return g.hasReasons }, func(g gpu) string {
		if b := g.reasons & badReasons; b != 0 {
			return fmt.Sprintf("clocks held down by %s (clocks_event_reasons 0x%016x)", reasonNames(b), g.reasons)
		}
		return ""
	}, "no hardware or thermal slowdown on %s (idle, application clocks, power cap and sync boost are not faults)")
	// A link is judged where something can be compared: a current width
	// against its max or the SKU's, a max generation against the SKU's
	// (amd-smi metric alone gives no max, static alone no current).
	perGPU("PCIe link", "GA-PCIE-DOWNGRADE", func(g gpu) bool {
		return g.widthCur >= 0 && (g.widthMax > 0 || s.pcieWidth > 0) || g.genMax >= 0 && (s.pcieGen > 0 || g.widthCur >= 0)
	}, func(g gpu) string {
		var p []string
		if g.widthCur >= 0 && g.widthMax > 0 && g.widthCur < g.widthMax {
			p = append(p, fmt.Sprintf("width x%d, max x%d", g.widthCur, g.widthMax))
		}
		if s.pcieWidth > 0 && g.widthCur >= 0 && g.widthCur < s.pcieWidth {
			p = append(p, fmt.Sprintf("width x%d, the SKU's x%d", g.widthCur, s.pcieWidth))
		}
		if s.pcieGen > 0 && g.genMax >= 0 && g.genMax < s.pcieGen {
			p = append(p, fmt.Sprintf("max generation %d, the SKU's %d", g.genMax, s.pcieGen))
		}
		return strings.Join(p, ", ")
	}, "every link of %s at its width and generation")
	// A link below its max generation at idle is the GPU saving power
	// (it trains up under load): a warning, not a fault.
	var gen []string
	for _, g := range gs {
		if g.genCur >= 0 && g.genMax > 0 && g.genCur < g.genMax {
			gen = append(gen, fmt.Sprintf("%s: PCIe generation %d, max %d", g.label(), g.genCur, g.genMax))
		}
	}
	if len(gen) > 0 {
		c.warn("PCIe generation", "GA-PCIE-DOWNGRADE", strings.Join(gen, "; ")+" (an idle GPU may run its link slower; a loaded one must not)")
	}
	var off []string
	pm := 0
	for _, g := range gs {
		if known(g.persistence) {
			pm++
			if g.persistence != "Enabled" {
				off = append(off, g.label())
			}
		}
	}
	switch {
	case len(off) > 0:
		c.warn("persistence mode", "GA-GPU-PERSISTENCE", "persistence mode disabled on "+strings.Join(off, ", "))
	case pm > 0:
		c.add("persistence mode", true, "", "persistence mode enabled on "+result.Count(pm, "GPU"))
	}
}

// known says an nvidia-smi value is given (not N/A or Not Supported).
func known(v string) bool {
	v = strings.Trim(strings.TrimSpace(v), "[]")
	return v != "" && v != "N/A" && v != "Not Supported"
}

func countText(n int64) string {
	if n < 0 {
		return "unknown"
	}
	return strconv.FormatInt(n, 10)
}

func judgeNVLink(c checks, nd node, s settings) {
	if len(nd.nvlink) == 0 {
		switch {
		case s.nvlinks > 0:
			c.add("NVLink", false, "GA-NVLINK-INACTIVE", fmt.Sprintf("nvidia-smi nvlink --status lists no GPU with NVLink, %s per GPU expected", result.Count(s.nvlinks, "active link")))
		default:
			c.add("NVLink", true, "", "no NVLink links listed (nvidia-smi nvlink --status printed none: a GPU without NVLink peers; nvlinks not set, so none are expected)")
		}
		return
	}
	var probs, unbridged []string
	links := 0
	for _, g := range nd.nvlink {
		links += len(g.active)
		switch {
		case g.allInactive && (s.nvlinks > 0 || nvlinkModule(g.name)):
			probs = append(probs, fmt.Sprintf("GPU %d: all links inactive", g.index))
		case g.allInactive:
			unbridged = append(unbridged, fmt.Sprintf("GPU %d (%s)", g.index, g.name))
		case len(g.inactive) > 0:
			probs = append(probs, fmt.Sprintf("GPU %d: %s %s inactive (%d active)", g.index, result.Noun(len(g.inactive), "link"), ints(g.inactive), len(g.active)))
		case s.nvlinks > 0 && len(g.active) < s.nvlinks:
			probs = append(probs, fmt.Sprintf("GPU %d: %s, %d expected", g.index, result.Count(len(g.active), "active link"), s.nvlinks))
		}
	}
	switch {
	case len(probs) > 0:
		c.add("NVLink", false, "GA-NVLINK-INACTIVE", strings.Join(probs, "; "))
	case len(unbridged) > 0:
		// A board GPU with NVLink bridges but none fitted says the same
		// as a module whose links are down; without nvlinks set, which
		// cannot be told.
		c.warn("NVLink", "GA-NVLINK-INACTIVE", fmt.Sprintf("all links inactive on %s: a GPU whose NVLink bridge is not fitted says so too; nvlinks not set, so none are expected", strings.Join(unbridged, ", ")))
	default:
		c.add("NVLink", true, "", fmt.Sprintf("%s, %s, none inactive", result.Count(len(nd.nvlink), "GPU"), result.Count(links, "active link")))
	}
}

func ints(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func judgeXIDs(c checks, nd node, s settings) {
	var fatal, other []string
	offBus := false
	for _, x := range nd.xids {
		gpuName := "PCI " + x.pci
		for _, g := range nd.gpus {
			if sameBus(x.pci, g.busID) {
				gpuName = g.label()
			}
		}
		desc := fmt.Sprintf("XID %d on %s (%s)", x.code, gpuName, x.where)
		if s.xidFatal[x.code] {
			fatal = append(fatal, desc)
			offBus = offBus || x.code == 79
		} else {
			other = append(other, desc)
		}
	}
	for _, o := range other {
		c.p.Diagnostics = append(c.p.Diagnostics, result.Diagnostic{Level: result.Warning, Message: hostPrefix(nd.host) + o + ": not on the fatal list (xid_fatal)"})
	}
	if len(fatal) > 0 {
		code := "GA-GPU-XID"
		if offBus {
			code = "GA-GPU-OFFBUS"
		}
		sort.Strings(fatal)
		c.add("XID", false, code, "fatal "+strings.Join(fatal, "; "))
		return
	}
	c.add("XID", true, "", fmt.Sprintf("no fatal XID in the kernel log (%s)", result.Count(len(nd.xids), "XID line")))
}

// judgeLost fails a node whose kernel log says a GPU fell off the bus
// (GA-GPU-OFFBUS) or that the driver could not take it (RmInitAdapter
// failed, probe failed, a GPU the driver does not support: GA-GPU-INIT),
// though no XID line says so; either GPU is lost to jobs.
func judgeLost(c checks, nd node) {
	if len(nd.lost) == 0 {
		c.add("GPU lost", true, "", "no GPU fell off the bus or failed to initialise (kernel log)")
		return
	}
	code := "GA-GPU-INIT"
	var probs []string
	for _, l := range nd.lost {
		name := "a GPU"
		if l.pci != "" {
			name = "PCI " + l.pci
			for _, g := range nd.gpus {
				if sameBus(l.pci, g.busID) {
					name = g.label()
				}
			}
		}
		if l.offBus {
			code = "GA-GPU-OFFBUS"
		}
		probs = append(probs, fmt.Sprintf("%s: %s (%s)", name, l.what, l.where))
	}
	c.add("GPU lost", false, code, strings.Join(probs, "; "))
}

// dcgmRank orders the severity names from worst: the verdict is made on
// the name.
var dcgmRank = map[string]int{"DCGM_ERROR_RESET": 6, "DCGM_ERROR_ISOLATE": 5, "DCGM_ERROR_TRIAGE": 4, "DCGM_ERROR_UNKNOWN": 3, "DCGM_ERROR_CONFIG": 2, "DCGM_ERROR_MONITOR": 1, "DCGM_ERROR_NONE": 0, "": 0}

func judgeDCGM(c checks, run *dcgmRun) {
	type verdict struct {
		status string
		worst  string
		// texts are the warnings in their order; gpus the GPUs that
		// printed each (dcgmi repeats one text for every GPU).
		texts []string
		gpus  map[string][]string
		// n counts the test's findings, idle those that did not run
		// (skip, not run): a test that never ran passes as skipped,
		// never as passed.
		n, idle int
	}
	tests := map[string]*verdict{}
	var order []string
	for _, f := range run.findings {
		v := tests[f.test]
		if v == nil {
			v = &verdict{status: "pass", gpus: map[string][]string{}}
			tests[f.test] = v
			order = append(order, f.test)
		}
		v.n++
		switch f.status {
		case "skip", "", "not run":
			v.idle++
		case "fail":
			v.status = "fail"
		case "warn", "warning":
			if v.status != "fail" {
				v.status = "warn"
			}
		}
		for _, w := range f.warnings {
			if dcgmRank[w.severity] > dcgmRank[v.worst] || v.worst == "" {
				v.worst = w.severity
			}
			msg := w.text
			if w.reason != "" {
				msg = w.reason + ": " + msg
			}
			if _, ok := v.gpus[msg]; !ok {
				v.texts = append(v.texts, msg)
			}
			if f.gpus != "" {
				v.gpus[msg] = append(v.gpus[msg], f.gpus)
			} else if v.gpus[msg] == nil {
				v.gpus[msg] = []string{}
			}
		}
	}
	for _, t := range order {
		v := tests[t]
		name := "DCGM diag " + t
		var msgs []string
		for i, m := range v.texts {
			if i == 5 {
				msgs = append(msgs, fmt.Sprintf("%d more %s", len(v.texts)-5, result.Noun(len(v.texts)-5, "warning")))
				break
			}
			// DCGM's texts open with advice boilerplate: the cause
			// comes late, so more of each is kept than clip keeps.
			g := v.gpus[m]
			if len(m) > 320 {
				m = m[:320] + "..."
			}
			if len(g) > 0 {
				m = result.Noun(len(g), "GPU") + " " + strings.Join(g, ",") + ": " + m
			}
			msgs = append(msgs, m)
		}
		detail := strings.Join(msgs, "; ")
		sev := ""
		if v.worst != "" {
			sev = " (" + v.worst + ")"
		}
		switch {
		case v.status == "fail":
			code := "GA-DCGM-DIAG"
			switch v.worst {
			case "DCGM_ERROR_RESET":
				code = "GA-DCGM-RESET"
			case "DCGM_ERROR_CONFIG":
				code = "GA-DCGM-CONFIG"
			case "DCGM_ERROR_MONITOR":
				c.warn(name, "GA-DCGM-WARN", fmt.Sprintf("failed%s: %s", sev, detail))
				continue
			}
			c.add(name, false, code, fmt.Sprintf("failed%s: %s", sev, detail))
		case v.status == "warn":
			c.warn(name, "GA-DCGM-WARN", fmt.Sprintf("warned%s: %s", sev, detail))
		case v.idle == v.n:
			c.add(name, true, "", "skipped, not failed ("+dcgmLabel(run.version)+")")
		default:
			c.add(name, true, "", "passed ("+dcgmLabel(run.version)+")")
		}
	}
}

// dcgmLabel names the DCGM that wrote a run: "DCGM 3.3.8", or "DCGM,
// version not printed" (a table without its Metadata rows).
func dcgmLabel(version string) string {
	if version == "" {
		return "DCGM, version not printed"
	}
	return "DCGM " + version
}

func judgeIB(c checks, nd node, s settings) {
	if s.hcas > 0 || len(nd.ports) == 0 {
		c.add("HCA count", len(nd.ports) >= s.hcas && (len(nd.ports) > 0 || s.hcas == 0), "GA-IB-COUNT", fmt.Sprintf("%s, %d expected", result.Count(len(nd.ports), "InfiniBand/RoCE port"), s.hcas))
	}
	if len(nd.ports) == 0 {
		return
	}
	var down, slow, nogid []string
	for _, p := range nd.ports {
		id := fmt.Sprintf("%s port %d", p.hca, p.port)
		if p.state != "ACTIVE" {
			msg := fmt.Sprintf("%s is %s", id, orUnknown(p.state))
			if p.phys != "" {
				msg += " (physical state " + p.phys + ")"
			}
			down = append(down, msg)
		}
		if s.ibRate > 0 && p.rate >= 0 && p.rate < s.ibRate {
			slow = append(slow, fmt.Sprintf("%s at %g Gb/s", id, p.rate))
		}
		if p.linkLayer == "Ethernet" && p.hasGID && zeroGID(p.gid) {
			nogid = append(nogid, id)
		}
	}
	if len(down) > 0 {
		c.add("IB port state", false, "GA-IB-PORT-DOWN", strings.Join(down, "; "))
	} else {
		c.add("IB port state", true, "", result.Count(len(nd.ports), "port")+" ACTIVE")
	}
	if s.ibRate > 0 {
		if len(slow) > 0 {
			c.add("IB rate", false, "GA-IB-RATE", fmt.Sprintf("%s; the SKU's rate is %g Gb/s", strings.Join(slow, "; "), s.ibRate))
		} else {
			c.add("IB rate", true, "", fmt.Sprintf("%s at %g Gb/s or more", result.Count(len(nd.ports), "port"), s.ibRate))
		}
	}
	if len(nogid) > 0 {
		c.add("RoCE GID", false, "GA-ROCE-GID", "no GID (GID 0 is all zero) on "+strings.Join(nogid, ", "))
	}
	judgeIBLink(c, nd.ports)
}

// judgeIBLink fails an active InfiniBand port that trained below what
// its HCA runs at: at 1X (every InfiniBand HCA port is 2X or wider, so
// a 1X link is lanes lost in the cable or transceiver), narrower than
// the widest port of the same HCA model on the node, or slower than
// that model's most common rate on the node (one lane speed lower:
// HDR on an NDR fabric). Ethernet ports are not judged: their width and
// lane speed follow the Ethernet speed (25GbE is 1X). The SKU's ib_rate
// is judgeIB's. No check where no port gives a width, model or rate to
// compare.
func judgeIBLink(c checks, ports []ibPort) {
	type model struct {
		width int
		rates map[float64]int
	}
	models := map[string]*model{}
	var ib []ibPort
	for _, p := range ports {
		if p.state != "ACTIVE" || p.linkLayer != "InfiniBand" {
			continue
		}
		ib = append(ib, p)
		if p.part == "" {
			continue
		}
		m := models[p.part]
		if m == nil {
			m = &model{rates: map[float64]int{}}
			models[p.part] = m
		}
		m.width = max(m.width, p.width)
		if p.rate > 0 {
			m.rates[p.rate]++
		}
	}
	var probs []string
	judged := 0
	for _, p := range ib {
		id := fmt.Sprintf("%s port %d", p.hca, p.port)
		m := models[p.part]
		if p.width > 0 || m != nil && p.rate > 0 && len(m.rates) > 0 {
			judged++
		}
		var why []string
		switch {
		case p.width == 1:
			why = append(why, "runs 1X (one lane of four)")
		case m != nil && p.width > 0 && p.width < m.width:
			why = append(why, fmt.Sprintf("runs %dX, other MT%s ports %dX", p.width, p.part, m.width))
		}
		if m != nil && p.rate > 0 {
			common, n := 0.0, 0
			for r, k := range m.rates {
				if k > n || k == n && r > common {
					common, n = r, k
				}
			}
			if p.rate < common && n >= 2 {
				why = append(why, fmt.Sprintf("at %g Gb/s, %d other MT%s ports at %g Gb/s", p.rate, n, p.part, common))
			}
		}
		if len(why) > 0 {
			probs = append(probs, id+" "+strings.Join(why, ", "))
		}
	}
	switch {
	case len(probs) > 0:
		c.add("IB link", false, "GA-IB-RATE", strings.Join(probs, "; ")+" (a lane down or a slower cable or transceiver)")
	case judged > 0:
		c.add("IB link", true, "", fmt.Sprintf("%s: none at 1X, none narrower or slower than the other ports of its HCA model", result.Count(judged, "active InfiniBand port")))
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "in no state ibstat printed"
	}
	return s
}

// hardwareOf lists the GPUs and HCAs the nodes' outputs show, with the
// UUIDs, serials, bus ids and GUIDs they print (result.HardwareInfo): the
// results folder's hardware list, which a customer matches to what they
// received. A value printed as N/A is none.
func hardwareOf(nodes []node) []result.Device {
	shown := func(v string) string {
		if v = strings.TrimSpace(v); strings.EqualFold(v, "N/A") || strings.EqualFold(v, "[N/A]") {
			return ""
		}
		return v
	}
	var out []result.Device
	for _, nd := range nodes {
		for _, g := range nd.gpus {
			d := result.Device{Host: nd.host, Kind: result.GPUDevice, Name: shown(g.name), UUID: shown(g.uuid), Serial: shown(g.serial), BusID: shown(g.busID)}
			if d.Name != "" || d.UUID != "" || d.Serial != "" || d.BusID != "" {
				out = append(out, d)
			}
		}
		at := map[string]int{}
		for _, pt := range nd.ports {
			i, ok := at[pt.hca]
			if !ok {
				i = len(out)
				at[pt.hca] = i
				out = append(out, result.Device{Host: nd.host, Kind: result.NICDevice, Name: pt.hca})
			}
			if out[i].GUID == "" {
				out[i].GUID = shown(pt.nodeGUID)
			}
			if g := shown(pt.portGUID); g != "" && !slices.Contains(out[i].PortGUIDs, g) {
				out[i].PortGUIDs = append(out[i].PortGUIDs, g)
			}
		}
	}
	return out
}
