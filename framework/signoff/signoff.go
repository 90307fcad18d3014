// Package signoff makes and checks the sign-off of a results folder. The
// reports of a folder are rendered from the folder's own evidence (the run
// its journal holds and the kept baseline copy: Render, WriteReports), so
// that gpuaccept verify can render them again and compare: Verify checks
// the manifest (every file, none added), the sign-off digest and the
// signature, re-judges the raw outputs against the kept baseline,
// re-derives results.json value by value and re-renders the other reports
// byte for byte.
package signoff

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"

	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/report"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// maxResults bounds a results.json read back (a 1024-node localisation
// makes tens of MB).
const maxResults = 1 << 30

// Report is one report of a results folder, rendered.
type Report struct {
	// Name is the file's name in the folder (layout.Results, ...).
	Name string
	Data []byte
}

// Render renders the reports of run, as WriteReports writes them into
// run.Dir, with the hardware list run.Dir keeps (layout.Hardware)
// unless run has one: results.json (showing recorded as results_dir, the folder the
// run wrote), table.txt, summary.md, junit.xml (with the raw outputs read
// from run.Dir) and report.html (plots against the bands of s; nil draws
// curves only). The same run and SKU file give the same bytes.
func Render(run *result.Run, s *sku.SKU, recorded string) ([]Report, error) {
	var out []Report
	// Every report renders from the run masked (framework/redact), and
	// its bytes are masked once more: the escaping of JSON, HTML and XML
	// can hide a pattern. verify renders the same way, so it compares like
	// with like.
	if run.Hardware == nil && run.Dir != "" {
		// The folder's hardware list is shown as the file has it; one
		// that does not read is verify's to name (checkHardware).
		hw, _, _ := resultsdir.ReadHardware(run.Dir)
		withHW := *run
		withHW.Hardware = hw
		run = &withHW
	}
	red := redact.Env()
	run = redact.Value(red, run)
	shown := *run
	shown.Dir = recorded
	for _, r := range []struct {
		name   string
		render func(*bytes.Buffer) error
	}{
		{layout.Results, func(b *bytes.Buffer) error { return report.JSON(b, &shown) }},
		{layout.Table, func(b *bytes.Buffer) error { return report.Table(b, run) }},
		{layout.Markdown, func(b *bytes.Buffer) error { return report.Markdown(b, run) }},
		{layout.JUnit, func(b *bytes.Buffer) error {
			b.WriteString(xml.Header)
			doc := report.JUnit(run)
			return doc.WriteXML(b)
		}},
		{layout.HTML, func(b *bytes.Buffer) error { return report.HTML(b, run, s) }},
	} {
		var b bytes.Buffer
		if err := r.render(&b); err != nil {
			return nil, fmt.Errorf("render %s of %s: %w", r.name, run.Dir, err)
		}
		out = append(out, Report{r.name, red.Bytes(b.Bytes())})
	}
	return out, nil
}

// WriteReports writes the reports of run into its results folder run.Dir
// (Render): against the baseline copy the folder keeps when it keeps one,
// which verify renders them against again, else against s. recorded is
// the results folder the run recorded ("" for run.Dir). Every report is
// attempted; the first error is returned.
func WriteReports(run *result.Run, s *sku.SKU, recorded string) error {
	if run.Dir == "" {
		return nil
	}
	if err := os.MkdirAll(run.Dir, 0o755); err != nil {
		return fmt.Errorf("write results folder: %w", err)
	}
	if kept, err := resultsdir.KeptBaseline(run.Dir, run.SKU); err == nil {
		s = kept
	}
	if recorded == "" {
		recorded = run.Dir
	}
	reports, err := Render(run, s, recorded)
	if err != nil {
		return err
	}
	var first error
	for _, r := range reports {
		if err := writeFile(run.Dir, r.Name, r.Data); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// writeFile writes a report into a results folder; every report this
// package writes goes through it.
func writeFile(dir, name string, data []byte) error {
	// Through safefs: a link or special file at the name (or in a folder
	// below dir) is refused by name, never written through or replaced.
	if err := safefs.WriteFile(dir, name, data, 0o644); err != nil {
		return fmt.Errorf("write results folder: %w", err)
	}
	return nil
}
