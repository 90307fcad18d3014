package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jstemmer/go-junit-report/v2/junit"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
)

// MaxRawOutput bounds, in bytes, how much of each raw output file a JUnit
// testsuite's system-out carries; the whole file stays in the results
// folder. CI systems load the XML into memory and show it in a browser.
const MaxRawOutput = 256 << 10

// JUnit builds the JUnit document of a run, valid against the JUnit schema
// Jenkins' xunit plugin uses (junit-10.xsd, kept in testdata):
//
//   - one <testsuite> per test (name "nccl.all_reduce"), with properties
//     for SKU, suite, scope, launcher, hosts, gpuaccept version, the test's
//     parameters and the tool and library versions the output names; its
//     system-out holds the commands and the raw outputs (redacted), its
//     system-err the diagnostics;
//   - one <testcase> per judged curve or metric (all points of "busbw
//     out-of-place" are one case) and one per correctness check; a point
//     outside its band is a <failure> whose message says measured against
//     band ("busbw out-of-place 28.7 GB/s at 4 GiB below 310.9 (baseline
//     345.5 -10%)"), warn points pass with the finding in system-out;
//   - a test that could not run or be parsed gets a "run" case with
//     <error>: an infrastructure problem is not a hardware failure;
//   - a skipped test is one case with <skipped> and its reason, which
//     starts "not signed off: measured, not judged: " for a test that
//     measured without a baseline entry (Verdict NotSignedOff);
//   - an earlier attempt of a retried test is a testsuite of its own
//     ("nccl.all_reduce (attempt 1 of 2)"), so a flaky pass shows;
//   - each localisation is a testsuite "localise TEST" with a failing
//     testcase per suspect (see locSuite);
//   - a run that is not signed off (status skip, exit code 4) ends with a
//     testsuite SignOffSuite holding one testcase of that name whose
//     <failure type="not-signed-off"> says why (signOffSuite): its other
//     cases are passes and skips only, which CI reads as green.
//
// Raw outputs are read from run.Dir (or as given, for check runs without a
// results folder); one that cannot be read is named in system-out.
func JUnit(run *result.Run) junit.Testsuites {
	var doc junit.Testsuites
	doc.Name = fmt.Sprintf("gpuaccept %s %s", run.SKU, run.Suite)
	doc.Time = seconds(run.Duration)
	host, _ := os.Hostname()
	red := redact.FromEnv(os.Environ(), nil)
	id := 0
	for _, t := range run.Tests {
		n := len(t.Attempts) + 1
		for i, a := range t.Attempts {
			doc.AddSuite(suiteOf(run, a, fmt.Sprintf("%s (attempt %d of %d)", t.Name, i+1, n), id, host, red))
			id++
		}
		name := t.Name
		if n > 1 {
			name = fmt.Sprintf("%s (attempt %d of %d)", t.Name, n, n)
		}
		doc.AddSuite(suiteOf(run, t, name, id, host, red))
		id++
	}
	for _, l := range run.Localisations {
		doc.AddSuite(locSuite(run, l, id, host))
		id++
	}
	if s, ok := signOffSuite(run, id, host); ok {
		doc.AddSuite(s)
	}
	for i := range doc.Suites {
		sanitize(&doc.Suites[i])
	}
	// junit-10.xsd has no skipped or disabled count on <testsuites>; each
	// <testsuite> carries its own.
	doc.Skipped, doc.Disabled = 0, 0
	return doc
}

// SignOffSuite names the testsuite, and its one testcase, that junit.xml
// ends with when the run is not signed off (signOffSuite).
const SignOffSuite = "sign-off"

// signOffSuite is the testsuite SignOffSuite of a run whose status is skip
// (exit code 4: measured and not judged, or nothing judged): one testcase
// with a <failure type="not-signed-off">, so that CI, which reads the
// cases, sees red as the exit code does. false for any other status: a
// fail or an error shows in its own cases.
func signOffSuite(run *result.Run, id int, host string) (junit.Testsuite, bool) {
	if run.Status != result.Skip {
		return junit.Testsuite{}, false
	}
	msg := "not signed off: "
	if nj := run.NotJudgedText(); nj != "" {
		msg += nj
	} else {
		msg += "nothing was judged (every test skipped: see their reasons)"
	}
	s := junit.Testsuite{Name: SignOffSuite, ID: id, Package: fmt.Sprintf("gpuaccept.%s.%s", run.SKU, run.Suite), Hostname: host}
	if !run.Started.IsZero() {
		s.Timestamp = run.Started.Format(time.RFC3339)
	}
	s.AddProperty("sku", run.SKU)
	s.AddProperty("suite", run.Suite)
	s.AddProperty("scope", scopeText(run.Scope))
	s.AddProperty("status", string(run.Status))
	s.AddTestcase(junit.Testcase{Name: SignOffSuite, Classname: fmt.Sprintf("gpuaccept.%s.%s", run.SKU, run.Suite),
		Failure: &junit.Result{Message: msg, Type: "not-signed-off", Data: Summary(run)}})
	return s, true
}

func suiteOf(run *result.Run, t result.Test, name string, id int, host string, red *redact.Redactor) junit.Testsuite {
	class := fmt.Sprintf("gpuaccept.%s.%s.%s", run.SKU, run.Suite, t.Name)
	s := junit.Testsuite{
		Name:     name,
		ID:       id,
		Package:  fmt.Sprintf("gpuaccept.%s.%s", run.SKU, run.Suite),
		Hostname: host,
		Time:     seconds(t.Duration),
	}
	switch {
	case !t.Started.IsZero():
		s.Timestamp = t.Started.Format(time.RFC3339)
	case !run.Started.IsZero():
		s.Timestamp = run.Started.Format(time.RFC3339)
	}
	for _, kv := range properties(run, t) {
		s.AddProperty(kv[0], kv[1])
	}
	if t.Unjudged() && Verdict(run) == NotSignedOff {
		// Its skip keeps the run from sign-off: a CI page must say so
		// where it lists the case, not only in the exit code.
		t.Message = "not signed off: measured, not judged: " + t.Message
	}
	for _, tc := range testcases(t, class) {
		s.AddTestcase(tc)
	}
	if out := systemOut(run, t, red); out != "" {
		s.SystemOut = &junit.Output{Data: out}
	}
	if errs := diagnostics(t); errs != "" {
		s.SystemErr = &junit.Output{Data: errs}
	}
	return s
}

// scopeText is a scope as results.json writes it: "" for none.
func scopeText(s plan.Scope) string {
	b, _ := s.MarshalText()
	return string(b)
}

// properties of a test's testsuite, in a fixed order.
func properties(run *result.Run, t result.Test) [][2]string {
	props := [][2]string{
		{"sku", run.SKU}, {"suite", run.Suite}, {"scope", scopeText(t.Scope)}, {"launcher", run.Launcher},
		{"gpuaccept_version", run.Version}, {"status", string(t.Status)},
	}
	if run.SKUSource != "" {
		// A site's own SKU file judged it, or the built-in one: CI reads
		// which (SKUSourceLine).
		props = append(props, [2]string{"sku_source", run.SKUSource})
	}
	if t.Scope.IsZero() {
		props[2][1] = scopeText(run.Scope)
	}
	if len(run.Hosts) > 0 {
		props = append(props, [2]string{"hosts", strings.Join(run.Hosts, ",")})
	} else if h := t.Info["hosts"]; h != "" {
		props = append(props, [2]string{"hosts", h})
	}
	for _, k := range sortedKeys(t.Info) {
		if k == "hosts" || !(strings.HasSuffix(k, "version") || k == "gpu") {
			continue
		}
		props = append(props, [2]string{k, t.Info[k]})
	}
	for _, k := range sortedKeys(t.Params) {
		props = append(props, [2]string{"param." + k, t.Params[k]})
	}
	if len(t.Basis) > 0 {
		// On what authority the verdict rests (golden, reference, floor).
		props = append(props, [2]string{"basis", strings.Join(t.Basis, ",")})
	}
	if t.Status != result.Error {
		props = append(props, efficiencyProperties(t)...)
	}
	if l := TelemetryLine(t); l != "" {
		// What its GPUs did that may explain its numbers (a slowdown, new
		// errors), as the table says it.
		props = append(props, [2]string{"telemetry", l})
	}
	return props
}

// curve is the judged points of one metric name and label set.
type curve struct {
	key    string
	points []result.Judged
}

// curves groups a test's judged metrics (Skip ones are not judged) by name
// and labels, in the order they first appear.
func curves(t result.Test) []curve {
	var out []curve
	idx := map[string]int{}
	name := curveNamer(t.Metrics)
	for _, m := range t.Metrics {
		if m.Status == result.Skip {
			continue
		}
		k := name(m.Metric)
		i, ok := idx[k]
		if !ok {
			out = append(out, curve{key: k})
			i = len(out) - 1
			idx[k] = i
		}
		out[i].points = append(out[i].points, m)
	}
	return out
}

// CurveName names the curve a metric belongs to: its name, placement, and
// its other labels but type and redop, which one test of nccl-tests
// usually holds constant ("busbw out-of-place", "busbw in-place {root=0}").
func CurveName(m result.Metric) string { return curveName(m, nil) }

// curveNamer returns CurveName for the metrics of one test, keeping type
// and redop in the name when they vary among them (--param datatype=all):
// else the curves of every data type would be drawn and judged as one.
func curveNamer(ms []result.Judged) func(result.Metric) string {
	first := map[string]string{}
	varying := map[string]bool{}
	for _, m := range ms {
		for _, k := range []string{"type", "redop"} {
			v, ok := m.Labels[k]
			if !ok {
				continue
			}
			if f, seen := first[k]; !seen {
				first[k] = v
			} else if f != v {
				varying[k] = true
			}
		}
	}
	return func(m result.Metric) string { return curveName(m, varying) }
}

func curveName(m result.Metric, varying map[string]bool) string {
	s := m.Name
	if p := m.Labels["placement"]; p != "" {
		s += " " + p
	}
	var rest []string
	for _, k := range sortedKeys(m.Labels) {
		if k != "placement" && (k != "type" && k != "redop" || varying[k]) {
			rest = append(rest, k+"="+m.Labels[k])
		}
	}
	if len(rest) > 0 {
		s += " {" + strings.Join(rest, ",") + "}"
	}
	return s
}

func testcases(t result.Test, class string) []junit.Testcase {
	if t.Status == result.Skip && len(curves(t)) == 0 {
		return []junit.Testcase{{Name: t.Name, Classname: class, Time: seconds(t.Duration),
			Skipped: &junit.Result{Message: t.Message}}}
	}
	var out []junit.Testcase
	failed := false
	if t.Status == result.Error {
		out = append(out, junit.Testcase{Name: "run", Classname: class, Time: seconds(t.Duration),
			Error: &junit.Result{Message: t.Message, Type: "Error", Data: t.Message}})
	}
	for _, c := range curves(t) {
		tc := junit.Testcase{Name: c.key, Classname: class}
		var body strings.Builder
		var fails, warns []string
		for _, p := range c.points {
			fmt.Fprintf(&body, "%s %s\n", p.Status, pointLine(p))
			switch p.Status {
			case result.Fail:
				fails = append(fails, p.Message)
			case result.Warn:
				warns = append(warns, p.Message)
			}
		}
		if len(fails) > 0 {
			tc.Failure = &junit.Result{Message: firstAndMore(fails), Type: "OutsideBand", Data: body.String()}
			failed = true
		} else {
			out := body.String()
			if len(warns) > 0 {
				out = "WARN: " + strings.Join(warns, "\nWARN: ") + "\n" + out
			}
			tc.SystemOut = &junit.Output{Data: out}
		}
		out = append(out, tc)
	}
	for _, c := range t.Checks {
		tc := junit.Testcase{Name: "check: " + c.Name, Classname: class}
		switch {
		case c.OK:
		case c.Warn:
			tc.SystemOut = &junit.Output{Data: "WARN: " + checkText(c) + "\n"}
		default:
			tc.Failure = &junit.Result{Message: checkText(c), Type: "CheckFailed", Data: checkText(c)}
			failed = true
		}
		out = append(out, tc)
	}
	if t.Status == result.Fail && !failed {
		// A fail with no failing curve or check (a finding of the judge
		// itself) still has to read as a failure in CI.
		out = append(out, junit.Testcase{Name: "verdict", Classname: class,
			Failure: &junit.Result{Message: t.Message, Type: "Failed", Data: t.Message}})
	}
	if t.Status == result.Warn {
		out = append(out, junit.Testcase{Name: "verdict", Classname: class,
			SystemOut: &junit.Output{Data: "WARN: " + t.Message + "\n"}})
	}
	if len(out) == 0 {
		out = append(out, junit.Testcase{Name: "verdict", Classname: class, SystemOut: &junit.Output{Data: t.Message + "\n"}})
	}
	return out
}

// pointLine renders one judged point: "busbw out-of-place 28.7 GB/s at 4
// GiB, baseline 304.3, band >= 273.9".
func pointLine(p result.Judged) string {
	s := fmt.Sprintf("%s %.2f %s", CurveName(p.Metric), p.Value, p.Unit)
	if p.Size > 0 {
		s += " at " + result.FormatBytes(p.Size)
	}
	if c := p.CyclesText(); c != "" {
		s += ", " + c
	}
	if p.Expected != nil {
		s += fmt.Sprintf(", %s %.2f", expectedName(p.Basis), *p.Expected)
	}
	if p.Band != "" {
		s += ", band " + p.Band
	}
	return s
}

// expectedName names the figure a point was judged against by its basis:
// the site's "golden baseline", a "reference baseline" measured elsewhere,
// the "datasheet" figure of a floor (result.FigureName); "baseline" where
// no basis is stored (a folder from before gpuaccept kept one).
func expectedName(basis string) string {
	if basis == result.BasisGolden || basis == result.BasisReference {
		return basis + " " + result.FigureName(basis)
	}
	return result.FigureName(basis)
}

func firstAndMore(msgs []string) string {
	if len(msgs) == 1 {
		return msgs[0]
	}
	return fmt.Sprintf("%s; and %d more", msgs[0], len(msgs)-1)
}

// systemOut is the commands that ran and the raw outputs, redacted.
func systemOut(run *result.Run, t result.Test, red *redact.Redactor) string {
	var b strings.Builder
	for _, c := range t.Commands {
		fmt.Fprintf(&b, "$ %s\n", red.String(c))
	}
	for _, r := range t.Raw {
		fmt.Fprintf(&b, "==> %s <==\n", r)
		data, err := readHead(run.Dir, r, MaxRawOutput)
		if err != nil {
			fmt.Fprintf(&b, "(not readable: %v)\n", err)
			continue
		}
		var clean bytes.Buffer
		if _, err := red.Copy(&clean, bytes.NewReader(data)); err != nil {
			fmt.Fprintf(&b, "(not readable: %v)\n", err)
			continue
		}
		b.WriteString(xmlSafe(clean.String()))
		if len(data) == MaxRawOutput {
			fmt.Fprintf(&b, "\n(cut at %d bytes; the whole file is in the results folder)", MaxRawOutput)
		}
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// readHead reads the first n bytes of raw output r: a regular file inside
// results folder dir, not reached through a link (safefs), or, without a
// folder (check without --out), the file the user gave, which must be
// regular too.
func readHead(dir, r string, n int64) ([]byte, error) {
	var f *os.File
	var err error
	if dir != "" {
		f, err = safefs.Open(dir, r)
	} else {
		f, err = safefs.OpenNamed(r)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// diagnostics lists a test's notes (NCCL WARN lines, tool errors) for
// system-err.
func diagnostics(t result.Test) string {
	var b strings.Builder
	for _, d := range t.Diagnostics {
		src := ""
		if d.Source != "" {
			src = " (" + d.Source + ")"
		}
		fmt.Fprintf(&b, "%s: %s%s\n", d.Level, xmlSafe(d.Message), src)
	}
	return b.String()
}

// xmlSafe drops what XML 1.0 cannot hold (NUL and other control bytes,
// invalid UTF-8) from tool output: encoding/xml writes CDATA as is, and
// one such byte makes the whole report unreadable to a CI system.
func xmlSafe(s string) string {
	ok := true
	for _, r := range s {
		if !xmlChar(r) {
			ok = false
			break
		}
	}
	if ok && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteRune('\uFFFD')
		case xmlChar(r):
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "\\x%02x", r)
		}
	}
	return b.String()
}

// sanitize makes every CDATA body of s XML-safe (attributes are escaped
// by encoding/xml itself).
func sanitize(s *junit.Testsuite) {
	out := func(o *junit.Output) {
		if o != nil {
			o.Data = xmlSafe(o.Data)
		}
	}
	res := func(r *junit.Result) {
		if r != nil {
			r.Data = xmlSafe(r.Data)
		}
	}
	out(s.SystemOut)
	out(s.SystemErr)
	for i := range s.Testcases {
		tc := &s.Testcases[i]
		out(tc.SystemOut)
		out(tc.SystemErr)
		res(tc.Failure)
		res(tc.Error)
		res(tc.Skipped)
	}
}

func xmlChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// WriteJUnit writes the run's JUnit XML to path, masked, a file the user
// named: a link there is refused, not written through (safefs.WriteNamed).
func WriteJUnit(path string, run *result.Run) error { return writeJUnitFile(path, masked(run)) }

func writeJUnitFile(path string, run *result.Run) error {
	var b bytes.Buffer
	if err := writeJUnit(&b, run); err != nil {
		return fmt.Errorf("write JUnit %s: %w", path, err)
	}
	if err := safefs.WriteNamed(path, redact.Env().Bytes(b.Bytes()), 0o644); err != nil {
		return fmt.Errorf("write JUnit %s: %w", path, err)
	}
	return nil
}

func writeJUnit(w io.Writer, run *result.Run) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	doc := JUnit(run)
	return doc.WriteXML(w)
}
