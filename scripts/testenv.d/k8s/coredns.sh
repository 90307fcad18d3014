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
	local tools=$root/scripts/k8s-tools/coredns h dir tmp start
	h=$( (go version; cd "$tools" && cat go.mod go.sum main.go) | sha256sum | cut -c1-16) || return 1
	dir=${GPUACCEPT_TESTENV_CACHE:-$HOME/.cache/gpuaccept-testenv}/coredns-$h
	K8S_COREDNS_BIN=$dir/coredns
	if [ -e "$dir/.complete" ]; then
		k8s_log "coredns from cache $dir"
		return 0
	fi
	command -v go >/dev/null || { k8s_log "needs the Go toolchain to build coredns"; return 1; }
	tmp=$dir.partial.$$
	# An interrupted build leaves its partial folder: start clean.
	rm -rf "$dir".partial.*
	mkdir -p "$tmp"
	start=$(date +%s)
	k8s_log "building coredns v1.15.0 (cold: about 7 minutes) into $dir"
	(cd "$tools" && nice go build -trimpath -ldflags "-s -w" -o "$tmp/coredns" .) >&2 ||
		{ k8s_log "building coredns in $tools failed"; return 1; }
	touch "$tmp/.complete"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	k8s_log "coredns built in $(($(date +%s) - start)) s"
}

# k8s_coredns_health: the health endpoint answers.
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
