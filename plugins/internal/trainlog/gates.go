package trainlog

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// LossFallMin is how much lower, as a fraction, the mean loss of the last
// quarter of the judged steps must be than that of the first quarter for
// "loss falls" to hold. A healthy run of trainbench.py memorises its fixed
// batch (loss 12 to under 1 in a few steps on every GPU this project ran);
// a framework's run on real data falls more slowly, and 1% over a run of
// tens of steps still separates learning from a flat or rising loss.
const LossFallMin = 0.01

// Judged returns the steps the gates and the judge use: every step not
// marked Warmup, less the first warmup of them in log order.
func Judged(l Log, warmup int) []Step {
	var out []Step
	for _, s := range l.Steps {
		if s.Warmup {
			continue
		}
		if warmup > 0 {
			warmup--
			continue
		}
		out = append(out, s)
	}
	return out
}

// Gates judges what a training log says before any baseline: one check
// per gate, named as below, each naming the lines it saw. A failed
// "loss finite" or "no skipped iterations" or "loss falls" FAILS the test
// (the GPUs computed wrong numbers, or nothing was learned); a failed "no
// out-of-memory" or "ran to the end" is an ERROR (result.Check.Error: the
// run did not measure). Too few steps to tell whether the loss falls is a
// warning, never a silent pass. host names the node the log is of ("" for
// the whole output).
func Gates(l Log, warmup int, host string) []result.Check {
	judged := Judged(l, warmup)
	var checks []result.Check
	add := func(c result.Check) {
		c.Host = host
		checks = append(checks, c)
	}
	// loss finite
	var bad []string
	for _, s := range judged {
		if s.HasLoss && (math.IsNaN(s.Loss) || math.IsInf(s.Loss, 0)) {
			bad = append(bad, fmt.Sprintf("step %d loss %v (line %d)", s.Iter, s.Loss, s.Line))
		}
	}
	for _, f := range l.Failures {
		if f.Kind == KindNaN {
			bad = append(bad, fmt.Sprintf("line %d: %s", f.Line, f.Text))
		}
	}
	add(result.Check{Name: "loss finite", OK: len(bad) == 0, Message: first("a loss that is not a number: ", bad)})
	// no skipped iterations
	var skipped []string
	for _, s := range l.Steps {
		if s.Skipped > 0 || s.NaNIters > 0 {
			skipped = append(skipped, fmt.Sprintf("iteration %d: %d skipped, %d NaN (line %d)", s.Iter, s.Skipped, s.NaNIters, s.Line))
		}
	}
	add(result.Check{Name: "no skipped iterations", OK: len(skipped) == 0, Message: first("iterations skipped: ", skipped)})
	// loss falls
	var losses []Step
	for _, s := range judged {
		if s.HasLoss && !math.IsNaN(s.Loss) && !math.IsInf(s.Loss, 0) {
			losses = append(losses, s)
		}
	}
	switch {
	case len(bad) > 0:
		// The loss gate above already failed; a fall over NaNs means nothing.
	case len(losses) < 4:
		add(result.Check{Name: "loss falls", OK: false, Warn: true,
			Message: fmt.Sprintf("%d judged step(s) with a loss: too few to tell whether the loss falls (4 or more after warm-up)", len(losses))})
	default:
		q := len(losses) / 4
		a, b := meanLoss(losses[:q]), meanLoss(losses[len(losses)-q:])
		c := result.Check{Name: "loss falls", OK: b < a*(1-LossFallMin)}
		if !c.OK {
			c.Message = fmt.Sprintf("the loss does not fall: mean %.4g over steps %d-%d, %.4g over steps %d-%d (lines %d-%d)",
				a, losses[0].Iter, losses[q-1].Iter, b, losses[len(losses)-q].Iter, losses[len(losses)-1].Iter, losses[0].Line, losses[len(losses)-1].Line)
		}
		add(c)
	}
	// no out-of-memory; ran to the end
	var oom, crash []string
	for _, f := range l.Failures {
		switch f.Kind {
		case KindOOM:
			oom = append(oom, fmt.Sprintf("line %d: %s", f.Line, f.Text))
		case KindCrash, KindHang:
			crash = append(crash, fmt.Sprintf("line %d: %s", f.Line, f.Text))
		}
	}
	add(result.Check{Name: "no out-of-memory", OK: len(oom) == 0, Error: len(oom) > 0, Message: first("out of memory (the setup, not the hardware: fewer layers or a smaller batch): ", oom)})
	if n := len(l.Steps); n > 0 && len(crash) == 0 {
		last := l.Steps[n-1]
		if last.Of > 0 && last.Iter < last.Of {
			crash = append(crash, fmt.Sprintf("the log ends at iteration %d of %d (line %d)", last.Iter, last.Of, last.Line))
		}
	}
	add(result.Check{Name: "ran to the end", OK: len(crash) == 0, Error: len(crash) > 0, Message: first("the run did not finish: ", crash)})
	return checks
}

func meanLoss(s []Step) float64 {
	var sum float64
	for _, x := range s {
		sum += x.Loss
	}
	return sum / float64(len(s))
}

// first joins the first three items under lead, and says how many more.
func first(lead string, items []string) string {
	if len(items) == 0 {
		return ""
	}
	n := len(items)
	if n > 3 {
		items = append(items[:3:3], fmt.Sprintf("and %d more", n-3))
	}
	return lead + strings.Join(items, "; ")
}

// Median is the middle of vs (the mean of the two middle ones for an even
// count); 0 for none.
func Median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
