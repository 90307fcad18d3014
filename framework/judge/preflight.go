package judge

import (
	"fmt"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// ByChecks re-judges t, as Judge left it, for a test whose verdict is its
// checks (a preflight health test, pluginapi.TestInfo.Preflight: it
// measures nothing a baseline could hold). noBaseline is the reason Judge
// gave for skipping (NoBaseline), which does not apply and is taken out of
// the message. A test Judge skipped that made checks and no metric passes
// when every check holds, and warns naming its warn checks; a failed or
// errored test keeps its status; a test without checks (nothing judged)
// or with metrics (judged by its baseline) is returned as it is.
func ByChecks(t result.Test, noBaseline string) result.Test {
	if noBaseline != "" {
		t.Message = strings.TrimSuffix(strings.TrimSuffix(t.Message, noBaseline), "; ")
	}
	if t.Status != result.Skip || len(t.Checks) == 0 || len(t.Metrics) > 0 {
		if t.Status == result.Skip && noBaseline != "" && t.Message == "" {
			t.Message = noBaseline
		}
		return t
	}
	var warns []string
	for _, c := range t.Checks {
		switch {
		case c.OK:
		case c.Warn:
			warns = append(warns, c.Name+": "+c.Message)
		default:
			// Judge fails a failed check: not a skip. Kept as judged.
			return t
		}
	}
	if len(warns) > 0 {
		t.Status, t.Message = result.Warn, strings.Join(warns, "; ")
		return t
	}
	t.Status, t.Message = result.Pass, fmt.Sprintf("all %s hold", result.Count(len(t.Checks), "check"))
	if len(t.Checks) == 1 {
		t.Message = "1 check holds"
	}
	return t
}
