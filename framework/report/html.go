package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// perKeys are the metric labels that split a test's numbers by node or by
// pair of nodes; the HTML report shows such metrics as a table.
var perKeys = []string{"node", "host", "pair", "server", "client", "rank", "gpu", "hca"}

type htmlTest struct {
	result.Test
	ID       string
	Figures  []htmlFigure
	Tables   []perTable
	Judged   []htmlPoint
	Attempts int
	// Tel is the test's telemetry section (TelemetryPlot, telemetryRows);
	// nil for a test without telemetry.
	Tel *htmlTelemetry
}

// htmlPoint is a point outside its band, with the name of its curve in
// its test (curveNamer).
type htmlPoint struct {
	result.Judged
	Curve string
}

type htmlFigure struct {
	Figure
	Inline template.HTML
}

type perTable struct {
	Key  string
	Rows []result.Judged
}

type htmlPage struct {
	Run *result.Run
	// Verdict heads the page (Verdict: NotSignedOff where it applies).
	Verdict string
	Summary string
	Rows    [][]string
	// Efficiency are efficiencyRows: under the verdicts.
	Efficiency [][]string
	Tests      []htmlTest
	Baseline   string
	// SKUSource is SKUSourceLine: a site's own SKU file judged the run.
	SKUSource string
	Locs      []htmlLoc
}

// HTML writes the run as one self-contained HTML page (no script, no
// network: styles and SVG plots are inline): the verdict table on top, then
// per test its plots (measured curves against the baseline band, see Plot),
// tables of per-node or per-pair numbers where the metrics carry such
// labels, the points outside their bands, checks and diagnostics; then a
// the telemetry sampled beside it (what its GPUs did while it ran:
// TelemetryPlot's figures on the test's time axis, a row per GPU, the
// sampler's notes); then a section per localisation: the suspects with their evidence, per stage
// its runs (slow ones marked, each linked to its own report.html) and,
// for node pairs (up to 32 nodes) and HCA pairs, a matrix of figures. s is
// the SKU that judged the run, for the bands; nil draws curves only.
func HTML(w io.Writer, run *result.Run, s *sku.SKU) error {
	page := htmlPage{Run: run, Verdict: Verdict(run), Summary: Summary(run), Rows: rows(run), Efficiency: efficiencyRows(run), Locs: htmlLocalisations(run), SKUSource: SKUSourceLine(run)}
	for i, t := range run.Tests {
		page.Rows[i][5] = t.Message // a page wraps its cells: the text table's cut is not needed
	}
	if s != nil {
		page.Baseline = s.File
	}
	for i, t := range run.Tests {
		ht := htmlTest{Test: t, ID: fmt.Sprintf("t%d", i), Attempts: len(t.Attempts)}
		figs, err := Plot(t, s)
		if err != nil {
			return err
		}
		for _, f := range figs {
			ht.Figures = append(ht.Figures, htmlFigure{Figure: f, Inline: template.HTML(f.SVG)}) // #nosec: gonum's SVG escapes its text
		}
		ht.Tables = perTables(t)
		if t.Telemetry != nil {
			tfigs, err := TelemetryPlot(t)
			if err != nil {
				return err
			}
			ht.Tel = &htmlTelemetry{Rows: telemetryRows(t.Telemetry), Notes: t.Telemetry.Notes}
			for _, f := range tfigs {
				ht.Tel.Figures = append(ht.Tel.Figures, htmlFigure{Figure: f, Inline: template.HTML(f.SVG)}) // #nosec: gonum's SVG escapes its text
			}
		}
		name := curveNamer(t.Metrics)
		for _, m := range t.Metrics {
			if m.Status == result.Fail || m.Status == result.Warn {
				ht.Judged = append(ht.Judged, htmlPoint{Judged: m, Curve: name(m.Metric)})
			}
		}
		page.Tests = append(page.Tests, ht)
	}
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, page); err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	// html/template escapes markup, not terminal controls: an ESC or OSC
	// sequence from a node's output would still act on whoever reads the
	// page with cat or less (redact.Printable, as the text reports).
	_, err := io.WriteString(w, redact.Printable(b.String()))
	return err
}

// WriteHTML writes the HTML report of run to path, masked, a file the
// user named: a link there is refused, not written through
// (safefs.WriteNamed).
func WriteHTML(path string, run *result.Run, s *sku.SKU) error {
	return writeHTML(path, masked(run), s)
}

func writeHTML(path string, run *result.Run, s *sku.SKU) error {
	var b bytes.Buffer
	if err := HTML(&b, run, s); err != nil {
		return err
	}
	if err := safefs.WriteNamed(path, redact.Env().Bytes(b.Bytes()), 0o644); err != nil {
		return fmt.Errorf("write HTML report %s: %w", path, err)
	}
	return nil
}

func perTables(t result.Test) []perTable {
	var out []perTable
	for _, k := range perKeys {
		var rows []result.Judged
		for _, m := range t.Metrics {
			if m.Labels[k] != "" {
				rows = append(rows, m)
			}
		}
		if len(rows) == 0 {
			continue
		}
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].Labels[k] < rows[j].Labels[k] })
		out = append(out, perTable{Key: k, Rows: rows})
	}
	return out
}

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"upper":     func(s result.Status) string { return strings.ToUpper(string(s)) },
	"checkText": checkText,
	"bytes":     result.FormatBytes,
	"curveBut": func(m result.Judged, key string) string {
		l := map[string]string{}
		for k, v := range m.Labels {
			if k != key {
				l[k] = v
			}
		}
		m.Labels = l
		return CurveName(m.Metric)
	},
	"num":    func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"status": func(s string) string { return strings.ToLower(s) },
	"deref": func(p *float64) string {
		if p == nil {
			return ""
		}
		return fmt.Sprintf("%.2f", *p)
	},
	"dur": func(t result.Test) string { return t.Duration.Round(1e6).String() },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gpuaccept {{.Run.SKU}} {{.Run.Suite}}: {{.Verdict}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: .6em 0; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .25em .5em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.pass { background: #d8f0d8; } .warn { background: #fff0c0; } .fail { background: #f8d0d0; } .error { background: #e8c8f0; } .skip { background: #eee; }
.badge { font-weight: bold; padding: 0 .4em; border-radius: 3px; }
.plot svg { width: 100%; height: auto; }
pre { background: #f7f7f7; padding: .5em; overflow-x: auto; font-size: .85em; }
.matrix td { text-align: right; white-space: nowrap; } .matrix th { white-space: nowrap; }
.evidence { margin: 0; padding-left: 1.2em; }
dl { display: grid; grid-template-columns: max-content auto; gap: .1em 1em; } dt { font-weight: bold; }
</style>
</head>
<body>
<h1>gpuaccept: <span class="badge {{.Run.Status}}">{{.Verdict}}</span> SKU {{.Run.SKU}}, suite {{.Run.Suite}}</h1>
<p>{{.Summary}}</p>
{{range .Run.Notes}}<p class="note">note: {{.}}</p>
{{end}}<dl>
<dt>scope</dt><dd>{{.Run.Scope}} (nodes x GPUs per node)</dd>
<dt>launcher</dt><dd>{{.Run.Launcher}}</dd>
{{if .Run.Hosts}}<dt>hosts</dt><dd>{{range $i, $h := .Run.Hosts}}{{if $i}}, {{end}}{{$h}}{{end}}</dd>{{end}}
<dt>started</dt><dd>{{.Run.Started.Format "2006-01-02 15:04:05 MST"}}</dd>
<dt>gpuaccept</dt><dd>{{.Run.Version}}</dd>
{{if .Baseline}}<dt>baseline</dt><dd>{{.Baseline}}</dd>{{end}}
{{with .SKUSource}}<dt>SKU file</dt><dd class="warn">{{.}}</dd>{{end}}
</dl>
{{if or .Rows (not .Locs)}}<table id="verdicts">
<tr><th>Test</th><th>Status</th><th>Basis</th><th>Measured</th><th>Baseline: band</th><th>Detail</th></tr>
{{range $i, $r := .Rows}}<tr class="{{status (index $r 1)}}"><td><a href="#t{{$i}}">{{index $r 0}}</a></td><td>{{index $r 1}}</td><td>{{index $r 2}}</td><td>{{index $r 3}}</td><td>{{index $r 4}}</td><td>{{index $r 5}}</td></tr>
{{end}}</table>{{end}}
{{if .Efficiency}}<table id="efficiency">
<tr><th>Test</th><th>Against the datasheet</th><th>Efficiency</th></tr>
{{range .Efficiency}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td><td>{{index . 2}}</td></tr>
{{end}}</table>{{end}}
{{if .Run.Hardware}}<table id="hardware"><caption>Hardware the raw outputs show</caption>
<tr><th>Host</th><th>Kind</th><th>Name</th><th>UUID</th><th>Serial</th><th>Bus id</th><th>GUID</th><th>Seen by</th></tr>
{{range .Run.Hardware}}<tr><td>{{.Host}}</td><td>{{.Kind}}</td><td>{{.Name}}</td><td>{{.UUID}}</td><td>{{.Serial}}</td><td>{{.BusID}}</td><td>{{.GUID}}{{range .PortGUIDs}} port {{.}}{{end}}</td><td>{{range $i, $t := .Tests}}{{if $i}}, {{end}}{{$t}}{{end}}</td></tr>
{{end}}</table>
{{end}}{{if .Locs}}<p id="localisations">Localisations: {{range .Locs}}<a href="#{{.ID}}">{{.Test}}: {{len .Suspects}} suspect{{if ne (len .Suspects) 1}}s{{end}}</a> {{end}}</p>{{end}}
{{range .Tests}}
<h2 id="{{.ID}}">{{.Name}} <span class="badge {{.Status}}">{{upper .Status}}</span></h2>
<p>{{.Message}}</p>
{{if and .Efficiency (ne .Status "error")}}<table class="efficiency"><tr><th>Against the datasheet</th><th>Efficiency</th><th>Source</th></tr>
{{range .Efficiency}}<tr><td>{{.What}}</td><td>{{.Text}}</td><td>{{.Source}}</td></tr>
{{end}}</table>{{end}}
{{if .Attempts}}<p>Earlier attempts: {{range .Test.Attempts}}<span class="badge {{.Status}}">{{upper .Status}}</span> {{.Message}}; {{end}}</p>{{end}}
{{range .Figures}}<div class="plot" data-metric="{{.Metric}}" data-curves="{{len .Curves}}" data-bands="{{.Bands}}">{{.Inline}}</div>
{{end}}
{{if .Judged}}<table class="outside"><tr><th>Point</th><th>Size</th><th>Measured</th><th>Baseline</th><th>Basis</th><th>Band</th><th>Status</th><th>Finding</th></tr>
{{range .Judged}}<tr class="{{.Status}}"><td>{{.Curve}}</td><td>{{if .Size}}{{bytes .Size}}{{end}}</td><td>{{num .Value}} {{.Unit}}{{with .CyclesText}}<br>{{.}}{{end}}</td><td>{{deref .Expected}}</td><td>{{.Basis}}</td><td>{{.Band}}</td><td>{{upper .Status}}</td><td>{{.Message}}</td></tr>
{{end}}</table>{{end}}
{{range .Tables}}<h3>per {{.Key}}</h3>
<table class="per"><tr><th>{{.Key}}</th><th>Metric</th><th>Size</th><th>Measured</th><th>Baseline</th><th>Status</th></tr>
{{$k := .Key}}{{range .Rows}}<tr class="{{.Status}}"><td>{{index .Labels $k}}</td><td>{{curveBut . $k}}</td><td>{{if .Size}}{{bytes .Size}}{{end}}</td><td>{{num .Value}} {{.Unit}}{{with .CyclesText}}<br>{{.}}{{end}}</td><td>{{deref .Expected}}</td><td>{{upper .Status}}</td></tr>
{{end}}</table>
{{end}}
{{with .Tel}}<section class="telemetry">
<h3>Telemetry: what the GPUs did while it ran</h3>
{{range .Figures}}<div class="plot telemetry" data-metric="{{.Metric}}" data-curves="{{len .Curves}}">{{.Inline}}</div>
{{end}}{{if .Rows}}<table class="telemetry"><tr><th>GPU</th><th>Tool</th><th>Samples</th><th>SM clock MHz min/median/max</th><th>Temp max C</th><th>HBM temp max C</th><th>Power max of limit W</th><th>Slowdowns</th><th>PCIe</th><th>New errors</th></tr>
{{range .Rows}}<tr><td>{{.GPU}}</td><td>{{.Tool}}</td><td>{{.Samples}}</td><td>{{.SMClock}}</td><td>{{.Temp}}</td><td>{{.MemTemp}}</td><td>{{.Power}}</td><td{{if .Slow}} class="warn"{{end}}>{{if .Slowdown}}{{.Slowdown}}{{else}}none{{end}}</td><td{{if .Downgraded}} class="fail"{{end}}>{{.PCIe}}</td><td{{if .Errored}} class="fail"{{end}}>{{range $i, $e := .NewErrors}}{{if $i}}<br>{{end}}{{$e}}{{else}}none{{end}}</td></tr>
{{end}}</table>{{end}}
{{range .Notes}}<p class="note">telemetry note: {{.}}</p>
{{end}}</section>
{{end}}{{if .Checks}}<table class="checks"><tr><th>Check</th><th>Result</th></tr>
{{range .Checks}}<tr class="{{if .OK}}pass{{else if .Warn}}warn{{else}}fail{{end}}"><td>{{.Name}}</td><td>{{if .OK}}ok{{else}}{{checkText .}}{{end}}</td></tr>
{{end}}</table>{{end}}
{{if .Diagnostics}}<pre class="diagnostics">{{range .Diagnostics}}{{.Level}}: {{.Message}}{{if .Source}} ({{.Source}}){{end}}
{{end}}</pre>{{end}}
{{if .Commands}}<pre class="commands">{{range .Commands}}$ {{.}}
{{end}}</pre>{{end}}
{{if .Raw}}<p>Raw outputs: {{range .Raw}}<a href="{{.}}">{{.}}</a> {{end}}({{dur .Test}})</p>{{end}}
{{end}}
{{range .Locs}}
<section class="localisation" id="{{.ID}}">
<h2>Localisation of {{.Test}} <span class="badge {{.Status}}">{{len .Suspects}} suspect{{if ne (len .Suspects) 1}}s{{end}}</span></h2>
<p>{{.Heading}}</p>
{{if .Suspects}}<table class="suspects"><tr><th>Suspect</th><th>Kind</th><th>Stage</th><th>Reason</th><th>Evidence</th></tr>
{{range .Suspects}}<tr class="fail"><td>{{.Name}}</td><td>{{.Kind}}</td><td>{{.Stage}}</td><td>{{.Reason}}</td><td><ul class="evidence">{{range .Evidence}}<li>{{.}}</li>{{end}}</ul></td></tr>
{{end}}</table>{{else}}<p class="nosuspect {{.Status}}">{{.NoSuspect}}</p>{{end}}
{{if .Notes}}<ul class="notes">{{range .Notes}}<li>note: {{.}}</li>{{end}}</ul>{{end}}
{{range .Stages}}<h3>{{.Summary}}</h3>
{{range .Matrices}}<table class="matrix" data-kind="{{.Kind}}"><caption>{{.Title}}</caption>
<tr><th>{{.Corner}}</th>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><th>{{.Name}}</th>{{range .Cells}}<td{{if .Class}} class="{{.Class}}"{{end}}{{if .Title}} title="{{.Title}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</table>
{{end}}
<table class="runs"><tr><th>Round</th><th>Hosts</th>{{if .NICs}}<th>NICs</th>{{end}}<th>Status</th><th>Measured</th><th>Reference</th><th>Why</th><th>Folder</th></tr>
{{$nics := .NICs}}{{range .Runs}}<tr class="{{if .Slow}}fail{{else}}pass{{end}}"><td>{{.Round}}</td><td>{{.HostList}}</td>{{if $nics}}<td>{{.NICList}}</td>{{end}}<td>{{upper .Status}}</td><td>{{.Measured}}</td><td>{{.Reference}}</td><td>{{.Why}}</td><td>{{if .Report}}<a href="{{.Report}}">{{.Dir}}</a>{{end}}</td></tr>
{{end}}</table>
{{if .LeftOut}}<p>{{.LeftOut}} more runs at the expected speed are left out here; results.json lists every run.</p>{{end}}
{{end}}
</section>
{{end}}
</body>
</html>
`))
