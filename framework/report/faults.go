package report

// This file: the fault codes of failed checks (result.Check.Code) and
// their remedies (framework/faults), in every report.

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/faults"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// checkText is a check's message, and for one that does not hold and
// carries a fault code, the code's advice after it: "MSG [ADVICE]"
// (faults.Advice).
func checkText(c result.Check) string {
	if c.OK || c.Code == "" {
		return c.Message
	}
	return c.Message + " [" + faults.Advice(c.Code) + "]"
}

// faultLines lists each check of run's tests that does not hold and
// carries a fault code, one line each, in test order: "CODE (SEVERITY) on
// HOST, TEST check NAME: TITLE. Remedy: REMEDY" ("on HOST" left out for a
// check about no node; a code the table lacks says so).
func faultLines(run *result.Run) []string {
	var out []string
	for _, t := range run.Tests {
		for _, c := range t.Checks {
			if c.OK || c.Code == "" {
				continue
			}
			on := ""
			if c.Host != "" {
				on = " on " + c.Host
			}
			f, ok := faults.Lookup(c.Code)
			if !ok {
				out = append(out, fmt.Sprintf("%s%s, %s check %s: %s", c.Code, on, t.Name, c.Name, faults.Advice(c.Code)))
				continue
			}
			out = append(out, fmt.Sprintf("%s (%s)%s, %s check %s: %s. Remedy: %s", f.Code, f.Severity, on, t.Name, c.Name, f.Title, f.Remedy))
		}
	}
	return out
}

// writeFaults writes faultLines under a "Faults" heading, as plain text
// or Markdown; nothing when there are none.
func writeFaults(w io.Writer, run *result.Run, markdown bool) {
	lines := faultLines(run)
	if len(lines) == 0 {
		return
	}
	if markdown {
		fmt.Fprintf(w, "\n**Faults** (docs/FAULTS.md)\n\n")
		for _, l := range lines {
			fmt.Fprintf(w, "- %s\n", mdEscape(l))
		}
		return
	}
	fmt.Fprintf(w, "Faults (docs/FAULTS.md):\n  %s\n", strings.Join(lines, "\n  "))
}
