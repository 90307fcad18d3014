package k8s

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuaccept/gpuaccept/framework/site"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// shape is the SKU's kubernetes section checked and turned into the API's
// types, once, so a bad quantity fails before anything is created.
type shape struct {
	image       string
	gpuResource corev1.ResourceName
	resources   corev1.ResourceList
	annotations map[string]string
	labels      map[string]string
	shm         *resource.Quantity
	ipcLock     bool
	privileged  bool
	hostNetwork bool
	// given says which of the switches above (by YAML key) the file set,
	// so that an overlay's false wins as its true does.
	given        map[string]bool
	tolerations  []corev1.Toleration
	nodeSelector map[string]string
	sa           string
	priority     string
	queue        string
	env          map[string]string
	// launcher is the shape of a pod that holds no rank (the site's
	// kubernetes.launcher: annotations, node selector, resources only);
	// nil: none of these.
	launcher *shape
	// computeDomain, when set, gives every multi-node step an IMEX
	// ComputeDomain whose channel its rank pods claim.
	computeDomain *site.ComputeDomain
	// hostPaths are node folders mounted into every pod.
	hostPaths []*site.HostPath
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

// podShape checks the SKU's kubernetes section, and the site's kubernetes
// part, against Kubernetes' syntax (errors name the file, the line and the
// field), and lays the site's over the SKU's: a site's value wins, key by
// key in maps; its tolerations, when it gives any, replace the SKU's.
// --image and --k8s-queue win over both.
func podShape(cfg Config) (*shape, error) {
	skuName := "SKU"
	if cfg.SKU != nil {
		skuName = cfg.SKU.File
	}
	s, err := shapeOf(kube(cfg.SKU), skuName, "kubernetes.")
	if err != nil {
		return nil, err
	}
	if cfg.Site != nil && cfg.Site.Kubernetes != nil {
		sk := cfg.Site.Kubernetes
		o, err := shapeOf(&sk.Pods, cfg.Site.File, "kubernetes.")
		if err != nil {
			return nil, err
		}
		s.over(o)
		if sk.Launcher != nil {
			r := sk.Launcher
			ls, err := shapeOf(&sku.Kubernetes{Annotations: r.Annotations, NodeSelector: r.NodeSelector, Resources: r.Resources, Line: r.Line}, cfg.Site.File, "kubernetes.launcher.")
			if err != nil {
				return nil, err
			}
			s.launcher = ls
		}
		s.computeDomain, s.hostPaths = sk.ComputeDomain, sk.HostPaths
	}
	if cfg.Image != "" {
		s.image = cfg.Image
	}
	if cfg.Queue != "" {
		s.queue = cfg.Queue
	}
	return s, nil
}

// over lays o's settings over s's.
func (s *shape) over(o *shape) {
	if o.image != "" {
		s.image = o.image
	}
	if o.gpuResource != "" {
		s.gpuResource = o.gpuResource
	}
	for k, v := range o.resources {
		s.resources[k] = v
	}
	s.annotations = mergeMaps(s.annotations, o.annotations)
	s.labels = mergeMaps(s.labels, o.labels)
	s.nodeSelector = mergeMaps(s.nodeSelector, o.nodeSelector)
	s.env = mergeMaps(s.env, o.env)
	if o.shm != nil {
		s.shm = o.shm
	}
	// A switch the overlay's file gives wins either way: a site that says
	// host_network: false takes the pods off the SKU's host network.
	for _, f := range []struct {
		key      string
		to, from *bool
	}{{"ipc_lock", &s.ipcLock, &o.ipcLock}, {"privileged", &s.privileged, &o.privileged}, {"host_network", &s.hostNetwork, &o.hostNetwork}} {
		if o.given[f.key] {
			*f.to = *f.from
		}
	}
	if len(o.tolerations) > 0 {
		s.tolerations = o.tolerations
	}
	for _, f := range []struct{ to, from *string }{{&s.sa, &o.sa}, {&s.priority, &o.priority}, {&s.queue, &o.queue}} {
		if *f.from != "" {
			*f.to = *f.from
		}
	}
}

// mergeMaps returns a's entries with b's over them; nil when both are
// empty.
func mergeMaps(a, b map[string]string) map[string]string {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := copyMap(a)
	for k, v := range b {
		out[k] = v
	}
	return out
}

// shapeOf checks one kubernetes section (of the SKU file or the site file
// name, its fields named under prefix) and turns it into the API's types.
func shapeOf(k *sku.Kubernetes, name, prefix string) (*shape, error) {
	var problems []error
	// where records a problem of field ("shm_size", "resources.NAME"):
	// the caller goes on to the next field, so that every problem is named.
	where := func(field string, err error) {
		f, _, _ := strings.Cut(field, ".")
		problems = append(problems, sku.Problem{Line: k.LineOf(field), Field: prefix + f, Message: err.Error()})
	}
	s := &shape{image: k.Image, ipcLock: k.IPCLock, privileged: k.Privileged, hostNetwork: k.HostNetwork,
		sa: k.ServiceAccount, priority: k.PriorityClass, queue: k.Queue, env: k.Env,
		annotations: k.Annotations, labels: k.Labels, nodeSelector: k.NodeSelector, given: map[string]bool{}}
	for _, key := range []string{"ipc_lock", "privileged", "host_network"} {
		s.given[key] = k.Lines[key] > 0
	}
	if k.GPUResource != "" {
		if errs := validation.IsQualifiedName(k.GPUResource); len(errs) > 0 {
			where("gpu_resource", fmt.Errorf("%q: %s", k.GPUResource, strings.Join(errs, "; ")))
		}
		s.gpuResource = corev1.ResourceName(k.GPUResource)
	}
	s.resources = corev1.ResourceList{}
	for _, rn := range sortedKeys(k.Resources) {
		if errs := validation.IsQualifiedName(rn); len(errs) > 0 {
			where("resources."+rn, fmt.Errorf("name %q: %s", rn, strings.Join(errs, "; ")))
			continue
		}
		q, err := resource.ParseQuantity(k.Resources[rn])
		if err != nil {
			where("resources."+rn, fmt.Errorf("%s: %q is not a quantity (\"1\", \"4\", \"64Gi\"): %w", rn, k.Resources[rn], err))
			continue
		}
		if rn == k.GPUResource {
			where("resources."+rn, fmt.Errorf("%s is the gpu_resource, whose count is --gpus-per-node: do not list it again", rn))
			continue
		}
		s.resources[corev1.ResourceName(rn)] = q
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
	for _, en := range sortedKeys(k.Env) {
		if errs := validation.IsEnvVarName(en); len(errs) > 0 {
			where("env."+en, fmt.Errorf("%q: %s", en, strings.Join(errs, "; ")))
		}
	}
	for _, t := range k.Tolerations {
		tol := corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value,
			Effect: corev1.TaintEffect(t.Effect), TolerationSeconds: t.Seconds}
		s.tolerations = append(s.tolerations, tol)
	}
	if len(problems) > 0 {
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
