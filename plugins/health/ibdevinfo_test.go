package health

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// field is the field corpus of health.node: real outputs, each with its
// source in its case.yaml.
const field = "../../testdata/field/health/"

// fileSection reads a file as Parse reads a tool's own output.
func fileSection(t *testing.T, path string) *section {
	t.Helper()
	b, err := os.ReadFile(path)
	assert.NilError(t, err)
	return sectionOf(b)
}

// writeTemp writes text to a file of its own and returns the path.
func writeTemp(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	assert.NilError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

// The ports of real ibv_devinfo (plain and -v) and ibstatus outputs, as
// judgeIB sees them: the state in ibstat's words, the physical state,
// width, lane speed and the rate they make, the model.
func TestIBDevinfoPorts(t *testing.T) {
	type port struct {
		HCA                    string
		Port                   int
		State, Phys, Layer, Pt string
		Width                  int
		Lane, Rate             float64
	}
	cases := []struct {
		file string
		want []port
	}{
		{field + "ibv-devinfo-mlx4-port2-down/ibv_devinfo.txt", []port{
			{"mlx4_1", 1, "ACTIVE", "", "InfiniBand", "4099", 0, 0, -1},
			{"mlx4_1", 2, "DOWN", "", "InfiniBand", "4099", 0, 0, -1},
			{"mlx4_0", 1, "ACTIVE", "", "InfiniBand", "4099", 0, 0, -1},
			{"mlx4_0", 2, "DOWN", "", "InfiniBand", "4099", 0, 0, -1},
		}},
		// -v: an untrained port reports 4X at SDR's 2.5 Gb/s.
		{field + "ibv-devinfo-v-port2-polling/ibv_devinfo-v.txt", []port{
			{"mlx4_1", 2, "DOWN", "POLLING", "InfiniBand", "4099", 4, 2.5, 10},
		}},
		{field + "ibstatus-mlx4-fdr-active/ibstatus.txt", []port{
			{"mlx4_0", 1, "ACTIVE", "LinkUp", "InfiniBand", "", 4, 0, 56},
			{"mlx4_0", 2, "ACTIVE", "LinkUp", "InfiniBand", "", 4, 0, 56},
		}},
		{field + "ibstatus-hdr-mlx5_1-down/ibstatus.txt", []port{
			{"mlx5_0", 1, "ACTIVE", "LinkUp", "InfiniBand", "", 4, 0, 200},
			{"mlx5_1", 1, "DOWN", "Disabled", "InfiniBand", "", 4, 0, 10},
		}},
	}
	for _, c := range cases {
		t.Run(filepath.Base(filepath.Dir(c.file)), func(t *testing.T) {
			ports, notes := parseIBDevinfo(fileSection(t, c.file))
			assert.Equal(t, len(notes), 0)
			var got []port
			for _, p := range ports {
				got = append(got, port{p.hca, p.port, p.state, p.phys, p.linkLayer, p.part, p.width, p.lane, p.rate})
			}
			assert.DeepEqual(t, got, c.want)
		})
	}
}

// The four tools name a port's state in their own words; each becomes
// the word judgeIB tests, so one port gives one verdict whichever tool
// printed it (ibstat's State, ibv_devinfo's state, ibstatus's state,
// sysfs's state file).
func TestIBStateWords(t *testing.T) {
	cases := []struct {
		ibstat, devinfo, ibstatus, sysfs string
		want                             string
	}{
		{"Active", "PORT_ACTIVE (4)", "4: ACTIVE", "4: ACTIVE", "ACTIVE"},
		{"Down", "PORT_DOWN (1)", "1: DOWN", "1: DOWN", "DOWN"},
		{"Armed", "PORT_ARMED (3)", "3: ARMED", "3: ARMED", "ARMED"},
	}
	for _, c := range cases {
		st, _ := parseIBStat(sectionOf([]byte("CA 'mlx5_0'\n\tPort 1:\n\t\tState: " + c.ibstat + "\n")))
		dv, _ := parseIBDevinfo(sectionOf([]byte("hca_id:\tmlx5_0\n\t\tport:\t1\n\t\t\tstate:\t\t\t" + c.devinfo + "\n")))
		is, _ := parseIBDevinfo(sectionOf([]byte("Infiniband device 'mlx5_0' port 1 status:\n\tstate:\t\t " + c.ibstatus + "\n")))
		sy := parseIBSysfs(sectionOf([]byte("mlx5_0 1 state " + c.sysfs + "\n")))
		for _, ps := range [][]ibPort{st, dv, is, sy} {
			assert.Equal(t, len(ps), 1)
			assert.Equal(t, ps[0].state, c.want)
		}
	}
	// ibstat says "Initializing", the others "INIT": both are not ACTIVE.
	st, _ := parseIBStat(sectionOf([]byte("CA 'mlx5_0'\n\tPort 1:\n\t\tState: Initializing\n")))
	dv, _ := parseIBDevinfo(sectionOf([]byte("hca_id:\tmlx5_0\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_INIT (2)\n")))
	for _, ps := range [][]ibPort{st, dv} {
		var p result.Parsed
		judgeIB(checks{&p, ""}, node{ports: ps, ibSeen: true}, settings{})
		assert.Equal(t, failed(p)["IB port state"].Code, "GA-IB-PORT-DOWN")
	}
}

// Width and speed: the real H100 node's /sys/class/infiniband (eight
// MT4129 NDR ports at 400 Gb/s "4X NDR", a MT41692 RoCE bond at 200 "2X
// NDR") holds; degraded copies, each one edit of one port's rate file,
// fail naming the port. The RoCE bond's 2X is Ethernet's and not judged.
func TestIBLinkWidthAndSpeed(t *testing.T) {
	root := "testdata/gpud/sys-class-infiniband-h100.0"
	read := func(edit map[string]string) *section {
		hcas, err := os.ReadDir(root)
		assert.NilError(t, err)
		s := &section{name: "ib-sysfs", file: "sysfs"}
		for _, h := range hcas {
			for _, f := range []string{"state", "rate", "link_layer", "hca_type"} {
				p := filepath.Join(root, h.Name(), "ports", "1", f)
				if f == "hca_type" {
					p = filepath.Join(root, h.Name(), f)
				}
				b, err := os.ReadFile(p)
				assert.NilError(t, err)
				v := strings.TrimSpace(string(b))
				if e, ok := edit[h.Name()+" "+f]; ok {
					v = e
				}
				s.lines = append(s.lines, line{h.Name() + " 1 " + f + " " + v, len(s.lines) + 1})
			}
		}
		return s
	}
	cases := []struct {
		name string
		edit map[string]string
		want verdict
	}{
		{"real", nil, verdict{true, "", "8 active InfiniBand ports: none at 1X, none narrower or slower than the other ports of its HCA model"}},
		{"one port at HDR", map[string]string{"mlx5_5 rate": "200 Gb/sec (4X HDR)"}, verdict{false, "GA-IB-RATE", "mlx5_5 port 1 at 200 Gb/s, 7 other MT4129 ports at 400 Gb/s (a lane down or a slower cable or transceiver)"}},
		{"one port at 2X", map[string]string{"mlx5_5 rate": "200 Gb/sec (2X NDR)"}, verdict{false, "GA-IB-RATE", "mlx5_5 port 1 runs 2X, other MT4129 ports 4X, at 200 Gb/s, 7 other MT4129 ports at 400 Gb/s (a lane down or a slower cable or transceiver)"}},
		{"one port at 1X", map[string]string{"mlx5_0 rate": "100 Gb/sec (1X NDR)"}, verdict{false, "GA-IB-RATE", "mlx5_0 port 1 runs 1X (one lane of four), at 100 Gb/s, 7 other MT4129 ports at 400 Gb/s (a lane down or a slower cable or transceiver)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p result.Parsed
			judgeIB(checks{&p, ""}, node{ports: parseIBSysfs(read(c.edit)), ibSeen: true}, settings{})
			assert.DeepEqual(t, checksOf(p)["IB link"], c.want)
			assert.Equal(t, checksOf(p)["IB port state"].OK, true)
		})
	}
}

// A port at 1X fails whatever tool showed it and whether its model is
// known: a degraded copy of the real ibstatus output of a ConnectX-3
// (mlx4_0 port 2's "56 Gb/sec (4X FDR)" made "14 Gb/sec (1X FDR)").
func TestIBLink1XFromIbstatus(t *testing.T) {
	b, err := os.ReadFile(field + "ibstatus-mlx4-fdr-active/ibstatus.txt")
	assert.NilError(t, err)
	text := string(b)
	i := strings.LastIndex(text, "56 Gb/sec (4X FDR)")
	text = text[:i] + "14 Gb/sec (1X FDR)" + text[i+len("56 Gb/sec (4X FDR)"):]
	p := parse(t, nil, 1, 8, writeTemp(t, "ibstatus.txt", text))
	assert.Equal(t, p.Error, "")
	assert.DeepEqual(t, checksOf(p)["IB link"], verdict{false, "GA-IB-RATE", "mlx4_0 port 2 runs 1X (one lane of four) (a lane down or a slower cable or transceiver)"})
}

// People paste ibstat and ibv_devinfo into one file: both are read and a
// port both list is one port. Here the real ibstat of a ConnectX-3 node
// (testdata/ib/README.md: every port Active) is followed by the real
// ibv_devinfo of the same kind of node (port 2 of each HCA PORT_DOWN):
// the worse state wins, so the file fails naming both ports, and is no
// more than four ports.
func TestIBStatAndDevinfoPasted(t *testing.T) {
	st, err := os.ReadFile("testdata/ib/heioy-ibstat-mlx4.txt")
	assert.NilError(t, err)
	dv, err := os.ReadFile(field + "ibv-devinfo-mlx4-port2-down/ibv_devinfo.txt")
	assert.NilError(t, err)
	// In either order, ibstat's ports come first (its reader runs first).
	for _, text := range []string{string(st) + "\n" + string(dv), string(dv) + "\n" + string(st)} {
		p := parse(t, nil, 1, 8, writeTemp(t, "ib.txt", text))
		assert.Equal(t, p.Error, "")
		assert.DeepEqual(t, checksOf(p)["IB port state"], verdict{false, "GA-IB-PORT-DOWN", "mlx4_0 port 2 is DOWN; mlx4_1 port 2 is DOWN"})
	}
	ports, _ := parseIBStat(sectionOf(append(append(st, '\n'), dv...)))
	more, _ := parseIBDevinfo(sectionOf(append(append(st, '\n'), dv...)))
	assert.Equal(t, len(mergeIB(ports, more)), 4)
	// ibstat alone: every port Active.
	p := parse(t, nil, 1, 8, "testdata/ib/heioy-ibstat-mlx4.txt")
	assert.DeepEqual(t, checksOf(p)["IB port state"], verdict{true, "", "4 ports ACTIVE"})
	assert.DeepEqual(t, checksOf(p)["IB link"], verdict{true, "", "4 active InfiniBand ports: none at 1X, none narrower or slower than the other ports of its HCA model"})
}

// Pasted from a terminal or kubectl logs: a shell prompt, blank lines
// and kubectl's --timestamps prefix before every line change nothing.
// Degraded copies of the real ibv_devinfo -v output.
func TestIBDevinfoPasted(t *testing.T) {
	b, err := os.ReadFile(field + "ibv-devinfo-v-port2-polling/ibv_devinfo-v.txt")
	assert.NilError(t, err)
	var stamped strings.Builder
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if l != "" {
			stamped.WriteString("2026-03-01T10:00:00.123456789Z " + l)
		}
	}
	for name, text := range map[string]string{
		"prompt and blanks": "user@node:~$ ibv_devinfo -d mlx4_1 -i 2 -v\n\n\n" + string(b),
		"kubectl":           stamped.String(),
		"CRLF":              strings.ReplaceAll(string(b), "\n", "\r\n"),
	} {
		t.Run(name, func(t *testing.T) {
			p := parse(t, nil, 1, 8, writeTemp(t, "devinfo.txt", text))
			assert.Equal(t, p.Error, "")
			assert.DeepEqual(t, checksOf(p)["IB port state"], verdict{false, "GA-IB-PORT-DOWN", "mlx4_1 port 2 is DOWN (physical state POLLING)"})
		})
	}
}

// An ibv_devinfo output cut after its first line lists no port: an
// error, never a pass.
func TestIBDevinfoNoPort(t *testing.T) {
	p := parse(t, nil, 1, 8, writeTemp(t, "devinfo.txt", "hca_id:\tmlx5_0\n"))
	assert.Assert(t, strings.Contains(p.Error, "no InfiniBand port could be read"), p.Error)
}
