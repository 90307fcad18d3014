# Part of service "k8s" (sourced by scripts/testenv.d/k8s.sh): the build of
# mpi-operator and Kueue (mpi.sh). One tools module and one go build for
# both: Kueue v0.17.0 is built against mpi-operator v0.8.0, so one module
# graph holds both and their common packages (controller-runtime, client-go
# v0.35) compile once. The JobSet manager cannot join them (jobset.sh).

# k8s_controllers_build: build kueue and mpi-operator into their cache
# folder unless a finished build is there; sets K8S_CONTROLLERS_DIR.
k8s_controllers_build() {
	local dir kv
	dir=$(k8s_cache_dir controllers controllers/go.mod controllers/go.sum controllers/mpi-operator/main.go) || return 1
	K8S_CONTROLLERS_DIR=$dir
	kv=$(cd "$root/scripts/k8s-tools/controllers" && go list -m -f '{{.Version}}' sigs.k8s.io/kueue) || return 1
	k8s_build_cached "Kueue $kv and mpi-operator" "$dir" k8s_controllers_build_into "$kv"
}

# k8s_controllers_build_into TMP KUEUE_VERSION (cold: about 10 minutes).
k8s_controllers_build_into() {
	k8s_log "building Kueue $2 and mpi-operator (cold: about 10 minutes) into $1"
	(cd "$root/scripts/k8s-tools/controllers" && CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$2" \
		-o "$1/" sigs.k8s.io/kueue/cmd/kueue ./mpi-operator) || return 1
	[ -x "$1/kueue" ] && [ -x "$1/mpi-operator" ] ||
		{ k8s_log "the controllers build left $(ls "$1" | tr '\n' ' ') in $1"; return 1; }
}
