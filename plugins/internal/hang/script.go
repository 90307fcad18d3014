package hang

import (
	_ "embed"
	"strconv"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// Script is the evidence step's shell script (evidence.sh): run as
// "/bin/sh -c Script gpuaccept-evidence NODE" on each node when a test's
// time runs out, it prints what Read reads (EvidencePrefix lines).
//
//go:embed evidence.sh
var Script string

// StepName is the name of node i's evidence step.
func StepName(i int) string { return "evidence." + strconv.Itoa(i) }

// Steps are the evidence steps of a test on nodes nodes, one per node
// (plan.Evidence: launchers run them only when the test times out).
func Steps(nodes int) []plan.Step {
	out := make([]plan.Step, 0, nodes)
	for i := 0; i < nodes; i++ {
		out = append(out, plan.Step{
			Name: StepName(i), Role: plan.Evidence, Host: i,
			Argv:  []string{"/bin/sh", "-c", Script, "gpuaccept-evidence", strconv.Itoa(i)},
			Procs: 1, ProcsPerNode: 1,
		})
	}
	return out
}
