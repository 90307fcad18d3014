package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/jstemmer/go-junit-report/v2/junit"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// locSuite is the JUnit testsuite of one localisation, "localise TEST":
// properties say what was localised and how (test, hosts, strategy,
// tolerance, reason, "stage.NAME" = "N runs, R rounds, S slow", notes);
// one failing testcase per suspect ("suspect n3": the reason as message,
// the evidence as body), or one "no suspect" case: passing, or an error
// when nothing could be localised (no run, or every run errored). The sub-runs are
// listed one line each in system-out rather than as testcases: a
// localisation of 1024 nodes makes thousands, and a slow run is evidence,
// not a failure of its own.
func locSuite(run *result.Run, l result.Localisation, id int, host string) junit.Testsuite {
	class := fmt.Sprintf("gpuaccept.%s.%s.localise.%s", run.SKU, run.Suite, l.Test)
	s := junit.Testsuite{
		Name:     "localise " + l.Test,
		ID:       id,
		Package:  fmt.Sprintf("gpuaccept.%s.%s", run.SKU, run.Suite),
		Hostname: host,
		Time:     "0.000",
	}
	if !run.Started.IsZero() {
		s.Timestamp = run.Started.Format(time.RFC3339)
	}
	status := l.Verdict()
	props := [][2]string{{"sku", run.SKU}, {"suite", run.Suite}, {"launcher", run.Launcher}, {"gpuaccept_version", run.Version},
		{"status", string(status)}, {"test", l.Test}, {"hosts", strings.Join(l.Hosts, ",")}, {"strategy", l.Strategy},
		{"tolerance", percent(l.Tolerance)}, {"reason", l.Reason}}
	for _, st := range l.Stages {
		props = append(props, [2]string{"stage." + st.Name, fmt.Sprintf("%s, %s, %d slow", plural(len(st.Runs), "run"), plural(st.Rounds, "round"), slowRuns(st))})
	}
	for i, n := range l.Notes {
		props = append(props, [2]string{fmt.Sprintf("note.%d", i+1), n})
	}
	for _, kv := range props {
		s.AddProperty(kv[0], kv[1])
	}
	for _, sp := range l.Suspects {
		body := fmt.Sprintf("%s (%s, stage %s): %s\n", sp.Name(), sp.Kind, sp.Stage, sp.Reason)
		for _, e := range sp.Evidence {
			body += "- " + e + "\n"
		}
		s.AddTestcase(junit.Testcase{Name: "suspect " + sp.Name(), Classname: class,
			Failure: &junit.Result{Message: sp.Reason, Type: "Suspect", Data: body}})
	}
	switch {
	case status == result.Error:
		// Nothing was localised: an infrastructure problem, not a pass.
		msg := noSuspect(l)
		s.AddTestcase(junit.Testcase{Name: "no suspect", Classname: class,
			Error: &junit.Result{Message: msg, Type: "Error", Data: msg + "\n" + strings.Join(l.Notes, "\n")}})
	case len(l.Suspects) == 0:
		s.AddTestcase(junit.Testcase{Name: "no suspect", Classname: class, SystemOut: &junit.Output{Data: noSuspect(l) + "\n"}})
	}
	s.SystemOut = &junit.Output{Data: subRunLines(l)}
	return s
}

// subRunLines lists every run of a localisation, one line each: "pairs
// round 1 n1,n3: FAIL busbw 41.7 GB/s, reference 92.5 (-55%), SLOW: why
// [localise/...]".
func subRunLines(l result.Localisation) string {
	var b strings.Builder
	for _, st := range l.Stages {
		fmt.Fprintf(&b, "%s\n", stageSummary(st))
		for _, r := range st.Runs {
			fmt.Fprintf(&b, "%s round %d %s", st.Name, r.Round, strings.Join(r.Hosts, ","))
			if r.NICs != "" {
				fmt.Fprintf(&b, " NICs %s", r.NICs)
			}
			fmt.Fprintf(&b, ": %s", strings.ToUpper(string(r.Status)))
			if f := figureText(r); f != "" {
				b.WriteString(" " + f)
			}
			if ref := referenceText(r); ref != "" {
				b.WriteString(", reference " + ref)
			}
			if r.Slow {
				b.WriteString(", SLOW")
				if r.Why != "" {
					b.WriteString(": " + r.Why)
				}
			}
			if r.Dir != "" {
				fmt.Fprintf(&b, " [%s]", r.Dir)
			}
			b.WriteByte('\n')
		}
	}
	for _, n := range l.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}
