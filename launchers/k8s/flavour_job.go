package k8s

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// jobFlavour renders a step as an Indexed Job (batch/v1) with, for
// several pods or a server, a headless Service for their DNS names: the
// default, which needs nothing but Kubernetes itself.
type jobFlavour struct{}

func (jobFlavour) objects(l *Launcher, in flavourInput) {
	// An Indexed Job has one template; the lead is the pod of index
	// 0, so the template chooses its script by JOB_COMPLETION_INDEX.
	tmpl := in.lead
	if in.w.pods > 1 {
		o := in.podOpts
		o.nodes = in.w.pin
		tmpl = l.podTemplate(in.sh, in.lbl, "", indexedScript(in.leadScript, in.workerScript), o)
	}
	if in.w.pods > 1 || in.w.step.Role == "server" {
		// Stable DNS names for mpirun, or for the server's client.
		in.w.objects = append(in.w.objects, l.headless(in.meta, in.lbl))
		tmpl.Spec.Subdomain = in.w.name
	}
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: in.meta,
		Spec: batchv1.JobSpec{
			Completions:    ptr.To(int32(in.w.pods)),
			Parallelism:    ptr.To(int32(in.w.pods)),
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			BackoffLimit:   ptr.To(int32(0)),
			Template:       tmpl,
			// Left behind by a dead gpuaccept, it goes by itself.
			TTLSecondsAfterFinished: ptr.To(int32(ttlAfterFinished)),
		},
	}
	in.w.objects = append(in.w.objects, toUnstructured(job))
}

// hosts: an Indexed Job's pods are <job>-<i> under the headless
// Service <job>.
func (jobFlavour) hosts(name string, pods int) []string {
	var hs []string
	for i := 0; i < pods; i++ {
		hs = append(hs, fmt.Sprintf("%s-%d.%s", name, i, name))
	}
	return hs
}
