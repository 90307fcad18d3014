package k8s

// Integration tests against the real control plane that
// scripts/testenv.sh up k8s starts: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, and kwok standing in for the
// kubelets of two GPU nodes (gpu-node-0/1, 8 nvidia.com/gpu each). Jobs,
// pods, scheduling, garbage collection and RBAC are the real ones; kwok
// marks a Job's pods Succeeded as soon as they run and serves their logs
// from the files ClusterLogs objects name.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
	"github.com/gpuaccept/gpuaccept/plugins/nccl"
)

const recordings = "../../testdata/recordings"

// Real H200 outputs: a healthy all_reduce on 1 node x 2 GPUs, and the same
// test with NCCL_P2P_DISABLE=1, whose bandwidth is far below the baseline.
var (
	healthyRun  = recordings + "/h200-1x2-healthy/nccl.all_reduce/all_reduce"
	degradedRun = recordings + "/h200x2-2026-11-30/ga-p2poff/raw/nccl.all_reduce/all_reduce"
)

type cluster struct {
	kubeconfig string
	c          *clients
}

func needCluster(t *testing.T) *cluster {
	t.Helper()
	kc := testenv.Need(t, "GPUACCEPT_K8S_KUBECONFIG", "k8s")
	c, err := dial(kc, "", "default")
	assert.NilError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.core.Discovery().ServerVersion(); err != nil || ctx.Err() != nil {
		testenv.Missing(t, "API server of %s unreachable: %v", kc, err)
	}
	return &cluster{kubeconfig: kc, c: c}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// namespace makes a fresh namespace, deleted after the test, and waits
// for its default ServiceAccount (pods are refused until it exists).
func (k *cluster) namespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns := "gpuaccept-test-" + randHex(4)
	_, err := k.c.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	t.Cleanup(func() { _ = k.c.core.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := k.c.core.CoreV1().ServiceAccounts(ns).Watch(wctx, metav1.ListOptions{FieldSelector: "metadata.name=default"})
	assert.NilError(t, err)
	defer w.Stop()
	if _, err := k.c.core.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
		return ns
	}
	select {
	case <-w.ResultChan():
	case <-wctx.Done():
		t.Fatalf("namespace %s got no default ServiceAccount in 30 s (is kube-controller-manager up?)", ns)
	}
	return ns
}

var gvrClusterLogs = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "clusterlogs"}

// serveLogs makes kwok serve file (CRI format) as the log of every pod in
// ns.
func (k *cluster) serveLogs(t *testing.T, ns, file string) {
	t.Helper()
	o := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterLogs",
		"metadata": map[string]any{"name": ns},
		"spec": map[string]any{
			"selector": map[string]any{"matchNamespaces": []any{ns}},
			"logs":     []any{map[string]any{"containers": []any{containerName}, "logsFile": file, "follow": false}},
		},
	}}
	_, err := k.c.dyn.Resource(gvrClusterLogs).Create(context.Background(), o, metav1.CreateOptions{})
	assert.NilError(t, err)
	t.Cleanup(func() { _ = k.c.dyn.Resource(gvrClusterLogs).Delete(context.Background(), ns, metav1.DeleteOptions{}) })
}

// criLog writes what a container printed (the recorded log, then the
// recorded -J JSON as the pod script prints it) in the CRI log format that
// kwok serves: "<RFC3339Nano time> stdout F <line>".
func criLog(t *testing.T, run string) string {
	t.Helper()
	text, err := os.ReadFile(run + ".log")
	assert.NilError(t, err)
	name := filepath.Base(run) + ".json"
	js, err := os.ReadFile(filepath.Join(run+".files", name))
	assert.NilError(t, err)
	out := string(text) + fileBegin + name + " <==\n" + base64.StdEncoding.EncodeToString(js) + "\n" + fileEnd + "\n"
	var b strings.Builder
	ts := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	for i, line := range strings.SplitAfter(out, "\n") {
		if line == "" {
			continue
		}
		tag := "F"
		if !strings.HasSuffix(line, "\n") {
			tag = "P"
		}
		fmt.Fprintf(&b, "%s stdout %s %s\n", ts.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), tag, strings.TrimSuffix(line, "\n"))
	}
	p := filepath.Join(t.TempDir(), "cri.log")
	assert.NilError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	return p
}

// h200 is the built-in H200 SKU with a kubernetes section added.
func h200(t *testing.T, k sku.Kubernetes) *sku.SKU {
	t.Helper()
	cat, err := sku.Load(baselines.FS, "baselines")
	assert.NilError(t, err)
	s, err := cat.Get("h200")
	assert.NilError(t, err)
	cp := *s
	if k.Image == "" {
		k.Image = "registry.example/nccl-tests:2.19.6"
	}
	if k.GPUResource == "" {
		k.GPUResource = "nvidia.com/gpu"
	}
	cp.Kubernetes = &k
	return &cp
}

func (k *cluster) launcher(t *testing.T, kubeconfig, ns string, s *sku.SKU, flavor string) *Launcher {
	t.Helper()
	l, err := New(Config{Kubeconfig: kubeconfig, Namespace: ns, SKU: s, Flavor: flavor, PendingTimeout: 2 * time.Second})
	assert.NilError(t, err)
	l.Progress = io.Discard
	return l
}

// ncclRequest is what the runner hands a launcher for nccl.all_reduce.
func ncclRequest(t *testing.T, topo plan.Topology, timeout time.Duration) (launch.Request, map[string]string) {
	t.Helper()
	params := map[string]string{"minbytes": "8", "maxbytes": "4G", "stepfactor": "2"}
	pl, err := nccl.Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: "all_reduce", Params: params, Topology: topo})
	assert.NilError(t, err)
	return launch.Request{Test: "nccl.all_reduce", Plan: pl, Topology: topo, Dir: t.TempDir(), Timeout: timeout}, params
}

var leftoverKinds = []schema.GroupVersionResource{gvrJob, gvrPod, gvrService, gvrSecret}

// leftovers lists every object of the run still in the namespace.
func (k *cluster) leftovers(t *testing.T, ns, runID string) []string {
	t.Helper()
	var out []string
	for _, gvr := range leftoverKinds {
		list, err := k.c.dyn.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: LabelRun + "=" + runID})
		assert.NilError(t, err)
		for _, it := range list.Items {
			out = append(out, gvr.Resource+"/"+it.GetName())
		}
	}
	return out
}

// A single-node run goes the whole way: Job, pod scheduled on a GPU node,
// run, log and -J JSON collected through the log, parsed by the nccl
// plugin and judged against the H200 baseline; the healthy recording
// passes, the degraded one fails; nothing is left in the cluster.
func TestSingleNodeRunJudged(t *testing.T) {
	k := needCluster(t)
	cases := []struct {
		name string
		run  string
		want result.Status
	}{
		{"healthy", healthyRun, result.Pass},
		{"p2p-off", degradedRun, result.Fail},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := k.namespace(t)
			k.serveLogs(t, ns, criLog(t, c.run))
			s := h200(t, sku.Kubernetes{ShmSize: "64Gi", IPCLock: true})
			l := k.launcher(t, k.kubeconfig, ns, s, FlavorJob)
			topo := plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}
			req, params := ncclRequest(t, topo, 2*time.Minute)
			outs, err := l.Launch(context.Background(), req)
			assert.NilError(t, err)
			assert.Equal(t, len(outs), 1)
			o := outs[0]
			assert.Equal(t, o.LaunchError, "")
			assert.Equal(t, o.ExitCode, 0)
			assert.Assert(t, strings.HasPrefix(o.Host, "gpu-node-"), o.Host)
			want, err := os.ReadFile(c.run + ".log")
			assert.NilError(t, err)
			got, err := os.ReadFile(o.Log)
			assert.NilError(t, err)
			assert.Equal(t, string(got), string(want), "the step's log is the recorded output, without the file block")
			wantJS, err := os.ReadFile(filepath.Join(c.run+".files", "all_reduce.json"))
			assert.NilError(t, err)
			gotJS, err := os.ReadFile(o.Files["all_reduce.json"])
			assert.NilError(t, err)
			assert.Equal(t, string(gotJS), string(wantJS))

			parsed, err := nccl.Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "all_reduce", Params: params, Topology: topo, Outputs: outs})
			assert.NilError(t, err)
			res := runner.Judge(s, "nccl.all_reduce", topo, parsed)
			assert.Equal(t, res.Status, c.want, res.Message)
			assert.DeepEqual(t, k.leftovers(t, ns, l.RunID), []string(nil))
		})
	}
}

// Two nodes: an Indexed Job of two pods behind a headless Service, the key
// Secret mounted, one pod per node; the lead's log is the step's, the
// other pod's is kept beside it.
func TestTwoNodeRun(t *testing.T) {
	k := needCluster(t)
	ns := k.namespace(t)
	k.serveLogs(t, ns, criLog(t, healthyRun))
	l := k.launcher(t, k.kubeconfig, ns, h200(t, sku.Kubernetes{}), FlavorJob)
	req, _ := ncclRequest(t, plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}, 2*time.Minute)
	assert.Equal(t, req.Plan.Steps[0].Procs, 16)
	outs, err := l.Launch(context.Background(), req)
	assert.NilError(t, err)
	o := outs[0]
	assert.Equal(t, o.LaunchError, "")
	assert.Equal(t, o.ExitCode, 0)
	assert.Assert(t, strings.Contains(o.Command, "mpirun --allow-run-as-root -np 16 --map-by ppr:8:node --host "), o.Command)
	others, err := filepath.Glob(filepath.Join(req.Dir, layout.StepFiles("all_reduce"), "pod-*.log"))
	assert.NilError(t, err)
	assert.Equal(t, len(others), 1, "the worker pod's log is kept")
	assert.Assert(t, !strings.Contains(filepath.Base(others[0]), "-0-"), "the lead (index 0) is the step's log, not a file: %s", others[0])
	assert.DeepEqual(t, k.leftovers(t, ns, l.RunID), []string(nil))
}

// A pod the scheduler cannot place ends the step with the scheduler's own
// words, after PendingTimeout, and leaves nothing behind.
func TestUnschedulableReported(t *testing.T) {
	k := needCluster(t)
	cases := []struct {
		name string
		kube sku.Kubernetes
		topo plan.Topology
		want string
	}{
		{"node selector", sku.Kubernetes{NodeSelector: map[string]string{"cloud.google.com/gke-accelerator": "nvidia-gb200"}}, plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}, "didn't match Pod's node affinity/selector"},
		{"too many GPUs", sku.Kubernetes{}, plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 16}}, "Insufficient nvidia.com/gpu"},
		// kwok ends pods at once, and ended pods do not count for
		// anti-affinity: keep them running, as real ranks would be.
		{"more nodes than the cluster has", sku.Kubernetes{Annotations: map[string]string{"gpuaccept.dev/kwok-hang": "true"}}, plan.Topology{Scope: plan.Scope{Nodes: 3, GPUsPerNode: 4}}, "didn't match pod anti-affinity rules"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := k.namespace(t)
			l := k.launcher(t, k.kubeconfig, ns, h200(t, c.kube), FlavorJob)
			req, _ := ncclRequest(t, c.topo, 2*time.Minute)
			start := time.Now()
			outs, err := l.Launch(context.Background(), req)
			assert.NilError(t, err)
			o := outs[0]
			assert.Assert(t, strings.Contains(o.LaunchError, "cannot be scheduled"), o.LaunchError)
			assert.Assert(t, strings.Contains(o.LaunchError, "Unschedulable: "), o.LaunchError)
			assert.Assert(t, strings.Contains(o.LaunchError, c.want), o.LaunchError)
			assert.Equal(t, o.ExitCode, -1)
			assert.Assert(t, time.Since(start) < time.Minute, "reported after %s", time.Since(start))
			log, err := os.ReadFile(o.Log)
			assert.NilError(t, err)
			assert.Assert(t, strings.Contains(string(log), c.want), "the log says why too: %s", log)
			assert.DeepEqual(t, k.leftovers(t, ns, l.RunID), []string(nil))
		})
	}
}

// What the kubelet reports ends the step at once, in its words: an image
// that cannot be pulled, a container killed for memory. (kwok stands in for
// the kubelet: testenv's stages set these statuses on annotated pods.)
func TestPodFailuresReported(t *testing.T) {
	k := needCluster(t)
	cases := []struct {
		fail string
		want []string
	}{
		{"ImagePullBackOff", []string{"container main: ImagePullBackOff: Back-off pulling image \"registry.example/nccl-tests:2.19.6\""}},
		{"OOMKilled", []string{"container main: OOMKilled (exit 137)", "kubernetes.resources.memory"}},
	}
	for _, c := range cases {
		t.Run(c.fail, func(t *testing.T) {
			ns := k.namespace(t)
			s := h200(t, sku.Kubernetes{Annotations: map[string]string{"gpuaccept.dev/kwok-fail": c.fail}})
			l := k.launcher(t, k.kubeconfig, ns, s, FlavorJob)
			req, _ := ncclRequest(t, plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 8}}, time.Minute)
			start := time.Now()
			outs, err := l.Launch(context.Background(), req)
			assert.NilError(t, err)
			for _, w := range c.want {
				assert.Assert(t, strings.Contains(outs[0].LaunchError, w), outs[0].LaunchError)
			}
			assert.Assert(t, time.Since(start) < 30*time.Second, "took %s", time.Since(start))
			assert.DeepEqual(t, k.leftovers(t, ns, l.RunID), []string(nil))
		})
	}
}

// A run that hangs (kwok keeps pods annotated gpuaccept.dev/kwok-hang
// running) is stopped at the timeout: the step says so and every object is
// gone when Launch returns, the pods included.
func TestTimeoutLeavesNothing(t *testing.T) {
	k := needCluster(t)
	for _, flavorNodes := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d-node", flavorNodes), func(t *testing.T) {
			ns := k.namespace(t)
			s := h200(t, sku.Kubernetes{Annotations: map[string]string{"gpuaccept.dev/kwok-hang": "true"}})
			l := k.launcher(t, k.kubeconfig, ns, s, FlavorJob)
			req, _ := ncclRequest(t, plan.Topology{Scope: plan.Scope{Nodes: flavorNodes, GPUsPerNode: 8}}, 4*time.Second)
			start := time.Now()
			outs, err := l.Launch(context.Background(), req)
			assert.NilError(t, err)
			assert.Assert(t, strings.Contains(outs[0].LaunchError, "timed out after"), outs[0].LaunchError)
			assert.Assert(t, strings.Contains(outs[0].LaunchError, "Running"), "says where the pods were: %s", outs[0].LaunchError)
			assert.Equal(t, outs[0].ExitCode, -1)
			assert.Assert(t, time.Since(start) < time.Minute, "took %s", time.Since(start))
			assert.DeepEqual(t, k.leftovers(t, ns, l.RunID), []string(nil))
		})
	}
}

// Ctrl-C (the context cancelled) cleans up the same way.
func TestCancelLeavesNothing(t *testing.T) {
	k := needCluster(t)
	ns := k.namespace(t)
	s := h200(t, sku.Kubernetes{Annotations: map[string]string{"gpuaccept.dev/kwok-hang": "true"}})
	l := k.launcher(t, k.kubeconfig, ns, s, FlavorJob)
	req, _ := ncclRequest(t, plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 8}}, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(3*time.Second, cancel)
	outs, err := l.Launch(ctx, req)
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(outs[0].LaunchError, "cancelled"), outs[0].LaunchError)
	assert.DeepEqual(t, k.leftovers(t, ns, l.RunID), []string(nil))
}

// decodeAll reads a multi-document YAML file into objects.
func decodeAll(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	assert.NilError(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			return out
		} else {
			assert.NilError(t, err, path)
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

var gvrCRD = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs installs the JobSet, Volcano Job and MPIJob CRDs that
// scripts/testenv.sh took from their modules, and waits until they serve.
func (k *cluster) installCRDs(t *testing.T) {
	t.Helper()
	dir := testenv.Need(t, "GPUACCEPT_K8S_CRDS", "k8s")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	assert.NilError(t, err)
	assert.Equal(t, len(files), 3, "want the JobSet, Volcano Job and MPIJob CRDs in %s", dir)
	ctx := context.Background()
	for _, f := range files {
		for _, o := range decodeAll(t, f) {
			_, err := k.c.dyn.Resource(gvrCRD).Create(ctx, o, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("install CRD from %s: %v", f, err)
			}
		}
	}
	for _, gvr := range []schema.GroupVersionResource{gvrJobSet, gvrVolcano, gvrMPIJob} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := k.c.dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("CRD for %s not served after 30 s: %v", gvr, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// The API server accepts, with strict field validation (an unknown or
// misplaced field is an error), every manifest of every flavor: the
// built-in Job and Service, and the JobSet, Volcano Job and MPIJob against
// the CRDs those projects publish.
func TestManifestsAcceptedByAPIServer(t *testing.T) {
	k := needCluster(t)
	k.installCRDs(t)
	ns := k.namespace(t)
	reqs := map[string]launch.Request{"2-node": allGather(2, 4), "1-node": allGather(1, 4), "paired": pairedWriteBW()}
	// Pinned to hosts (--hosts), every pod template carries a node
	// affinity: the CRDs' schemas must take it too.
	for name, req := range map[string]launch.Request{"2-node-pinned": allGather(2, 4), "1-node-pinned": allGather(1, 4), "3-node-pinned": allGather(3, 4)} {
		req.Topology.Hosts = []string{"gpu-node-1", "gpu-node-0", "gpu-node-2"}[:req.Topology.Nodes]
		reqs[name] = req
	}
	pinnedPair := pairedWriteBW()
	pinnedPair.Topology.Hosts = []string{"gpu-node-1", "gpu-node-0"}
	reqs["paired-pinned"] = pinnedPair
	for _, flavor := range Flavors {
		for rname, req := range reqs {
			t.Run(flavor+"/"+rname, func(t *testing.T) {
				l, err := New(Config{SKU: testSKU(t), Flavor: flavor, Namespace: ns})
				assert.NilError(t, err)
				keys, err := newSSHKeys("test")
				assert.NilError(t, err)
				r, err := l.render(req, l.RunID+"-1", ns, keys)
				assert.NilError(t, err)
				for _, o := range r.objects() {
					gvr, err := gvrOf(o)
					assert.NilError(t, err)
					_, err = k.c.dyn.Resource(gvr).Namespace(ns).Create(context.Background(), o,
						metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
					assert.NilError(t, err, "%s %s", o.GetKind(), o.GetName())
				}
			})
		}
	}
}

// applyRBAC applies deploy/rbac.yaml in ns: the Role, bound to the
// testenv's gpuaccept-user, who has no other rights.
func (k *cluster) applyRBAC(t *testing.T, ns string) {
	t.Helper()
	for _, o := range decodeAll(t, "../../deploy/rbac.yaml") {
		gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: strings.ToLower(o.GetKind()) + "s"}
		_, err := k.c.dyn.Resource(gvr).Namespace(ns).Create(context.Background(), o, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
}

// The Role in deploy/ is enough: a user bound only to it runs a 2-node
// test (Secret, Service, Job; follows pods; reads logs; deletes it all)
// and cleans up by run id. Without the binding the same user is refused.
func TestRBACRoleIsEnough(t *testing.T) {
	k := needCluster(t)
	user := testenv.Need(t, "GPUACCEPT_K8S_USER_KUBECONFIG", "k8s")
	ns := k.namespace(t)
	k.applyRBAC(t, ns)
	k.serveLogs(t, ns, criLog(t, healthyRun))
	l := k.launcher(t, user, ns, h200(t, sku.Kubernetes{}), FlavorJob)
	req, _ := ncclRequest(t, plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}, 2*time.Minute)
	outs, err := l.Launch(context.Background(), req)
	assert.NilError(t, err)
	assert.Equal(t, outs[0].LaunchError, "")
	assert.Equal(t, outs[0].ExitCode, 0)
	assert.DeepEqual(t, k.leftovers(t, ns, l.RunID), []string(nil))

	// Clean, as the same user, finds and deletes what a crashed run left.
	keys, err := newSSHKeys("test")
	assert.NilError(t, err)
	r, err := l.render(req, l.RunID+"-9", ns, keys)
	assert.NilError(t, err)
	for _, o := range r.objects() {
		gvr, _ := gvrOf(o)
		_, err := k.c.dyn.Resource(gvr).Namespace(ns).Create(context.Background(), o, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	n, err := Clean(context.Background(), CleanOptions{Kubeconfig: user, Namespace: ns}, l.RunID)
	assert.NilError(t, err)
	assert.Assert(t, n >= 3, "deleted %d", n)
	assert.DeepEqual(t, k.leftovers(t, ns, l.RunID), []string(nil))

	// The other flavors' kinds are covered too: the user may create
	// (server-side dry run: no controllers here) and delete-list them.
	k.installCRDs(t)
	uc, err := dial(user, "", ns)
	assert.NilError(t, err)
	for _, flavor := range []string{FlavorJobSet, FlavorVolcano, FlavorMPIJob} {
		lf := k.launcher(t, user, ns, testSKU(t), flavor)
		r, err := lf.render(allGather(2, 4), lf.RunID+"-1", ns, keys)
		assert.NilError(t, err)
		for _, o := range r.objects() {
			gvr, _ := gvrOf(o)
			_, err := uc.dyn.Resource(gvr).Namespace(ns).Create(context.Background(), o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			assert.NilError(t, err, "%s: %s %s", flavor, o.GetKind(), o.GetName())
		}
		_, err = Clean(context.Background(), CleanOptions{Kubeconfig: user, Namespace: ns}, lf.RunID)
		assert.NilError(t, err, flavor)
	}

	// The control: without the binding the user may do nothing.
	other := k.namespace(t)
	l2 := k.launcher(t, user, other, h200(t, sku.Kubernetes{}), FlavorJob)
	outs, err = l2.Launch(context.Background(), req)
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(outs[0].LaunchError, "forbidden"), outs[0].LaunchError)
}

// Clean removes leftovers of every kind by run id, workloads of custom
// kinds included, and leaves other runs alone.
func TestCleanByRunID(t *testing.T) {
	k := needCluster(t)
	k.installCRDs(t)
	ns := k.namespace(t)
	ctx := context.Background()
	var runs []*Launcher
	for _, flavor := range []string{FlavorJobSet, FlavorJob} {
		l := k.launcher(t, k.kubeconfig, ns, testSKU(t), flavor)
		keys, err := newSSHKeys("test")
		assert.NilError(t, err)
		r, err := l.render(allGather(2, 4), l.RunID+"-1", ns, keys)
		assert.NilError(t, err)
		for _, o := range r.objects() {
			gvr, _ := gvrOf(o)
			_, err := k.c.dyn.Resource(gvr).Namespace(ns).Create(ctx, o, metav1.CreateOptions{})
			assert.NilError(t, err)
		}
		runs = append(runs, l)
	}
	n, err := Clean(ctx, CleanOptions{Kubeconfig: k.kubeconfig, Namespace: ns}, runs[0].RunID)
	assert.NilError(t, err)
	// The JobSet and the Secret, and whatever the JobSet controller has
	// made of them by now (child Jobs carry the run's label too).
	assert.Assert(t, n >= 2, "deleted %d", n)
	list, err := k.c.dyn.Resource(gvrJobSet).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelRun + "=" + runs[0].RunID})
	assert.NilError(t, err)
	assert.Equal(t, len(list.Items), 0)
	for i := 0; len(k.leftovers(t, ns, runs[0].RunID)) > 0; i++ {
		assert.Assert(t, i < 300, "left of the cleaned run after 30 s: %v", k.leftovers(t, ns, runs[0].RunID))
		time.Sleep(100 * time.Millisecond)
	}
	assert.Assert(t, len(k.leftovers(t, ns, runs[1].RunID)) >= 3, "the other run is untouched")
	_, err = Clean(ctx, CleanOptions{Kubeconfig: k.kubeconfig, Namespace: ns}, runs[1].RunID)
	assert.NilError(t, err)
	assert.DeepEqual(t, k.leftovers(t, ns, runs[1].RunID), []string(nil))
}

// A server/client pair: the client starts once the server's log shows its
// ready marker (read from a followed log stream, the one place a stream is
// followed), and reaches the server by its pod's DNS name.
func TestPairedServerClient(t *testing.T) {
	k := needCluster(t)
	ns := k.namespace(t)
	// ib_write_bw's banner while it waits; both pods are served this log.
	text := "************************************\n* Waiting for client to connect... *\n************************************\n"
	var b strings.Builder
	for _, line := range strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n") {
		fmt.Fprintf(&b, "2026-11-30T07:00:00.000000000Z stdout F %s\n", strings.TrimSuffix(line, "\n"))
	}
	p := filepath.Join(t.TempDir(), "server.log")
	assert.NilError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	k.serveLogs(t, ns, p)
	l, err := New(Config{Kubeconfig: k.kubeconfig, Namespace: ns, Image: "registry.example/perftest:25.04"})
	assert.NilError(t, err)
	l.Progress = io.Discard
	// Unpinned: no hosts, the client's argv names its server @host0@
	// (pin_cluster_test.go has pinned pairs).
	req := writeBWPairs(t, "mlx5_0:mlx5_1", nil)
	req.Dir, req.Timeout = t.TempDir(), time.Minute
	outs, err := l.Launch(context.Background(), req)
	assert.NilError(t, err)
	assert.Equal(t, len(outs), 2)
	for _, o := range outs {
		assert.Equal(t, o.LaunchError, "", o.Step)
		assert.Equal(t, o.ExitCode, 0, o.Step)
		got, err := os.ReadFile(o.Log)
		assert.NilError(t, err)
		assert.Equal(t, string(got), text)
	}
	assert.Equal(t, outs[0].Role, "server")
	want := l.RunID + "-1-server-0-0." + l.RunID + "-1-server-0"
	assert.Assert(t, strings.HasSuffix(outs[1].Command, " "+want), outs[1].Command)
	assert.DeepEqual(t, k.leftovers(t, ns, l.RunID), []string(nil))
}

// The pods the Job controller makes from a rendered 2-node Job carry
// GPUACCEPT_HOSTS, and it names exactly those pods, by the DNS names their
// hostname and subdomain give them, in completion index order (kwok runs
// no container, so the pod spec is as far as the value can be followed).
func TestPodsCarryHostsEnv(t *testing.T) {
	k := needCluster(t)
	ns := k.namespace(t)
	l, err := New(Config{SKU: testSKU(t), Namespace: ns})
	assert.NilError(t, err)
	keys, err := newSSHKeys("test")
	assert.NilError(t, err)
	r, err := l.render(allGather(2, 4), l.RunID+"-1", ns, keys)
	assert.NilError(t, err)
	ctx := context.Background()
	for _, o := range r.objects() {
		gvr, err := gvrOf(o)
		assert.NilError(t, err)
		_, err = k.c.dyn.Resource(gvr).Namespace(ns).Create(ctx, o, metav1.CreateOptions{})
		assert.NilError(t, err, "%s %s", o.GetKind(), o.GetName())
	}
	var pods []corev1.Pod
	deadline := time.Now().Add(30 * time.Second)
	for len(pods) < 2 {
		list, err := k.c.core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelRun + "=" + l.RunID})
		assert.NilError(t, err)
		pods = list.Items
		if time.Now().After(deadline) {
			t.Fatalf("the Job controller made %d of 2 pods in 30 s", len(pods))
		}
		time.Sleep(200 * time.Millisecond)
	}
	names := make([]string, len(pods))
	var values []string
	for _, p := range pods {
		i, err := strconv.Atoi(p.Annotations["batch.kubernetes.io/job-completion-index"])
		assert.NilError(t, err, p.Name)
		names[i] = p.Spec.Hostname + "." + p.Spec.Subdomain
		for _, e := range p.Spec.Containers[0].Env {
			if e.Name == "GPUACCEPT_HOSTS" {
				values = append(values, e.Value)
			}
		}
	}
	want := strings.Join(names, ",")
	assert.DeepEqual(t, values, []string{want, want})
	assert.DeepEqual(t, names, r.steps[0].hosts)
}
