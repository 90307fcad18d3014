# Part of service "k8s" (sourced by scripts/testenv.d/k8s.sh): the build of
# mpi-operator and Kueue (mpi.sh). One tools module and one go build for
# both: Kueue v0.17.0 is built against mpi-operator v0.8.0, so one module
# graph holds both and their common packages (controller-runtime, client-go
# v0.35) compile once. The JobSet manager cannot join them (jobset.sh).

# k8s_controllers_build: build kueue and mpi-operator into the cache
# folder ${GPUACCEPT_TESTENV_CACHE:-~/.cache/gpuaccept-testenv}/controllers-HASH
# (HASH over the module's go.mod, go.sum, its own source and the Go
# version) unless a finished build is there; sets K8S_CONTROLLERS_DIR.
k8s_controllers_build() {
	local tools=$root/scripts/k8s-tools/controllers h dir tmp start kv
	h=$( (go version; cd "$tools" && cat go.mod go.sum mpi-operator/*.go) | sha256sum | cut -c1-16) || return 1
	dir=${GPUACCEPT_TESTENV_CACHE:-$HOME/.cache/gpuaccept-testenv}/controllers-$h
	K8S_CONTROLLERS_DIR=$dir
	if [ -e "$dir/.complete" ]; then
		k8s_log "mpi-operator and Kueue from cache $dir"
		return 0
	fi
	command -v go >/dev/null || { k8s_log "needs the Go toolchain to build the workload controllers"; return 1; }
	kv=$(cd "$tools" && go list -m -f '{{.Version}}' sigs.k8s.io/kueue) || return 1
	tmp=$dir.partial.$$
	rm -rf "$dir".partial.*
	mkdir -p "$tmp"
	start=$(date +%s)
	k8s_log "building Kueue $kv and mpi-operator (cold: about 10 minutes) into $dir"
	(cd "$tools" && CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$kv" \
		-o "$tmp/" sigs.k8s.io/kueue/cmd/kueue ./mpi-operator) ||
		{ k8s_log "building the workload controllers failed"; return 1; }
	[ -x "$tmp/kueue" ] && [ -x "$tmp/mpi-operator" ] ||
		{ k8s_log "the controllers build left $(ls "$tmp" | tr '\n' ' ') in $tmp"; return 1; }
	touch "$tmp/.complete"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	k8s_log "workload controllers built in $(($(date +%s) - start)) s"
}
