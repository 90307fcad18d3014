package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Figure is one plot of a test: a metric's measured curves against the
// baseline band, or its values per label set against their references.
type Figure struct {
	// Metric is the metric name plotted ("busbw").
	Metric string
	// Kind is how it is drawn, as the test's plugin declares
	// (result.PlotCurve, result.PlotLabels).
	Kind result.Plot
	// Unit is the y axis unit ("GB/s").
	Unit string
	// Curves are the measured curves drawn, by name ("busbw out-of-place").
	Curves []string
	// Bands counts the baseline bands drawn.
	Bands int
	// Ceiling is the physical limit drawn as a line; 0 when none.
	Ceiling float64
	// SVG is the plot as an SVG document (no XML prolog), for inline use.
	SVG []byte
}

// band is a baseline entry's tolerance band over message sizes.
type band struct {
	label                  string
	labels                 map[string]string
	sizes, lo, warnLo, ref []float64
	hi                     []float64 // upper edge, or ref where the band has none
	ceiling                float64
}

// bands computes, for each curve entry of the baseline at the test's scope
// and metric, the band edges at each point (sku.Bound.Limit of the point's
// merged band).
func bands(s *sku.SKU, t result.Test, metric string) []band {
	if s == nil {
		return nil
	}
	var out []band
	for _, e := range s.Entries(testName(t.Name), t.Scope) {
		if e.Metric != metric || len(e.Points) == 0 {
			continue
		}
		b := band{label: "baseline " + CurveName(result.Metric{Name: e.Metric, Labels: e.Labels}), labels: e.Labels, ceiling: e.Ceiling}
		pts := append([]sku.Point(nil), e.Points...)
		sort.Slice(pts, func(i, j int) bool { return pts[i].Size < pts[j].Size })
		for _, p := range pts {
			if p.Size <= 0 {
				continue
			}
			bb := e.Band.Merge(p.Band)
			lo, warnLo, hi := math.NaN(), math.NaN(), p.Value
			if bb.Min.IsSet() {
				lo = bb.Min.Limit(p.Value)
			}
			if bb.WarnMin.IsSet() {
				warnLo = bb.WarnMin.Limit(p.Value)
			}
			if bb.Max.IsSet() {
				hi = bb.Max.Limit(p.Value)
			} else if bb.WarnMax.IsSet() {
				hi = bb.WarnMax.Limit(p.Value)
			}
			if math.IsNaN(lo) {
				lo = p.Value
			}
			if e.Ceiling > 0 {
				// Nothing passes above the physical limit: the warn band
				// over the reference stops at the ceiling line.
				hi = math.Min(hi, e.Ceiling)
			}
			b.sizes = append(b.sizes, float64(p.Size))
			b.lo, b.warnLo, b.hi, b.ref = append(b.lo, lo), append(b.warnLo, warnLo), append(b.hi, hi), append(b.ref, p.Value)
		}
		if len(b.sizes) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// testName strips the file label check adds ("nccl.all_reduce[a.log]").
func testName(n string) string {
	if i := strings.IndexByte(n, '['); i > 0 {
		return n[:i]
	}
	return n
}

// plottedMetrics picks what to plot for a test, from what its plugin
// declares (result.Test.Meanings: a metric's plot kind, whether it is
// recorded by default): each drawable metric the baseline judges (as a
// curve, for a curve), else those recorded by default, else the first
// drawable one measured, so an unjudged run still shows its figure. A
// metric is drawable when declared with a plot kind and measured so: a
// curve needs points with a size. None for a test whose plugin declares
// nothing (an old results folder, a plugin without meanings).
func plottedMetrics(s *sku.SKU, t result.Test) (out []result.Meaning) {
	measured := map[string]bool{}
	for _, m := range t.Metrics {
		if mn, ok := result.MeaningOf(t.Meanings, m.Name); ok && (mn.Plot == result.PlotCurve && m.Size > 0 || mn.Plot == result.PlotLabels || mn.Plot == result.PlotSteps && m.Labels["step"] != "") {
			measured[m.Name] = true
		}
	}
	seen := map[string]bool{}
	if s != nil {
		for _, e := range s.Entries(testName(t.Name), t.Scope) {
			mn, _ := result.MeaningOf(t.Meanings, e.Metric)
			if measured[e.Metric] && !seen[e.Metric] && (mn.Plot == result.PlotLabels || len(e.Points) > 0) {
				out = append(out, mn)
				seen[e.Metric] = true
			}
		}
	}
	// Step series are drawn beside whatever is judged: they show how the
	// judged median came about (warm-up, a slowdown mid-run).
	defer func() {
		for _, mn := range t.Meanings {
			if mn.Plot == result.PlotSteps && measured[mn.Name] && !seen[mn.Name] {
				out = append(out, mn)
				seen[mn.Name] = true
			}
		}
	}()
	if len(out) > 0 {
		return out
	}
	for _, mn := range t.Meanings {
		if mn.Record && measured[mn.Name] {
			out = append(out, mn)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, mn := range t.Meanings {
		if measured[mn.Name] {
			return []result.Meaning{mn}
		}
	}
	return nil
}

var (
	placementColor = map[string]color.RGBA{
		"out-of-place": {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		"in-place":     {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	}
	otherColors = []color.RGBA{{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, {R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}}
	failColor   = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	warnColor   = color.RGBA{R: 0xe6, G: 0xa1, B: 0x00, A: 0xff}
)

func colorFor(labels map[string]string, i int) color.RGBA {
	if c, ok := placementColor[labels["placement"]]; ok {
		return c
	}
	return otherColors[i%len(otherColors)]
}

func faded(c color.RGBA, a uint8) color.RGBA {
	// Premultiplied alpha, as image/color wants.
	return color.RGBA{R: uint8(uint16(c.R) * uint16(a) / 255), G: uint8(uint16(c.G) * uint16(a) / 255), B: uint8(uint16(c.B) * uint16(a) / 255), A: a}
}

// Plot draws one figure per plotted metric of t (plottedMetrics), as its
// plugin declares it drawn. A curve: the measured curves (out-of-place and
// in-place, ...) over message size on a log2 axis, each baseline band as a
// shaded area between its lower and upper edge with its reference as a
// dashed line, failing and warning points marked, and the ceiling where
// the baseline records one. Values per label set: plotLabels. s may be nil
// (no bands).
func Plot(t result.Test, s *sku.SKU) ([]Figure, error) {
	var figs []Figure
	for _, mn := range plottedMetrics(s, t) {
		figure := plotMetric
		switch mn.Plot {
		case result.PlotLabels:
			figure = plotLabels
		case result.PlotSteps:
			figure = plotSteps
		}
		f, err := figure(t, s, mn.Name)
		if err != nil {
			return nil, fmt.Errorf("plot %s of %s: %w", mn.Name, t.Name, err)
		}
		figs = append(figs, f)
	}
	return figs, nil
}

func plotMetric(t result.Test, s *sku.SKU, metric string) (Figure, error) {
	fig := Figure{Metric: metric, Kind: result.PlotCurve}
	p := plot.New()
	p.X.Label.Text = "message size"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	p.Y.Tick.Marker = plainTicks
	p.Add(plotter.NewGrid())

	type curvePts struct {
		name   string
		labels map[string]string
		xy     plotter.XYs
		fail   plotter.XYs
		warn   plotter.XYs
	}
	var cs []*curvePts
	idx := map[string]*curvePts{}
	minX, maxX, maxY := math.Inf(1), 0.0, 0.0
	name := curveNamer(t.Metrics)
	for _, m := range t.Metrics {
		if m.Name != metric || m.Size <= 0 || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			continue
		}
		fig.Unit = m.Unit
		k := name(m.Metric)
		c := idx[k]
		if c == nil {
			c = &curvePts{name: k, labels: m.Labels}
			idx[k] = c
			cs = append(cs, c)
		}
		pt := plotter.XY{X: float64(m.Size), Y: m.Value}
		c.xy = append(c.xy, pt)
		switch m.Status {
		case result.Fail:
			c.fail = append(c.fail, pt)
		case result.Warn:
			c.warn = append(c.warn, pt)
		}
		minX, maxX, maxY = math.Min(minX, pt.X), math.Max(maxX, pt.X), math.Max(maxY, pt.Y)
	}
	bs := bands(s, t, metric)
	for i, b := range bs {
		fig.Bands++
		col := colorFor(b.labels, i)
		var poly plotter.XYs
		for j := range b.sizes {
			poly = append(poly, plotter.XY{X: b.sizes[j], Y: b.lo[j]})
		}
		for j := len(b.sizes) - 1; j >= 0; j-- {
			poly = append(poly, plotter.XY{X: b.sizes[j], Y: b.hi[j]})
		}
		if len(b.sizes) == 1 {
			// One point: a narrow box so it shows.
			x := b.sizes[0]
			poly = plotter.XYs{{X: x / 1.2, Y: b.lo[0]}, {X: x * 1.2, Y: b.lo[0]}, {X: x * 1.2, Y: b.hi[0]}, {X: x / 1.2, Y: b.hi[0]}}
		}
		pg, err := plotter.NewPolygon(poly)
		if err != nil {
			return fig, err
		}
		pg.Color = faded(col, 0x40)
		pg.LineStyle.Width = 0
		p.Add(pg)
		p.Legend.Add(b.label+" band", pg)
		ref := make(plotter.XYs, len(b.sizes))
		for j := range b.sizes {
			ref[j] = plotter.XY{X: b.sizes[j], Y: b.ref[j]}
			minX, maxX, maxY = math.Min(minX, b.sizes[j]), math.Max(maxX, b.sizes[j]), math.Max(maxY, b.hi[j])
		}
		rl, err := plotter.NewLine(ref)
		if err != nil {
			return fig, err
		}
		rl.Color = col
		rl.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		rl.Width = vg.Points(1)
		p.Add(rl)
		if b.ceiling > fig.Ceiling {
			fig.Ceiling = b.ceiling
		}
	}
	for i, c := range cs {
		sort.Slice(c.xy, func(a, b int) bool { return c.xy[a].X < c.xy[b].X })
		l, sc, err := plotter.NewLinePoints(c.xy)
		if err != nil {
			return fig, err
		}
		col := colorFor(c.labels, i)
		l.Color, l.Width = col, vg.Points(1.6)
		sc.Color, sc.Shape, sc.Radius = col, draw.CircleGlyph{}, vg.Points(1.8)
		p.Add(l, sc)
		p.Legend.Add(c.name, l, sc)
		fig.Curves = append(fig.Curves, c.name)
		for _, mk := range []struct {
			pts plotter.XYs
			col color.RGBA
		}{{c.fail, failColor}, {c.warn, warnColor}} {
			if len(mk.pts) == 0 {
				continue
			}
			s, err := plotter.NewScatter(mk.pts)
			if err != nil {
				return fig, err
			}
			s.Shape, s.Color, s.Radius = draw.CrossGlyph{}, mk.col, vg.Points(4)
			s.GlyphStyle.Shape = draw.CrossGlyph{}
			p.Add(s)
		}
	}
	if len(cs) == 0 {
		return fig, fmt.Errorf("no measured points")
	}
	if fig.Ceiling > 0 {
		cl, err := plotter.NewLine(plotter.XYs{{X: minX, Y: fig.Ceiling}, {X: maxX, Y: fig.Ceiling}})
		if err != nil {
			return fig, err
		}
		cl.Color, cl.Width = failColor, vg.Points(1)
		cl.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(cl)
		p.Legend.Add(fmt.Sprintf("ceiling %g %s", fig.Ceiling, fig.Unit), cl)
		maxY = math.Max(maxY, fig.Ceiling)
	}
	p.Title.Text = fmt.Sprintf("%s: %s", t.Name, metric)
	p.Y.Label.Text = fmt.Sprintf("%s (%s)", metric, fig.Unit)
	p.X.Min, p.X.Max = minX/1.3, maxX*1.3
	p.Y.Min, p.Y.Max = 0, maxY*1.08
	if p.Y.Max == 0 {
		p.Y.Max = 1
	}
	svg, err := render(p)
	fig.SVG = svg
	return fig, err
}

// plainTicks are gonum's default ticks labelled as the numbers read
// ("750", not "750.00").
var plainTicks = plot.TickerFunc(func(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
})

// render draws p as an SVG document (no XML prolog) of the figure size,
// the legend right of the plot area, where it covers no curve, band,
// gridline or ceiling line.
func render(p *plot.Plot) ([]byte, error) {
	legend := p.Legend
	p.Legend = plot.NewLegend()
	legend.Top, legend.Left, legend.Padding = true, true, vg.Points(3)
	c := vgsvg.New(plotWidth, plotHeight)
	dc := draw.New(c)
	r := legend.Rectangle(dc)
	legendW := r.Max.X - r.Min.X + vg.Points(12)
	p.Draw(draw.Crop(dc, 0, -legendW, 0, 0))
	legend.Draw(draw.Crop(dc, plotWidth-legendW+vg.Points(6), 0, 0, -vg.Points(24)))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	svg := buf.Bytes()
	if i := bytes.Index(svg, []byte("<svg")); i > 0 {
		svg = svg[i:]
	}
	return svg, nil
}

// plotLabels draws a metric measured once per label set (gemm's tflops
// per dtype and GPU, a training run's tokens/s): a bar per label set,
// named as the reports name its curves, coloured by its verdict (failing,
// warning), with the baseline reference of a judged value as a dashed
// tick over its bar. Summaries are left out: they repeat measured values.
func plotLabels(t result.Test, _ *sku.SKU, metric string) (Figure, error) {
	fig := Figure{Metric: metric, Kind: result.PlotLabels}
	name := curveNamer(t.Metrics)
	type bar struct {
		name     string
		value    float64
		expected *float64
		status   result.Status
	}
	var bars []bar
	maxY := 0.0
	for _, m := range t.Metrics {
		if m.Name != metric || m.Summary != "" || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			continue
		}
		fig.Unit = m.Unit
		n := name(m.Metric)
		if m.Size > 0 {
			n += " at " + result.FormatBytes(m.Size)
		}
		bars = append(bars, bar{n, m.Value, m.Expected, m.Status})
		maxY = math.Max(maxY, m.Value)
		if m.Expected != nil {
			maxY = math.Max(maxY, *m.Expected)
		}
	}
	if len(bars) == 0 {
		return fig, fmt.Errorf("no measured values")
	}
	p := plot.New()
	p.Add(plotter.NewGrid())
	names := make([]string, len(bars))
	for i, b := range bars {
		names[i] = b.name
		fig.Curves = append(fig.Curves, b.name)
		col := placementColor["out-of-place"]
		switch b.status {
		case result.Fail:
			col = failColor
		case result.Warn:
			col = warnColor
		}
		// One bar chart per bar: each takes its own colour, at its own
		// place on the nominal axis.
		vals := make(plotter.Values, len(bars))
		vals[i] = b.value
		bc, err := plotter.NewBarChart(vals, vg.Points(14))
		if err != nil {
			return fig, err
		}
		bc.Color, bc.LineStyle.Width = faded(col, 0xc0), 0
		p.Add(bc)
		if b.expected != nil {
			fig.Bands++
			ref, err := plotter.NewLine(plotter.XYs{{X: float64(i) - 0.35, Y: *b.expected}, {X: float64(i) + 0.35, Y: *b.expected}})
			if err != nil {
				return fig, err
			}
			ref.Color, ref.Width = color.RGBA{A: 0xff}, vg.Points(1.2)
			ref.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(ref)
			if fig.Bands == 1 {
				p.Legend.Add("baseline reference", ref)
			}
		}
	}
	p.NominalX(names...)
	if len(names) > 6 {
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	}
	p.Title.Text = fmt.Sprintf("%s: %s", t.Name, metric)
	p.Y.Label.Text = fmt.Sprintf("%s (%s)", metric, fig.Unit)
	p.Y.Min, p.Y.Max = 0, maxY*1.08
	if p.Y.Max == 0 {
		p.Y.Max = 1
	}
	svg, err := render(p)
	fig.SVG = svg
	return fig, err
}

// plotSteps draws a metric over its "step" label, one line per set of
// the other labels (each GPU's tokens/s at each training step).
func plotSteps(t result.Test, _ *sku.SKU, metric string) (Figure, error) {
	fig := Figure{Metric: metric, Kind: result.PlotSteps}
	lines := map[string]plotter.XYs{}
	var order []string
	for _, m := range t.Metrics {
		st, err := strconv.Atoi(m.Labels["step"])
		if m.Name != metric || err != nil || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			continue
		}
		fig.Unit = m.Unit
		rest := map[string]string{}
		for k, v := range m.Labels {
			if k != "step" {
				rest[k] = v
			}
		}
		n := metric
		if len(rest) > 0 {
			var kv []string
			for k, v := range rest {
				kv = append(kv, k+"="+v)
			}
			sort.Strings(kv)
			n += " {" + strings.Join(kv, ", ") + "}"
		}
		if _, ok := lines[n]; !ok {
			order = append(order, n)
		}
		lines[n] = append(lines[n], plotter.XY{X: float64(st), Y: m.Value})
	}
	if len(order) == 0 {
		return fig, fmt.Errorf("no measured values")
	}
	sort.Strings(order)
	p := plot.New()
	p.Add(plotter.NewGrid())
	for i, n := range order {
		xy := lines[n]
		sort.Slice(xy, func(a, b int) bool { return xy[a].X < xy[b].X })
		l, err := plotter.NewLine(xy)
		if err != nil {
			return fig, err
		}
		l.Color, l.Width = otherColors[i%len(otherColors)], vg.Points(1.5)
		if i == 0 {
			l.Color = placementColor["out-of-place"]
		}
		p.Add(l)
		if len(order) <= 8 {
			p.Legend.Add(n, l)
		}
		fig.Curves = append(fig.Curves, n)
	}
	p.Title.Text = fmt.Sprintf("%s: %s per step", t.Name, metric)
	p.X.Label.Text = "step"
	p.Y.Label.Text = fmt.Sprintf("%s (%s)", metric, fig.Unit)
	p.Y.Min = 0
	svg, err := render(p)
	fig.SVG = svg
	return fig, err
}

// plotWidth and plotHeight are a figure's size: about the width of the
// HTML report's page (1100 px), so the page shows it at its own scale.
const (
	plotWidth  = 11 * vg.Inch
	plotHeight = 4.4 * vg.Inch
)

// sizeTicks labels a log-scale message-size axis at powers of two as
// people read nccl-tests sizes: 8 B, 1 KiB, 1 MiB, 1 GiB.
type sizeTicks struct{}

// Ticks implements plot.Ticker.
func (sizeTicks) Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max <= min {
		return nil
	}
	lo, hi := int(math.Ceil(math.Log2(min))), int(math.Floor(math.Log2(max)))
	step := 1
	for (hi-lo)/step > 12 {
		step++
	}
	var ts []plot.Tick
	for k := lo; k <= hi; k++ {
		t := plot.Tick{Value: math.Exp2(float64(k))}
		if k%step == 0 {
			t.Label = result.FormatBytes(int64(1) << uint(k))
		}
		ts = append(ts, t)
	}
	return ts
}
