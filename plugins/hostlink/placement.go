package hostlink

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/torchbench"
)

// placementInfo is the Info key (pluginapi's context key, judge.ContextKey)
// holding where hostlink.pcie's copies ran, which the judge adds to the
// message of a test whose point warns or fails.
const placementInfo = "context"

// placementText renders where the copies of o ran, for the verdict:
// "placement: GPU0 on NUMA node 1, process bound to CPUs 48-95 (node 1),
// buffer on node 1; IOMMU on (iommu=pt absent); PCIe Gen5 x16; 2 NUMA
// nodes: node0 1007 GiB (955 free), node1 ...". GPUs whose placement
// reads alike are named together; nodes of several hosts each get a
// "host NAME:" part. "" when no copy has a placement.
func placementText(copies []torchbench.Copy) string {
	type gpuKey struct {
		host string
		gpu  int
	}
	byGPU := map[gpuKey][]torchbench.Copy{}
	var keys []gpuKey
	for _, c := range copies {
		k := gpuKey{c.Host, c.GPU}
		if byGPU[k] == nil {
			keys = append(keys, k)
		}
		byGPU[k] = append(byGPU[k], c)
	}
	if len(keys) == 0 {
		return ""
	}
	recorded := false
	for _, c := range copies {
		recorded = recorded || c.Placement != nil
	}
	if !recorded {
		// Outputs of the script before placement records: nothing to say,
		// and saying "not recorded" would change the verdict gpuaccept
		// verify re-judges from a results folder made before.
		return ""
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].host != keys[j].host {
			return keys[i].host < keys[j].host
		}
		return keys[i].gpu < keys[j].gpu
	})
	var hosts []string
	perHost := map[string][]gpuKey{}
	for _, k := range keys {
		if perHost[k.host] == nil {
			hosts = append(hosts, k.host)
		}
		perHost[k.host] = append(perHost[k.host], k)
	}
	var parts []string
	for _, h := range hosts {
		// GPUs with the same text after their index are named together;
		// so are host facts, which are the same for every GPU of a host
		// unless the IOMMU group or the link differs.
		var gpuOrder, factOrder []string
		gpus := map[string][]string{}
		facts := map[string]bool{}
		for _, k := range perHost[h] {
			g, f := gpuPlacement(byGPU[k])
			if gpus[g] == nil {
				gpuOrder = append(gpuOrder, g)
			}
			gpus[g] = append(gpus[g], strconv.Itoa(k.gpu))
			for _, x := range f {
				if !facts[x] {
					facts[x] = true
					factOrder = append(factOrder, x)
				}
			}
		}
		var ps []string
		for _, g := range gpuOrder {
			ps = append(ps, "GPU"+strings.Join(gpus[g], ",")+" "+g)
		}
		text := strings.Join(append(ps, factOrder...), "; ")
		if len(hosts) > 1 {
			name := h
			if name == "" {
				name = "unknown"
			}
			text = "host " + name + ": " + text
		}
		parts = append(parts, text)
	}
	return "placement: " + strings.Join(parts, "; ")
}

// gpuPlacement is one GPU's placement from its copies (h2d and d2h, each
// with its own buffer): the GPU's own text without its index ("on NUMA
// node 1, process bound to CPUs 48-95 (node 1), buffer on node 1") and the
// host facts (IOMMU, link, NUMA nodes).
func gpuPlacement(cs []torchbench.Copy) (string, []string) {
	var p *torchbench.Placement
	for _, c := range cs {
		if c.Placement != nil {
			p = c.Placement
			break
		}
	}
	if p == nil {
		return "placement not recorded", nil
	}
	var words []string
	if p.NUMANode >= 0 {
		words = append(words, fmt.Sprintf("on NUMA node %d", p.NUMANode))
	} else {
		words = append(words, "on no NUMA node")
	}
	if p.CPUs != "" {
		words = append(words, fmt.Sprintf("process bound to CPUs %s (node %d)", p.CPUs, p.NUMANode))
	} else {
		why := p.Unbound
		if why == "" {
			why = "reason not recorded"
		}
		words = append(words, "process unbound ("+why+")")
	}
	// Each direction allocates its own buffer: the same node for both is
	// said once, else each with its direction.
	var bufs, dirs []string
	for _, c := range cs {
		if c.Placement != nil {
			bufs = append(bufs, bufferText(c.Placement))
			dirs = append(dirs, c.Direction)
		}
	}
	same := true
	for _, b := range bufs {
		same = same && b == bufs[0]
	}
	if same {
		words = append(words, bufs[0])
	} else {
		for i := range bufs {
			words = append(words, bufs[i]+" ("+dirs[i]+")")
		}
	}
	return strings.Join(words, ", "), []string{iommuText(p), linkText(p.Link), nodesText(p.Nodes)}
}

// bufferText says where the pinned buffer's pages were: "buffer on node
// 1", "buffer on nodes 1 (97%), 0 (3%)", or "buffer node unknown (why)".
func bufferText(p *torchbench.Placement) string {
	if len(p.BufferNodes) == 0 {
		why := p.BufferUnknown
		if why == "" {
			why = "not recorded"
		}
		return "buffer node unknown (" + why + ")"
	}
	type nodePages struct {
		node  string
		pages int64
	}
	var ns []nodePages
	var total int64
	for n, pg := range p.BufferNodes {
		ns = append(ns, nodePages{n, pg})
		total += pg
	}
	if len(ns) == 1 {
		return "buffer on node " + ns[0].node
	}
	sort.Slice(ns, func(i, j int) bool {
		if ns[i].pages != ns[j].pages {
			return ns[i].pages > ns[j].pages
		}
		return ns[i].node < ns[j].node
	})
	var out []string
	for _, n := range ns {
		pct := 0.0
		if total > 0 {
			pct = 100 * float64(n.pages) / float64(total)
		}
		out = append(out, fmt.Sprintf("%s (%.0f%%)", n.node, pct))
	}
	return "buffer on nodes " + strings.Join(out, ", ")
}

// iommuText says the IOMMU's state: "IOMMU on (iommu=pt absent)", "IOMMU
// on (passthrough: iommu=pt)", "IOMMU on (GPU's group DMA-FQ; intel_iommu=on,
// iommu=pt absent)", "IOMMU off".
func iommuText(p *torchbench.Placement) string {
	switch p.IOMMU {
	case "on":
	case "off":
		return "IOMMU off"
	default:
		return "IOMMU state unknown"
	}
	var d []string
	if p.IOMMUDomain != "" {
		d = append(d, "GPU's group "+p.IOMMUDomain)
	}
	flags := strings.Fields(p.IOMMUCmdline)
	// An identity domain is passthrough whatever the command line says
	// (CONFIG_IOMMU_DEFAULT_PASSTHROUGH).
	pt := p.IOMMUDomain == "identity"
	for _, f := range flags {
		pt = pt || f == "iommu=pt" || f == "iommu.passthrough=1"
	}
	if len(flags) > 0 {
		d = append(d, strings.Join(flags, " "))
	}
	if !pt {
		d = append(d, "iommu=pt absent")
	}
	return "IOMMU on (" + strings.Join(d, "; ") + ")"
}

// pcieGen maps sysfs's link speed ("32.0 GT/s PCIe") to its PCIe
// generation (PCI-SIG: 2.5, 5, 8, 16, 32, 64 GT/s are Gen1 to Gen6).
func pcieGen(speed string) string {
	f := strings.Fields(speed)
	if len(f) == 0 {
		return ""
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return speed
	}
	for i, gt := range []float64{2.5, 5, 8, 16, 32, 64} {
		if v == gt {
			return "Gen" + strconv.Itoa(i+1)
		}
	}
	return speed
}

// linkText says the GPU's PCIe link: "PCIe Gen5 x16", "PCIe Gen4 x16 (max
// Gen5 x16)" for a link trained below its maximum, "PCIe link unknown".
func linkText(l torchbench.Link) string {
	cur := strings.TrimSpace(pcieGen(l.CurrentSpeed) + " x" + l.CurrentWidth)
	if l.CurrentSpeed == "" || l.CurrentWidth == "" {
		return "PCIe link unknown"
	}
	max := strings.TrimSpace(pcieGen(l.MaxSpeed) + " x" + l.MaxWidth)
	if l.MaxSpeed != "" && l.MaxWidth != "" && max != cur {
		return "PCIe " + cur + " (max " + max + ")"
	}
	return "PCIe " + cur
}

// nodesText says the host's NUMA nodes and their memory in GiB: "2 NUMA
// nodes: node0 1007 GiB (955 free), node1 1008 GiB (12 free)".
func nodesText(ns []torchbench.NodeMemory) string {
	if len(ns) == 0 {
		return "NUMA nodes unknown"
	}
	var m []string
	for _, n := range ns {
		m = append(m, fmt.Sprintf("node%d %s GiB (%s free)", n.Node, gib(n.TotalKB), gib(n.FreeKB)))
	}
	return countNodes(len(ns)) + ": " + strings.Join(m, ", ")
}

func countNodes(n int) string {
	if n == 1 {
		return "1 NUMA node"
	}
	return strconv.Itoa(n) + " NUMA nodes"
}

// gib renders KiB as GiB, one decimal below 10.
func gib(kb int64) string {
	g := float64(kb) / (1 << 20)
	if g < 10 {
		return strconv.FormatFloat(g, 'f', 1, 64)
	}
	return strconv.FormatFloat(g, 'f', 0, 64)
}
