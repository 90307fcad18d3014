package result

import (
	"encoding/json"
	"fmt"
)

// TelemetryInfo is the key of result.Parsed.Info under which the
// telemetry plugin hands over what it sampled beside a test: a JSON
// Telemetry. The runner takes it out of Info before judging
// (StripTelemetry) and keeps it as the test's Telemetry, so no plugin
// verdict depends on it.
const TelemetryInfo = "telemetry"

// MaxTelemetryPoints bounds one GPU's Series in a test's result: a test
// of hours sampled at 1 Hz keeps every sample in raw/, and its result
// keeps at most this many points (each the worst of the samples it
// stands for: the lowest clock, the highest temperature), so that
// results.json and the journal stay small over a burn-in.
const MaxTelemetryPoints = 240

// Telemetry is what the GPUs of a test's nodes did while it ran, sampled
// at about 1 Hz by nvidia-smi, DCGM (dcgmi dmon) or amd-smi.
type Telemetry struct {
	// GPUs are the GPUs sampled, by host then index.
	GPUs []GPUTelemetry `json:"gpus,omitempty"`
	// Notes say what was not sampled and why ("node2: no nvidia-smi,
	// dcgmi or amd-smi"), and what the sampler read that it could not
	// parse.
	Notes []string `json:"notes,omitempty"`
}

// GPUTelemetry is one GPU's samples during one test.
type GPUTelemetry struct {
	// Host is the node, GPU the tool's index ("0".."7").
	Host string `json:"host,omitempty"`
	GPU  string `json:"gpu"`
	// Tool is the sampler: "nvidia-smi", "dcgmi" or "amd-smi".
	Tool string `json:"tool"`
	// UUID and Serial identify the GPU where the tool shows them.
	UUID   string `json:"uuid,omitempty"`
	Serial string `json:"serial,omitempty"`
	// Samples is how many samples were read; First and Last are their
	// times, Unix seconds.
	Samples int     `json:"samples"`
	First   float64 `json:"first"`
	Last    float64 `json:"last"`
	// SMClock and MemClock in MHz, Power in W, Temp (GPU) and MemTemp
	// (HBM) in degrees C, Util in percent: each summarised over the
	// samples; nil where the tool showed none.
	SMClock  *Range `json:"sm_clock_mhz,omitempty"`
	MemClock *Range `json:"mem_clock_mhz,omitempty"`
	Power    *Range `json:"power_w,omitempty"`
	Temp     *Range `json:"temp_c,omitempty"`
	MemTemp  *Range `json:"mem_temp_c,omitempty"`
	Util     *Range `json:"util_pct,omitempty"`
	// PowerLimit is the enforced power limit in W (0: not shown).
	PowerLimit float64 `json:"power_limit_w,omitempty"`
	// Slowdown is, per clock event (throttle) reason that slows the GPU
	// down ("hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
	// "hw_power_brake_slowdown", "sw_power_cap"), how many samples showed
	// it active. Idle and application-clock reasons are not slowdowns.
	Slowdown map[string]int `json:"slowdown,omitempty"`
	// PCIeGen and PCIeWidth are the link's generation and width as last
	// sampled (0: not shown); PCIeDowngraded says a sample showed the
	// link below its maximum while the GPU was busy.
	PCIeGen        int  `json:"pcie_gen,omitempty"`
	PCIeWidth      int  `json:"pcie_width,omitempty"`
	PCIeDowngraded bool `json:"pcie_downgraded,omitempty"`
	// NewErrors are the errors that appeared between the first and the
	// last sample: a rise of an ECC counter or of the PCIe replay count,
	// a kernel-log XID naming this GPU ("XID 79 at 12:03:11: GPU has
	// fallen off the bus"). Any of them fails a burn-in.
	NewErrors []string `json:"new_errors,omitempty"`
	// Series is the samples over time, at most MaxTelemetryPoints.
	Series []TelemetryPoint `json:"series,omitempty"`
}

// Range summarises one quantity over samples, in its field's unit.
type Range struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// TelemetryPoint is one point of a GPU's series: T in Unix seconds, the
// rest in GPUTelemetry's units (0: not shown), Slowdown the slowdown
// reasons active, "+"-joined ("" none).
type TelemetryPoint struct {
	T        float64 `json:"t"`
	SMClock  float64 `json:"sm,omitempty"`
	MemClock float64 `json:"mem,omitempty"`
	Power    float64 `json:"w,omitempty"`
	Temp     float64 `json:"c,omitempty"`
	MemTemp  float64 `json:"mc,omitempty"`
	Util     float64 `json:"u,omitempty"`
	Slowdown string  `json:"slow,omitempty"`
}

// StripTelemetry takes the telemetry plugin's TelemetryInfo out of p's
// Info and decodes it: nil when there is none; an error (p stripped all
// the same) when it is no Telemetry.
func StripTelemetry(p Parsed) (Parsed, *Telemetry, error) {
	raw, ok := p.Info[TelemetryInfo]
	if !ok {
		return p, nil, nil
	}
	info := make(map[string]string, len(p.Info)-1)
	for k, v := range p.Info {
		if k != TelemetryInfo {
			info[k] = v
		}
	}
	p.Info = info
	var t Telemetry
	if err := json.Unmarshal([]byte(raw), &t); err != nil {
		return p, nil, fmt.Errorf("read the telemetry the plugin sampled: %w", err)
	}
	return p, &t, nil
}
