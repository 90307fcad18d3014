package main

// The whole pipeline in pods that really run, on the kubelet nodes of
// scripts/testenv.sh up k8s (two kubelets, containerd, CNI bridge,
// CoreDNS): the lead pod starts sshd, waits for its worker over the pods'
// DNS names, runs mpirun across both pods, and the stand-in inside the test
// image replays seed 004's recorded MI355X output; gpuaccept collects the
// real containers' logs and judges them against the mi355x baseline.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

var runIDPattern = regexp.MustCompile(`\bga-[0-9a-f]{8}\b`)

// runID is the run id gpuaccept gave the test's objects, read from the pod
// DNS names in the commands it recorded (outputs.json) or, where the
// command names none (mpijob: the operator's hostfile), from the names of
// the pods' logs kept.
func runID(t *testing.T, out, test string) string {
	t.Helper()
	text := readFile(t, filepath.Join(out, layout.Raw, test, layout.Outputs))
	logs, _ := filepath.Glob(filepath.Join(out, layout.Raw, test, "*.files", "pod-*.log"))
	id := runIDPattern.FindString(text + " " + strings.Join(logs, " "))
	assert.Assert(t, id != "", "no run id in %s's outputs.json", test)
	return id
}

// watchPods records, while a test runs, the node of every pod of ns that
// ran (the pods are deleted by the time gpuaccept returns); stop ends the
// watch and returns the nodes, sorted, once each.
func watchPods(t *testing.T, core *kubernetes.Clientset, ns string) (stop func() []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := core.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	seen := map[string]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && p.Status.Phase != corev1.PodPending && p.Spec.NodeName != "" {
				seen[p.Spec.NodeName] = true
			}
		}
	}()
	return func() []string {
		cancel()
		w.Stop()
		<-done
		var nodes []string
		for n := range seen {
			nodes = append(nodes, n)
		}
		sort.Strings(nodes)
		return nodes
	}
}

// kubeletNamespace makes a namespace for one test on the kubelet nodes,
// deleted after it, once its default ServiceAccount exists.
func kubeletNamespace(t *testing.T, kc string) (*kubernetes.Clientset, string) {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	assert.NilError(t, err)
	core, err := kubernetes.NewForConfig(rc)
	assert.NilError(t, err)
	ctx := context.Background()
	ns := "gpuaccept-kubelet-" + randomHex(t, 4)
	_, err = core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	t.Cleanup(func() { _ = core.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	for i := 0; ; i++ {
		if _, err := core.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		assert.Assert(t, i < 300, "no default ServiceAccount in %s", ns)
		time.Sleep(100 * time.Millisecond)
	}
	return core, ns
}

// A healthy pair of nodes passes and a degraded one fails, in every flavor
// whose controller the test cluster runs; the raw log is the recording the
// stand-in replayed inside the lead pod; the ranks ran on both kubelet
// nodes; and when gpuaccept returns no pod and no process of the run is
// left on the machine.
func TestK8sKubeletMultiNode(t *testing.T) {
	k := testenv.NeedKubelet(t)
	rec, err := filepath.Abs("../../testdata/recordings")
	assert.NilError(t, err)
	healthyRec := filepath.Join(rec, "mi355x-seed004", "multinode", layout.Raw)
	degradedRec := filepath.Join(rec, "mi355x-seed004-degraded", "multinode", layout.Raw)
	site := k.Site(t, rec)
	cases := []struct {
		name, flavor, recs string
		needs              string // the testenv variable saying its controller runs
		code               int
		status             result.Status
		otherPods          int // pods whose logs are kept beside the lead's
	}{
		{"job healthy", "job", healthyRec, "", 0, result.Pass, 1},
		{"job degraded", "job", degradedRec, "", 1, result.Fail, 1},
		{"jobset healthy", "jobset", healthyRec, "GPUACCEPT_K8S_JOBSET", 0, result.Pass, 1},
		{"jobset degraded", "jobset", degradedRec, "GPUACCEPT_K8S_JOBSET", 1, result.Fail, 1},
		// The operator's launcher pod runs mpirun (its log is the step's);
		// both workers' logs are kept.
		{"mpijob healthy", "mpijob", healthyRec, "GPUACCEPT_K8S_MPI_OPERATOR", 0, result.Pass, 2},
		{"mpijob degraded", "mpijob", degradedRec, "GPUACCEPT_K8S_MPI_OPERATOR", 1, result.Fail, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.needs != "" {
				testenv.Need(t, c.needs, "k8s")
			}
			core, ns := kubeletNamespace(t, k.Kubeconfig)
			out := filepath.Join(t.TempDir(), "results")
			nodes := watchPods(t, core, ns)
			code, stdout, errs := cli(t, "--sku", "mi355x", "--suite", "multinode", "--test", "rccl.all_reduce", "--nodes", "2",
				"--launcher", "k8s", "--k8s-flavor", c.flavor, "--kubeconfig", k.Kubeconfig, "--namespace", ns, "--site", site,
				"--param", "env.STANDIN_RECORDINGS="+c.recs, "--timeout", "3m", "--out", out)
			if code != c.code {
				logs, _ := filepath.Glob(filepath.Join(out, layout.Raw, "rccl.all_reduce", "*.log"))
				more, _ := filepath.Glob(filepath.Join(out, layout.Raw, "rccl.all_reduce", "*.files", "*.log"))
				for _, l := range append(logs, more...) {
					t.Logf("%s:\n%s", l, readFile(t, l))
				}
			}
			assert.Equal(t, code, c.code, stdout+errs)
			var run result.Run
			assert.NilError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, layout.Results))), &run))
			assert.Equal(t, len(run.Tests), 1)
			assert.Equal(t, run.Tests[0].Status, c.status, "%s\n%s", run.Tests[0].Message, stdout+errs)
			assert.Equal(t, readFile(t, filepath.Join(out, layout.Raw, "rccl.all_reduce", "all_reduce.log")),
				readFile(t, filepath.Join(c.recs, "rccl.all_reduce", "all_reduce.log")))
			// The worker pod's log is kept beside the lead's.
			others, err := filepath.Glob(filepath.Join(out, layout.Raw, "rccl.all_reduce", "all_reduce.files", "pod-*.log"))
			assert.NilError(t, err)
			assert.Equal(t, len(others), c.otherPods, "%v", others)
			assert.DeepEqual(t, nodes(), k.Nodes)
			id := runID(t, out, "rccl.all_reduce")
			pods, err := core.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
			assert.NilError(t, err)
			assert.Equal(t, len(pods.Items), 0, "pods left in %s", ns)
			assert.DeepEqual(t, testenv.ProcessesWith(id), []string(nil))
		})
	}
}

// A run that hangs inside real pods is stopped at --timeout: the test
// says so, and when gpuaccept returns the pods and every process they
// ran on the nodes are gone.
func TestK8sKubeletTimeout(t *testing.T) {
	k := testenv.NeedKubelet(t)
	rec, err := filepath.Abs("../../testdata/recordings")
	assert.NilError(t, err)
	core, ns := kubeletNamespace(t, k.Kubeconfig)
	out := filepath.Join(t.TempDir(), "results")
	start := time.Now()
	code, stdout, errs := cli(t, "--sku", "mi355x", "--suite", "multinode", "--test", "rccl.all_reduce", "--nodes", "2",
		"--launcher", "k8s", "--kubeconfig", k.Kubeconfig, "--namespace", ns, "--site", k.Site(t, rec),
		"--param", "env.STANDIN_RECORDINGS="+filepath.Join(rec, "mi355x-seed004", "multinode", layout.Raw),
		"--param", "env.STANDIN_SLEEP=600s", "--timeout", "40s", "--out", out)
	assert.Equal(t, code, 3, stdout+errs)
	assert.Assert(t, time.Since(start) < 2*time.Minute, "took %s", time.Since(start))
	var run result.Run
	assert.NilError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, layout.Results))), &run))
	assert.Equal(t, run.Tests[0].Status, result.Error, run.Tests[0].Message)
	assert.Assert(t, strings.Contains(run.Tests[0].Message, "timed out"), run.Tests[0].Message)
	id := runID(t, out, "rccl.all_reduce")
	pods, err := core.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	assert.NilError(t, err)
	assert.Equal(t, len(pods.Items), 0, "pods left in %s", ns)
	assert.DeepEqual(t, testenv.ProcessesWith(id), []string(nil))
	// What the hung run printed before the timeout is kept.
	assert.Assert(t, strings.Contains(readFile(t, filepath.Join(out, layout.Raw, "rccl.all_reduce", "all_reduce.log")), "# nThread"))
}

// One ib_write_bw pair across two real pods: the server pod's stand-in
// listens on perftest's port, the client pod reaches it by the server
// pod's DNS name (CoreDNS) once the server's log shows its ready line;
// both sides replay seed 004's recorded pair, and the client's table is
// judged.
func TestK8sKubeletPairedWriteBW(t *testing.T) {
	k := testenv.NeedKubelet(t)
	rec, err := filepath.Abs("../../testdata/recordings")
	assert.NilError(t, err)
	core, ns := kubeletNamespace(t, k.Kubeconfig)
	out := filepath.Join(t.TempDir(), "results")
	code, stdout, errs := cli(t, "--sku", "mi355x", "--suite", "multinode", "--test", "ibperf.write_bw", "--nodes", "2",
		"--launcher", "k8s", "--kubeconfig", k.Kubeconfig, "--namespace", ns, "--site", k.Site(t, rec),
		"--param", "ibperf.write_bw:pairs=ionic_0:ionic_0",
		"--param", "env.STANDIN_LOG="+filepath.Join(rec, "mi355x-seed004", "multinode", layout.Raw, "ibperf.write_bw", "{role}.0.log"),
		"--param", "env.STANDIN_LISTEN=argv", "--param", "env.STANDIN_DEVICE=argv",
		"--param", "env.STANDIN_PAUSE_AFTER=Waiting for client to connect",
		"--timeout", "2m", "--out", out)
	assert.Equal(t, code, 0, stdout+errs)
	var run result.Run
	assert.NilError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, layout.Results))), &run))
	assert.Equal(t, run.Tests[0].Status, result.Pass, run.Tests[0].Message)
	id := runID(t, out, "ibperf.write_bw")
	pods, err := core.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	assert.NilError(t, err)
	assert.Equal(t, len(pods.Items), 0, "pods left in %s", ns)
	assert.DeepEqual(t, testenv.ProcessesWith(id), []string(nil))
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	assert.NilError(t, err)
	return hex.EncodeToString(b)
}

// With --k8s-queue, Kueue holds the run's Job suspended until it admits it
// into the namespace's LocalQueue (the ClusterQueue's quota covers the
// two pods' GPUs), then the run goes as without a queue.
func TestK8sKubeletKueue(t *testing.T) {
	k := testenv.NeedKubelet(t)
	queue := testenv.Need(t, "GPUACCEPT_K8S_KUEUE_QUEUE", "k8s")
	rec, err := filepath.Abs("../../testdata/recordings")
	assert.NilError(t, err)
	core, ns := kubeletNamespace(t, k.Kubeconfig)
	rc, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	assert.NilError(t, err)
	dyn, err := dynamic.NewForConfig(rc)
	assert.NilError(t, err)
	ctx := context.Background()
	// Kueue manages only the namespaces labelled so (scripts/testenv.d/k8s/mpi.sh).
	_, err = core.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(`{"metadata":{"labels":{"gpuaccept.dev/kueue":"true"}}}`), metav1.PatchOptions{})
	assert.NilError(t, err)
	lq := schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "localqueues"}
	_, err = dyn.Resource(lq).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
		"metadata": map[string]any{"name": queue}, "spec": map[string]any{"clusterQueue": queue}}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	// Kueue's Workload for the Job says whether it was admitted; it goes
	// with the Job, so it is watched while the run lasts.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wl := schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}
	w, err := dyn.Resource(wl).Namespace(ns).Watch(wctx, metav1.ListOptions{})
	assert.NilError(t, err)
	admitted := make(chan string, 1)
	go func() {
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Admitted" && m["status"] == "True" {
					select {
					case admitted <- u.GetName():
					default:
					}
				}
			}
		}
	}()
	out := filepath.Join(t.TempDir(), "results")
	code, stdout, errs := cli(t, "--sku", "mi355x", "--suite", "multinode", "--test", "rccl.all_reduce", "--nodes", "2",
		"--launcher", "k8s", "--kubeconfig", k.Kubeconfig, "--namespace", ns, "--site", k.Site(t, rec), "--k8s-queue", queue,
		"--param", "env.STANDIN_RECORDINGS="+filepath.Join(rec, "mi355x-seed004", "multinode", layout.Raw), "--timeout", "3m", "--out", out)
	assert.Equal(t, code, 0, stdout+errs)
	select {
	case name := <-admitted:
		assert.Assert(t, strings.Contains(name, runID(t, out, "rccl.all_reduce")), "admitted workload %s", name)
	default:
		t.Fatalf("no Workload of %s was admitted by Kueue", ns)
	}
}
