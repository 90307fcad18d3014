package burnin

// This file: the judgement across cycles (drift, spread, new errors),
// kept as it streams: what it holds grows with the points measured per
// cycle, not with the cycles.

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// The rules a burn-in is judged by across its cycles (Finding.Rule).
const (
	RuleCycle  = "cycle"  // a cycle's own verdict: fail or error
	RuleDrift  = "drift"  // a point fell by more than the band over the run
	RuleSpread = "spread" // a GPU's cycles scatter more than its peers'
	RuleErrors = "errors" // an XID, ECC error or PCIe replay appeared
)

// Window is how many cycles the drift rule takes the median of, at the
// start (the point's own reference) and at each later cycle (where it
// stands now): one slow cycle is noise, three in a row are drift.
const Window = 3

// DefaultDrift is the fall, as a fraction of a point's first cycles,
// that fails a burn-in when no --drift is given: 5%, the band the seeds'
// single-node baselines allow a matmul or HBM figure (baselines/*.yaml).
const DefaultDrift = 0.05

// SpreadFactor and MinSpread flag a GPU whose cycles scatter (coefficient
// of variation) more than SpreadFactor times the median of its peers'
// (the same point on the run's other GPUs) and more than MinSpread: the
// H100 recordings of testdata/recordings/h100x1-2026-12-07 scatter about
// 1% cycle to cycle on an idle board (train tokens/s 27,958-28,069).
const (
	SpreadFactor = 3
	MinSpread    = 0.02
)

// Finding is one thing the cross-cycle rules found.
type Finding struct {
	// Rule is RuleCycle, RuleDrift, RuleSpread or RuleErrors.
	Rule string `json:"rule"`
	// Status is fail (drift, new errors, a failed cycle), error (a cycle
	// in error) or warn (spread).
	Status result.Status `json:"status"`
	// Test and Point name what moved: "gemm.matmul", "tflops dtype=bf16
	// gpu=0 host=node1".
	Test  string `json:"test,omitempty"`
	Point string `json:"point,omitempty"`
	// Host and GPU name the GPU, where the point does.
	Host string `json:"host,omitempty"`
	GPU  string `json:"gpu,omitempty"`
	// Cycle is where it was first seen (1-based), After how long into the
	// burn-in that cycle ended.
	Cycle int           `json:"cycle,omitempty"`
	After time.Duration `json:"after_ns,omitempty"`
	// Message says it in words.
	Message string `json:"message"`
}

// Judge judges a burn-in's cycles as they come (Add), by the rules above.
type Judge struct {
	drift   float64
	started time.Time
	series  map[string]*series
	order   []string
	other   []Finding // cycles, errors: as they come, MaxListed at most
	// unlisted counts the findings past MaxListed, per rule, and the
	// worst status among them.
	unlisted map[string]int
	worstOut result.Status
}

// note keeps finding f, or counts it once MaxListed are kept: what a
// burn-in holds stays the size of what it lists.
func (j *Judge) note(f Finding) {
	if len(j.other) < MaxListed {
		j.other = append(j.other, f)
		return
	}
	if j.unlisted == nil {
		j.unlisted = map[string]int{}
	}
	j.unlisted[f.Rule]++
	j.worstOut = result.Worst(j.worstOut, f.Status)
}

// series is one point's values over the cycles.
type series struct {
	test, point, host, gpu, peer string
	higher                       bool
	first                        []float64 // the first Window cycles
	last                         []float64 // the last Window cycles
	n                            int
	mean, m2                     float64 // Welford's running variance
	worst                        float64 // largest fall so far, a fraction
	crossed                      int     // first cycle past the band; 0: none
	crossedAt                    time.Duration
	crossedFrom, crossedTo       float64
	unit                         string
	// band is the fall that fails this point: the drift band, or the
	// point's own band where its baseline entry allows more
	// (result.Judged.Tolerance; a datasheet floor's is no noise figure).
	band float64
}

// NewJudge judges cycles of a burn-in started at started, a fall of more
// than drift (a fraction, 0 < drift < 1) failing it.
func NewJudge(drift float64, started time.Time) *Judge {
	return &Judge{drift: drift, started: started, series: map[string]*series{}}
}

// Add judges cycle c (its run read back or just finished): its own
// verdict, the new errors its telemetry shows, and each of its headline
// points into its series. An interrupted cycle is not judged: its
// points are not whole measurements.
func (j *Judge) Add(c Cycle, run *result.Run) {
	if c.Interrupted {
		return
	}
	after := c.Started.Add(c.Duration).Sub(j.started)
	if c.Status == result.Fail || c.Status == result.Error {
		j.note(Finding{Rule: RuleCycle, Status: c.Status, Cycle: c.N, After: after,
			Message: fmt.Sprintf("cycle %d %s: %s", c.N, c.Status, c.Message)})
	}
	for _, t := range run.Tests {
		if t.Telemetry != nil {
			for _, g := range t.Telemetry.GPUs {
				if len(g.NewErrors) > 0 {
					j.note(Finding{Rule: RuleErrors, Status: result.Fail, Test: t.Name, Host: g.Host, GPU: g.GPU, Cycle: c.N, After: after,
						Message: fmt.Sprintf("GPU %s%s during %s of cycle %d: %s", g.GPU, onHost(g.Host), t.Name, c.N, strings.Join(g.NewErrors, ", "))})
				}
			}
		}
		for _, m := range headline(t) {
			j.point(c.N, after, t, m)
		}
	}
}

// headline is the points of t the rules follow: metrics its plugin
// records by default (busbw, tflops, tokens/s: result.Meaning.Record),
// each curve at its largest message size only, where small sizes
// scatter by latency.
func headline(t result.Test) []result.Judged {
	largest := map[string]result.Judged{}
	var keys []string
	for _, m := range t.Metrics {
		if mn, ok := result.MeaningOf(t.Meanings, m.Name); !ok || !mn.Record || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			continue
		}
		k := m.Name + " " + result.LabelText(m.Labels, nil)
		if old, ok := largest[k]; !ok || m.Size > old.Size {
			if !ok {
				keys = append(keys, k)
			}
			largest[k] = m
		}
	}
	out := make([]result.Judged, 0, len(keys))
	for _, k := range keys {
		out = append(out, largest[k])
	}
	return out
}

func (j *Judge) point(n int, after time.Duration, t result.Test, m result.Judged) {
	point := m.Name + " " + result.LabelText(m.Labels, nil)
	if m.Size > 0 {
		point = fmt.Sprintf("%s at %s %s", m.Name, result.FormatBytes(m.Size), result.LabelText(m.Labels, nil))
	}
	point = strings.TrimSpace(point)
	key := t.Name + "\x00" + point
	s := j.series[key]
	if s == nil {
		mn, _ := result.MeaningOf(t.Meanings, m.Name)
		// Its peers: the same point on the run's other GPUs.
		instance := map[string]string{"host": "", "gpu": ""}
		s = &series{test: t.Name, point: point, host: m.Labels["host"], gpu: m.Labels["gpu"], unit: m.Unit, band: j.drift,
			peer: t.Name + "\x00" + m.Name + fmt.Sprint(m.Size) + "\x00" + result.LabelText(m.Labels, instance), higher: mn.Better != result.BetterLower}
		j.series[key] = s
		j.order = append(j.order, key)
	}
	if m.Basis != result.BasisFloor && m.Tolerance > s.band && m.Tolerance < 1 {
		s.band = m.Tolerance
	}
	v := m.Value
	s.n++
	d := v - s.mean
	s.mean += d / float64(s.n)
	s.m2 += d * (v - s.mean)
	if len(s.first) < Window {
		s.first = append(s.first, v)
	}
	s.last = append(s.last, v)
	if len(s.last) > Window {
		s.last = s.last[1:]
	}
	if s.n <= Window {
		return // the point's own reference is still being measured
	}
	from, now := result.Median(s.first), result.Median(s.last)
	if from == 0 {
		return
	}
	fall := (from - now) / from
	if !s.higher {
		fall = (now - from) / from
	}
	s.worst = max(s.worst, fall)
	if fall > s.band && s.crossed == 0 {
		s.crossed, s.crossedAt, s.crossedFrom, s.crossedTo = n, after, from, now
	}
}

// WorstDrift is the largest fall of any point so far (a fraction, 0 when
// none fell) and what fell: "gemm.matmul tflops dtype=bf16 gpu=0".
func (j *Judge) WorstDrift() (float64, string) {
	worst, what := 0.0, ""
	for _, k := range j.order {
		if s := j.series[k]; s.worst > worst {
			worst, what = s.worst, s.test+" "+s.point
		}
	}
	return worst, what
}

// Findings is every finding so far: failed cycles and new errors as they
// came, then each point's drift, then each GPU's spread.
func (j *Judge) Findings() []Finding {
	out := append([]Finding(nil), j.other...)
	for _, rule := range []string{RuleCycle, RuleErrors} {
		if n := j.unlisted[rule]; n > 0 {
			out = append(out, Finding{Rule: rule, Status: j.worstOut,
				Message: fmt.Sprintf("%d more %s findings past the first %d (every cycle is in its folder)", n, rule, MaxListed)})
		}
	}
	for _, k := range j.order {
		s := j.series[k]
		if s.crossed == 0 {
			continue
		}
		dir := "fell"
		if !s.higher {
			dir = "rose"
		}
		out = append(out, Finding{Rule: RuleDrift, Status: result.Fail, Test: s.test, Point: s.point, Host: s.host, GPU: s.gpu,
			Cycle: s.crossed, After: s.crossedAt,
			Message: fmt.Sprintf("%s %s %s %.1f%% (%.4g → %.4g %s, median of %d cycles) by cycle %d, %s into the burn-in: more than the %.0f%% band; worst %.1f%%",
				s.test, s.point, dir, 100*math.Abs(s.crossedTo-s.crossedFrom)/s.crossedFrom, s.crossedFrom, s.crossedTo, s.unit, Window,
				s.crossed, s.crossedAt.Round(time.Second), 100*s.band, 100*s.worst)})
	}
	return append(out, j.spread()...)
}

// spread flags each point whose cycles scatter more than its peers'.
func (j *Judge) spread() []Finding {
	peers := map[string][]*series{}
	var order []string
	for _, k := range j.order {
		s := j.series[k]
		if s.n < Window || s.mean == 0 {
			continue
		}
		if peers[s.peer] == nil {
			order = append(order, s.peer)
		}
		peers[s.peer] = append(peers[s.peer], s)
	}
	var out []Finding
	for _, p := range order {
		group := peers[p]
		if len(group) < 2 {
			continue
		}
		cvs := make([]float64, len(group))
		for i, s := range group {
			cvs[i] = cv(s)
		}
		for i, s := range group {
			// Its peers' without its own: of two GPUs, the steady one
			// is the scattering one's measure.
			others := append(append([]float64(nil), cvs[:i]...), cvs[i+1:]...)
			typical := result.Median(others)
			if cvs[i] > MinSpread && cvs[i] > SpreadFactor*typical {
				out = append(out, Finding{Rule: RuleSpread, Status: result.Warn, Test: s.test, Point: s.point, Host: s.host, GPU: s.gpu,
					Message: fmt.Sprintf("%s %s scatters %.1f%% cycle to cycle (coefficient of variation over %d cycles), its %d peers %.1f%% (median)",
						s.test, s.point, 100*cvs[i], s.n, len(group)-1, 100*typical)})
			}
		}
	}
	return out
}

func cv(s *series) float64 {
	if s.n < 2 {
		return 0
	}
	return math.Sqrt(s.m2/float64(s.n-1)) / math.Abs(s.mean)
}

func onHost(h string) string {
	if h == "" {
		return ""
	}
	return " on " + h
}
