package k8s

import "fmt"

// volcanoFlavour renders a step as a Volcano Job (batch.volcano.sh):
// lead and worker tasks, gang-scheduled (minAvailable), in the SKU's
// queue when it names one.
type volcanoFlavour struct{}

func (volcanoFlavour) objects(l *Launcher, in flavourInput) {
	tasks := []any{map[string]any{"name": "lead", "replicas": int64(1), "template": toMap(&in.lead),
		"policies": []any{map[string]any{"event": "TaskCompleted", "action": "CompleteJob"}}}}
	if in.w.pods > 1 {
		tasks = append(tasks, map[string]any{"name": "worker", "replicas": int64(in.w.pods - 1), "template": toMap(&in.worker)})
	}
	vj := newObject("batch.volcano.sh/v1alpha1", "Job", in.meta)
	spec := map[string]any{
		"schedulerName":           "volcano",
		"minAvailable":            int64(in.w.pods),
		"maxRetry":                int64(1),
		"ttlSecondsAfterFinished": ttlAfterFinished,
		"plugins":                 map[string]any{"svc": []any{}, "env": []any{}},
		"policies":                []any{map[string]any{"event": "PodEvicted", "action": "AbortJob"}, map[string]any{"event": "PodFailed", "action": "AbortJob"}},
		"tasks":                   tasks,
	}
	if in.sh.queue != "" {
		spec["queue"] = in.sh.queue
	}
	vj.Object["spec"] = spec
	in.w.objects = append(in.w.objects, vj)
}

// hosts: Volcano's svc plugin names the pods <job>-<task>-<index>.
func (volcanoFlavour) hosts(name string, pods int) []string {
	hs := []string{fmt.Sprintf("%s-lead-0.%s", name, name)}
	for i := 1; i < pods; i++ {
		hs = append(hs, fmt.Sprintf("%s-worker-%d.%s", name, i-1, name))
	}
	return hs
}
