package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// testStart is when the telemetry tests' benchmark started.
var testStart = time.Date(2026, 12, 7, 22, 7, 2, 0, time.UTC)

// h100 is one H100 80GB HBM3 sampled for 40 s at 1 Hz while a benchmark
// ran. Its figures are a real nvidia-smi sampling's:
// testdata/recordings/h100x1-2026-12-07/smi/query-gpu.csv (idle: 345 MHz
// SM, 71.69 W, 38 C; clocks.max.sm 1980 MHz; power.limit 700.00 W; PCIe
// gen 5 x16) and smi/nvidia-smi-q.txt of the same folder (memory clock
// 2619 MHz, HBM 48 C idle; issue32/run32.log's header reads 345 MHz,
// 39 C, 71.47 W on the same model). The first sample is the idle one
// (the sampler starts before the kernels), the rest at the maximum SM
// clock; a slowed GPU runs samples 20-31 at 1110 MHz under "HW
// slowdown", the clock a throttled H100 drops to in judge.Explain's
// example. Load power and temperature (650 W, 62 C, HBM 70 C) are not in
// those files: they are placeholders under the real limit.
func h100(host, gpu string, slowed bool) result.GPUTelemetry {
	g := result.GPUTelemetry{Host: host, GPU: gpu, Tool: "nvidia-smi", Serial: "1651924066533", Samples: 40, PowerLimit: 700, PCIeGen: 5, PCIeWidth: 16}
	t0 := float64(testStart.Unix()) + 2
	g.First, g.Last = t0, t0+39
	for i := range 40 {
		p := result.TelemetryPoint{T: t0 + float64(i), SMClock: 1980, MemClock: 2619, Power: 650, Temp: 62, MemTemp: 70, Util: 100}
		if i == 0 {
			p = result.TelemetryPoint{T: t0, SMClock: 345, MemClock: 2619, Power: 71.69, Temp: 38, MemTemp: 48}
		}
		if slowed && i >= 20 && i < 32 {
			p.SMClock, p.Slowdown = 1110, "hw_slowdown"
		}
		g.Series = append(g.Series, p)
	}
	g.SMClock = &result.Range{Min: 345, Median: 1980, Max: 1980}
	g.MemClock = &result.Range{Min: 2619, Median: 2619, Max: 2619}
	g.Power = &result.Range{Min: 71.69, Median: 650, Max: 650}
	g.Temp = &result.Range{Min: 38, Median: 62, Max: 62}
	g.MemTemp = &result.Range{Min: 48, Median: 70, Max: 70}
	if slowed {
		g.Slowdown = map[string]int{"hw_slowdown": 12}
	}
	return g
}

// telemetryRun is a one-test run whose test carries tel.
func telemetryRun(tel *result.Telemetry) *result.Run {
	r := &result.Run{SKU: "h100", Suite: "burnin", Launcher: "local", Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}, Hosts: []string{"vm"},
		Started: testStart, Duration: 45 * time.Second, Version: "test",
		Tests: []result.Test{{Name: "gemm.burn", Status: result.Pass, Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}, Started: testStart, Duration: 42 * time.Second,
			Message: "2 points inside their bands", Telemetry: tel}}}
	r.Finish()
	return r
}

func TestTelemetryReports(t *testing.T) {
	xid := "XID 79 at 22:07:31: GPU has fallen off the bus"
	downgraded := h100("vm", "1", false)
	downgraded.PCIeGen, downgraded.PCIeDowngraded, downgraded.NewErrors = 4, true, []string{xid, "volatile DRAM uncorrectable ECC +1"}
	noMemTemp := h100("vm", "0", false)
	noMemTemp.MemTemp = nil
	for i := range noMemTemp.Series {
		noMemTemp.Series[i].MemTemp, noMemTemp.Series[i].MemClock = 0, 0
	}
	cases := []struct {
		name string
		tel  *result.Telemetry
		// figures are the quantities drawn, in order; legend the texts
		// every figure's legend holds.
		figures []string
		legend  []string
		// line is TelemetryLine; cells are texts the page's telemetry
		// table holds.
		line  string
		cells []string
	}{
		{name: "healthy", tel: &result.Telemetry{GPUs: []result.GPUTelemetry{h100("vm", "0", false), h100("vm", "1", false)}},
			figures: []string{"SM clock", "power", "GPU temperature", "memory clock", "HBM temperature"},
			legend:  []string{"vm GPU 0", "vm GPU 1"},
			cells:   []string{"<td>vm GPU 0</td><td>nvidia-smi</td><td>40</td><td>345/1980/1980</td><td>62</td><td>70</td><td>650 of 700</td><td>none</td><td>gen 5 x16</td><td>none</td>"}},
		{name: "hw slowdown", tel: &result.Telemetry{GPUs: []result.GPUTelemetry{h100("vm", "0", true), h100("vm", "1", false)}},
			figures: []string{"SM clock", "power", "GPU temperature", "memory clock", "HBM temperature"},
			legend:  []string{"vm GPU 0", "vm GPU 1", "vm GPU 0 slowdown: HW slowdown"},
			line:    "vm GPU 0 HW slowdown in 12 of 40 samples; SM clock 0.34-1.98 GHz",
			cells:   []string{`<td class="warn">HW slowdown in 12 of 40 samples</td>`}},
		{name: "new errors, PCIe below its maximum", tel: &result.Telemetry{GPUs: []result.GPUTelemetry{noMemTemp, downgraded}},
			figures: []string{"SM clock", "power", "GPU temperature", "memory clock", "HBM temperature"},
			legend:  []string{"vm GPU 1"},
			line:    "vm GPU 1 new errors: " + xid + ", volatile DRAM uncorrectable ECC +1; PCIe gen 4 x16 below its maximum while busy; SM clock 0.34-1.98 GHz",
			cells:   []string{`<td class="fail">gen 4 x16 below its maximum while busy</td><td class="fail">` + xid + `<br>volatile DRAM uncorrectable ECC &#43;1</td>`}}, // html/template writes "+" so
		{name: "notes only", tel: &result.Telemetry{Notes: []string{"vm: no nvidia-smi, dcgmi or amd-smi"}},
			cells: []string{`<p class="note">telemetry note: vm: no nvidia-smi, dcgmi or amd-smi</p>`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := telemetryRun(c.tel)
			figs, err := TelemetryPlot(run.Tests[0])
			assert.NilError(t, err)
			var drawn []string
			for _, f := range figs {
				drawn = append(drawn, f.Metric)
				for _, l := range c.legend {
					assert.Assert(t, strings.Contains(string(f.SVG), ">"+l+"<"), "%s figure lacks legend %q", f.Metric, l)
				}
				assert.Assert(t, strings.Contains(string(f.SVG), "seconds since the test started"), f.Metric)
				if f.Unit == "W" {
					assert.Equal(t, f.Ceiling, 700.0)
					assert.Assert(t, strings.Contains(string(f.SVG), ">power limit 700 W<"))
				}
			}
			assert.DeepEqual(t, drawn, c.figures)

			var page bytes.Buffer
			assert.NilError(t, HTML(&page, run, nil))
			assert.Equal(t, strings.Count(page.String(), `<div class="plot telemetry"`), len(c.figures))
			for _, cell := range c.cells {
				assert.Assert(t, strings.Contains(page.String(), cell), "page lacks %s", cell)
			}
			var again bytes.Buffer
			assert.NilError(t, HTML(&again, telemetryRun(c.tel), nil))
			assert.Assert(t, bytes.Equal(page.Bytes(), again.Bytes()), "report.html differs between two renders")

			assert.Equal(t, TelemetryLine(run.Tests[0]), c.line)
			var table, md bytes.Buffer
			assert.NilError(t, Table(&table, run))
			assert.NilError(t, Markdown(&md, run))
			props := map[string]string{}
			for _, kv := range properties(run, run.Tests[0]) {
				props[kv[0]] = kv[1]
			}
			if c.line == "" {
				// Nothing to say: the text reports read as without telemetry.
				var plain, plainMD bytes.Buffer
				assert.NilError(t, Table(&plain, telemetryRun(nil)))
				assert.NilError(t, Markdown(&plainMD, telemetryRun(nil)))
				assert.Equal(t, table.String(), plain.String())
				assert.Equal(t, md.String(), plainMD.String())
				_, ok := props["telemetry"]
				assert.Assert(t, !ok, "a telemetry property with nothing to say")
				return
			}
			assert.Assert(t, strings.Contains(table.String(), "\ntelemetry gemm.burn: "+c.line+"\n"), table.String())
			assert.Assert(t, strings.Contains(md.String(), "\n- telemetry gemm.burn: "+mdEscape(c.line)+"\n"), md.String())
			assert.Equal(t, props["telemetry"], c.line)
		})
	}
}

// A figure's legend fits its height: past maxLegendGPUs GPUs their lines
// are drawn unnamed, the slowed ones still named (up to as many).
func TestTelemetryLegendBounded(t *testing.T) {
	var gpus []result.GPUTelemetry
	for i := range maxLegendGPUs + 1 {
		gpus = append(gpus, h100("vm", strconv.Itoa(i), i == 3))
	}
	figs, err := TelemetryPlot(result.Test{Name: "gemm.burn", Started: testStart, Telemetry: &result.Telemetry{GPUs: gpus}})
	assert.NilError(t, err)
	sm := string(figs[0].SVG)
	assert.Equal(t, len(figs[0].Curves), maxLegendGPUs+1)
	assert.Assert(t, !strings.Contains(sm, ">vm GPU 0<"), "a GPU named past the legend's bound")
	assert.Assert(t, strings.Contains(sm, ">vm GPU 3 slowdown: HW slowdown<"))
}

// The time axis is the benchmark's: seconds since the test started, or
// since the first sample where the test records no start.
func TestTelemetryStart(t *testing.T) {
	g := h100("vm", "0", false)
	cases := []struct {
		name    string
		started time.Time
		want    float64
	}{
		{"test start", testStart, float64(testStart.Unix())},
		{"no start: earliest sample", time.Time{}, g.Series[0].T},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			test := result.Test{Started: c.started, Telemetry: &result.Telemetry{GPUs: []result.GPUTelemetry{g}}}
			assert.Equal(t, telemetryStart(test), c.want)
		})
	}
}

// A host name is the node's word: it cannot open markup in report.html,
// neither in the table nor in the figures' legends, and a secret the
// environment knows is masked in the telemetry as everywhere.
func TestTelemetryEscapedAndMasked(t *testing.T) {
	t.Setenv("GH_TOKEN", "ghp_planted0123456789abcdef")
	hostile := h100("<script>alert(1)</script>", "0", true)
	hostile.NewErrors = []string{"XID 79 GH_TOKEN=ghp_planted0123456789abcdef"}
	run := telemetryRun(&result.Telemetry{GPUs: []result.GPUTelemetry{hostile}, Notes: []string{"<img src=x>"}})
	path := filepath.Join(t.TempDir(), "report.html")
	assert.NilError(t, WriteHTML(path, run, nil))
	data, err := os.ReadFile(path)
	assert.NilError(t, err)
	page := string(data)
	for _, bad := range []string{"<script", "<img", "ghp_planted"} {
		assert.Assert(t, !strings.Contains(page, bad), "%s in the page", bad)
	}
	assert.Assert(t, strings.Contains(page, "<td>&lt;script&gt;alert(1)&lt;/script&gt; GPU 0</td>"))
	assert.Equal(t, strings.Count(page, `<div class="plot telemetry"`), 5)
	var table bytes.Buffer
	assert.NilError(t, Write(&table, "table", run))
	assert.Assert(t, !strings.Contains(table.String(), "ghp_planted"), table.String())
	var md bytes.Buffer
	assert.NilError(t, Write(&md, "markdown", run))
	assert.Assert(t, !strings.Contains(md.String(), "<script"), md.String())
}

// TelemetryLine stays one short line: a host name's line feed or escape
// sequence is shown escaped, not acted on, and past maxTelemetryGPUs the
// GPUs are counted.
func TestTelemetryLine(t *testing.T) {
	slowLine := " HW slowdown in 12 of 40 samples; SM clock 0.34-1.98 GHz"
	cases := []struct {
		name string
		gpus []result.GPUTelemetry
		want string
	}{
		{"escaped", []result.GPUTelemetry{h100("node1\nPASS\x1b[2J", "0", true)}, `node1\nPASS\x1b[2J GPU 0` + slowLine},
		{"no host", []result.GPUTelemetry{h100("", "3", true)}, "GPU 3" + slowLine},
		{"healthy", []result.GPUTelemetry{h100("vm", "0", false)}, ""},
		{"four slowed", []result.GPUTelemetry{h100("vm", "0", true), h100("vm", "1", true), h100("vm", "2", false), h100("vm", "3", true), h100("vm", "4", true)},
			"vm GPU 0" + slowLine + " | vm GPU 1" + slowLine + " | 2 more GPUs alike"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, TelemetryLine(result.Test{Telemetry: &result.Telemetry{GPUs: c.gpus}}), c.want)
		})
	}
}

// A test without telemetry shows no telemetry section.
func TestNoTelemetrySection(t *testing.T) {
	var page bytes.Buffer
	assert.NilError(t, HTML(&page, sample(), nil))
	assert.Assert(t, !strings.Contains(page.String(), "telemetry"))
}
