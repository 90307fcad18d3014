package health

import (
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
