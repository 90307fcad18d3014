package report

// This file: what a test's GPUs did while it ran (result.Test.Telemetry,
// issue 33) in the reports: report.html plots it on the test's time axis
// and tables it per GPU; the text, Markdown and JUnit reports say in one
// line where it shows a slowdown, new errors or a PCIe link below its
// maximum.

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gpuaccept/gpuaccept/framework/judge"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// telemetryQuantity is one quantity of result.TelemetryPoint that
// report.html draws: its figure's title and unit, and how to read it off
// a point (0: not shown).
type telemetryQuantity struct {
	name, unit string
	value      func(result.TelemetryPoint) float64
}

// telemetryQuantities are drawn in this order, each only where a GPU's
// series shows it: the SM clock first, as it is what slows a benchmark.
var telemetryQuantities = []telemetryQuantity{
	{"SM clock", "MHz", func(p result.TelemetryPoint) float64 { return p.SMClock }},
	{"power", "W", func(p result.TelemetryPoint) float64 { return p.Power }},
	{"GPU temperature", "C", func(p result.TelemetryPoint) float64 { return p.Temp }},
	{"memory clock", "MHz", func(p result.TelemetryPoint) float64 { return p.MemClock }},
	{"HBM temperature", "C", func(p result.TelemetryPoint) float64 { return p.MemTemp }},
}

// gpuName is how the reports name a sampled GPU: "vm GPU 0", "GPU 0"
// where the telemetry names no host.
func gpuName(g result.GPUTelemetry) string {
	if g.Host == "" {
		return "GPU " + g.GPU
	}
	return g.Host + " GPU " + g.GPU
}

// telemetryStart is the zero of the telemetry figures' time axis, Unix
// seconds: the test's start, so that they read on the benchmark's time
// axis; the earliest sample where the test records no start.
func telemetryStart(t result.Test) float64 {
	if !t.Started.IsZero() {
		return float64(t.Started.UnixNano()) / 1e9
	}
	start := math.Inf(1)
	for _, g := range t.Telemetry.GPUs {
		for _, p := range g.Series {
			start = math.Min(start, p.T)
		}
	}
	if math.IsInf(start, 0) {
		return 0
	}
	return start
}

// slowdownReasons are the names (judge.SlowdownName) of the reasons a
// series' points show active, sorted.
func slowdownReasons(series []result.TelemetryPoint) []string {
	seen := map[string]bool{}
	for _, p := range series {
		for _, r := range strings.Split(p.Slowdown, "+") {
			if r != "" {
				seen[judge.SlowdownName(r)] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// TelemetryPlot draws t's telemetry: one figure per quantity some GPU's
// series shows (telemetryQuantities), one line per GPU named as gpuName
// (in the legend up to maxLegendGPUs GPUs), over seconds since the test
// started (telemetryStart). The points at which a slowdown reason was
// active are marked with a red cross, the legend naming the reasons ("vm
// GPU 0 slowdown: HW slowdown"); the power figure draws each enforced
// power limit as a dashed line (Figure.Ceiling: the highest). None for a
// test without telemetry.
func TelemetryPlot(t result.Test) ([]Figure, error) {
	if t.Telemetry == nil {
		return nil, nil
	}
	start := telemetryStart(t)
	var figs []Figure
	for _, q := range telemetryQuantities {
		f, ok, err := telemetryFigure(t, q, start)
		if err != nil {
			return nil, fmt.Errorf("plot the %s telemetry of %s: %w", q.name, t.Name, err)
		}
		if ok {
			figs = append(figs, f)
		}
	}
	return figs, nil
}

// maxLegendGPUs bounds a telemetry figure's legend, which must fit its
// height: past it, the GPUs' lines are drawn unnamed (the table under the
// figures names each), and only the first maxLegendGPUs slowed ones are
// named.
const maxLegendGPUs = 16

// telemetryFigure draws one quantity; false where no GPU's series shows it.
func telemetryFigure(t result.Test, q telemetryQuantity, start float64) (Figure, bool, error) {
	fig := Figure{Metric: q.name, Unit: q.unit}
	p := plot.New()
	p.Add(plotter.NewGrid())
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	var limits []float64
	slowed := 0
	for i, g := range t.Telemetry.GPUs {
		var xy, slow plotter.XYs
		for _, pt := range g.Series {
			v := q.value(pt)
			if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) || math.IsNaN(pt.T) || math.IsInf(pt.T, 0) {
				continue
			}
			at := plotter.XY{X: pt.T - start, Y: v}
			xy = append(xy, at)
			if pt.Slowdown != "" {
				slow = append(slow, at)
			}
			minX, maxX, maxY = math.Min(minX, at.X), math.Max(maxX, at.X), math.Max(maxY, v)
		}
		if len(xy) == 0 {
			continue
		}
		sort.SliceStable(xy, func(a, b int) bool { return xy[a].X < xy[b].X })
		l, err := plotter.NewLine(xy)
		if err != nil {
			return fig, false, err
		}
		col := otherColors[i%len(otherColors)]
		if i == 0 {
			col = placementColor["out-of-place"]
		}
		l.Color, l.Width = col, vg.Points(1.5)
		p.Add(l)
		name := gpuName(g)
		if len(t.Telemetry.GPUs) <= maxLegendGPUs {
			p.Legend.Add(name, l)
		}
		fig.Curves = append(fig.Curves, name)
		if len(slow) > 0 {
			sc, err := plotter.NewScatter(slow)
			if err != nil {
				return fig, false, err
			}
			sc.Shape, sc.Color, sc.Radius = draw.CrossGlyph{}, failColor, vg.Points(3.5)
			p.Add(sc)
			if slowed++; slowed <= maxLegendGPUs {
				p.Legend.Add(name+" slowdown: "+strings.Join(slowdownReasons(g.Series), ", "), sc)
			}
		}
		if q.unit == "W" && g.PowerLimit > 0 && !containsFloat(limits, g.PowerLimit) {
			limits = append(limits, g.PowerLimit)
		}
	}
	if len(fig.Curves) == 0 {
		return fig, false, nil
	}
	if maxX <= minX {
		// One sample: a second's width so that the axis has a span.
		maxX = minX + 1
	}
	sort.Float64s(limits)
	for _, lim := range limits {
		cl, err := plotter.NewLine(plotter.XYs{{X: minX, Y: lim}, {X: maxX, Y: lim}})
		if err != nil {
			return fig, false, err
		}
		cl.Color, cl.Width = failColor, vg.Points(1)
		cl.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(cl)
		p.Legend.Add(fmt.Sprintf("power limit %g W", lim), cl)
		fig.Ceiling = lim
		maxY = math.Max(maxY, lim)
	}
	p.Title.Text = fmt.Sprintf("%s: %s while it ran", t.Name, q.name)
	p.X.Label.Text = "seconds since the test started"
	p.Y.Tick.Marker = plainTicks
	p.Y.Label.Text = fmt.Sprintf("%s (%s)", q.name, q.unit)
	p.X.Min, p.X.Max = math.Min(0, minX), maxX
	p.Y.Min, p.Y.Max = 0, maxY*1.08
	svg, err := render(p)
	fig.SVG = svg
	return fig, err == nil, err
}

func containsFloat(xs []float64, x float64) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// pcieText is a GPU's PCIe link as last sampled: "gen 5 x16", with
// "below its maximum while busy" where a sample showed it so; "" where
// the tool showed no link.
func pcieText(g result.GPUTelemetry) string {
	s := ""
	if g.PCIeGen > 0 || g.PCIeWidth > 0 {
		s = fmt.Sprintf("gen %d x%d", g.PCIeGen, g.PCIeWidth)
	}
	if g.PCIeDowngraded {
		s = strings.TrimSpace(s + " below its maximum while busy")
	}
	return s
}

// rangeText is a Range in whole units, "min/median/max"; "" for none.
func rangeText(r *result.Range) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf("%.0f/%.0f/%.0f", r.Min, r.Median, r.Max)
}

// maxText is a Range's maximum in whole units; "" for none.
func maxText(r *result.Range) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf("%.0f", r.Max)
}

// telemetryRow is one GPU's row of report.html's telemetry table, its
// cells as shown.
type telemetryRow struct {
	GPU, Tool                 string
	Samples                   int
	SMClock, Temp, MemTemp    string
	Power, Slowdown, PCIe     string
	NewErrors                 []string
	Slow, Downgraded, Errored bool
}

// htmlTelemetry is a test's telemetry section of report.html.
type htmlTelemetry struct {
	Figures []htmlFigure
	Rows    []telemetryRow
	Notes   []string
}

// telemetryRows are one row per GPU of t's telemetry.
func telemetryRows(tel *result.Telemetry) []telemetryRow {
	var out []telemetryRow
	for _, g := range tel.GPUs {
		r := telemetryRow{GPU: gpuName(g), Tool: g.Tool, Samples: g.Samples, SMClock: rangeText(g.SMClock), Temp: maxText(g.Temp), MemTemp: maxText(g.MemTemp),
			Slowdown: judge.SlowdownText(g), PCIe: pcieText(g), NewErrors: g.NewErrors, Downgraded: g.PCIeDowngraded, Errored: len(g.NewErrors) > 0}
		r.Slow = r.Slowdown != ""
		if g.Power != nil {
			r.Power = fmt.Sprintf("%.0f", g.Power.Max)
		}
		if g.PowerLimit > 0 {
			r.Power += fmt.Sprintf(" of %.0f", g.PowerLimit)
		}
		out = append(out, r)
	}
	return out
}

// maxTelemetryGPUs bounds the GPUs TelemetryLine names; the rest are
// counted.
const maxTelemetryGPUs = 2

// TelemetryLine is what the table, Markdown and JUnit reports say of t's
// telemetry, one short line: each GPU that showed a slowdown, new errors
// or a PCIe link below its maximum, with its SM clock's range ("vm GPU 0
// HW slowdown in 12 of 40 samples; SM clock 1.11-1.98 GHz"), the first
// maxTelemetryGPUs of them, then how many more, every control character
// escaped (redact.PrintableLine); "" where the telemetry shows none of
// these (or there is none).
func TelemetryLine(t result.Test) string {
	if t.Telemetry == nil {
		return ""
	}
	var parts []string
	for _, g := range t.Telemetry.GPUs {
		var what []string
		if s := judge.SlowdownText(g); s != "" {
			what = append(what, s)
		}
		if len(g.NewErrors) > 0 {
			what = append(what, "new errors: "+strings.Join(g.NewErrors, ", "))
		}
		if g.PCIeDowngraded {
			what = append(what, "PCIe "+pcieText(g))
		}
		if len(what) == 0 {
			continue
		}
		if g.SMClock != nil {
			what = append(what, fmt.Sprintf("SM clock %.2f-%.2f GHz", g.SMClock.Min/1000, g.SMClock.Max/1000))
		}
		parts = append(parts, gpuName(g)+" "+strings.Join(what, "; "))
	}
	if len(parts) > maxTelemetryGPUs {
		parts = append(parts[:maxTelemetryGPUs], fmt.Sprintf("%d more GPUs alike", len(parts)-maxTelemetryGPUs))
	}
	// One line, whatever a host name or an error holds (a line feed, an
	// escape sequence): each report it goes into shows it as a line.
	return redact.PrintableLine(strings.Join(parts, " | "))
}

// telemetryLines are TelemetryLine of each test that has one, "telemetry
// TEST: LINE", for under the text and Markdown tables.
func telemetryLines(run *result.Run) []string {
	var out []string
	for _, t := range run.Tests {
		if l := TelemetryLine(t); l != "" {
			out = append(out, fmt.Sprintf("telemetry %s: %s", t.Name, l))
		}
	}
	return out
}
