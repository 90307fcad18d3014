package judge

// This file: a slow or failed number explained by what its GPU did while
// it was measured (the telemetry sampled beside the test, issue 33).

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// SlowClockShare is how far under the fastest GPU's median SM clock of the
// same test a GPU's median may run before its clock is named as the
// reason of its slow number: boost clocks of healthy GPUs of one model
// under the same load differ by a few percent (the H100 recordings of
// testdata/recordings/h100x1-2026-12-07: 1755-1980 MHz under matmul),
// a power-capped or thermally throttled one by tens of percent.
const SlowClockShare = 0.85

// Explain adds to every failed or warned point of t, and to t's message,
// what the telemetry shows of the GPU it was measured on (labels host
// and gpu; every GPU of the host, or of the test, when the point names
// none): a slowdown reason active, errors that appeared, a PCIe link
// below its maximum, an SM clock far under its peers'. A point whose GPU
// shows none of these is left as it is: the telemetry does not say why.
func Explain(t result.Test) result.Test {
	if t.Telemetry == nil || len(t.Telemetry.GPUs) == 0 {
		return t
	}
	fastest := 0.0
	for _, g := range t.Telemetry.GPUs {
		if g.SMClock != nil {
			fastest = max(fastest, g.SMClock.Median)
		}
	}
	first := ""
	for i, m := range t.Metrics {
		if m.Status != result.Fail && m.Status != result.Warn {
			continue
		}
		why := explainPoint(t.Telemetry.GPUs, m.Labels, fastest)
		if why == "" {
			continue
		}
		t.Metrics[i].Message = strings.TrimSuffix(m.Message, ".") + "; " + why
		if first == "" {
			first = why
		}
	}
	if first != "" && !strings.Contains(t.Message, first) {
		t.Message += "; " + first
	}
	return t
}

// explainPoint is what the GPUs a point's labels name show, "" when
// nothing.
func explainPoint(gpus []result.GPUTelemetry, labels map[string]string, fastest float64) string {
	host, gpu := labels["host"], labels["gpu"]
	if oneHost(gpus) {
		// One node: the sampler may name it as the launcher does
		// (localhost, the Kubernetes node) and the benchmark by its
		// host name (a pod's); the GPU index alone tells them apart.
		host = ""
	}
	var whys []string
	for _, g := range gpus {
		if host != "" && g.Host != "" && g.Host != host {
			continue
		}
		if gpu != "" && gpu != "all" && g.GPU != gpu {
			continue
		}
		if w := gpuWhy(g, fastest); w != "" {
			whys = append(whys, w)
		}
	}
	if len(whys) > 2 {
		whys = append(whys[:2], fmt.Sprintf("%d more GPUs alike", len(whys)-2))
	}
	return strings.Join(whys, "; ")
}

// oneHost says every GPU sampled is on one node.
func oneHost(gpus []result.GPUTelemetry) bool {
	for _, g := range gpus[1:] {
		if g.Host != gpus[0].Host {
			return false
		}
	}
	return true
}

// gpuWhy is what one GPU's telemetry shows that slows it down: "while
// GPU 3 on node2 ran at SM clock 1.11 GHz (median 1.25, fastest GPU
// 1.76), HW slowdown in 12 of 40 samples, 87 C"; "" when nothing.
func gpuWhy(g result.GPUTelemetry, fastest float64) string {
	var parts []string
	slow := SlowdownText(g)
	if slow != "" {
		parts = append(parts, slow)
	}
	if g.SMClock != nil && fastest > 0 && g.SMClock.Median < SlowClockShare*fastest {
		parts = append(parts, fmt.Sprintf("SM clock median %.2f GHz against %.2f GHz on the fastest GPU", g.SMClock.Median/1000, fastest/1000))
	}
	if g.PCIeDowngraded {
		parts = append(parts, fmt.Sprintf("PCIe link below its maximum (gen %d x%d last sampled)", g.PCIeGen, g.PCIeWidth))
	}
	if len(g.NewErrors) > 0 {
		parts = append(parts, "new errors: "+strings.Join(g.NewErrors, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	where := "GPU " + g.GPU
	if g.Host != "" {
		where += " on " + g.Host
	}
	s := "while " + where
	if g.SMClock != nil {
		s += fmt.Sprintf(" ran at SM clock %.2f GHz min", g.SMClock.Min/1000)
	}
	if g.Temp != nil {
		s += fmt.Sprintf(", %.0f C max", g.Temp.Max)
	}
	if g.Power != nil {
		s += fmt.Sprintf(", %.0f W max", g.Power.Max)
		if g.PowerLimit > 0 {
			s += fmt.Sprintf(" of %.0f W", g.PowerLimit)
		}
	}
	return s + ": " + strings.Join(parts, ", ")
}

// SlowdownText names the slowdown reasons a GPU showed, most frequent
// first, in every report's words: "HW slowdown in 12 of 40 samples"; ""
// when it showed none.
func SlowdownText(g result.GPUTelemetry) string {
	if len(g.Slowdown) == 0 {
		return ""
	}
	names := make([]string, 0, len(g.Slowdown))
	for r, n := range g.Slowdown {
		if n > 0 {
			names = append(names, r)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := g.Slowdown[names[i]], g.Slowdown[names[j]]
		if a != b {
			return a > b
		}
		return names[i] < names[j]
	})
	var out []string
	for _, r := range names {
		out = append(out, fmt.Sprintf("%s in %d of %d samples", SlowdownName(r), g.Slowdown[r], g.Samples))
	}
	return strings.Join(out, ", ")
}

// slowdownNames are the words people know for the clock event reasons
// (NVML's nvmlClocksEventReason*, amd-smi's throttle status).
var slowdownNames = map[string]string{
	"hw_slowdown":             "HW slowdown",
	"hw_thermal_slowdown":     "HW thermal slowdown",
	"hw_power_brake_slowdown": "HW power brake",
	"sw_thermal_slowdown":     "SW thermal slowdown",
	"sw_power_cap":            "SW power cap",
}

// SlowdownName is how reports name a slowdown reason key of
// result.GPUTelemetry.Slowdown ("hw_slowdown" → "HW slowdown"); an
// unknown key as it is.
func SlowdownName(reason string) string {
	if n, ok := slowdownNames[reason]; ok {
		return n
	}
	return reason
}
