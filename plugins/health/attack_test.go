package health

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// attack holds real outputs with named edits (testdata/attack/README.md)
// that a reader once misjudged.
const attack = "testdata/attack/"

// warnings are p's warning diagnostics, joined.
func warnings(p result.Parsed) string {
	var w []string
	for _, d := range p.Diagnostics {
		if d.Level == result.Warning {
			w = append(w, d.Source+": "+d.Message)
		}
	}
	return strings.Join(w, "\n")
}

// TestPasteOfSeveralCommands: a file of several commands' outputs, each
// after its prompt line, is read part by part: a fault any part shows
// fails, a part no reader knows is a warning naming its line.
func TestPasteOfSeveralCommands(t *testing.T) {
	for _, tc := range []struct {
		file string
		fail map[string]string // check -> code
		pass []string          // checks that must be there and hold
		warn string            // in a warning
	}{
		// -q text, then dmesg's Xid 79 and "fallen off the bus": passed
		// when the file was sniffed once as -q text.
		{"paste_combo.txt", map[string]string{"XID": "GA-GPU-OFFBUS", "GPU lost": "GA-GPU-OFFBUS"}, []string{"GPU count", "uncorrected ECC"}, ""},
		// -q twice, the second with 5 uncorrected errors: one GPU, the
		// worse count.
		{"paste_q_twice.txt", map[string]string{"uncorrected ECC": "GA-GPU-ECC-UNCORR"}, []string{"GPU count"}, ""},
		// -q, then nvidia-smi topo -m, which health.node does not read.
		{"paste_topo.txt", nil, []string{"GPU count", "uncorrected ECC"}, `paste_topo.txt:259: the output of "root@node7:~# nvidia-smi topo -m" (lines 260-`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p := parse(t, nil, 1, 1, attack+tc.file)
			assert.Equal(t, p.Error, "")
			f := failed(p)
			for name, code := range tc.fail {
				c, ok := f[name]
				assert.Assert(t, ok && !c.Warn, "%s not failed: %+v", name, p.Checks)
				assert.Equal(t, c.Code, code)
			}
			for _, name := range tc.pass {
				found := false
				for _, c := range p.Checks {
					found = found || c.Name == name && c.OK
				}
				assert.Assert(t, found, "%s not made and held: %+v", name, p.Checks)
			}
			if tc.fail == nil {
				assert.Equal(t, len(f), 0, "%+v", f)
			}
			if tc.warn != "" {
				assert.Assert(t, strings.Contains(warnings(p), tc.warn), "warnings: %s", warnings(p))
			}
		})
	}
}

// TestSMITextIndentationLost: -q text whose leading blanks a paste
// stripped is read by its known headers to the same checks as the
// indented text; where a section's values still cannot be read, a
// warning names the GPU and what was not read.
func TestSMITextIndentationLost(t *testing.T) {
	indented := parse(t, nil, 1, 1, attack+"q_ecc.txt")
	for _, tc := range []struct {
		file string
		same bool   // the same checks as q_ecc.txt
		warn string // in a warning
	}{
		{"q_ecc_flat.txt", true, ""},
		{"q_ecc_flat_nobanner.txt", true, ""},
		{"q_ecc_section_flat.txt", false, "GPU 0 (00000000:00:06.0): the nvidia-smi -q text prints ECC error counters (ECC Errors), remapped rows (Remapped Rows), but no value under it was read"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p := parse(t, nil, 1, 1, attack+tc.file)
			assert.Equal(t, p.Error, "")
			if tc.same {
				assert.Equal(t, len(p.Checks), len(indented.Checks))
				for i := range p.Checks {
					assert.Equal(t, p.Checks[i].Name, indented.Checks[i].Name)
					assert.Equal(t, p.Checks[i].OK, indented.Checks[i].OK)
					assert.Equal(t, p.Checks[i].Message, indented.Checks[i].Message)
				}
				assert.Equal(t, failed(p)["uncorrected ECC"].Code, "GA-GPU-ECC-UNCORR")
			}
			if tc.warn != "" {
				assert.Assert(t, strings.Contains(warnings(p), tc.warn), "warnings: %s", warnings(p))
			}
		})
	}
}

// taggedNode is the H100 recording's collect.sh log of one node under
// host (its "vm" renamed), with extra lines of sections added before
// its end line.
func taggedNode(t *testing.T, host string, extra []string) string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(readFile(t, h100Node), "\n"), "\n") {
		l = host + strings.TrimPrefix(l, "vm")
		if strings.HasSuffix(l, "|end|@end") {
			out = append(out, extra...)
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n") + "\n"
}

// h100Node is a real collect.sh log of one H100 node (recorded on the
// H100 machine, issue 28).
const h100Node = "../../testdata/recordings/h100x1-2026-12-07/issue28/node-2/raw/health.node/node.log"

// TestNodeOfTooManyIBPortsIsItsError: one node listing thousands of IB
// ports (the real ConnectX-3 ibstat repeated under new HCA names) is an
// error naming that node (read in linear time: BenchmarkIBParse), and another node's XID
// still fails it; a node of real size is judged as before.
func TestNodeOfTooManyIBPortsIsItsError(t *testing.T) {
	ibstat := strings.Split(strings.TrimSuffix(readFile(t, "testdata/ib/heioy-ibstat-mlx4.txt"), "\n"), "\n")[1:]
	xid := []string{"bad|kernel-log|[ 8123.4] NVRM: Xid (PCI:0000:00:06.0): 79, pid=1, GPU has fallen off the bus."}
	for _, tc := range []struct {
		name   string
		copies int    // copies of the 2-HCA, 4-port ibstat on node evil
		err    string // in the parse error; "" none
	}{
		{"real size", 1, ""},
		{"past the cap", 1000, "node evil: over 1024 InfiniBand/RoCE ports listed (a real node has tens): its ports are not judged"},
		{"far past the cap", 5000, "node evil: over 1024 InfiniBand/RoCE ports listed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ib []string
			for i := range tc.copies {
				for _, l := range ibstat {
					ib = append(ib, "evil|ibstat|"+strings.ReplaceAll(l, "'mlx4_", fmt.Sprintf("'x%d_", i)))
				}
			}
			log := filepath.Join(t.TempDir(), "tagged.log")
			assert.NilError(t, os.WriteFile(log, []byte(taggedNode(t, "bad", xid)+taggedNode(t, "evil", ib)), 0o644))
			p := parse(t, map[string]string{"gpus": "1"}, 2, 1, log)
			if tc.err == "" {
				assert.Equal(t, p.Error, "")
			} else {
				assert.Assert(t, strings.Contains(p.Error, tc.err), "error: %s", p.Error)
			}
			c, ok := failed(p)["XID"]
			assert.Assert(t, ok && c.Host == "bad" && c.Code == "GA-GPU-OFFBUS", "%+v", p.Checks)
			judged := false
			for _, c := range p.Checks {
				judged = judged || c.Host == "evil" && c.Name == "IB port state"
			}
			assert.Equal(t, judged, tc.err == "", "evil's ports judged: %v; %+v", judged, p.Checks)
		})
	}
}

// TestLostGPUAddressNotRead: a kernel line with the driver's words of a
// lost GPU in a form the address patterns do not read fails all the
// same, naming the line.
func TestLostGPUAddressNotRead(t *testing.T) {
	for _, tc := range []struct {
		file, code, msg string
	}{
		{"offbus_attacker.txt", "GA-GPU-OFFBUS", "a GPU: has fallen off the bus (address not read): [ 1.0] NVRM: GPU at PCI:0000:3b:00: GPU has fallen off the bus. (offbus_attacker.txt:1)"},
		{"offbus_no_function.txt", "GA-GPU-OFFBUS", "has fallen off the bus (address not read): [   49.261458] NVRM: GPU at 0000:01:00 has fallen off the bus."},
		{"rminit_no_address.txt", "GA-GPU-INIT", "RmInitAdapter failed (address not read): [  903.610907] NVRM: RmInitAdapter failed! (0x62:0x65:1792)"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p := parse(t, map[string]string{"gpus": "0"}, 1, 1, attack+tc.file)
			c, ok := failed(p)["GPU lost"]
			assert.Assert(t, ok && !c.Warn, "%+v", p.Checks)
			assert.Equal(t, c.Code, tc.code)
			assert.Assert(t, strings.Contains(c.Message, tc.msg), "%s", c.Message)
		})
	}
}
