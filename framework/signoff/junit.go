package signoff

import (
	"encoding/xml"
	"fmt"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/report"
)

// junitVerdicts are what a junit.xml says of the run, whatever its
// layout: the counts of the whole and of each suite, and each test case's
// outcome (pass, failure, error, skipped), keyed "SUITE/CASE" (repeats
// numbered). CI reads these, not the layout.
func junitVerdicts(data []byte) (map[string]string, error) {
	type testcase struct {
		Name      string    `xml:"name,attr"`
		Classname string    `xml:"classname,attr"`
		Failure   *struct{} `xml:"failure"`
		Error     *struct{} `xml:"error"`
		Skipped   *struct{} `xml:"skipped"`
	}
	type testsuite struct {
		Name     string     `xml:"name,attr"`
		Tests    string     `xml:"tests,attr"`
		Failures string     `xml:"failures,attr"`
		Errors   string     `xml:"errors,attr"`
		Skipped  string     `xml:"skipped,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	var doc struct {
		XMLName  xml.Name
		Tests    string      `xml:"tests,attr"`
		Failures string      `xml:"failures,attr"`
		Errors   string      `xml:"errors,attr"`
		Skipped  string      `xml:"skipped,attr"`
		Suites   []testsuite `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not JUnit XML: %w", err)
	}
	if doc.XMLName.Local != "testsuites" {
		return nil, fmt.Errorf("not JUnit XML: root element <%s>, want <testsuites>", doc.XMLName.Local)
	}
	out := map[string]string{}
	counts := func(key, tests, failures, errors, skipped string) {
		out[key] = fmt.Sprintf("tests %s, failures %s, errors %s, skipped %s", or0(tests), or0(failures), or0(errors), or0(skipped))
	}
	counts("testsuites", doc.Tests, doc.Failures, doc.Errors, doc.Skipped)
	seen := map[string]int{}
	for _, su := range doc.Suites {
		key := "testsuite " + su.Name
		seen[key]++
		if n := seen[key]; n > 1 {
			key += fmt.Sprintf(" #%d", n)
		}
		counts(key, su.Tests, su.Failures, su.Errors, su.Skipped)
		for _, c := range su.Cases {
			ck := key + " testcase " + c.Name
			seen[ck]++
			if n := seen[ck]; n > 1 {
				ck += fmt.Sprintf(" #%d", n)
			}
			var what []string
			if c.Failure != nil {
				what = append(what, "failure")
			}
			if c.Error != nil {
				what = append(what, "error")
			}
			if c.Skipped != nil {
				what = append(what, "skipped")
			}
			if len(what) == 0 {
				what = []string{"pass"}
			}
			out[ck] = strings.Join(what, "+")
		}
	}
	return out, nil
}

// signOffKey is the key junitVerdicts gives the counts of the suite
// report.SignOffSuite.
var signOffKey = "testsuite " + report.SignOffSuite

// withoutSignOff takes the suite report.SignOffSuite out of verdicts v:
// its keys, and its counts off those of the whole.
func withoutSignOff(v map[string]string) {
	so, ok := v[signOffKey]
	if !ok {
		return
	}
	var n [4]int
	if _, err := fmt.Sscanf(so, "tests %d, failures %d, errors %d, skipped %d", &n[0], &n[1], &n[2], &n[3]); err != nil {
		return
	}
	var all [4]int
	if _, err := fmt.Sscanf(v["testsuites"], "tests %d, failures %d, errors %d, skipped %d", &all[0], &all[1], &all[2], &all[3]); err != nil {
		return
	}
	for k := range v {
		if k == signOffKey || strings.HasPrefix(k, signOffKey+" testcase ") {
			delete(v, k)
		}
	}
	v["testsuites"] = fmt.Sprintf("tests %d, failures %d, errors %d, skipped %d", all[0]-n[0], all[1]-n[1], all[2]-n[2], all[3]-n[3])
}

func or0(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

// junitDiffs lists where the verdicts of junit.xml have differ from those
// of want (re-rendered); nil when they agree. It is asked of a junit.xml
// another gpuaccept version made: one made before the not-signed-off
// testcase (report.SignOffSuite) has none, so where have lacks that suite
// want is compared without it, its counts taken off the whole's. Its
// verdict is the run's, re-derived all the same (results.json's status,
// the verdict line of the other reports).
func junitDiffs(have, want []byte) []string {
	h, err := junitVerdicts(have)
	if err != nil {
		return []string{err.Error()}
	}
	w, err := junitVerdicts(want)
	if err != nil {
		return []string{"re-rendered: " + err.Error()}
	}
	if _, ok := h[signOffKey]; !ok {
		withoutSignOff(w)
	}
	var out []string
	for _, k := range sortedKeys(h, w) {
		hv, hok := h[k]
		wv, wok := w[k]
		switch {
		case !wok:
			out = append(out, fmt.Sprintf("%s: %s, the re-derived run has none", k, hv))
		case !hok:
			out = append(out, fmt.Sprintf("%s is missing, %s: %s", k, reDerived, wv))
		case hv != wv:
			out = append(out, fmt.Sprintf("%s: %s, %s: %s", k, hv, reDerived, wv))
		}
	}
	return capped(out)
}

func sortedKeys(ms ...map[string]string) []string {
	keys := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			keys[k] = true
		}
	}
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	// "testsuite X" sorts before its cases, "testsuites" after them.
	sort.Strings(out)
	return out
}
