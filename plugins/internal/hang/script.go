package hang

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// Script is the evidence step's shell script (evidence.sh): run as
// "/bin/sh -c Script gpuaccept-evidence NODE" on each node when a test's
// time runs out, it prints what Read reads (EvidencePrefix lines).
//
//go:embed evidence.sh
var Script string

// StepName is the name of node i's evidence step.
func StepName(i int) string { return "evidence." + strconv.Itoa(i) }

// Steps are the evidence steps of a test on nodes nodes, one per node
// (plan.Evidence: launchers run them only when the test times out).
func Steps(nodes int) []plan.Step {
	out := make([]plan.Step, 0, nodes)
	for i := 0; i < nodes; i++ {
		out = append(out, plan.Step{
			Name: StepName(i), Role: plan.Evidence, Host: i,
			Argv:  []string{"/bin/sh", "-c", Script, "gpuaccept-evidence", strconv.Itoa(i)},
			Procs: 1, ProcsPerNode: 1,
		})
	}
	return out
}

// Split tells the evidence steps' outputs that ran (a log to read) from
// the test's own outputs; an evidence step that did not run (the test
// ended in time, or its launcher collects none) is in neither.
func Split(outs []plan.Output) (work, evidence []plan.Output) {
	for _, o := range outs {
		switch {
		case o.Role != plan.Evidence:
			work = append(work, o)
		case o.Log != "" && !strings.HasPrefix(o.LaunchError, "not "):
			// "not run: ...", "not started: ...": no evidence, whatever
			// log a launcher made for it.
			evidence = append(evidence, o)
		}
	}
	return work, evidence
}

// Checks reads what a timed-out test left: the evidence steps' logs (one
// node's each, named by the launcher's Output.Host) and the test's own
// logs (NCCL WARN and watchdog lines, a RAS report). Each node the
// evidence names is a failed check "hang.suspect" with Host set, so that
// the test fails naming it and localisation can take the node from
// there; reached ("256 MiB": the largest size measured, "" when none)
// says how far the run got. What was seen otherwise is a diagnostic.
// No evidence log: nothing (the test did not time out, or its launcher
// collects none).
func Checks(work, evidence []plan.Output, reached string) ([]result.Check, []result.Diagnostic) {
	if len(evidence) == 0 {
		return nil, nil
	}
	var all Evidence
	var checks []result.Check
	var diags []result.Diagnostic
	at := "timed out"
	if reached != "" {
		at += " after " + reached + " (the largest size measured)"
	}
	seen := map[string]bool{}
	add := func(s Suspect) {
		if seen[s.Host] {
			return
		}
		seen[s.Host] = true
		checks = append(checks, result.Check{Name: "hang.suspect", Host: s.Host, Message: at + ": " + s.Reason})
	}
	read := func(o plan.Output) (Evidence, bool) {
		f, err := os.Open(o.Log)
		if err != nil {
			diags = append(diags, result.Diagnostic{Level: result.Warning, Message: fmt.Sprintf("hang evidence: step %s: %v", o.Step, err)})
			return Evidence{}, false
		}
		defer f.Close()
		e, err := Read(filepath.Base(o.Log), f)
		if err != nil {
			diags = append(diags, result.Diagnostic{Level: result.Warning, Message: "hang evidence: " + err.Error()})
		}
		return e, true
	}
	for _, o := range evidence {
		e, ok := read(o)
		if !ok {
			continue
		}
		for _, s := range e.Suspects(o.Host) {
			// The node as the launcher named it, not as its hostname
			// says: localisation pins runs to the launcher's names.
			if o.Host != "" && s.Host != o.Host && slices.Contains(e.Nodes, s.Host) {
				s.Reason = strings.Replace(s.Reason, s.Host, o.Host, 1)
				s.Host = o.Host
			}
			add(s)
		}
		all.Merge(e)
	}
	for _, o := range work {
		if o.Log == "" {
			continue
		}
		if e, ok := read(o); ok {
			for _, s := range e.Suspects("") {
				add(s)
			}
			all.Merge(e)
		}
	}
	if sum := all.Summary(); sum != "" {
		diags = append(diags, result.Diagnostic{Level: result.Info, Message: at + ": " + sum})
	}
	for _, n := range all.Notes {
		diags = append(diags, result.Diagnostic{Level: result.Info, Message: "hang evidence: " + n})
	}
	if len(checks) == 0 {
		diags = append(diags, result.Diagnostic{Level: result.Info, Message: at + ": the evidence names no node"})
	}
	return checks, diags
}
