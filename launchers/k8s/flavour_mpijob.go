package k8s

import "fmt"

// mpiJobFlavour renders a step of several pods as an MPIJob
// (kubeflow.org/v2beta1) of mpi-operator: a launcher pod with no GPU and
// a worker per node holding the ranks.
type mpiJobFlavour struct{}

func (mpiJobFlavour) objects(l *Launcher, in flavourInput) {
	mj := newObject("kubeflow.org/v2beta1", "MPIJob", in.meta)
	mj.Object["spec"] = map[string]any{
		"slotsPerWorker":    int64(in.w.step.ProcsPerNode),
		"mpiImplementation": mpiImplementation(in.starter),
		"sshAuthMountPath":  "/root/.ssh",
		// mpirun starts only once every worker's sshd is up.
		"launcherCreationPolicy": "WaitForWorkersReady",
		"runPolicy":              map[string]any{"cleanPodPolicy": "Running", "backoffLimit": int64(0), "ttlSecondsAfterFinished": ttlAfterFinished},
		"mpiReplicaSpecs": map[string]any{
			"Launcher": map[string]any{"replicas": int64(1), "restartPolicy": "Never", "template": toMap(&in.lead)},
			"Worker":   map[string]any{"replicas": int64(in.w.pods), "restartPolicy": "Never", "template": toMap(&in.worker)},
		},
	}
	in.w.objects = append(in.w.objects, mj)
	in.w.pods++ // the launcher pod
}

// hosts: mpi-operator names its workers <job>-worker-<i> under the
// Service <job>; the launcher pod holds no rank.
func (mpiJobFlavour) hosts(name string, pods int) []string {
	var hs []string
	for i := 0; i < pods; i++ {
		hs = append(hs, fmt.Sprintf("%s-worker-%d.%s", name, i, name))
	}
	return hs
}
