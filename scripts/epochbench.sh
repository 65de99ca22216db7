#!/usr/bin/env bash
# epochbench.sh: seconds per epoch of two train binaries on the same configs, one thread each,
# the CPU campaign's trainers paused (SIGSTOP) meanwhile and resumed on exit, whatever happens.
# Each config runs -epochs epochs with OLD, then NEW, then again in the other order (-reps
# rounds), so that drift in the machine's speed falls on both; it prints every epoch's training
# and evaluation seconds, and the metrics, so that a run can also be checked bit for bit
# (scripts/bitcheck/cmp on the two OUT/<old|new>-* folders of a round).
#
#   scripts/epochbench.sh -old BIN -new BIN -o OUT [-epochs 2] [-reps 2] [-seed 41] CONFIG...
#
#   -old, -new  train binaries (go build -o ... ./cmd/train at each revision)
#   -o          a new folder for the runs (OUT/<old|new>-<round>-<config name>/)
#   CONFIG      config files (configs/aqsol/gatedgcn-adj-r8.yaml, ...)
# Relative paths are read from the repository root (the script runs there).
# The campaign's trainers are found as campaign.sh finds its folder (CAMPAIGN_CPU_DIR, default
# .campaign/cpu in the checkout).
set -euo pipefail
cd "$(dirname "$0")/.."
old= new= out= epochs=2 reps=2 seed=41
while [ $# -gt 0 ]; do
	case $1 in
	-old) old=$2; shift 2 ;;
	-new) new=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	-epochs) epochs=$2; shift 2 ;;
	-reps) reps=$2; shift 2 ;;
	-seed) seed=$2; shift 2 ;;
	-*) echo "epochbench: unknown flag $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ -n "$old" ] && [ -n "$new" ] && [ -n "$out" ] && [ $# -gt 0 ] || {
	echo "usage: scripts/epochbench.sh -old BIN -new BIN -o OUT [-epochs N] [-reps N] [-seed S] CONFIG..." >&2; exit 2; }
for b in "$old" "$new"; do [ -x "$b" ] || { echo "epochbench: -old/-new $b: not an executable" >&2; exit 2; }; done
for c in "$@"; do [ -f "$c" ] || { echo "epochbench: config $c: no such file" >&2; exit 2; }; done
[ ! -e "$out" ] || { echo "epochbench: -o $out exists: name a new folder" >&2; exit 2; }
mkdir -p "$out"

cpu_dir=${CAMPAIGN_CPU_DIR:-$PWD/.campaign/cpu}
pids="$(pgrep -f "^\./train .*-device cpu -cache $cpu_dir/" | tr '\n' ' ' || true)"
trap '[ -z "$pids" ] || kill -CONT $pids; echo "campaign trainers resumed at $(date -u +%T)"' EXIT
[ -z "$pids" ] || kill -STOP $pids
echo "campaign trainers paused: ${pids:-none} at $(date -u +%T); $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"

one() { # version binary round config
	local name dir
	name=$(basename "$4" .yaml)
	dir=$out/$1-$3-$name
	GOMAXPROCS=1 "$2" -config "$4" -seed "$seed" -epochs "$epochs" -out "$dir" -quiet >"$dir.log" 2>&1 ||
		{ echo "epochbench: $1 $4 failed, see $dir.log" >&2; exit 1; }
	python3 - "$dir" "$1" "$name" <<'EOF'
import json, pathlib, sys
d, v, name = sys.argv[1:]
for m in pathlib.Path(d).glob('*/seed*/metrics.jsonl'):
    for l in m.open():
        e = json.loads(l)
        print(f"{v} {name} epoch {e['epoch']}: train {e['seconds']:.2f} s, eval {e['eval_seconds']:.2f} s; val {e['val_metric']!r} test {e['test_metric']!r}")
EOF
}
for round in $(seq 1 "$reps"); do
	order="old new"; [ $((round % 2)) -eq 0 ] && order="new old"
	for c in "$@"; do
		for v in $order; do
			bin=$old; [ "$v" = new ] && bin=$new
			one "$v" "$bin" "$round" "$c"
		done
	done
done
