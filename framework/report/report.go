// Package report renders a run's verdicts: a table for people, JSON for
// programs, JUnit XML for CI systems, Markdown for tickets, and the results
// folder that holds them all next to the raw outputs.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Formats are the --format values.
var Formats = []string{"table", "json", "markdown"}

// CheckFormat refuses a --format value that is none of Formats, naming
// the flag and the known ones.
func CheckFormat(format string) error {
	if !slices.Contains(Formats, format) {
		return fmt.Errorf("unknown --format %q (known: %s)", format, strings.Join(Formats, ", "))
	}
	return nil
}

// Write renders run in the named format (table, json, markdown), masked
// (see masked).
func Write(w io.Writer, format string, run *result.Run) error {
	run = masked(run)
	switch format {
	case "table", "":
		return Table(w, run)
	case "json":
		return JSON(w, run)
	case "markdown":
		return Markdown(w, run)
	}
	return fmt.Errorf("unknown format %q (known: %s)", format, strings.Join(Formats, ", "))
}

// JSON writes the run as one indented JSON document (the CLI contract: a
// top-level "status" and a "tests" list of name/status/metrics). A number
// JSON cannot hold (NaN, ±Inf) is written as 0, its test an error naming it
// (result.Run.Finite), so that the report is always written.
//
// The C1 controls and format characters (U+202E) encoding/json leaves in
// its strings are written as \u escapes (redact.PrintableJSON): the
// document reads the same to a program and cannot act on a terminal.
func JSON(w io.Writer, run *result.Run) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(run.Finite()); err != nil {
		return fmt.Errorf("write JSON report: %w", err)
	}
	if _, err := w.Write(redact.PrintableJSON(b.Bytes())); err != nil {
		return fmt.Errorf("write JSON report: %w", err)
	}
	return nil
}

// headline picks the metric a table row shows: among the judged metrics of
// the worst status, the one furthest from its baseline; when all pass, the
// point at the largest size (the bandwidth people quote), the lower one on a
// tie. A test that measured and was not judged (result.Test.Unjudged)
// shows what it measured all the same (unjudgedHeadline): the figure is
// what its reader must judge by hand. Error rows show none: their numbers
// are not to be trusted.
func headline(t result.Test) (result.Judged, bool) {
	if t.Status == result.Error {
		return result.Judged{}, false
	}
	if t.Unjudged() {
		return unjudgedHeadline(t.Metrics, t.Meanings)
	}
	sev := map[result.Status]int{result.Pass: 1, result.Warn: 2, result.Fail: 3}
	off := func(m result.Judged) float64 {
		if m.Expected == nil || *m.Expected == 0 {
			return 0
		}
		return math.Abs(1 - m.Value / *m.Expected)
	}
	var best result.Judged
	found := false
	for _, m := range t.Metrics {
		if sev[m.Status] == 0 {
			continue
		}
		better := !found || sev[m.Status] > sev[best.Status]
		if found && sev[m.Status] == sev[best.Status] {
			if m.Status == result.Pass {
				better = m.Size > best.Size || m.Size == best.Size && m.Value < best.Value
			} else {
				better = off(m) > off(best)
			}
		}
		if better {
			best, found = m, true
		}
	}
	return best, found
}

// unjudgedHeadline is the point a pass would show of metrics none of which
// was judged, of one metric (the first measured that its plugin declares
// recorded by default, in meanings: nccl-tests' busbw; else the first
// measured): of a curve (sizes), the point at the largest size, the worse
// one on a tie; of labelled values (no size: tflops {dtype=bf16}, bw
// {direction=d2h}), the first one measured, its worst over GPUs and hosts,
// since a pass would show a judged one and none is. Worse is lower, unless
// the plugin declares the metric better lower. false for none.
func unjudgedHeadline(ms []result.Judged, meanings []result.Meaning) (result.Judged, bool) {
	if len(ms) == 0 {
		return result.Judged{}, false
	}
	// which names a value apart from the GPU, host or rank it was
	// measured on.
	which := func(m result.Judged) string {
		k := m.Name
		for _, l := range sortedKeys(m.Labels) {
			if l != "gpu" && l != "host" && l != "rank" {
				k += "\x00" + l + "=" + m.Labels[l]
			}
		}
		return k
	}
	// The metric a baseline records by default is the one judged (and
	// what a pass shows); else the first measured.
	name := ms[0].Name
	for _, m := range ms {
		if mn, ok := result.MeaningOf(meanings, m.Name); ok && mn.Record {
			name = m.Name
			break
		}
	}
	mn, _ := result.MeaningOf(meanings, name)
	worse := func(a, b float64) bool { return a < b }
	if mn.Better == result.BetterLower {
		worse = func(a, b float64) bool { return a > b }
	}
	first := ""
	for _, m := range ms {
		if m.Name == name {
			first = which(m)
			break
		}
	}
	var best result.Judged
	found := false
	for _, m := range ms {
		if m.Name != name {
			continue
		}
		var better bool
		switch {
		case m.Size > 0 || best.Size > 0:
			better = !found || m.Size > best.Size || m.Size == best.Size && worse(m.Value, best.Value)
		default:
			better = which(m) == first && (!found || worse(m.Value, best.Value))
		}
		if better {
			best, found = m, true
		}
	}
	return best, found
}

// maxDetail bounds the Detail column; the full message is in the JSON and
// the JUnit.
const maxDetail = 110

func rows(run *result.Run) [][]string {
	var out [][]string
	for _, t := range run.Tests {
		measured, band := "", ""
		if h, ok := headline(t); ok {
			measured = fmt.Sprintf("%s %.1f %s", h.Name, h.Value, h.Unit)
			if p := h.Labels["placement"]; p != "" {
				measured = fmt.Sprintf("%s %s %.1f %s", h.Name, p, h.Value, h.Unit)
			}
			if l := varyingLabels(h, t.Metrics); h.Size == 0 && l != "" {
				// Not a point of a curve: its labels say which one it is
				// (tflops {dtype=fp32}, bw {direction=d2h}), as findings do.
				measured = fmt.Sprintf("%s {%s} %.1f %s", h.Name, l, h.Value, h.Unit)
			}
			if h.Size > 0 {
				measured += " @ " + result.FormatBytes(h.Size)
			}
			if h.Cycles > 1 {
				// The number shown is the worst cycle's: say so, briefly.
				measured += ", " + strings.SplitN(h.CyclesText(), " (", 2)[0]
			}
			if h.Expected != nil {
				band = fmt.Sprintf("%.1f: %s", *h.Expected, h.Band)
			}
		}
		row := []string{t.Name, strings.ToUpper(string(t.Status)), strings.Join(t.Basis, ", "), measured, band, cut(t.Message, maxDetail)}
		for i := range row {
			// Escaped here, not only on the way out (printable), so
			// that the columns are as wide as what they show.
			row[i] = redact.PrintableLine(row[i])
		}
		out = append(out, row)
	}
	return out
}

// NotSignedOff is the verdict word of a run that measured benchmarks
// without judging them (result.Run.Unjudged), whether or not it judged
// others beside them: its status is skip, but "SKIP" would read as if it
// ran nothing (README, Exit codes: 4 is NOT SIGNED OFF).
const NotSignedOff = "NOT SIGNED OFF"

// Verdict is the word a report heads the run with: its status in capitals
// ("PASS", "FAIL", "SKIP" for a run that ran nothing it could judge), or
// NotSignedOff for a skip in which some benchmark measured without a
// baseline entry, every test such or not.
func Verdict(run *result.Run) string {
	if run.Status == result.Skip && len(run.Unjudged()) > 0 {
		return NotSignedOff
	}
	return strings.ToUpper(string(run.Status))
}

// Summary is the one-line verdict under a table; it names the suspects of
// the run's localisations (the first 5, then how many more), and, for a
// run that is NotSignedOff, the tests measured and not judged.
func Summary(run *result.Run) string {
	counts := map[result.Status]int{}
	for _, t := range run.Tests {
		counts[t.Status]++
	}
	var parts []string
	for _, s := range []result.Status{result.Pass, result.Warn, result.Fail, result.Error, result.Skip} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	scope := "scope " + scopeText(run.Scope)
	if len(run.Tests) == 0 && len(run.Localisations) > 0 {
		// gpuaccept localise runs no test at the whole set's scope.
		parts = append(parts, fmt.Sprintf("%d localised", len(run.Localisations)))
		scope = fmt.Sprintf("%d nodes", len(run.Hosts))
	}
	suite := "suite " + run.Suite
	if len(run.Selected) > 0 {
		// Every report says a run is part of its suite: the tests it left
		// out are not signed off.
		suite += fmt.Sprintf(" (--test %s only)", strings.Join(run.Selected, ","))
	}
	verdict := Verdict(run)
	tally := strings.Join(parts, ", ")
	if b := basisTally(run); b != "" {
		tally += "; " + b
	}
	if verdict == NotSignedOff {
		tally += "; " + run.NotJudgedText()
	}
	return fmt.Sprintf("%s: SKU %s, %s, %s, launcher %s: %s (%s)%s", verdict,
		run.SKU, suite, scope, run.Launcher, tally, run.Duration.Round(time.Millisecond), suspectsSummary(run)+badNodesSummary(run))
}

// header: Basis is on what authority a verdict rests (result.Test.Basis:
// golden, reference, floor; empty where nothing judged the test).
// basisTally says, for a run any of whose verdicts rests on less than
// the site's own recording, on what: "judged on: 1 reference, 3 floor"
// (tests per basis; a test judged on two counts in both); "" when every
// judged test is golden or nothing was judged.
func basisTally(run *result.Run) string {
	counts := map[string]int{}
	weaker := false
	for _, t := range run.Tests {
		for _, b := range t.Basis {
			counts[b]++
			weaker = weaker || b != result.BasisGolden
		}
	}
	if !weaker {
		return ""
	}
	var parts []string
	for _, b := range []string{result.BasisGolden, result.BasisReference, result.BasisFloor} {
		if counts[b] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[b], b))
		}
	}
	return "judged on: " + strings.Join(parts, ", ")
}

var header = []string{"Test", "Status", "Basis", "Measured", "Baseline: band", "Detail"}

// Table writes the verdict table people read, a line per test whose
// telemetry shows a slowdown or new errors (TelemetryLine), then each
// localisation (its suspects, a line per stage and the slow runs), then
// the one-line summary, every control and format character of it escaped
// (printable).
func Table(w io.Writer, run *result.Run) error {
	return printable(w, func(w io.Writer) error { return table(w, run) })
}

// printable writes what render writes to w with every control and format
// character escaped (redact.Printable): test and file names, host names
// and messages quote what a log, a file name or a node gave, and an ESC,
// CR or U+202E in them would rewrite what the terminal or a text editor
// shows (a FAIL row erased, "ALL PASS" written over it).
func printable(w io.Writer, render func(io.Writer) error) error {
	var b strings.Builder
	err := render(&b)
	if _, werr := io.WriteString(w, redact.Printable(b.String())); err == nil {
		err = werr
	}
	return err
}

func table(w io.Writer, run *result.Run) error {
	if len(run.Tests) > 0 || len(run.Localisations) == 0 {
		t := tablewriter.NewTable(w, tablewriter.WithRowAutoWrap(tw.WrapNone), tablewriter.WithHeaderAutoFormat(tw.Off))
		t.Header(header)
		if err := t.Bulk(rows(run)); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
		if err := t.Render(); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
		if err := writeEfficiency(w, run, false); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
		if ls := telemetryLines(run); len(ls) > 0 {
			// A line per test, not a column: the table stays narrow.
			fmt.Fprintf(w, "\n%s\n", strings.Join(ls, "\n"))
		}
	}
	if err := tableLocalisations(w, run); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if len(run.Localisations) > 0 {
		fmt.Fprintln(w)
	}
	writeFaults(w, run, false)
	if l := SKUSourceLine(run); l != "" {
		fmt.Fprintf(w, "note: %s\n", l)
	}
	for _, n := range run.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	_, err := fmt.Fprintln(w, Summary(run))
	return err
}

// SKUSourceLine says, for a run a site's own SKU file judged (results.json
// sku_source, --baselines DIR), which file: its bands, floors and entries
// are the site's, not the ones gpuaccept carries, and every report says so
// (verify compares them with the built-in file). "" for a built-in SKU or
// a folder from before the source was kept.
func SKUSourceLine(run *result.Run) string {
	if run.SKUSource == "" || run.SKUSource == sku.BuiltIn {
		return ""
	}
	return fmt.Sprintf("SKU %s was read from the site's file %s, not from the files gpuaccept carries: its bands, floors and entries judged this run (gpuaccept verify compares them with the built-in SKU)", run.SKU, run.SKUSource)
}

// Markdown writes the verdict table as Markdown, for a ticket or PR
// comment, the TelemetryLine of each test that has one under it, every
// control and format character escaped (printable) and no text from a run
// able to open a link, an image or HTML (mdCell, mdEscape).
func Markdown(w io.Writer, run *result.Run) error {
	return printable(w, func(w io.Writer) error { return markdown(w, run) })
}

func markdown(w io.Writer, run *result.Run) error {
	fmt.Fprintf(w, "**gpuaccept %s**\n\n", mdInline(Summary(run)))
	if l := SKUSourceLine(run); l != "" {
		fmt.Fprintf(w, "> note: %s\n\n", mdEscape(l))
	}
	for _, n := range run.Notes {
		fmt.Fprintf(w, "> note: %s\n\n", mdEscape(n))
	}
	if len(run.Tests) == 0 && len(run.Localisations) > 0 {
		return mdLocalisations(w, run)
	}
	t := tablewriter.NewTable(w, tablewriter.WithRenderer(renderer.NewMarkdown()), tablewriter.WithRowAutoWrap(tw.WrapNone), tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header(header)
	r := rows(run)
	for _, row := range r {
		for i := range row {
			row[i] = mdCell(row[i])
		}
	}
	if err := t.Bulk(r); err != nil {
		return fmt.Errorf("write markdown: %w", err)
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("write markdown: %w", err)
	}
	if err := writeEfficiency(w, run, true); err != nil {
		return fmt.Errorf("write markdown: %w", err)
	}
	if ls := telemetryLines(run); len(ls) > 0 {
		fmt.Fprintln(w)
		for _, l := range ls {
			fmt.Fprintf(w, "- %s\n", mdEscape(l))
		}
	}
	if err := mdFindings(w, run); err != nil {
		return err
	}
	writeFaults(w, run, true)
	mdHardware(w, run)
	return mdLocalisations(w, run)
}

// mdHardware lists the GPUs and NICs the run's raw outputs show (the
// results folder's hardware.json), one line each, for the customer to
// match against the hardware received; nothing when there is no list.
func mdHardware(w io.Writer, run *result.Run) {
	if len(run.Hardware) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Hardware\n\n")
	for _, d := range run.Hardware {
		fmt.Fprintf(w, "- %s (%s)\n", mdEscape(d.String()), mdEscape(strings.Join(d.Tests, ", ")))
	}
}

// maxFindings bounds the points listed per test in the Markdown findings.
const maxFindings = 20

// mdFindings lists, under the table, each test that did not pass: first
// its whole message (the reason that decided the verdict comes first in
// it), then the points outside their bands and the checks that did not
// hold that the message does not already say, folded (<details>) as
// GitHub and GitLab render it, so a long list does not bury the table.
func mdFindings(w io.Writer, run *result.Run) error {
	var b strings.Builder
	for _, t := range run.Tests {
		if t.Status == result.Pass || t.Status == result.Skip {
			continue
		}
		fmt.Fprintf(&b, "\n<details><summary>%s: %s</summary>\n\n", mdHTML(t.Name), strings.ToUpper(string(t.Status)))
		if t.Message != "" {
			fmt.Fprintf(&b, "- %s\n", mdEscape(t.Message))
		}
		n := 0
		for _, m := range t.Metrics {
			if m.Status != result.Fail && m.Status != result.Warn {
				continue
			}
			if strings.Contains(t.Message, m.Message) {
				// Said in the message already; what it cannot say is how
				// the cycles of that point spread.
				if c := m.CyclesText(); c != "" && n < maxFindings {
					n++
					fmt.Fprintf(&b, "- %s: %s\n", mdEscape(m.Key()), mdEscape(c))
				}
				continue
			}
			if n++; n > maxFindings {
				continue
			}
			msg := m.Message
			if c := m.CyclesText(); c != "" {
				msg += "; " + c
			}
			fmt.Fprintf(&b, "- %s: %s\n", strings.ToUpper(string(m.Status)), mdEscape(msg))
		}
		if n > maxFindings {
			fmt.Fprintf(&b, "- ... and %d more points outside their bands\n", n-maxFindings)
		}
		for _, c := range t.Checks {
			if !c.OK && !strings.Contains(t.Message, c.Name+": "+c.Message) {
				fmt.Fprintf(&b, "- check %s: %s\n", mdEscape(c.Name), mdEscape(c.Message))
			}
		}
		b.WriteString("\n</details>\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// htmlStart is a "<" that opens an HTML tag, comment or declaration.
var htmlStart = regexp.MustCompile(`<([A-Za-z/!?])`)

// mdCell keeps a table cell (a GPU name, a message from a log) from
// ending the cell or opening a link, an image or HTML: "|", "[", "]" and
// every "<" that would start a tag are escaped; "warn < 326.9" stays as
// it reads.
func mdCell(s string) string {
	return mdInline(strings.ReplaceAll(s, "|", `\|`))
}

// mdInline keeps text from a run (a test, file or host name in the
// summary line) from opening a link or an image ([x](javascript:...),
// ![x](url), [x][ref]: "[" and "]" escaped) or HTML (a "<" that starts
// a tag or an autolink).
func mdInline(s string) string {
	return htmlStart.ReplaceAllString(strings.NewReplacer("[", `\[`, "]", `\]`).Replace(redact.PrintableLine(s)), "&lt;$1")
}

// mdHTML is s as text of an HTML element of the Markdown (a test name in
// <summary>): HTML-escaped, and "[", "]" as character references, as a
// renderer that reads Markdown inside the element would otherwise find a
// link there.
func mdHTML(s string) string {
	return strings.NewReplacer("[", "&#91;", "]", "&#93;").Replace(html.EscapeString(redact.PrintableLine(s)))
}

// mdEscape keeps tool output from turning into Markdown or HTML (links
// and images included: "[" and "]" are escaped).
func mdEscape(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "`", "\\`", "|", `\|`, "[", `\[`, "]", `\]`).Replace(redact.PrintableLine(s))
}

// masked is run with every string masked (framework/redact, knowing the
// environment's secret values): messages and diagnostics quote raw
// output, commands hold parameters. Every report renders from it, and
// what it writes passes the masking once more on its way out, as the
// escaping of JSON, HTML and XML can hide a pattern.
func masked(run *result.Run) *result.Run {
	if run == nil {
		return nil
	}
	return redact.Value(redact.Env(), run)
}

// varyingLabels are result.VaryingLabels of h among the test's points
// of the same metric.
func varyingLabels(h result.Judged, ms []result.Judged) string {
	var among []result.Metric
	for _, o := range ms {
		if o.Name == h.Name {
			among = append(among, o.Metric)
		}
	}
	return result.VaryingLabels(h.Metric, among)
}
