package k8s

import "fmt"

// jobSetFlavour renders a step as a JobSet (jobset.x-k8s.io/v1alpha2):
// a lead replicated job and, for several pods, a worker one, with DNS
// names from the JobSet's own network.
type jobSetFlavour struct{}

func (jobSetFlavour) objects(l *Launcher, in flavourInput) {
	rjobs := []any{replicatedJob("lead", 1, in.lead)}
	if in.w.pods > 1 {
		rjobs = append(rjobs, replicatedJob("worker", in.w.pods-1, in.worker))
	}
	js := newObject("jobset.x-k8s.io/v1alpha2", "JobSet", in.meta)
	js.Object["spec"] = map[string]any{
		"network":                 map[string]any{"enableDNSHostnames": true, "publishNotReadyAddresses": true},
		"failurePolicy":           map[string]any{"maxRestarts": int64(0)},
		"ttlSecondsAfterFinished": ttlAfterFinished,
		"successPolicy":           map[string]any{"operator": "All", "targetReplicatedJobs": []any{"lead"}},
		"replicatedJobs":          rjobs,
	}
	in.w.objects = append(in.w.objects, js)
}

// hosts: JobSet names the pods <jobset>-<replicated job>-<job index>-<pod
// index>, under the JobSet's own Service.
func (jobSetFlavour) hosts(name string, pods int) []string {
	hs := []string{fmt.Sprintf("%s-lead-0-0.%s", name, name)}
	for i := 1; i < pods; i++ {
		hs = append(hs, fmt.Sprintf("%s-worker-0-%d.%s", name, i-1, name))
	}
	return hs
}
