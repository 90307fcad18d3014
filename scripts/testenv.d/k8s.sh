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
#   17845 kube-scheduler (https)   17846 kwok metrics/health
#
# Variables written to .testenv/env:
#   GPUACCEPT_K8S_KUBECONFIG  kubeconfig of the admin user (system:masters)
#   GPUACCEPT_K8S_SERVER      https://127.0.0.1:17840
#   GPUACCEPT_K8S_BIN         folder of the built binaries
#   GPUACCEPT_K8S_CRDS        folder of the JobSet/Volcano/MPIJob CRDs found in
#                             the module cache (tests install them), when found
#   GPUACCEPT_K8S_NODES       names of the fake nodes, space-separated

k8s_ports() {
	K8S_API_PORT=17840
	K8S_ETCD_PORT=17841
	K8S_ETCD_PEER_PORT=17842
	K8S_KWOK_PORT=17843
	K8S_KCM_PORT=17844
	K8S_SCHED_PORT=17845
	K8S_KWOK_METRICS_PORT=17846
}

# k8s_log MSG: progress on stderr, so a cold CI build says what it is doing.
k8s_log() { echo "testenv k8s: $*" >&2; }

# k8s_bin_dir: print the cache folder for the current tools modules.
k8s_bin_dir() {
	local h
	h=$( (go version; cat "$root"/scripts/k8s-tools/*/go.mod "$root"/scripts/k8s-tools/*/go.sum) | sha256sum | cut -c1-16)
	echo "${GPUACCEPT_TESTENV_CACHE:-$HOME/.cache/gpuaccept-testenv}/k8s-$h"
}

# k8s_build DIR: build every binary into DIR unless a finished build is there.
k8s_build() {
	local dir=$1 tools=$root/scripts/k8s-tools tmp start
	if [ -e "$dir/.complete" ]; then
		k8s_log "binaries from cache $dir"
		return 0
	fi
	command -v go >/dev/null || { k8s_log "needs the Go toolchain to build its binaries"; return 1; }
	tmp=$dir.partial.$$
	rm -rf "$tmp"
	mkdir -p "$tmp"
	start=$(date +%s)
	# -s -w: the linker of kube-apiserver is the step that needs the most memory.
	local ld="-s -w"
	local kv="-X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean"
	k8s_log "building etcd v3.6.16 (cold: about 1-2 minutes) into $dir"
	(cd "$tools/etcd" && go build -trimpath -ldflags "$ld" -o "$tmp/etcd" go.etcd.io/etcd/server/v3) || return 1
	k8s_log "building kwok v0.8.0 (cold: about 2 minutes)"
	(cd "$tools/kwok" && go build -trimpath -ldflags "$ld" -o "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok) || return 1
	k8s_log "building kube-apiserver, kube-controller-manager, kube-scheduler v1.37.2 (cold: 8+ minutes, ~3 GB)"
	(cd "$tools/kube" && go build -trimpath -ldflags "$ld $kv" -o "$tmp/" \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler) || return 1
	touch "$tmp/.complete"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	k8s_log "built in $(($(date +%s) - start)) s"
}
