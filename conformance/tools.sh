#!/bin/sh
# tools.sh KINST DIR: runs every .bt file in DIR (bpftrace's tools/ folder)
# under KINST for a few seconds, stopped with SIGINT as a user would, and
# prints one line per tool: its exit status, whether it attached, and the
# first lines of what it said on stderr. Run it inside a guest with
# vmrun (see the README); busybox's sh and timeout are enough.
kinst=${1:?usage: tools.sh KINST DIR}
dir=${2:?usage: tools.sh KINST DIR}
secs=${SECONDS_PER_TOOL:-3}
out=$(mktemp) err=$(mktemp)
for f in "$dir"/*.bt; do
	timeout -s INT "$secs" "$kinst" "$f" >"$out" 2>"$err"
	rc=$?
	attached=no
	grep -q '^Attached ' "$err" && attached=yes
	said=$(grep -v '^Attached ' "$err" | head -3 | tr '\n' '|' | cut -c1-300)
	echo "$(basename "$f") exit=$rc attached=$attached $said"
done
rm -f "$out" "$err"
