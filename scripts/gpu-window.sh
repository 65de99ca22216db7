#!/usr/bin/env bash
# gpu-window.sh: one GPU window (issue 68) prepared here and run there in one or two device calls: the
# full gpu-check, the speed comparison (this build against an earlier one, eager PyTorch and
# torch.compile, the switch rows, runs sharing the GPU), ZINC r = 4 with CLS against the base, a
# whole ZINC protocol run, then the campaign for the rest of the budget. Made to fit the device
# tool's limits: the working tree that travels (tracked files, untracked files not ignored and the
# carried folder) at most 64 MiB, at most 8 files back, at most 600 s a call.
#
#   scripts/gpu-window.sh build DIR [-base COMMIT] [-q QUEUE] [-n N]    # here (Go needed)
#   scripts/gpu-window.sh check DIR                                     # here: the bytes that travel
#   bash DIR/gpu-window.sh run DIR OUT [-budget S] [-emu] [-skip LIST]  # there, from the repository root
#
# build: DIR is a git-ignored folder inside the checkout (.gpuwin is ignored), built whole. It
# holds window.tar.xz (gpu-check's bundle without the NVRTC of the compute70 step, gpu-speed's
# bundle with gpubench of BASE, default 5a4f887, the build the H200 windows of 2026-11-27
# measured, and the campaign's bundle, all in one archive: the binaries share most of their bytes),
# this script and BUILD-INFO. The campaign's bundle carries neither the trainer (gpu-check's is
# the same build) nor the parked runs' folders: those are committed, travel with the tree and are
# copied from it there (build refuses a parked run with uncommitted changes). build prints the
# bytes that will travel and refuses over 63 MiB; then the device call to make.
#
# run: each step within its share of the budget (default 540 s), in this order:
#   check     gpu-check run (full; -emu: quick, emulated), at most CHECK_S seconds (default 150)
#   speed     gpu-speed run, at most SPEED_S (default 270), -skip SPEED_SKIP (default
#             eager,unroll1,evalbig: rows no decision of issue 68 needs)
#   zinc4     gpubench ZINC r = 4 with CLS, this build and the base (EXTRA_S, default 30)
#   zinc      a whole ZINC protocol run, configs/zinc/gatedgcn-adj-r1.yaml seed 41 (ZINC_S, 60)
#   campaign  campaign.sh run for what is left, less PACK_S (25) for packing (skipped under 90 s):
#             the CPU queue's open jobs (configs/campaign/cpu.txt unless -q or CAMPAIGN_QUEUE
#             says otherwise; at most 12, -n), 6 trainers sharing the GPU (CAMPAIGN_K)
# -skip LIST leaves out steps (comma-separated names above). A 15-minute lease holds two calls:
# the measurements (-skip campaign -budget 500, timeout_s 560), then, with what status says is
# left, the campaign alone (-skip check,speed,zinc4,zinc -budget LEFT-60): the machine stays warm
# between them. Back in OUT (8 files at most): window.txt (every step's summary),
# window-logs.tar.gz (all logs and rows, no checkpoints) and OUT/campaign/ (campaign.log,
# summary.txt, at most CAMPAIGN_MAX_PARTS=4 pack parts; here: scripts/campaign.sh collect
# OUT/campaign).
# -emu: the emulated GPU (gpu-check -quick -emu, gpu-speed -emu, ZINC 1 epoch of 16 graphs), the
# campaign on the CPU (-d cpu): how the script is tested without a GPU.
#
# Environment (build): GO, GPU_WINDOW_XZ (xz options; default --x86 --lzma2=preset=9e,dict=256MiB),
# GPU_WINDOW_MAX_TRAVEL (build, check: the limit in bytes), and those of campaign.sh
# (CAMPAIGN_QUEUE, CAMPAIGN_RESULTS, REWIREGNN_DATA).
# Environment (run): CHECK_S, SPEED_S, SPEED_SKIP, EXTRA_S, ZINC_S, PACK_S, CAMPAIGN_K (trainers,
# default 6), CAMPAIGN_MAX_PARTS; GPU_CHECK_ONLY passes through to gpu-check.
set -u -o pipefail

MAX_TRAVEL=$((63 * 1024 * 1024)) # bytes: the device tool's 64 MiB, less a margin
DEFAULT_BASE=5a4f887

die() {
	echo "gpu-window: $*" >&2
	exit 1
}

usage() {
	sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}

# ---------------------------------------------------------------- build (here) ----

# travel_bytes ROOT: the bytes of the working tree the device tool sends without carry (tracked
# files as they are on disk, untracked files git does not ignore).
travel_bytes() {
	(cd "$1" && { git ls-files -z; git ls-files -z -o --exclude-standard; } |
		xargs -0 -r stat -c %s -- 2>/dev/null | awk '{s += $1} END {print s + 0}')
}

# locate DIR: sets ROOT (the checkout above the script), DIR (absolute) and REL (DIR inside
# ROOT); refuses a folder outside the checkout, which the device tool cannot carry.
locate() {
	ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd) || die "no repository above the script"
	DIR=$(cd "$1" 2>/dev/null && pwd) || die "no folder $1"
	[[ $DIR == "$ROOT"/* ]] || die "$DIR is not inside the checkout $ROOT: the device tool carries only paths inside it"
	REL=${DIR#"$ROOT"/}
}

# check DIR: prints the bytes that would travel with DIR carried (and appends them to
# DIR/BUILD-INFO); fails over the limit (GPU_WINDOW_MAX_TRAVEL bytes, default 63 MiB).
check() {
	[ $# -eq 1 ] || usage
	local tree mine total max=${GPU_WINDOW_MAX_TRAVEL:-$MAX_TRAVEL}
	[[ $max =~ ^[0-9]+$ ]] || die "GPU_WINDOW_MAX_TRAVEL=$max: want bytes"
	locate "$1"
	tree=$(travel_bytes "$ROOT")
	mine=$(du -sb "$DIR" | cut -f1)
	total=$((tree + mine))
	echo "travel: tree $tree bytes + $REL $mine bytes = $total bytes ($((total / 1024 / 1024)) MiB; limit $max bytes)" |
		tee -a "$DIR/BUILD-INFO"
	if [ "$total" -gt "$max" ]; then
		echo "gpu-window: $total bytes would travel, over $max" >&2
		return 1
	fi
}

build() {
	[ $# -ge 1 ] && [[ $1 != -* ]] || usage
	local dir=$1 base=$DEFAULT_BASE qargs=(-n 12) go=${GO:-go}
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		-base) base=${2:?-base COMMIT}; shift ;;
		-q | -n) qargs+=("$1" "${2:?$1 needs a value}"); shift ;;
		*) usage ;;
		esac
		shift
	done
	command -v "$go" >/dev/null || die "no Go toolchain ($go) on PATH"
	command -v xz >/dev/null || die "no xz on PATH"
	mkdir -p "$dir" || die "cannot create $dir"
	locate "$dir"
	local root=$ROOT rel=$REL
	dir=$DIR
	grep -q '^module github.com/rewiregnn/rewiregnn$' "$root/go.mod" 2>/dev/null || die "$root is not a rewiregnn checkout"
	git -C "$root" check-ignore -q "$rel" || die "$rel is not ignored by git: a carried folder must be (add /$rel/ to .gitignore)"
	[ -z "$(ls -A "$dir")" ] || die "$dir is not empty: remove it first (a window is built whole)"
	# A CPU window running would train the same jobs beside the GPU's, and the second result of a
	# run would be refused at collect: stop and collect it (and commit) first.
	if (cd "$root" && bash scripts/campaign.sh cpu running); then
		die "the CPU campaign runs: scripts/campaign.sh cpu stop, cpu collect and commit first; start it again after the window is collected"
	fi

	local t0=$SECONDS
	STAGE=$(mktemp -d "${TMPDIR:-/tmp}/gpu-window-build.XXXXXX") || die "mktemp"
	trap 'rm -rf "$STAGE"' EXIT
	local stage=$STAGE w=$STAGE/w
	mkdir -p "$w" || die "mkdir"
	# The campaign first (a minute): its parked runs must be committed, so it fails early.
	(cd "$root" && CAMPAIGN_QUEUE=${CAMPAIGN_QUEUE:-configs/campaign/cpu.txt} bash scripts/campaign.sh bundle "$stage/cb" "${qargs[@]}") ||
		die "campaign bundle failed"
	local c=$stage/cb/campaign grid name seed mode results parked args
	rm -f "$c/train" "$c/train.gz"
	while IFS=$'\t' read -r grid name seed mode results parked args; do
		[ "$mode" = resume ] || continue
		# The parked run travels with the tree: it must be committed as it is here.
		if [[ $parked != /* ]]; then
			[ -z "$(git -C "$root" status --porcelain -- "$parked")" ] ||
				die "parked run $parked has uncommitted changes: commit it (what travels is the tree, the window resumes from it)"
		fi
		rm -rf "${c:?}/runs/$grid/$name/seed$seed"
	done <"$c/jobs.txt"
	mv "$c" "$w/campaign" || die "move the campaign bundle"
	GPU_CHECK_NVRTC=none GPU_CHECK_XZ=-0 bash "$root/scripts/gpu-check.sh" build "$stage/gc" || die "gpu-check build failed"
	tar -C "$w" -xJf "$stage/gc/gpu-check.tar.xz" && rm -rf "$stage/gc" || die "unpack gpu-check"
	bash "$root/scripts/gpu-speed.sh" build "$stage/gs" "$base" || die "gpu-speed build failed"
	tar -C "$w" -xJf "$stage/gs/gpu-speed.tar.xz" && rm -rf "$stage/gs" || die "unpack gpu-speed"
	cp "${BASH_SOURCE[0]}" "$w/gpu-window.sh" || die "copy the script"
	{
		echo "gpu-window bundle, built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n); $("$go" version)"
		echo "commit: $(git -C "$root" rev-parse HEAD)$(git -C "$root" diff --quiet HEAD || echo ' (with uncommitted changes)')"
		echo "base: $(git -C "$root" rev-parse "$base") ($base)"
		echo "campaign: $(grep -E '^(queue|jobs|data):' "$w/campaign/BUILD-INFO" | tr '\n' ';' | sed 's/;$//')"
		echo "gpu-check: without the NVRTC of the compute70 step (SKIP there)"
	} >"$w/BUILD-INFO"
	local xzopt=${GPU_WINDOW_XZ:---x86 --lzma2=preset=9e,dict=256MiB}
	echo "gpu-window: packing (xz $xzopt: 2-3 minutes at the default)"
	# shellcheck disable=SC2086 # xzopt is a list of options
	tar -C "$w" -cf - . | xz -T1 $xzopt >"$dir/window.tar.xz.tmp" || die "packing failed"
	mv "$dir/window.tar.xz.tmp" "$dir/window.tar.xz"
	cp "$w/gpu-window.sh" "$w/BUILD-INFO" "$dir/" || die "copy the script"
	check "$dir" || { rm -f "$dir/window.tar.xz"; die "queue fewer data sets (-q, -n) or commit less"; }
	echo "gpu-window: built in $((SECONDS - t0))s. The device calls (carry [\"$rel\"] in each):"
	echo "  1. command \"bash $rel/gpu-window.sh run $rel \$OUT -budget 500 -skip campaign\", timeout_s 560"
	echo "  2. at once: command \"bash $rel/gpu-window.sh run $rel \$OUT -budget N -skip check,speed,zinc4,zinc\", N = status's budget_left_s - 60, timeout_s N + 40; then give_back"
	echo "  (or one call: \"bash $rel/gpu-window.sh run $rel \$OUT -budget 540\", timeout_s 600: the campaign gets what the rest leaves)"
	echo "then here: scripts/campaign.sh collect <files_at>/campaign; the rest is in <files_at>/window.txt and window-logs.tar.gz"
}

# ---------------------------------------------------------------- run (there) ----

# left: seconds before the run's deadline.
left() { echo $((DEADLINE - SECONDS)); }

# share S: a step's limit, S seconds or what is left if less.
share() {
	local l
	l=$(left)
	echo $(($1 < l ? $1 : l))
}

# skipped STEP: whether -skip names STEP.
skipped() { [[ ",$SKIP," == *",$1,"* ]]; }

# note TEXT: a line of window.txt (and the console).
note() { echo "$*" | tee -a "$OUT/window.txt"; }

step_check() {
	local lim args=()
	lim=$(share "$CHECK_S")
	((EMU)) && args=(-quick -emu)
	tar -C "$W/u" -cf "$W/gpu-check.tar" gpu-check || return 1
	note "== check: gpu-check ${args[*]} (at most ${lim}s)"
	timeout -k 10 "$lim" bash "$W/u/gpu-check/gpu-check.sh" run "$W/gpu-check.tar" "$W/logs/check" "${args[@]}" >"$W/logs/check.out" 2>&1
	local rc=$?
	if [ -f "$W/logs/check/summary.txt" ]; then cat "$W/logs/check/summary.txt" >>"$OUT/window.txt"; else tail -20 "$W/logs/check.out" >>"$OUT/window.txt"; fi
	note "check: exit $rc"
}

step_speed() {
	local b args=()
	b=$(share "$SPEED_S")
	((EMU)) && args=(-emu)
	tar -C "$W/u" -cf "$W/gpu-speed.tar" gpu-speed || return 1
	note "== speed: gpu-speed ${args[*]} -budget $b -skip ${SPEED_SKIP:-none}"
	timeout -k 10 $((b + 30)) bash "$W/u/gpu-speed/gpu-speed.sh" run "$W/gpu-speed.tar" "$W/logs/speed" -budget "$b" "${args[@]}" \
		${SPEED_SKIP:+-skip "$SPEED_SKIP"} >"$W/logs/speed.out" 2>&1
	local rc=$?
	if [ -f "$W/logs/speed/summary.md" ]; then cat "$W/logs/speed/summary.md" >>"$OUT/window.txt"; else tail -20 "$W/logs/speed.out" >>"$OUT/window.txt"; fi
	note "speed: exit $rc"
}

# step_zinc4: ZINC r = 4 with CLS (issue 68's second setting), this build and the base, after a
# warm-up epoch, as gpu-speed's rows (JSON, one line each, in logs/zinc4.jsonl).
step_zinc4() {
	local dev=cuda epochs=4 sub=0 v bin lim
	((EMU)) && dev=emu epochs=2 sub=16
	note "== zinc4: gpubench ZINC r = 4 with CLS, this build and the base"
	for v in this base; do
		bin=gpubench
		[ $v = base ] && bin=gpubench-base
		lim=$(share $((EXTRA_S / 2)))
		((lim > 5)) || { note "zinc4 $v: out of time"; continue; }
		timeout -k 3 "$lim" "$W/u/gpu-speed/bin/$bin" -device $dev -suite zinc -r 4 -cls true -epochs $epochs -batch 128 -subset $sub \
			-prebuilt -json -data "$W/u/gpu-speed/data" 2>>"$W/logs/zinc4.log" | sed "s/^{/{\"variant\":\"$v\",/" >>"$W/logs/zinc4.jsonl"
		note "zinc4 $v: exit $? $(tail -1 "$W/logs/zinc4.jsonl" 2>/dev/null | grep -oE '"(seconds_per_epoch|peak_mib)":[^,}]*' | tr '\n' ' ')"
	done
}

# step_zinc: a whole ZINC protocol run (issue 68's ≤ 30 s target), seed 41, with its cache.
step_zinc() {
	local lim args=(-device cuda)
	lim=$(share "$ZINC_S")
	((EMU)) && args=(-device emu -epochs 1 -subset 16)
	note "== zinc: train -config configs/zinc/gatedgcn-adj-r1.yaml -seed 41 ${args[*]} (at most ${lim}s)"
	local t0=$SECONDS
	REWIREGNN_DATA=$W/u/gpu-check/data timeout -k 10 "$lim" "$W/u/gpu-check/bin/train" -config "$R/configs/zinc/gatedgcn-adj-r1.yaml" \
		-seed 41 "${args[@]}" -out "$W/zinc" -cache "$W/zinc-cache" -quiet >"$W/logs/zinc.log" 2>&1
	local rc=$?
	tail -2 "$W/logs/zinc.log" >>"$OUT/window.txt"
	note "zinc: exit $rc after $((SECONDS - t0))s (wall, preprocessing included)"
	find "$W/zinc" -name result.json -exec cp {} "$W/logs/zinc-result.json" \; 2>/dev/null
}

# step_campaign: the campaign bundle with the trainer of gpu-check and the parked runs copied
# from the tree, for what is left less PACK_S.
step_campaign() {
	local c=$W/u/campaign b
	b=$(($(left) - PACK_S))
	if ((b < 90)); then
		note "campaign: skipped, ${b}s left"
		return 0
	fi
	cp "$W/u/gpu-check/bin/train" "$c/train" && chmod +x "$c/train" || return 1
	local grid name seed mode results parked args src n=0
	while IFS=$'\t' read -r grid name seed mode results parked args; do
		[ "$mode" = resume ] || continue
		src=$parked
		[[ $src == /* ]] || src=$R/$parked
		[ -f "$src/checkpoint.bin" ] || { note "campaign: the parked run $parked is not in the tree here (build checked it was committed)"; return 1; }
		mkdir -p "$c/runs/$grid/$name/seed$seed" && cp "$src"/* "$c/runs/$grid/$name/seed$seed/" || return 1
		n=$((n + 1))
	done <"$c/jobs.txt"
	local dev=cuda k=${CAMPAIGN_K:-6}
	((EMU)) && dev=cpu k=${CAMPAIGN_K:-2}
	note "== campaign: $(wc -l <"$c/jobs.txt") jobs ($n parked, copied from the tree), -d $dev -k $k -b $b"
	CAMPAIGN_MAX_PARTS=${CAMPAIGN_MAX_PARTS:-4} bash "$c/campaign.sh" run "$c" "$OUT/campaign" -b "$b" -k "$k" -d "$dev" >"$W/logs/campaign.out" 2>&1
	local rc=$?
	rm -f "$OUT/campaign/runner.pid" # the runner's pid, of no use back here: one file fewer of the 8
	[ -f "$OUT/campaign/summary.txt" ] && cat "$OUT/campaign/summary.txt" >>"$OUT/window.txt"
	note "campaign: exit $rc"
}

run() {
	[ $# -ge 2 ] && [[ $1 != -* && $2 != -* ]] || usage
	local dir=$1 out=$2 budget=540
	EMU=0 SKIP=
	shift 2
	while [ $# -gt 0 ]; do
		case $1 in
		-budget) budget=${2:-}; shift ;;
		-emu) EMU=1 ;;
		-skip) SKIP=${2:-}; shift ;;
		*) usage ;;
		esac
		shift
	done
	[[ $budget =~ ^[0-9]+$ ]] || die "-budget $budget: want seconds"
	local s
	for s in ${SKIP//,/ }; do
		case $s in check | speed | zinc4 | zinc | campaign) ;; *) die "-skip $SKIP: no step $s (check, speed, zinc4, zinc, campaign)" ;; esac
	done
	CHECK_S=${CHECK_S:-150} SPEED_S=${SPEED_S:-270} EXTRA_S=${EXTRA_S:-30} ZINC_S=${ZINC_S:-60} PACK_S=${PACK_S:-25}
	SPEED_SKIP=${SPEED_SKIP-eager,unroll1,evalbig}
	for s in CHECK_S SPEED_S EXTRA_S ZINC_S PACK_S; do
		[[ ${!s} =~ ^[0-9]+$ ]] || die "$s=${!s}: want seconds"
	done
	DEADLINE=$((SECONDS + budget))
	R=$PWD
	[ -f "$R/configs/zinc/gatedgcn-adj-r1.yaml" ] || die "run from the repository root (no configs/zinc/gatedgcn-adj-r1.yaml in $R)"
	[ -f "$dir/window.tar.xz" ] || die "no $dir/window.tar.xz"
	mkdir -p "$out" || die "cannot create $out"
	OUT=$(cd "$out" && pwd)
	[ -z "$(ls -A "$OUT")" ] || die "$OUT is not empty: use another folder"
	W=$(mktemp -d "${TMPDIR:-/tmp}/gpu-window.XXXXXX") || die "mktemp"
	trap 'rm -rf "$W"' EXIT
	mkdir -p "$W/u" "$W/logs" || die "mkdir"
	export REWIREGNN_KERNEL_CACHE=$W/kernel-cache
	{
		echo "gpu-window on $(uname -n), $(date -u +%Y-%m-%dT%H:%M:%SZ), budget ${budget}s${SKIP:+, -skip $SKIP}$( ((EMU)) && echo ', emulated')"
		command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
		echo "cores $(nproc), $(free -g 2>/dev/null | awk '/^Mem:/ {print $2 " GiB"}')"
	} | tee "$OUT/window.txt"
	tar -C "$W/u" -xJf "$dir/window.tar.xz" || die "cannot unpack $dir/window.tar.xz"
	cat "$W/u/BUILD-INFO" >>"$OUT/window.txt"
	note "unpacked at +$((budget - $(left)))s"
	for s in check speed zinc4 zinc campaign; do
		if skipped $s; then
			note "$s: skipped (-skip)"
			continue
		fi
		"step_$s" || note "$s: FAILED to start"
		note "$s done at +$((budget - $(left)))s"
	done
	# Everything but checkpoints, kernel caches and preprocessing caches, in one file.
	(cd "$W" && tar -czf "$OUT/window-logs.tar.gz" --exclude='*.bin' --exclude='*cache*' logs \
		$(find zinc -maxdepth 3 -name train.log 2>/dev/null))
	local n
	n=$(find "$OUT" -type f | wc -l)
	note "gpu-window: done at +$((budget - $(left)))s; $n files in $OUT (at most 8 come back)"
	((n <= 8)) || echo "gpu-window: $n files in $OUT, over 8" >&2
}

case ${1:-} in
check)
	shift
	check "$@" || exit 1
	;;
build)
	shift
	build "$@"
	;;
run)
	shift
	run "$@"
	;;
*) usage ;;
esac
