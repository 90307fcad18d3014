package hang

import (
	"crypto/rand"
	_ "embed"
	"fmt"
	"io"
	"maps"
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

// TestIDEnv is the environment variable Mark sets on every step of a
// test: the evidence step lists only processes of its own uid whose
// environment holds the same value (GPUACCEPT_HOSTS would not do: it is
// "localhost" under the local launcher, which any user can set).
const TestIDEnv = "GPUACCEPT_TEST_ID"

// Mark returns p with TestIDEnv set to one new random value (26
// characters of crypto/rand.Text, 130 bits) on every step, over any value
// a plugin or --param env.GPUACCEPT_TEST_ID gave; p's Env maps are not
// changed. Each call gives another value: one per planned test.
func Mark(p plan.Plan) plan.Plan {
	id := rand.Text()
	steps := make([]plan.Step, len(p.Steps))
	for i, s := range p.Steps {
		env := maps.Clone(s.Env)
		if env == nil {
			env = map[string]string{}
		}
		env[TestIDEnv] = id
		s.Env = env
		steps[i] = s
	}
	p.Steps = steps
	return p
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
// node's each, named by the launcher's Output.Host; their EvidencePrefix
// lines are read, ReadEvidence) and the test's own logs (NCCL WARN and
// watchdog lines, a RAS report; EvidencePrefix lines there are a rank's
// words, not evidence, Read). Each node the evidence names is a failed
// check "hang.suspect" with Host set, so that the test fails naming it
// and localisation can take the node from there; reached ("256 MiB": the
// largest size measured, "" when none) says how far the run got. A node
// is named only when it is one of the test's: hosts (the topology's),
// the outputs' Host, or the name an evidence step gave its own node;
// another is dropped with a note. What was seen otherwise is a
// diagnostic. No evidence log: nothing (the test did not time out, or
// its launcher collects none).
func Checks(work, evidence []plan.Output, reached string, hosts []string) ([]result.Check, []result.Diagnostic) {
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
	read := func(o plan.Output, rd func(string, io.Reader) (Evidence, error)) (Evidence, bool) {
		f, err := os.Open(o.Log)
		if err != nil {
			diags = append(diags, result.Diagnostic{Level: result.Warning, Message: fmt.Sprintf("hang evidence: step %s: %v", o.Step, err)})
			return Evidence{}, false
		}
		defer f.Close()
		e, err := rd(filepath.Base(o.Log), f)
		if err != nil {
			diags = append(diags, result.Diagnostic{Level: result.Warning, Message: "hang evidence: " + err.Error()})
		}
		return e, true
	}
	// The test's nodes, and the launcher's name of each node an evidence
	// step named by its own host name.
	known := map[string]bool{}
	for _, h := range hosts {
		known[h] = true
	}
	for _, o := range append(slices.Clip(work), evidence...) {
		if o.Host != "" {
			known[o.Host] = true
		}
	}
	alias := map[string]string{}
	type read1 struct {
		o plan.Output
		e Evidence
	}
	var evs []read1
	for _, o := range evidence {
		e, ok := read(o, ReadEvidence)
		if !ok {
			continue
		}
		for _, n := range e.Nodes {
			known[n] = true
			if o.Host != "" && n != o.Host {
				// Localisation pins runs to the launcher's names.
				alias[n] = o.Host
			}
		}
		evs = append(evs, read1{o, e})
	}
	seen := map[string]bool{}
	var dropped []string
	add := func(s Suspect) {
		if !ValidHost(s.Host) || !known[s.Host] {
			dropped = append(dropped, fmt.Sprintf("%q", s.Host))
			return
		}
		if to, ok := alias[s.Host]; ok {
			s.Reason = strings.Replace(s.Reason, s.Host, to, 1)
			s.Host = to
		}
		if seen[s.Host] {
			return
		}
		seen[s.Host] = true
		checks = append(checks, result.Check{Name: "hang.suspect", Host: s.Host, Message: at + ": " + s.Reason})
	}
	for _, r := range evs {
		for _, s := range r.e.Suspects(r.o.Host) {
			add(s)
		}
		all.Merge(r.e)
	}
	for _, o := range work {
		if o.Log == "" {
			continue
		}
		if e, ok := read(o, Read); ok {
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
	if len(dropped) > 0 {
		diags = append(diags, result.Diagnostic{Level: result.Warning, Message: "hang evidence: nodes named that are not the test's, not suspected: " + strings.Join(dedup(dropped), ", ")})
	}
	if len(checks) == 0 {
		diags = append(diags, result.Diagnostic{Level: result.Info, Message: at + ": the evidence names no node"})
	}
	return checks, diags
}
