#!/usr/bin/env bash
# gpubin/ab/run.sh (copied there by scripts/ab-bench) runs the two
# stridebench builds beside it, old and new, on the same cases one after the
# other, and prints 'stridebench compare' of each pair of runs: the random
# sweep of each seed, then the named suite.
#
#   bash gpubin/ab/run.sh [-seeds "211 229"] [-bytes 64MiB] [-random 100]
#                         [-reps 20] [-no-named] [-device gpu|cpu]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
seeds="211 229" bytes=64MiB random=100 reps=20 named=1 device=gpu
while [ $# -gt 0 ]; do
	case "$1" in
	-seeds) seeds=$2; shift 2 ;;
	-bytes) bytes=$2; shift 2 ;;
	-random) random=$2; shift 2 ;;
	-reps) reps=$2; shift 2 ;;
	-no-named) named=0; shift ;;
	-device) device=$2; shift 2 ;;
	-h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown argument $1 (-h lists them)" >&2; exit 2 ;;
	esac
done
out=${OUT:-$here/out}
mkdir -p "$out"
secs=${AB_SECS:-150}
status=0

# pair NAME ARGS...: both builds on the same cases, then their comparison.
pair() {
	local name=$1
	shift
	for b in old new; do
		timeout -k 20 "$secs" "$here/$b" run -device "$device" -quiet -reps "$reps" -json "$out/$name-$b.json" "$@" >"$out/$name-$b.log" 2>&1
		local rc=$?
		echo "$name $b: exit $rc; $(grep -m1 '^# random cases:' "$out/$name-$b.log" || true)"
		[ "$rc" -eq 0 ] || status=1
	done
	"$here/new" compare -old "$out/$name-old.json" -new "$out/$name-new.json" >"$out/compare-$name.txt" 2>&1 || status=1
}

for s in $seeds; do
	pair "seed$s" -random "$random" -seed "$s" -random-bytes "$bytes"
done
[ "$named" -eq 1 ] && pair named
for f in "$out"/compare-*.txt; do
	[ -e "$f" ] || continue
	echo "== $(basename "$f" .txt) ($(paste -sd' ' "$here/revisions.txt"))"
	head -3 "$f"
	grep -A20 '^# by item size' "$f" | sed '/^# by class/,$d'
done
exit $status
