package k8s

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// Resources of the kinds the launcher creates, by apiVersion and kind.
var (
	gvrSecret  = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	gvrService = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	gvrPod     = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	gvrJob     = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	gvrJobSet  = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	gvrVolcano = schema.GroupVersionResource{Group: "batch.volcano.sh", Version: "v1alpha1", Resource: "jobs"}
	gvrMPIJob  = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}
	// gvrComputeDomain is NVIDIA's IMEX ComputeDomain (the DRA driver for
	// GB200's multi-node NVLink), made when the site asks for one.
	gvrComputeDomain = schema.GroupVersionResource{Group: "resource.nvidia.com", Version: "v1beta1", Resource: "computedomains"}
)

// gvrOf maps an object to its resource; the launcher only creates the kinds
// above.
func gvrOf(o *unstructured.Unstructured) (schema.GroupVersionResource, error) {
	gvk := o.GroupVersionKind()
	for _, c := range []struct {
		kind string
		gvr  schema.GroupVersionResource
	}{{"Secret", gvrSecret}, {"Service", gvrService}, {"Pod", gvrPod}, {"Job", gvrJob}, {"JobSet", gvrJobSet}, {"Job", gvrVolcano}, {"MPIJob", gvrMPIJob}, {"ComputeDomain", gvrComputeDomain}} {
		if gvk.Kind == c.kind && gvk.GroupVersion() == c.gvr.GroupVersion() {
			return c.gvr, nil
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("k8s: no resource known for %s", gvk)
}

// In-pod paths and ports of the MPI pattern.
const (
	// sshSecretDir is where the run's Secret (key pair) is mounted.
	sshSecretDir = "/etc/gpuaccept-ssh"
	// sshPort is the pods' sshd port: not 22, so hostNetwork pods do not
	// collide with the node's own sshd.
	sshPort = 2222
	// podWorkDir is the step's working directory in every pod: the same
	// path on all of them, as mpirun expects.
	podWorkDir = "/tmp/gpuaccept"
	// doneFile tells a worker pod that the lead's mpirun has ended.
	doneFile = "/tmp/gpuaccept-done"
	// containerName is the name of the one container of every pod.
	containerName = "main"
)

// workload is one step rendered: the objects that run it and what the
// launcher needs to follow them.
type workload struct {
	step plan.Step
	// name is the workload object's name (and its Service's).
	name string
	// pods is the number of pods the step runs on.
	pods int
	// hosts are the stable DNS names of the pods, lead first (for the
	// mpijob flavor the names mpi-operator gives its workers, in its
	// hostfile's order; it writes that hostfile itself).
	hosts []string
	// objects are created in order (Service before workload).
	objects []*unstructured.Unstructured
	// command is what the lead pod runs, for plan.Output.Command.
	command string
	// selector selects the step's pods.
	selector string
	// pin are the nodes the step's pods must run on, in node order (the
	// lead's first; one for a single-pod step); nil: where the scheduler
	// likes.
	pin []string
}

// rendered is a request's objects: the ssh Secret (nil when no step needs
// it) and one workload per step.
type rendered struct {
	secret *unstructured.Unstructured
	steps  []*workload
}

// objects lists everything in creation order.
func (r *rendered) objects() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	if r.secret != nil {
		out = append(out, r.secret)
	}
	for _, w := range r.steps {
		out = append(out, w.objects...)
	}
	return out
}

// YAML renders objects as one multi-document YAML stream, as kubectl
// apply -f reads it.
func YAML(objs []*unstructured.Unstructured) (string, error) {
	var b strings.Builder
	for i, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return "", fmt.Errorf("render %s %s as YAML: %w", o.GetKind(), o.GetName(), err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(data)
	}
	return b.String(), nil
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// objectName builds a DNS-1123 label from parts, at most max characters.
func objectName(max int, parts ...string) string {
	n := nonName.ReplaceAllString(strings.ToLower(strings.Join(parts, "-")), "-")
	n = strings.Trim(n, "-")
	if len(n) > max {
		n = strings.TrimRight(n[:max], "-")
	}
	return n
}

// nodesOf is how many pods a step spans: one for a paired (server/client)
// step, else its processes over processes per node.
func nodesOf(s plan.Step) int {
	if s.Role != "" || s.ProcsPerNode < 1 {
		return 1
	}
	return (s.Procs + s.ProcsPerNode - 1) / s.ProcsPerNode
}

// render builds the objects of a request. prefix is the run-unique name
// stem of this test ("ga-1a2b3c4d-3"); keys holds the Secret's data (nil
// in a dry run, where placeholders are shown).
func (l *Launcher) render(req launch.Request, prefix, namespace string, keys map[string][]byte) (*rendered, error) {
	sh, err := podShape(l.cfg)
	if err != nil {
		return nil, err
	}
	if err := req.Plan.Validate(); err != nil {
		return nil, fmt.Errorf("k8s: plan of %s: %w", req.Test, err)
	}
	r := &rendered{}
	needSSH := false
	for _, s := range req.Plan.Steps {
		needSSH = needSSH || (nodesOf(s) > 1 && l.cfg.Flavor != FlavorMPIJob)
	}
	secretName := prefix + "-ssh"
	if needSSH {
		r.secret = l.secret(secretName, namespace, req.Test, keys)
	}
	// Every step's processes see the test's nodes (plan.HostsEnv): the pods'
	// DNS names, known before anything is created since the flavors derive
	// them from the workloads' names.
	req.Plan = req.Plan.WithHostsEnv(req.Topology.Nodes)
	pinTo := req.Topology.Hosts
	if len(pinTo) == 0 {
		pinTo = l.cfg.Hosts
	}
	if err := checkNodeNames(pinTo); err != nil {
		return nil, fmt.Errorf("k8s: test %s: %w", req.Test, err)
	}
	ws := make([]*workload, len(req.Plan.Steps))
	nodeHosts := map[int]string{}
	for i, s := range req.Plan.Steps {
		name := objectName(40, prefix, s.Name)
		w := &workload{step: s, name: name, pods: nodesOf(s),
			selector: LabelRun + "=" + l.RunID + "," + LabelStep + "=" + name}
		w.hosts = flavours[stepFlavor(l.cfg.Flavor, w.pods)].hosts(name, w.pods)
		if w.pin, err = pinned(pinTo, s, w.pods); err != nil {
			return nil, fmt.Errorf("k8s: test %s: %w", req.Test, err)
		}
		ws[i] = w
		// Node i of the test is the first pod planned on it.
		if w.pods == 1 {
			if _, ok := nodeHosts[s.Host]; !ok && len(w.hosts) > 0 {
				nodeHosts[s.Host] = w.hosts[0]
			}
			continue
		}
		for j, h := range w.hosts {
			if _, ok := nodeHosts[j]; !ok {
				nodeHosts[j] = h
			}
		}
	}
	var servers []*workload
	clients := 0
	for _, w := range ws {
		s := w.step
		var srv *workload
		if s.Role == "client" {
			// Each client talks to its own server: the one of the same
			// pair ("server.3" for "client.3"), else the server of the
			// same rank in plan order. Keyed by node, every client of a
			// multi-pair plan would reach the last server.
			if srv = serverOf(s, servers, clients); srv != nil {
				s = clientOf(s, srv, req.Topology)
				w.step = s
			}
			clients++
		}
		// A step names its own pods, and a client its server's, for the
		// nodes they stand on; other nodes are the test's first pods there.
		host := func(i int) (string, error) {
			switch {
			case w.pods > 1 && i < len(w.hosts):
				return w.hosts[i], nil
			case w.pods == 1 && i == s.Host && len(w.hosts) > 0:
				return w.hosts[0], nil
			case srv != nil && i == srv.step.Host:
				return srv.hosts[0], nil
			}
			if h, ok := nodeHosts[i]; ok {
				return h, nil
			}
			return "", fmt.Errorf("no pod of this test stands for node %d (flavor %s)", i, l.cfg.Flavor)
		}
		resolved, err := s.ResolveHostRefs(host)
		if err != nil {
			return nil, fmt.Errorf("k8s: test %s: %w", req.Test, err)
		}
		w.step = resolved
		if err := l.renderStep(w, sh, namespace, secretName, req.Test, req.Topology, deadline(req.Timeout, s.Timeout)); err != nil {
			return nil, err
		}
		if s.Role == "server" {
			servers = append(servers, w)
		}
		r.steps = append(r.steps, w)
	}
	return r, nil
}

// checkNodeNames refuses host names that cannot be Kubernetes node names
// (DNS-1123 subdomains: lower case, digits, '-' and '.', at most 253
// characters), naming the host.
func checkNodeNames(hosts []string) error {
	for _, h := range hosts {
		if errs := validation.IsDNS1123Subdomain(h); len(errs) > 0 {
			return fmt.Errorf("host %q is not a Kubernetes node name: %s", h, strings.Join(errs, "; "))
		}
	}
	return nil
}

// pinned returns the nodes a step's pods must run on: for a single-pod
// step (a server, a client, a 1-node test) the host of its node, for a
// step over n pods the first n hosts; nil when no hosts are given. It
// fails when the hosts are fewer than the step's nodes.
func pinned(hosts []string, s plan.Step, pods int) ([]string, error) {
	if len(hosts) == 0 {
		return nil, nil
	}
	if pods == 1 {
		if s.Host < 0 || s.Host >= len(hosts) {
			return nil, fmt.Errorf("step %s runs on node %d, but only %d hosts are given (%s)", s.Name, s.Host, len(hosts), strings.Join(hosts, ","))
		}
		return []string{hosts[s.Host]}, nil
	}
	if pods > len(hosts) {
		return nil, fmt.Errorf("step %s spans %d nodes, but only %d hosts are given (%s)", s.Name, pods, len(hosts), strings.Join(hosts, ","))
	}
	return hosts[:pods], nil
}

// serverOf picks the server of the n-th client step c among the servers
// rendered before it (in plan order): the server whose name is c's with
// "client" replaced by "server" (plugins/ibperf names a pair's steps
// "server.i" and "client.i"), else the n-th server, else the last one;
// nil when there is none.
func serverOf(c plan.Step, servers []*workload, n int) *workload {
	if len(servers) == 0 {
		return nil
	}
	if rest, ok := strings.CutPrefix(c.Name, "client"); ok {
		for _, w := range servers {
			if w.step.Name == "server"+rest {
				return w
			}
		}
	}
	if n < len(servers) {
		return servers[n]
	}
	return servers[len(servers)-1]
}

// clientOf points a client step at its server pod: a word of its argv equal
// to the server's host name (Topology.Hosts[server.Host]), or the
// plan.HostRef of the server's node, becomes the server pod's DNS name, and
// GPUACCEPT_SERVER_HOST holds that name too.
func clientOf(s plan.Step, srv *workload, topo plan.Topology) plan.Step {
	dns := srv.hosts[0]
	old := ""
	if srv.step.Host >= 0 && srv.step.Host < len(topo.Hosts) {
		old = topo.Hosts[srv.step.Host]
	}
	argv := make([]string, len(s.Argv))
	for i, a := range s.Argv {
		if j, ok := plan.HostRefIndex(a); (old != "" && a == old) || (ok && j == srv.step.Host) {
			a = dns
		}
		argv[i] = a
	}
	s.Argv = argv
	env := map[string]string{}
	for k, v := range s.Env {
		env[k] = v
	}
	env["GPUACCEPT_SERVER_HOST"] = dns
	s.Env = env
	return s
}

func (l *Launcher) labels(test string) map[string]string {
	return map[string]string{LabelRun: l.RunID, LabelManagedBy: "gpuaccept", "gpuaccept.dev/test": objectName(63, test)}
}

func (l *Launcher) secret(name, namespace, test string, keys map[string][]byte) *unstructured.Unstructured {
	if keys == nil {
		keys = map[string][]byte{}
		for _, k := range []string{"id", "id.pub", "authorized_keys"} {
			keys[k] = []byte("(generated for each run)")
		}
	}
	sec := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: l.labels(test)},
		Type:       corev1.SecretTypeOpaque,
		Data:       keys,
	}
	return toUnstructured(sec)
}

// Safety nets for when gpuaccept itself dies (kill -9, a lost laptop) and
// cannot delete what it made: the pods stop themselves a little after the
// test's timeout, and finished workloads go after ttlAfterFinished.
const (
	deadlineMargin   = time.Minute
	ttlAfterFinished = int64(3600)
)

// deadline is the pods' activeDeadlineSeconds for a test timeout and a
// step timeout (the shorter wins); nil when neither is set.
func deadline(test, step time.Duration) *int64 {
	d := test
	if step > 0 && (d == 0 || step < d) {
		d = step
	}
	if d <= 0 {
		return nil
	}
	return ptr.To(int64((d + deadlineMargin + time.Second - 1) / time.Second))
}

// stepFlavor is the workload kind a step of pods pods runs as under the
// --k8s-flavor flavor: a one-pod MPIJob step needs no launcher/worker
// split and is a plain Job.
func stepFlavor(flavor string, pods int) string {
	if flavor == FlavorMPIJob && pods == 1 {
		return FlavorJob
	}
	return flavor
}

// renderStep fills w's command and objects for the flavor; w.hosts and
// the step's resolved HostRefs come from render.
func (l *Launcher) renderStep(w *workload, sh *shape, namespace, secretName, test string, topo plan.Topology, active *int64) error {
	s := w.step
	flavor := stepFlavor(l.cfg.Flavor, w.pods)
	lbl := l.labels(test)
	lbl[LabelStep] = w.name
	meta := metav1.ObjectMeta{Name: w.name, Namespace: namespace, Labels: copyMap(lbl)}
	if sh.queue != "" && flavor != FlavorVolcano {
		meta.Labels[LabelKueueQueue] = sh.queue
	}
	env := map[string]string{}
	for k, v := range sh.env {
		env[k] = v
	}
	for k, v := range s.Env {
		env[k] = v
	}
	environ := make([]string, 0, len(env))
	for _, k := range sortedKeys(env) {
		environ = append(environ, k+"="+env[k])
	}
	// Scripts of the lead and worker pods.
	starter := rankstart.Or(l.cfg.Starter)
	// Every MPI step's line starts from the run's starter options
	// (rankstart.FromLaunch), as under every launcher; without them HCOLL
	// is off for Open MPI, as ssh and slurm have it.
	base := rankstart.Options{DisableHCOLL: starter.Family() == rankstart.FamilyOpenMPI}
	if l.cfg.Start != nil {
		base = *l.cfg.Start
	}
	var leadScript, workerScript string
	switch {
	case w.pods == 1:
		argv := s.Argv
		if rankstart.NeedsStarter(s) {
			a, err := starter.Argv(s, rankstart.Merge(base, rankstart.Options{AllowRoot: true, ExtraArgs: l.cfg.MPIArgs, Environ: environ}))
			if err != nil {
				return err
			}
			argv = a
		}
		w.command = rankstart.ShellJoin(argv)
		leadScript = singleScript(argv, s.Files, podWorkDir)
	case flavor == FlavorMPIJob:
		// mpi-operator writes the hostfile and distributes its own keys,
		// but each worker makes its own host key at start, which no
		// known_hosts can hold: mpi-operator leaves it to the image's
		// ssh_config (its own base images say StrictHostKeyChecking no),
		// and ssh in any other image ends the run with "Host key
		// verification failed". Open MPI's mpirun passes the options
		// itself; this replaces the operator's OMPI_MCA_plm_rsh_args, so
		// its ConnectionAttempts=10 is kept.
		extra := l.cfg.MPIArgs
		if starter.Family() == rankstart.FamilyOpenMPI {
			extra = append([]string{"--mca", "plm_rsh_args", "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectionAttempts=10"}, l.cfg.MPIArgs...)
		}
		a, err := starter.Argv(s, rankstart.Merge(base, rankstart.Options{AllowRoot: true, ExtraArgs: extra, Environ: environ}))
		if err != nil {
			return err
		}
		w.command = rankstart.ShellJoin(a)
		leadScript = singleScript(a, s.Files, podWorkDir)
		// The operator's Secret is mounted at /root/.ssh, a folder sshd's
		// StrictModes refuses (its own base images turn StrictModes off):
		// in any other image every login would be "Permission denied".
		workerScript = "mkdir -p /run/sshd " + podWorkDir + " && ssh-keygen -A >/dev/null && exec /usr/sbin/sshd -De -o StrictModes=no"
	default:
		hostNames := w.hosts
		extra := l.cfg.MPIArgs
		if starter.Family() == rankstart.FamilyOpenMPI {
			// Keep the pods' DNS names whole: Open MPI would otherwise
			// cut them at the first dot, to names no resolver knows
			// (seed 001 sets the same). Hydra keeps them as given and
			// reads the port from the pods' ssh config.
			extra = append([]string{"--mca", "plm_rsh_args", fmt.Sprintf("-p %d", sshPort), "--mca", "orte_keep_fqdn_hostnames", "1"}, l.cfg.MPIArgs...)
		}
		a, err := starter.Argv(s, rankstart.Merge(base, rankstart.Options{Hosts: hostNames, AllowRoot: true, ExtraArgs: extra, Environ: environ}))
		if err != nil {
			return err
		}
		w.command = rankstart.ShellJoin(a)
		leadScript = leadMPIScript(a, s.Files, w.hosts, podWorkDir)
		workerScript = workerMPIScript(podWorkDir)
	}
	gpus := topo.GPUsPerNode
	podOpts := podOptions{secret: secretName, multi: w.pods > 1 && flavor != FlavorMPIJob, env: env, gpus: gpus, deadline: active}
	if cd := sh.computeDomain; cd != nil && w.pods > 1 {
		// Multi-node NVLink (IMEX) needs the step's nodes in one
		// ComputeDomain, each rank pod holding its channel (seed 001).
		podOpts.claim, podOpts.claimTemplate = cd.ClaimName(), w.name+"-cd-channel"
		w.objects = append(w.objects, computeDomain(w.name+"-cd", namespace, lbl, w.pods, podOpts.claimTemplate))
	}
	// Pinned to hosts: a pod whose node is known goes to that node
	// exactly; a template that stands for several pods (an Indexed Job's,
	// a replicated worker's) may go to any of its nodes, one pod per node
	// (the anti-affinity of multi-node pods), so which rank lands on
	// which of them is the scheduler's choice.
	leadOpts, workerOpts := podOpts, podOpts
	if len(w.pin) > 0 {
		leadOpts.nodes, workerOpts.nodes = w.pin[:1], w.pin[1:]
	}
	lead := l.podTemplate(sh, lbl, "lead", leadScript, leadOpts)
	worker := l.podTemplate(sh, lbl, "worker", workerScript, workerOpts)
	if flavor == FlavorMPIJob {
		// Every worker holds ranks: one per node, over the hosts given.
		// The launcher pod holds no GPUs and needs no RDMA device; it
		// runs on one of the hosts too, beside a worker.
		workerOpts.nodes = w.pin
		if len(w.pin) > 0 {
			workerOpts.spread = map[string]string{LabelRole: "worker"}
		}
		worker = l.podTemplate(sh, lbl, "worker", workerScript, workerOpts)
		// The launcher pod holds no rank: none of the rank pods' network
		// attachments, GPU node selector or devices (eight SR-IOV VFs on a
		// pod that only runs mpirun would take them from a worker), only
		// the site's kubernetes.launcher shape.
		ls := &shape{image: sh.image, env: sh.env, tolerations: sh.tolerations, sa: sh.sa, priority: sh.priority, labels: sh.labels}
		if sh.launcher != nil {
			ls.annotations, ls.nodeSelector, ls.resources = sh.launcher.annotations, sh.launcher.nodeSelector, sh.launcher.resources
		}
		lead = l.podTemplate(ls, lbl, "lead", leadScript, podOptions{env: env, deadline: active, nodes: w.pin})
	}
	if s.Role != "" {
		lead.Labels["gpuaccept.dev/pair-role"] = s.Role
	}
	fl, ok := flavours[flavor]
	if !ok {
		return fmt.Errorf("no workload kind %q", flavor)
	}
	fl.objects(l, flavourInput{w: w, sh: sh, meta: meta, lbl: lbl, lead: lead, worker: worker, podOpts: podOpts, starter: starter,
		leadScript: leadScript, workerScript: workerScript})
	return nil
}

func replicatedJob(name string, n int, tmpl corev1.PodTemplateSpec) map[string]any {
	return map[string]any{
		"name":     name,
		"replicas": int64(1),
		"template": map[string]any{"spec": map[string]any{
			"parallelism":    int64(n),
			"completions":    int64(n),
			"completionMode": "Indexed",
			"backoffLimit":   int64(0),
			"template":       toMap(&tmpl),
		}},
	}
}

// headless is the Service that gives an Indexed Job's pods their DNS names
// (<job>-<index>.<service>); published before the pods are ready, because
// mpirun reaches them while they start.
func (l *Launcher) headless(meta metav1.ObjectMeta, sel map[string]string) *unstructured.Unstructured {
	m := meta
	m.Labels = copyMap(meta.Labels)
	delete(m.Labels, LabelKueueQueue)
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: m,
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{LabelRun: sel[LabelRun], LabelStep: sel[LabelStep]},
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{{Name: "ssh", Port: sshPort, TargetPort: intstr.FromInt32(sshPort)}},
		},
	}
	return toUnstructured(svc)
}

type podOptions struct {
	secret string
	multi  bool // runs sshd: mounts the key Secret, spreads over nodes
	env    map[string]string
	gpus   int
	// deadline is the pods' activeDeadlineSeconds (nil: none).
	deadline *int64
	// nodes are the nodes the pod may run on (nil: any): a required node
	// affinity on the nodes' names.
	nodes []string
	// spread, when set, spreads pods one per node that carry these labels
	// besides the step's (the anti-affinity multi gives as well).
	spread map[string]string
	// claim, when set, is the pod's resource claim of a ComputeDomain
	// channel, made from the ResourceClaimTemplate claimTemplate.
	claim, claimTemplate string
}

// computeDomain is the IMEX ComputeDomain of a step over nodes nodes,
// whose channel claims come from the template named channel (seed 001's
// nccl-test-compute-domain: numNodes, channel.resourceClaimTemplate.name).
func computeDomain(name, namespace string, lbl map[string]string, nodes int, channel string) *unstructured.Unstructured {
	cd := newObject("resource.nvidia.com/v1beta1", "ComputeDomain", metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: copyMap(lbl)})
	cd.Object["spec"] = map[string]any{
		"numNodes": int64(nodes),
		"channel":  map[string]any{"resourceClaimTemplate": map[string]any{"name": channel}},
	}
	return cd
}

// kubeEscape keeps Kubernetes from expanding s, a container's command
// or an env value: the kubelet replaces $(NAME) by the variable NAME of
// the container and $$ by $ (k8s.io/api core/v1 Container.Command,
// EnvVar.Value: "Double $$ are reduced to a single $, which allows for
// escaping the $(VAR_NAME) syntax"), so a parameter holding $(NAME) or
// $$ would run other than the dry run and the journal show, and could
// leave the quoting of sh -c. Every $ that starts "$(" or "$$" is
// doubled; any other $ is left as it is (the kubelet keeps it).
func kubeEscape(s string) string {
	if !strings.Contains(s, "$$") && !strings.Contains(s, "$(") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if s[i] == '$' && i+1 < len(s) && (s[i+1] == '$' || s[i+1] == '(') {
			b.WriteByte('$')
		}
	}
	return b.String()
}

// podTemplate is the pod every flavor runs: one container, the SKU's
// shape, and role in the labels.
func (l *Launcher) podTemplate(sh *shape, lbl map[string]string, role, script string, o podOptions) corev1.PodTemplateSpec {
	labels := copyMap(sh.labels)
	for k, v := range lbl {
		labels[k] = v
	}
	if role != "" {
		labels[LabelRole] = role
	}
	res := corev1.ResourceList{}
	for k, v := range sh.resources {
		res[k] = v
	}
	if sh.gpuResource != "" && o.gpus > 0 {
		res[sh.gpuResource] = *resource.NewQuantity(int64(o.gpus), resource.DecimalSI)
	}
	c := corev1.Container{
		Name:    containerName,
		Image:   sh.image,
		Command: []string{"/bin/sh", "-c", kubeEscape(script)},
		// The Node's name, so that a health check names the Node it ran
		// on (the one --taint-on-fail marks), not the pod.
		Env: []corev1.EnvVar{{Name: "GPUACCEPT_RUN", Value: l.RunID},
			{Name: "GPUACCEPT_NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
	}
	for _, k := range sortedKeys(o.env) {
		c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: kubeEscape(o.env[k])})
	}
	if len(res) > 0 {
		c.Resources = corev1.ResourceRequirements{Limits: res, Requests: res}
	}
	if o.claim != "" {
		c.Resources.Claims = []corev1.ResourceClaim{{Name: o.claim}}
	}
	if sh.ipcLock || sh.privileged {
		c.SecurityContext = &corev1.SecurityContext{}
		if sh.ipcLock {
			c.SecurityContext.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}}
		}
		if sh.privileged {
			c.SecurityContext.Privileged = ptr.To(true)
		}
	}
	spec := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		EnableServiceLinks:            ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To(int64(5)),
		ActiveDeadlineSeconds:         o.deadline,
		Tolerations:                   sh.tolerations,
		NodeSelector:                  copyMap(sh.nodeSelector),
		ServiceAccountName:            sh.sa,
		PriorityClassName:             sh.priority,
		HostNetwork:                   sh.hostNetwork,
	}
	if len(spec.NodeSelector) == 0 {
		spec.NodeSelector = nil
	}
	if sh.hostNetwork {
		spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	if sh.shm != nil {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "dshm", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: sh.shm}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "dshm", MountPath: "/dev/shm"})
	}
	if o.claim != "" {
		spec.ResourceClaims = []corev1.PodResourceClaim{{Name: o.claim, ResourceClaimTemplateName: ptr.To(o.claimTemplate)}}
	}
	for i, h := range sh.hostPaths {
		name := fmt.Sprintf("host-%d", i)
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: h.Path}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: h.Mount})
	}
	if o.multi {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "ssh", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: o.secret, DefaultMode: ptr.To(int32(0o400))}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "ssh", MountPath: sshSecretDir, ReadOnly: true})
	}
	if o.multi || o.spread != nil {
		// One pod per node: two ranks' pods on one node would measure
		// NVLink where the test asks for the network.
		sel := map[string]string{LabelRun: lbl[LabelRun], LabelStep: lbl[LabelStep]}
		for k, v := range o.spread {
			sel[k] = v
		}
		spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: sel},
				TopologyKey:   "kubernetes.io/hostname",
			}},
		}}
	}
	if len(o.nodes) > 0 {
		if spec.Affinity == nil {
			spec.Affinity = &corev1.Affinity{}
		}
		spec.Affinity.NodeAffinity = pinAffinity(o.nodes)
	}
	spec.Containers = []corev1.Container{c}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: copyMap(sh.annotations)},
		Spec:       spec,
	}
}

// pinAffinity is the required node affinity that lets a pod run only on
// nodes: one term per node (terms are ORed), each matching the Node
// object's metadata.name, as the DaemonSet controller pins its pods. The
// kubernetes.io/hostname label would do on most clusters, but it is the
// kubelet's hostname, which need not be the node's name.
func pinAffinity(nodes []string) *corev1.NodeAffinity {
	terms := make([]corev1.NodeSelectorTerm, len(nodes))
	for i, n := range nodes {
		// The API server takes one value per metadata.name requirement.
		terms[i] = corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}}}}
	}
	return &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func newObject(apiVersion, kind string, meta metav1.ObjectMeta) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{}}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetName(meta.Name)
	o.SetNamespace(meta.Namespace)
	o.SetLabels(meta.Labels)
	return o
}

// toMap converts a typed API object to its JSON-shaped map, without the
// empty fields (creationTimestamp: null, status: {}) the conversion adds.
func toMap(obj any) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		// Only unconvertible Go types fail, and these are API types.
		panic(fmt.Sprintf("convert %T: %v", obj, err))
	}
	prune(m)
	delete(m, "status")
	return m
}

func toUnstructured(obj any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: toMap(obj)}
}

func prune(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(x)
			if len(x) == 0 && (k == "status" || k == "metadata" || k == "resources") {
				delete(m, k)
			}
		case []any:
			for _, e := range x {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
		}
	}
}

// mpiImplementation is what mpi-operator is told the launcher pod runs,
// so it writes the hostfile and environment that MPI reads.
func mpiImplementation(s rankstart.Starter) string {
	if s.Family() == rankstart.FamilyMPICH {
		return "MPICH"
	}
	return "OpenMPI"
}
