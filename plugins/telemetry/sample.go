package telemetry

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// Sample is one reading of one GPU by one tool. Quantities a tool did
// not show ("[N/A]", "[Not Supported]", a column it does not print) are
// NaN; counters it did not show are -1.
type Sample struct {
	// Host is the node, GPU the tool's index ("0".."7"), Tool the sampler
	// ("nvidia-smi", "dcgmi", "amd-smi").
	Host, GPU, Tool string
	// UUID, Serial and BusID identify the GPU where the tool shows them;
	// BusID is the PCI address as the tool prints it ("00000000:3B:00.0").
	// Each is letters, digits and -_.: only: a value with other bytes is
	// dropped (Reading.Refused).
	UUID, Serial, BusID string
	// refused names the identity column dropped from this sample, if any.
	refused string
	// T is the sample's time, Unix seconds (0: the tool printed none and
	// the sampler's start time was not known).
	T float64
	// SMClock and MemClock in MHz, Power and PowerLimit in W, Temp (GPU)
	// and MemTemp (HBM) in degrees C, Util in percent.
	SMClock, MemClock, Power, PowerLimit, Temp, MemTemp, Util float64
	// Reasons is the clock event (throttle) reasons bitmask of NVML
	// (nvmlClocksEventReason*), HasReasons whether the tool showed it.
	Reasons    uint64
	HasReasons bool
	// ECCCorrected and ECCUncorrected are the volatile ECC error counts,
	// Replays the PCIe replay count (-1: not shown).
	ECCCorrected, ECCUncorrected, Replays int64
	// PCIeGen and PCIeWidth are the link's current generation and width,
	// PCIeGenMax and PCIeWidthMax its maximum (0: not shown).
	PCIeGen, PCIeWidth, PCIeGenMax, PCIeWidthMax int
}

// newSample returns a sample of host's GPU by tool with nothing shown.
func newSample(host, tool string) Sample {
	n := math.NaN()
	return Sample{Host: host, Tool: tool, SMClock: n, MemClock: n, Power: n, PowerLimit: n, Temp: n, MemTemp: n, Util: n,
		ECCCorrected: -1, ECCUncorrected: -1, Replays: -1}
}

// Reading is what one reader made of one tool's output.
type Reading struct {
	// Samples are the samples read, in the output's order.
	Samples []Sample
	// Unparsed counts the lines that looked like samples but could not be
	// read; FirstUnparsed says which was first and why ("line 12: 5
	// values under 7 columns").
	Unparsed      int
	FirstUnparsed string
	// Refused counts the identity values (uuid, serial, PCI address) that
	// were not letters, digits and -_.: and were dropped from their
	// samples; FirstRefused says which was first ("line 3: uuid"), without
	// the value.
	Refused      int
	FirstRefused string
	// Dropped counts the samples past the first maxSamples, not kept.
	Dropped int
	// ids holds one copy of each identity string, so that a sample does
	// not keep the whole line it was cut from.
	ids map[string]string
	// Before is the first line the tool printed before any header (an
	// error such as "Error setting watches", a pasted prompt): shown when
	// no sample was read.
	Before string
}

func (r *Reading) before(line string) {
	if r.Before == "" {
		r.Before = strings.TrimSpace(line)
	}
}

// maxSamples bounds the samples one reading keeps (a Sample is about
// 230 bytes): 2^20 is 8 GPUs at 1 Hz for 36 h. Those past it are counted
// in Dropped and said in a note, not held. A variable for its test.
var maxSamples = 1 << 20

// add keeps s, its identity strings shared with the samples before it.
func (r *Reading) add(s Sample) {
	if len(r.Samples) >= maxSamples {
		r.Dropped++
		return
	}
	if r.ids == nil {
		r.ids = map[string]string{}
	}
	for _, p := range []*string{&s.GPU, &s.UUID, &s.Serial, &s.BusID} {
		if *p == "" {
			continue
		}
		if v, ok := r.ids[*p]; ok {
			*p = v
		} else if len(r.ids) < 4096 {
			*p = strings.Clone(*p)
			r.ids[*p] = *p
		} else {
			*p = strings.Clone(*p)
		}
	}
	r.Samples = append(r.Samples, s)
}

func (r *Reading) refuse(no int, what string) {
	r.Refused++
	if r.FirstRefused == "" {
		r.FirstRefused = fmt.Sprintf("line %d: %s not letters, digits and -_.:", no, what)
	}
}

// gpuIndex reads a tool's GPU index: a non-negative whole number, blanks
// around it trimmed ("timestamp, index" prints " 0"), given back in its
// plain form ("0", not "00" or "+0") so that every tool's "0" joins.
func gpuIndex(v string) (string, bool) {
	v = strings.TrimSpace(v)
	if v == "" || strings.Trim(v, "0123456789") != "" || len(v) > 9 {
		return "", false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return "", false
	}
	return strconv.Itoa(n), true
}

func (r *Reading) bad(no int, why string) {
	r.Unparsed++
	if r.FirstUnparsed == "" {
		r.FirstUnparsed = fmt.Sprintf("line %d: %s", no, why)
	}
}

// Slowdown reasons of NVML's clock event reasons bitmask that count as a
// slowdown, by bit. Source: nvml.h's nvmlClocksEventReason* (formerly
// nvmlClocksThrottleReason*), mirrored 1:1 by DCGM's
// DCGM_CLOCKS_EVENT_REASON_* ("a 1:1 map to the NVML reasons documented in
// nvml.h"): https://docs.nvidia.com/datacenter/dcgm/2.0/dcgm-api/group__dcgmFieldConstants.html
// and https://docs.nvidia.com/datacenter/dcgm/latest/dcgm-api/dcgm-api-field-constants.html.
// 0x1 GpuIdle, 0x2 ApplicationsClocksSetting, 0x10 SyncBoost and 0x100
// DisplayClockSetting say why clocks are where they are, not that the GPU
// was held back against its load: they are not counted.
var slowdownBits = []struct {
	bit  uint64
	name string
}{
	{0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"},
	{0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"},
	{0x80, "hw_power_brake_slowdown"},
}

// Slowdowns returns the slowdown reasons set in an NVML clock event
// reasons bitmask, in bit order ("sw_power_cap", "hw_slowdown",
// "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown");
// nil for none.
func Slowdowns(mask uint64) []string {
	var out []string
	for _, b := range slowdownBits {
		if mask&b.bit != 0 {
			out = append(out, b.name)
		}
	}
	return out
}

// busyUtil is the GPU utilisation, in percent, from which a sample counts
// as busy for the PCIe check: an idle GPU may lower its link's generation
// to save power (ASPM), which is no fault.
const busyUtil = 10

// Summarise turns samples of any tools and hosts into one GPUTelemetry per
// host and GPU, sorted by host then index: ranges (min, median, max) of
// each quantity shown, slowdown counts, the PCIe link, the errors that
// appeared between the first and the last sample, and a series of at most
// result.MaxTelemetryPoints points, each the worst of the samples it
// stands for.
func Summarise(samples []Sample) []result.GPUTelemetry {
	type key struct{ host, gpu string }
	groups := map[key][]Sample{}
	var keys []key
	for _, s := range samples {
		k := key{s.Host, s.GPU}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], s)
	}
	sort.SliceStable(keys, func(i, j int) bool {
		if keys[i].host != keys[j].host {
			return keys[i].host < keys[j].host
		}
		return lessIndex(keys[i].gpu, keys[j].gpu)
	})
	out := make([]result.GPUTelemetry, 0, len(keys))
	for _, k := range keys {
		out = append(out, summariseGPU(groups[k]))
	}
	return out
}

// lessIndex orders GPU indexes as numbers where both are.
func lessIndex(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return x < y
	}
	return a < b
}

func summariseGPU(ss []Sample) result.GPUTelemetry {
	g := result.GPUTelemetry{Host: ss[0].Host, GPU: ss[0].GPU, Tool: ss[0].Tool, Samples: len(ss)}
	pick := func(f func(Sample) float64) *result.Range {
		var v []float64
		for _, s := range ss {
			if x := f(s); !math.IsNaN(x) {
				v = append(v, x)
			}
		}
		return rangeOf(v)
	}
	g.SMClock = pick(func(s Sample) float64 { return s.SMClock })
	g.MemClock = pick(func(s Sample) float64 { return s.MemClock })
	g.Power = pick(func(s Sample) float64 { return s.Power })
	g.Temp = pick(func(s Sample) float64 { return s.Temp })
	g.MemTemp = pick(func(s Sample) float64 { return s.MemTemp })
	g.Util = pick(func(s Sample) float64 { return s.Util })
	var firstECC, lastECC [2]int64
	firstECC, lastECC = [2]int64{-1, -1}, [2]int64{-1, -1}
	firstReplay, lastReplay := int64(-1), int64(-1)
	for _, s := range ss {
		if s.UUID != "" {
			g.UUID = s.UUID
		}
		if s.Serial != "" {
			g.Serial = s.Serial
		}
		if s.T > 0 {
			if g.First == 0 || s.T < g.First {
				g.First = s.T
			}
			if s.T > g.Last {
				g.Last = s.T
			}
		}
		if !math.IsNaN(s.PowerLimit) {
			g.PowerLimit = s.PowerLimit
		}
		if s.HasReasons {
			for _, r := range Slowdowns(s.Reasons) {
				if g.Slowdown == nil {
					g.Slowdown = map[string]int{}
				}
				g.Slowdown[r]++
			}
		}
		if s.PCIeGen > 0 {
			g.PCIeGen = s.PCIeGen
		}
		if s.PCIeWidth > 0 {
			g.PCIeWidth = s.PCIeWidth
		}
		if !math.IsNaN(s.Util) && s.Util >= busyUtil &&
			(s.PCIeGen > 0 && s.PCIeGenMax > 0 && s.PCIeGen < s.PCIeGenMax || s.PCIeWidth > 0 && s.PCIeWidthMax > 0 && s.PCIeWidth < s.PCIeWidthMax) {
			g.PCIeDowngraded = true
		}
		for i, c := range [2]int64{s.ECCCorrected, s.ECCUncorrected} {
			if c >= 0 {
				if firstECC[i] < 0 {
					firstECC[i] = c
				}
				lastECC[i] = c
			}
		}
		if s.Replays >= 0 {
			if firstReplay < 0 {
				firstReplay = s.Replays
			}
			lastReplay = s.Replays
		}
	}
	for i, what := range [2]string{"corrected", "uncorrected"} {
		if lastECC[i] > firstECC[i] {
			g.NewErrors = append(g.NewErrors, fmt.Sprintf("volatile %s ECC errors rose from %d to %d", what, firstECC[i], lastECC[i]))
		}
	}
	if lastReplay > firstReplay {
		g.NewErrors = append(g.NewErrors, fmt.Sprintf("PCIe replays rose from %d to %d", firstReplay, lastReplay))
	}
	g.Series = series(ss)
	return g
}

// rangeOf returns min, median (the mean of the middle two of an even
// count) and max of v; nil for none.
func rangeOf(v []float64) *result.Range {
	if len(v) == 0 {
		return nil
	}
	s := slices.Clone(v)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return &result.Range{Min: s[0], Median: med, Max: s[len(s)-1]}
}

// series downsamples ss to at most result.MaxTelemetryPoints points: each
// point stands for a bucket of consecutive samples, at the bucket's first
// time, with its worst values: the lowest clocks and utilisation, the
// highest power and temperatures, every slowdown reason seen.
func series(ss []Sample) []result.TelemetryPoint {
	per := (len(ss) + result.MaxTelemetryPoints - 1) / result.MaxTelemetryPoints
	if per < 1 {
		per = 1
	}
	var out []result.TelemetryPoint
	for i := 0; i < len(ss); i += per {
		b := ss[i:min(i+per, len(ss))]
		p := result.TelemetryPoint{T: b[0].T}
		reasons := map[string]bool{}
		low := func(cur *float64, x float64) {
			if !math.IsNaN(x) && (*cur == 0 || x < *cur) {
				*cur = x
			}
		}
		high := func(cur *float64, x float64) {
			if !math.IsNaN(x) && x > *cur {
				*cur = x
			}
		}
		utilSet := false
		for _, s := range b {
			low(&p.SMClock, s.SMClock)
			low(&p.MemClock, s.MemClock)
			high(&p.Power, s.Power)
			high(&p.Temp, s.Temp)
			high(&p.MemTemp, s.MemTemp)
			if !math.IsNaN(s.Util) && (!utilSet || s.Util < p.Util) {
				p.Util, utilSet = s.Util, true
			}
			if s.HasReasons {
				for _, r := range Slowdowns(s.Reasons) {
					reasons[r] = true
				}
			}
		}
		var rs []string
		for _, b := range slowdownBits {
			if reasons[b.name] {
				rs = append(rs, b.name)
			}
		}
		p.Slowdown = strings.Join(rs, "+")
		out = append(out, p)
	}
	return out
}
