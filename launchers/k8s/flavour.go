package k8s

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// flavour is one workload kind a step can run as (--k8s-flavor): it
// turns the step's pod templates into the objects to create. One type per
// kind, in flavour_KIND.go; the scripts and templates they share are
// render.go's.
type flavour interface {
	// objects appends the step's workload objects to in.w.objects (and
	// counts pods in in.w.pods that the kind adds, such as MPIJob's
	// launcher).
	objects(l *Launcher, in flavourInput)
	// hosts are the DNS names of a workload's pods, in node order, as the
	// kind derives them from the workload's name (known before anything is
	// created, for mpirun's host list and @hostN@).
	hosts(name string, pods int) []string
}

// flavourInput is what every flavour renders a step from.
type flavourInput struct {
	w       *workload
	sh      *shape
	meta    metav1.ObjectMeta
	lbl     map[string]string
	lead    corev1.PodTemplateSpec
	worker  corev1.PodTemplateSpec
	podOpts podOptions
	starter rankstart.Starter
	// leadScript and workerScript are the pods' scripts (an Indexed Job's
	// one template chooses between them).
	leadScript, workerScript string
}

// flavours are the workload kinds by their --k8s-flavor name.
var flavours = map[string]flavour{
	FlavorJob:     jobFlavour{},
	FlavorJobSet:  jobSetFlavour{},
	FlavorVolcano: volcanoFlavour{},
	FlavorMPIJob:  mpiJobFlavour{},
}
