package result

import (
	"fmt"
	"math"
	"strings"
)

// NonFinite is the start of the message of a test that carried a number
// JSON cannot hold (NaN, +Inf, -Inf): no tool measures one, so the test is
// an error, and the number is written as 0.
const NonFinite = "not a number a run measures"

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// FiniteTest returns t as it can be written as JSON: every metric value or
// baseline value (of t and of its attempts) that is NaN or ±Inf set to 0,
// and then t an Error whose message names them first. t itself is not
// changed; without such a number t is returned as is.
func FiniteTest(t Test) Test {
	var bad []string
	metrics, copied := t.Metrics, false
	for i, m := range t.Metrics {
		okV, okE := finite(m.Value), m.Expected == nil || finite(*m.Expected)
		if okV && okE {
			continue
		}
		if !copied {
			metrics, copied = append([]Judged(nil), t.Metrics...), true
		}
		if !okV {
			bad = append(bad, fmt.Sprintf("%s = %v", m.Key(), m.Value))
			metrics[i].Value = 0
		}
		if !okE {
			bad = append(bad, fmt.Sprintf("%s baseline = %v", m.Key(), *m.Expected))
			zero := 0.0
			metrics[i].Expected = &zero
		}
	}
	var attempts []Test
	for i, a := range t.Attempts {
		fa := FiniteTest(a)
		if fa.Status == a.Status && fa.Message == a.Message {
			continue
		}
		if attempts == nil {
			attempts = append([]Test(nil), t.Attempts...)
		}
		attempts[i] = fa
		bad = append(bad, fmt.Sprintf("attempt %d", i+1))
	}
	if len(bad) == 0 {
		return t
	}
	t.Metrics = metrics
	if attempts != nil {
		t.Attempts = attempts
	}
	msg := fmt.Sprintf("%s: %s (written as 0)", NonFinite, strings.Join(bad, ", "))
	t.Diagnostics = append(append([]Diagnostic(nil), t.Diagnostics...), Diagnostic{Level: Problem, Message: msg})
	if t.Message != "" {
		msg += "; " + t.Message
	}
	t.Status, t.Message = Error, msg
	return t
}

// FiniteLocalisation returns l as it can be written as JSON: a tolerance,
// figure or reference that is NaN or ±Inf set to 0, its run an Error, and
// a note naming it. l itself is not changed.
func FiniteLocalisation(l Localisation) Localisation {
	var notes []string
	if !finite(l.Tolerance) {
		notes = append(notes, fmt.Sprintf("tolerance = %v", l.Tolerance))
		l.Tolerance = 0
	}
	stages, copied := l.Stages, false
	for si, st := range l.Stages {
		for ri, r := range st.Runs {
			bad := !finite(r.Figure) || !finite(r.Reference)
			for _, n := range r.NICFigures {
				bad = bad || !finite(n.Figure)
			}
			if !bad {
				continue
			}
			if !copied {
				stages, copied = make([]Stage, len(l.Stages)), true
				for i, s := range l.Stages {
					stages[i] = s
					stages[i].Runs = append([]SubRun(nil), s.Runs...)
				}
			}
			sr := &stages[si].Runs[ri]
			notes = append(notes, fmt.Sprintf("%s round %d on %s: figure %v, reference %v", st.Name, r.Round, strings.Join(r.Hosts, ","), r.Figure, r.Reference))
			if !finite(sr.Figure) {
				sr.Figure = 0
			}
			if !finite(sr.Reference) {
				sr.Reference = 0
			}
			if len(sr.NICFigures) > 0 {
				sr.NICFigures = append([]NICFigure(nil), sr.NICFigures...)
				for i := range sr.NICFigures {
					if !finite(sr.NICFigures[i].Figure) {
						sr.NICFigures[i].Figure = 0
					}
				}
			}
			sr.Status = Error
		}
	}
	if len(notes) == 0 {
		return l
	}
	l.Stages = stages
	l.Notes = append(append([]string(nil), l.Notes...), fmt.Sprintf("%s: %s (written as 0)", NonFinite, strings.Join(notes, "; ")))
	return l
}

// Finite returns r as it can be written as JSON (FiniteTest of each test,
// FiniteLocalisation of each localisation), its status set again when a
// test changed. r itself is not changed; without such a number r is
// returned.
func (r *Run) Finite() *Run {
	var tests []Test
	for i, t := range r.Tests {
		ft := FiniteTest(t)
		if ft.Status == t.Status && ft.Message == t.Message {
			continue
		}
		if tests == nil {
			tests = append([]Test(nil), r.Tests...)
		}
		tests[i] = ft
	}
	var locs []Localisation
	for i, l := range r.Localisations {
		fl := FiniteLocalisation(l)
		if len(fl.Notes) == len(l.Notes) {
			continue
		}
		if locs == nil {
			locs = append([]Localisation(nil), r.Localisations...)
		}
		locs[i] = fl
	}
	if tests == nil && locs == nil {
		return r
	}
	c := *r
	if tests != nil {
		c.Tests = tests
	}
	if locs != nil {
		c.Localisations = locs
	}
	c.Finish()
	return &c
}
