# gpuaccept health collection: run on every node (one process per node), in
# POSIX sh. Every line it prints is "HOST|SECTION|TEXT": a step of several
# nodes shares one log, and the rank starter interleaves the nodes' lines,
# so the plugin regroups them by host and section. A tool that is absent is
# a section holding "@absent TOOL"; each section ends with "@exit STATUS".
# $1: the dcgmi diag level (0: do not run it).
dcgm_level=${1:-0}
# The node's name: under Kubernetes the Node's (GPUACCEPT_NODE_NAME from
# the downward API, or the file a rank pod of several left it in for the
# ranks its sshd starts, which do not inherit the pod's environment: a
# check must name the Node a taint marks, not the pod); else the rank's
# entry of GPUACCEPT_HOSTS, else the host name.
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-${PMIX_RANK:-}}}}
h=${GPUACCEPT_NODE_NAME:-}
if [ -z "$h" ] && [ -r /etc/gpuaccept-node-name ]; then
	h=$(sed -n 1p /etc/gpuaccept-node-name)
fi
if [ -z "$h" ] && [ -n "$rank" ] && [ -n "${GPUACCEPT_HOSTS:-}" ]; then
	h=$(printf '%s\n' "$GPUACCEPT_HOSTS" | tr ',' '\n' | sed -n "$((rank + 1))p")
fi
[ -n "$h" ] || h=$(hostname 2>/dev/null || uname -n)
h=$(printf '%s' "$h" | tr -d '|')
tag() { while IFS= read -r l || [ -n "$l" ]; do printf '%s|%s|%s\n' "$h" "$1" "$l"; done; }
# sec SECTION CMD...: CMD's output and exit status as SECTION.
sec() { s=$1; shift; { "$@" 2>&1; echo "@exit $?"; } | tag "$s"; }
have() { command -v "$1" >/dev/null 2>&1; }
absent() { echo "@absent $2" | tag "$1"; }
echo "@begin gpuaccept-health 1 hostname=$(hostname 2>/dev/null) rank=$rank" | tag begin
if have nvidia-smi; then
	sec nvsmi-xml nvidia-smi -q -x
	q=index,name,pci.bus_id,driver_version,vbios_version,persistence_mode,ecc.mode.current,ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total,retired_pages.pending,remapped_rows.pending,remapped_rows.failure,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max
	# clocks_event_reasons is the newer name of clocks_throttle_reasons:
	# a driver knows one of them.
	if nvidia-smi --query-gpu=clocks_event_reasons.active --format=csv >/dev/null 2>&1; then
		sec nvsmi-csv nvidia-smi --query-gpu=$q,clocks_event_reasons.active --format=csv
	else
		sec nvsmi-csv nvidia-smi --query-gpu=$q,clocks_throttle_reasons.active --format=csv
	fi
	sec nvlink nvidia-smi nvlink --status
else
	absent nvsmi-xml nvidia-smi
fi
# Every NVRM line, not only the XIDs: a GPU that fell off the bus or that
# the driver could not take says so in NVRM lines without an XID, some of
# several lines; "nvidia ... probe" lines name the address of a failed
# probe (gpulost.go).
if have dmesg && dmesg >/dev/null 2>&1; then
	sec kernel-log sh -c 'dmesg | grep -e "NVRM" -e "nvidia.*probe"; true'
elif have journalctl && journalctl -k -b -q --no-pager -n 1 2>/dev/null | grep -v -e '^-- ' -e 'No journal files' | grep -q .; then
	# Only a journal that shows kernel lines counts: "No journal files
	# were found" with nothing matched would pass every node.
	sec kernel-log sh -c 'journalctl -k -b --no-pager | grep -e "NVRM" -e "nvidia.*probe"; true'
else
	absent kernel-log dmesg
fi
if [ "$dcgm_level" != 0 ]; then
	if have dcgmi; then
		sec dcgm dcgmi diag -r "$dcgm_level" -j
	else
		absent dcgm dcgmi
	fi
fi
# amd-smi metric without options prints every metric it knows, the ECC
# counts, ECC blocks (XGMI_WAFL), PCIe link and xgmi_err among them: the
# option names have changed across versions, the full output has not.
if have amd-smi; then
	sec amdsmi-static amd-smi static --json
	sec amdsmi-metric amd-smi metric --json
elif have rocm-smi; then
	sec rocmsmi rocm-smi --showallinfo --json
	# rocm-smi --json has no RAS counts ("No JSON data to report" for
	# --showrasinfo): its text table is the ECC reading.
	sec rocmsmi-text rocm-smi --showrasinfo
fi
if have ibstat; then
	sec ibstat ibstat
fi
if [ -d /sys/class/infiniband ]; then
	# hca_type (the HCA's model, "MT4129") is the device's, printed for
	# each of its ports: ports of one model on a node are compared.
	sec ib-sysfs sh -c 'for p in /sys/class/infiniband/*/ports/*; do [ -d "$p" ] || continue; d=${p%/ports/*}; t=$d/hca_type; d=${d##*/}; n=${p##*/}; for f in state rate link_layer gids/0; do [ -r "$p/$f" ] && echo "$d $n $f $(cat "$p/$f" 2>/dev/null)"; done; if [ -r "$t" ]; then echo "$d $n hca_type $(cat "$t" 2>/dev/null)"; fi; done'
else
	absent ib-sysfs /sys/class/infiniband
fi
echo "@end" | tag end
