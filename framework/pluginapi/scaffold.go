package pluginapi

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// The scaffolding every plugin's Plan and Parse share, so that a plugin
// holds only what is its own: the same request is refused in the same
// words by every plugin, and a user reads one message per mistake.

// ParamError is a bad value of one parameter; its message names the
// parameter: "parameter NAME: WHY".
type ParamError struct {
	// Name is the parameter as the test declares it (Param.Name).
	Name string
	// Err says what is wrong with the value, quoting it.
	Err error
}

func (e *ParamError) Error() string { return "parameter " + e.Name + ": " + e.Err.Error() }

// Unwrap gives the cause.
func (e *ParamError) Unwrap() error { return e.Err }

// ParseParams is a plugin's parameter loop: it checks p against the
// parameters a test declares (SplitParams: "env.NAME" keys become env, an
// undeclared key is refused naming the declared ones) and hands every
// declared key given to set, in sorted order, so a plugin applies them
// deterministically. An error set returns names the parameter
// (ParamError, made here when set's does not already); it ends the loop.
func ParseParams(p map[string]string, declared []Param, set func(name, value string) error) (env map[string]string, err error) {
	env, keys, err := SplitParams(p, declared)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if err := set(k, p[k]); err != nil {
			if pe := (*ParamError)(nil); errors.As(err, &pe) {
				return env, err
			}
			return env, &ParamError{Name: k, Err: err}
		}
	}
	return env, nil
}

// UnknownTest is the error of a plan or parse request for a test plugin
// does not offer: "unknown test PLUGIN.TEST (known: PLUGIN.A, PLUGIN.B)",
// known being the plugin's tests (without the plugin's name) in the order
// it describes them.
func UnknownTest(plugin, test string, known []string) error {
	full := make([]string, len(known))
	for i, k := range known {
		full[i] = plugin + "." + k
	}
	return fmt.Errorf("unknown test %s.%s (known: %s)", plugin, test, strings.Join(full, ", "))
}

// CheckTopology refuses a topology without a node or a GPU per node, on
// which no test of a GPU can run: "TEST: topology NxG: nodes and GPUs per
// node must be >= 1". test is the full name, PLUGIN.TEST.
func CheckTopology(test string, t plan.Topology) error {
	if t.Nodes < 1 || t.GPUsPerNode < 1 {
		return TopologyError(test, t, "nodes and GPUs per node must be >= 1")
	}
	return nil
}

// TopologyError is a test's refusal of topology t, for a reason of its
// own (why): "TEST: topology NxG: WHY".
func TopologyError(test string, t plan.Topology, why string) error {
	return fmt.Errorf("%s: topology %s: %s", test, t, why)
}

// NoOutputsError is the error of a parse request that holds no output:
// nothing ran, or nothing was kept, so nothing can be judged (an ERROR,
// never a pass).
const NoOutputsError = "no outputs to parse"

// NoOutputs says whether req holds no output to parse; then parsed is the
// answer a plugin gives (its Error NoOutputsError), and ok is true.
//
//	if p, ok := pluginapi.NoOutputs(req); ok {
//		return p, nil
//	}
func NoOutputs(req ParseRequest) (parsed result.Parsed, ok bool) {
	if len(req.Outputs) > 0 {
		return result.Parsed{}, false
	}
	return result.Parsed{Error: NoOutputsError}, true
}
