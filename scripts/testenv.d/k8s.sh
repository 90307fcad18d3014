# Service "k8s": a real Kubernetes control plane on loopback for the k8s
# launcher's tests: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kwok (fake kubelets: pods run, complete and serve logs
# without containers). Sourced by scripts/testenv.sh.
#
# No registry serves these binaries here, so they are built from the Go module
# proxy through the tools modules in scripts/k8s-tools/ (a cold build takes
# 8+ minutes and about 3 GB of memory) and cached outside the repository in
# ~/.cache/gpuaccept-testenv/k8s-HASH, HASH covering the tools modules' go.mod
# and go.sum and the Go version: a change to any of them builds anew.
#
# Ports (loopback only, the Kubernetes range 17840-17879):
#   17840 kube-apiserver (https)   17841 etcd client   17842 etcd peer
#   17843 kwok (kubelet endpoint)  17844 kube-controller-manager (https)
#   17845 kube-scheduler (https)
#
# Variables written to .testenv/env:
#   GPUACCEPT_K8S_KUBECONFIG  kubeconfig of the admin user (system:masters)
#   GPUACCEPT_K8S_SERVER      https://127.0.0.1:17840
#   GPUACCEPT_K8S_BIN         folder of the built binaries
#   GPUACCEPT_K8S_CRDS        folder of the JobSet/Volcano/MPIJob CRDs found in
#                             the module cache (tests install them), when found
#   GPUACCEPT_K8S_NODES       names of the fake nodes, space-separated

# The real nodes, CoreDNS and the workload controllers, a file each.
# (Not "f": testenv.sh's own loop over the services is sourcing this file
# with it.)
for k8s_part in "$root"/scripts/testenv.d/k8s/*.sh; do
	# shellcheck source=/dev/null
	. "$k8s_part"
done

k8s_ports() {
	K8S_API_PORT=17840
	K8S_ETCD_PORT=17841
	K8S_ETCD_PEER_PORT=17842
	K8S_KWOK_PORT=17843
	K8S_KCM_PORT=17844
	K8S_SCHED_PORT=17845
}

# k8s_log MSG: progress on stderr, so a cold CI build says what it is doing.
k8s_log() { echo "testenv k8s: $*" >&2; }

# k8s_cache_dir NAME FILE...: print the cache folder of NAME's build,
# ${GPUACCEPT_TESTENV_CACHE:-~/.cache/gpuaccept-testenv}/NAME-HASH, HASH over
# the Go version and FILEs (paths under scripts/k8s-tools): a change to any
# of them builds anew.
k8s_cache_dir() {
	local name=$1 h
	shift
	h=$( (go version; cd "$root/scripts/k8s-tools" && cat "$@") | sha256sum | cut -c1-16) || return 1
	echo "${GPUACCEPT_TESTENV_CACHE:-$HOME/.cache/gpuaccept-testenv}/$name-$h"
}

# k8s_build_cached WHAT DIR FN [ARG...]: unless DIR holds a finished build,
# run FN TMP ARG... to build into TMP (DIR.partial.PID), then make TMP DIR.
# A build that was interrupted leaves its partial folder: the next starts
# clean.
k8s_build_cached() {
	local what=$1 dir=$2 fn=$3 tmp start
	shift 3
	if [ -e "$dir/.complete" ]; then
		k8s_log "$what from cache $dir"
		return 0
	fi
	command -v go >/dev/null || { k8s_log "needs the Go toolchain to build $what"; return 1; }
	tmp=$dir.partial.$$
	rm -rf "$dir".partial.*
	mkdir -p "$tmp"
	start=$(date +%s)
	"$fn" "$tmp" "$@" || { k8s_log "building $what failed"; return 1; }
	touch "$tmp/.complete"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	k8s_log "$what built in $(($(date +%s) - start)) s"
}

# k8s_bin_dir: print the cache folder for the control plane's tools modules.
k8s_bin_dir() {
	k8s_cache_dir k8s {etcd,kube,kwok}/go.mod {etcd,kube,kwok}/go.sum
}

# k8s_build DIR: build the control plane into DIR unless a finished build is there.
k8s_build() { k8s_build_cached "the control plane" "$1" k8s_build_into; }

# k8s_build_into TMP: etcd, kwok, kube-apiserver, kube-controller-manager
# and kube-scheduler.
k8s_build_into() {
	local tmp=$1 tools=$root/scripts/k8s-tools
	# -s -w: the linker of kube-apiserver is the step that needs the most memory.
	local ld="-s -w"
	local kv="-X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean"
	k8s_log "building etcd v3.6.16 (cold: about 1-2 minutes) into $tmp"
	(cd "$tools/etcd" && go build -trimpath -ldflags "$ld" -o "$tmp/etcd" go.etcd.io/etcd/server/v3) || return 1
	k8s_log "building kwok v0.8.0 (cold: about 2 minutes)"
	(cd "$tools/kwok" && go build -trimpath -ldflags "$ld" -o "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok) || return 1
	k8s_log "building kube-apiserver, kube-controller-manager, kube-scheduler v1.37.2 (cold: 8+ minutes, ~3 GB)"
	(cd "$tools/kube" && go build -trimpath -ldflags "$ld $kv" -o "$tmp/" \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler) || return 1
}

# k8s_curl METHOD PATH [FILE [CONTENT-TYPE]]: call the API server as the
# admin, sending FILE as the body, YAML or JSON unless CONTENT-TYPE says
# otherwise (a patch: application/merge-patch+json, ...). The API server
# reads YAML bodies, so no kubectl is needed.
k8s_curl() {
	local args=(-sS --max-time 30 --fail-with-body --cacert "$K8S_DIR/pki/ca.crt" -H "Authorization: Bearer $K8S_ADMIN_TOKEN" -X "$1")
	[ $# -lt 3 ] || args+=(-H "Content-Type: ${4:-application/yaml}" --data-binary "@$3")
	curl "${args[@]}" "https://127.0.0.1:$K8S_API_PORT$2"
}

# k8s_wait NAME CMD...: run CMD until it succeeds, up to 60 s.
k8s_wait() {
	local name=$1 i
	shift
	for i in $(seq 600); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	k8s_log "$name did not come up in 60 s; its log: $K8S_DIR/logs/$name.log"
	tail -20 "$K8S_DIR/logs/$name.log" >&2 || true
	return 1
}

# k8s_pki: a CA, the API server's serving cert, the service-account key.
k8s_pki() {
	local p=$K8S_DIR/pki
	mkdir -p "$p"
	openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=gpuaccept-testenv-ca \
		-keyout "$p/ca.key" -out "$p/ca.crt" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver -keyout "$p/apiserver.key" -out "$p/apiserver.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\n' >"$p/san.ext"
	openssl x509 -req -in "$p/apiserver.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial -days 30 \
		-extfile "$p/san.ext" -out "$p/apiserver.crt" 2>/dev/null
	openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
	openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
}

# k8s_kubeconfig FILE USER TOKEN NAMESPACE
k8s_kubeconfig() {
	cat >"$1" <<KCFG
apiVersion: v1
kind: Config
clusters:
- name: testenv
  cluster:
    server: https://127.0.0.1:$K8S_API_PORT
    certificate-authority: $K8S_DIR/pki/ca.crt
users:
- name: $2
  user:
    token: $3
contexts:
- name: testenv
  context: {cluster: testenv, user: $2, namespace: $4}
current-context: testenv
KCFG
}

# k8s_kwok_config FILE: kwok's node and pod stages: its "fast" set, from
# the module cache, where a Job's pods complete as soon as they run, plus
# the tests' stand-ins for what goes wrong on real nodes, chosen by pod
# annotation:
#   gpuaccept.dev/kwok-hang                    runs until deleted (a hung benchmark)
#   gpuaccept.dev/kwok-fail: ImagePullBackOff  never starts, as with a bad image
#   gpuaccept.dev/kwok-fail: OOMKilled         runs, then is OOM-killed (exit 137)
k8s_kwok_config() {
	local src
	src=$(cd "$root/scripts/k8s-tools/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
	{
		cat "$src/node/fast/node-initialize.yaml"
		echo ---
		cat "$src/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml"
		echo ---
		sed "/^    matchExpressions:/a\\
    - key: '.metadata.annotations[\"gpuaccept.dev/kwok-fail\"]'\\
      operator: 'NotIn'\\
      values: ['ImagePullBackOff']" "$src/pod/fast/pod-ready.yaml"
		echo ---
		cat "$src/pod/fast/pod-delete.yaml"
		echo ---
		sed "/^    matchExpressions:/a\\
    - key: '.metadata.annotations[\"gpuaccept.dev/kwok-hang\"]'\\
      operator: 'DoesNotExist'\\
    - key: '.metadata.annotations[\"gpuaccept.dev/kwok-fail\"]'\\
      operator: 'DoesNotExist'" "$src/pod/fast/pod-complete.yaml"
		cat <<'STAGES'
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: gpuaccept-image-pull-backoff
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.metadata.annotations["gpuaccept.dev/kwok-fail"]'
      operator: 'In'
      values: ['ImagePullBackOff']
    - key: '.status.containerStatuses'
      operator: 'DoesNotExist'
  next:
    statusTemplate: |
      containerStatuses:
      {{ range $index, $item := .spec.containers }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          waiting:
            reason: ImagePullBackOff
            message: 'Back-off pulling image "{{ $item.image }}"'
      {{ end }}
      phase: Pending
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: gpuaccept-oom-killed
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.metadata.annotations["gpuaccept.dev/kwok-fail"]'
      operator: 'In'
      values: ['OOMKilled']
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range $index, $item := .spec.containers }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 137
            reason: OOMKilled
            finishedAt: {{ $now | Quote }}
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Failed
STAGES
	} >"$1"
	[ "$(grep -c 'gpuaccept.dev/kwok' "$1")" -ge 5 ] || { k8s_log "could not adapt kwok's pod stages in $src"; return 1; }
}

# k8s_crds DIR: the workload CRDs the launcher's flavors need, copied from
# the modules that publish them (scripts/k8s-tools/crds); the Volcano Job's
# is generated from volcano.sh/apis with controller-gen and the options
# of Volcano's own Makefile (crdVersions=v1, generateEmbeddedObjectMeta, maxDescLen=0).
k8s_crds() {
	local d=$1 tools=$root/scripts/k8s-tools/crds js mpi
	mkdir -p "$d"
	(cd "$tools" && go mod download sigs.k8s.io/jobset github.com/kubeflow/mpi-operator volcano.sh/apis) || return 1
	js=$(cd "$tools" && go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)
	mpi=$(cd "$tools" && go list -m -f '{{.Dir}}' github.com/kubeflow/mpi-operator)
	cp "$js/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml" "$d/" || return 1
	cp "$mpi/manifests/base/kubeflow.org_mpijobs.yaml" "$d/" || return 1
	if [ ! -s "$d/batch.volcano.sh_jobs.yaml" ]; then
		k8s_log "generating the Volcano Job CRD from volcano.sh/apis with controller-gen"
		(cd "$tools" && go run sigs.k8s.io/controller-tools/cmd/controller-gen \
			crd:crdVersions=v1,generateEmbeddedObjectMeta=true,maxDescLen=0 paths=volcano.sh/apis/pkg/apis/batch/v1alpha1 output:crd:dir="$d/volcano.tmp") || return 1
		mv "$d/volcano.tmp/batch.volcano.sh_jobs.yaml" "$d/" && rm -rf "$d/volcano.tmp"
	fi
}

up_k8s() {
	k8s_ports
	need_apt openssl curl
	local bin
	bin=$(k8s_bin_dir)
	# Everything is built before anything starts: a cold build takes
	# minutes, and daemons waiting on it would only hold ports.
	k8s_nodes_build_start || return 1
	k8s_build "$bin" || { k8s_log "build failed"; return 1; }
	k8s_nodes_build_wait || return 1
	k8s_coredns_build || { k8s_log "CoreDNS build failed"; return 1; }
	k8s_jobset_build || { k8s_log "JobSet controller build failed"; return 1; }
	k8s_mpi_build || { k8s_log "mpi-operator/Kueue build failed"; return 1; }
	K8S_DIR=$state/k8s
	if [ -e "$state/pids/k8s-apiserver" ]; then
		k8s_log "stopping the control plane a previous up left running"
		down_k8s
	fi
	# A node that was not stopped leaves mounts under it: rm -rf must not
	# walk into them.
	k8s_unmount_under "$K8S_DIR"
	rm -rf --one-file-system "$K8S_DIR"
	mkdir -p "$K8S_DIR/logs"
	# Tokens, kubeconfigs, CA and webhook keys live here: root's only.
	chmod 700 "$K8S_DIR"
	k8s_pki
	K8S_ADMIN_TOKEN=$(openssl rand -hex 16)
	local user_token
	user_token=$(openssl rand -hex 16)
	# The admin is in system:masters; gpuaccept-user is in no group, so it
	# can do only what an RBAC binding grants it (the RBAC test binds
	# deploy/rbac.yaml's Role to it).
	printf '%s,admin,uid-admin,"system:masters"\n%s,gpuaccept-user,uid-gpuaccept-user\n' "$K8S_ADMIN_TOKEN" "$user_token" >"$K8S_DIR/pki/tokens.csv"
	k8s_kubeconfig "$K8S_DIR/admin.kubeconfig" admin "$K8S_ADMIN_TOKEN" default
	k8s_nodes_pki
	k8s_kubeconfig "$K8S_DIR/user.kubeconfig" gpuaccept-user "$user_token" default

	k8s_log "starting etcd on 127.0.0.1:$K8S_ETCD_PORT"
	"$bin/etcd" --name testenv --data-dir "$K8S_DIR/etcd" \
		--listen-client-urls "http://127.0.0.1:$K8S_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$K8S_ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER_PORT" \
		--initial-cluster "testenv=http://127.0.0.1:$K8S_ETCD_PEER_PORT" --unsafe-no-fsync \
		>"$K8S_DIR/logs/etcd.log" 2>&1 &
	started k8s-etcd $!
	k8s_wait etcd curl -sf "http://127.0.0.1:$K8S_ETCD_PORT/health" || return 1

	k8s_log "starting kube-apiserver on https://127.0.0.1:$K8S_API_PORT"
	local p=$K8S_DIR/pki
	"$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$K8S_ETCD_PORT" \
		--bind-address 127.0.0.1 --secure-port "$K8S_API_PORT" --endpoint-reconciler-type none \
		--tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" --client-ca-file "$p/ca.crt" \
		--token-auth-file "$p/tokens.csv" --authorization-mode Node,RBAC --allow-privileged \
		--enable-admission-plugins NodeRestriction \
		--kubelet-preferred-address-types InternalIP,Hostname \
		--kubelet-client-certificate "$p/kubelet-client.crt" --kubelet-client-key "$p/kubelet-client.key" \
		--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$p/sa.pub" \
		--service-account-signing-key-file "$p/sa.key" --service-cluster-ip-range 10.96.0.0/16 \
		--cert-dir "$K8S_DIR/apiserver-certs" \
		>"$K8S_DIR/logs/kube-apiserver.log" 2>&1 &
	started k8s-apiserver $!
	k8s_wait kube-apiserver k8s_curl GET /readyz || return 1

	k8s_log "starting kube-controller-manager and kube-scheduler"
	local kc=$K8S_DIR/admin.kubeconfig
	# Its node-lifecycle controller lifts the not-ready taint that every
	# new Node gets once kwok reports the node Ready (and keeps it alive
	# through the lease kwok renews).
	"$bin/kube-controller-manager" --kubeconfig "$kc" --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
		--bind-address 127.0.0.1 --secure-port "$K8S_KCM_PORT" --leader-elect=false \
		--service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
		--cert-dir "$K8S_DIR/kcm-certs" \
		>"$K8S_DIR/logs/kube-controller-manager.log" 2>&1 &
	started k8s-controller-manager $!
	"$bin/kube-scheduler" --kubeconfig "$kc" --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
		--bind-address 127.0.0.1 --secure-port "$K8S_SCHED_PORT" --leader-elect=false --cert-dir "$K8S_DIR/sched-certs" \
		>"$K8S_DIR/logs/kube-scheduler.log" 2>&1 &
	started k8s-scheduler $!
	k8s_wait kube-controller-manager curl -skf "https://127.0.0.1:$K8S_KCM_PORT/healthz" || return 1
	k8s_wait kube-scheduler curl -skf "https://127.0.0.1:$K8S_SCHED_PORT/healthz" || return 1

	k8s_log "starting kwok (fake kubelets) and two nodes"
	local kwokdir=$K8S_DIR/kwok
	mkdir -p "$kwokdir"
	k8s_kwok_config "$kwokdir/stages.yaml" || return 1
	local kb
	kb=$(cd "$root/scripts/k8s-tools/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/crd/bases
	for crd in logs clusterlogs; do
		k8s_curl POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions "$kb/kwok.x-k8s.io_$crd.yaml" >/dev/null || return 1
	done
	k8s_wait kwok-crds k8s_curl GET /apis/kwok.x-k8s.io/v1alpha1/clusterlogs || return 1
	"$bin/kwok" --kubeconfig "$kc" --config "$kwokdir/stages.yaml" \
		--manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
		--enable-crds=Logs,ClusterLogs --server-address "127.0.0.1:$K8S_KWOK_PORT" --node-port "$K8S_KWOK_PORT" \
		--node-ip 127.0.0.1 --node-name localhost --cidr 10.244.0.0/16 --node-lease-duration-seconds 40 \
		>"$K8S_DIR/logs/kwok.log" 2>&1 &
	started k8s-kwok $!
	local nodes="gpu-node-0 gpu-node-1"
	for n in $nodes; do
		cat >"$kwokdir/$n.yaml" <<NODE
apiVersion: v1
kind: Node
metadata:
  name: $n
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {kubernetes.io/hostname: $n, kubernetes.io/os: linux, type: kwok, gpuaccept.dev/testenv: "true"}
status:
  capacity: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "8", rdma/ib: "8"}
  allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "8", rdma/ib: "8"}
NODE
		k8s_curl POST /api/v1/nodes "$kwokdir/$n.yaml" >/dev/null || return 1
	done
	for n in $nodes; do k8s_wait kwok k8s_node_schedulable "$n" || return 1; done

	local crds=$K8S_DIR/crds
	if k8s_crds "$crds" >"$K8S_DIR/logs/crds.log" 2>&1; then
		setenv GPUACCEPT_K8S_CRDS "$crds"
	else
		k8s_log "workload CRDs unavailable (see $K8S_DIR/logs/crds.log): flavor tests will say so"
	fi
	k8s_nodes_up || return 1
	k8s_coredns_start 10.88.0.1 "$K8S_DIR/admin.kubeconfig" || return 1
	k8s_jobset_start "$K8S_DIR/admin.kubeconfig" || return 1
	setenv GPUACCEPT_K8S_JOBSET "$K8S_JOBSET_BIN"
	k8s_mpi_start "$K8S_DIR/admin.kubeconfig" || return 1
	setenv GPUACCEPT_K8S_MPI_OPERATOR "$K8S_MPI_OPERATOR_BIN"
	k8s_kueue_start "$K8S_DIR/admin.kubeconfig" || return 1
	setenv GPUACCEPT_K8S_KUBECONFIG "$K8S_DIR/admin.kubeconfig"
	setenv GPUACCEPT_K8S_USER_KUBECONFIG "$K8S_DIR/user.kubeconfig"
	setenv GPUACCEPT_K8S_SERVER "https://127.0.0.1:$K8S_API_PORT"
	setenv GPUACCEPT_K8S_BIN "$bin"
	setenv GPUACCEPT_K8S_NODES "$nodes"
	k8s_log "up: kubeconfig $K8S_DIR/admin.kubeconfig"
}

# k8s_node_schedulable NODE: Ready, and without the not-ready taint.
k8s_node_schedulable() {
	local j
	j=$(k8s_curl GET "/api/v1/nodes/$1" | tr -d ' \n') || return 1
	case $j in *'"type":"Ready","status":"True"'*) ;; *) return 1 ;; esac
	case $j in *node.kubernetes.io/not-ready*) return 1 ;; esac
}

# down_k8s stops the scheduler first: the API server may otherwise sit in
# graceful shutdown for minutes while the scheduler holds a connection.
down_k8s() {
	# down runs in a fresh shell: what up knew is read back from the files.
	k8s_ports
	K8S_DIR=$state/k8s
	K8S_ADMIN_TOKEN=$(head -1 "$K8S_DIR/pki/tokens.csv" 2>/dev/null | cut -d, -f1)
	k8s_kueue_stop
	stop_pid k8s-mpi-operator
	k8s_jobset_stop
	k8s_nodes_down
	stop_pid k8s-coredns
	stop_pid k8s-scheduler
	stop_pid k8s-kwok
	stop_pid k8s-controller-manager
	stop_pid k8s-apiserver
	stop_pid k8s-etcd
}
