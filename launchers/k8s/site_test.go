package k8s

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/site"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

func testSite(t *testing.T, text string) *site.Site {
	t.Helper()
	s, err := site.Parse([]byte(text), "site.yaml")
	assert.NilError(t, err)
	return s
}

// podSpec converts the pod template at path in an object back to its type.
func podSpec(t *testing.T, obj map[string]any, path ...string) corev1.PodTemplateSpec {
	t.Helper()
	var v any = obj
	for _, p := range path {
		v = v.(map[string]any)[p]
	}
	var tmpl corev1.PodTemplateSpec
	assert.NilError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(v.(map[string]any), &tmpl))
	return tmpl
}

// The site's kubernetes part on the pods: over the SKU's for the rank
// pods, an IMEX ComputeDomain per multi-node step whose channel every rank
// pod claims (and the rankless MPIJob launcher does not), host folders, and
// the launcher's own shape.
func TestSitePods(t *testing.T) {
	st := testSite(t, `site: x
kubernetes:
  image: site/img:2
  annotations: {k8s.v1.cni.cncf.io/networks: "site-net"}
  resources: {rdma/ib: "1"}
  launcher: {resources: {cpu: "1"}, node_selector: {pool: cpu}}
  compute_domain: {}
  host_paths: [{path: /home/kubernetes/bin/gib, mount: /usr/local/gib}]
`)
	for _, flavor := range []string{FlavorJobSet, FlavorMPIJob} {
		t.Run(flavor, func(t *testing.T) {
			l, err := New(Config{SKU: testSKU(t), Site: st, Flavor: flavor, Namespace: "acc"})
			assert.NilError(t, err)
			l.RunID = "ga-0000test"
			r, err := l.render(allGather(2, 4), "ga-0000test-1", "acc", nil)
			assert.NilError(t, err)
			objs := r.steps[0].objects
			cd := objs[0].Object
			assert.Equal(t, cd["kind"], "ComputeDomain", "the domain is created before the workload")
			assert.Equal(t, cd["spec"].(map[string]any)["numNodes"], int64(2))
			channel := cd["spec"].(map[string]any)["channel"].(map[string]any)["resourceClaimTemplate"].(map[string]any)["name"]
			var ranks, launcher corev1.PodTemplateSpec
			w := objs[len(objs)-1].Object
			if flavor == FlavorJobSet {
				ranks = podSpec(t, w["spec"].(map[string]any)["replicatedJobs"].([]any)[1].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any), "template")
			} else {
				specs := w["spec"].(map[string]any)["mpiReplicaSpecs"].(map[string]any)
				ranks = podSpec(t, specs, "Worker", "template")
				launcher = podSpec(t, specs, "Launcher", "template")
			}
			c := ranks.Spec.Containers[0]
			assert.Equal(t, c.Image, "site/img:2")
			assert.Equal(t, ranks.Annotations["k8s.v1.cni.cncf.io/networks"], "site-net", "the site's value wins over the SKU's")
			assert.Equal(t, ranks.Annotations["networking.gke.io/default-interface"], "eth0", "the SKU's other keys stay")
			assert.Equal(t, c.Resources.Limits.Name("rdma/ib", "").String(), "1")
			assert.Equal(t, c.Resources.Limits.Name("nvidia.com/mlnxnics", "").String(), "4")
			assert.Equal(t, ranks.Spec.ResourceClaims[0].Name, site.DefaultClaim)
			assert.Equal(t, *ranks.Spec.ResourceClaims[0].ResourceClaimTemplateName, channel)
			assert.Equal(t, c.Resources.Claims[0].Name, site.DefaultClaim)
			var gib string
			for _, v := range ranks.Spec.Volumes {
				if v.HostPath != nil {
					gib = v.HostPath.Path
				}
			}
			assert.Equal(t, gib, "/home/kubernetes/bin/gib")
			if flavor == FlavorMPIJob {
				lc := launcher.Spec.Containers[0]
				assert.Assert(t, len(launcher.Spec.ResourceClaims) == 0 && len(lc.Resources.Claims) == 0, "the launcher holds no rank: no channel")
				assert.Equal(t, len(launcher.Annotations), 0)
				assert.DeepEqual(t, launcher.Spec.NodeSelector, map[string]string{"pool": "cpu"})
				assert.Equal(t, lc.Resources.Limits.Cpu().String(), "1")
				assert.Assert(t, lc.Resources.Limits.Name("nvidia.com/gpu", "").IsZero() && lc.Resources.Limits.Name("rdma/ib", "").IsZero())
			}
		})
	}
	// One pod needs no domain.
	l, err := New(Config{SKU: testSKU(t), Site: st})
	assert.NilError(t, err)
	cmds, err := l.Commands(allGather(1, 4))
	assert.NilError(t, err)
	assert.Assert(t, !strings.Contains(strings.Join(cmds, ""), "ComputeDomain"))
	// A bad quantity in the site is named by the site's file and line.
	_, err = New(Config{SKU: testSKU(t), Site: testSite(t, "site: x\nkubernetes:\n  resources: {rdma/ib: lots}\n")})
	assert.ErrorContains(t, err, `site.yaml: line 3: field kubernetes.resources: rdma/ib: "lots" is not a quantity`)
	_, err = New(Config{SKU: testSKU(t), Site: testSite(t, "site: x\nkubernetes:\n  launcher: {resources: {cpu: many}}\n")})
	assert.ErrorContains(t, err, `site.yaml: line 3: field kubernetes.launcher.resources: cpu: "many" is not a quantity`)
}

// A switch the site file gives wins over the SKU's either way, as every
// other site field does: mi355x asks for the host network and IPC_LOCK,
// and a site saying false takes them off (a site that says nothing leaves
// them on). Before, a site could only turn them on.
func TestSiteSwitchesWinBothWays(t *testing.T) {
	cat, err := sku.Load(baselines.FS, "baselines")
	assert.NilError(t, err)
	mi, err := cat.Get("mi355x")
	assert.NilError(t, err)
	assert.Assert(t, mi.Kubernetes.HostNetwork && mi.Kubernetes.IPCLock, "the mi355x SKU file asks for both")
	cases := []struct {
		name, site      string
		hostNet, ipcLck bool
	}{
		{"site silent", "site: x\nkubernetes: {image: i:1}\n", true, true},
		{"host network off", "site: x\nkubernetes: {image: i:1, host_network: false}\n", false, true},
		{"ipc_lock off", "site: x\nkubernetes: {image: i:1, ipc_lock: false}\n", true, false},
		{"both said true", "site: x\nkubernetes: {image: i:1, host_network: true, ipc_lock: true}\n", true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, flavor := range []string{FlavorJob, FlavorJobSet, FlavorMPIJob} {
				l, err := New(Config{SKU: mi, Site: testSite(t, c.site), Flavor: flavor, Namespace: "acc"})
				assert.NilError(t, err)
				r, err := l.render(allGather(2, 4), "ga-0000test-1", "acc", nil)
				assert.NilError(t, err)
				pods := templatePods(t, r.objects())
				assert.Assert(t, len(pods) >= 2, flavor)
				for _, p := range pods {
					if flavor == FlavorMPIJob && p.Labels[LabelRole] == "lead" {
						continue // the operator's launcher pod holds no rank and has its own shape
					}
					assert.Equal(t, p.Spec.HostNetwork, c.hostNet, "%s %s", flavor, p.Name)
					lock := false
					if sc := p.Spec.Containers[0].SecurityContext; sc != nil && sc.Capabilities != nil {
						for _, cp := range sc.Capabilities.Add {
							lock = lock || cp == "IPC_LOCK"
						}
					}
					assert.Equal(t, lock, c.ipcLck, "%s %s: IPC_LOCK", flavor, p.Name)
				}
			}
		})
	}
}
