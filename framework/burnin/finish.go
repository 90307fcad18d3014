package burnin

// This file: a burn-in's own reports (burnin.txt, burnin.html), its
// sign-off (a manifest over the whole folder, cycles included) and its
// verification (every cycle verified as a run, the record re-derived).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	twopt "github.com/olekukonko/tablewriter/tw"

	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
)

// The burn-in's reports in its folder, beside File.
const (
	TextReport = "burnin.txt"
	HTMLReport = "burnin.html"
)

// ExitCode is the exit code of a burn-in with this record (README, Exit
// codes): a burn-in that judged no cycle exits 4, as a run that judged
// nothing.
func ExitCode(rec *Record) int {
	switch rec.Status {
	case result.Pass, result.Warn:
		return result.ExitPass
	case result.Fail:
		return result.ExitFail
	case result.Error:
		return result.ExitError
	}
	return result.ExitNothingJudged
}

// Text renders the record for people: the verdict, each cycle, each
// finding. Every byte is masked and made printable.
func Text(rec *Record) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "burn-in: SKU %s, suite %s, scope %s, launcher %s, %s, started %s\n", rec.SKU, rec.Suite, rec.Scope, rec.Launcher, planText(rec.Plan), rec.Started.Format(time.RFC3339))
	tw := tablewriter.NewTable(&b, tablewriter.WithRowAutoWrap(twopt.WrapNone), tablewriter.WithHeaderAutoFormat(twopt.Off))
	tw.Header([]string{"Cycle", "Status", "Took", "Detail"})
	for _, c := range rec.Listed {
		st := strings.ToUpper(string(c.Status))
		if c.Interrupted {
			st += " (interrupted)"
		}
		_ = tw.Append([]string{fmt.Sprint(c.N), st, c.Duration.Round(time.Second).String(), c.Message})
	}
	_ = tw.Render()
	fmt.Fprintf(&b, "%s ran; listed: the first, each that did not pass, and the last\n", result.Count(rec.Ran, "cycle"))
	if rec.Unlisted > 0 {
		fmt.Fprintf(&b, "%s more did not pass (not listed; every cycle is in its folder)\n", result.Count(rec.Unlisted, "cycle"))
	}
	for _, f := range rec.Findings {
		fmt.Fprintf(&b, "%s %s: %s\n", strings.ToUpper(string(f.Status)), f.Rule, f.Message)
	}
	for _, n := range rec.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	fmt.Fprintf(&b, "%s\n", Verdict(rec))
	return redact.Printable(redact.String(b.String()))
}

// Verdict is the burn-in's closing line.
func Verdict(rec *Record) string {
	judged := rec.Ran - rec.ByStatus[interrupted]
	counts := map[string]int{}
	for _, f := range rec.Findings {
		counts[f.Rule]++
	}
	var rules []string
	for _, r := range []string{RuleCycle, RuleDrift, RuleSpread, RuleErrors} {
		if counts[r] > 0 {
			rules = append(rules, fmt.Sprintf("%d %s", counts[r], r))
		}
	}
	find := "no finding"
	if len(rules) > 0 {
		find = strings.Join(rules, ", ")
	}
	short := ""
	if !Done(rec) {
		short = fmt.Sprintf(" (stopped short of its plan, %s: --resume continues it)", planText(rec.Plan))
	}
	return fmt.Sprintf("BURN-IN %s%s: %s judged over %s (drift band %.0f%%, worst drift %.1f%%); %s",
		strings.ToUpper(string(rec.Status)), short, result.Count(judged, "cycle"), rec.Spent.Round(time.Second), 100*rec.Plan.Drift, 100*rec.WorstDrift, find)
}

func planText(p Plan) string {
	var parts []string
	if p.Duration > 0 {
		parts = append(parts, "for "+p.Duration.String())
	}
	if p.Cycles > 0 {
		parts = append(parts, fmt.Sprintf("at most %d cycles", p.Cycles))
	}
	return strings.Join(parts, ", ")
}

var page = template.Must(template.New("burnin").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>gpuaccept burn-in {{.R.SKU}} {{.R.Suite}}</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
.fail,.error{color:#b00}.warn{color:#a60}.pass{color:#070}</style></head><body>
<h1>Burn-in: SKU {{.R.SKU}}, suite {{.R.Suite}}, scope {{.R.Scope}}</h1>
<p class="{{.R.Status}}"><b>{{.Verdict}}</b></p>
<p>Launcher {{.R.Launcher}}, {{.Plan}}, started {{.Started}}. Each cycle is a results folder of its own: its report.html plots the telemetry sampled beside every test.</p>
{{if .R.Findings}}<h2>Findings</h2><table><tr><th>Rule</th><th>Status</th><th>Cycle</th><th>GPU</th><th>What</th></tr>
{{range .R.Findings}}<tr><td>{{.Rule}}</td><td class="{{.Status}}">{{.Status}}</td><td>{{if .Cycle}}{{.Cycle}}{{end}}</td><td>{{if .GPU}}GPU {{.GPU}}{{end}} {{.Host}}</td><td>{{.Message}}</td></tr>
{{end}}</table>{{end}}
<h2>Cycles</h2><p>{{.R.Ran}} cycles: {{range $k, $v := .R.ByStatus}}{{$v}} {{$k}} {{end}}; listed: the first, each that did not pass, and the last.</p><table><tr><th>Cycle</th><th>Status</th><th>Started</th><th>Took</th><th>Detail</th></tr>
{{range .R.Listed}}<tr><td><a href="{{.Dir}}/report.html">{{.N}}</a></td><td class="{{.Status}}">{{.Status}}{{if .Interrupted}} (interrupted){{end}}</td><td>{{.Started.Format "2006-01-02 15:04:05Z07:00"}}</td><td>{{.Duration}}</td><td>{{.Message}}</td></tr>
{{end}}</table>
{{range .R.Notes}}<p>note: {{.}}</p>{{end}}
</body></html>
`))

// HTML renders the record as burnin.html, linking each cycle's report.
func HTML(w io.Writer, rec *Record) error {
	return page.Execute(w, struct {
		R                      *Record
		Verdict, Plan, Started string
	}{rec, Verdict(rec), planText(rec.Plan), rec.Started.Format(time.RFC3339)})
}

// writeReports writes burnin.txt and burnin.html into dir, masked.
func writeReports(dir string, rec *Record) error {
	var h bytes.Buffer
	if err := HTML(&h, rec); err != nil {
		return fmt.Errorf("render %s: %w", HTMLReport, err)
	}
	for name, data := range map[string][]byte{TextReport: []byte(Text(rec)), HTMLReport: redact.Bytes(h.Bytes())} {
		if err := safefs.WriteFile(dir, name, data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
		}
	}
	return nil
}

// Finish writes the burn-in's reports and its manifest over the whole
// folder (every cycle's files too), signs it with key when given, and
// returns the sign-off digest.
func Finish(dir string, rec *Record, version string, key *manifest.Key) (string, error) {
	if err := writeReports(dir, rec); err != nil {
		return "", err
	}
	if m, err := manifest.Read(dir); err == nil {
		if ps, err := manifest.Check(dir, m); err == nil && len(ps) == 0 {
			// Nothing changed since it was sealed (a report or a
			// --resume with no cycle left): the seal, and the digest
			// people hold, stay.
			return manifest.Digest(dir)
		}
	}
	for _, name := range []string{layout.Manifest, layout.SigFile} {
		// A burn-in resumed or rebuilt is sealed again over what it
		// holds now: the cycles keep their own manifests. Remove takes a
		// link away, never what it points at.
		if _, err := safefs.Lstat(dir, name); err == nil {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return "", fmt.Errorf("seal burn-in %s again: %w", dir, err)
			}
		}
	}
	// The baseline that judged the cycles is the first cycle's copy.
	if _, err := manifest.WriteWith(dir, version, rec.SKU, CycleDir(1)+"/"+layout.Baseline+"/"+rec.SKU+".yaml"); err != nil {
		return "", fmt.Errorf("seal burn-in %s: %w", dir, err)
	}
	if key != nil {
		if err := key.Sign(dir); err != nil {
			return "", err
		}
	}
	return manifest.Digest(dir)
}

// Verify checks a burn-in folder: its manifest (every file, cycles
// included), each cycle as a results folder of its own (verifyCycle:
// signoff.Verify's findings, "" when it verifies), and burnin.json
// against the record re-derived from the cycles (load:
// resultsdir.Load). It returns one line per problem; none: the folder is
// what it says.
func Verify(ctx context.Context, dir string, load func(string) (*result.Run, error), verifyCycle func(ctx context.Context, dir string) []string) ([]string, *Record, error) {
	rec, err := Read(dir)
	if err != nil {
		return nil, nil, err
	}
	var problems []string
	m, err := manifest.Read(dir)
	if err != nil {
		return nil, rec, err
	}
	ps, err := manifest.Check(dir, m)
	if err != nil {
		return nil, rec, err
	}
	for _, p := range ps {
		problems = append(problems, p.String())
	}
	names, err := Cycles(dir)
	if err != nil {
		return nil, rec, err
	}
	for _, n := range names {
		if Unstarted(filepath.Join(dir, n)) {
			continue // killed as it began: no run to verify; the manifest holds its files
		}
		for _, p := range verifyCycle(ctx, filepath.Join(dir, n)) {
			problems = append(problems, n+": "+p)
		}
	}
	again, _, err := Rederive(dir, rec, load)
	if err != nil {
		problems = append(problems, err.Error())
		return problems, rec, nil
	}
	if a, b := Text(rec), Text(again); a != b || again.Status != rec.Status {
		problems = append(problems, fmt.Sprintf("%s is not what its cycles show: %s", File, firstDiff(a, b)))
	} else if ja, jb := recordJSON(rec), recordJSON(again); ja != jb {
		problems = append(problems, fmt.Sprintf("%s is not what its cycles show: %s", File, firstDiff(ja, jb)))
	}
	for _, name := range []string{TextReport, HTMLReport} {
		var want []byte
		if name == TextReport {
			want = []byte(Text(rec))
		} else {
			var h bytes.Buffer
			if err := HTML(&h, rec); err != nil {
				return nil, rec, err
			}
			want = redact.Bytes(h.Bytes())
		}
		got, err := safefs.ReadFile(dir, name, maxRecord)
		if err != nil || !bytes.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("%s is not the report of %s", name, File))
		}
	}
	return problems, rec, nil
}

// firstDiff names the first line where recorded and derived differ.
func firstDiff(recorded, derived string) string {
	r, d := strings.Split(recorded, "\n"), strings.Split(derived, "\n")
	for i := range max(len(r), len(d)) {
		var a, b string
		if i < len(r) {
			a = r[i]
		}
		if i < len(d) {
			b = d[i]
		}
		if a != b {
			return fmt.Sprintf("line %d recorded %q, re-derived %q", i+1, a, b)
		}
	}
	return "the verdict differs"
}

// recordJSON is rec as burnin.json writes it.
func recordJSON(rec *Record) string {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// CheckSealed refuses to go on with (report, --resume) a burn-in folder
// changed since it was sealed: with a manifest, only what a burn-in
// writes as it goes may differ from it (File and its reports, rewritten
// after every cycle, derived again from the cycles anyway; the files of
// cycles after the last it lists); and every cycle that was signed off
// must still match its own manifest. A folder never sealed (killed before
// its end) is held to its cycles' manifests alone.
func CheckSealed(dir string) error {
	names, err := Cycles(dir)
	if err != nil {
		return err
	}
	var bad []string
	if m, err := manifest.Read(dir); err == nil {
		sealed := map[string]bool{}
		for _, f := range m.Files {
			if c, _, ok := strings.Cut(f.Path, "/"); ok && cycleName.MatchString(c) {
				sealed[c] = true
			}
		}
		ps, err := manifest.Check(dir, m)
		if err != nil {
			return err
		}
		for _, p := range ps {
			c, _, _ := strings.Cut(p.Path, "/")
			switch {
			case p.Path == File || p.Path == TextReport || p.Path == HTMLReport:
			case cycleName.MatchString(c) && !sealed[c] && strings.HasPrefix(p.What, "added since the run"):
			default:
				bad = append(bad, p.String())
			}
		}
	}
	for _, n := range names {
		m, err := manifest.Read(filepath.Join(dir, n))
		if err != nil {
			continue // never signed off: rebuilt from its journal, or killed as it began
		}
		ps, err := manifest.Check(filepath.Join(dir, n), m)
		if err != nil {
			return err
		}
		for _, p := range ps {
			bad = append(bad, n+"/"+p.String())
		}
	}
	if len(bad) > 0 {
		if len(bad) > 5 {
			bad = append(bad[:5], fmt.Sprintf("and %d more", len(bad)-5))
		}
		return fmt.Errorf("the folder changed since it was sealed (gpuaccept verify %s names every difference): %s", dir, strings.Join(bad, "; "))
	}
	return nil
}
