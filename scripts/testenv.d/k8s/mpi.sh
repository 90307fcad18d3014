# Part of service "k8s" (sourced by scripts/testenv.d/k8s.sh): Kubeflow's
# mpi-operator, so the launcher's --k8s-flavor mpijob is run by the real
# MPIJob controller, and Kueue, so its --queue label is held and admitted
# by the real one. Both are built from the Go module proxy through
# scripts/k8s-tools/mpi-operator and scripts/k8s-tools/kueue and cached in
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

# k8s_mpi_dir: the cache folder for the current mpi-operator and Kueue modules.
k8s_mpi_dir() {
	local h
	h=$( (go version; cd "$root/scripts/k8s-tools" && cat mpi-operator/go.mod mpi-operator/go.sum mpi-operator/*.go kueue/go.mod kueue/go.sum) | sha256sum | cut -c1-16)
	echo "${GPUACCEPT_TESTENV_CACHE:-$HOME/.cache/gpuaccept-testenv}/mpi-$h"
}

# k8s_mpi_build: build mpi-operator and Kueue unless a finished build is cached.
k8s_mpi_build() {
	local dir tools=$root/scripts/k8s-tools tmp start
	dir=$(k8s_mpi_dir)
	K8S_MPI_OPERATOR_BIN=$dir/mpi-operator
	K8S_KUEUE_BIN=$dir/kueue
	if [ -e "$dir/.complete" ]; then
		k8s_log "mpi-operator and Kueue from cache $dir"
		return 0
	fi
	command -v go >/dev/null || { k8s_log "needs the Go toolchain to build mpi-operator and Kueue"; return 1; }
	tmp=$dir.partial.$$
	rm -rf "$dir".partial.*
	mkdir -p "$tmp"
	start=$(date +%s)
	k8s_log "building mpi-operator $K8S_MPI_OPERATOR_VERSION (cold: about 3-4 minutes) into $dir"
	(cd "$tools/mpi-operator" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/mpi-operator" .) ||
		{ k8s_log "building mpi-operator failed"; return 1; }
	k8s_log "building Kueue $K8S_KUEUE_VERSION (cold: about 5-6 minutes)"
	(cd "$tools/kueue" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$K8S_KUEUE_VERSION" \
		-o "$tmp/kueue" sigs.k8s.io/kueue/cmd/kueue) || { k8s_log "building Kueue failed"; return 1; }
	touch "$tmp/.complete"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	k8s_log "mpi-operator and Kueue built in $(($(date +%s) - start)) s"
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
		crd=$(cd "$root/scripts/k8s-tools/mpi-operator" && go list -m -f '{{.Dir}}' github.com/kubeflow/mpi-operator)/manifests/base/kubeflow.org_mpijobs.yaml
	fi
	k8s_curl POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions "$crd" >/dev/null ||
		{ k8s_log "installing the MPIJob CRD from $crd failed"; return 1; }
	k8s_wait mpijob-crd k8s_mpi_crd_ready
}

# k8s_mpi_start KUBECONFIG: run mpi-operator against the cluster of KUBECONFIG.
# --cluster-domain: the hostfile then names the workers by their full DNS
# names (<pod>.<job>.<ns>.svc.cluster.local), which CoreDNS serves.
k8s_mpi_start() {
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
