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
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || p.Spec.NodeName == "" {
				continue
			}
			role := p.Labels["gpuaccept.dev/pair-role"]
			if role == "" {
				role = p.Labels[LabelRole]
			}
			if role == "" {
				role = "index" + p.Annotations["batch.kubernetes.io/job-completion-index"]
			}
			mu.Lock()
			bound[p.Name] = role + "=" + p.Spec.NodeName
			mu.Unlock()
		}
	}()
	return func() []string {
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

// bannerLog writes ib_write_bw's banner while it waits, in the CRI log
// format kwok serves, and returns the file and the text.
func bannerLog(t *testing.T) (string, string) {
	t.Helper()
	text := "************************************\n* Waiting for client to connect... *\n************************************\n"
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
		log   string // "nccl" or "banner"
		want  []string
		// oneOf: the bindings are one of these (a template of several
		// pods); empty: exactly want.
		oneOf   [][]string
		hostOut []string // plan.Output.Host of each step
		unsched []string // in the step's launch error
	}{
		{name: "1 node on the second", hosts: []string{n1}, log: "nccl",
			req: func(t *testing.T) launch.Request {
				r, _ := ncclRequest(t, plan.Topology{Nodes: 1, GPUsPerNode: 2}, 2*time.Minute)
				return r
			},
			want: []string{"lead=" + n1}, hostOut: []string{n1}},
		{name: "1 node on the first", hosts: []string{n0}, log: "nccl",
			req: func(t *testing.T) launch.Request {
				r, _ := ncclRequest(t, plan.Topology{Nodes: 1, GPUsPerNode: 2}, 2*time.Minute)
				return r
			},
			want: []string{"lead=" + n0}, hostOut: []string{n0}},
		{name: "2 nodes", hosts: []string{n1, n0}, log: "nccl",
			req: func(t *testing.T) launch.Request {
				r, _ := ncclRequest(t, plan.Topology{Nodes: 2, GPUsPerNode: 8}, 2*time.Minute)
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
		{name: "two pairs", hosts: []string{n0, n1}, log: "banner",
			req: func(t *testing.T) launch.Request {
				r := writeBWPairs(t, "mlx5_0:mlx5_1,mlx5_2:mlx5_3", []string{n0, n1})
				r.Timeout = time.Minute
				return r
			},
			want: []string{"client=" + n1, "client=" + n1, "server=" + n0, "server=" + n0}, hostOut: []string{n0, n0, n1, n1}},
		{name: "no such node", hosts: []string{"gpu-node-9"}, log: "nccl",
			req: func(t *testing.T) launch.Request {
				r, _ := ncclRequest(t, plan.Topology{Nodes: 1, GPUsPerNode: 2}, 2*time.Minute)
				return r
			},
			unsched: []string{"Unschedulable: 0/2 nodes are available: 2 node(s) didn't satisfy plugin(s) [NodeAffinity]", "(pinned by --hosts to node gpu-node-9)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := k.namespace(t)
			text := ""
			if c.log == "banner" {
				var p string
				p, text = bannerLog(t)
				k.serveLogs(t, ns, p)
			} else {
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
