package health

// This file: dcgmi diag's own table (no -j), as DCGM 2.x/3.x and 4.x print
// it (NVIDIA/DCGM dcgmi/Diag.cpp HelperDisplayAsCli), into the findings
// dcgmi diag -j gives, so that judgeDCGM judges both alike.
//
// DCGM 3.x: a row per test, "| Memory | Fail - GPU: 0 |" or "Pass - All",
// a second status row "|  | Fail - GPU: 0 |" when the GPUs differ, then
// "| Warning | GPU 0 TEXT |" (deployment failures: "| Error | ... |").
// DCGM 4.x: "| memory | Fail |", a row per entity "|  | GPU0: Fail |",
// and "| Warning: GPU0 | TEXT |". A message is cut into 45-character
// pieces, one a row (DATA_INFO_TAG_LEN), words cut anywhere.

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	// dcgmTableHead is the table's header row, or a result row of a
	// pasted fragment: what sniff takes for dcgmi diag's table.
	dcgmTableHead = regexp.MustCompile(`(?m)^\|\s*(Diagnostic\s*\|\s*Result\s*\||[A-Za-z][A-Za-z /]*?\s*\|\s*(Pass|Fail|Skip|Warn)( - (All|GPUs?: [\d, ]+))?\s*\|)`)
	dcgmCatRow    = regexp.MustCompile(`^[|+]-----\s+(\S[^-]*?)\s+-+\+`)
	dcgmBorder    = regexp.MustCompile(`^\+[-=+]*\+?\s*$`)
	dcgmStatus    = regexp.MustCompile(`(?i)^(pass|fail|warn|skip)(?:\s*-\s*(all|gpus?:\s*[\d, ]+))?$`)
	dcgmEntity    = regexp.MustCompile(`(?i)^(gpu|cpu)\s*(\d+):\s*(pass|fail|warn|skip)?$`)
	dcgmLabelGPU  = regexp.MustCompile(`(?i)^(warning|error|info)(?::\s*(gpu|cpu)\s*(\d+))?$`)
	dcgmReason    = regexp.MustCompile(`DCGM_FR_[A-Z0-9_]+`)
	dcgmTextGPU   = regexp.MustCompile(`^GPU (\d+) ?`)
)

// dcgmPiece is how many characters of a message dcgmi prints a row.
const dcgmPiece = 45

// parseDCGMText reads dcgmi diag's table. A line "Error: ..." outside the
// table (dcgmi's "Error: Unable to complete diagnostic for group N.
// Return: (-N) : ...") says the diagnostic did not run: an error naming
// the file and the line. Lines of neither (a shell prompt, kubectl's
// "Defaulted container" line) are skipped.
func parseDCGMText(s *section) (*dcgmRun, error) {
	run := &dcgmRun{where: s.where()}
	var runErr string
	category := ""
	table := false
	test := "" // the test row last read, "" before one
	// warn is the message being read (nil for an Info), warnIn the
	// index of the finding it belongs to.
	var warn *dcgmWarning
	warnIn := -1
	var text strings.Builder
	// closed says the last table line was a border: the table's foot
	// (dcgmi always prints one), not a row cut by a page.
	closed, lastNo := false, 0
	flush := func() {
		if warn != nil && warnIn >= 0 {
			f := &run.findings[warnIn]
			warn.text = strings.Join(strings.Fields(text.String()), " ")
			if m := dcgmTextGPU.FindStringSubmatch(warn.text); m != nil && f.gpus == "" {
				f.gpus = m[1]
				warn.text = warn.text[len(m[0]):]
			}
			warn.reason = dcgmReason.FindString(warn.text)
			f.warnings = append(f.warnings, *warn)
		}
		warn, warnIn = nil, -1
		text.Reset()
	}
	add := func(f dcgmFinding) int {
		run.findings = append(run.findings, f)
		return len(run.findings) - 1
	}
	for _, l := range s.lines {
		t := strings.TrimRight(l.text, " \t\r")
		if m := dcgmCatRow.FindStringSubmatch(t); m != nil {
			flush()
			table, test, closed = true, "", false
			category = strings.TrimSpace(m[1])
			continue
		}
		if dcgmBorder.MatchString(t) && strings.HasPrefix(t, "+-") {
			flush()
			closed = table
			continue
		}
		if !strings.HasPrefix(t, "|") {
			if e, ok := strings.CutPrefix(strings.TrimSpace(t), "Error:"); ok && runErr == "" {
				runErr = fmt.Sprintf("%s:%d: dcgmi diag could not run: %s", s.file, l.no, clip(strings.TrimSpace(e)))
			}
			continue
		}
		table, closed, lastNo = true, false, l.no
		name, info, _ := strings.Cut(t[1:], "|")
		info = strings.TrimSuffix(info, "|")
		label := strings.TrimSpace(name)
		value := strings.TrimSpace(info)
		switch {
		case strings.EqualFold(label, "Diagnostic") && strings.EqualFold(value, "Result"):
			continue
		case strings.EqualFold(category, "Metadata"):
			if strings.EqualFold(label, "DCGM Version") {
				run.version = value
			}
			continue
		}
		if label == "" {
			if m := dcgmEntity.FindStringSubmatch(value); m != nil && test != "" {
				flush()
				add(dcgmFinding{category: category, test: test, gpus: m[2], status: strings.ToLower(m[3])})
				continue
			}
			if m := dcgmStatus.FindStringSubmatch(value); m != nil && test != "" && warn == nil {
				add(dcgmFinding{category: category, test: test, gpus: dcgmGPUs(m[2]), status: strings.ToLower(m[1])})
				continue
			}
			if warnIn >= 0 || text.Len() > 0 {
				text.WriteString(dcgmChunk(info))
			}
			continue
		}
		flush()
		if m := dcgmLabelGPU.FindStringSubmatch(label); m != nil {
			if strings.EqualFold(m[1], "info") {
				// Info is the test's own report (bandwidths, power):
				// no verdict; read and dropped.
				text.WriteString(" ")
				continue
			}
			if test == "" {
				// DCGM 3's deployment errors come without a test row:
				// the category stands for the test.
				test = orWord(category, "Deployment")
				add(dcgmFinding{category: category, test: test})
			}
			owner := dcgmFinding{category: category, test: test, gpus: m[3]}
			if strings.EqualFold(m[1], "error") {
				owner.status = "fail"
			}
			warnIn = add(owner)
			warn = &dcgmWarning{}
			text.WriteString(dcgmChunk(info))
			continue
		}
		f := dcgmFinding{category: category, test: label}
		if m := dcgmStatus.FindStringSubmatch(value); m != nil {
			f.status, f.gpus = strings.ToLower(m[1]), dcgmGPUs(m[2])
		}
		add(f)
		test = label
	}
	flush()
	failed := false
	for _, f := range run.findings {
		failed = failed || f.status == "fail"
	}
	switch {
	case runErr != "" && len(run.findings) == 0:
		return nil, fmt.Errorf("%s", runErr)
	case runErr != "":
		return run, fmt.Errorf("%s", runErr)
	case !table || len(run.findings) == 0:
		return nil, fmt.Errorf("%s: no test result in the dcgmi diag table", s.where())
	case !closed && !failed:
		// A failure seen is one whatever followed; a table of passes
		// cut short may have lost the test that failed.
		return run, fmt.Errorf("%s:%d: the dcgmi diag table is cut short (no closing border after this row): the tests after it were not seen", s.file, lastNo)
	}
	return run, nil
}

// dcgmChunk is the piece of a message a row holds: the cell less the one
// blank dcgmi puts before it, at most dcgmPiece characters (the rest is
// the padding to the border).
func dcgmChunk(cell string) string {
	cell = strings.TrimPrefix(cell, " ")
	if len(cell) > dcgmPiece {
		cell = cell[:dcgmPiece]
	}
	return cell
}

// dcgmGPUs reads "All" as "" (every GPU) and "GPUs: 1, 2" as "1,2".
func dcgmGPUs(s string) string {
	_, ids, ok := strings.Cut(s, ":")
	if !ok {
		return ""
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(ids, ",", " ")), ",")
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// dcgmRunError is dcgmi diag's message when the diagnostic did not run.
var dcgmRunError = regexp.MustCompile(`(?m)^Error: (Unable to complete diagnostic|Diagnostic could not be run)`)
