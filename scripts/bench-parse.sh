#!/usr/bin/env bash
# Speed and memory of the nccl-tests text parser next to cat and dd reading
# the same file. The file has the shape of a large real log: one real
# NCCL_DEBUG=INFO output of nccl-tests with its NCCL INFO lines repeated, as
# many ranks print them (18 result rows whatever the size).
#
#   scripts/bench-parse.sh [MB]     (default 256)
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-256}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/nccl.test" ./plugins/internal/nccltests/
cd plugins/internal/nccltests # the test binary reads its testdata from here
NCCL_PARSE_FILE="$tmp/big.log" NCCL_PARSE_WRITE_MB=$mb "$tmp/nccl.test" -test.run '^TestParseTextFile$' >/dev/null
size=$(stat -c %s "$tmp/big.log")
cat "$tmp/big.log" >/dev/null # into the page cache

best() { # best wall time in seconds of 5 runs of "$@"
	local b=
	for _ in 1 2 3 4 5; do
		local s e
		s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N)
		local t=$(( e - s ))
		if [ -z "$b" ] || [ "$t" -lt "$b" ]; then b=$t; fi
	done
	echo "$b"
}
rate() { awk -v b="$size" -v ns="$1" 'BEGIN { printf "%8.0f MB/s", b / (ns / 1e9) / 1e6 }'; }

t_cat=$(best sh -c "cat '$tmp/big.log' | cat >/dev/null")
t_dd=$(best dd if="$tmp/big.log" of=/dev/null bs=128k)
t_parse=$(best env NCCL_PARSE_NOSAMPLE=1 NCCL_PARSE_FILE="$tmp/big.log" "$tmp/nccl.test" -test.run '^TestParseTextFile$')
rss=$( { /usr/bin/time -f %M env NCCL_PARSE_NOSAMPLE=1 NCCL_PARSE_FILE="$tmp/big.log" "$tmp/nccl.test" -test.run '^TestParseTextFile$' >/dev/null; } 2>&1 | tail -1)
rss_cat=$( { /usr/bin/time -f %M cat "$tmp/big.log" >/dev/null; } 2>&1 | tail -1)

echo "file: $size bytes ($mb MiB), best of 5 wall times, page cache warm"
printf '%-40s %s\n' "cat FILE | cat (read + pipe)" "$(rate "$t_cat")"
printf '%-40s %s\n' "dd bs=128k of=/dev/null (read only)" "$(rate "$t_dd")"
printf '%-40s %s   %s KB max RSS (cat: %s KB)\n' "gpuaccept ParseText (whole test binary)" "$(rate "$t_parse")" "$rss" "$rss_cat"
awk -v p="$t_parse" -v c="$t_cat" -v d="$t_dd" 'BEGIN { printf "parser / cat|cat: %.0f%%   parser / dd: %.0f%%\n", 100*c/p, 100*d/p }'
