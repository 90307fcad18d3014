package pluginapi

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// ParseParams hands the declared keys to set in sorted order and makes
// every error name its parameter, once.
func TestParseParams(t *testing.T) {
	declared := []Param{{Name: "bindir"}, {Name: "iters"}, {Name: "json"}}
	set := func(seen *[]string) func(k, v string) error {
		return func(k, v string) error {
			*seen = append(*seen, k)
			switch k {
			case "iters":
				return CountParam(k, v) // a ParamError already
			case "json":
				_, err := BoolParam(k, v)
				return err
			case "bindir":
				if strings.Contains(v, " ") {
					return fmt.Errorf("%q holds a space", v)
				}
			}
			return nil
		}
	}
	for _, c := range []struct {
		name    string
		in      map[string]string
		seen    []string
		env     map[string]string
		wantErr string
	}{
		{name: "sorted", in: map[string]string{"json": "true", "bindir": "/b", "iters": "3", "env.NCCL_DEBUG": "INFO"},
			seen: []string{"bindir", "iters", "json"}, env: map[string]string{"NCCL_DEBUG": "INFO"}},
		{name: "bad value named once", in: map[string]string{"iters": "-1"}, seen: []string{"iters"},
			wantErr: `parameter iters: "-1" is not a non-negative integer`},
		{name: "bare error named", in: map[string]string{"bindir": "a b", "json": "true"}, seen: []string{"bindir"},
			wantErr: `parameter bindir: "a b" holds a space`},
		{name: "undeclared", in: map[string]string{"bindr": "/b"},
			wantErr: `unknown parameter "bindr" (known: bindir, iters, json)`},
		{name: "bad env name", in: map[string]string{"env.1X": "y"}, wantErr: `parameter "env.1X": not a variable name`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var seen []string
			env, err := ParseParams(c.in, declared, set(&seen))
			assert.DeepEqual(t, seen, c.seen)
			if c.wantErr != "" {
				assert.Assert(t, err != nil)
				assert.Assert(t, strings.HasPrefix(err.Error(), c.wantErr), "the parameter once, first: %s", err)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, env, c.env)
		})
	}
	var pe *ParamError
	_, err := ParseParams(map[string]string{"bindir": "a b"}, declared, set(new([]string)))
	assert.Assert(t, errors.As(err, &pe) && pe.Name == "bindir", "the parameter is named in the error's type too")
}

// The words every plugin refuses a request in.
func TestScaffoldMessages(t *testing.T) {
	topo := func(n, g int) plan.Topology { return plan.Topology{Scope: plan.Scope{Nodes: n, GPUsPerNode: g}} }
	for _, c := range []struct {
		got  error
		want string
	}{
		{UnknownTest("hbm", "copy", []string{"bandwidth"}), "unknown test hbm.copy (known: hbm.bandwidth)"},
		{UnknownTest("hostlink", "nvlink", []string{"pcie", "p2p"}), "unknown test hostlink.nvlink (known: hostlink.pcie, hostlink.p2p)"},
		{CheckTopology("gemm.matmul", topo(0, 8)), "gemm.matmul: topology 0x8: nodes and GPUs per node must be >= 1"},
		{CheckTopology("gemm.matmul", topo(2, 0)), "gemm.matmul: topology 2x0: nodes and GPUs per node must be >= 1"},
		{TopologyError("mori.ep_internode", topo(1, 8), "needs two nodes or more"), "mori.ep_internode: topology 1x8: needs two nodes or more"},
	} {
		assert.Error(t, c.got, c.want)
	}
	assert.NilError(t, CheckTopology("gemm.matmul", topo(1, 1)))

	p, ok := NoOutputs(ParseRequest{Test: "all_reduce"})
	assert.Assert(t, ok)
	assert.Equal(t, p.Error, "no outputs to parse")
	_, ok = NoOutputs(ParseRequest{Test: "all_reduce", Outputs: []plan.Output{{Step: "all_reduce"}}})
	assert.Assert(t, !ok, "a request with an output is parsed")
}

// Register refuses a name twice or an empty one; Builtins is sorted.
func TestRegister(t *testing.T) {
	before := Builtins()
	type fake struct{ Plugin }
	Register("zz-test-b", fake{})
	Register("zz-test-a", fake{})
	t.Cleanup(func() { Unregister("zz-test-a"); Unregister("zz-test-b") })
	got := Builtins()
	assert.DeepEqual(t, got, append(append([]string(nil), before...), "zz-test-a", "zz-test-b"))
	_, ok := Builtin("zz-test-a")
	assert.Assert(t, ok)
	_, ok = Builtin("zz-test-c")
	assert.Assert(t, !ok)
	for _, c := range []struct {
		name string
		p    Plugin
	}{{"zz-test-a", fake{}}, {"", fake{}}, {"zz-test-c", nil}} {
		func() {
			defer func() { assert.Assert(t, recover() != nil, "Register(%q) must panic", c.name) }()
			Register(c.name, c.p)
		}()
	}
}
