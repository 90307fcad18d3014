package health

// This file: InfiniBand ports from the text of ibv_devinfo (and -v) and
// of ibstatus, alone or pasted into one file with ibstat's. They become
// the same ibPort values ibstat and /sys/class/infiniband give, so that
// every tool's view of a port is judged by judgeIB alike.
//
// ibv_devinfo (rdma-core libibverbs/examples/devinfo.c) prints, per HCA,
// "hca_id:\tmlx5_0", "vendor_part_id:\t4129", and per port "port:\t1",
// "state:\t\t\tPORT_ACTIVE (4)", "link_layer:\t\tInfiniBand"; with -v
// also "active_width:\t\t4X (2)", "active_speed:\t\t25.0 Gbps (32)" and
// "phys_state:\t\tLINK_UP (5)". Newer rdma-core numbers 2X as 16 ("2X
// (16)") and names NDR's lanes "100.0 Gbps (128)"; the label, not the
// number, is read. ibstatus (infiniband-diags' script) prints
// "Infiniband device 'mlx4_0' port 1 status:" and "state:\t\t 4: ACTIVE",
// "phys state:\t 5: LinkUp", "rate:\t\t 56 Gb/sec (4X FDR)",
// "link_layer:\t InfiniBand": sysfs's values.

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/textdiag"
)

var (
	devinfoHCA     = regexp.MustCompile(`^hca_id:\s*(\S{1,64})`)
	devinfoPort    = regexp.MustCompile(`^port:\s*(\d{1,5})\s*$`)
	devinfoKV      = regexp.MustCompile(`^([a-z_ ]{2,32}):\s*(.*)$`)
	ibstatusDevice = regexp.MustCompile(`^Infiniband device '([^']{1,64})' port (\d{1,5}) status:`)
	// widthLabel is a link width, "4X" of "4X (2)" or "(4X NDR)".
	widthLabel = regexp.MustCompile(`\b(1|2|4|8|12)X\b`)
)

// laneGbps is the signalling rate of one lane of each InfiniBand speed
// name, Gb/s as ibv_devinfo prints it (rdma-core devinfo.c speed_str:
// SDR 2.5, DDR 5.0, QDR 10.0, FDR10 10.0, FDR 14.0, EDR 25.0, HDR 50.0,
// NDR 100.0, XDR 200.0): a port's rate is its width times this (4X FDR =
// 56 Gb/s, ibstat's "Rate: 56").
var laneGbps = map[string]float64{"SDR": 2.5, "DDR": 5, "QDR": 10, "FDR10": 10, "FDR": 14, "EDR": 25, "HDR": 50, "NDR": 100, "XDR": 200}

// stripPaste drops what a paste puts before a tool's line: the labels of
// launchers and log collectors (textdiag.PrefixLen: kubectl logs
// --timestamps, mpirun --tag-output, ...), then blanks.
func stripPaste(t string) string {
	t = strings.TrimSuffix(t, "\r")
	return strings.TrimSpace(t[textdiag.PrefixLen(t):])
}

// parseIBDevinfo reads the ports of ibv_devinfo's and ibstatus's text
// in s (other lines, ibstat's among them, are skipped). Lines ibv_devinfo
// prints when it cannot list devices ("Failed to get IB devices list",
// "No IB devices found") are returned as notes.
func parseIBDevinfo(s *section) (ports []ibPort, notes []line) {
	hca, part, guid := "", "", ""
	cur := -1 // index in ports of the port being read; -1 none
	for _, l := range s.lines {
		t := stripPaste(l.text)
		if t == "" {
			continue
		}
		if m := devinfoHCA.FindStringSubmatch(t); m != nil {
			hca, part, guid, cur = m[1], "", "", -1
			continue
		}
		if m := ibstatusDevice.FindStringSubmatch(t); m != nil {
			n, _ := strconv.Atoi(m[2])
			if len(ports) > maxIBPorts {
				break
			}
			ports = append(ports, ibPort{hca: m[1], port: n, rate: -1, where: s.file + ":" + strconv.Itoa(l.no)})
			cur, hca = len(ports)-1, ""
			continue
		}
		if strings.HasPrefix(t, "Failed to get IB devices list") || strings.HasPrefix(t, "No IB devices found") || strings.HasPrefix(t, "Failed to open device") || strings.HasPrefix(t, "Failed to query") {
			notes = append(notes, line{t, l.no})
			continue
		}
		if strings.HasPrefix(t, "CA '") {
			// ibstat's block pasted after ibv_devinfo's: not ours.
			hca, cur = "", -1
			continue
		}
		if hca != "" {
			if m := devinfoPort.FindStringSubmatch(t); m != nil {
				if len(ports) > maxIBPorts {
					break
				}
				n, _ := strconv.Atoi(m[1])
				ports = append(ports, ibPort{hca: hca, port: n, part: part, nodeGUID: guid, rate: -1, where: s.file + ":" + strconv.Itoa(l.no)})
				cur = len(ports) - 1
				continue
			}
		}
		m := devinfoKV.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		key, val := m[1], strings.TrimSpace(m[2])
		if key == "vendor_part_id" && hca != "" && cur < 0 {
			part = val
			continue
		}
		if key == "node_guid" && hca != "" && cur < 0 {
			guid = val
			continue
		}
		if cur < 0 {
			continue
		}
		ports[cur].applyText(key, val)
	}
	for i := range ports {
		ports[i].fillRate()
	}
	return ports, notes
}

// applyText sets one "key: value" of ibv_devinfo's or ibstatus's port
// block on p.
func (p *ibPort) applyText(key, val string) {
	switch key {
	case "state":
		// "PORT_ACTIVE (4)" (ibv_devinfo) or "4: ACTIVE" (ibstatus).
		if _, st, ok := strings.Cut(val, ":"); ok {
			val = st
		}
		f := strings.Fields(val)
		if len(f) > 0 {
			p.state = strings.TrimPrefix(strings.ToUpper(f[0]), "PORT_")
		}
	case "phys_state", "phys state":
		// "LINK_UP (5)", "POLLING (2)" or "5: LinkUp", "3: Disabled".
		if _, st, ok := strings.Cut(val, ":"); ok {
			val = st
		}
		if f := strings.Fields(val); len(f) > 0 {
			p.phys = f[0]
		}
	case "link_layer":
		p.linkLayer = val
		if val == "IB" {
			// rdma-core before v17 printed "IB".
			p.linkLayer = "InfiniBand"
		}
	case "active_width":
		p.width = widthOf(val)
	case "active_speed":
		p.lane = laneOf(val)
	case "rate":
		// ibstatus: "56 Gb/sec (4X FDR)", sysfs's text.
		p.apply("rate", val)
	}
}

// widthOf reads "4X (2)" or "(4X NDR)" as 4; 0 when there is none.
func widthOf(v string) int {
	m := widthLabel.FindStringSubmatch(v)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// laneOf reads ibv_devinfo's active_speed, "25.0 Gbps (32)" or a speed
// name ("NDR"), as Gb/s per lane; 0 when it is neither.
func laneOf(v string) float64 {
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0
	}
	if g, ok := laneGbps[strings.ToUpper(f[0])]; ok {
		return g
	}
	if len(f) > 1 && strings.HasPrefix(f[1], "Gbps") {
		if r, err := strconv.ParseFloat(f[0], 64); err == nil && r > 0 && r < 1e4 {
			return r
		}
	}
	return 0
}

// fillRate sets the rate from width and lane speed where no tool gave
// it (ibv_devinfo -v prints no rate).
func (p *ibPort) fillRate() {
	if p.rate < 0 && p.width > 0 && p.lane > 0 {
		p.rate = float64(p.width) * p.lane
	}
}

// mergeIB joins the ports several tools gave of one node (ibstat and
// ibv_devinfo pasted together, or ibstat then sysfs), by HCA and port:
// the first tool's port is kept, the others fill what it lacks or show
// it worse (down, slower, narrower); a port only a later tool lists is
// added.
//
// Ports are found by a map: comparing every port with every other made
// a node listing 100,000 ports take a minute, stalling the parse of all
// nodes.
func mergeIB(ports []ibPort, more []ibPort) []ibPort {
	type key struct {
		hca  string
		port int
	}
	at := make(map[key]int, len(ports)+len(more))
	for i, p := range ports {
		if _, ok := at[key{p.hca, p.port}]; !ok {
			at[key{p.hca, p.port}] = i
		}
	}
	for _, q := range more {
		i, found := at[key{q.hca, q.port}]
		if found {
			p := &ports[i]
			// Tools that disagree on a port (outputs of two moments pasted
			// together) never make it healthier: a state other than
			// ACTIVE, and the lower rate and width, win.
			if p.state == "" || p.state == "ACTIVE" && q.state != "" && q.state != "ACTIVE" {
				p.state, p.phys = q.state, q.phys
			}
			if p.phys == "" {
				p.phys = q.phys
			}
			if p.rate < 0 || q.rate >= 0 && q.rate < p.rate {
				p.rate = q.rate
			}
			if q.width > 0 && q.width < p.width {
				p.width = q.width
			}
			if p.linkLayer == "" {
				p.linkLayer = q.linkLayer
			}
			if p.width == 0 {
				p.width = q.width
			}
			if p.lane == 0 {
				p.lane = q.lane
			}
			if p.part == "" {
				p.part = q.part
			}
			if p.nodeGUID == "" {
				p.nodeGUID = q.nodeGUID
			}
			if p.portGUID == "" {
				p.portGUID = q.portGUID
			}
			if !p.hasGID && q.hasGID {
				p.gid, p.hasGID = q.gid, true
			}
		}
		if !found {
			at[key{q.hca, q.port}] = len(ports)
			ports = append(ports, q)
		}
	}
	return ports
}
