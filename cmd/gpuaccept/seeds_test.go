package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"gotest.tools/v3/assert"
)

// The seeds' own runs, rendered by gpuaccept's dry run from a site file
// that states the seed's site (examples/sites/seedNNN-*.yaml), compared
// field by field with the job the seed's author wrote by hand. The seed's
// text is copied verbatim into testdata/seeds/SEED-LFROM-TO.* (the lines
// named in the file name); each field names its seed line, and the test
// first finds the seed's text on that line, so a field cannot cite a line
// that does not say it. What gpuaccept leaves out on purpose is listed with
// the reason, and where it can be seen, the test proves it is absent.

// seedField is one field of a seed's job: the seed's text on its line, and
// gpuaccept's rendered value against the value it must have.
type seedField struct {
	field string
	line  int
	seed  string
	got   string
	want  string
}

// seedOmission is a part of a seed's job gpuaccept leaves out or does
// otherwise on purpose; absent, when set, must not be in the rendering.
type seedOmission struct {
	line   int
	seed   string
	why    string
	absent string
}

// seedLines reads an excerpt testdata/seeds/NAME-LFROM-TO.EXT (or -LN.EXT)
// and returns a function giving seed line n's text.
func seedLines(t *testing.T, name string) func(n int) string {
	t.Helper()
	m := regexp.MustCompile(`-L(\d+)(?:-(\d+))?\.`).FindStringSubmatch(name)
	assert.Assert(t, m != nil, "excerpt %s names no lines", name)
	from, _ := strconv.Atoi(m[1])
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "seeds", name))
	assert.NilError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if m[2] != "" {
		to, _ := strconv.Atoi(m[2])
		assert.Equal(t, len(lines), to-from+1, "excerpt %s holds %d lines", name, len(lines))
	}
	return func(n int) string {
		if n < from || n-from >= len(lines) {
			t.Fatalf("seed line %d is not in excerpt %s", n, name)
		}
		return lines[n-from]
	}
}

func checkSeed(t *testing.T, excerpt, rendered string, fields []seedField, left []seedOmission) {
	t.Helper()
	line := seedLines(t, excerpt)
	for _, f := range fields {
		assert.Assert(t, strings.Contains(line(f.line), f.seed), "%s: seed line %d does not say %q:\n%s", f.field, f.line, f.seed, line(f.line))
		assert.Equal(t, f.got, f.want, "%s (seed line %d: %s)", f.field, f.line, f.seed)
	}
	for _, o := range left {
		assert.Assert(t, strings.Contains(line(o.line), o.seed), "left out: seed line %d does not say %q", o.line, o.seed)
		assert.Assert(t, o.why != "", "left out without a reason: %s", o.seed)
		if o.absent != "" {
			assert.Assert(t, !strings.Contains(rendered, o.absent), "left out (%s) but rendered: %q", o.why, o.absent)
		}
	}
}

// shellWords splits a POSIX shell command line as the shell would (single
// and double quotes, backslashes), for the lines the dry run prints.
func shellWords(s string) []string {
	var out []string
	var w strings.Builder
	in := false
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				w.WriteByte(c)
			}
		case quote == '"':
			if c == '"' {
				quote = 0
			} else {
				w.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			in = true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, w.String())
	}
	return out
}

// after is the word after the first word equal to flag ("" when none).
func after(words []string, flag string) string {
	for i, w := range words {
		if w == flag && i+1 < len(words) {
			return words[i+1]
		}
	}
	return ""
}

// mca is the value of MCA parameter name (--mca or -mca NAME VALUE).
func mca(words []string, name string) string {
	for i := 0; i+2 < len(words); i++ {
		if (words[i] == "--mca" || words[i] == "-mca") && words[i+1] == name {
			return words[i+2]
		}
	}
	return ""
}

// program is the word naming the benchmark (ending in _perf) and the
// words after it.
func program(words []string) (string, []string) {
	for i, w := range words {
		if strings.HasSuffix(w, "_perf") {
			return w, words[i+1:]
		}
	}
	return "", nil
}

// envPrefix is the value of NAME in the NAME=value words before the
// command (ssh's printed line).
func envPrefix(words []string, name string) string {
	for _, w := range words {
		if !strings.Contains(w, "=") {
			break
		}
		if k, v, _ := strings.Cut(w, "="); k == name {
			return v
		}
	}
	return ""
}

// stepLine is the rank starter's line the k8s dry run prints for its one
// step ("# step NAME: LINE").
func stepLine(t *testing.T, out string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^# step [a-z_.0-9]+: (.*)$`).FindStringSubmatch(out)
	assert.Assert(t, m != nil, "no step line in\n%s", out)
	return shellWords(m[1])
}

// manifests decodes the objects the k8s dry run prints for its test.
func manifests(t *testing.T, out string) []map[string]any {
	t.Helper()
	if i := strings.Index(out, ": then localised"); i >= 0 {
		out = out[:strings.LastIndex(out[:i], "\n")]
	}
	dec := yaml.NewDecoder(strings.NewReader(out))
	var objs []map[string]any
	for {
		var o map[string]any
		if err := dec.Decode(&o); err != nil {
			break
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	assert.Assert(t, len(objs) > 0, "no manifests in\n%s", out)
	return objs
}

// dig follows keys (string: a map key, int: a list index) into v; nil
// when a step is missing.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// kind is the first object of apiVersion and kind.
func kind(t *testing.T, objs []map[string]any, apiVersion, k string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o["apiVersion"] == apiVersion && o["kind"] == k {
			return o
		}
	}
	t.Fatalf("no %s %s among the manifests", apiVersion, k)
	return nil
}

// envOf is the value of variable name in a container.
func envOf(c any, name string) string {
	l, _ := dig(c, "env").([]any)
	for _, e := range l {
		if dig(e, "name") == name {
			return str(dig(e, "value"))
		}
	}
	return ""
}

// mountOf is the node path mounted at mount in a pod spec ("" none).
func mountOf(spec any, mount string) string {
	mounts, _ := dig(spec, "containers", 0, "volumeMounts").([]any)
	vols, _ := dig(spec, "volumes").([]any)
	for _, m := range mounts {
		if dig(m, "mountPath") != mount {
			continue
		}
		for _, v := range vols {
			if dig(v, "name") == dig(m, "name") {
				return str(dig(v, "hostPath", "path"))
			}
		}
	}
	return ""
}

func TestSeed000VolcanoJob(t *testing.T) {
	code, out, errs := cli(t, "--sku", "a100-ndmv4", "--suite", "multinode", "--launcher", "k8s", "--k8s-flavor", "volcano",
		"--site", "../../examples/sites/seed000-aks-volcano.yaml", "--dry-run")
	assert.Equal(t, code, 0, errs)
	objs := manifests(t, out)
	vj := kind(t, objs, "batch.volcano.sh/v1alpha1", "Job")
	// gpuaccept's worker task holds node 1's ranks, as the seed's
	// mpiworker tasks do; its lead (node 0) is the same pod shape.
	worker := dig(vj, "spec", "tasks", 1, "template")
	c := dig(worker, "spec", "containers", 0)
	mpirun := stepLine(t, out)
	bin, args := program(mpirun)
	fields := []seedField{
		{"workload kind", 285, "apiVersion: batch.volcano.sh/v1alpha1", str(vj["apiVersion"]), "batch.volcano.sh/v1alpha1"},
		{"scheduler", 291, "schedulerName: volcano", str(dig(vj, "spec", "schedulerName")), "volcano"},
		{"Volcano svc plugin (the pods' DNS names)", 294, "svc: []", fmt.Sprint(dig(vj, "spec", "plugins", "svc")), "[]"},
		{"image", 364, "image: jzacr2.azurecr.io/pytorch_nccl_tests_2303:latest", str(dig(c, "image")), "jzacr2.azurecr.io/pytorch_nccl_tests_2303:latest"},
		{"mpirun as root", 325, "mpirun --allow-run-as-root", mpirun[1], "--allow-run-as-root"},
		{"ranks", 326, "-np 16 -npernode 8", after(mpirun, "-np"), "16"},
		{"ranks per node", 327, "--map-by ppr:8:node", after(mpirun, "--map-by"), "ppr:8:node"},
		{"binding", 327, "--bind-to numa", after(mpirun, "--bind-to"), "numa"},
		{"HCOLL off", 335, "-mca coll_hcoll_enable 0", mca(mpirun, "coll_hcoll_enable"), "0"},
		{"env NCCL_DEBUG", 329, "-x NCCL_DEBUG=info", envOf(c, "NCCL_DEBUG"), "info"},
		{"env UCX_TLS", 330, "-x UCX_TLS=tcp", envOf(c, "UCX_TLS"), "tcp"},
		{"env NCCL_TOPO_FILE (the file is in the image, line 103)", 331, "-x NCCL_TOPO_FILE=/workspace/ndv4-topo.xml", envOf(c, "NCCL_TOPO_FILE"), "/workspace/ndv4-topo.xml"},
		{"env UCX_NET_DEVICES", 332, "-x UCX_NET_DEVICES=eth0", envOf(c, "UCX_NET_DEVICES"), "eth0"},
		{"env CUDA_DEVICE_ORDER", 333, "-x CUDA_DEVICE_ORDER=PCI_BUS_ID", envOf(c, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID"},
		{"env NCCL_SOCKET_IFNAME", 334, "-x NCCL_SOCKET_IFNAME=eth0", envOf(c, "NCCL_SOCKET_IFNAME"), "eth0"},
		{"forwarded to every rank", 329, "-x NCCL_DEBUG", after(mpirun[slicesIndex(mpirun, "NCCL_DEBUG")-1:], "-x"), "NCCL_DEBUG"},
		{"binary path", 336, "/workspace/nccl-tests/build/all_reduce_perf", bin, "/workspace/nccl-tests/build/all_reduce_perf"},
		{"sweep -b", 336, "-b 8", after(args, "-b"), "8"},
		{"sweep -e", 336, "-e 8G", after(args, "-e"), "8G"},
		{"sweep -f", 336, "-f 2", after(args, "-f"), "2"},
		{"sweep -g", 336, "-g 1", after(args, "-g"), "1"},
		{"sweep -c", 336, "-c 1", after(args, "-c"), "1"},
		// The image's nccl-tests is of 2023 (line 92), before -J.
		{"no -J JSON (nccl-tests predates it)", 336, "all_reduce_perf -b 8 -f 2 -g 1 -e 8G -c 1 \\", after(args, "-J"), ""},
		{"annotation: SR-IOV attachments", 382, "k8s.v1.cni.cncf.io/networks: hostdev-net,hostdev-net,hostdev-net,hostdev-net,hostdev-net,hostdev-net,hostdev-net,hostdev-net",
			str(dig(worker, "metadata", "annotations", "k8s.v1.cni.cncf.io/networks")), "hostdev-net,hostdev-net,hostdev-net,hostdev-net,hostdev-net,hostdev-net,hostdev-net,hostdev-net"},
		{"resource: GPU request", 401, "nvidia.com/gpu: 8", str(dig(c, "resources", "requests", "nvidia.com/gpu")), "8"},
		{"resource: IB VF request", 402, "nvidia.com/mlnxnics: 8", str(dig(c, "resources", "requests", "nvidia.com/mlnxnics")), "8"},
		{"resource: GPU limit", 404, "nvidia.com/gpu: 8", str(dig(c, "resources", "limits", "nvidia.com/gpu")), "8"},
		{"resource: IB VF limit", 405, "nvidia.com/mlnxnics: 8", str(dig(c, "resources", "limits", "nvidia.com/mlnxnics")), "8"},
		{"capability", 393, `add: ["IPC_LOCK"]`, str(dig(c, "securityContext", "capabilities", "add", 0)), "IPC_LOCK"},
		{"/dev/shm mount", 407, "- mountPath: /dev/shm", str(dig(c, "volumeMounts", 0, "mountPath")), "/dev/shm"},
		{"/dev/shm medium", 414, "medium: Memory", str(dig(worker, "spec", "volumes", 0, "emptyDir", "medium")), "Memory"},
		{"/dev/shm size", 415, "sizeLimit: 8Gi", str(dig(worker, "spec", "volumes", 0, "emptyDir", "sizeLimit")), "8Gi"},
		// The seed's job holds 3 pods, a rankless mpimaster and 2
		// workers; gpuaccept's lead pod runs mpirun and holds node 0's
		// ranks, so 2 pods make the gang.
		{"gang size", 290, "minAvailable: 3", str(dig(vj, "spec", "minAvailable")), "2"},
	}
	left := []seedOmission{
		{293, "ssh: []", "Volcano's ssh plugin: gpuaccept makes its own key Secret per run and runs sshd on port 2222", "ssh: []"},
		{303, "initContainers:", "the kubectl wait-for-workers init container (and its service account, line 316): the lead waits until every pod answers over ssh", "initContainers"},
		{316, "serviceAccount: mpi-worker-view", "no pod calls the API server", "mpi-worker-view"},
		{328, "-hostfile /etc/volcano/mpiworker.host", "the hosts are the pods' DNS names from the svc plugin, given as --host NAME:8", "mpiworker.host"},
		{337, "| tee /home/re", "the lead pod's log is the step's log; gpuaccept reads it once the pod ends", "tee "},
		{344, "- containerPort: 22", "sshd listens on 2222 (not 22: host-network pods would meet the node's own sshd); no port needs declaring", "containerPort"},
		{346, "workingDir: /workspace", "the ranks run in /tmp/gpuaccept; every path the job uses is absolute", "workingDir"},
		{350, "restartPolicy: OnFailure", "Never: a failed benchmark is reported, not retried behind the run's back (--retries does that, reported)", "OnFailure"},
		{377, "- replicas: 2", "the page lists its mpiworker task twice (lines 351 and 377; only the second asks for GPUs); one worker task of nodes-1 pods", ""},
		{410, "terminationGracePeriodSeconds: 0", "5 s, so a stopped rank can write its last lines", ""},
	}
	checkSeed(t, "000_696f9a192ccaccb4-L285-415.yaml", out, fields, left)
}

// sourced is the file a site's rank wrapper (the shell text after -c)
// sources first.
func sourced(script string) string {
	m := regexp.MustCompile(`then \. '([^']+)';`).FindStringSubmatch(script)
	if m == nil {
		return ""
	}
	return m[1]
}

func slicesIndex(words []string, w string) int {
	for i, x := range words {
		if x == w {
			return i
		}
	}
	return 1
}

func TestSeed001JobSetKueueIMEX(t *testing.T) {
	code, out, errs := cli(t, "--sku", "gb200-a4x", "--suite", "multinode", "--nodes", "2", "--launcher", "k8s", "--k8s-flavor", "jobset",
		"--site", "../../examples/sites/seed001-gke-a4x-tas.yaml", "--dry-run")
	assert.Equal(t, code, 0, errs)
	objs := manifests(t, out)
	cd := kind(t, objs, "resource.nvidia.com/v1beta1", "ComputeDomain")
	js := kind(t, objs, "jobset.x-k8s.io/v1alpha2", "JobSet")
	worker := dig(js, "spec", "replicatedJobs", 1, "template", "spec", "template")
	spec := dig(worker, "spec")
	c := dig(spec, "containers", 0)
	mpirun := stepLine(t, out)
	bin, args := program(mpirun)
	// The annotation's value, as JSON, against the seed's.
	var seedNets, gotNets any
	seed35 := seedLines(t, "001_e8de1ba5afd618dc-L35.txt")(35)
	i, j := strings.Index(seed35, `[ {"interfaceName"`), strings.Index(seed35, `} ] spec :`)
	assert.Assert(t, i > 0 && j > i, "no interfaces list on seed line 35")
	assert.NilError(t, json.Unmarshal([]byte(seed35[i:j+3]), &seedNets))
	assert.NilError(t, json.Unmarshal([]byte(str(dig(worker, "metadata", "annotations", "networking.gke.io/interfaces"))), &gotNets))
	fields := []seedField{
		{"ComputeDomain", 35, "apiVersion : resource.nvidia.com/v1beta1 kind : ComputeDomain", str(cd["kind"]), "ComputeDomain"},
		{"ComputeDomain nodes (NUM_NODES = --nodes 2)", 35, "numNodes : NUM_NODES", str(dig(cd, "spec", "numNodes")), "2"},
		{"channel claim template: the domain's is the pods'", 35, "channel : resourceClaimTemplate : name : nccl-test-compute-domain-channel",
			str(dig(cd, "spec", "channel", "resourceClaimTemplate", "name")), str(dig(spec, "resourceClaims", 0, "resourceClaimTemplateName"))},
		{"pod resource claim", 35, "resourceClaims : - name : compute-domain-channel", str(dig(spec, "resourceClaims", 0, "name")), "compute-domain-channel"},
		{"container claim", 35, "claims : - name : compute-domain-channel", str(dig(c, "resources", "claims", 0, "name")), "compute-domain-channel"},
		{"workload kind", 35, "apiVersion : jobset.x-k8s.io/v1alpha2 kind : JobSet", str(js["apiVersion"]), "jobset.x-k8s.io/v1alpha2"},
		{"Kueue queue", 35, "kueue.x-k8s.io/queue-name : a4x", str(dig(js, "metadata", "labels", "kueue.x-k8s.io/queue-name")), "a4x"},
		{"DNS names", 35, "enableDNSHostnames : true", str(dig(js, "spec", "network", "enableDNSHostnames")), "true"},
		{"TAS annotation", 35, `kueue.x-k8s.io/podset-required-topology : "cloud.google.com/gce-topology-subblock"`,
			str(dig(worker, "metadata", "annotations", "kueue.x-k8s.io/podset-required-topology")), "cloud.google.com/gce-topology-subblock"},
		{"default interface", 35, "networking.gke.io/default-interface : 'eth0'", str(dig(worker, "metadata", "annotations", "networking.gke.io/default-interface")), "eth0"},
		{"network attachments", 35, `{"interfaceName":"eth5","network":"rdma-3"}`, fmt.Sprint(gotNets), fmt.Sprint(seedNets)},
		{"node selector", 35, "cloud.google.com/gke-accelerator : nvidia-gb200", str(dig(spec, "nodeSelector", "cloud.google.com/gke-accelerator")), "nvidia-gb200"},
		{"toleration gpu", 35, "key : nvidia.com/gpu operator : Equal value : present effect : NoSchedule",
			str(dig(spec, "tolerations", 0, "key")) + " " + str(dig(spec, "tolerations", 0, "value")), "nvidia.com/gpu present"},
		{"toleration arch", 35, "key : kubernetes.io/arch operator : Equal value : arm64 effect : NoSchedule",
			str(dig(spec, "tolerations", 1, "key")) + " " + str(dig(spec, "tolerations", 1, "value")), "kubernetes.io/arch arm64"},
		{"image", 35, "image : us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic-arm64:v1.0.4", str(dig(c, "image")),
			"us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic-arm64:v1.0.4"},
		{"GPUs", 35, "limits : nvidia.com/gpu : 4", str(dig(c, "resources", "limits", "nvidia.com/gpu")), "4"},
		{"shared memory", 35, `medium : "Memory" sizeLimit : 250Gi`, str(dig(spec, "volumes", 0, "emptyDir", "sizeLimit")), "250Gi"},
		{"host folder gib", 35, "name : gib hostPath : path : /home/kubernetes/bin/gib", mountOf(spec, "/usr/local/gib"), "/home/kubernetes/bin/gib"},
		{"host folder nvidia", 35, "name : nvidia hostPath : path : /home/kubernetes/bin/nvidia", mountOf(spec, "/usr/local/nvidia"), "/home/kubernetes/bin/nvidia"},
		{"env LD_LIBRARY_PATH", 35, "name : LD_LIBRARY_PATH value : /usr/local/nvidia/lib64", envOf(c, "LD_LIBRARY_PATH"), "/usr/local/nvidia/lib64"},
		{"env NCCL_NET", 35, "export NCCL_NET=gIB", envOf(c, "NCCL_NET"), "gIB"},
		{"env NCCL_TESTS_SPLIT_MASK", 35, `export NCCL_TESTS_SPLIT_MASK="0x0"`, envOf(c, "NCCL_TESTS_SPLIT_MASK"), "0x0"},
		{"env script, sourced by every rank", 35, "source /usr/local/gib/scripts/set_nccl_env.sh", sourced(after(mpirun, "-c")), "/usr/local/gib/scripts/set_nccl_env.sh"},
		{"MCA btl", 35, "--mca btl self,tcp", mca(mpirun, "btl"), "self,tcp"},
		{"MCA btl_tcp_if_include", 35, "--mca btl_tcp_if_include eth0", mca(mpirun, "btl_tcp_if_include"), "eth0"},
		{"MCA plm_rsh_no_tree_spawn", 35, "-mca plm_rsh_no_tree_spawn 1", mca(mpirun, "plm_rsh_no_tree_spawn"), "1"},
		{"MCA orte_keep_fqdn_hostnames", 35, "--mca orte_keep_fqdn_hostnames 1", mca(mpirun, "orte_keep_fqdn_hostnames"), "1"},
		{"binding", 35, "--bind-to none", after(mpirun, "--bind-to"), "none"},
		{"binary path", 35, "/third_party/nccl-tests/build/all_gather_perf", bin, "/third_party/nccl-tests/build/all_gather_perf"},
		{"sweep -b", 35, "-b 1K", after(args, "-b"), "1K"},
		{"sweep -e", 35, "-e 8G", after(args, "-e"), "8G"},
		{"sweep -f", 35, "-f 2", after(args, "-f"), "2"},
		{"sweep -g", 35, "-g 1", after(args, "-g"), "1"},
		{"sweep -w", 35, "-w 5", after(args, "-w"), "5"},
		{"sweep iterations (-n is --iters)", 35, "--iters 100", after(args, "-n"), "100"},
		{"sweep -c", 35, "-c 1", after(args, "-c"), "1"},
		{"ranks per node (slots=4)", 35, "slots=4", after(mpirun, "--map-by"), "ppr:4:node"},
	}
	left := []seedOmission{
		{35, `name : OMPI_ALLOW_RUN_AS_ROOT value : "1"`, "mpirun gets --allow-run-as-root instead", "OMPI_ALLOW_RUN_AS_ROOT"},
		{35, "apt install -y iputils-ping", "nothing is installed at run time: the workers wait for the lead's done file, not ping", "apt install"},
		{35, "/scripts/container_entry.sh daemon &", "gpuaccept starts sshd itself (port 2222, a key per run)", "container_entry.sh"},
		{35, `-mca plm_rsh_agent "ssh -q -o LogLevel=ERROR -o StrictHostKeyChecking=no -p 222"`, "the pods' ssh config sets port 2222 and the run's key; mpirun gets plm_rsh_args -p 2222", "-p 222\""},
		{35, "echo ${OTHER} port=222 slots=4 | tee -a /tmp/hostfile", "no hostfile: --host NAME:4 with the JobSet's DNS names", "/tmp/hostfile"},
		{35, "name : lib64 hostPath : path : /lib64", "the page declares it but mounts it nowhere (its volumeMounts are nvidia, gib and shared-memory)", "path: /lib64"},
		{35, "ttlSecondsAfterFinished : 1200", "3600, gpuaccept's safety net when it cannot delete what it made", ""},
		{35, "activeDeadlineSeconds : 3600", "the test's --timeout plus a minute", ""},
		{35, "stdin : true tty : true", "no terminal: the pod's log is the step's log", "tty"},
		{35, "setHostnameAsFQDN : true", "the pods are named by the JobSet's DNS names (enableDNSHostnames), mpirun keeps them whole", "setHostnameAsFQDN"},
	}
	checkSeed(t, "001_e8de1ba5afd618dc-L35.txt", out, fields, left)
}

// sshLine is the ssh dry run's command line of its test.
func sshLine(t *testing.T, out string) []string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " mpirun ") {
			return shellWords(l)
		}
	}
	t.Fatalf("no mpirun line in\n%s", out)
	return nil
}

func TestSeed002SSHMpirun(t *testing.T) {
	code, out, errs := cli(t, "--sku", "volcengine-hpcpni", "--suite", "multinode", "--test", "nccl.all_reduce", "--launcher", "ssh",
		"--ssh-port", "22223", "--hosts", "192.0.2.21,192.0.2.22", "--site", "../../examples/sites/seed002-volcengine-hosts.yaml", "--dry-run")
	assert.Equal(t, code, 0, errs)
	w := sshLine(t, out)
	bin, _ := program(w)
	fields := []seedField{
		{"hosts and slots", 47, "Format: <IP of node 1>:8,<IP of node 2>:8", after(w, "--host"), "192.0.2.21:8,192.0.2.22:8"},
		{"mpirun's ssh port", 29, "port 22223 is required", after(shellWords(mca(w, "plm_rsh_agent")), "-p"), "22223"},
	}
	left := []seedOmission{
		{35, "docker run -itd", "gpuaccept runs in the first container the page starts; docker run (--gpus all --net=host --shm-size --privileged) is the operator's step", ""},
		{35, "iaas-gpu-cn-beijing.cr.volces.com/iaas_health/easy_nccl", "the image is the container gpuaccept runs in, not one it starts; its nccl-tests are on PATH (binary " + bin + ")", "easy_nccl"},
		{42, "Execute the corresponding commands in the table below", "the page's table of commands did not survive its copy: no other mpirun option is known", ""},
	}
	checkSeed(t, "002_5506a0529d47536a-L29-47.txt", out, fields, left)
}

func TestSeed003SSHMpirun(t *testing.T) {
	code, out, errs := cli(t, "--sku", "b200-a4", "--suite", "multinode", "--launcher", "ssh", "--hosts", "a4-vm-1,a4-vm-2",
		"--site", "../../examples/sites/seed003-a4-hosts.yaml", "--dry-run")
	assert.Equal(t, code, 0, errs)
	w := sshLine(t, out)
	bin, args := program(w)
	fields := []seedField{
		{"MPI", 36, "Install Open MPI.", w[slicesIndex(w, "mpirun")], "mpirun"},
		{"binary folder", 43, "# The script assumes binaries at /opt/nccl-tests/build/", filepath.Dir(bin), "/opt/nccl-tests/build"},
		{"test", 44, "-t all_gather", filepath.Base(bin), "all_gather_perf"},
		{"split mask", 44, "-m 0x0", envPrefix(w, "NCCL_TESTS_SPLIT_MASK"), "0x0"},
		{"sweep -b", 44, "-b 4K", after(args, "-b"), "4K"},
		{"sweep -e", 44, "-e 16G", after(args, "-e"), "16G"},
		{"hosts", 44, "a4-vm-1 a4-vm-2", after(w, "--host"), "a4-vm-1:8,a4-vm-2:8"},
		{"gIB's environment (NCCL_HOME=/usr/local/gib)", 38, "set `NCCL_HOME=/usr/local/gib`", sourced(after(w, "-c")),
			"/usr/local/gib/scripts/set_nccl_env.sh"},
		{"the gIB net plugin", 44, "/usr/local/gib/scripts/run_nccl_tests.sh", envPrefix(w, "NCCL_NET"), "gIB"},
	}
	left := []seedOmission{
		{44, "-p 22", "ssh's own port (22), so no -p is given (--ssh-port sets one)", "-p 22 "},
	}
	checkSeed(t, "003_aeac527ae2acd61d-L35-44.txt", out, fields, left)
}

func TestSeed004MpirunAcrossDockerHosts(t *testing.T) {
	code, out, errs := cli(t, "--sku", "mi355x", "--suite", "multinode", "--test", "rccl.all_reduce", "--launcher", "ssh",
		"--hosts", "192.0.2.11,192.0.2.12", "--site", "../../examples/sites/seed004-mi355x-hosts.yaml", "--dry-run")
	assert.Equal(t, code, 0, errs)
	w := sshLine(t, out)
	bin, args := program(w)
	fields := []seedField{
		{"MCA btl_tcp_if_include", 531, "--mca btl_tcp_if_include eth1", mca(w, "btl_tcp_if_include"), "eth1"},
		{"MCA oob_tcp_if_include", 531, "--mca oob_tcp_if_include eth1", mca(w, "oob_tcp_if_include"), "eth1"},
		{"MCA btl", 531, "--mca btl ^vader,openib", mca(w, "btl"), "^vader,openib"},
		{"hosts (hostfile, lines 528-529)", 528, "192.0.2.11 slots=8", after(w, "--host"), "192.0.2.11:8,192.0.2.12:8"},
		{"ranks", 531, "-np 16", after(w, "-np"), "16"},
		{"binary path", 531, "/workspace/rocm-systems/projects/rccl-tests/build/all_reduce_perf", bin, "/workspace/rocm-systems/projects/rccl-tests/build/all_reduce_perf"},
		{"sweep -b", 531, "-b 16", after(args, "-b"), "16"},
		{"sweep -e", 531, "-e 16G", after(args, "-e"), "16G"},
		{"sweep -n", 531, "-n 20", after(args, "-n"), "20"},
		{"sweep -w", 531, "-w 5", after(args, "-w"), "5"},
		{"sweep -c", 531, "-c 1", after(args, "-c"), "1"},
		{"env NCCL_SOCKET_IFNAME", 531, "-x NCCL_SOCKET_IFNAME=eth1", envPrefix(w, "NCCL_SOCKET_IFNAME"), "eth1"},
		{"env NCCL_IB_GID_INDEX", 531, "-x NCCL_IB_GID_INDEX=1", envPrefix(w, "NCCL_IB_GID_INDEX"), "1"},
		{"env NCCL_IB_HCA", 531, "-x NCCL_IB_HCA=ionic_0,ionic_1,ionic_2,ionic_3,ionic_4,ionic_5,ionic_6,ionic_7", envPrefix(w, "NCCL_IB_HCA"), "ionic_0,ionic_1,ionic_2,ionic_3,ionic_4,ionic_5,ionic_6,ionic_7"},
		{"env NCCL_IB_TC", 531, "-x NCCL_IB_TC=104", envPrefix(w, "NCCL_IB_TC"), "104"},
		{"env NCCL_IB_FIFO_TC", 531, "-x NCCL_IB_FIFO_TC=184", envPrefix(w, "NCCL_IB_FIFO_TC"), "184"},
		{"env IONIC_LOCKFREE", 531, "-x IONIC_LOCKFREE=all", envPrefix(w, "IONIC_LOCKFREE"), "all"},
		{"forwarded to every rank", 531, "-x NCCL_IB_HCA", after(w[slicesIndex(w, "NCCL_IB_HCA")-1:], "-x"), "NCCL_IB_HCA"},
	}
	left := []seedOmission{
		{520, "docker pull prasadnairamd/rocm-multinode:7.2.2-complete", "the container gpuaccept runs in on each host (docker exec, line 525) is the operator's", ""},
		{531, "-x NCCL_TOPO_DUMP_FILE=/tmp/system_run2.txt", "a debugging dump of the topology NCCL found, not a setting of the run", "NCCL_TOPO_DUMP_FILE"},
		{531, "--allow-run-as-root", "given when gpuaccept runs as root, as in the page's container (root@Aliyun3)", ""},
	}
	checkSeed(t, "004_127f355d14f84816-L520-531.txt", out, fields, left)
}
