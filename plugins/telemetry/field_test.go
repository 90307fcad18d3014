package telemetry

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

const fieldDir = "../../testdata/field/telemetry"

// fieldTelemetry is the telemetry: block of a case.yaml of
// testdata/field/telemetry: what a careful engineer reads of the samples.
type fieldTelemetry struct {
	Reader string `yaml:"reader"`
	// NvsmiHeader is the header of a CSV kept without one (noheader), as
	// the page that shows the CSV gives it.
	NvsmiHeader string `yaml:"nvsmi_header"`
	GPUs        int    `yaml:"gpus"`
	GPU         string `yaml:"gpu"`
	Samples     int    `yaml:"samples"`
	Unparsed    int    `yaml:"unparsed"`
	// The numbers of GPU's summary, where the tool showed them.
	First       *float64       `yaml:"first"`
	SMClockMin  *float64       `yaml:"sm_clock_min"`
	MemClockMin *float64       `yaml:"mem_clock_min"`
	PowerMax    *float64       `yaml:"power_max"`
	PowerLimit  *float64       `yaml:"power_limit"`
	TempMax     *float64       `yaml:"temp_max"`
	MemTempMax  *float64       `yaml:"mem_temp_max"`
	UtilMax     *float64       `yaml:"util_max"`
	PCIe        []int          `yaml:"pcie"`
	Slowdown    map[string]int `yaml:"slowdown"`
	NewErrors   []string       `yaml:"new_errors"`
	// NothingShown says the tool showed no quantity the summary keeps.
	NothingShown bool `yaml:"nothing_shown"`
}

type fieldCaseFile struct {
	Telemetry fieldTelemetry `yaml:"telemetry"`
}

// fieldCases returns every case folder of testdata/field/telemetry with
// its telemetry block and the bytes of its output.
func fieldCases(t testing.TB) map[string]struct {
	want fieldTelemetry
	data []byte
} {
	dirs, err := filepath.Glob(filepath.Join(fieldDir, "*", "case.yaml"))
	assert.NilError(t, err)
	assert.Assert(t, len(dirs) >= 9, "the field corpus of telemetry holds %d cases", len(dirs))
	out := map[string]struct {
		want fieldTelemetry
		data []byte
	}{}
	for _, cf := range dirs {
		raw, err := os.ReadFile(cf)
		assert.NilError(t, err)
		var c fieldCaseFile
		assert.NilError(t, yaml.Unmarshal(raw, &c), cf)
		ents, err := os.ReadDir(filepath.Dir(cf))
		assert.NilError(t, err)
		var data []byte
		for _, e := range ents {
			if e.Name() != "case.yaml" {
				b, err := os.ReadFile(filepath.Join(filepath.Dir(cf), e.Name()))
				assert.NilError(t, err)
				data = append(data, b...)
			}
		}
		out[filepath.Base(filepath.Dir(cf))] = struct {
			want fieldTelemetry
			data []byte
		}{c.Telemetry, data}
	}
	return out
}

func readWith(t *testing.T, reader, header string, data []byte) Reading {
	t.Helper()
	var rd Reading
	var err error
	switch reader {
	case "nvidia-smi":
		rd, err = ReadNvidiaSMIWithHeader(bytes.NewReader(data), "node0", header)
	case "dcgmi":
		rd, err = ReadDCGM(bytes.NewReader(data), "node0", nil)
	case "amd-smi":
		rd, err = ReadAMDSMI(bytes.NewReader(data), "node0")
	default:
		t.Fatalf("reader %q is not nvidia-smi, dcgmi or amd-smi", reader)
	}
	assert.NilError(t, err)
	return rd
}

// TestFieldTelemetry reads every real output of testdata/field/telemetry
// with its tool's reader, and through ReadTool, which must recognise the
// tool, and holds the summary to what the case says a careful engineer
// reads.
func TestFieldTelemetry(t *testing.T) {
	for name, c := range fieldCases(t) {
		t.Run(name, func(t *testing.T) {
			w := c.want
			rd := readWith(t, w.Reader, w.NvsmiHeader, c.data)
			assert.Equal(t, rd.Unparsed, w.Unparsed, "first unparsed: %s", rd.FirstUnparsed)
			gpus := Summarise(rd.Samples)
			assert.Equal(t, len(gpus), w.GPUs)
			if w.NvsmiHeader == "" {
				tool, err := ReadTool(bytes.NewReader(c.data), "node0")
				assert.NilError(t, err)
				assert.DeepEqual(t, tool.GPUs, gpus)
			}
			var g *result.GPUTelemetry
			for i := range gpus {
				if gpus[i].GPU == w.GPU {
					g = &gpus[i]
				}
			}
			assert.Assert(t, g != nil, "no GPU %q among %d", w.GPU, len(gpus))
			assert.Equal(t, g.Tool, w.Reader)
			assert.Equal(t, g.Host, "node0")
			assert.Equal(t, g.Samples, w.Samples)
			near := func(what string, got *result.Range, pick func(result.Range) float64, want *float64) {
				if want == nil {
					return
				}
				assert.Assert(t, got != nil, "%s: not shown, want %v", what, *want)
				assert.Assert(t, math.Abs(pick(*got)-*want) < 1e-9, "%s: %v, want %v", what, pick(*got), *want)
			}
			lo := func(r result.Range) float64 { return r.Min }
			hi := func(r result.Range) float64 { return r.Max }
			near("SM clock min", g.SMClock, lo, w.SMClockMin)
			near("memory clock min", g.MemClock, lo, w.MemClockMin)
			near("power max", g.Power, hi, w.PowerMax)
			near("temperature max", g.Temp, hi, w.TempMax)
			near("HBM temperature max", g.MemTemp, hi, w.MemTempMax)
			near("utilisation max", g.Util, hi, w.UtilMax)
			if w.PowerLimit != nil {
				assert.Equal(t, g.PowerLimit, *w.PowerLimit)
			}
			if w.First != nil {
				assert.Equal(t, g.First, *w.First)
			}
			if w.PCIe != nil {
				assert.DeepEqual(t, []int{g.PCIeGen, g.PCIeWidth}, w.PCIe)
				assert.Assert(t, !g.PCIeDowngraded)
			}
			if w.Slowdown != nil {
				got := g.Slowdown
				if got == nil {
					got = map[string]int{}
				}
				assert.DeepEqual(t, got, w.Slowdown)
			}
			assert.DeepEqual(t, g.NewErrors, w.NewErrors)
			if w.NothingShown {
				for what, r := range map[string]*result.Range{"SM clock": g.SMClock, "memory clock": g.MemClock, "power": g.Power, "temperature": g.Temp, "HBM temperature": g.MemTemp, "utilisation": g.Util} {
					assert.Assert(t, r == nil, "%s shown: %+v", what, r)
				}
			}
			assert.Assert(t, len(g.Series) >= 1 && len(g.Series) <= result.MaxTelemetryPoints)
		})
	}
}

// The bits of NVML's clock event reasons that count as slowdowns, and
// those that do not (nvml.h; DCGM's DCGM_CLOCKS_EVENT_REASON_* mirror
// them): idle 0x1, application clocks 0x2, sync boost 0x10 and display
// clocks 0x100 are not.
func TestSlowdowns(t *testing.T) {
	for _, c := range []struct {
		mask uint64
		want string
	}{
		{0x0, ""},
		{0x1, ""},
		{0x2, ""},
		{0x10, ""},
		{0x100, ""},
		{0x4, "sw_power_cap"},
		{0x8, "hw_slowdown"},
		{0x20, "sw_thermal_slowdown"},
		{0x40, "hw_thermal_slowdown"},
		{0x80, "hw_power_brake_slowdown"},
		{0x1 | 0x4 | 0x48, "sw_power_cap+hw_slowdown+hw_thermal_slowdown"},
	} {
		assert.Equal(t, strings.Join(Slowdowns(c.mask), "+"), c.want, "mask %#x", c.mask)
	}
}

// One cell of each kind nvidia-smi prints, as its --help-query-gpu
// describes them: a value with or without its unit, the not-shown
// spellings, the reasons bitmask in hex and the per-reason words.
func TestNvsmiCells(t *testing.T) {
	for _, c := range []struct {
		field, cell string
		ok          bool
		check       func(Sample) bool
	}{
		{"clocks.sm", "1980 MHz", true, func(s Sample) bool { return s.SMClock == 1980 }},
		{"clocks.current.sm", "1980", true, func(s Sample) bool { return s.SMClock == 1980 }},
		{"power.draw", "[N/A]", true, func(s Sample) bool { return math.IsNaN(s.Power) }},
		{"power.draw", "[Not Supported]", true, func(s Sample) bool { return math.IsNaN(s.Power) }},
		{"power.draw", "ERR!", false, nil},
		{"utilization.gpu", "83 %", true, func(s Sample) bool { return s.Util == 83 }},
		{"clocks_event_reasons.active", "0x0000000000000048", true, func(s Sample) bool { return s.HasReasons && s.Reasons == 0x48 }},
		{"clocks_throttle_reasons.active", "0x0000000000000001", true, func(s Sample) bool { return s.Reasons == 0x1 }},
		{"clocks_event_reasons.hw_slowdown", "Active", true, func(s Sample) bool { return s.Reasons == 0x8 }},
		{"clocks_throttle_reasons.sw_power_cap", "Not Active", true, func(s Sample) bool { return s.HasReasons && s.Reasons == 0 }},
		{"clocks_event_reasons.hw_slowdown", "[N/A]", true, func(s Sample) bool { return !s.HasReasons }},
		{"timestamp", "2026/12/08 00:31:02.123", true, func(s Sample) bool { return s.T == 1796689862.123 }},
		{"timestamp", "Tue Dec  8 00:31:02 2026", false, nil},
		{"ecc.errors.uncorrected.volatile.total", "[N/A]", true, func(s Sample) bool { return s.ECCUncorrected == -1 }},
		{"ecc.errors.uncorrected.volatile.total", "2", true, func(s Sample) bool { return s.ECCUncorrected == 2 }},
		{"pcie.link.width.current", "16", true, func(s Sample) bool { return s.PCIeWidth == 16 }},
	} {
		s := newSample("n", "nvidia-smi")
		ok := nvsmiColumn[c.field](&s, c.cell)
		assert.Equal(t, ok, c.ok, "%s %q", c.field, c.cell)
		if c.check != nil {
			assert.Assert(t, c.check(s), "%s %q: %+v", c.field, c.cell, s)
		}
	}
}
