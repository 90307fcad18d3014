// Package torchbench runs and reads workloads/torchbench.py, the PyTorch
// script of this project that measures GEMM TFLOPS, HBM bandwidth, pinned
// host↔device and GPU↔GPU bandwidth on a node and prints one JSON object
// per line. The gemm, hbm and hostlink plugins share it: Step plans the
// script, Parse turns its lines into typed records, and Nodes groups them
// by node for the plugins' completeness gates.
package torchbench

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/workloads"
)

// Params are the parameters every torchbench-driven test takes.
var Params = []pluginapi.Param{
	{Name: "python", Default: "python3", Description: "Python interpreter with PyTorch (a CUDA or ROCm build) on the nodes"},
	{Name: "script", Description: "path of torchbench.py on the nodes; empty: the script built into gpuaccept is passed inline (python -c)"},
}

// StepOptions say what one run of the script measures and where.
type StepOptions struct {
	// Name is the step's name (plan.ValidName).
	Name string
	// Python is the interpreter; empty: "python3".
	Python string
	// Script is the script's path on the nodes; empty: the embedded
	// source (workloads.TorchBench) goes inline as python -c's argument.
	Script string
	// Tests are the script's --tests: "gemm", "hbm", "h2d", "d2h", "p2p".
	Tests []string
	// Args are further script options ("--dtypes", "bf16", "--concurrent").
	Args []string
	// Env is the ranks' environment (the tests' env.NAME parameters).
	Env map[string]string
	// Nodes is the topology's node count (>= 1): one copy of the script
	// runs on each node and measures all of its GPUs.
	Nodes int
}

// Step returns the plan step that runs the script once per node on all
// its GPUs: argv [python, -c, SOURCE, --tests T, --gpus all, Args...]
// (or [python, SCRIPT, ...] with Script). Procs is the node count, one per
// node, and MPI false: the script needs no MPI, a rank starter only
// places it.
func Step(o StepOptions) plan.Step {
	py := o.Python
	if py == "" {
		py = "python3"
	}
	argv := []string{py}
	if o.Script != "" {
		argv = append(argv, o.Script)
	} else {
		argv = append(argv, "-c", workloads.TorchBench)
	}
	argv = append(argv, "--tests", strings.Join(o.Tests, ","), "--gpus", "all")
	argv = append(argv, o.Args...)
	nodes := max(o.Nodes, 1)
	var env map[string]string
	if len(o.Env) > 0 {
		env = o.Env
	}
	return plan.Step{Name: o.Name, Argv: argv, Env: env, Procs: nodes, ProcsPerNode: 1}
}

// Settings are the values of Params, and of the script's count flags a
// plugin declares (countFlags).
type Settings struct {
	Python, Script string
	// Counts are the count flags given, flag name -> value (a positive
	// integer): "size" (matmul n, elements), "bytes" (a buffer's size),
	// "iters", "repeats".
	Counts map[string]string
}

// countFlags are torchbench.py's flags that take a positive count, in the
// order CountArgs passes them.
var countFlags = []string{"size", "bytes", "iters", "repeats"}

// CountArgs are the script's flags for the Counts given: --size N,
// --bytes N, --iters N, --repeats N, in that order.
func (s Settings) CountArgs() []string {
	var out []string
	for _, f := range countFlags {
		if v, ok := s.Counts[f]; ok {
			out = append(out, "--"+f, v)
		}
	}
	return out
}

// Setting reads key (one of Params, or a count flag: size, bytes, iters,
// repeats, which a plugin declares among its own parameters) into s;
// false when key is neither. The error names an empty python or a count
// that is not a positive integer.
func (s *Settings) Setting(key, value string) (bool, error) {
	switch key {
	case "python":
		if value == "" {
			return true, &pluginapi.ParamError{Name: key, Err: errors.New("empty")}
		}
		s.Python = value
	case "script":
		s.Script = value
	case "size", "bytes", "iters", "repeats":
		least := int64(1)
		if key == "bytes" {
			least = 4 // one float32: hbm's arrays hold bytes/4 elements
		}
		if n, err := strconv.ParseInt(value, 10, 64); err != nil || n < least {
			return true, &pluginapi.ParamError{Name: key, Err: fmt.Errorf("%q is not a positive integer", value)}
		}
		if s.Counts == nil {
			s.Counts = map[string]string{}
		}
		s.Counts[key] = value
	default:
		return false, nil
	}
	return true, nil
}

// Paths are the files an output holds to be read, in order: its Log when
// set, then each of its Files by name. gpuaccept check hands a lone
// X.json as a Files entry of an output with no Log (the -J companion of a
// log that was not given), so a plugin that read Log only would read
// nothing.
func Paths(o plan.Output) []string {
	var out []string
	if o.Log != "" {
		out = append(out, o.Log)
	}
	names := make([]string, 0, len(o.Files))
	for n := range o.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if p := o.Files[n]; p != "" && p != o.Log {
			out = append(out, p)
		}
	}
	return out
}
