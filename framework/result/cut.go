package result

import "strings"

// The words of a test the run's end cut short, not the test itself: the
// runner says a test was not started or was stopped because the run
// was interrupted or its time ran out (NotRun, Stopped with
// RunInterrupted or RunTimeUp), and a test the journal has no result for
// reads back NotFinished. Such a test is an ERROR, never a verdict on
// hardware; a burn-in keeps the cycle and does not judge it.
const (
	RunInterrupted = "the run was interrupted (Ctrl-C or SIGTERM)"
	RunTimeUp      = "the run's time ran out"
	NotRun         = "not run: "
	Stopped        = "stopped: "
	NotFinished    = "not finished: the run stopped before this test ended (its raw outputs, if any, are in the results folder)"
)

// CutMessage says text starts with the message of a test the run's end
// cut short (see RunInterrupted), whatever follows it.
func CutMessage(text string) bool {
	for _, p := range []string{NotFinished, NotRun + RunInterrupted, NotRun + RunTimeUp, Stopped + RunInterrupted} {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// CutShort says test t is an ERROR the run's end made (CutMessage).
func CutShort(t Test) bool { return t.Status == Error && CutMessage(t.Message) }

// ReplayLauncher is the name of the launcher that replays recorded
// outputs (launchers/replay, gpuaccept demo): such a run measured no
// hardware here, so nothing samples telemetry beside it, the results
// store does not take it, and verify calls it no sign-off.
const ReplayLauncher = "replay"
