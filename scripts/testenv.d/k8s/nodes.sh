# Real nodes for the "k8s" service: two kubelets (kube-node-0 and
# kube-node-1), each with its own containerd, root folder, ports, cgroup
# root and IP, on one CNI bridge, so pods really run: sshd, mpirun across
# pods, paired server/client pods, exit codes and logs from real containers.
# Sourced by scripts/testenv.d/k8s.sh; functions only.
#
# What runs on these machines (a root shell inside a privileged container,
# cgroup v1, no CAP_SYS_RESOURCE), and why each setting is there:
#   - kubelet v1.37.2, built from the module proxy (scripts/k8s-tools/kubelet),
#     with failCgroupV1: false: it refuses cgroup v1 otherwise;
#   - Debian's containerd 1.6.20 and runc 1.1.5. The kubelet asks the CRI for
#     RuntimeConfig (the cgroup driver), which 1.6 does not implement; it logs
#     that once and keeps its own cgroupDriver (cgroupfs), so containerd 2.x
#     is not needed;
#   - restrict_oom_score_adj: every pod sandbox asks for oom_score_adj -998,
#     which needs CAP_SYS_RESOURCE; without this runc dies with "can't get
#     final child's PID from pipe";
#   - one containerd per kubelet: a kubelet removes every pod sandbox of its
#     runtime that it does not know, so two kubelets on one containerd would
#     kill each other's pods;
#   - node IPs 10.88.0.10 and .11 on the bridge gacni0 (10.88.0.1 is the pods'
#     gateway and CoreDNS): a kubelet refuses a loopback node IP;
#   - each node's cgroup root (/gpuaccept-kube-node-N in every v1 hierarchy) is
#     made before its kubelet starts, which checks that it exists.
#
# Ports: 17850/17851 kubelet API (on the node IP, client certificates of the
# CA only), 17852/17853 kubelet healthz (127.0.0.1).

k8s_nodes="kube-node-0 kube-node-1"
k8s_bridge=gacni0

# k8s_kubelet_build: build the kubelet into its cache folder unless there;
# sets K8S_KUBELET_BIN.
k8s_kubelet_build() {
	local dir
	dir=$(k8s_cache_dir kubelet kubelet/go.mod kubelet/go.sum) || return 1
	K8S_KUBELET_BIN=$dir/kubelet
	k8s_build_cached "kubelet v1.37.2" "$dir" k8s_kubelet_build_into
}

# k8s_kubelet_build_into TMP (cold: 3+ minutes after the control plane's
# build, whose packages it shares).
k8s_kubelet_build_into() {
	k8s_log "building kubelet v1.37.2 (cold: 3+ minutes) into $1"
	(cd "$root/scripts/k8s-tools/kubelet" && go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean" \
		-o "$1/kubelet" k8s.io/kubernetes/cmd/kubelet)
}

# k8s_nodes_build_start: install the nodes' Debian packages, then build the
# test image (scripts/testenv.d/k8s/image.sh) in the background: debootstrap
# waits mostly on the mirror, the Go builds that follow on the CPU.
k8s_nodes_build_start() {
	need_apt containerd runc containernetworking-plugins iproute2 debootstrap || return 1
	K8S_IMAGE_DIR=$(k8s_image_dir)
	k8s_image_build "$K8S_IMAGE_DIR" >"$state/k8s-image-build.log" 2>&1 &
	K8S_IMAGE_BUILD_PID=$!
	# Recorded so that down stops it should up fail before waiting for it.
	started k8s-image-build "$K8S_IMAGE_BUILD_PID"
}

# k8s_nodes_build_wait: build the kubelet, wait for the image; sets
# K8S_IMAGE, K8S_PAUSE_IMAGE and K8S_IMAGE_ARCHIVE.
k8s_nodes_build_wait() {
	k8s_kubelet_build || { k8s_log "kubelet build failed"; return 1; }
	if ! wait "$K8S_IMAGE_BUILD_PID"; then
		cat "$state/k8s-image-build.log" >&2
		k8s_log "test image build failed (log above, $state/k8s-image-build.log)"
		return 1
	fi
	cat "$state/k8s-image-build.log" >&2
	rm -f "$state/pids/k8s-image-build"
	K8S_IMAGE_ARCHIVE=$K8S_IMAGE_DIR/image.tar
	K8S_IMAGE=$(k8s_image_ref)
	K8S_PAUSE_IMAGE=$(k8s_image_pause_ref)
}

# k8s_node_ip N: node N's InternalIP.
k8s_node_ip() { echo "10.88.0.$((10 + $1))"; }

# k8s_nodes_pki: the API server's client certificate for the kubelets' API
# (they accept only certificates of the test CA), and a token per kubelet
# for the Node authorizer (user system:node:NAME in group system:nodes).
# Appends the tokens to tokens.csv: run before the API server starts.
k8s_nodes_pki() {
	local p=$K8S_DIR/pki n tok
	openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" \
		-keyout "$p/kubelet-client.key" -out "$p/kubelet-client.csr" 2>/dev/null
	openssl x509 -req -in "$p/kubelet-client.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial -days 30 \
		-out "$p/kubelet-client.crt" 2>/dev/null
	for n in $k8s_nodes; do
		tok=$(openssl rand -hex 16)
		printf '%s,system:node:%s,uid-%s,"system:nodes"\n' "$tok" "$n" "$n" >>"$p/tokens.csv"
		mkdir -p "$K8S_DIR/$n"
		k8s_kubeconfig "$K8S_DIR/$n/kubelet.kubeconfig" "system:node:$n" "$tok" default
	done
}

# k8s_cgroups_for NAME: the cgroup v1 folders of NAME in every hierarchy
# this machine mounts (cgroup v2: the one folder).
k8s_cgroups_for() {
	local m
	if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
		echo "/sys/fs/cgroup/$1"
		return
	fi
	for m in /sys/fs/cgroup/*/; do
		[ -d "$m" ] && [ "$(basename "$m")" != unified ] && echo "${m%/}/$1"
	done
}

# k8s_node_start N: containerd and kubelet of node N.
k8s_node_start() {
	local i=$1 n ip d cg
	n=kube-node-$i
	ip=$(k8s_node_ip "$i")
	d=$K8S_DIR/$n
	mkdir -p "$d/cni" "$d/kubelet" "$d/pods"
	for cg in $(k8s_cgroups_for "gpuaccept-$n"); do
		mkdir -p "$cg"
		# A new cpuset cgroup of v1 has no CPUs: give it its parent's.
		if [ -e "$cg/cpuset.cpus" ]; then
			cat "$(dirname "$cg")/cpuset.cpus" >"$cg/cpuset.cpus"
			cat "$(dirname "$cg")/cpuset.mems" >"$cg/cpuset.mems"
		fi
	done
	cat >"$d/containerd.toml" <<EOF
version = 2
root = "$d/containerd/root"
state = "$d/containerd/state"
[grpc]
  address = "$d/containerd.sock"
[ttrpc]
  address = "$d/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$K8S_PAUSE_IMAGE"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$d/cni"
EOF
	# One bridge and one /16 for both nodes, each node handing out its own
	# /24 of it: pods of both nodes reach each other without routes.
	cat >"$d/cni/10-gpuaccept.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "gpuaccept", "plugins": [
  {"type": "bridge", "bridge": "$k8s_bridge", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$d/cni-ipam",
            "ranges": [[{"subnet": "10.88.0.0/16", "rangeStart": "10.88.$((i + 1)).2", "rangeEnd": "10.88.$((i + 1)).254", "gateway": "10.88.0.1"}]]}},
  {"type": "loopback"}]}
EOF
	echo "nameserver 10.88.0.1" >"$d/resolv.conf"
	cat >"$d/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
port: $((17850 + i))
healthzBindAddress: 127.0.0.1
healthzPort: $((17852 + i))
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $K8S_DIR/pki/ca.crt}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupRoot: /gpuaccept-$n
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$d/containerd.sock
podLogsDir: $d/pods
clusterDomain: cluster.local
clusterDNS: [10.88.0.1]
resolvConf: $d/resolv.conf
registerWithTaints:
- {key: gpuaccept.dev/kubelet, value: "true", effect: NoSchedule}
# The test image comes from no registry: image GC must never remove it,
# and disk-based eviction must not start on a full CI disk.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
serializeImagePulls: false
localStorageCapacityIsolation: false
EOF
	containerd --config "$d/containerd.toml" >"$K8S_DIR/logs/containerd-$n.log" 2>&1 &
	started "k8s-containerd-$i" $!
	k8s_wait "containerd-$n" ctr --address "$d/containerd.sock" version || return 1
	k8s_image_import "$d/containerd.sock" "$K8S_IMAGE_ARCHIVE" || return 1
	"$K8S_KUBELET_BIN" --config "$d/kubelet.yaml" --kubeconfig "$d/kubelet.kubeconfig" --root-dir "$d/kubelet" \
		--hostname-override "$n" --node-ip "$ip" \
		--node-labels "gpuaccept.dev/testenv=kubelet,gpuaccept.dev/node-index=$i" \
		>"$K8S_DIR/logs/kubelet-$n.log" 2>&1 &
	started "k8s-kubelet-$i" $!
}

# k8s_nodes_up: the bridge, then both nodes, until both are schedulable.
k8s_nodes_up() {
	[ -n "${K8S_IMAGE_ARCHIVE:-}" ] || { k8s_nodes_build_start && k8s_nodes_build_wait; } || return 1
	ip link del "$k8s_bridge" 2>/dev/null || true
	ip link add "$k8s_bridge" type bridge || return 1
	ip addr add 10.88.0.1/16 dev "$k8s_bridge"
	local i
	for i in 0 1; do ip addr add "$(k8s_node_ip "$i")/16" dev "$k8s_bridge"; done
	ip link set "$k8s_bridge" up
	k8s_log "starting containerd and kubelet of $k8s_nodes"
	for i in 0 1; do k8s_node_start "$i" || return 1; done
	local n
	for n in $k8s_nodes; do k8s_wait "kubelet-$n" k8s_node_ready "$n" || return 1; done
	# GPUs the SKU files ask for (nvidia.com/gpu, amd.com/gpu), advertised
	# as extended resources the way a cluster without a device plugin
	# does: the stand-in needs none, but the pods are shaped as on GPU nodes.
	local patch=$K8S_DIR/gpu-capacity.json
	printf '[{"op":"add","path":"/status/capacity/nvidia.com~1gpu","value":"8"},{"op":"add","path":"/status/capacity/amd.com~1gpu","value":"8"}]' >"$patch"
	for n in $k8s_nodes; do
		k8s_curl PATCH "/api/v1/nodes/$n/status" "$patch" application/json-patch+json >/dev/null || return 1
	done
	setenv GPUACCEPT_K8S_KUBELET_NODES "$k8s_nodes"
	setenv GPUACCEPT_K8S_IMAGE "$K8S_IMAGE"
}

# k8s_node_ready NODE: Ready (its taints are its own: registerWithTaints).
k8s_node_ready() {
	local j
	j=$(k8s_curl GET "/api/v1/nodes/$1" | tr -d ' \n') || return 1
	case $j in *'"type":"Ready","status":"True"'*) return 0 ;; esac
	return 1
}

# k8s_nodes_down: every pod on the real nodes deleted through the API (so
# the kubelets tear down their containers, network namespaces and mounts
# the proper way), then kubelets and containerds stopped by pid, then
# whatever still holds on: container shims, mounts, the bridge, the cgroups.
k8s_nodes_down() {
	local n i d pods
	K8S_DIR=${K8S_DIR:-$state/k8s}
	if [ -e "$state/pids/k8s-kubelet-0" ] && [ -e "$state/pids/k8s-apiserver" ]; then
		# Cordoned first: the Job controller would recreate deleted pods
		# and the scheduler bind them here again.
		printf '{"spec":{"unschedulable":true}}' >"$K8S_DIR/cordon.json"
		for n in $k8s_nodes; do
			k8s_curl PATCH "/api/v1/nodes/$n" "$K8S_DIR/cordon.json" application/merge-patch+json >/dev/null 2>&1 || true
		done
		for n in $k8s_nodes; do
			pods=$(k8s_curl GET "/api/v1/pods?fieldSelector=spec.nodeName=$n" 2>/dev/null |
				python3 -c 'import json,sys
for p in json.load(sys.stdin).get("items", []): print(p["metadata"]["namespace"] + "/" + p["metadata"]["name"])' 2>/dev/null) || pods=
			for p in $pods; do
				k8s_curl DELETE "/api/v1/namespaces/${p%%/*}/pods/${p#*/}?gracePeriodSeconds=0" >/dev/null 2>&1 || true
			done
		done
		for _ in $(seq 300); do
			[ -z "$(ls -A "$K8S_DIR"/kube-node-*/containerd/state/io.containerd.runtime.v2.task/k8s.io 2>/dev/null)" ] && break
			sleep 0.1
		done
	fi
	for i in 0 1; do stop_pid "k8s-kubelet-$i"; done
	for i in 0 1; do stop_pid "k8s-containerd-$i"; done
	for n in $k8s_nodes; do
		d=$K8S_DIR/$n
		# A shim outlives its containerd by design; it is named by the socket.
		pkill -KILL -f "containerd-shim-runc-v2 .*-address $d/containerd.sock" 2>/dev/null || true
		# A container's processes outlive a killed shim: every one of
		# them is in the node's cgroup root.
		k8s_kill_cgroup "$(k8s_cgroups_for "gpuaccept-$n" | head -1)"
		k8s_unmount_under "$d"
	done
	ip link del "$k8s_bridge" 2>/dev/null || true
	for n in $k8s_nodes; do
		for d in $(k8s_cgroups_for "gpuaccept-$n"); do
			[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
		done
	done
}

# k8s_kill_cgroup DIR: SIGKILL every process in the cgroup DIR and below.
k8s_kill_cgroup() {
	local f pid
	[ -n "$1" ] && [ -d "$1" ] || return 0
	for _ in 1 2 3; do
		find "$1" -name cgroup.procs | while read -r f; do
			while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$f"
		done
		sleep 0.2
	done
}

# k8s_unmount_under DIR: unmount every mount point below DIR, deepest first
# (the kubelet's secret and projected volumes, containerd's rootfs mounts).
k8s_unmount_under() {
	local m
	awk -v d="$1/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done
}
