package report

import (
	"fmt"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// badNodesSummary names, for the summary line, the nodes the run's
// preflight tests found bad, each once with its first fault code:
// "; bad nodes: node2 (GA-GPU-ECC), node3"; "" when there is none.
func badNodesSummary(run *result.Run) string {
	var names []string
	seen := map[string]bool{}
	for _, b := range run.BadNodes {
		if seen[b.Host] {
			continue
		}
		seen[b.Host] = true
		n := b.Host
		if b.Code != "" {
			n += " (" + b.Code + ")"
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("; %s: %s", plural(len(names), "bad node"), strings.Join(names, ", "))
}
