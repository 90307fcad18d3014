# CoreDNS for the test environment's real nodes: serves cluster.local (and
# the reverse zones) from the API server, so pods resolve a headless
# Service's pod names (<hostname>.<subdomain>.<ns>.svc.cluster.local, or
# <hostname>.<subdomain> through the pods' search path). Sourced by
# scripts/testenv.d/k8s.sh; uses its helpers (k8s_log, k8s_wait, started).
#
# Built from the tools module scripts/k8s-tools/coredns (a main.go that
# wires only the plugins used below; cold: about 7 minutes on 2 shared
# cores) and cached in ~/.cache/gpuaccept-testenv/coredns-HASH.
#
# Ports: LISTEN_IP:53 (udp+tcp; 10.88.0.1 for the real nodes' pods),
# health on 127.0.0.1:17865 (tests on loopback use 17866 for DNS).

# k8s_coredns_build: build CoreDNS unless the cache holds this version;
# sets K8S_COREDNS_BIN to the binary. Progress goes to stderr only.
k8s_coredns_build() {
	local dir
	dir=$(k8s_cache_dir coredns coredns/go.mod coredns/go.sum coredns/main.go) || return 1
	K8S_COREDNS_BIN=$dir/coredns
	k8s_build_cached "coredns v1.15.0" "$dir" k8s_coredns_build_into >&2
}

# k8s_coredns_build_into TMP (cold: about 7 minutes).
k8s_coredns_build_into() {
	k8s_log "building coredns v1.15.0 (cold: about 7 minutes) into $1"
	(cd "$root/scripts/k8s-tools/coredns" && nice go build -trimpath -ldflags "-s -w" -o "$1/coredns" .) >&2
}

k8s_coredns_health() { curl -sf http://127.0.0.1:17865/health; }

# k8s_coredns_start LISTEN_IP KUBECONFIG [PORT]: serve the cluster's names on
# LISTEN_IP:PORT (default 53), reading the API with KUBECONFIG's current
# context. Needs k8s_coredns_build first. Names outside the cluster get
# NXDOMAIN at once: the machine has no outside network to forward to, and
# mpirun and ssh look names up (a forward would make each lookup wait out
# its timeout).
k8s_coredns_start() {
	local ip=$1 kc=$2 port=${3:-53} d=$K8S_DIR/coredns
	[ -x "${K8S_COREDNS_BIN:-}" ] || { k8s_log "coredns is not built (k8s_coredns_build)"; return 1; }
	[ -r "$kc" ] || { k8s_log "coredns: cannot read the kubeconfig $kc"; return 1; }
	mkdir -p "$d" "$K8S_DIR/logs"
	# pods insecure: the A records of <a-b-c-d>.<ns>.pod.cluster.local,
	# answered without a pod watch. health moved after kubernetes in the
	# build's plugin order answers only once the API cache has synced.
	cat >"$d/Corefile" <<COREFILE
cluster.local:$port in-addr.arpa:$port ip6.arpa:$port {
	bind $ip
	errors
	log
	health 127.0.0.1:17865
	kubernetes cluster.local in-addr.arpa ip6.arpa {
		kubeconfig $kc
		pods insecure
	}
}
.:$port {
	bind $ip
	errors
	template ANY ANY {
		rcode NXDOMAIN
	}
}
COREFILE
	k8s_log "starting coredns on $ip:$port (cluster.local)"
	"$K8S_COREDNS_BIN" -conf "$d/Corefile" >"$K8S_DIR/logs/k8s-coredns.log" 2>&1 &
	started k8s-coredns $!
	k8s_wait k8s-coredns k8s_coredns_health
}
