// Package report renders a run's verdicts: a table for people, JSON for
// programs, JUnit XML for CI systems, Markdown for tickets, and the results
// folder that holds them all next to the raw outputs.
package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jstemmer/go-junit-report/v2/junit"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// Formats are the --format values.
var Formats = []string{"table", "json", "markdown"}

// Write renders run in the named format (table, json, markdown).
func Write(w io.Writer, format string, run *result.Run) error {
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
// top-level "status" and a "tests" list of name/status/metrics).
func JSON(w io.Writer, run *result.Run) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(run); err != nil {
		return fmt.Errorf("write JSON report: %w", err)
	}
	return nil
}

// headline picks the metric a table row shows: among the judged metrics of
// the worst status, the one furthest from its baseline; when all pass, the
// point at the largest size (the bandwidth people quote), the lower one on a
// tie. Error rows show none: their numbers are not to be trusted.
func headline(t result.Test) (result.Judged, bool) {
	if t.Status == result.Error {
		return result.Judged{}, false
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
			if h.Size > 0 {
				measured += " @ " + result.FormatBytes(h.Size)
			}
			if h.Expected != nil {
				band = fmt.Sprintf("%.1f: %s", *h.Expected, h.Band)
			}
		}
		detail := t.Message
		if len(detail) > maxDetail {
			detail = detail[:maxDetail-3] + "..."
		}
		out = append(out, []string{t.Name, strings.ToUpper(string(t.Status)), measured, band, detail})
	}
	return out
}

// Summary is the one-line verdict under a table.
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
	return fmt.Sprintf("%s: SKU %s, suite %s, scope %s, launcher %s: %s (%s)", strings.ToUpper(string(run.Status)),
		run.SKU, run.Suite, run.Scope, run.Launcher, strings.Join(parts, ", "), run.Duration.Round(time.Millisecond))
}

var header = []string{"Test", "Status", "Measured", "Baseline: band", "Detail"}

// Table writes the verdict table people read, then the one-line summary.
func Table(w io.Writer, run *result.Run) error {
	t := tablewriter.NewTable(w, tablewriter.WithRowAutoWrap(tw.WrapNone), tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header(header)
	if err := t.Bulk(rows(run)); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	_, err := fmt.Fprintln(w, Summary(run))
	return err
}

// Markdown writes the verdict table as Markdown, for a ticket or PR comment.
func Markdown(w io.Writer, run *result.Run) error {
	fmt.Fprintf(w, "**gpuaccept %s**\n\n", Summary(run))
	t := tablewriter.NewTable(w, tablewriter.WithRenderer(renderer.NewMarkdown()), tablewriter.WithRowAutoWrap(tw.WrapNone), tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header(header)
	r := rows(run)
	for _, row := range r {
		for i := range row {
			row[i] = strings.ReplaceAll(row[i], "|", `\|`)
		}
	}
	if err := t.Bulk(r); err != nil {
		return fmt.Errorf("write markdown: %w", err)
	}
	return t.Render()
}

// JUnit builds the JUnit document of a run: one testsuite for the suite, one
// testcase per test. A fail is a <failure> whose message lists the points
// outside their bands ("busbw 28.7 GB/s at 4 GiB below 310.9 (baseline
// 345.5 -10%)"), an error an <error>, a skip <skipped> with its reason.
// Properties carry SKU, scope, launcher, hosts and tool versions.
func JUnit(run *result.Run) junit.Testsuites {
	suite := junit.Testsuite{
		Name:      fmt.Sprintf("gpuaccept.%s.%s", run.SKU, run.Suite),
		Time:      seconds(run.Duration),
		Timestamp: run.Started.Format(time.RFC3339),
	}
	if h, err := os.Hostname(); err == nil {
		suite.Hostname = h
	}
	suite.AddProperty("sku", run.SKU)
	suite.AddProperty("suite", run.Suite)
	suite.AddProperty("scope", run.Scope)
	suite.AddProperty("launcher", run.Launcher)
	suite.AddProperty("gpuaccept_version", run.Version)
	if len(run.Hosts) > 0 {
		suite.AddProperty("hosts", strings.Join(run.Hosts, ","))
	}
	for _, kv := range toolInfo(run) {
		if kv[0] == "hosts" && len(run.Hosts) > 0 {
			continue // the launcher's host list is authoritative
		}
		suite.AddProperty(kv[0], kv[1])
	}
	for _, t := range run.Tests {
		tc := junit.Testcase{Name: t.Name, Classname: fmt.Sprintf("gpuaccept.%s.%s", run.SKU, run.Suite), Time: seconds(t.Duration)}
		msg := t.Message
		switch t.Status {
		case result.Fail:
			tc.Failure = &junit.Result{Message: msg, Type: "BelowBaseline", Data: details(t)}
		case result.Error:
			tc.Error = &junit.Result{Message: msg, Type: "Error", Data: details(t)}
		case result.Skip:
			tc.Skipped = &junit.Result{Message: msg}
		}
		out := details(t)
		if t.Status == result.Warn {
			out = "WARN: " + msg + "\n" + out
		}
		if out != "" && tc.Failure == nil && tc.Error == nil {
			tc.SystemOut = &junit.Output{Data: out}
		}
		suite.AddTestcase(tc)
	}
	var doc junit.Testsuites
	doc.Name = "gpuaccept"
	doc.Time = seconds(run.Duration)
	doc.AddSuite(suite)
	return doc
}

// toolInfo gathers the versions plugins reported (nccl_version, ...), as
// sorted key/value pairs, one per distinct value.
func toolInfo(run *result.Run) [][2]string {
	vals := map[string]map[string]bool{}
	for _, t := range run.Tests {
		for k, v := range t.Info {
			if !strings.HasSuffix(k, "version") && k != "gpu" && k != "hosts" {
				continue
			}
			if vals[k] == nil {
				vals[k] = map[string]bool{}
			}
			vals[k][v] = true
		}
	}
	var out [][2]string
	for k, vs := range vals {
		list := make([]string, 0, len(vs))
		for v := range vs {
			list = append(list, v)
		}
		sort.Strings(list)
		out = append(out, [2]string{k, strings.Join(list, ",")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// details lists a test's findings for the body of a JUnit element.
func details(t result.Test) string {
	var b strings.Builder
	for _, c := range t.Commands {
		fmt.Fprintf(&b, "command: %s\n", c)
	}
	for _, c := range t.Checks {
		st := "ok"
		if !c.OK {
			st = "FAILED: " + c.Message
		}
		fmt.Fprintf(&b, "check %s: %s\n", c.Name, st)
	}
	for _, m := range t.Metrics {
		if m.Status == result.Warn || m.Status == result.Fail {
			fmt.Fprintf(&b, "%s: %s\n", m.Status, m.Message)
		}
	}
	for _, d := range t.Diagnostics {
		src := ""
		if d.Source != "" {
			src = " (" + d.Source + ")"
		}
		fmt.Fprintf(&b, "%s: %s%s\n", d.Level, d.Message, src)
	}
	for _, r := range t.Raw {
		fmt.Fprintf(&b, "raw output: %s\n", r)
	}
	return b.String()
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// WriteJUnit writes the run's JUnit XML to path.
func WriteJUnit(path string, run *result.Run) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write JUnit %s: %w", path, err)
	}
	doc := JUnit(run)
	if _, err := io.WriteString(f, xml.Header); err != nil {
		f.Close()
		return fmt.Errorf("write JUnit %s: %w", path, err)
	}
	if err := doc.WriteXML(f); err != nil {
		f.Close()
		return fmt.Errorf("write JUnit %s: %w", path, err)
	}
	return f.Close()
}

// Files of a results folder.
const (
	ResultsFile = "results.json"
	JUnitFile   = "junit.xml"
	TableFile   = "table.txt"
)

// WriteFolder writes results.json, junit.xml and table.txt into run.Dir
// (the raw outputs are already there, under raw/).
func WriteFolder(run *result.Run) error {
	if run.Dir == "" {
		return nil
	}
	if err := os.MkdirAll(run.Dir, 0o755); err != nil {
		return fmt.Errorf("write results folder: %w", err)
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer, *result.Run) error
	}{{ResultsFile, JSON}, {TableFile, Table}} {
		fh, err := os.Create(filepath.Join(run.Dir, f.name))
		if err != nil {
			return fmt.Errorf("write results folder: %w", err)
		}
		if err := f.write(fh, run); err != nil {
			fh.Close()
			return err
		}
		if err := fh.Close(); err != nil {
			return fmt.Errorf("write results folder: %w", err)
		}
	}
	return WriteJUnit(filepath.Join(run.Dir, JUnitFile), run)
}
