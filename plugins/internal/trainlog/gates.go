package trainlog

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// Gate names, as the checks carry them.
const (
	GateLossFinite = "loss finite"
	GateNoSkipped  = "no skipped iterations"
	GateLossFalls  = "loss falls"
	GateNoOOM      = "no out-of-memory"
	GateRanToEnd   = "ran to the end"
)

// FlatTolerance is the least relative change of the mean loss between
// the first and the last quarter of the judged steps that "loss falls"
// calls a fall (pass) or a rise (FAIL); a smaller change is flat (Warn).
// A run from random weights starts near ln(vocabulary size) (10.8 for
// GPT-2's 50,257 tokens; the BERT run of testdata/field/train's
// megatron-bert-fp16-skipped-then-stuck logs 10.05 at iteration 20) and
// falls by whole units within its first hundred iterations, far beyond 1%.
const FlatTolerance = 0.01

// FallSigmas and RiseSigmas are how many standard errors of the
// quarter-mean difference a fall must exceed to pass and a rise to FAIL;
// a FAIL blames the hardware, so it asks for stronger evidence. The
// step-to-step noise sigma comes from successive differences d of the
// judged losses, robustly: sigma = 1.4826 x median|d - result.Median(d)| / sqrt(2)
// (one loss spike does not inflate it, a steady trend shifts d without
// widening it), and the difference of two means of q steps each has a
// standard error of sigma x sqrt(2/q). Excerpts of a few noisy steps (the
// NeMo 2 ESM-2 fine-tune of testdata/field/train: batch 1, losses 1.23 to
// 1.38) are thereby flat, not rising.
const (
	FallSigmas = 1.0
	RiseSigmas = 3.0
)

// maxNamed is how many lines a check's message names before "and N more".
const maxNamed = 3

// Gates applies the correctness gates of a training run to l, one check
// per gate, in the order of the Gate* constants; "no skipped iterations"
// only when the writer counts skipped iterations (Megatron, Primus).
// warmup is how many of the first steps (by iteration, after those the
// writer marked Warmup) are not judged; a negative warmup counts as 0.
// A step is one logged line: with Megatron's log interval of 10 it
// covers ten iterations.
//
// Outcomes: a NaN or Inf loss or grad norm, a dropped loss or a NaN
// failure line fails "loss finite"; skipped or NaN iterations fail "no
// skipped iterations"; a loss that rises fails "loss falls" (a flat one
// warns, fewer than 4 judged losses warn); an out-of-memory line, a crash
// or hang line, or a log that stops before the iteration count it
// announced fail with Error set (the run measured nothing: a setup to
// fix, not the hardware).
func Gates(l Log, warmup int) []result.Check {
	judged := sortedJudged(l.Steps, warmup)
	checks := []result.Check{lossFinite(l, judged)}
	if c, ok := noSkipped(l, judged); ok {
		checks = append(checks, c)
	}
	return append(checks, lossFalls(judged), noOOM(l), ranToEnd(l))
}

// names joins up to maxNamed descriptions and says how many more there were.
func names(items []string) string {
	if len(items) <= maxNamed {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:maxNamed], "; "), len(items)-maxNamed)
}

// failureNames describes failures of the given kinds.
func failureNames(l Log, kinds ...string) []string {
	var out []string
	for _, f := range l.Failures {
		for _, k := range kinds {
			if f.Kind == k {
				out = append(out, fmt.Sprintf("line %d: %q", f.Line, f.Text))
			}
		}
	}
	return out
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// lossFinite fails on a NaN or Inf loss or grad norm of a judged step, a
// Megatron line that dropped its loss, or a NaN line of the writer.
func lossFinite(l Log, judged []Step) result.Check {
	c := result.Check{Name: GateLossFinite}
	var bad []string
	for _, s := range judged {
		switch {
		case s.HasLoss && !finite(s.Loss):
			bad = append(bad, fmt.Sprintf("loss %v at iteration %d (line %d)", s.Loss, s.Iter, s.Line))
		case s.HasGradNorm && !finite(s.GradNorm):
			bad = append(bad, fmt.Sprintf("grad norm %v at iteration %d (line %d)", s.GradNorm, s.Iter, s.Line))
		case s.LossDropped && s.Skipped == 0:
			bad = append(bad, fmt.Sprintf("no loss printed at iteration %d (line %d), which skipped no iteration: Megatron leaves a NaN loss out of its line", s.Iter, s.Line))
		}
	}
	bad = append(bad, failureNames(l, KindNaN)...)
	switch {
	case len(bad) > 0:
		c.Message = "non-finite training: " + names(bad)
	case len(judged) == 0:
		c.Warn = true
		c.Message = fmt.Sprintf("no step after warm-up (%d logged): nothing to judge", len(l.Steps))
	default:
		c.OK = true
		c.Message = fmt.Sprintf("%d steps after warm-up, loss and grad norm finite (iterations %d-%d)", len(judged), judged[0].Iter, judged[len(judged)-1].Iter)
	}
	return c
}

// noSkipped fails on skipped or NaN iterations after warm-up; ok is false
// when no step counts them (torchtitan, NeMo), so there is no check.
func noSkipped(l Log, judged []Step) (result.Check, bool) {
	c := result.Check{Name: GateNoSkipped}
	counted := 0
	var bad []string
	for _, s := range judged {
		if !s.Counted {
			continue
		}
		counted++
		if s.Skipped > 0 || s.NaNIters > 0 {
			bad = append(bad, fmt.Sprintf("iteration %d (line %d): %d skipped, %d nan", s.Iter, s.Line, s.Skipped, s.NaNIters))
		}
	}
	if counted == 0 {
		anyCounted := false
		for _, s := range l.Steps {
			anyCounted = anyCounted || s.Counted
		}
		if !anyCounted {
			return c, false
		}
		c.Warn = true
		c.Message = "no step after warm-up: nothing to judge"
		return c, true
	}
	if len(bad) > 0 {
		c.Message = "skipped or NaN iterations: " + names(bad)
		return c, true
	}
	c.OK = true
	c.Message = fmt.Sprintf("%d logged steps after warm-up, none with a skipped or NaN iteration", counted)
	return c, true
}

// lossFalls compares the mean loss of the first and last quarters of the
// judged steps that have a finite loss.
func lossFalls(judged []Step) result.Check {
	c := result.Check{Name: GateLossFalls}
	var losses []Step
	for _, s := range judged {
		if s.HasLoss && finite(s.Loss) {
			losses = append(losses, s)
		}
	}
	if len(losses) < 4 {
		c.Warn = true
		c.Message = fmt.Sprintf("too few steps to tell: %d finite losses after warm-up, 4 needed", len(losses))
		return c
	}
	q := len(losses) / 4
	mean := func(ss []Step) float64 {
		sum := 0.0
		for _, s := range ss {
			sum += s.Loss
		}
		return sum / float64(len(ss))
	}
	first, last := losses[:q], losses[len(losses)-q:]
	a, b := mean(first), mean(last)
	se := noiseSigma(losses) * math.Sqrt(2/float64(q))
	tol := FlatTolerance * math.Abs(a)
	fall, rise := math.Max(tol, FallSigmas*se), math.Max(tol, RiseSigmas*se)
	span := fmt.Sprintf("mean loss %.4g over iterations %d-%d (lines %d-%d), %.4g over iterations %d-%d (lines %d-%d)",
		a, first[0].Iter, first[q-1].Iter, first[0].Line, first[q-1].Line,
		b, last[0].Iter, last[q-1].Iter, last[0].Line, last[q-1].Line)
	switch {
	case !finite(se) || !finite(b-a):
		c.Warn = true
		c.Message = "cannot compare: " + span
	case a-b >= fall && a > b:
		c.OK = true
		c.Message = fmt.Sprintf("loss falls %.3g (%.1f%%; needed %.3g: 1%% or %.0f standard error of step-to-step noise): %s", a-b, 100*(a-b)/math.Abs(a), fall, FallSigmas, span)
	case b-a >= rise && b > a:
		c.Message = fmt.Sprintf("loss rises %.3g (%.1f%%; beyond %.3g: 1%% or %.0f standard errors of step-to-step noise): %s", b-a, 100*(b-a)/math.Abs(a), rise, RiseSigmas, span)
	default:
		c.Warn = true
		c.Message = fmt.Sprintf("loss flat: change %+.3g is within the noise (a fall must reach %.3g, a rise %.3g): a plateau, or the run is not learning: %s", b-a, fall, rise, span)
	}
	return c
}

// noiseSigma estimates the step-to-step standard deviation of the losses
// from the median absolute deviation of their successive differences.
func noiseSigma(ss []Step) float64 {
	d := make([]float64, 0, len(ss)-1)
	for i := 1; i < len(ss); i++ {
		d = append(d, ss[i].Loss-ss[i-1].Loss)
	}
	med := result.Median(d)
	dev := make([]float64, len(d))
	for i, x := range d {
		dev[i] = math.Abs(x - med)
	}
	return 1.4826 * result.Median(dev) / math.Sqrt2
}

// noOOM fails, as an error of the setup, on an out-of-memory line.
func noOOM(l Log) result.Check {
	c := result.Check{Name: GateNoOOM}
	if bad := failureNames(l, KindOOM); len(bad) > 0 {
		c.Error = true
		c.Message = "out of GPU memory (the model or batch does not fit: a setup to fix, not the hardware): " + names(bad)
		return c
	}
	c.OK = true
	c.Message = "no out-of-memory line"
	return c
}

// ranToEnd fails, as an error, on a crash or hang line or a log that
// stops before the iteration count it announced.
func ranToEnd(l Log) result.Check {
	c := result.Check{Name: GateRanToEnd}
	bad := failureNames(l, KindCrash, KindHang)
	last, of := Step{}, 0
	for _, s := range l.Steps {
		if s.Iter >= last.Iter {
			last = s
		}
		if s.Of > of {
			of = s.Of
		}
	}
	if of > 0 && last.Iter < of {
		bad = append(bad, fmt.Sprintf("the log ends at iteration %d of %d (line %d)", last.Iter, of, last.Line))
	}
	switch {
	case len(bad) > 0:
		c.Error = true
		c.Message = "the run did not finish: " + names(bad)
	case len(l.Steps) == 0:
		c.Error = true
		c.Message = "no training step logged"
	case of == 0:
		c.OK = true
		c.Message = fmt.Sprintf("no crash or hang line; the log announces no iteration count, last iteration %d (line %d)", last.Iter, last.Line)
	default:
		c.OK = true
		c.Message = fmt.Sprintf("reached iteration %d of %d (line %d), no crash or hang line", last.Iter, of, last.Line)
	}
	return c
}

// Judged returns the steps the gates judge (by iteration, less those the
// writer marked Warmup and the first warmup of the rest): the steps a
// plugin takes its throughput from.
func Judged(l Log, warmup int) []Step { return sortedJudged(l.Steps, warmup) }
