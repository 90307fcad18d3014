// Package train is the test plugin for training throughput (issue 32; seed
// 004's T2 and T3, "Qwen2.5-32B Model Training Performance (BF16)" on one
// GPU and on a node): train.gpu trains a Qwen2.5-shaped decoder on every
// GPU of each node at once, one process per GPU and no communication, so a
// slow GPU is named; train.node trains one data-parallel job over all of a
// node's GPUs (DistributedDataParallel: NCCL on CUDA, RCCL on ROCm), where
// kernels, memory, host and the node's fabric meet in one step; and
// train.command runs the site's own training command (Megatron-LM, AMD's
// Primus, torchtitan, NeMo) and reads its log. Every test applies the
// training gates of plugins/internal/trainlog before any baseline: a NaN
// loss, skipped iterations, a loss that does not fall, an out-of-memory
// error or a crash.
package train

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/plugins/internal/torchbench"
	"github.com/gpuaccept/gpuaccept/plugins/internal/trainlog"
	"github.com/gpuaccept/gpuaccept/workloads"
)

// PluginName is the plugin's name: its tests are "train.gpu", "train.node"
// and "train.command".
const PluginName = "train"

func init() { pluginapi.Register(PluginName, Plugin{}) }

// Version is the plugin's version, reported by Describe.
const Version = "0.1.0"

// Models are the Qwen2.5 shapes trainbench.py trains (its SHAPES).
var Models = []string{"qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b"}

// benchParams are train.gpu's and train.node's parameters, with defaults.
// The defaults are seed 004's model (Qwen2.5-32B), as many of its layers
// as fit.
var benchParams = []pluginapi.Param{
	{Name: "model", Default: "qwen2.5-32b", Description: "the Qwen2.5 configuration whose layer shapes are trained: " + strings.Join(Models, ", ")},
	{Name: "layers", Default: "auto", Description: "decoder layers: auto (as many of the model's as fit in the GPU's memory, said in the output) or a count"},
	{Name: "seq", Default: "2048", Unit: "tokens", Description: "sequence length"},
	{Name: "micro_batch", Default: "2", Unit: "sequences", Description: "sequences per GPU and step"},
	{Name: "steps", Default: "30", Unit: "steps", Description: "training steps, warm-up included"},
	{Name: "warmup", Default: "5", Unit: "steps", Description: "first steps not judged"},
	{Name: "lr", Default: "3e-4", Description: "AdamW learning rate (a huge one, 1e6, drives the loss to NaN: the loss gate's test)"},
	{Name: "python", Default: "python3", Description: "Python interpreter with PyTorch (a CUDA or ROCm build) on the nodes"},
	{Name: "script", Description: "path of trainbench.py on the nodes; empty: the script built into gpuaccept is passed inline (python -c)"},
	{Name: "env.NAME", Description: "environment variable NAME for the script"},
}

// commandParams are train.command's parameters.
var commandParams = []pluginapi.Param{
	{Name: "command", Description: "the site's training command, run by bash -c once per node (e.g. Primus's examples/run_pretrain.sh, torchrun ... train.py); required"},
	{Name: "log", Description: "a file, relative to the step's working folder, the command writes its log to (collected and read besides its output); empty: the output alone"},
	{Name: "warmup", Default: "0", Unit: "logged steps", Description: "first logged steps (lines: one per log interval) whose loss and throughput are not judged; the throughput judged is the median of the rest, which one slow first step does not move"},
	{Name: "env.NAME", Description: "environment variable NAME for the command"},
}

// metrics are what every training test reports, per GPU (train.command:
// per GPU as its log states it, rank 0's view).
var metrics = []pluginapi.MetricInfo{
	{Name: "tokens_per_s", Unit: "tokens/s", Description: "tokens trained per second per GPU, median of the judged steps",
		Labels: []string{"model", "layers", "dtype", "gpu", "host"}, InstanceLabels: []string{"gpu", "host"},
		KeyLabels: []string{"model", "layers"}, Better: result.BetterHigher, Plot: result.PlotLabels, Record: true},
	{Name: "tflops", Unit: "TFLOPS", Description: "model TFLOP/s per GPU, median of the judged steps: (6*N + 12*L*H*S) x tokens/s / 1e12 (PaLM appendix B) for train.gpu and train.node, the framework's own for train.command; against the datasheet bf16 figure it is the MFU",
		Labels: []string{"model", "layers", "dtype", "gpu", "host"}, InstanceLabels: []string{"gpu", "host"},
		KeyLabels: []string{"model", "layers"}, Better: result.BetterHigher, Plot: result.PlotLabels, Record: true},
}

// stepMetric is each step's tokens/s per GPU, warm-up included: drawn in
// report.html over the steps (result.PlotSteps), so a reader sees how the
// judged median came about; no direction, so nothing records, judges or
// localises by it unless a baseline names it.
var stepMetric = pluginapi.MetricInfo{Name: "step_tokens_per_s", Unit: "tokens/s",
	Description: "tokens per second per GPU at each training step, warm-up included (drawn, not judged)",
	Labels:      []string{"step", "gpu", "host"}, InstanceLabels: []string{"gpu", "host"}, Plot: result.PlotSteps}

// Plugin implements pluginapi.Plugin for the training tests.
type Plugin struct{}

// Describe implements pluginapi.Plugin.
func (Plugin) Describe(context.Context) (pluginapi.Description, error) {
	return pluginapi.Description{Name: PluginName, Version: Version, Tests: []pluginapi.TestInfo{
		{Name: "gpu", Description: "trainbench.py: a Qwen2.5-shaped decoder (bf16, AdamW, random weights) trained on every GPU of each node at once, one process per GPU: tokens/s and model TFLOP/s per GPU; gates: finite and falling loss, no OOM, no crash", Params: benchParams, Metrics: append(metrics[:len(metrics):len(metrics)], stepMetric)},
		{Name: "node", Description: "trainbench.py as one data-parallel job (DistributedDataParallel) over all GPUs of each node: tokens/s and model TFLOP/s per GPU; the same gates", Params: benchParams, Metrics: append(metrics[:len(metrics):len(metrics)], stepMetric)},
		{Name: "command", Description: "the site's own training command (Megatron-LM, Primus, torchtitan, NeMo), its log read: TFLOP/s and tokens/s per GPU, the same gates", Params: commandParams, Metrics: metrics},
	}}, nil
}

type settings struct {
	args    []string // trainbench.py's options
	python  string
	script  string
	command string
	logFile string
	warmup  int
	steps   int // the script's --steps
	env     map[string]string
}

func parseParams(test string, p map[string]string) (settings, error) {
	s := settings{python: "python3", warmup: 5, steps: 30}
	if test == "command" {
		s.warmup = 0
	}
	declared := benchParams
	if test == "command" {
		declared = commandParams
	}
	env, err := pluginapi.ParseParams(p, declared, func(k, v string) error {
		switch k {
		case "model":
			for _, m := range Models {
				if v == m {
					s.args = append(s.args, "--model", v)
					return nil
				}
			}
			return fmt.Errorf("%q is not one of %s", v, strings.Join(Models, ", "))
		case "layers":
			if v != "auto" {
				if n, err := strconv.Atoi(v); err != nil || n < 1 {
					return fmt.Errorf("%q is not auto or a positive layer count", v)
				}
			}
			s.args = append(s.args, "--layers", v)
		case "seq", "micro_batch", "steps":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("%q is not a positive integer", v)
			}
			if k == "steps" {
				s.steps = n
			}
			s.args = append(s.args, "--"+strings.ReplaceAll(k, "_", "-"), v)
		case "warmup":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("%q is not a count of steps", v)
			}
			s.warmup = n
			if test != "command" {
				s.args = append(s.args, "--warmup", v)
			}
		case "lr":
			if f, err := strconv.ParseFloat(v, 64); err != nil || !(f > 0) {
				return fmt.Errorf("%q is not a positive learning rate", v)
			}
			s.args = append(s.args, "--lr", v)
		case "python":
			s.python = v
		case "script":
			s.script = v
		case "command":
			if strings.TrimSpace(v) == "" {
				return fmt.Errorf("empty")
			}
			s.command = v
		case "log":
			if v != "" && (filepath.IsAbs(v) || !filepath.IsLocal(v)) {
				return fmt.Errorf("%q must be a path inside the step's working folder (relative, no ..)", v)
			}
			s.logFile = v
		}
		return nil
	})
	s.env = env
	if err == nil && test != "command" && s.steps <= s.warmup {
		err = &pluginapi.ParamError{Name: "steps", Err: fmt.Errorf("%d steps leave none after the %d of warm-up: give more steps than warmup", s.steps, s.warmup)}
	}
	if err == nil && test == "command" && s.command == "" {
		err = &pluginapi.ParamError{Name: "command", Err: fmt.Errorf("required: the training command to run")}
	}
	return s, err
}

// Plan implements pluginapi.Plugin: one step, one process per node (the
// script, or the site's command, starts the node's GPU processes itself).
func (Plugin) Plan(_ context.Context, req pluginapi.PlanRequest) (plan.Plan, error) {
	full := PluginName + "." + req.Test
	var mode string
	switch req.Test {
	case "gpu":
		mode = "single"
	case "node":
		mode = "ddp"
	case "command":
	default:
		return plan.Plan{}, pluginapi.UnknownTest(PluginName, req.Test, []string{"gpu", "node", "command"})
	}
	s, err := parseParams(req.Test, req.Params)
	if err != nil {
		return plan.Plan{}, fmt.Errorf("%s: %w", full, err)
	}
	t := req.Topology
	if err := pluginapi.CheckTopology(full, t); err != nil {
		return plan.Plan{}, err
	}
	var env map[string]string
	if len(s.env) > 0 {
		env = s.env
	}
	if req.Test == "command" {
		st := plan.Step{Name: "command", Argv: []string{"bash", "-c", s.command}, Env: env, Procs: t.Nodes, ProcsPerNode: 1}
		if s.logFile != "" {
			st.Files = []string{s.logFile}
		}
		return plan.Plan{Steps: []plan.Step{st}}, nil
	}
	argv := []string{s.python}
	if s.script != "" {
		argv = append(argv, s.script)
	} else {
		argv = append(argv, "-c", workloads.TrainBench)
	}
	argv = append(argv, "--mode", mode, "--gpus", "all")
	argv = append(argv, s.args...)
	return plan.Plan{Steps: []plan.Step{{Name: mode, Argv: argv, Env: env, Procs: t.Nodes, ProcsPerNode: 1}}}, nil
}

// Parse implements pluginapi.Plugin.
func (Plugin) Parse(_ context.Context, req pluginapi.ParseRequest) (result.Parsed, error) {
	if p, ok := pluginapi.NoOutputs(req); ok {
		return p, nil
	}
	s, err := parseParams(req.Test, req.Params)
	if err != nil {
		s, _ = parseParams(req.Test, nil)
	}
	if req.Test == "command" {
		return parseCommand(req, s), nil
	}
	var p result.Parsed
	var errs []string
	var b bench
	for _, o := range req.Outputs {
		if o.LaunchError != "" {
			errs = append(errs, fmt.Sprintf("step %s: %s", o.Step, o.LaunchError))
		}
		for _, path := range torchbench.Paths(o) {
			f, err := os.Open(path)
			if err != nil {
				errs = append(errs, fmt.Sprintf("open %s: %v", filepath.Base(path), err))
				continue
			}
			if err := readBench(f, filepath.Base(path), &b); err != nil {
				errs = append(errs, err.Error())
			}
			f.Close()
		}
		if o.ExitCode != 0 && len(b.logs) == 0 && len(b.setup) == 0 {
			errs = append(errs, fmt.Sprintf("step %s exited with status %d and printed no result", o.Step, o.ExitCode))
		} else if o.ExitCode != 0 {
			p.Checks = append(p.Checks, exitCheck(o))
		}
	}
	judgeBench(&p, req.Topology, b)
	if len(b.bad) > 0 {
		p.Checks = append(p.Checks, result.Check{Name: "lines read", OK: false, Warn: true,
			Message: fmt.Sprintf("%d line(s) of trainbench.py's output could not be read and were skipped: %s", len(b.bad), strings.Join(b.bad[:min(len(b.bad), 3)], "; "))})
	}
	if len(b.setup) > 0 {
		errs = append(errs, "the workload could not run (setup, not hardware): "+strings.Join(b.setup, "; "))
	}
	if len(p.Metrics) == 0 && len(errs) == 0 && !failedCheck(p) {
		errs = append(errs, "no judged training step in the output")
	}
	if len(errs) > 0 {
		p.Error = strings.Join(errs, "; ")
	}
	return p, nil
}

// judgeBench turns trainbench.py's logs into metrics, per GPU, and the
// gates: each GPU's log through trainlog.Gates, and every GPU of the
// topology present on every node.
func judgeBench(p *result.Parsed, topo plan.Topology, b bench) {
	hosts := map[string]int{}
	for _, k := range b.keys() {
		hosts[k.host]++
		lg := b.logs[k]
		c := b.configs[k]
		lg.Failures = append(lg.Failures, b.trace...)
		for _, g := range trainlog.Gates(*lg, 0) {
			g.Name += " " + k.String()
			g.Host = k.host
			p.Checks = append(p.Checks, g)
		}
		if c == nil {
			p.Checks = append(p.Checks, result.Check{Name: "train config " + k.String(), OK: false, Error: true, Host: k.host,
				Message: k.String() + ": no train_config line: the output was cut or the process died before training"})
			continue
		}
		for _, st := range lg.Steps {
			if st.TokensPerSecPerGPU > 0 {
				sl := map[string]string{"step": strconv.Itoa(st.Iter), "gpu": strconv.Itoa(k.gpu)}
				if k.host != "" {
					sl["host"] = k.host
				}
				p.Metrics = append(p.Metrics, result.Metric{Name: stepMetric.Name, Value: st.TokensPerSecPerGPU, Unit: stepMetric.Unit, Labels: sl})
			}
		}
		var tps, tfl []float64
		for _, st := range trainlog.Judged(*lg, 0) {
			if st.TokensPerSecPerGPU > 0 {
				tps = append(tps, st.TokensPerSecPerGPU)
				tfl = append(tfl, st.TFLOPSPerGPU)
			}
		}
		if len(tps) == 0 {
			continue
		}
		labels := map[string]string{"model": c.Model, "layers": strconv.Itoa(c.Layers), "dtype": "bf16", "gpu": strconv.Itoa(k.gpu)}
		if k.host != "" {
			labels["host"] = k.host
		}
		p.Metrics = append(p.Metrics,
			result.Metric{Name: "tokens_per_s", Value: result.Median(tps), Unit: "tokens/s", Labels: labels},
			result.Metric{Name: "tflops", Value: result.Median(tfl), Unit: "TFLOPS", Labels: maps.Clone(labels)})
		p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Info, Message: fmt.Sprintf(
			"%s: %s, %d of %d layers (%s), seq %d x micro-batch %d, %s, world size %d; %d judged of %d steps; peak memory %.1f GiB; FLOP per token %.4g: %s",
			k, c.Model, c.Layers, c.LayersFull, c.LayersWhy, c.Seq, c.MicroBatch, c.Mode, c.WorldSize, len(tps), c.stepsSeen, c.peakMemGiB, c.FlopsPerTok, c.Formula)})
		if p.Info == nil {
			p.Info = map[string]string{}
		}
		if c.Name != "" {
			p.Info["gpu"] = c.Name
		}
		p.Info["torchversion"] = c.Torch
		if c.Layers < c.LayersFull {
			p.Info["layers"] = fmt.Sprintf("%d of %d", c.Layers, c.LayersFull)
		}
	}
	if len(hosts) > 0 {
		c := result.Check{Name: "node count", OK: len(hosts) >= topo.Nodes}
		if !c.OK {
			c.Message = fmt.Sprintf("%d node(s) reported, the topology has %d", len(hosts), topo.Nodes)
		}
		p.Checks = append(p.Checks, c)
	}
	for h, n := range hosts {
		if n < topo.GPUsPerNode {
			name := hostOr(h)
			p.Checks = append(p.Checks, result.Check{Name: "GPUs trained " + name, OK: false, Host: h,
				Message: fmt.Sprintf("%s: %d GPU(s) trained, the topology has %d per node", name, n, topo.GPUsPerNode)})
		}
	}
	if len(hosts) > 0 {
		hostsList := make([]string, 0, len(hosts))
		for h := range hosts {
			if h != "" {
				hostsList = append(hostsList, h)
			}
		}
		if len(hostsList) > 0 {
			if p.Info == nil {
				p.Info = map[string]string{}
			}
			p.Info["hosts"] = strings.Join(slices.Sorted(slices.Values(hostsList)), ",")
		}
	}
}

// exitCheck is the error a step that exited non-zero leaves, whatever
// its log shows: a run killed without a word (the OOM killer, a crash in
// native code) printed good steps before it died, and those are no
// sign-off.
func exitCheck(o plan.Output) result.Check {
	return result.Check{Name: "exit status " + o.Step, OK: false, Error: true, Host: o.Host,
		Message: fmt.Sprintf("step %s exited with status %d: the run did not end cleanly, whatever its log shows", o.Step, o.ExitCode)}
}

func failedCheck(p result.Parsed) bool {
	for _, c := range p.Checks {
		if !c.OK && !c.Warn {
			return true
		}
	}
	return false
}
