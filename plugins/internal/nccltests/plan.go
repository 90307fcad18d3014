package nccltests

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// SweepParams are the parameters every nccl-tests family plugin takes,
// as given (checked by Set): minbytes, maxbytes and stepfactor (-b, -e,
// -f), iters, warmup and check (-n, -w, -c), datatype and op (-d, -o),
// mode (Sweep.Mode) and extra. Empty fields other than the sizes leave
// the tool's default.
type SweepParams struct {
	MinBytes, MaxBytes, StepFactor, Iters, Warmup, Check, Type, Op, Mode string
	// Extra are further arguments, from the space-separated "extra".
	Extra []string
}

// Set applies the parameter k = v when it is one of SweepParams'; handled
// is false for any other key, which the plugin applies itself. Errors name
// the parameter: a size result.ParseBytes does not read, a count that is
// not a non-negative integer, a mode other than single, mpi or empty.
func (p *SweepParams) Set(k, v string) (handled bool, err error) {
	switch k {
	case "minbytes", "maxbytes":
		if _, err := result.ParseBytes(v); err != nil {
			return true, &pluginapi.ParamError{Name: k, Err: err}
		}
		if k == "minbytes" {
			p.MinBytes = v
		} else {
			p.MaxBytes = v
		}
	case "stepfactor", "iters", "warmup", "check":
		if err := pluginapi.CountParam(k, v); err != nil {
			return true, err
		}
		*map[string]*string{"stepfactor": &p.StepFactor, "iters": &p.Iters, "warmup": &p.Warmup, "check": &p.Check}[k] = v
	case "datatype":
		p.Type = v
	case "op":
		p.Op = v
	case "mode":
		if v != "" && v != "single" && v != "mpi" {
			return true, &pluginapi.ParamError{Name: k, Err: fmt.Errorf("%q is not single or mpi", v)}
		}
		p.Mode = v
	case "extra":
		p.Extra = strings.Fields(v)
	default:
		return false, nil
	}
	return true, nil
}

// Sweep returns the sweep of program bin with these parameters and the
// ranks' environment env; flags are the plugin's own "-flag value" pairs,
// placed after the shared -c, -n, -w, -d and -o.
func (p SweepParams) Sweep(bin string, env map[string]string, flags ...[2]string) Sweep {
	shared := [][2]string{{"-c", p.Check}, {"-n", p.Iters}, {"-w", p.Warmup}, {"-d", p.Type}, {"-o", p.Op}}
	return Sweep{Bin: bin, Mode: p.Mode, MinBytes: p.MinBytes, MaxBytes: p.MaxBytes, StepFactor: p.StepFactor,
		Flags: append(shared, flags...), Extra: p.Extra, Env: env}
}

// Sweep is the command line every nccl-tests family benchmark (nccl-tests,
// rccl-tests) shares: a program, a message-size sweep, the per-process GPU
// count that follows from the mode, and optional flags.
type Sweep struct {
	// Bin is the program to run (all_reduce_perf, with its folder).
	Bin string
	// Mode is "single" (one process per node driving its GPUs with -g G),
	// "mpi" (one MPI rank per GPU, -g 1), or "" for single on one node and
	// mpi across nodes.
	Mode string
	// MinBytes, MaxBytes and StepFactor are -b, -e and -f as given ("8",
	// "4G", "2").
	MinBytes, MaxBytes, StepFactor string
	// Flags are further "-flag value" pairs in order; a pair with an empty
	// value is left out (the tool's default applies).
	Flags [][2]string
	// Extra are arguments appended as they are.
	Extra []string
	// Env is the ranks' environment; nil or empty adds none.
	Env map[string]string
}

// Step returns the plan step named name that runs the sweep on topology t.
// Errors: a topology without nodes or GPUs.
func (s Sweep) Step(name string, t plan.Topology) (plan.Step, error) {
	if t.Nodes < 1 || t.GPUsPerNode < 1 {
		return plan.Step{}, fmt.Errorf("topology %s: nodes and GPUs per node must be >= 1", t)
	}
	if lo, err1 := result.ParseBytes(s.MinBytes); err1 == nil {
		if hi, err2 := result.ParseBytes(s.MaxBytes); err2 == nil && lo > hi {
			// nccl-tests would measure nothing and print no row.
			return plan.Step{}, fmt.Errorf("parameters minbytes %s and maxbytes %s: the smallest size is above the largest", s.MinBytes, s.MaxBytes)
		}
	}
	mode := s.Mode
	if mode == "" {
		mode = "single"
		if t.Nodes > 1 {
			mode = "mpi"
		}
	}
	step := plan.Step{Name: name}
	if len(s.Env) > 0 {
		step.Env = s.Env
	}
	gpusPerProc := t.GPUsPerNode
	if mode == "mpi" {
		step.Procs, step.ProcsPerNode, step.MPI, gpusPerProc = t.Ranks(), t.GPUsPerNode, true, 1
	} else {
		step.Procs, step.ProcsPerNode, step.MPI = t.Nodes, 1, t.Nodes > 1
	}
	step.Argv = []string{s.Bin, "-b", s.MinBytes, "-e", s.MaxBytes, "-f", s.StepFactor, "-g", strconv.Itoa(gpusPerProc)}
	for _, f := range s.Flags {
		if f[1] != "" {
			step.Argv = append(step.Argv, f[0], f[1])
		}
	}
	step.Argv = append(step.Argv, s.Extra...)
	return step, nil
}

// Expected turns the -e and -f parameters a run was planned with into the
// largest size (bytes) and step factor the output must reach; zero for what
// does not parse, which checks nothing.
func Expected(maxBytes, stepFactor string) (maxb, factor int64) {
	if v, err := result.ParseBytes(maxBytes); err == nil {
		maxb = v
	}
	factor, _ = strconv.ParseInt(stepFactor, 10, 64)
	return maxb, factor
}
