package k8s

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// eachPodTemplate calls fn with every pod template in objs (a map whose
// spec holds containers) and the map holding it under "template" (a Job's
// spec, a replicated job's: where parallelism or replicas say how many
// pods it stands for); owner is nil for a template that is an object of
// its own.
func eachPodTemplate(objs []*unstructured.Unstructured, fn func(owner, tmpl map[string]any)) {
	isTemplate := func(m map[string]any) bool {
		spec, ok := m["spec"].(map[string]any)
		return ok && spec["containers"] != nil
	}
	var walk func(owner map[string]any, v any)
	walk = func(owner map[string]any, v any) {
		switch x := v.(type) {
		case map[string]any:
			if isTemplate(x) {
				fn(owner, x)
				return
			}
			for k, e := range x {
				if k == "template" {
					walk(x, e)
				} else {
					walk(nil, e)
				}
			}
		case []any:
			for _, e := range x {
				walk(nil, e)
			}
		}
	}
	for _, o := range objs {
		walk(nil, o.Object)
	}
}

// podTemplates describes every pod template in objs as
// "ROLE nodes=N1,N2 spread=yes|no": its gpuaccept.dev/role (or
// pair-role), the node names its required node affinity allows, and
// whether it carries the one-pod-per-node anti-affinity; sorted.
func podTemplates(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	eachPodTemplate(objs, func(_, x map[string]any) {
		spec := x["spec"].(map[string]any)
		labels, _, _ := unstructured.NestedStringMap(x, "metadata", "labels")
		role := labels[LabelRole]
		if r := labels["gpuaccept.dev/pair-role"]; r != "" {
			role = r
		}
		if role == "" {
			role = "indexed"
		}
		var nodes []string
		terms, _, _ := unstructured.NestedSlice(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
		for _, term := range terms {
			fields, _, _ := unstructured.NestedSlice(term.(map[string]any), "matchFields")
			assert.Equal(t, len(fields), 1, "one requirement per term: %v", term)
			f := fields[0].(map[string]any)
			assert.Equal(t, f["key"], "metadata.name")
			assert.Equal(t, f["operator"], "In")
			vals, _, _ := unstructured.NestedStringSlice(f, "values")
			assert.Equal(t, len(vals), 1, "the API server takes one value per metadata.name requirement")
			nodes = append(nodes, vals[0])
		}
		_, spread, _ := unstructured.NestedSlice(spec, "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
		out = append(out, fmt.Sprintf("%s nodes=%s spread=%v", role, strings.Join(nodes, ","), spread))
	})
	sort.Strings(out)
	return out
}

// Pinned to hosts, every pod of every flavor goes to its node: a pod that
// is node i of the test exactly to Hosts[i] (a 1-node test, a server, a
// client, the lead of a JobSet or Volcano Job), a template standing for
// several pods (an Indexed Job's, the workers') to any of its nodes, one
// pod per node. The hosts come from the launcher (--hosts) or the
// request's topology.
func TestRenderPinsPods(t *testing.T) {
	hosts := []string{"node-b", "node-a"}
	type tc struct {
		name   string
		flavor string
		hosts  []string // the launcher's; the paired plan carries its own
		nodes  int      // 0: the paired plan
		want   []string
	}
	tcs := []tc{
		{"job 1 node", FlavorJob, hosts[:1], 1, []string{"lead nodes=node-b spread=false"}},
		{"job 2 nodes", FlavorJob, hosts, 2, []string{"indexed nodes=node-b,node-a spread=true"}},
		{"job paired", FlavorJob, nil, 0, []string{"client nodes=node-a spread=false", "server nodes=node-b spread=false"}},
		{"job unpinned", FlavorJob, nil, 2, []string{"indexed nodes= spread=true"}},
		{"jobset 1 node", FlavorJobSet, hosts[:1], 1, []string{"lead nodes=node-b spread=false"}},
		{"jobset 2 nodes", FlavorJobSet, hosts, 2, []string{"lead nodes=node-b spread=true", "worker nodes=node-a spread=true"}},
		{"jobset 3 nodes", FlavorJobSet, []string{"n0", "n1", "n2"}, 3, []string{"lead nodes=n0 spread=true", "worker nodes=n1,n2 spread=true"}},
		{"jobset paired", FlavorJobSet, nil, 0, []string{"client nodes=node-a spread=false", "server nodes=node-b spread=false"}},
		{"volcano 1 node", FlavorVolcano, hosts[:1], 1, []string{"lead nodes=node-b spread=false"}},
		{"volcano 2 nodes", FlavorVolcano, hosts, 2, []string{"lead nodes=node-b spread=true", "worker nodes=node-a spread=true"}},
		{"volcano paired", FlavorVolcano, nil, 0, []string{"client nodes=node-a spread=false", "server nodes=node-b spread=false"}},
		{"mpijob 1 node", FlavorMPIJob, hosts[:1], 1, []string{"lead nodes=node-b spread=false"}},
		{"mpijob 2 nodes", FlavorMPIJob, hosts, 2, []string{"lead nodes=node-b,node-a spread=false", "worker nodes=node-b,node-a spread=true"}},
		{"mpijob paired", FlavorMPIJob, nil, 0, []string{"client nodes=node-a spread=false", "server nodes=node-b spread=false"}},
		{"mpijob 2 of 3 hosts", FlavorMPIJob, []string{"n0", "n1", "n2"}, 2, []string{"lead nodes=n0,n1 spread=false", "worker nodes=n0,n1 spread=true"}},
	}
	for _, c := range tcs {
		t.Run(c.name, func(t *testing.T) {
			l, err := New(Config{SKU: testSKU(t), Flavor: c.flavor, Namespace: "acceptance", Hosts: c.hosts})
			assert.NilError(t, err)
			l.RunID = "ga-0000test"
			req := allGather(c.nodes, 4)
			if c.nodes == 0 {
				req = pairedWriteBW()
				req.Topology.Hosts = hosts
				req.Plan.Steps[1].Argv[len(req.Plan.Steps[1].Argv)-1] = hosts[0]
			}
			r, err := l.render(req, "ga-0000test-1", "acceptance", nil)
			assert.NilError(t, err)
			assert.DeepEqual(t, podTemplates(t, r.objects()), c.want)
		})
	}
}

// Host names that are no node names, and fewer hosts than a step's nodes,
// are refused with the host or the step named.
func TestPinRejects(t *testing.T) {
	_, err := New(Config{Image: "i", Hosts: []string{"gpu-node-0", "GPU_Node_1"}})
	assert.ErrorContains(t, err, `launcher k8s: --hosts: host "GPU_Node_1" is not a Kubernetes node name`)

	l, err := New(Config{Image: "i"})
	assert.NilError(t, err)
	req := pairedWriteBW()
	req.Topology.Hosts = []string{"node-a", "node b"}
	_, err = l.Commands(req)
	assert.ErrorContains(t, err, `k8s: test ibperf.write_bw: host "node b" is not a Kubernetes node name`)

	l, err = New(Config{Image: "i", Hosts: []string{"node-a", "node-b"}})
	assert.NilError(t, err)
	_, err = l.Commands(allGather(3, 8))
	assert.ErrorContains(t, err, "step all_gather spans 3 nodes, but only 2 hosts are given (node-a,node-b)")
	req = pairedWriteBW()
	req.Topology.Hosts = []string{"node-a"}
	_, err = l.Commands(req)
	assert.ErrorContains(t, err, "step client runs on node 1, but only 1 hosts are given (node-a)")
}
