package k8s

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// shape is the SKU's kubernetes section checked and turned into the API's
// types, once, so a bad quantity fails before anything is created.
type shape struct {
	image        string
	gpuResource  corev1.ResourceName
	resources    corev1.ResourceList
	annotations  map[string]string
	labels       map[string]string
	shm          *resource.Quantity
	ipcLock      bool
	privileged   bool
	hostNetwork  bool
	tolerations  []corev1.Toleration
	nodeSelector map[string]string
	sa           string
	priority     string
	queue        string
	env          map[string]string
}

// CheckSKU checks the kubernetes section of s (none: nothing to check)
// as every run with this launcher does before it creates anything: a
// *sku.Problems listing every problem, each with the SKU file, the line of
// the field (of the map entry) and the field; nil when there is none.
// baseline validate calls it, so that a file it passes a run accepts.
func CheckSKU(s *sku.SKU) error {
	_, err := podShape(Config{SKU: s})
	return err
}

// podShape checks the SKU's kubernetes section against Kubernetes' syntax;
// the error, a *sku.Problems, names every problem with the SKU file, the
// line and the field.
func podShape(cfg Config) (*shape, error) {
	k := kube(cfg.SKU)
	var problems []error
	// where records a problem of field ("shm_size", "resources.NAME"):
	// the caller goes on to the next field, so that every problem is named.
	where := func(field string, err error) {
		f, _, _ := strings.Cut(field, ".")
		problems = append(problems, sku.Problem{Line: k.LineOf(field), Field: "kubernetes." + f, Message: err.Error()})
	}
	s := &shape{image: k.Image, ipcLock: k.IPCLock, privileged: k.Privileged, hostNetwork: k.HostNetwork,
		sa: k.ServiceAccount, priority: k.PriorityClass, queue: k.Queue, env: k.Env,
		annotations: k.Annotations, labels: k.Labels, nodeSelector: k.NodeSelector}
	if cfg.Image != "" {
		s.image = cfg.Image
	}
	if cfg.Queue != "" {
		s.queue = cfg.Queue
	}
	if k.GPUResource != "" {
		if errs := validation.IsQualifiedName(k.GPUResource); len(errs) > 0 {
			where("gpu_resource", fmt.Errorf("%q: %s", k.GPUResource, strings.Join(errs, "; ")))
		}
		s.gpuResource = corev1.ResourceName(k.GPUResource)
	}
	s.resources = corev1.ResourceList{}
	for _, name := range sortedKeys(k.Resources) {
		if errs := validation.IsQualifiedName(name); len(errs) > 0 {
			where("resources."+name, fmt.Errorf("name %q: %s", name, strings.Join(errs, "; ")))
			continue
		}
		q, err := resource.ParseQuantity(k.Resources[name])
		if err != nil {
			where("resources."+name, fmt.Errorf("%s: %q is not a quantity (\"1\", \"4\", \"64Gi\"): %w", name, k.Resources[name], err))
			continue
		}
		if name == k.GPUResource {
			where("resources."+name, fmt.Errorf("%s is the gpu_resource, whose count is --gpus-per-node: do not list it again", name))
			continue
		}
		s.resources[corev1.ResourceName(name)] = q
	}
	if k.ShmSize != "" {
		q, err := resource.ParseQuantity(k.ShmSize)
		if err != nil {
			where("shm_size", fmt.Errorf("%q is not a quantity (\"64Gi\"): %w", k.ShmSize, err))
		} else {
			s.shm = &q
		}
	}
	for _, m := range []struct {
		field string
		kv    map[string]string
		value bool
	}{{"labels", k.Labels, true}, {"node_selector", k.NodeSelector, true}, {"annotations", k.Annotations, false}} {
		for _, key := range sortedKeys(m.kv) {
			if errs := validation.IsQualifiedName(key); len(errs) > 0 {
				where(m.field+"."+key, fmt.Errorf("key %q: %s", key, strings.Join(errs, "; ")))
			}
			if errs := validation.IsValidLabelValue(m.kv[key]); m.value && len(errs) > 0 {
				where(m.field+"."+key, fmt.Errorf("%s: value %q: %s", key, m.kv[key], strings.Join(errs, "; ")))
			}
		}
	}
	for _, name := range sortedKeys(k.Env) {
		if errs := validation.IsEnvVarName(name); len(errs) > 0 {
			where("env."+name, fmt.Errorf("%q: %s", name, strings.Join(errs, "; ")))
		}
	}
	for _, t := range k.Tolerations {
		tol := corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value,
			Effect: corev1.TaintEffect(t.Effect), TolerationSeconds: t.Seconds}
		s.tolerations = append(s.tolerations, tol)
	}
	if len(problems) > 0 {
		name := "SKU"
		if cfg.SKU != nil {
			name = cfg.SKU.File
		}
		return nil, sku.NewProblems(name, problems)
	}
	return s, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
