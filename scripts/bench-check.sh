#!/usr/bin/env bash
# Wall time, peak RSS and throughput of the whole of `gpuaccept check --out`
# (parse in the plugin process, the gRPC transfer, judge, reports, the
# results folder) on large nccl-tests logs, next to `wc -l` on the same file.
#
# Each log is a real recording, testdata/recordings/h200x2-2026-11-30/
# direct-1/all_reduce.log (nccl-tests 2.19.6 on 2 x H200, 30 sizes), as
# nccl-tests -N prints its cycles: the same header, the sweep's rows again
# and again until the log holds ROWS rows, one footer.
#
#   scripts/bench-check.sh [ROWS...]     (default: 100000 1000000 10000000)
#
# GPUACCEPT=path runs that binary instead of building one (to compare
# builds). The peak RSS of each process is its VmHWM, read from /proc every
# 20 ms while it runs; gpuaccept's is also taken from /usr/bin/time, which
# reports the larger of gpuaccept's and the plugin's, so a peak of
# gpuaccept's in its last milliseconds is not missed.
set -euo pipefail
cd "$(dirname "$0")/.."
src=testdata/recordings/h200x2-2026-11-30/direct-1/all_reduce.log
[ $# -gt 0 ] || set -- 100000 1000000 10000000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=${GPUACCEPT:-}
if [ -z "$bin" ]; then
	bin=$tmp/gpuaccept
	go build -o "$bin" ./cmd/gpuaccept
fi

# mklog ROWS FILE: the recording with its rows repeated to ROWS rows.
mklog() {
	awk -v want="$1" '
		/^ *[0-9]+ +[0-9]+ +[a-z]/ { rows[n++] = $0; next }
		{ if (n == 0) head = head $0 "\n"; else tail = tail $0 "\n" }
		END { printf "%s", head; for (i = 0; i < want; i++) print rows[i % n]; printf "%s", tail }' "$src" >"$2"
}

hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status" 2>/dev/null || true; }

row='%-9s %-9s %-11s %-8s %-9s %-8s %-10s %-10s %-9s %s\n'
# shellcheck disable=SC2059
printf "$row" rows lines bytes "wc -l s" "wc MB/s" "check s" "check MB/s" gpuaccept plugin verdict
for rows in "$@"; do
	log=$tmp/all_reduce.log
	mklog "$rows" "$log"
	size=$(stat -c %s "$log")
	lines=$(wc -l <"$log")
	s=$(date +%s%N)
	wc -l "$log" >/dev/null
	e=$(date +%s%N)
	t_wc=$((e - s))

	rm -rf "$tmp/out"
	s=$(date +%s%N)
	/usr/bin/time -f %M -o "$tmp/time" "$bin" check --sku h200 --test nccl.all_reduce --nodes 1 --gpus-per-node 2 \
		--out "$tmp/out" "$log" >"$tmp/stdout" 2>"$tmp/stderr" &
	tpid=$!
	main=0 plug=0 gpid=
	while kill -0 "$tpid" 2>/dev/null; do
		[ -n "$gpid" ] || gpid=$(pgrep -P "$tpid" | head -1 || true)
		if [ -n "$gpid" ]; then
			v=$(hwm "$gpid"); [ -z "$v" ] || [ "$v" -le "$main" ] || main=$v
			for c in $(pgrep -P "$gpid" || true); do
				v=$(hwm "$c"); [ -z "$v" ] || [ "$v" -le "$plug" ] || plug=$v
			done
		fi
		sleep 0.02
	done
	rc=0
	wait "$tpid" || rc=$?
	e=$(date +%s%N)
	t_check=$((e - s))
	both=$(tail -1 "$tmp/time")
	case $both in *[!0-9]*|'') both=0 ;; esac
	# /usr/bin/time gives max(gpuaccept, plugin): above the plugin's, it is
	# gpuaccept's own peak.
	if [ "$both" -gt "$plug" ] && [ "$both" -gt "$main" ]; then main=$both; fi
	verdict=$(tail -1 "$tmp/stdout" | cut -d: -f1)
	if [ "$rc" -ge 128 ]; then
		verdict="$verdict (exit $rc: killed by signal $((rc - 128)))"
	elif [ "$rc" -ne 0 ]; then
		verdict="$verdict (exit $rc)"
	fi
	rate() { awk -v b="$size" -v ns="$1" 'BEGIN { printf "%.1f", b / (ns / 1e9) / 1e6 }'; }
	# shellcheck disable=SC2059
	printf "$row" "$rows" "$lines" "$size" \
		"$(awk -v ns="$t_wc" 'BEGIN { printf "%.2f", ns / 1e9 }')" "$(rate "$t_wc")" \
		"$(awk -v ns="$t_check" 'BEGIN { printf "%.2f", ns / 1e9 }')" "$(rate "$t_check")" \
		"$((main / 1024)) MiB" "$((plug / 1024)) MiB" "$verdict"
	rm -f "$log"
done
echo "rows: result rows; lines: wc -l of the log; check: gpuaccept check --out, the whole command; gpuaccept, plugin: peak RSS"
echo "the parser alone: go test -run '^\$' -bench ParseTextCycles -benchmem ./plugins/internal/nccltests/"
