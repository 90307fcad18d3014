# Part of service "k8s" (sourced by scripts/testenv.d/k8s.sh): the real
# JobSet controller (sigs.k8s.io/jobset), so that --k8s-flavor jobset is run
# by the controller the clusters run, not only accepted by its CRD.
#
# The manager runs on the host, outside the cluster: it talks to the API
# server through a kubeconfig, and the API server calls its webhooks at
# https://127.0.0.1 (clientConfig.url, a caBundle of a CA made here). The
# webhooks are needed, not optional: the JobSet controller assumes what the
# mutating webhook defaults (spec.successPolicy is dereferenced unchecked,
# the network's DNS hostnames default on), and the CRD's schema defaults
# do not cover those. JobSet's internal cert rotator is off: it would write
# its certs into a Secret in its own namespace and a Service-named SAN the
# API server could not reach; the certs come from a folder instead.
#
# Ports (loopback): 17870 webhooks (https), 17871 metrics (https,
# authenticated), 17872 health probes (http: /healthz, /readyz).

k8s_jobset_ports() {
	K8S_JOBSET_WEBHOOK_PORT=17870
	K8S_JOBSET_METRICS_PORT=17871
	K8S_JOBSET_PROBE_PORT=17872
}

# k8s_jobset_build: build the manager unless a finished build is cached;
# sets K8S_JOBSET_BIN to the manager binary. JobSet builds in its own
# module, not with Kueue and mpi-operator (controllers.sh): its webhooks
# need controller-runtime v0.22, Kueue's module graph brings v0.23.
k8s_jobset_build() {
	local dir v
	dir=$(k8s_cache_dir jobset jobset/go.mod jobset/go.sum) || return 1
	K8S_JOBSET_BIN=$dir/jobset-manager
	v=$(k8s_jobset_version "$root/scripts/k8s-tools/jobset") || { k8s_log "could not read the JobSet version from scripts/k8s-tools/jobset/go.mod"; return 1; }
	k8s_build_cached "the JobSet manager $v" "$dir" k8s_jobset_build_into "$v"
}

# k8s_jobset_build_into TMP VERSION (cold: about 8 minutes on a shared
# 2-core machine).
k8s_jobset_build_into() {
	k8s_log "building the JobSet manager $2 (cold: about 8 minutes on a shared 2-core machine) into $1"
	(cd "$root/scripts/k8s-tools/jobset" && CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w -X sigs.k8s.io/jobset/pkg/version.GitVersion=$2" \
		-o "$1/jobset-manager" sigs.k8s.io/jobset)
}

# k8s_jobset_version DIR: the sigs.k8s.io/jobset version the tools module
# in DIR requires.
k8s_jobset_version() {
	(cd "$1" && go list -m -f '{{.Version}}' sigs.k8s.io/jobset)
}

# k8s_jobset_certs DIR: a CA and the webhook/metrics serving cert for
# 127.0.0.1, named as controller-runtime looks for them (tls.crt, tls.key).
k8s_jobset_certs() {
	local d=$1
	mkdir -p "$d"
	openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=gpuaccept-testenv-jobset-ca \
		-keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null || return 1
	openssl req -newkey rsa:2048 -nodes -subj /CN=jobset-webhook -keyout "$d/tls.key" -out "$d/tls.csr" 2>/dev/null || return 1
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$d/san.ext"
	openssl x509 -req -in "$d/tls.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 30 \
		-extfile "$d/san.ext" -out "$d/tls.crt" 2>/dev/null
}

# k8s_jobset_webhooks DIR CA: the manager's four webhooks as JobSet's
# config/components/webhook installs them (its kustomize patches included:
# the pod webhooks see only pods labelled with a JobSet name, so other pods
# never depend on this manager), reached by URL instead of a Service.
k8s_jobset_webhooks() {
	local url=https://127.0.0.1:$K8S_JOBSET_WEBHOOK_PORT ca
	ca=$(base64 -w0 "$2") || return 1
	cat >"$1/mutating.yaml" <<WEBHOOKS
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: gpuaccept-testenv-jobset
webhooks:
- name: mjobset.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/mutate-jobset-x-k8s-io-v1alpha2-jobset", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  timeoutSeconds: 10
  rules:
  - {apiGroups: [jobset.x-k8s.io], apiVersions: [v1alpha2], operations: [CREATE], resources: [jobsets]}
- name: mpod.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/mutate--v1-pod", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  timeoutSeconds: 10
  objectSelector:
    matchExpressions:
    - {key: jobset.sigs.k8s.io/jobset-name, operator: Exists}
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
WEBHOOKS
	cat >"$1/validating.yaml" <<WEBHOOKS
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: gpuaccept-testenv-jobset
webhooks:
- name: vjobset.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/validate-jobset-x-k8s-io-v1alpha2-jobset", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  timeoutSeconds: 10
  rules:
  - {apiGroups: [jobset.x-k8s.io], apiVersions: [v1alpha2], operations: [CREATE, UPDATE], resources: [jobsets]}
- name: vpod.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/validate--v1-pod", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  timeoutSeconds: 10
  objectSelector:
    matchExpressions:
    - {key: jobset.sigs.k8s.io/jobset-name, operator: Exists}
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
WEBHOOKS
}

# k8s_jobset_probe FILE: a JobSet for a server-side dry run, which passes
# through both JobSet webhooks: it answers only once the API server can
# reach them and trusts their cert.
k8s_jobset_probe() {
	cat >"$1" <<'PROBE'
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: gpuaccept-testenv-probe}
spec:
  replicatedJobs:
  - name: lead
    template:
      spec:
        template:
          spec:
            containers: [{name: c, image: busybox:1}]
PROBE
}

# k8s_jobset_start KUBECONFIG: install the JobSet CRD (unless installed)
# and the manager's webhooks, and start the manager with KUBECONFIG's
# credentials (it watches JobSets, Jobs, Pods and Services cluster-wide:
# an admin's). Builds the manager first unless K8S_JOBSET_BIN is set.
k8s_jobset_start() {
	local kc=$1 d=$K8S_DIR/jobset tools=$root/scripts/k8s-tools/jobset src crd
	local crdpath=/apis/apiextensions.k8s.io/v1/customresourcedefinitions
	k8s_jobset_ports
	[ -n "${K8S_JOBSET_BIN:-}" ] || k8s_jobset_build || return 1
	mkdir -p "$d" "$K8S_DIR/logs"
	k8s_jobset_certs "$d/certs" || { k8s_log "could not make the JobSet webhook certs in $d/certs"; return 1; }

	# The CRD comes from the module the manager is built from, so that the
	# two agree even if scripts/k8s-tools/crds moves to another version.
	src=$(cd "$tools" && go mod download sigs.k8s.io/jobset && go list -m -f '{{.Dir}}' sigs.k8s.io/jobset) ||
		{ k8s_log "could not find sigs.k8s.io/jobset through $tools"; return 1; }
	crd=$src/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml
	if ! k8s_curl GET "$crdpath/jobsets.jobset.x-k8s.io" >/dev/null 2>&1; then
		k8s_log "installing the JobSet CRD from $crd"
		k8s_curl POST "$crdpath" "$crd" >/dev/null || { k8s_log "installing the JobSet CRD from $crd failed"; return 1; }
	fi
	k8s_wait jobset-crd k8s_curl GET /apis/jobset.x-k8s.io/v1alpha2/jobsets || return 1

	cat >"$d/config.yaml" <<CONFIG
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
webhook: {host: 127.0.0.1, port: $K8S_JOBSET_WEBHOOK_PORT, certDir: "$d/certs"}
metrics: {bindAddress: "127.0.0.1:$K8S_JOBSET_METRICS_PORT", certDir: "$d/certs"}
health: {healthProbeBindAddress: "127.0.0.1:$K8S_JOBSET_PROBE_PORT"}
clientConnection: {qps: 500, burst: 500}
CONFIG
	k8s_log "starting the JobSet manager (webhooks https://127.0.0.1:$K8S_JOBSET_WEBHOOK_PORT)"
	"$K8S_JOBSET_BIN" --kubeconfig "$kc" --config "$d/config.yaml" \
		>"$K8S_DIR/logs/jobset.log" 2>&1 &
	started k8s-jobset $!
	# readyz turns ready once the webhook server listens with its certs.
	k8s_wait jobset curl -sf "http://127.0.0.1:$K8S_JOBSET_PROBE_PORT/readyz" || return 1

	# Installed after the manager is ready: with failurePolicy Fail, a JobSet
	# created before would be refused.
	k8s_jobset_webhooks "$d" "$d/certs/ca.crt" || return 1
	local kind
	for kind in mutating validating; do
		k8s_curl DELETE "/apis/admissionregistration.k8s.io/v1/${kind}webhookconfigurations/gpuaccept-testenv-jobset" >/dev/null 2>&1 || true
		k8s_curl POST "/apis/admissionregistration.k8s.io/v1/${kind}webhookconfigurations" "$d/$kind.yaml" >/dev/null ||
			{ k8s_log "installing the JobSet $kind webhooks from $d/$kind.yaml failed"; return 1; }
	done
	k8s_jobset_probe "$d/probe.yaml"
	k8s_wait jobset k8s_curl POST "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets?dryRun=All" "$d/probe.yaml" || return 1
	k8s_log "JobSet manager up (log $K8S_DIR/logs/jobset.log)"
}

# k8s_jobset_stop: stop the manager, before the API server, so that it does
# not spend its shutdown retrying a server that is gone. Its webhooks go
# first: with failurePolicy Fail they would refuse every JobSet (and every
# JobSet pod) of a control plane that outlives the manager. Under
# "testenv.sh down" nothing says how to reach the API server (and it stops
# too): then only the manager stops.
k8s_jobset_stop() {
	local kind
	if [ -e "$state/pids/k8s-jobset" ] && [ -n "${K8S_ADMIN_TOKEN:-}" ] && [ -n "${K8S_DIR:-}" ] && [ -n "${K8S_API_PORT:-}" ]; then
		for kind in mutating validating; do
			k8s_curl DELETE "/apis/admissionregistration.k8s.io/v1/${kind}webhookconfigurations/gpuaccept-testenv-jobset" >/dev/null 2>&1 || true
		done
	fi
	stop_pid k8s-jobset
}
