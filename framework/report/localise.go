package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// This file renders a run's Localisations (issue 9, "find the bad node")
// for people: the table under the tests table, the Markdown and the
// one-line summary. A stage of a localisation on 1024 nodes holds
// thousands of runs, so the text reports list the slow ones only and say
// how many good ones they left out; results.json and report.html hold
// every run.

// plural renders "1 run", "3 runs".
func plural(n int, word string) string { return result.Count(n, word) }

// percent renders a fraction as a percentage: 0.1 -> "10%".
func percent(f float64) string {
	return strconv.FormatFloat(math.Round(f*1000)/10, 'f', -1, 64) + "%"
}

// locHeading is the line that opens a localisation: "Localisation of
// rccl.all_reduce on 4 nodes (strategy pairs, tolerance 10%, test
// failed): 1 suspect".
func locHeading(l result.Localisation) string {
	why := l.Reason
	switch l.Reason {
	case "failed":
		why = "the test failed"
	case "asked":
		why = "asked for"
	}
	return fmt.Sprintf("Localisation of %s on %s (strategy %s, tolerance %s, %s): %s", l.Test, plural(len(l.Hosts), "node"),
		l.Strategy, percent(l.Tolerance), why, plural(len(l.Suspects), "suspect"))
}

// slowRuns counts the runs of a stage that count against their parts.
func slowRuns(st result.Stage) int {
	n := 0
	for _, r := range st.Runs {
		if r.Slow {
			n++
		}
	}
	return n
}

// stageSummary is one line per stage: "pairs: 6 runs in 3 rounds, 3 slow".
func stageSummary(st result.Stage) string {
	slow := "none slow"
	if n := slowRuns(st); n > 0 {
		slow = fmt.Sprintf("%d slow", n)
	}
	return fmt.Sprintf("%s: %s in %s, %s", st.Name, plural(len(st.Runs), "run"), plural(st.Rounds, "round"), slow)
}

// noSuspect says, true to the data, why a localisation names nobody.
func noSuspect(l result.Localisation) string {
	see := ""
	if len(l.Notes) > 0 {
		see = " (see the notes)"
	}
	if why := l.Incomplete(); why != "" {
		return "no suspect: " + why + see
	}
	slow := 0
	for _, st := range l.Stages {
		slow += slowRuns(st)
	}
	if slow == 0 {
		return fmt.Sprintf("no suspect: every run passed its baseline and came within %s of its reference", percent(l.Tolerance))
	}
	return fmt.Sprintf("no suspect: %s name no single node, HCA or link%s", plural(slow, "slow run"), see)
}

// figureText renders a run's figure: "busbw 171.3 GB/s"; "" when it
// measured none.
func figureText(r result.SubRun) string {
	if r.Figure == 0 {
		return ""
	}
	s := fmt.Sprintf("%.1f %s", r.Figure, r.Unit)
	if r.FigureName != "" {
		s = r.FigureName + " " + s
	}
	return s
}

// referenceText renders what a run was compared with and how far it
// fell: "359.8 (-52%)".
func referenceText(r result.SubRun) string {
	if r.Reference == 0 {
		return ""
	}
	s := fmt.Sprintf("%.1f", r.Reference)
	if r.Figure != 0 {
		s += fmt.Sprintf(" (%+.0f%%)", (r.Figure/r.Reference-1)*100)
	}
	return s
}

// cut shortens s to at most n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Tool output quoted in a message may hold multi-byte characters.
	c := n - 3
	for c > 0 && !utf8.RuneStart(s[c]) {
		c--
	}
	return s[:c] + "..."
}

// suspectRows are the rows of the suspects table.
func suspectRows(l result.Localisation) [][]string {
	var out [][]string
	for _, s := range l.Suspects {
		out = append(out, []string{s.Name(), s.Kind, s.Stage, cut(s.Reason, maxDetail)})
	}
	return out
}

// slowRows are the slow runs of a stage as table rows (round, hosts,
// NICs when the stage has them, status, figure, reference, why).
func slowRows(st result.Stage, nics bool) [][]string {
	var out [][]string
	for _, r := range st.Runs {
		if !r.Slow {
			continue
		}
		row := []string{strconv.Itoa(r.Round), strings.Join(r.Hosts, ",")}
		if nics {
			row = append(row, r.NICs)
		}
		row = append(row, strings.ToUpper(string(r.Status)), figureText(r), referenceText(r), cut(r.Why, maxDetail))
		out = append(out, row)
	}
	return out
}

func runsHeader(nics bool) []string {
	h := []string{"Round", "Hosts"}
	if nics {
		h = append(h, "NICs")
	}
	return append(h, "Status", "Measured", "Reference", "Why")
}

func stageHasNICs(st result.Stage) bool {
	for _, r := range st.Runs {
		if r.NICs != "" {
			return true
		}
	}
	return false
}

// textTable renders header and rows as the box table of table.txt, or as
// Markdown when md is set.
func textTable(w io.Writer, header []string, rows [][]string, md bool) error {
	opts := []tablewriter.Option{tablewriter.WithRowAutoWrap(tw.WrapNone), tablewriter.WithHeaderAutoFormat(tw.Off)}
	if md {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
		for _, row := range rows {
			for i := range row {
				row[i] = strings.ReplaceAll(row[i], "|", `\|`)
			}
		}
	}
	t := tablewriter.NewTable(w, opts...)
	t.Header(header)
	if err := t.Bulk(rows); err != nil {
		return err
	}
	return t.Render()
}

// tableLocalisations writes, under the tests table, each localisation: its
// heading, the suspects table (or why there is none), one summary line per
// stage followed by its slow runs, and the notes.
func tableLocalisations(w io.Writer, run *result.Run) error {
	for _, l := range run.Localisations {
		fmt.Fprintf(w, "\n%s\n", locHeading(l))
		if len(l.Suspects) == 0 {
			fmt.Fprintln(w, noSuspect(l))
		} else if err := textTable(w, []string{"Suspect", "Kind", "Stage", "Reason"}, suspectRows(l), false); err != nil {
			return fmt.Errorf("write localisation of %s: %w", l.Test, err)
		}
		for _, st := range l.Stages {
			fmt.Fprintln(w, stageSummary(st))
			slow := slowRuns(st)
			if slow == 0 {
				continue
			}
			nics := stageHasNICs(st)
			if err := textTable(w, runsHeader(nics), slowRows(st, nics), false); err != nil {
				return fmt.Errorf("write localisation of %s: %w", l.Test, err)
			}
			if good := len(st.Runs) - slow; good > 0 {
				fmt.Fprintf(w, "(%s at the expected speed left out; %s and %s list every run)\n", plural(good, "run"), layout.Results, layout.HTML)
			}
		}
		for _, n := range l.Notes {
			fmt.Fprintf(w, "note: %s\n", n)
		}
	}
	return nil
}

// mdLocalisations writes each localisation as Markdown: heading, suspects
// table, the evidence folded, the stage summaries and the notes.
func mdLocalisations(w io.Writer, run *result.Run) error {
	for _, l := range run.Localisations {
		fmt.Fprintf(w, "\n**%s**\n\n", mdEscape(locHeading(l)))
		if len(l.Suspects) == 0 {
			fmt.Fprintf(w, "%s\n", mdEscape(noSuspect(l)))
		} else {
			rows := suspectRows(l)
			for _, r := range rows {
				for i := range r {
					r[i] = mdEscape(r[i])
				}
			}
			if err := textTable(w, []string{"Suspect", "Kind", "Stage", "Reason"}, rows, true); err != nil {
				return fmt.Errorf("write markdown localisation of %s: %w", l.Test, err)
			}
			for _, s := range l.Suspects {
				fmt.Fprintf(w, "\n<details><summary>evidence against %s</summary>\n\n", mdEscape(s.Name()))
				for _, e := range s.Evidence {
					fmt.Fprintf(w, "- %s\n", mdEscape(e))
				}
				fmt.Fprint(w, "\n</details>\n")
			}
		}
		fmt.Fprintln(w)
		for _, st := range l.Stages {
			fmt.Fprintf(w, "- %s\n", mdEscape(stageSummary(st)))
		}
		for _, n := range l.Notes {
			fmt.Fprintf(w, "- note: %s\n", mdEscape(n))
		}
	}
	return nil
}

// maxSummarySuspects bounds the suspects the one-line summary names.
const maxSummarySuspects = 5

// suspectsSummary names the suspects of every localisation for the
// one-line summary: "; suspects: n3 (rccl.all_reduce), ..."; "" when none.
func suspectsSummary(run *result.Run) string {
	var names []string
	total := 0
	for _, l := range run.Localisations {
		for _, s := range l.Suspects {
			if total++; total <= maxSummarySuspects {
				names = append(names, fmt.Sprintf("%s (%s)", s.Name(), l.Test))
			}
		}
	}
	if total == 0 {
		return ""
	}
	if total > maxSummarySuspects {
		names = append(names, fmt.Sprintf("and %d more", total-maxSummarySuspects))
	}
	return "; " + plural(total, "suspect") + ": " + strings.Join(names, ", ")
}
