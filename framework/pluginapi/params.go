package pluginapi

import (
	"fmt"
	"sort"
	"strings"
)

// SplitParams checks a plan or parse request's parameters against the ones
// a test declares and splits them: "env.NAME" keys become the returned env
// map (NAME → value, for the ranks' environment), every other key must be
// declared and is returned in sorted order, so a plugin applies them
// deterministically. Errors: an "env." key that is not a variable name, or
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
			if name == "" || strings.ContainsAny(name, "= \t\n") {
				return nil, nil, fmt.Errorf("parameter %q: not a variable name", k)
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
