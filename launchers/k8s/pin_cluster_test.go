package k8s

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

// bindings watches the pods of run in ns from now on and returns a
// function that stops watching and reports where the scheduler bound each
// of them: "ROLE=NODE" sorted, ROLE being the pod's pair role (server,
// client), else its gpuaccept.dev/role, else its Job completion index.
func (k *cluster) bindings(t *testing.T, ns, run string) func() []string {
	t.Helper()
	w, err := k.c.core.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{LabelSelector: LabelRun + "=" + run})
	assert.NilError(t, err)
	var mu sync.Mutex
	bound := map[string]string{} // pod name -> ROLE=NODE
	gone := map[string]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			if ev.Type == watch.Deleted {
				gone[p.Name] = true
			}
			if p.Spec.NodeName != "" {
				bound[p.Name] = podRole(p) + "=" + p.Spec.NodeName
			}
			mu.Unlock()
		}
	}()
	return func() []string {
		// Launch returns once the pods are gone: this watch, another
		// stream, may lag behind; wait until it saw them go.
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			mu.Lock()
			all := true
			for name := range bound {
				all = all && gone[name]
			}
			mu.Unlock()
			if all {
				break
			}
		}
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, b := range bound {
			out = append(out, b)
		}
		sort.Strings(out)
		return out
	}
}

// podRole is a pod's pair role (server, client), else its
// gpuaccept.dev/role, else "index" and its Job completion index.
func podRole(p *corev1.Pod) string {
	if r := p.Labels["gpuaccept.dev/pair-role"]; r != "" {
		return r
	}
	if r := p.Labels[LabelRole]; r != "" {
		return r
	}
	return "index" + p.Annotations["batch.kubernetes.io/job-completion-index"]
}

// bannerLog writes ib_write_bw's banner while it waits, in the CRI log
// format kwok serves, and returns the file and the text.
func bannerLog(t *testing.T) (string, string) {
	t.Helper()
	return criText(t, "************************************\n* Waiting for client to connect... *\n************************************\n")
}

// perftestLog is a real ib_write_bw server output (the ssh launcher's
// recording of seed 004, see ../ssh/testdata/README.md) as kwok serves it:
// it holds the server's readiness line and the rule that releases the
// next pair's client (ibperf's clientReady), both of which a pod must
// print for the steps after it to start.
func perftestLog(t *testing.T) (string, string) {
	t.Helper()
	data, err := os.ReadFile("../ssh/testdata/ib_write_bw/server.log")
	assert.NilError(t, err)
	return criText(t, string(data))
}

// criText writes text in the CRI log format kwok serves and returns the
// file and the text.
func criText(t *testing.T, text string) (string, string) {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n") {
		fmt.Fprintf(&b, "2026-11-30T07:00:00.000000000Z stdout F %s\n", strings.TrimSuffix(line, "\n"))
	}
	p := filepath.Join(t.TempDir(), "server.log")
	assert.NilError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	return p, text
}

// Pinned to hosts (--hosts, as the localiser pins each of its runs), the
// scheduler binds every pod to exactly the nodes given (pod.spec.nodeName,
// seen by a watch while the run goes), and the run goes end to end as an
// unpinned one does: a 1-node test on either node, a 2-node MPI test over
// both (one pod each; which index lands where is the scheduler's), a
// server/client pair the other way round from the node order, and a host
// that is no node of the cluster, which the scheduler refuses in its words.
func TestPinnedRunsBindToGivenNodes(t *testing.T) {
	k := needCluster(t)
	nodes := strings.Fields(os.Getenv("GPUACCEPT_K8S_NODES"))
	if len(nodes) < 2 {
		testenv.Missing(t, "GPUACCEPT_K8S_NODES names %d nodes, want 2", len(nodes))
	}
	n0, n1 := nodes[0], nodes[1]
	cases := []struct {
		name  string
		hosts []string
		req   func(t *testing.T) launch.Request
		log   string // "nccl", "banner" or "perftest"
		want  []string
		// oneOf: the bindings are one of these (a template of several
		// pods); empty: exactly want.
		oneOf   [][]string
		hostOut []string // plan.Output.Host of each step
		unsched []string // in the step's launch error
	}{
		{name: "1 node on the second", hosts: []string{n1}, log: "nccl",
			req: func(t *testing.T) launch.Request {
				r, _ := ncclRequest(t, plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}, 2*time.Minute)
				return r
			},
			want: []string{"lead=" + n1}, hostOut: []string{n1}},
		{name: "1 node on the first", hosts: []string{n0}, log: "nccl",
			req: func(t *testing.T) launch.Request {
				r, _ := ncclRequest(t, plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}, 2*time.Minute)
				return r
			},
			want: []string{"lead=" + n0}, hostOut: []string{n0}},
		{name: "2 nodes", hosts: []string{n1, n0}, log: "nccl",
			req: func(t *testing.T) launch.Request {
				r, _ := ncclRequest(t, plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}, 2*time.Minute)
				return r
			},
			oneOf: [][]string{{"index0=" + n0, "index1=" + n1}, {"index0=" + n1, "index1=" + n0}}},
		{name: "pair, server on the second node", hosts: []string{n1, n0}, log: "banner",
			req: func(t *testing.T) launch.Request {
				r := writeBWPairs(t, "mlx5_0:mlx5_1", []string{n1, n0})
				r.Timeout = time.Minute
				return r
			},
			want: []string{"client=" + n0, "server=" + n1}, hostOut: []string{n1, n0}},
		// The first client's rule line releases the second client.
		{name: "two pairs", hosts: []string{n0, n1}, log: "perftest",
			req: func(t *testing.T) launch.Request {
				r := writeBWPairs(t, "mlx5_0:mlx5_1,mlx5_2:mlx5_3", []string{n0, n1})
				r.Timeout = time.Minute
				return r
			},
			want: []string{"client=" + n1, "client=" + n1, "server=" + n0, "server=" + n0}, hostOut: []string{n0, n0, n1, n1}},
		{name: "no such node", hosts: []string{"gpu-node-9"}, log: "nccl",
			req: func(t *testing.T) launch.Request {
				r, _ := ncclRequest(t, plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}, 2*time.Minute)
				return r
			},
			unsched: []string{"Unschedulable: 0/", "node(s) didn't satisfy plugin(s) [NodeAffinity]", "(pinned by --hosts to node gpu-node-9)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := k.namespace(t)
			text := ""
			switch c.log {
			case "banner", "perftest":
				var p string
				p, text = bannerLog(t)
				if c.log == "perftest" {
					p, text = perftestLog(t)
				}
				k.serveLogs(t, ns, p)
			default:
				k.serveLogs(t, ns, criLog(t, healthyRun))
			}
			l, err := New(Config{Kubeconfig: k.kubeconfig, Namespace: ns, SKU: h200(t, sku.Kubernetes{}), Hosts: c.hosts, PendingTimeout: 2 * time.Second})
			assert.NilError(t, err)
			l.Progress = io.Discard
			req := c.req(t)
			req.Dir = t.TempDir()
			stop := k.bindings(t, ns, l.RunID)
			outs, err := l.Launch(context.Background(), req)
			got := stop()
			assert.NilError(t, err)
			if c.unsched != nil {
				for _, want := range c.unsched {
					assert.Assert(t, strings.Contains(outs[0].LaunchError, want), outs[0].LaunchError)
				}
				assert.DeepEqual(t, got, []string(nil))
				assert.DeepEqual(t, k.leftovers(t, ns, l.RunID), []string(nil))
				return
			}
			for i, o := range outs {
				assert.Equal(t, o.LaunchError, "", o.Step)
				assert.Equal(t, o.ExitCode, 0, o.Step)
				if c.hostOut != nil {
					assert.Equal(t, o.Host, c.hostOut[i], o.Step)
				}
				if text != "" {
					log, err := os.ReadFile(o.Log)
					assert.NilError(t, err)
					assert.Equal(t, string(log), text, o.Step)
				}
			}
			if c.oneOf == nil {
				assert.DeepEqual(t, got, c.want)
			} else {
				ok := false
				for _, w := range c.oneOf {
					ok = ok || strings.Join(w, " ") == strings.Join(got, " ")
				}
				assert.Assert(t, ok, "bound %v, want one of %v", got, c.oneOf)
			}
			assert.DeepEqual(t, k.leftovers(t, ns, l.RunID), []string(nil))
		})
	}
}

// templatePods makes the pods each pod template of objs stands for (its
// parallelism or replicas, else one), as the flavor's controller would,
// kept running by kwok so the anti-affinity counts them.
func templatePods(t *testing.T, objs []*unstructured.Unstructured) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	eachPodTemplate(objs, func(owner, tmpl map[string]any) {
		if owner == nil {
			return
		}
		n, found, _ := unstructured.NestedInt64(owner, "parallelism")
		if !found {
			n, found, _ = unstructured.NestedInt64(owner, "replicas")
		}
		if !found {
			n = 1
		}
		for i := int64(0); i < n; i++ {
			var p corev1.Pod
			assert.NilError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &p))
			p.GenerateName = "pin-"
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations["gpuaccept.dev/kwok-hang"] = "true"
			if _, ok := p.Labels[LabelRole]; !ok {
				p.Annotations["batch.kubernetes.io/job-completion-index"] = fmt.Sprint(i)
			}
			out = append(out, &p)
		}
	})
	return out
}

// The pod templates of every flavor, pinned, are placed by the real
// scheduler on the nodes given: leads, servers, clients and 1-node pods on
// their node exactly, the pods of a template of several on one node each
// of its set (the JobSet, Volcano and MPIJob controllers are not in the
// test cluster: the test makes the pods their controllers would, from the
// rendered templates). "lead=*": the MPIJob launcher pod, on any of the
// hosts.
func TestEveryFlavorPinnedTemplatesBind(t *testing.T) {
	k := needCluster(t)
	nodes := strings.Fields(os.Getenv("GPUACCEPT_K8S_NODES"))
	if len(nodes) < 2 {
		testenv.Missing(t, "GPUACCEPT_K8S_NODES names %d nodes, want 2", len(nodes))
	}
	n0, n1 := nodes[0], nodes[1]
	paired := func() launch.Request {
		r := pairedWriteBW()
		r.Topology.Hosts = []string{n1, n0}
		r.Plan.Steps[1].Argv[len(r.Plan.Steps[1].Argv)-1] = n1
		return r
	}
	pinned := func(r launch.Request, hosts ...string) launch.Request { r.Topology.Hosts = hosts; return r }
	pair := []string{"client=" + n0, "server=" + n1}
	cases := []struct {
		flavor string
		req    launch.Request
		want   []string
	}{
		{FlavorJob, pinned(allGather(1, 4), n1), []string{"lead=" + n1}},
		{FlavorJob, pinned(allGather(2, 4), n1, n0), []string{"index0=*", "index1=*"}},
		{FlavorJob, paired(), pair},
		{FlavorJobSet, pinned(allGather(1, 4), n1), []string{"lead=" + n1}},
		{FlavorJobSet, pinned(allGather(2, 4), n1, n0), []string{"lead=" + n1, "worker=" + n0}},
		{FlavorJobSet, paired(), pair},
		{FlavorVolcano, pinned(allGather(1, 4), n1), []string{"lead=" + n1}},
		{FlavorVolcano, pinned(allGather(2, 4), n1, n0), []string{"lead=" + n1, "worker=" + n0}},
		{FlavorVolcano, paired(), pair},
		{FlavorMPIJob, pinned(allGather(1, 4), n1), []string{"lead=" + n1}},
		{FlavorMPIJob, pinned(allGather(2, 4), n1, n0), []string{"lead=*", "worker=*", "worker=*"}},
		{FlavorMPIJob, paired(), pair},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d-node/%s", c.flavor, c.req.Topology.Nodes, c.req.Plan.Steps[0].Name), func(t *testing.T) {
			ns := k.namespace(t)
			l, err := New(Config{SKU: h200(t, sku.Kubernetes{}), Flavor: c.flavor, Namespace: ns})
			assert.NilError(t, err)
			r, err := l.render(c.req, l.RunID+"-1", ns, nil)
			assert.NilError(t, err)
			pods := templatePods(t, r.objects())
			assert.Equal(t, len(pods), len(c.want))
			for _, p := range pods {
				_, err := k.c.core.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
				assert.NilError(t, err)
			}
			var got []string
			for end := time.Now().Add(30 * time.Second); len(got) < len(pods) && time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
				list, err := k.c.core.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
				assert.NilError(t, err)
				got = nil
				for _, p := range list.Items {
					if p.Spec.NodeName != "" {
						got = append(got, podRole(&p)+"="+p.Spec.NodeName)
					}
				}
			}
			sort.Strings(got)
			assert.Equal(t, len(got), len(c.want), "bound: %v", got)
			// A set's pods: each on one of the hosts, one pod per node.
			perRole := map[string]map[string]int{}
			for i, g := range got {
				role, node, _ := strings.Cut(g, "=")
				wrole, wnode, _ := strings.Cut(c.want[i], "=")
				assert.Equal(t, role, wrole, "bound: %v", got)
				if wnode != "*" {
					assert.Equal(t, node, wnode, "%s, bound: %v", role, got)
					continue
				}
				assert.Assert(t, node == n0 || node == n1, "%s on %s, outside the hosts", role, node)
				if perRole[strings.TrimRight(role, "0123456789")] == nil {
					perRole[strings.TrimRight(role, "0123456789")] = map[string]int{}
				}
				perRole[strings.TrimRight(role, "0123456789")][node]++
			}
			for role, m := range perRole {
				if role != "lead" {
					assert.DeepEqual(t, m, map[string]int{n0: 1, n1: 1})
				}
			}
		})
	}
}
