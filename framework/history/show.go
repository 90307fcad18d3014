package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// Options are gpuaccept history's flags.
type Options struct {
	// By groups the table: node, gpu, nic or test (By*).
	By string
	// Host, GPU (serial or UUID), NIC (GUID or adapter name), Test and
	// Metric select the points (Filter).
	Host, GPU, NIC, Test, Metric string
	// Format is table, json or html (a trend plot).
	Format string
	// Store is the --history value (Open).
	Store string
	// All lists every point; without it the table and JSON hold the
	// latest point of each part and series (Latest). The HTML plot has
	// every point whatever All says.
	All bool
	// Verify checks each folder before import (ImportVerified): the
	// command sets it to gpuaccept verify's checks; nil imports nothing.
	Verify Verifier
}

// The groupings of --by.
const (
	ByNode = "node"
	ByGPU  = "gpu"
	ByNIC  = "nic"
	ByTest = "test"
)

// Main runs gpuaccept history with args, the words after the flags: none
// (list the points o selects: the latest of each part and series unless
// o.All), "import DIR..." (ImportVerified: each folder, or each cycle of
// a burn-in folder, verified with o.Verify, then imported) or "drift"
// (Drift, its lines kept and ordered by --by as the table's rows are:
// ByDrift). It returns the exit code and the error to print: a
// bad flag or word is result.ExitUsage, as is a store that does not open
// or a folder that does not import (every other folder is imported
// still).
func Main(ctx context.Context, o Options, args []string, stdout, stderr io.Writer) (int, error) {
	switch o.By {
	case ByNode, ByGPU, ByNIC, ByTest:
	default:
		return result.ExitUsage, fmt.Errorf("history: --by %q: want node, gpu, nic or test", o.By)
	}
	switch o.Format {
	case "table", "json", "html":
	default:
		return result.ExitUsage, fmt.Errorf("history: --format %q: want table, json or html", o.Format)
	}
	what := ""
	if len(args) > 0 {
		what, args = args[0], args[1:]
	}
	if what != "import" && len(args) > 0 || what != "" && what != "import" && what != "drift" {
		return result.ExitUsage, fmt.Errorf("history: want no argument, import DIR... or drift, not %q", strings.Join(append([]string{what}, args...), " "))
	}
	if what == "import" && len(args) == 0 {
		return result.ExitUsage, errors.New("history import: want the results folders to import")
	}
	s, err := Open(ctx, o.Store)
	if err != nil {
		return result.ExitUsage, err
	}
	defer s.Close()
	f := Filter{Host: o.Host, GPU: o.GPU, NIC: o.NIC, Test: o.Test, Metric: o.Metric}
	switch what {
	case "import":
		var errs []error
		for _, dir := range args {
			ims, err := ImportVerified(ctx, s, dir, o.Verify)
			for _, im := range ims {
				fmt.Fprintln(stdout, redact.PrintableLine(im.String()))
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return result.ExitUsage, errors.Join(errs...)
		}
		return result.ExitPass, nil
	case "drift":
		lines, err := Drift(ctx, s, f)
		if err != nil {
			return result.ExitUsage, err
		}
		return result.ExitPass, showDrift(ctx, s, f, o.Format, ByDrift(lines, o.By), o.By, stdout)
	}
	points, err := s.Points(ctx, f)
	if err != nil {
		return result.ExitUsage, err
	}
	all := len(points)
	if !o.All && o.Format != "html" {
		points = Latest(points)
	}
	switch o.Format {
	case "json":
		if points == nil {
			points = []Point{} // [], not null, for scripts
		}
		return result.ExitPass, writeJSON(stdout, points)
	case "html":
		return result.ExitPass, HTML(stdout, s.Where(), points, nil)
	}
	points = byPart(points, o.By)
	if len(points) == 0 {
		what := ""
		if o.By == ByGPU || o.By == ByNIC {
			what = " and names a " + strings.ToUpper(o.By) + " (--by " + o.By + ")"
		}
		fmt.Fprintf(stdout, "no point in history store %s matches%s\n", s.Where(), what)
		return result.ExitPass, nil
	}
	if !o.All {
		fmt.Fprintf(stdout, "The latest value of each part and series: %s of %s in history store %s (--all lists every one).\n",
			result.Count(len(points), "row"), result.Count(all, "point"), s.Where())
	}
	return result.ExitPass, Table(stdout, points, o.By)
}

// Latest keeps, of points (oldest first, as Points returns them), the
// latest of each part and series (seriesOf: one part, SKU, GPU model and
// test, metric, labels and size), in time order. A point that names no
// part is kept by its run's SKU and series alone; a value that is no
// number (an ERROR) is kept too: the latest verdict is what a reader
// needs.
func Latest(points []Point) []Point {
	last := map[string]int{}
	for i, p := range points {
		part, _ := PartOf(p)
		last[seriesOf(part, p)] = i
	}
	out := make([]Point, 0, len(last))
	for i, p := range points {
		part, _ := PartOf(p)
		if last[seriesOf(part, p)] == i {
			out = append(out, p)
		}
	}
	return out
}

// byPart leaves out of points, grouped by by, those that name no part of
// that kind: by gpu, the points of no GPU; by nic, of no NIC.
func byPart(points []Point, by string) []Point {
	if by != ByGPU && by != ByNIC {
		return points
	}
	var out []Point
	for _, p := range points {
		if by == ByGPU && cmpOr(p.GPUSerial, p.GPUUUID) != "" || by == ByNIC && cmpOr(p.NICGUID, p.NIC) != "" {
			out = append(out, p)
		}
	}
	return out
}

// ByDrift keeps and orders drift lines as --by does the table's rows: by
// gpu, the GPUs' lines only, by serial; by nic, the NICs' only, by GUID
// or name; by test, every line by test; by node, every line by the host
// of its latest value. Lines that tie keep Drift's order.
func ByDrift(lines []DriftLine, by string) []DriftLine {
	var out []DriftLine
	for _, l := range lines {
		if by == ByGPU && l.Part.Kind != "gpu" || by == ByNIC && l.Part.Kind != "nic" {
			continue
		}
		out = append(out, l)
	}
	key := func(l DriftLine) string {
		switch by {
		case ByTest:
			return l.Test
		case ByNode:
			return l.Host
		}
		return l.Part.ID
	}
	sort.SliceStable(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

func showDrift(ctx context.Context, s Store, f Filter, format string, lines []DriftLine, by string, w io.Writer) error {
	switch format {
	case "json":
		if lines == nil {
			lines = []DriftLine{}
		}
		return writeJSON(w, lines)
	case "html":
		points, err := s.Points(ctx, f)
		if err != nil {
			return err
		}
		return HTML(w, s.Where(), points, lines)
	}
	if len(lines) == 0 {
		what := ""
		if by == ByGPU || by == ByNIC {
			what = " (--by " + by + ": of the " + strings.ToUpper(by) + "s alone)"
		}
		_, err := fmt.Fprintf(w, "no part in history store %s was measured by two runs or more of one SKU and GPU model%s\n", s.Where(), what)
		return err
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.String() + "\n")
	}
	_, err := io.WriteString(w, redact.Printable(b.String()))
	return err
}

func writeJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// shortDigest is a digest's first 12 hex digits, for tables.
func shortDigest(d string) string {
	h := strings.TrimPrefix(d, "sha256:")
	return h[:min(len(h), 12)]
}

// Table writes points as a table grouped by by (ByNode, ByGPU, ByNIC,
// ByTest): that column first and sorted on, then time. Grouped by gpu or
// nic, points measured on no GPU or NIC are left out.
func Table(w io.Writer, points []Point, by string) error {
	first := map[string]func(Point) string{
		ByNode: func(p Point) string { return p.Host },
		ByGPU:  func(p Point) string { return cmpOr(p.GPUSerial, p.GPUUUID) },
		ByNIC:  func(p Point) string { return cmpOr(p.NICGUID, p.NIC) },
		ByTest: func(p Point) string { return p.Test },
	}[by]
	var rows [][]string
	keep := byPart(points, by)
	sort.SliceStable(keep, func(i, j int) bool { return first(keep[i]) < first(keep[j]) })
	// The grouping column comes first and is not repeated.
	cols := []struct {
		by, name string
		of       func(Point) string
	}{
		{"", "Time (UTC)", func(p Point) string { return p.At.UTC().Format("2006-01-02 15:04") }},
		{ByNode, "Host", func(p Point) string { return p.Host }},
		{ByGPU, "GPU serial", func(p Point) string { return cmpOr(p.GPUSerial, p.GPUUUID) }},
		{ByNIC, "NIC", func(p Point) string { return strings.TrimSpace(p.NIC + " " + p.NICGUID) }},
		{ByTest, "Test", func(p Point) string { return p.Test }},
		{"", "SKU", func(p Point) string { return p.SKU }},
		{"", "Metric", func(p Point) string { return metricText(p.Metric, p.Labels, p.Size) }},
		{"", "Value", func(p Point) string {
			if math.IsNaN(p.Value) {
				return "-"
			}
			return valueText(p.Value, p.Unit)
		}},
		{"", "Status", func(p Point) string { return strings.ToUpper(p.Status) }},
		{"", "Run", func(p Point) string { return shortDigest(p.Digest) }},
	}
	header := []string{map[string]string{ByNode: "Node", ByGPU: "GPU serial", ByNIC: "NIC", ByTest: "Test"}[by]}
	for _, c := range cols {
		if c.by != by {
			header = append(header, c.name)
		}
	}
	for _, p := range keep {
		row := []string{first(p)}
		for _, c := range cols {
			if c.by != by {
				row = append(row, c.of(p))
			}
		}
		rows = append(rows, row)
	}
	var b strings.Builder
	t := tablewriter.NewTable(&b, tablewriter.WithRowAutoWrap(tw.WrapNone), tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header(header)
	if err := t.Bulk(rows); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := io.WriteString(w, redact.Printable(b.String()))
	return err
}

// maxLines is how many series one trend plot draws; the page says how
// many more there were.
const maxLines = 10

// trend is one figure: a test's metric over time, a line per part and
// series.
type trend struct {
	Title string
	More  int
	SVG   template.HTML
}

var trendColors = []color.RGBA{{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, {R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, {R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
	{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, {R: 0xbc, G: 0xbd, B: 0x22, A: 0xff}, {R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}}

// trends draws a figure per test and metric of points: each part's
// series (PartOf, seriesKey) as a line over time, the first maxLines.
func trends(points []Point) ([]trend, error) {
	type fig struct {
		title  string
		unit   string
		series []series
	}
	idx := map[string]int{}
	var figs []fig
	for _, g := range group(points) {
		p := g.points[0]
		k := p.Test + "\x00" + p.Metric + "\x00" + p.Unit
		i, ok := idx[k]
		if !ok {
			i = len(figs)
			idx[k] = i
			figs = append(figs, fig{title: p.Test + " " + p.Metric, unit: p.Unit})
		}
		figs[i].series = append(figs[i].series, g)
	}
	var out []trend
	for _, f := range figs {
		pl := plot.New()
		pl.Title.Text = f.title
		pl.Y.Label.Text = f.unit
		pl.X.Tick.Marker = plot.TimeTicks{Format: "2006-01-02\n15:04"}
		for i, s := range f.series[:min(len(f.series), maxLines)] {
			xy := make(plotter.XYs, len(s.points))
			for j, p := range s.points {
				xy[j].X, xy[j].Y = float64(p.At.Unix()), p.Value
			}
			l, sc, err := plotter.NewLinePoints(xy)
			if err != nil {
				return nil, fmt.Errorf("plot %s: %w", f.title, err)
			}
			c := trendColors[i%len(trendColors)]
			l.Color, sc.Color = c, c
			p := s.points[0]
			pl.Legend.Add(s.part.Name+" ("+p.SKU+") "+metricText(p.Metric, p.Labels, p.Size), l, sc)
			pl.Add(l, sc)
		}
		// The legend beside the plot, not over its points (as
		// framework/report draws its figures).
		legend := pl.Legend
		pl.Legend = plot.NewLegend()
		legend.Top, legend.Left, legend.Padding = true, true, vg.Points(3)
		c := vgsvg.New(10*vg.Inch, 4*vg.Inch)
		dc := draw.New(c)
		r := legend.Rectangle(dc)
		legendW := r.Max.X - r.Min.X + vg.Points(12)
		pl.Draw(draw.Crop(dc, 0, -legendW, 0, 0))
		legend.Draw(draw.Crop(dc, 10*vg.Inch-legendW+vg.Points(6), 0, 0, -vg.Points(24)))
		var buf bytes.Buffer
		if _, err := c.WriteTo(&buf); err != nil {
			return nil, fmt.Errorf("plot %s: %w", f.title, err)
		}
		svg := buf.Bytes()
		if i := bytes.Index(svg, []byte("<svg")); i > 0 {
			svg = svg[i:]
		}
		out = append(out, trend{Title: f.title, More: max(0, len(f.series)-maxLines), SVG: template.HTML(svg)}) // #nosec: gonum's SVG escapes its text
	}
	return out, nil
}

var page = template.Must(template.New("history").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>gpuaccept history</title>
<style>body{font-family:sans-serif;margin:2em}h2{font-size:1.1em}pre{background:#f6f6f6;padding:.5em}</style></head>
<body><h1>gpuaccept history</h1>
<p>Store {{.Where}}: {{.Points}} points.</p>
{{if .Drift}}<h2>Drift against each part's acceptance</h2><pre>{{range .Drift}}{{.}}
{{end}}</pre>{{end}}
{{range .Trends}}<h2>{{.Title}}</h2>{{.SVG}}{{if .More}}<p>and {{.More}} more series (narrow with --host, --serial, --nic, --test).</p>{{end}}
{{else}}<p>No point to plot.</p>{{end}}
</body></html>
`))

// HTML writes a page with a trend plot per test and metric of points
// (a line per part and series, over time) and the drift lines, if any;
// where names the store.
func HTML(w io.Writer, where string, points []Point, drift []DriftLine) error {
	ts, err := trends(points)
	if err != nil {
		return err
	}
	var lines []string
	for _, d := range drift {
		lines = append(lines, d.String())
	}
	return page.Execute(w, struct {
		Where  string
		Points int
		Drift  []string
		Trends []trend
	}{where, len(points), lines, ts})
}
