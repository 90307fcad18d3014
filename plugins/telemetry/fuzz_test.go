package telemetry

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// seeds adds every real output of testdata/field/telemetry to f, and
// each as sample.sh would tag it, so the fuzzers start from what the
// tools print.
func seeds(f *testing.F, tagged bool) {
	for _, c := range fieldCases(f) {
		f.Add(c.data)
		if tagged {
			sec := map[string]string{"nvidia-smi": secNvsmi, "dcgmi": secDCGM, "amd-smi": secAMD}[c.want.Reader]
			var b strings.Builder
			b.WriteString("n0|begin|gpuaccept-telemetry 1 start=1800000000 interval_ms=1000\n")
			for _, l := range strings.Split(string(c.data), "\n") {
				b.WriteString("n0|" + sec + "|" + l + "\n")
			}
			b.WriteString("n0|xid|[ 5234.181002] NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")
			b.WriteString("n0|replay-end|GPU 00000000:00:06.0\nn0|replay-end|        Replays Since Reset                            : 0\nn0|end|gpuaccept-telemetry: stopped\n")
			f.Add([]byte(b.String()))
		}
	}
}

// summarised checks what a reading becomes: no panic, no NaN in the JSON
// the runner keeps, a series within its bound.
func summarised(t *testing.T, rd Reading) {
	for _, g := range Summarise(rd.Samples) {
		if len(g.Series) > 240 {
			t.Fatalf("GPU %s: %d points", g.GPU, len(g.Series))
		}
		if _, err := json.Marshal(g); err != nil {
			t.Fatalf("GPU %s: %v", g.GPU, err)
		}
	}
}

func FuzzReadNvidiaSMI(f *testing.F) {
	seeds(f, false)
	f.Fuzz(func(t *testing.T, data []byte) {
		rd, err := ReadNvidiaSMI(bytes.NewReader(data), "n0")
		if err != nil {
			t.Fatal(err)
		}
		summarised(t, rd)
	})
}

func FuzzReadDCGM(f *testing.F) {
	seeds(f, false)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, ids := range [][]int{nil, DCGMFields} {
			rd, err := ReadDCGM(bytes.NewReader(data), "n0", ids)
			if err != nil {
				t.Fatal(err)
			}
			summarised(t, rd)
		}
	})
}

func FuzzReadAMDSMI(f *testing.F) {
	seeds(f, false)
	f.Fuzz(func(t *testing.T, data []byte) {
		rd, err := ReadAMDSMI(bytes.NewReader(data), "n0")
		if err != nil {
			t.Fatal(err)
		}
		summarised(t, rd)
	})
}

func FuzzReadLog(f *testing.F) {
	seeds(f, true)
	f.Fuzz(func(t *testing.T, data []byte) {
		tel, _, err := ReadLog(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		// Identities reach results.json only as letters, digits and -_.:.
		for _, g := range tel.GPUs {
			for _, v := range []string{g.Host, g.GPU, g.UUID, g.Serial} {
				if v != "" && !identOK(v) {
					t.Fatalf("identity %q kept", v)
				}
			}
		}
		if _, err := json.Marshal(tel); err != nil {
			t.Fatal(err)
		}
	})
}
