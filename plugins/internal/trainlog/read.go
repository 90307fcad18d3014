package trainlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/lines"
)

// Writers Read tells apart, as Log.Writer names them.
const (
	WriterMegatron   = "megatron"
	WriterPrimus     = "primus"
	WriterTorchtitan = "torchtitan"
	WriterNeMo       = "nemo"
)

// maxLine is the longest line Read looks at, bytes; the rest of a longer
// line (a tqdm bar redrawn thousands of times with \r) is dropped.
const maxLine = 64 << 10

// maxFailures bounds the failures one log keeps: a 1024-rank job prints
// each error once per rank, and the gates need the first few.
const maxFailures = 64

// formulas say how each writer computes TFLOPSPerGPU.
var formulas = map[string]string{
	WriterMegatron:   "Megatron-LM num_floating_point_operations(args, batch) / (elapsed time per iteration x world size): model FLOPs, no recompute",
	WriterPrimus:     "Primus on Megatron-LM: Megatron's model FLOPs per iteration / (time x world size) since AMD-AGI/Primus PR 462; before it Primus's own count",
	WriterTorchtitan: "torchtitan num_flops_per_token (6 x parameters + attention) x tokens/s per GPU",
	WriterNeMo:       "NeMo FLOPsMeasurementCallback (TFLOPS_per_GPU), when the run enabled it",
}

var (
	// ansi matches the colour codes torchtitan's and Primus's loggers wrap
	// their lines in, with their ESC or without it: a log copied out of a
	// web console or a log store keeps "[32m" and loses the ESC
	// (AMD-AGI/Primus-SaFE keeps Primus lines so in its tests).
	ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\[(?:[0-9]{1,3}(?:;[0-9]{1,3})*)?m`)

	// Megatron-LM, Megatron-Bridge, Megatron-DeepSpeed and Primus:
	// " [2024-04-06 02:55:45] iteration        2/     100 | consumed samples: ..."
	megatronIter = regexp.MustCompile(`(?:^|[\s\]:>])iteration\s+(\d+)\s*/\s*(\d+)\s*\|(.*)$`)
	// Megatron's argument dump: "  seq_length ...................................... 4096".
	megatronArg = regexp.MustCompile(`^\s*([a-z][a-z0-9_]*) \.{3,} (\S.*?)\s*$`)
	// Primus's logger prefix: "[20251121 12:10:29][rank-31/32][INFO ] [--------trainer.py:2488] :".
	primusPrefix = regexp.MustCompile(`\[rank-\d+/\d+\]\s*\[(?:INFO|WARNING|ERROR|DEBUG)\s*\]`)

	// torchtitan: "step: 10  loss:  7.8  grad_norm: 1.2  memory: 30.5GiB(32.1%)  tps: 6,532  tflops: 380.2  mfu: 38.4%".
	titanStep   = regexp.MustCompile(`\bstep:\s*(\d+)\s+loss:\s*(\S+)(.*)$`)
	titanGrad   = regexp.MustCompile(`\bgrad_norm:\s*(\S+)`)
	titanMem    = regexp.MustCompile(`\bmemory:\s*([0-9.]+)GiB`)
	titanTPS    = regexp.MustCompile(`\b(?:tps|wps):\s*([0-9,]+(?:\.[0-9]+)?)`)
	titanTFLOPS = regexp.MustCompile(`\btflops:\s*([0-9,]+(?:\.[0-9]+)?)`)
	// torchtitan's run facts, each where its version prints it: "Training
	// starts at step 1, with local batch size 1, global batch size 8,
	// sequence length 8192, total steps 1000 (warmup 200)" (2024-25);
	// "Trainer is initialized with ... maximum context length 8192, total
	// steps 1000 (warmup 200)" (2026, torchtitan/trainer.py).
	titanFacts = map[string]*regexp.Regexp{
		"micro_batch_size":  regexp.MustCompile(`\blocal batch size (\d+)`),
		"global_batch_size": regexp.MustCompile(`\bglobal batch size (\d+)`),
		"seq_length":        regexp.MustCompile(`\b(?:sequence length|maximum context length) (\d+)`),
		"total_steps":       regexp.MustCompile(`\btotal steps (\d+)`),
	}
	// "Model llama3 8B size: 8,030,261,248 total parameters".
	titanModel = regexp.MustCompile(`Model (\S+ \S+) size: ([0-9,]+) total parameters`)
	// "CUDA capacity: NVIDIA H100 80GB HBM3 with 79.44GiB memory" (ROCm builds print the same).
	titanGPU = regexp.MustCompile(`(?:CUDA|ROCm|HIP|GPU) capacity: (.+?) with [0-9.]+GiB memory`)
	// torchtitan's world size: "Building 1-D device mesh with ['dp_shard'], [8]" or "world size: 8".
	worldSize = regexp.MustCompile(`\bworld[ _]size[:= ]+(\d+)`)

	// NeMo 2 (nemo.lightning's MegatronProgressBar): "Training epoch 0,
	// iteration 120/149 | lr: 3e-05 | ... | reduced_train_loss: 1.233 | train_step_timing in s: 0.03146".
	nemo2Step = regexp.MustCompile(`Training epoch (\d+), iteration (\d+)/(\d+) \|(.*)$`)
	// NeMo 1 (PyTorch Lightning's tqdm bar): "Epoch 0: 100%|###| 50/50
	// [01:23<00:00, ..., reduced_train_loss=10.40, global_step=49.0, ..., train_step_timing in s=1.23]".
	nemo1Step   = regexp.MustCompile(`\bglobal_step=([0-9.]+(?:[eE][+-]?[0-9]+)?)`)
	nemo1Loss   = regexp.MustCompile(`\breduced_train_loss=([^,\]\s]+)`)
	nemo1Time   = regexp.MustCompile(`\btrain_step_timing in s=([^,\]\s]+)`)
	nemo1TFLOPS = regexp.MustCompile(`\bTFLOPS_per_GPU=([^,\]\s]+)`)

	// versions: "NeMo version: 2.1.0", "torch version 2.5.1", "Primus version: 0.4".
	version = regexp.MustCompile(`(?i)\b(torch|pytorch|megatron(?:[- ]core|[- ]lm)?|transformer[_ ]engine|nemo|primus|torchtitan|rocm|cuda|hip|nccl|rccl)[ _]version\s*[:=]?\s*v?([0-9][0-9A-Za-z.+_-]*)`)
)

// failurePatterns are checked in order; the first that matches names the
// line's kind, so a line is one failure at most.
var failurePatterns = []struct {
	kind string
	re   *regexp.Regexp
}{
	{KindHang, regexp.MustCompile(`Watchdog caught collective operation timeout|watchdog (?:thread )?got stuck|Some NCCL operations have failed or timed out|ran for \d+ milliseconds before timing out`)},
	{KindOOM, regexp.MustCompile(`(?i)\b(?:CUDA|HIP) out of memory|OutOfMemoryError|CUDA error: out of memory|hipErrorOutOfMemory|HIP error: out of memory`)},
	{KindNaN, regexp.MustCompile(`found NaN in local grad norm|found (?:NaN|Inf) in (?:local )?(?:grad|loss)|Unexpected result nan|loss is (?:NaN|nan|inf)|Bad grad_norm detected \(grad_norm=(?:nan|inf)`)},
	{KindCrash, regexp.MustCompile(`Traceback \(most recent call last\):|ChildFailedError|\bexitcode\s*:\s*-?[1-9]|\(exitcode: -?[1-9]|\bNCCL error\b|\bRCCL error\b|\bnccl(?:Internal|System|Unhandled[A-Za-z]*|Invalid[A-Za-z]*|Remote)Error\b|Segmentation fault|\bSIGSEGV\b|\bSIGABRT\b|core dumped|CUDA error: |HIP error: |DistBackendError`)},
}

// warnLevel matches the record prefix of a warning: glog's "W0618
// 21:57:02.561000 pid file:line]" (PyTorch's C++ and dynamo logs), NeMo's
// "[NeMo W ", Python logging's " - WARNING - " and "WARNING:".
var warnLevel = regexp.MustCompile(`(?:^|[\]\s:])W\d{4} \d\d:\d\d:\d\d|\[NeMo W |\s-\s(?:\S+\s-\s)?WARNING\s-\s|(?:^|\s)WARNING:`)

// writerMarkers name a writer in a log that has no step line of it (a
// run that died before its first logged iteration).
// One of words, lower-cased, is in every line re matches: the cheap test
// goes first.
var writerMarkers = []struct {
	writer string
	words  []string
	re     *regexp.Regexp
}{
	{WriterPrimus, []string{"primus", "[rank-"}, regexp.MustCompile(`(?i)\bprimus\b|\[rank-\d+/\d+\]`)},
	{WriterTorchtitan, []string{"titan"}, regexp.MustCompile(`(?i)torchtitan|\[titan\]`)},
	{WriterNeMo, []string{"nemo", "bridge"}, regexp.MustCompile(`\bNeMo\b|\bnemo[._/]|megatron[._/]bridge`)},
	{WriterMegatron, []string{"megatron"}, regexp.MustCompile(`(?i)megatron`)},
}

// named reports whether the line s (lower: s lower-cased) names the
// writer of marker m.
func named(lower, s string, m int) bool {
	for _, w := range writerMarkers[m].words {
		if strings.Contains(lower, w) {
			return writerMarkers[m].re.MatchString(s)
		}
	}
	return false
}

// expected is the sentence Read's errors end with.
const expected = "expected a training log of Megatron-LM or Primus (\"iteration N/ M | ... | lm loss: ...\"), torchtitan (\"step: N  loss: ...\") or NeMo (\"reduced_train_loss\")"

// reader holds what Read has seen so far.
type reader struct {
	log      Log
	seen     map[int]bool // iterations kept, so each rank's copy of a line counts once
	format   string       // the writer of the first step line
	markers  map[string]bool
	primus   bool // a Primus prefix or field was seen
	hadLoss  bool // a Megatron line printed a loss
	failures int  // failure lines seen, kept or not
}

// Read parses a training log written by Megatron-LM (and Megatron-Bridge
// and Megatron-DeepSpeed, whose lines are Megatron's), AMD's Primus,
// torchtitan or NeMo into a Log. It tells the writer by content, strips ANSI colour
// codes, reads tqdm bars whose redraws are joined by carriage returns,
// and keeps one step per iteration number (each rank of a multi-rank run
// may print the same line). Steps are kept in log order with the line
// they came from; failure lines (out of memory, NaN, crash, hang) are
// kept with theirs, the first 64 of them.
//
// Errors: a read error; a log with no step line of a known writer and no
// failure line; a log with failure lines but nothing naming one of the
// writers (a traceback of another program). Each error says what was
// expected.
func Read(r io.Reader) (Log, error) {
	rd := reader{
		log:     Log{Info: map[string]string{}},
		seen:    map[int]bool{},
		markers: map[string]bool{},
	}
	n := 0
	if err := lines.Each(r, maxLine, func(line []byte, no int, _ bool) { n = no; rd.line(no, line) }); err != nil {
		return Log{}, fmt.Errorf("reading training log at line %d: %w", n+1, err)
	}
	return rd.finish(n)
}

// line reads one line of the log; n is its 1-based number.
func (rd *reader) line(n int, raw []byte) {
	if bytes.Contains(raw, []byte("m")) && bytes.IndexByte(raw, '[') >= 0 {
		raw = ansi.ReplaceAll(raw, nil)
	}
	s := string(raw)
	lower := strings.ToLower(s)
	for i, m := range writerMarkers {
		if !rd.markers[m.writer] && named(lower, s, i) {
			rd.markers[m.writer] = true
		}
	}
	if strings.Contains(s, "[rank-") && primusPrefix.MatchString(s) {
		rd.primus = true
	}
	rd.failure(n, s, lower)
	rd.info(s)
	// A tqdm bar redraws itself after a carriage return: each redraw is a
	// segment, and the first one holding a step is kept (add).
	for _, seg := range strings.Split(s, "\r") {
		switch {
		// NeMo 2's line holds "iteration N/M |" too: it goes first.
		case strings.Contains(seg, "Training epoch") && nemo2Step.MatchString(seg):
			rd.nemo2(n, seg)
		case strings.Contains(seg, "iteration") && megatronIter.MatchString(seg):
			rd.megatron(n, seg)
		case strings.Contains(seg, "global_step="):
			rd.nemo1(n, seg)
		case strings.Contains(seg, "step:") && titanStep.MatchString(seg):
			rd.titan(n, seg)
		}
	}
}

// failureWords prefilter failurePatterns: a line holding none of them
// (lower-cased) matches none, and most lines of a log hold none.
var failureWords = []string{"memory", "watchdog", "timed out", "timing out", "traceback", "childfailed", "exitcode", "nccl", "rccl", "segmentation", "sigsegv", "sigabrt", "core dumped", "error", "nan", "inf", "grad_norm"}

// failure records the line when it says the run went wrong.
func (rd *reader) failure(n int, s, lower string) {
	hit := false
	for _, w := range failureWords {
		if strings.Contains(lower, w) {
			hit = true
			break
		}
	}
	if !hit {
		return
	}
	for _, p := range failurePatterns {
		loc := p.re.FindStringIndex(s)
		if loc == nil {
			continue
		}
		if p.kind == KindCrash && warnLevel.MatchString(s[:loc[0]]) {
			// A traceback inside a warning record was handled: torch
			// dynamo's "WON'T CONVERT ... due to: Traceback" falls back
			// to eager and the run goes on
			// (testdata/field/train/nemo2-evo2-finetune-complete).
			return
		}
		rd.failures++
		if len(rd.log.Failures) < maxFailures {
			rd.log.Failures = append(rd.log.Failures, Failure{Kind: p.kind, Line: n, Text: trim(s)})
		}
		return
	}
}

// trim shortens a line to at most 200 bytes for Failure.Text, on a rune
// boundary.
func trim(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= 200 {
		return s
	}
	cut := 200
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}

// info records the facts a log states about the run: Megatron's
// argument dump, torchtitan's start line, versions.
func (rd *reader) info(s string) {
	set := func(k, v string) {
		if _, ok := rd.log.Info[k]; !ok && v != "" {
			rd.log.Info[k] = v
		}
	}
	if strings.Contains(s, " ...") {
		// Primus prints the same dump behind its logger prefix.
		body := s
		if i := strings.LastIndex(body, "] :"); i >= 0 {
			body = body[i+3:]
		}
		if m := megatronArg.FindStringSubmatch(body); m != nil {
			switch m[1] {
			case "world_size", "seq_length", "global_batch_size", "micro_batch_size":
				set(m[1], m[2])
			case "num_layers":
				set("layers", m[2])
			case "model_name", "model_type":
				set("model", m[2])
			}
		}
	}
	if !strings.Contains(s, " size") && !strings.Contains(s, "world") && !strings.Contains(s, "ersion") && !strings.Contains(s, "capacity") && !strings.Contains(s, "Train") {
		return
	}
	if strings.Contains(s, "Training starts") || strings.Contains(s, "Trainer is initialized") {
		for k, re := range titanFacts {
			if m := re.FindStringSubmatch(s); m != nil {
				set(k, m[1])
			}
		}
	}
	if m := titanModel.FindStringSubmatch(s); m != nil {
		set("model", m[1])
		set("parameters", strings.ReplaceAll(m[2], ",", ""))
	}
	if m := titanGPU.FindStringSubmatch(s); m != nil {
		set("gpu", strings.TrimSpace(m[1]))
	}
	if m := worldSize.FindStringSubmatch(s); m != nil {
		set("world_size", m[1])
	}
	if m := version.FindStringSubmatch(s); m != nil {
		set(strings.ToLower(strings.NewReplacer(" ", "_", "-", "_").Replace(m[1]))+"_version", m[2])
	}
}

// add keeps a step unless its iteration was kept already.
func (rd *reader) add(format string, st Step) {
	if rd.format == "" {
		rd.format = format
	}
	if format != rd.format || rd.seen[st.Iter] {
		return
	}
	rd.seen[st.Iter] = true
	rd.log.Steps = append(rd.log.Steps, st)
}

// num reads the first number of a field value: "1234.5", "2701.3/2712.7"
// (Primus: this step / running mean), "6,532", "1.2E+01", "nan", "NAN".
func num(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	if i := strings.IndexAny(v, "/ "); i >= 0 {
		v = v[:i]
	}
	v = strings.TrimSuffix(strings.ReplaceAll(v, ",", ""), "%")
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil
}

// megatron reads a Megatron-LM or Primus iteration line.
func (rd *reader) megatron(n int, s string) {
	m := megatronIter.FindStringSubmatch(s)
	it, err1 := strconv.Atoi(m[1])
	of, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil {
		return
	}
	st := Step{Iter: it, Of: of, Line: n}
	lossKey := ""
	for _, f := range strings.Split(m[3], "|") {
		k, v, ok := strings.Cut(f, ":")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		switch k {
		case "elapsed time per iteration (ms)":
			st.Millis, _ = num(v)
		case "elapsed time per iteration (s)": // Megatron-DeepSpeed
			if x, ok := num(v); ok {
				st.Millis = x * 1000
			}
		case "elapsed time per iteration": // Megatron-Bridge: "21392.5 ms"
			if x, ok := num(v); ok && strings.HasSuffix(strings.TrimSpace(v), "ms") {
				st.Millis = x
			}
		case "throughput per GPU (TFLOP/s/GPU)", "compute per GPU (TFLOP/s/GPU)", "TFLOPs":
			st.TFLOPSPerGPU, _ = num(v)
		case "tokens per GPU (tokens/s/GPU)":
			st.TokensPerSecPerGPU, _ = num(v)
		case "lm loss", "loss":
			// "lm loss" is pretraining's; SFT recipes print "loss".
			if lossKey == "lm loss" {
				continue
			}
			if x, ok := num(v); ok {
				st.Loss, st.HasLoss, lossKey = x, true, k
			}
		case "grad norm":
			st.GradNorm, st.HasGradNorm = num(v)
		case "number of skipped iterations":
			if x, ok := num(v); ok {
				st.Skipped, st.Counted = int(x), true
			}
		case "number of nan iterations":
			if x, ok := num(v); ok {
				st.NaNIters = int(x)
			}
		case "global batch size":
			if _, ok := rd.log.Info["global_batch_size"]; !ok {
				rd.log.Info["global_batch_size"] = strings.TrimSpace(v)
			}
		case "hip mem usage/free/total/usage_ratio", "rocm mem usage/free/total/usage_ratio", "mem usages":
			rd.primus = true
		}
		if k == "compute per GPU (TFLOP/s/GPU)" {
			rd.primus = true
		}
	}
	// Megatron prints a loss when its interval average is above 0, and
	// leaves out the iterations it skipped: no loss on a line that skipped
	// none (or after lines that had one) is a NaN.
	if st.HasLoss {
		rd.hadLoss = true
	} else if rd.hadLoss || st.Counted && st.Skipped == 0 {
		st.LossDropped = true
	}
	rd.add(WriterMegatron, st)
}

// titan reads a torchtitan step line; its "validate step: N  loss:"
// lines are evaluation, not training, and are left alone.
func (rd *reader) titan(n int, s string) {
	loc := titanStep.FindStringSubmatchIndex(s)
	if strings.HasSuffix(strings.TrimRight(s[:loc[0]], " "), "validate") {
		return
	}
	m := titanStep.FindStringSubmatch(s)
	it, err := strconv.Atoi(m[1])
	if err != nil {
		return
	}
	st := Step{Iter: it, Line: n}
	st.Loss, st.HasLoss = num(m[2])
	rest := m[3]
	if g := titanGrad.FindStringSubmatch(rest); g != nil {
		st.GradNorm, st.HasGradNorm = num(g[1])
	}
	if g := titanMem.FindStringSubmatch(rest); g != nil {
		st.PeakMemGiB, _ = num(g[1])
	}
	if g := titanTPS.FindStringSubmatch(rest); g != nil {
		st.TokensPerSecPerGPU, _ = num(g[1])
	}
	if g := titanTFLOPS.FindStringSubmatch(rest); g != nil {
		st.TFLOPSPerGPU, _ = num(g[1])
	}
	if total, err := strconv.Atoi(rd.log.Info["total_steps"]); err == nil {
		st.Of = total
	}
	rd.add(WriterTorchtitan, st)
}

// nemo2 reads a NeMo 2 progress line.
func (rd *reader) nemo2(n int, s string) {
	m := nemo2Step.FindStringSubmatch(s)
	it, err1 := strconv.Atoi(m[2])
	of, err2 := strconv.Atoi(m[3])
	if err1 != nil || err2 != nil {
		return
	}
	st := Step{Iter: it, Of: of, Line: n}
	for _, f := range strings.Split(m[4], "|") {
		k, v, ok := strings.Cut(f, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "reduced_train_loss":
			st.Loss, st.HasLoss = num(v)
		case "train_step_timing in s":
			if x, ok := num(v); ok {
				st.Millis = x * 1000
			}
		case "TFLOPS_per_GPU":
			st.TFLOPSPerGPU, _ = num(v)
		case "global_batch_size":
			if _, ok := rd.log.Info["global_batch_size"]; !ok {
				rd.log.Info["global_batch_size"] = strings.TrimSpace(v)
			}
		}
	}
	rd.add(WriterNeMo, st)
}

// nemo1 reads one redraw of NeMo 1's tqdm bar. The bar prints the same
// global_step on every redraw until the next step is logged, so the first
// redraw of a step is kept.
func (rd *reader) nemo1(n int, s string) {
	m := nemo1Step.FindStringSubmatch(s)
	if m == nil {
		return
	}
	g, ok := num(m[1])
	if !ok || g < 0 || g > math.MaxInt32 {
		return
	}
	st := Step{Iter: int(g), Line: n}
	if l := nemo1Loss.FindStringSubmatch(s); l != nil {
		st.Loss, st.HasLoss = num(l[1])
	}
	if t := nemo1Time.FindStringSubmatch(s); t != nil {
		if x, ok := num(t[1]); ok {
			st.Millis = x * 1000
		}
	}
	if t := nemo1TFLOPS.FindStringSubmatch(s); t != nil {
		st.TFLOPSPerGPU, _ = num(t[1])
	}
	rd.add(WriterNeMo, st)
}

// finish decides the writer and whether the log is one at all.
func (rd *reader) finish(lines int) (Log, error) {
	l := rd.log
	switch {
	case rd.format == WriterMegatron && (rd.primus || rd.markers[WriterPrimus]):
		l.Writer = WriterPrimus
	case rd.format != "":
		l.Writer = rd.format
	case len(l.Failures) > 0:
		for _, m := range writerMarkers {
			if rd.markers[m.writer] {
				l.Writer = m.writer
				break
			}
		}
		if l.Writer == "" {
			return Log{}, fmt.Errorf("no training step in %d lines and no line naming Megatron-LM, Primus, torchtitan or NeMo (%d failure lines, first at line %d: %q): %s",
				lines, rd.failures, l.Failures[0].Line, l.Failures[0].Text, expected)
		}
	default:
		if lines == 0 {
			return Log{}, errors.New("empty training log: " + expected)
		}
		return Log{}, fmt.Errorf("no training step and no failure in %d lines: %s", lines, expected)
	}
	l.Formula = formulas[l.Writer]
	if len(l.Info) == 0 {
		l.Info = nil
	}
	return l, nil
}

// logMarks are structures only the writers' logs hold (not prose that
// names them, as a README does): torchtitan's and NeMo's logger
// prefixes, Primus's rank prefix, Megatron's argument dump and start-up
// lines, a Megatron source path in a traceback.
var logMarks = regexp.MustCompile(`\[titan\]|\[NeMo [IWE] |\[rank-\d+/\d+\]\s*\[(?:INFO|WARNING|ERROR|DEBUG)|-{8,} arguments -{8,}|> initializing torch distributed|\[after megatron is initialized\]|/megatron/\S*\.py"?, line \d+`)

// Sniff reports whether head, the start of a file, looks like a training
// log Read can read: a step line of one of the writers, or a structure
// only their logs hold (Megatron's argument dump runs to hundreds of
// lines before the first iteration, so the head of a real log may hold no
// step). Prose that names a framework is not enough. It is cheap enough
// to run on every file given to gpuaccept check.
func Sniff(head []byte) bool {
	head = ansi.ReplaceAll(head, nil)
	for _, ln := range strings.Split(string(head), "\n") {
		for _, seg := range strings.Split(ln, "\r") {
			if isStep(seg) || logMarks.MatchString(seg) {
				return true
			}
		}
	}
	return false
}

// isStep reports whether s is a step line of one of the writers.
func isStep(s string) bool {
	return strings.Contains(s, "iteration") && megatronIter.MatchString(s) ||
		strings.Contains(s, "Training epoch") && nemo2Step.MatchString(s) ||
		strings.Contains(s, "global_step=") && nemo1Step.MatchString(s) ||
		strings.Contains(s, "step:") && titanStep.MatchString(s)
}

// sortedJudged returns the steps the gates judge: those not declared
// warm-up, by iteration, less the first warmup of them.
func sortedJudged(steps []Step, warmup int) []Step {
	var out []Step
	for _, s := range steps {
		if !s.Warmup {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Iter < out[j].Iter })
	if warmup < 0 {
		warmup = 0
	}
	if warmup >= len(out) {
		return nil
	}
	return out[warmup:]
}
