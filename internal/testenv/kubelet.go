package testenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Kubelet is the part of the "k8s" service whose pods really run: two
// kubelet nodes with containerd (scripts/testenv.d/k8s/nodes.sh), the test
// image imported into both, CoreDNS for the pods' names.
type Kubelet struct {
	// Kubeconfig is the admin's kubeconfig.
	Kubeconfig string
	// Nodes are the kubelet nodes' names (kube-node-0, kube-node-1).
	Nodes []string
	// Image is the locally built test image (the stand-in under every
	// benchmark's name, sshd, Open MPI), imported with ctr on both nodes.
	Image string
}

// NeedKubelet returns the kubelet nodes, or skips t (fails it under
// GPUACCEPT_INTEGRATION=required) when they are not up.
func NeedKubelet(t testing.TB) Kubelet {
	t.Helper()
	return Kubelet{
		Kubeconfig: Need(t, "GPUACCEPT_K8S_KUBECONFIG", "k8s"),
		Nodes:      strings.Fields(Need(t, "GPUACCEPT_K8S_KUBELET_NODES", "k8s")),
		Image:      Need(t, "GPUACCEPT_K8S_IMAGE", "k8s"),
	}
}

// Site writes a site file (framework/site) for the kubelet nodes into a
// fresh folder of t and returns its path: examples/sites/testenv-kubelet.yaml
// (the test image, the toleration of the nodes' taint, their node selector,
// the pod network instead of the host's, the mpijob launcher pod on them)
// with each host folder of mounts mounted at the same path in every pod, so
// that absolute paths in --param values, such as the stand-in's
// recordings, hold inside the pods too.
func (k Kubelet) Site(t testing.TB, mounts ...string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	base, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "examples", "sites", "testenv-kubelet.yaml"))
	if err != nil {
		t.Fatalf("site for the kubelet nodes: %v", err)
	}
	text := strings.Replace(string(base), "image: gpuaccept.local/testenv:1", "image: "+k.Image, 1)
	var b strings.Builder
	b.WriteString(text)
	if len(mounts) > 0 {
		b.WriteString("  host_paths:\n")
		for _, m := range mounts {
			abs, err := filepath.Abs(m)
			if err != nil {
				t.Fatalf("site for the kubelet nodes: %v", err)
			}
			fmt.Fprintf(&b, "    - {path: %s, mount: %s}\n", strconv.Quote(abs), strconv.Quote(abs))
		}
	}
	p := filepath.Join(t.TempDir(), "kubelet-site.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatalf("site for the kubelet nodes: %v", err)
	}
	return p
}

// ProcessesWith lists the processes of this machine ("PID COMMAND") whose
// environment or command line holds needle, leaving out the caller. A
// container's processes are this machine's processes in other namespaces,
// and every pod of a run carries the run id in GPUACCEPT_HOSTS: with
// needle the run id, an empty list means nothing the run started on the
// kubelet nodes is left. Processes that end while being read are skipped.
func ProcessesWith(needle string) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return []string{"cannot read /proc: " + err.Error()}
	}
	self := os.Getpid()
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(env, []byte(needle)) || bytes.Contains(cmd, []byte(needle)) {
			out = append(out, e.Name()+" "+strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))))
		}
	}
	return out
}
