package record

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// The lines that delimit the provenance block at the top of a recorded SKU
// file. Everything between them is rewritten by each recording; the rest of
// the header (hardware, ceilings, why the bands are what they are) is the
// author's and is kept.
const (
	provenanceBegin = "# --- recorded by gpuaccept baseline record; this block is rewritten at each recording ---"
	provenanceEnd   = "# --- end of recording ---"
)

// Provenance describes one recording for the top of the SKU file: when,
// by which command, from how many runs, and each run's folder with its
// date, hosts, GPU and tool versions. samples are the recorded runs'
// tests; command is the command line; now the recording time.
func Provenance(samples []Sample, command string, now time.Time) string {
	var order []string
	facts := map[string]string{}
	tests := map[string]bool{}
	for _, s := range samples {
		tests[fmt.Sprintf("%s at %s", s.Test, s.Scope)] = true
		run := s.Run
		if run == "" {
			run = s.Origin
		}
		if _, ok := facts[run]; ok {
			continue
		}
		order = append(order, run)
		facts[run] = runFacts(s)
	}
	tl := make([]string, 0, len(tests))
	for t := range tests {
		tl = append(tl, t)
	}
	sort.Strings(tl)
	var b strings.Builder
	fmt.Fprintf(&b, "Recorded %s from %d %s of %s.\n", now.UTC().Format("2006-01-02"), len(order), plural(len(order), "run", "runs"), strings.Join(tl, ", "))
	b.WriteString("Runs:\n")
	for _, o := range order {
		if f := facts[o]; f != "" {
			fmt.Fprintf(&b, "  %s (%s)\n", o, f)
		} else {
			fmt.Fprintf(&b, "  %s\n", o)
		}
	}
	fmt.Fprintf(&b, "Command: %s\n", command)
	return b.String()
}

func plural(n int, one, many string) string { return result.Noun(n, one, many) }

// runFacts is facts without the tool's command lines, which each entry's
// source keeps: the header names runs, the entries say what ran.
func runFacts(s Sample) string {
	s.Commands = nil
	return facts(s)
}

// SetProvenance puts text (Provenance's) as the provenance block at the
// top of a SKU file's data, replacing the block a previous recording
// wrote; a file without one gets it above its first line. Only comment
// lines change, so the file means what it meant.
func SetProvenance(data []byte, text string) []byte {
	var block strings.Builder
	block.WriteString(provenanceBegin + "\n")
	// A carriage return is a line break to YAML too: a run folder's name
	// holding one must not end the comment and start an entry.
	text = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(text)
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		block.WriteString(strings.TrimRight("# "+l, " ") + "\n")
	}
	block.WriteString(provenanceEnd + "\n")
	s := string(data)
	if i := strings.Index(s, provenanceBegin+"\n"); i >= 0 {
		if j := strings.Index(s[i:], provenanceEnd+"\n"); j >= 0 {
			return []byte(s[:i] + block.String() + s[i+j+len(provenanceEnd)+1:])
		}
	}
	return []byte(block.String() + "#\n" + s)
}
