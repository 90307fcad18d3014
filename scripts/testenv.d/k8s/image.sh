# The image that the real kubelet nodes' pods run, built here with no
# registry: a Debian bookworm rootfs (debootstrap, minbase) with sshd, ssh
# and Open MPI, and the project's stand-in benchmark (internal/standin)
# under every benchmark name the plugins start, so a pod replays recorded
# real outputs the way the ssh and Slurm services do. The same image is the
# CRI sandbox ("pause") image: its entrypoint sleeps, and containerd ends a
# sandbox with SIGKILL, so no pause binary is needed.
#
# The archive is an OCI image layout tar written with tar, gzip and
# sha256sum: an image of one layer is three small JSON files around one
# tarball, which needs no Go module to be fetched and built, and every step
# of it can be read here. Sourced by scripts/testenv.d/k8s.sh; defines only
# functions.
#
#   k8s_image_dir                 the cache folder of the current inputs
#   k8s_image_build CACHE_DIR     build CACHE_DIR/image.tar unless it is there
#   k8s_image_import SOCKET ARCHIVE   import it into containerd's k8s.io
#                                 namespace under both names
#   k8s_image_ref, k8s_image_pause_ref   the two names

k8s_image_ref() { echo gpuaccept.local/testenv:1; }
k8s_image_pause_ref() { echo gpuaccept.local/pause:1; }

# k8s_image_packages: what debootstrap adds to minbase. sshd and ssh carry
# the launcher's multi-node pods (mpirun reaches the workers over sshd);
# procps gives ps and pkill to whoever debugs a pod; base64 (coreutils)
# hands the -J files back through the log.
k8s_image_packages() { echo openssh-server openssh-client openmpi-bin procps coreutils; }

# k8s_image_benchmarks: the names the stand-in is installed under: nccl-tests'
# (plugins/nccl Collectives), rccl-tests' alltoallv (plugins/rccl; the other
# rccl-tests names are nccl-tests'), and perftest's (plugins/ibperf).
k8s_image_benchmarks() {
	local c
	for c in all_reduce all_gather reduce_scatter alltoall alltoallv broadcast reduce sendrecv gather scatter hypercube; do
		echo "${c}_perf"
	done
	echo ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat | tr ' ' '\n'
}

# k8s_image_dir: print the cache folder for the current inputs: the package
# list, this script, the stand-in's source and the Go version.
k8s_image_dir() {
	local h
	h=$( (
		go version
		k8s_image_packages
		cat "$root/scripts/testenv.d/k8s/image.sh"
		find "$root/internal/standin" -name '*.go' ! -name '*_test.go' | LC_ALL=C sort | xargs cat
	) | sha256sum | cut -c1-16)
	echo "${GPUACCEPT_TESTENV_CACHE:-$HOME/.cache/gpuaccept-testenv}/image-$h"
}

# k8s_image_unmount DIR: unmount whatever an interrupted debootstrap left
# mounted under DIR (its /proc, or /dev bound from the host), deepest
# first, so that removing DIR cannot reach into the host's /dev.
k8s_image_unmount() {
	local m
	awk -v d="$1/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | LC_ALL=C sort -r | while read -r m; do
		umount -l "$m" || k8s_log "cannot unmount $m (left by an earlier image build)"
	done
}

# k8s_image_build CACHE_DIR: build the image archive CACHE_DIR/image.tar,
# unless a finished build is there. Needs root (debootstrap, and a layer
# that keeps the rootfs's owners and setuid bits) and Debian's mirror.
k8s_image_build() {
	local dir=$1 tmp start arch rootfs oci b
	if [ -e "$dir/.complete" ]; then
		k8s_log "image from cache $dir"
		return 0
	fi
	[ "$(id -u)" = 0 ] || { k8s_log "building the test image needs root (debootstrap)"; return 1; }
	command -v go >/dev/null || { k8s_log "needs the Go toolchain to build the stand-in for the test image"; return 1; }
	need_apt debootstrap || return 1
	tmp=$dir.partial.$$
	# A build that was interrupted leaves its partial folder: start clean.
	for b in "$dir".partial.*; do
		[ -e "$b" ] || continue
		k8s_image_unmount "$b"
		rm -rf --one-file-system "$b"
	done
	rootfs=$tmp/rootfs
	oci=$tmp/oci
	mkdir -p "$rootfs" "$oci/blobs/sha256"
	start=$(date +%s)
	arch=$(dpkg --print-architecture)
	k8s_log "building the test image: debootstrap bookworm ($arch, cold: a few minutes) into $tmp"
	if ! nice debootstrap --variant=minbase --arch="$arch" --include="$(k8s_image_packages | tr ' ' ,)" \
		bookworm "$rootfs" "${GPUACCEPT_DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$tmp/debootstrap.log" 2>&1; then
		k8s_image_unmount "$tmp"
		k8s_log "debootstrap of the test image failed; the end of $tmp/debootstrap.log:"
		tail -20 "$tmp/debootstrap.log" >&2
		return 1
	fi
	k8s_image_unmount "$tmp"

	(cd "$root" && CGO_ENABLED=0 nice go build -trimpath -ldflags "-s -w" \
		-o "$rootfs/usr/local/bin/gpuaccept-standin" ./internal/standin) ||
		{ k8s_log "building the stand-in for the test image failed"; return 1; }
	for b in $(k8s_image_benchmarks); do
		ln "$rootfs/usr/local/bin/gpuaccept-standin" "$rootfs/usr/local/bin/$b" || return 1
	done

	# Containers write pam_loginuid's /proc/self/loginuid without
	# CAP_AUDIT_CONTROL, which fails and ends every ssh session at once.
	sed -i 's/^session\s\+required\s\+pam_loginuid\.so/session optional pam_loginuid.so/' "$rootfs/etc/pam.d/sshd"
	# Each pod makes its own host keys (the launcher runs ssh-keygen -A);
	# keys baked in would be one key for every pod of every run.
	rm -f "$rootfs"/etc/ssh/ssh_host_*
	# The runtime mounts /dev, /proc, /sys and /tmp and writes resolv.conf,
	# hosts and hostname; what debootstrap left there is the build host's.
	rm -rf --one-file-system "${rootfs:?}"/dev/* "$rootfs"/proc/* "$rootfs"/sys/* "$rootfs"/tmp/* \
		"$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/debconf/*-old \
		"$rootfs"/var/log/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* ||
		return 1
	: >"$rootfs/etc/resolv.conf"
	: >"$rootfs/etc/hostname"
	: >"$rootfs/etc/machine-id"
	# debootstrap writes no hosts file; a kubelet mounts its own over this
	# one, a plain ctr run keeps it (mpirun resolves localhost).
	printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$rootfs/etc/hosts"

	k8s_log "packing the test image"
	# As root, with numeric owners, modes, setuid bits and file capabilities
	# as the rootfs has them; names start with ./ (no absolute paths); sorted
	# and without access/change times so that the same rootfs packs the same.
	(cd "$rootfs" && nice tar --numeric-owner --sort=name --xattrs --xattrs-include=security.capability \
		--format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
		-cf "$tmp/layer.tar" .) || { k8s_log "packing the rootfs of the test image failed"; return 1; }
	local diffid layer layersize config configsize manifest manifestsize
	diffid=$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)
	nice gzip -n -6 "$tmp/layer.tar" || return 1
	layer=$(sha256sum "$tmp/layer.tar.gz" | cut -d' ' -f1)
	layersize=$(stat -c %s "$tmp/layer.tar.gz")
	mv "$tmp/layer.tar.gz" "$oci/blobs/sha256/$layer"

	printf '{"architecture":"%s","os":"linux","config":{"User":"root","Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Entrypoint":["/bin/sleep","infinity"],"WorkingDir":"/root"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created_by":"gpuaccept testenv: debootstrap --variant=minbase bookworm, %s; internal/standin as %s"}]}' \
		"$arch" "$diffid" "$(k8s_image_packages)" "$(k8s_image_benchmarks | tr '\n' ' ' | sed 's/ $//')" >"$tmp/config.json"
	config=$(sha256sum "$tmp/config.json" | cut -d' ' -f1)
	configsize=$(stat -c %s "$tmp/config.json")
	mv "$tmp/config.json" "$oci/blobs/sha256/$config"

	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
		"$config" "$configsize" "$layer" "$layersize" >"$tmp/manifest.json"
	manifest=$(sha256sum "$tmp/manifest.json" | cut -d' ' -f1)
	manifestsize=$(stat -c %s "$tmp/manifest.json")
	mv "$tmp/manifest.json" "$oci/blobs/sha256/$manifest"

	# One manifest, named twice: ctr names an image after its entry's
	# org.opencontainers.image.ref.name when that is a whole reference
	# (containerd's own io.containerd.image.name says the same to others).
	local desc ref entries=()
	for ref in "$(k8s_image_ref)" "$(k8s_image_pause_ref)"; do
		desc=$(printf '{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}' \
			"$manifest" "$manifestsize" "$arch" "$ref" "$ref")
		entries+=("$desc")
	done
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s,%s]}' \
		"${entries[0]}" "${entries[1]}" >"$oci/index.json"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$oci/oci-layout"
	# oci-layout and index.json first, so k8s_image_import reads the index
	# without going through the layer.
	(cd "$oci" && tar --numeric-owner --owner=0 --group=0 --mtime=@0 -cf "$tmp/image.tar" \
		oci-layout index.json blobs/sha256/"$config" blobs/sha256/"$manifest" blobs/sha256/"$layer") ||
		{ k8s_log "writing the test image's archive failed"; return 1; }
	rm -rf --one-file-system "$rootfs" "$oci"
	touch "$tmp/.complete"
	rm -rf --one-file-system "$dir"
	mv "$tmp" "$dir"
	k8s_log "test image built in $(($(date +%s) - start)) s: $dir/image.tar, $(du -m "$dir/image.tar" | cut -f1) MB"
}

# k8s_image_import SOCKET ARCHIVE: import the archive into the containerd
# at SOCKET, namespace k8s.io (where the CRI plugin looks), under both
# names, unpacked for its default snapshotter. Quick when both names
# already point at the archive's manifest.
k8s_image_import() {
	local sock=$1 archive=$2 manifest ref have missing=0
	local ctr=(ctr --address "$sock" -n k8s.io)
	manifest=$(tar --occurrence=1 -xOf "$archive" index.json | grep -o '"digest":"sha256:[0-9a-f]*"' | head -1 | cut -d'"' -f4) ||
		{ k8s_log "cannot read index.json of $archive"; return 1; }
	[ -n "$manifest" ] || { k8s_log "no manifest in index.json of $archive"; return 1; }
	# check: REF TYPE DIGEST STATUS SIZE UNPACKED; a name whose layer is
	# not unpacked for the snapshotter would make the CRI plugin fail.
	have=$("${ctr[@]}" images check 2>/dev/null) || have=
	for ref in "$(k8s_image_ref)" "$(k8s_image_pause_ref)"; do
		printf '%s\n' "$have" | awk -v r="$ref" -v d="$manifest" '$1 == r && $3 == d && $NF == "true" {f = 1} END {exit !f}' || missing=1
	done
	if [ "$missing" = 0 ]; then
		k8s_log "test image already in containerd at $sock ($manifest)"
		return 0
	fi
	"${ctr[@]}" images import "$archive" >/dev/null ||
		{ k8s_log "importing $archive into containerd at $sock failed"; return 1; }
	have=$("${ctr[@]}" images ls)
	for ref in "$(k8s_image_ref)" "$(k8s_image_pause_ref)"; do
		printf '%s\n' "$have" | awk -v r="$ref" -v d="$manifest" '$1 == r && $3 == d {f = 1} END {exit !f}' ||
			{ k8s_log "after importing $archive, containerd at $sock has no $ref at $manifest"; return 1; }
	done
	k8s_log "imported the test image into containerd at $sock ($manifest)"
}
