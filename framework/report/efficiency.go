package report

import (
	"fmt"
	"io"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// efficiencyHeader heads the table of how close each test came to its
// SKU's datasheet figures, written under the verdict table.
var efficiencyHeader = []string{"Test", "Against the datasheet", "Efficiency"}

// efficiencyRows are one row per test and datasheet figure: the test, the
// metric and label filter ("tflops dtype=bf16"), and the efficiency text
// (result.Efficiency.Text). Error tests are left out: their numbers are
// not to be trusted.
func efficiencyRows(run *result.Run) [][]string {
	var out [][]string
	for _, t := range run.Tests {
		if t.Status == result.Error {
			continue
		}
		for _, e := range t.Efficiency {
			out = append(out, []string{t.Name, e.What(), e.Text()})
		}
	}
	return out
}

// writeEfficiency writes the efficiency table under the verdict table, as
// text or Markdown (md), preceded by a blank line; nothing when no test
// has a datasheet figure.
func writeEfficiency(w io.Writer, run *result.Run, md bool) error {
	rows := efficiencyRows(run)
	if len(rows) == 0 {
		return nil
	}
	if md {
		fmt.Fprintln(w, "\n### Against the datasheet")
	}
	fmt.Fprintln(w)
	if md {
		for _, row := range rows {
			for i := range row {
				row[i] = mdCell(row[i])
			}
		}
	}
	if err := textTable(w, efficiencyHeader, rows, md); err != nil {
		return fmt.Errorf("write efficiency table: %w", err)
	}
	return nil
}

// efficiencyProperties are a test's efficiencies as JUnit properties,
// "efficiency.METRIC[.k=v...]" = the efficiency text.
func efficiencyProperties(t result.Test) [][2]string {
	var out [][2]string
	for _, e := range t.Efficiency {
		name := "efficiency." + e.Metric
		if l := result.LabelText(e.Labels, nil); l != "" {
			name += "." + l
		}
		out = append(out, [2]string{name, e.Text()})
	}
	return out
}
