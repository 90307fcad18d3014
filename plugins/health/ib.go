package health

// This file: the node's InfiniBand and RoCE ports, from ibstat or from
// /sys/class/infiniband (collect.sh prints "DEV PORT FILE VALUE").

import (
	"regexp"
	"strconv"
	"strings"
)

// maxIBPorts bounds the InfiniBand/RoCE ports read of one node. A real
// node has tens (8 HCAs of 1-2 ports, plus a few for storage; the hcas
// parameter goes to 1024): the readers stop one past it, and readNode
// makes a node over it an error naming that node, its IB not judged,
// while the other nodes are.
const maxIBPorts = 1024

// ibPort is one port of one HCA.
type ibPort struct {
	hca       string
	port      int
	state     string  // "ACTIVE", "DOWN", "INIT", ... (upper case)
	rate      float64 // Gb/s; -1 unknown
	linkLayer string  // "InfiniBand" or "Ethernet"
	gid       string  // GID 0, sysfs only; "" unknown
	hasGID    bool
	where     string
	// phys is the physical state as the tool names it ("LinkUp",
	// "LINK_UP", "Polling", "POLLING", "Disabled"); "" unknown.
	phys string
	// part is the HCA's model, the device id without "MT" ("4129":
	// ibstat's CA type MT4129, ibv_devinfo's vendor_part_id, sysfs's
	// hca_type); "" unknown. Ports of one model on one node are compared.
	part string
	// width is the active link width in lanes (4 of "4X"); 0 unknown.
	width int
	// lane is the active speed of one lane in Gb/s (ibv_devinfo's
	// active_speed); 0 unknown.
	lane float64
	// nodeGUID is the HCA's node GUID (ibstat's "Node GUID", ibv_devinfo's
	// node_guid), portGUID the port's (ibstat's "Port GUID"), as printed;
	// "" unknown. They name the adapter in the hardware list.
	nodeGUID, portGUID string
}

var (
	ibstatCA   = regexp.MustCompile(`^CA '([^']{1,64})'`)
	ibstatPort = regexp.MustCompile(`^Port (\d+):`)
	ibstatKV   = regexp.MustCompile(`^([A-Za-z ]+):\s*(.*)$`)
)

// parseIBStat reads ibstat's per-CA, per-port blocks ("CA 'mlx5_0'",
// "Port 1:", "State: Active", "Rate: 400", "Link layer: InfiniBand"). A
// line ibstat prints on a failing device ("ibpanic: ...") is returned as a
// note.
func parseIBStat(s *section) (ports []ibPort, notes []line) {
	hca, part, guid := "", "", ""
	for _, l := range s.lines {
		t := stripPaste(l.text)
		if m := ibstatCA.FindStringSubmatch(t); m != nil {
			hca, part, guid = m[1], "", ""
			continue
		}
		if strings.HasPrefix(t, "ibpanic:") || strings.HasPrefix(t, "ibwarn:") {
			notes = append(notes, line{t, l.no})
			continue
		}
		if hca == "" {
			continue
		}
		if m := ibstatPort.FindStringSubmatch(t); m != nil {
			if len(ports) > maxIBPorts {
				break
			}
			n, _ := strconv.Atoi(m[1])
			ports = append(ports, ibPort{hca: hca, port: n, part: part, nodeGUID: guid, rate: -1, where: s.file + ":" + strconv.Itoa(l.no)})
			continue
		}
		if v, ok := strings.CutPrefix(t, "CA type:"); ok {
			part = partOf(v)
			continue
		}
		if v, ok := strings.CutPrefix(t, "Node GUID:"); ok && (len(ports) == 0 || ports[len(ports)-1].hca != hca) {
			guid = strings.TrimSpace(v)
			continue
		}
		if len(ports) == 0 || ports[len(ports)-1].hca != hca {
			continue
		}
		p := &ports[len(ports)-1]
		m := ibstatKV.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		switch m[1] {
		case "State":
			p.state = strings.ToUpper(strings.TrimSpace(m[2]))
		case "Physical state":
			p.phys = strings.TrimSpace(m[2])
		case "Rate":
			p.rate = rateOf(m[2])
		case "Link layer":
			p.linkLayer = strings.TrimSpace(m[2])
		case "Port GUID":
			p.portGUID = strings.TrimSpace(m[2])
		}
	}
	return ports, notes
}

// rateOf reads "400", "400 Gb/sec (4X NDR)" or "200 Gb/s" as Gb/s.
func rateOf(v string) float64 {
	f := strings.Fields(v)
	if len(f) == 0 {
		return -1
	}
	r, err := strconv.ParseFloat(f[0], 64)
	if err != nil || r < 0 || r > 1e6 {
		return -1
	}
	return r
}

// parseIBSysfs reads collect.sh's lines of /sys/class/infiniband:
// "mlx5_0 1 state 4: ACTIVE", "mlx5_0 1 rate 400 Gb/sec (4X NDR)",
// "mlx5_0 1 link_layer InfiniBand", "mlx5_0 1 gids/0 fe80:...".
func parseIBSysfs(s *section) []ibPort {
	var ports []ibPort
	idx := map[string]int{}
	for _, l := range s.lines {
		f := strings.SplitN(strings.TrimSpace(l.text), " ", 4)
		if len(f) < 3 {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 0 || n > 1<<16 {
			continue
		}
		val := ""
		if len(f) == 4 {
			val = strings.TrimSpace(f[3])
		}
		key := f[0] + " " + f[1]
		i, ok := idx[key]
		if !ok && len(ports) > maxIBPorts {
			break
		}
		if !ok {
			i = len(ports)
			idx[key] = i
			ports = append(ports, ibPort{hca: f[0], port: n, rate: -1, where: s.file + ":" + strconv.Itoa(l.no)})
		}
		p := &ports[i]
		p.apply(f[2], val)
	}
	return ports
}

// apply sets one sysfs file's value on p: state ("4: ACTIVE"), rate,
// link_layer, gids/0.
func (p *ibPort) apply(file, val string) {
	switch file {
	case "state":
		_, st, ok := strings.Cut(val, ":")
		if !ok {
			st = val
		}
		p.state = strings.ToUpper(strings.TrimSpace(st))
	case "rate":
		p.rate = rateOf(val)
		if w := widthOf(val); w > 0 {
			p.width = w
		}
	case "hca_type":
		p.part = partOf(val)
	case "link_layer":
		p.linkLayer = val
	case "gids/0":
		p.gid, p.hasGID = val, true
	}
}

// partOf is an HCA model without its "MT" ("MT4129" and "4129" are
// 4129), "" for none.
func partOf(v string) string {
	v = strings.TrimSpace(v)
	if len(v) > 32 {
		return ""
	}
	return strings.TrimPrefix(strings.ToUpper(v), "MT")
}

// zeroGID says g is the all-zero GID: the port has no address.
func zeroGID(g string) bool {
	return strings.Trim(g, "0:") == ""
}
