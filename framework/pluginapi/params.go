package pluginapi

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// SplitParams checks a plan or parse request's parameters against the ones
// a test declares and splits them: "env.NAME" keys become the returned env
// map (NAME → value, for the ranks' environment), every other key must be
// declared and is returned in sorted order, so a plugin applies them
// deterministically. Errors: an "env." key whose NAME is not a
// plan.EnvName, or
// an undeclared key (the message lists the declared ones and env.NAME).
func SplitParams(p map[string]string, declared []Param) (env map[string]string, keys []string, err error) {
	known := make(map[string]bool, len(declared))
	for _, d := range declared {
		known[d.Name] = true
	}
	env = map[string]string{}
	all := make([]string, 0, len(p))
	for k := range p {
		all = append(all, k)
	}
	sort.Strings(all)
	for _, k := range all {
		if name, ok := strings.CutPrefix(k, "env."); ok {
			if !plan.EnvName(name) {
				return nil, nil, fmt.Errorf("parameter %q: not a variable name: %w", k, plan.EnvNameError(name))
			}
			env[name] = p[k]
			continue
		}
		if !known[k] {
			names := make([]string, 0, len(declared))
			for _, d := range declared {
				names = append(names, d.Name)
			}
			return nil, nil, fmt.Errorf("unknown parameter %q (known: %s)", k, strings.Join(names, ", "))
		}
		keys = append(keys, k)
	}
	return env, keys, nil
}

// CountParam checks parameter name's value v: empty (the tool's default
// applies) or a non-negative decimal integer (an iteration or cycle
// count). The error (ParamError) names the parameter and the value.
func CountParam(name, v string) error {
	if v == "" {
		return nil
	}
	if n, err := strconv.Atoi(v); err != nil || n < 0 {
		return &ParamError{Name: name, Err: fmt.Errorf("%q is not a non-negative integer", v)}
	}
	return nil
}

// BoolParam parses parameter name's value v as strconv.ParseBool does
// ("true", "false", "1", "0", ...). The error (ParamError) names the
// parameter and the value.
func BoolParam(name, v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, &ParamError{Name: name, Err: fmt.Errorf("%q is not true or false", v)}
	}
	return b, nil
}

// PortParam parses parameter name's value v as a TCP port, 1 to 65535.
// The error (ParamError) names the parameter and the value.
func PortParam(name, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 65535 {
		return 0, &ParamError{Name: name, Err: fmt.Errorf("%q is not a TCP port", v)}
	}
	return n, nil
}
