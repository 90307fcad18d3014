// Package trainlog holds what a training run's log says, whichever program
// wrote it (gpuaccept's own trainbench.py, Megatron-LM, AMD's Primus,
// torchtitan, NeMo), and the gates every training test applies to it
// before any baseline: a NaN loss, skipped or NaN iterations, a loss that
// does not fall, a crash, an out-of-memory error. The train plugin reads
// its own workload's lines into a Log and the frameworks' logs through
// this package's readers, so one set of gates judges both.
//
// Read tells the writer by content and reads Megatron-LM's iteration
// lines (and Megatron-Bridge's and Megatron-DeepSpeed's, which are
// Megatron's), Primus's (Megatron's behind Primus's logger prefix, each
// figure as "this step/running mean"), torchtitan's step lines and NeMo's
// (NeMo 2's "Training epoch E, iteration N/M |" lines, NeMo 1's tqdm bar),
// and the lines that say a run went wrong: out of memory, NaN, a crash, a
// hang. Sniff routes a file to Read by its head. Gates judges a Log: loss
// finite, no skipped iterations, loss falls, no out-of-memory, ran to the
// end. README.md lists the formats, the gates and the real logs of
// testdata/field/train they are tested on.
package trainlog

// Step is one logged training iteration (or one logging interval: Megatron
// and Primus print every log-interval iterations, and the counts then
// cover the interval).
type Step struct {
	// Iter is the iteration number the log gives (1-based in Megatron,
	// torchtitan and trainbench.py).
	Iter int
	// Of is the total iterations the log announces for the run, 0 when it
	// names none ("iteration 10/ 100" gives 100).
	Of int
	// Line is the 1-based line of the log the step was read from.
	Line int
	// Host and GPU name where the step ran, when the log says (trainbench.py
	// prints both; the frameworks' logs print rank 0's view only).
	Host, GPU string
	// Warmup marks a step the writer declared warm-up (trainbench.py); the
	// gates and the judge skip warm-up steps.
	Warmup bool
	// Millis is the step's wall time, milliseconds ("elapsed time per
	// iteration (ms)"); 0 when the log gives none.
	Millis float64
	// TFLOPSPerGPU is the model TFLOP/s per GPU the writer computed
	// ("throughput per GPU (TFLOP/s/GPU)", torchtitan's "tflops"); 0 when
	// absent. Each writer's formula is its own: Formula says whose.
	TFLOPSPerGPU float64
	// TokensPerSecPerGPU is tokens per second per GPU ("tokens per GPU
	// (tokens/s/GPU)", torchtitan's "tps"); 0 when absent.
	TokensPerSecPerGPU float64
	// Loss is the training loss the line reports (the LM loss in
	// Megatron); meaningful when HasLoss. NaN and Inf are kept as such.
	Loss    float64
	HasLoss bool
	// LossDropped marks a Megatron or Primus line that prints no loss
	// although an earlier line did, or although it skipped no iteration:
	// Megatron prints a loss only when its interval average is above 0,
	// so a NaN loss vanishes from the line instead of reading "nan"
	// (epfLLM/Megatron-LLM issue 33, deepspeedai/Megatron-DeepSpeed PR 434).
	LossDropped bool
	// GradNorm is the gradient norm the line reports ("grad norm",
	// torchtitan's "grad_norm"); meaningful when HasGradNorm. NaN and Inf
	// are kept.
	GradNorm    float64
	HasGradNorm bool
	// Skipped and NaNIters are Megatron's "number of skipped iterations"
	// and "number of nan iterations" for the interval the line covers.
	Skipped, NaNIters int
	// Counted is true when the line gives those two counts (Megatron and
	// Primus do; torchtitan and NeMo print none, so their skipped
	// iterations cannot be judged).
	Counted bool
	// PeakMemGiB is the peak GPU memory the step used, GiB (2^30 bytes);
	// 0 when absent.
	PeakMemGiB float64
}

// Failure is a line of the log that says the run went wrong.
type Failure struct {
	// Kind is one of the Kind* constants.
	Kind string
	// Line is the 1-based line of the log; Text is that line, trimmed
	// (at most 200 bytes).
	Line int
	Text string
}

// Failure kinds. Each decides how the gate ends the test: an OOM and a
// crash are ERROR (the run did not measure: too large a model for the
// memory, a broken setup), a NaN is FAIL (the numbers the GPUs computed
// are wrong, with or without a baseline).
const (
	KindOOM   = "oom"   // "CUDA out of memory", "HIP out of memory", torch.OutOfMemoryError
	KindNaN   = "nan"   // a NaN or Inf loss or grad norm named by the writer
	KindCrash = "crash" // a Python traceback, a failed rank (torchrun's ChildFailedError), an NCCL/RCCL error, a segfault
	KindHang  = "hang"  // a watchdog timeout (NCCL's "Watchdog caught collective operation timeout")
)

// Log is a parsed training log.
type Log struct {
	// Writer is the program that wrote the log: "trainbench", "megatron",
	// "primus", "torchtitan" or "nemo".
	Writer string
	// Formula says how the writer computes TFLOPSPerGPU, for reports.
	Formula string
	// Steps in log order.
	Steps []Step
	// Failures in log order.
	Failures []Failure
	// Info holds facts the log states: "model", "world_size",
	// "seq_length", "global_batch_size", "micro_batch_size", "layers",
	// "gpu", versions (keys ending in "version").
	Info map[string]string
}
