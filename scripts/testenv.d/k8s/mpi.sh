# Part of service "k8s" (sourced by scripts/testenv.d/k8s.sh): Kubeflow's
# mpi-operator, so the launcher's --k8s-flavor mpijob is run by the real
# MPIJob controller, and Kueue, so its --k8s-queue label is held and admitted
# by the real one. Both are built from the Go module proxy through
# scripts/k8s-tools/controllers (one build for both) and cached in
# ${GPUACCEPT_TESTENV_CACHE:-~/.cache/gpuaccept-testenv}/mpi-HASH.
#
# Ports (loopback):
#   17875 mpi-operator /metrics   17876 mpi-operator /healthz
#   17877 Kueue webhooks (https)  17878 (Kueue metrics: off)  17879 Kueue /healthz /readyz
#
# Kueue manages only namespaces labelled gpuaccept.dev/kueue=true (see
# k8s_kueue_queue): other tests' workloads carry queue labels of SKU files
# that name no LocalQueue here, and Kueue would hold them forever.
#
# Functions:
#   k8s_mpi_build                 sets K8S_MPI_OPERATOR_BIN and K8S_KUEUE_BIN
#   k8s_mpi_start KUBECONFIG      mpi-operator, cluster-wide (MPIJob CRD installed first)
#   k8s_kueue_start KUBECONFIG    Kueue: CRDs, webhooks, a ClusterQueue and ResourceFlavor
#   k8s_kueue_queue NAMESPACE     opts NAMESPACE in and makes LocalQueue gpuaccept-test there
#   k8s_kueue_stop                stops Kueue and removes its webhook configurations

# k8s_mpi_ports: versions, ports and names; every entry point sets them.
k8s_mpi_ports() {
	K8S_MPI_OPERATOR_VERSION=v0.8.0
	K8S_KUEUE_VERSION=v0.17.0
	K8S_MPI_METRICS_PORT=17875
	K8S_MPI_HEALTH_PORT=17876
	K8S_KUEUE_WEBHOOK_PORT=17877
	K8S_KUEUE_HEALTH_PORT=17879
	# Kueue's namespace (its Secret and events) and the names its cert rotator
	# derives from the webhook Service's: <base>-{mutating,validating}-webhook-configuration.
	K8S_KUEUE_NS=gpuaccept-kueue
	K8S_KUEUE_SVC=gpuaccept-kueue-webhook-service
	K8S_KUEUE_WH_BASE=gpuaccept-kueue
	K8S_KUEUE_QUEUE=gpuaccept-test
	K8S_KUEUE_NS_LABEL=gpuaccept.dev/kueue
}

# k8s_mpi_build: build the workload controllers (k8s_controllers_build);
# sets K8S_MPI_OPERATOR_BIN and K8S_KUEUE_BIN.
k8s_mpi_build() {
	k8s_mpi_ports
	k8s_controllers_build || return 1
	K8S_MPI_OPERATOR_BIN=$K8S_CONTROLLERS_DIR/mpi-operator
	K8S_KUEUE_BIN=$K8S_CONTROLLERS_DIR/kueue
}

# k8s_mpi_crd_ready: the MPIJob CRD is served (the operator exits without it).
k8s_mpi_crd_ready() {
	k8s_curl GET /apis/kubeflow.org/v2beta1/mpijobs?limit=1 >/dev/null
}

# k8s_mpi_ensure_crd: install the MPIJob CRD of the operator's module version
# when the API server does not serve it yet (up_k8s copies it into
# $K8S_DIR/crds for the tests, which install it themselves too).
k8s_mpi_ensure_crd() {
	k8s_mpi_crd_ready 2>/dev/null && return 0
	local crd=$K8S_DIR/crds/kubeflow.org_mpijobs.yaml
	if [ ! -s "$crd" ]; then
		mkdir -p "$K8S_DIR/crds"
		crd=$(cd "$root/scripts/k8s-tools/controllers" && go list -m -f '{{.Dir}}' github.com/kubeflow/mpi-operator)/manifests/base/kubeflow.org_mpijobs.yaml
	fi
	k8s_curl POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions "$crd" >/dev/null ||
		{ k8s_log "installing the MPIJob CRD from $crd failed"; return 1; }
	k8s_wait mpijob-crd k8s_mpi_crd_ready
}

# k8s_mpi_start KUBECONFIG: run mpi-operator against the cluster of KUBECONFIG.
# --cluster-domain: the hostfile then names the workers by their full DNS
# names (<pod>.<job>.<ns>.svc.cluster.local), which CoreDNS serves.
k8s_mpi_start() {
	k8s_mpi_ports
	local kc=$1
	[ -n "${K8S_MPI_OPERATOR_BIN:-}" ] || k8s_mpi_build || return 1
	k8s_mpi_ensure_crd || return 1
	mkdir -p "$K8S_DIR/logs"
	k8s_log "starting mpi-operator $K8S_MPI_OPERATOR_VERSION (health on 127.0.0.1:$K8S_MPI_HEALTH_PORT)"
	"$K8S_MPI_OPERATOR_BIN" --kubeConfig "$kc" --cluster-domain cluster.local \
		--metrics-addr "127.0.0.1:$K8S_MPI_METRICS_PORT" --health-addr "127.0.0.1:$K8S_MPI_HEALTH_PORT" \
		--kube-api-qps 50 --kube-api-burst 100 \
		>"$K8S_DIR/logs/mpi-operator.log" 2>&1 &
	started k8s-mpi-operator $!
	k8s_wait mpi-operator curl -sf "http://127.0.0.1:$K8S_MPI_HEALTH_PORT/healthz"
}

# k8s_mpi_send METHOD PATH CONTENT-TYPE FILE: k8s_curl with a body of another
# type (server-side apply, merge patch).
k8s_mpi_send() { k8s_curl "$1" "$2" "$4" "$3"; }

# k8s_mpi_apply PATH FILE: server-side apply of FILE's object at PATH (its
# full path, name included), so that a second start over the same control
# plane updates what the first made.
k8s_mpi_apply() {
	k8s_mpi_send PATCH "$1?fieldManager=gpuaccept-testenv&force=true" application/apply-patch+yaml "$2" >/dev/null ||
		{ k8s_log "applying $2 to $1 failed"; return 1; }
}

# k8s_kueue_pki DIR: a CA and the webhook server's cert, made with openssl.
# Kueue starts only with its internal cert management on, or with a metrics
# cert in the fixed /etc/kueue/metrics/certs (cmd/kueue/main.go), which
# would outlive "down". So its rotator stays on, given a Secret holding
# these: it keeps a CA and cert that verify (the CA for DNS name kueue-ca,
# the cert for <service>.<namespace>.svc, both valid past its 90-day
# lookahead) and puts the CA in the webhooks' caBundle, which is already
# this CA. It writes no files: the webhook server reads the certificate
# from its certDir, where a pod would mount the Secret, so k8s_kueue_start
# copies them there. The cert also names 127.0.0.1, the
# address the API server calls (clientConfig.url): it runs on the host and
# could not reach a Service.
k8s_kueue_pki() {
	local p=$1
	mkdir -p "$p"
	[ -s "$p/tls.crt" ] && return 0
	# -traditional: the rotator reads the CA key as PKCS#1.
	openssl genrsa -traditional -out "$p/ca.key" 2048 2>/dev/null
	openssl req -x509 -new -key "$p/ca.key" -days 3650 -subj /O=kueue/CN=kueue-ca \
		-addext subjectAltName=DNS:kueue-ca -addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign -out "$p/ca.crt" 2>/dev/null
	openssl genrsa -traditional -out "$p/tls.key" 2048 2>/dev/null
	openssl req -new -key "$p/tls.key" -subj "/CN=$K8S_KUEUE_SVC.$K8S_KUEUE_NS.svc" -out "$p/tls.csr" 2>/dev/null
	printf 'subjectAltName=DNS:%s.%s.svc,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' "$K8S_KUEUE_SVC" "$K8S_KUEUE_NS" >"$p/tls.ext"
	openssl x509 -req -in "$p/tls.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial -days 3650 \
		-extfile "$p/tls.ext" -out "$p/tls.crt" 2>/dev/null
}

# k8s_kueue_manifests SRC OUT: Kueue's CRDs and webhook configurations from
# its module (SRC), rewritten for a webhook server on the host: clientConfig
# url https://127.0.0.1:PORT with the CA of k8s_kueue_pki; only the webhooks
# of Kueue's own objects and of the integrations enabled (batch/job,
# kubeflow.org/mpijob, jobset.x-k8s.io/jobset), those of workloads only in
# namespaces k8s_kueue_queue opted in. Kueue serves no webhook for an
# integration it does not run, and a configured one with failurePolicy
# Fail would refuse every such object in the cluster. The CRDs whose
# conversion webhook Kueue's kustomization enables get it, as deployed.
k8s_kueue_manifests() {
	python3 - "$1" "$2" "https://127.0.0.1:$K8S_KUEUE_WEBHOOK_PORT" "$(base64 -w0 "$2/pki/ca.crt")" \
		"$K8S_KUEUE_WH_BASE" "$K8S_KUEUE_NS_LABEL" <<'PY'
import glob, json, os, sys, yaml
src, out, url, ca, base, nslabel = sys.argv[1:]
kueue_own = ("clusterqueue", "cohort", "resourceflavor", "workload", "localqueue")
workloads = ("job", "mpijob", "jobset")
conversion = {"localqueues", "clusterqueues", "workloads", "cohorts", "multikueueclusters"}
os.makedirs(f"{out}/crds", exist_ok=True)
for f in sorted(glob.glob(f"{src}/config/components/crd/bases/*.yaml")):
    crd = yaml.safe_load(open(f))
    if crd["spec"]["names"]["plural"] in conversion:
        crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": url + "/convert", "caBundle": ca}, "conversionReviewVersions": ["v1"]}}
    json.dump(crd, open(f"{out}/crds/{crd['metadata']['name']}.json", "w"))
kept = []
for doc in yaml.safe_load_all(open(f"{src}/config/components/webhook/manifests.yaml")):
    if not doc:
        continue
    kind = doc["kind"]
    doc["metadata"]["name"] = base + ("-mutating" if kind.startswith("Mutating") else "-validating") + "-webhook-configuration"
    whs = []
    for wh in doc["webhooks"]:
        obj = wh["name"].split(".")[0][1:]
        if obj not in kueue_own + workloads:
            continue
        wh["clientConfig"] = {"url": url + wh["clientConfig"]["service"]["path"], "caBundle": ca}
        if obj in workloads:
            wh["namespaceSelector"] = {"matchLabels": {nslabel: "true"}}
        whs.append(wh)
        kept.append(wh["name"])
    doc["webhooks"] = whs
    json.dump(doc, open(f"{out}/{doc['metadata']['name']}.json", "w"))
if len(kept) < 12:
    sys.exit(f"Kueue's webhook manifests in {src} changed: kept only {kept}")
PY
}

# k8s_kueue_start KUBECONFIG: Kueue against the cluster of KUBECONFIG, with a
# ResourceFlavor gpuaccept-default and a ClusterQueue gpuaccept-test whose
# quota is the two test nodes' (16 GPUs); LocalQueues come from
# k8s_kueue_queue. Pods: cpu, memory, nvidia.com/gpu and rdma/ib count;
# other resources (a site's NICs, hugepages) are left out of admission.
k8s_kueue_start() {
	k8s_mpi_ports
	local kc=$1 d=$K8S_DIR/kueue src f
	need_apt python3-yaml openssl
	[ -n "${K8S_KUEUE_BIN:-}" ] || k8s_mpi_build || return 1
	src=$(cd "$root/scripts/k8s-tools/controllers" && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue) || return 1
	mkdir -p "$d/certs" "$K8S_DIR/logs"
	k8s_kueue_pki "$d/pki"
	cp "$d/pki/ca.crt" "$d/pki/tls.crt" "$d/pki/tls.key" "$d/certs/"
	k8s_kueue_manifests "$src" "$d" || { k8s_log "rewriting Kueue's manifests from $src failed"; return 1; }
	for f in "$d"/crds/*.json; do
		k8s_mpi_apply "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$(basename "$f" .json)" "$f" || return 1
	done
	k8s_wait kueue-crds k8s_curl GET /apis/kueue.x-k8s.io/v1beta2/clusterqueues || return 1
	cat >"$d/objects.yaml" <<OBJ
apiVersion: v1
kind: Namespace
metadata: {name: $K8S_KUEUE_NS}
OBJ
	k8s_mpi_apply "/api/v1/namespaces/$K8S_KUEUE_NS" "$d/objects.yaml" || return 1
	cat >"$d/secret.yaml" <<OBJ
apiVersion: v1
kind: Secret
metadata: {name: $K8S_KUEUE_SVC-cert, namespace: $K8S_KUEUE_NS}
data:
  ca.crt: $(base64 -w0 "$d/pki/ca.crt")
  ca.key: $(base64 -w0 "$d/pki/ca.key")
  tls.crt: $(base64 -w0 "$d/pki/tls.crt")
  tls.key: $(base64 -w0 "$d/pki/tls.key")
OBJ
	k8s_mpi_apply "/api/v1/namespaces/$K8S_KUEUE_NS/secrets/$K8S_KUEUE_SVC-cert" "$d/secret.yaml" || return 1
	for f in mutating validating; do
		k8s_mpi_apply "/apis/admissionregistration.k8s.io/v1/${f}webhookconfigurations/$K8S_KUEUE_WH_BASE-$f-webhook-configuration" \
			"$d/$K8S_KUEUE_WH_BASE-$f-webhook-configuration.json" || return 1
	done
	cat >"$d/config.yaml" <<CFG
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: $K8S_KUEUE_NS
health:
  healthProbeBindAddress: 127.0.0.1:$K8S_KUEUE_HEALTH_PORT
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: $K8S_KUEUE_WEBHOOK_PORT
  certDir: $d/certs
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
  webhookServiceName: $K8S_KUEUE_SVC
  webhookSecretName: $K8S_KUEUE_SVC-cert
managedJobsNamespaceSelector:
  matchLabels: {$K8S_KUEUE_NS_LABEL: "true"}
clientConnection: {qps: 50, burst: 100}
integrations:
  frameworks: [batch/job, kubeflow.org/mpijob, jobset.x-k8s.io/jobset]
resources:
  excludeResourcePrefixes: [hugepages-, ephemeral-storage, nvidia.com/mlnx, networking.gke.io/, k8s.amazonaws.com/, vpc.amazonaws.com/]
CFG
	k8s_log "starting Kueue $K8S_KUEUE_VERSION (webhooks on 127.0.0.1:$K8S_KUEUE_WEBHOOK_PORT, health on :$K8S_KUEUE_HEALTH_PORT)"
	# VisibilityOnDemand off: its API server would listen on :8082 of
	# every interface and needs an APIService the host cannot route.
	KUBECONFIG=$kc "$K8S_KUEUE_BIN" --config "$d/config.yaml" --feature-gates VisibilityOnDemand=false \
		>"$K8S_DIR/logs/kueue.log" 2>&1 &
	started k8s-kueue $!
	k8s_wait kueue curl -sf "http://127.0.0.1:$K8S_KUEUE_HEALTH_PORT/readyz" || return 1
	cat >"$d/flavor.yaml" <<OBJ
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpuaccept-default}
OBJ
	cat >"$d/clusterqueue.yaml" <<OBJ
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: $K8S_KUEUE_QUEUE}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu, amd.com/gpu, rdma/ib]
    flavors:
    - name: gpuaccept-default
      resources:
      - {name: cpu, nominalQuota: "256"}
      - {name: memory, nominalQuota: 2Ti}
      - {name: nvidia.com/gpu, nominalQuota: "16"}
      - {name: amd.com/gpu, nominalQuota: "16"}
      - {name: rdma/ib, nominalQuota: "16"}
OBJ
	# Kueue's own webhooks check these; they answer once /readyz does.
	k8s_mpi_apply /apis/kueue.x-k8s.io/v1beta2/resourceflavors/gpuaccept-default "$d/flavor.yaml" || return 1
	k8s_mpi_apply "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/$K8S_KUEUE_QUEUE" "$d/clusterqueue.yaml" || return 1
	k8s_wait kueue k8s_kueue_cq_active || return 1
	setenv GPUACCEPT_K8S_KUEUE_QUEUE "$K8S_KUEUE_QUEUE"
}

# k8s_kueue_cq_active: the ClusterQueue is Active (its flavor found).
k8s_kueue_cq_active() {
	local j
	j=$(k8s_curl GET "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/$K8S_KUEUE_QUEUE" | tr -d ' \n') || return 1
	case $j in *'"status":"True","type":"Active"'* | *'"type":"Active","status":"True"'*) return 0 ;; esac
	return 1
}

# k8s_kueue_queue NAMESPACE: let Kueue manage NAMESPACE (the label its
# managedJobsNamespaceSelector and workload webhooks select) and give it the
# LocalQueue gpuaccept-test of the ClusterQueue gpuaccept-test; --k8s-queue
# gpuaccept-test then has a workload in NAMESPACE held until admitted.
k8s_kueue_queue() {
	k8s_mpi_ports
	local ns=$1 f
	f=$(mktemp)
	printf '{"metadata":{"labels":{"%s":"true"}}}\n' "$K8S_KUEUE_NS_LABEL" >"$f"
	k8s_mpi_send PATCH "/api/v1/namespaces/$ns" application/merge-patch+json "$f" >/dev/null ||
		{ rm -f "$f"; k8s_log "labelling namespace $ns for Kueue failed"; return 1; }
	cat >"$f" <<OBJ
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: $K8S_KUEUE_QUEUE, namespace: $ns}
spec: {clusterQueue: $K8S_KUEUE_QUEUE}
OBJ
	k8s_mpi_apply "/apis/kueue.x-k8s.io/v1beta2/namespaces/$ns/localqueues/$K8S_KUEUE_QUEUE" "$f" || { rm -f "$f"; return 1; }
	rm -f "$f"
}

# k8s_kueue_stop: stop Kueue and remove its webhook configurations, which
# would otherwise send every opted-in workload to a server that is gone.
k8s_kueue_stop() {
	k8s_mpi_ports
	stop_pid k8s-kueue
	local f
	for f in mutating validating; do
		k8s_curl DELETE "/apis/admissionregistration.k8s.io/v1/${f}webhookconfigurations/$K8S_KUEUE_WH_BASE-$f-webhook-configuration" >/dev/null 2>&1 || true
	done
}
