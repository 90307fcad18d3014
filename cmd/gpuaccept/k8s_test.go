package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

// k8sSKU is the built-in H200 SKU file with a kubernetes section added, in
// a folder for --baselines.
func k8sSKU(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../baselines/h200.yaml")
	assert.NilError(t, err)
	// The shipped section gives way to this test's.
	data = regexp.MustCompile(`(?s)\nkubernetes:\n.*?\nsuites:`).ReplaceAll(data, []byte("\nsuites:"))
	data = append(data, []byte("\nkubernetes:\n  image: registry.example/nccl-tests:2.19.6\n  gpu_resource: nvidia.com/gpu\n  shm_size: 64Gi\n  ipc_lock: true\n")...)
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "h200.yaml"), data, 0o644))
	return dir
}

func TestK8sDryRunPrintsManifests(t *testing.T) {
	code, out, errs := cli(t, "--sku", "h200", "--baselines", k8sSKU(t), "--suite", "singlenode", "--test", "nccl.all_reduce",
		"--launcher", "k8s", "--gpus-per-node", "2", "--namespace", "acceptance", "--k8s-queue", "gpu-q", "--dry-run")
	assert.Equal(t, code, 0, errs)
	for _, want := range []string{"kind: Job", "namespace: acceptance", "image: registry.example/nccl-tests:2.19.6", `nvidia.com/gpu: "2"`,
		"kueue.x-k8s.io/queue-name: gpu-q", "all_reduce_perf -b 8 -e 4G -f 2 -g 2 -c 1 -J all_reduce.json", "- IPC_LOCK", "sizeLimit: 64Gi"} {
		assert.Assert(t, strings.Contains(out, want), "missing %q in\n%s", want, out)
	}
	code, _, errs = cli(t, "--sku", "h200", "--suite", "singlenode", "--launcher", "k8s", "--dry-run", "--k8s-flavor", "pytorchjob", "--image", "x")
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(errs, `--k8s-flavor "pytorchjob": want one of job, jobset, volcano, mpijob`), errs)
}

func TestCleanUsage(t *testing.T) {
	code, _, errs := cli(t, "clean")
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(errs, "want --run ID"), errs)
	code, _, errs = cli(t, "clean", "--run", "ga-x,y", "--kubeconfig", "/nonexistent")
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(errs, "want the id gpuaccept printed"), errs)
}

// The whole pipeline on the test cluster: the CLI plans all_reduce with the
// nccl plugin (its own process), the k8s launcher runs it as a Job whose
// pod kwok runs, the recorded H200 output comes back as the pod's log, and
// the baseline judges it.
func TestK8sRunThroughCLI(t *testing.T) {
	kc := testenv.Need(t, "GPUACCEPT_K8S_KUBECONFIG", "k8s")
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	assert.NilError(t, err)
	core, err := kubernetes.NewForConfig(rc)
	assert.NilError(t, err)
	dyn, err := dynamic.NewForConfig(rc)
	assert.NilError(t, err)
	ctx := context.Background()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	ns := "gpuaccept-cli-" + hex.EncodeToString(b)
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
	// kwok serves this CRI-format copy of the recorded output as the log.
	text, err := os.ReadFile(healthy + "/nccl.all_reduce/all_reduce.log")
	assert.NilError(t, err)
	var cri strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		fmt.Fprintf(&cri, "2026-11-30T07:00:00.000000000Z stdout F %s\n", line)
	}
	logFile := filepath.Join(t.TempDir(), "cri.log")
	assert.NilError(t, os.WriteFile(logFile, []byte(cri.String()), 0o644))
	gvr := schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "clusterlogs"}
	_, err = dyn.Resource(gvr).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterLogs", "metadata": map[string]any{"name": ns},
		"spec": map[string]any{"selector": map[string]any{"matchNamespaces": []any{ns}},
			"logs": []any{map[string]any{"containers": []any{"main"}, "logsFile": logFile}}},
	}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	t.Cleanup(func() { _ = dyn.Resource(gvr).Delete(context.Background(), ns, metav1.DeleteOptions{}) })

	// Unpinned, then pinned to each node (--hosts): the results name the
	// node the pod ran on.
	nodes := strings.Fields(os.Getenv("GPUACCEPT_K8S_NODES"))
	for _, host := range append([]string{""}, nodes...) {
		out := t.TempDir()
		args := []string{"--sku", "h200", "--baselines", k8sSKU(t), "--suite", "singlenode", "--test", "nccl.all_reduce",
			"--launcher", "k8s", "--kubeconfig", kc, "--namespace", ns, "--gpus-per-node", "2", "--out", out, "--timeout", "2m"}
		if host != "" {
			args = append(args, "--hosts", host)
		}
		code, stdout, errs := cli(t, args...)
		assert.Equal(t, code, 0, stdout+errs)
		assert.Assert(t, strings.Contains(stdout, "1 pass"), stdout)
		assert.Equal(t, readFile(t, filepath.Join(out, "raw/nccl.all_reduce/all_reduce.log")), string(text))
		if host != "" {
			res := readFile(t, filepath.Join(out, layout.Results))
			for _, n := range nodes {
				assert.Equal(t, strings.Contains(res, `"`+n+`"`), n == host, "pinned to %s, results.json says:\n%s", host, res)
			}
		}
		jobs, err := core.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		assert.NilError(t, err)
		assert.Equal(t, len(jobs.Items), 0, "the Job is deleted")
	}
}

// A clean that finds nothing without --namespace says where else to look:
// the usual mistake is a run made with --namespace.
func TestCleanNothingHintsNamespace(t *testing.T) {
	kc := testenv.Need(t, "GPUACCEPT_K8S_KUBECONFIG", "k8s")
	code, out, errs := cli(t, "clean", "--run", "ga-00000000", "--kubeconfig", kc)
	assert.Equal(t, code, 0, errs)
	assert.Assert(t, strings.Contains(out, "deleted 0 objects of run ga-00000000"), out)
	assert.Assert(t, strings.Contains(errs, "give the run's --namespace"), errs)
}

// rocmImage stands for a site's image: mi355x names none (seed 004's is
// its site file's, examples/sites/mi355x-k8s.yaml).
const rocmImage = "registry.example/rocm-multinode:1"

// Paired and rendezvous steps planned without host names (the pods do not
// exist yet) reach each other by the pods' DNS names: the ib_write_bw
// client names its server's pod, Mori's MASTER_ADDR is node 0's pod.
func TestK8sDryRunResolvesHosts(t *testing.T) {
	code, out, errs := cli(t, "--sku", "mi355x", "--suite", "multinode", "--image", rocmImage, "--launcher", "k8s", "--dry-run",
		"--test", "ibperf.write_bw", "--test", "mori.ep_internode")
	assert.Equal(t, code, 0, errs)
	assert.Assert(t, !strings.Contains(out, "@host"), out)
	client := regexp.MustCompile(`(?m)^# step client\.0: ib_write_bw .* (ga-[0-9a-f]+-1-server-0-0\.ga-[0-9a-f]+-1-server-0)$`).FindStringSubmatch(out)
	assert.Assert(t, client != nil, out)
	assert.Assert(t, regexp.MustCompile(`- name: MASTER_ADDR\n\s+value: ga-[0-9a-f]+-2-ep-internode-0\.ga-[0-9a-f]+-2-ep-internode\n`).MatchString(out), out)
}

// Given nodes (--hosts), the k8s launcher pins its pods to them, so a
// multi-node test can be localised: localise's dry run prints its
// schedule, and run's dry run prints manifests that pin every pod (each
// ib_write_bw server to the first node, each client to the second and to
// its own server) and what follows a failure. A host that is no
// Kubernetes node name is refused, named.
func TestK8sLocalisesOnHostsGiven(t *testing.T) {
	code, out, errs := cli(t, "localise", "--sku", "mi355x", "--suite", "multinode", "--image", rocmImage, "--test", "rccl.all_reduce",
		"--launcher", "k8s", "--hosts", "gpu-node-0,gpu-node-1", "--dry-run")
	assert.Equal(t, code, 0, errs)
	for _, want := range []string{"# localise rccl.all_reduce on 2 nodes", "per-node: suite singlenode on each node at once: gpu-node-0 gpu-node-1",
		"# a run of the localisation: rccl.all_reduce on gpu-node-0,gpu-node-1", "kind: Job",
		"- key: metadata.name\n                operator: In\n                values:\n                - gpu-node-0\n            - matchFields:\n              - key: metadata.name\n                operator: In\n                values:\n                - gpu-node-1\n"} {
		assert.Assert(t, strings.Contains(out, want), "missing %q in\n%s", want, out)
	}

	code, out, errs = cli(t, "--sku", "mi355x", "--suite", "multinode", "--image", rocmImage, "--test", "ibperf.write_bw", "--launcher", "k8s",
		"--param", "ibperf:pairs=ionic_7:ionic_1,ionic_6:ionic_2", "--hosts", "gpu-node-0,gpu-node-1", "--dry-run")
	assert.Equal(t, code, 0, errs)
	assert.Assert(t, !strings.Contains(out, "would not be localised"), out)
	assert.Assert(t, strings.Contains(out, "# ibperf.write_bw: then localised (if it fails)"), out)
	pinned := regexp.MustCompile(`(?m)^# step (\S+): .*?(\S+)\n(?s:.*?)- key: metadata.name\n\s+operator: In\n\s+values:\n\s+- (\S+)\n`)
	got := map[string]string{}
	for _, m := range pinned.FindAllStringSubmatch(out, -1) {
		got[m[1]] = m[3]
		if strings.HasPrefix(m[1], "client.") {
			// The client's last word is its own server pod's DNS name.
			assert.Assert(t, strings.Contains(m[2], "-server-"+strings.TrimPrefix(m[1], "client.")+"-0."), "%s reaches %s", m[1], m[2])
		}
	}
	assert.DeepEqual(t, got, map[string]string{"server.0": "gpu-node-0", "server.1": "gpu-node-0", "client.0": "gpu-node-1", "client.1": "gpu-node-1"})

	code, _, errs = cli(t, "localise", "--sku", "mi355x", "--suite", "multinode", "--image", rocmImage, "--launcher", "k8s", "--hosts", "gpu-node-0,GPU_1", "--dry-run")
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(errs, `host "GPU_1" is not a Kubernetes node name`), errs)
}
