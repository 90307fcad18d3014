package acceptance

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/runner"
)

// suggest returns the names of known (PLUGIN.TEST names) that the mistyped
// name most likely meant: those whose test part it names without the
// plugin ("all_reduce": nccl.all_reduce and rccl.all_reduce), or spells
// with other separators or case ("allreduce", "All-Reduce"), or within
// two edits of it ("all_gater"); a plugin named, its tests only when
// one fits. None when nothing is close.
func suggest(name string, known []string) []string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "", ".", "", " ", "").Replace(strings.ToLower(s))
	}
	plugin, tn, hasPlugin := strings.Cut(name, ".")
	if !hasPlugin {
		tn = name
	}
	var exact, close []string
	for _, k := range known {
		_, kt, _ := strings.Cut(k, ".")
		switch {
		case norm(kt) == norm(tn) || norm(k) == norm(name):
			exact = append(exact, k)
		case editDistance(norm(kt), norm(tn)) <= 2 || editDistance(norm(k), norm(name)) <= 2:
			close = append(close, k)
		}
	}
	for _, list := range [][]string{exact, close} {
		// A plugin named is meant: its own tests first.
		var own []string
		for _, k := range list {
			if hasPlugin && strings.HasPrefix(k, plugin+".") {
				own = append(own, k)
			}
		}
		if len(own) > 0 {
			list = own
		}
		if len(list) > 0 {
			sort.Strings(list)
			return list
		}
	}
	return nil
}

// DidYouMean renders suggest's answer for a message (name mistyped,
// known the names it may have meant): "; did you mean
// nccl.all_reduce or rccl.all_reduce?", or "" when nothing is close.
func DidYouMean(name string, known []string) string {
	s := suggest(name, known)
	switch len(s) {
	case 0:
		return ""
	case 1:
		return "; did you mean " + s[0] + "?"
	}
	return "; did you mean " + strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1] + "?"
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// allTests lists every test the plugins offer, as PLUGIN.TEST. A plugin
// that cannot describe itself is left out: the names are for suggestions.
func allTests(ctx context.Context, plugins TestCatalog) []string {
	var names []string
	for _, p := range plugins.Names() {
		d, err := plugins.Describe(ctx, p)
		if err != nil {
			continue
		}
		for _, t := range d.Tests {
			names = append(names, p+"."+t.Name)
		}
	}
	return names
}

// TestCatalog is what KnownTest needs of the plugin host
// (*pluginapi.Host): the plugins' names and their descriptions.
type TestCatalog interface {
	Names() []string
	Describe(ctx context.Context, plugin string) (pluginapi.Description, error)
}

// KnownTest checks that a plugin offers the named test (PLUGIN.TEST); the
// error says "unknown test" and suggests the names it could have meant.
func KnownTest(ctx context.Context, plugins TestCatalog, name string) error {
	p, t, err := runner.SplitName(name)
	if err != nil {
		return fmt.Errorf("unknown test %q: a test is named PLUGIN.TEST (gpuaccept list tests)%s", name, DidYouMean(name, allTests(ctx, plugins)))
	}
	d, err := plugins.Describe(ctx, p)
	if err != nil {
		return fmt.Errorf("unknown test %q: %w%s", name, err, DidYouMean(name, allTests(ctx, plugins)))
	}
	var names []string
	for _, ti := range d.Tests {
		if ti.Name == t {
			return nil
		}
		names = append(names, p+"."+ti.Name)
	}
	return fmt.Errorf("unknown test %q: plugin %s has no test %q%s (known: %s)", name, p, t, DidYouMean(name, allTests(ctx, plugins)), strings.Join(names, ", "))
}
