#!/usr/bin/env bash
# bitcheck.sh: whether two revisions train bit for bit alike on the CPU (docs/design.md
# §Invariants, determinism). It builds cmd/train from each revision into a temporary folder, trains
# the 12 short runs below with each binary at GOMAXPROCS=1 and at GOMAXPROCS=2, and compares every
# run's config.yaml, metrics.jsonl, result.json and checkpoint.bin, less their timing fields: BASE
# against HEAD at each thread count, and GOMAXPROCS=1 against 2 within each revision (the
# comparer, scripts/bitcheck/cmp, says what it compares). Each differing file is printed with its
# first difference (run, file, epoch and key or parameter and index, both values); the exit status
# is then 1. Identical: a summary line and status 0.
#
#   scripts/bitcheck.sh [-f REGEX] [-o DIR] [-n] BASE [HEAD]
#
#   BASE, HEAD  git revisions (a commit, branch, tag, HEAD~1, ...). Without HEAD, BASE is compared
#               with this working tree as it is, uncommitted changes included (a refactor checked
#               before its commit); HEAD names a commit instead (HEAD itself: the last commit)
#   -f  only the runs whose name (zinc-r1-gatedgcn, ...; -n lists them) matches the extended regex
#   -o  keep the run folders (with each trainer's log) in DIR/<base|head>/gomaxprocs<N>/<run>/,
#       DIR new or empty; otherwise they go with the temporary folder
#   -n  list the runs and their trainer flags; build and train nothing
#
# The runs: seed 41, 3 epochs, -device cpu, -cache off (a -subset run preprocesses only its
# graphs), the first 192 graphs of each split at batch 32 (6 steps an epoch), CLUSTER the first
# 24 at batch 8 (3 steps). Config files, each revision's own (and its built-in defaults):
#   zinc-r1-*      ZINC r = 1, adjacency powers: configs/zinc/gatedgcn-adj-r1.yaml and
#                  transformer-adj-r1.yaml; MoNet: the GatedGCN file with -set model.name=monet
#   zinc-r4cls-*   ZINC r = 4 with CLS: configs/zinc/gatedgcn-adj-cls-r4.yaml and
#                  transformer-adj-cls-r4.yaml; MoNet: the GatedGCN file with -set model.name=monet
#   aqsol-r1-*     AQSOL r = 1, shortest-path encoding: configs/aqsol/gatedgcn-short-r1.yaml and
#                  monet-short-r1.yaml; Transformer: the GatedGCN file with -set model.name=transformer
#   cluster-r1-*   CLUSTER r = 1, Laplacian encoding (random sign flips per batch):
#                  configs/cluster/gatedgcn-lp-r1.yaml and transformer-lp-r1.yaml; MoNet: the
#                  GatedGCN file with -set model.name=monet
#   zinc-r1-*-dropout, -recompute   what the paper settings above leave off: layer norm (pre_ln,
#                  post_ln), dropout and input-feature dropout, activation recomputation
#                  (model.recompute, whose replays must leave batch norm's statistics alone)
# (there are no ZINC or CLUSTER MoNet configs and no AQSOL Transformer configs: the paper has no
# such cells). 60 trainings; about 4 to 6 minutes on 2 cores when the builds are cached.
#
# Each revision is exported with git archive into the temporary folder and built there with
# -trimpath (so builds of equal sources share the build cache); the working tree, the index and
# the repository's worktree list are never touched. The comparer and this run list are the
# checkout's that runs the script. The temporary folder is removed on exit, failure or interrupt
# (a running trainer is stopped first). Every REWIREGNN_* variable is cleared for the trainers,
# so the environment cannot change their configs.
#
# Environment: REWIREGNN_DATA or DATA (the data folder, with zinc and aqsol; CLUSTER is generated;
# default ../shared/data), GO, TMPDIR (where the temporary folder goes).
source "$(dirname "$0")/lib.sh"

# name|config file|further flags
RUNS=(
	"zinc-r1-gatedgcn|configs/zinc/gatedgcn-adj-r1.yaml|"
	"zinc-r1-monet|configs/zinc/gatedgcn-adj-r1.yaml|-set model.name=monet"
	"zinc-r1-transformer|configs/zinc/transformer-adj-r1.yaml|"
	"zinc-r4cls-gatedgcn|configs/zinc/gatedgcn-adj-cls-r4.yaml|"
	"zinc-r4cls-monet|configs/zinc/gatedgcn-adj-cls-r4.yaml|-set model.name=monet"
	"zinc-r4cls-transformer|configs/zinc/transformer-adj-cls-r4.yaml|"
	"aqsol-r1-gatedgcn|configs/aqsol/gatedgcn-short-r1.yaml|"
	"aqsol-r1-monet|configs/aqsol/monet-short-r1.yaml|"
	"aqsol-r1-transformer|configs/aqsol/gatedgcn-short-r1.yaml|-set model.name=transformer"
	"cluster-r1-gatedgcn|configs/cluster/gatedgcn-lp-r1.yaml|"
	"cluster-r1-monet|configs/cluster/gatedgcn-lp-r1.yaml|-set model.name=monet"
	"cluster-r1-transformer|configs/cluster/transformer-lp-r1.yaml|"
	"zinc-r1-transformer-preln-dropout|configs/zinc/transformer-adj-r1.yaml|-set model.norm=pre_ln -set model.dropout=0.2 -set model.in_feat_dropout=0.1"
	"zinc-r1-transformer-postln-recompute|configs/zinc/transformer-adj-r1.yaml|-set model.norm=post_ln -set model.dropout=0.1 -set model.recompute=true"
	"zinc-r1-gatedgcn-dropout-recompute|configs/zinc/gatedgcn-adj-r1.yaml|-set model.dropout=0.2 -set model.in_feat_dropout=0.1 -set model.recompute=true"
)
COMMON=(-seed 41 -epochs 3 -device cpu -cache off -quiet -out out)
THREADS=(1 2)

# size NAME: the run's -subset and batch size flags.
size() {
	case $1 in
	cluster-*) echo "-subset 24 -set train.batch_size=8" ;;
	*) echo "-subset 192 -set train.batch_size=32" ;;
	esac
}

filter="" keep="" dry=0
while getopts "f:o:nh" opt; do
	case $opt in
	f) filter=$OPTARG ;;
	o) keep=$OPTARG ;;
	n) dry=1 ;;
	h) usage; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -ge 1 && $# -le 2 ]] || die "usage: bitcheck.sh [-f REGEX] [-o DIR] [-n] BASE [HEAD] (see -h)"

selected=()
for r in "${RUNS[@]}"; do
	if [[ -z $filter || ${r%%|*} =~ $filter ]]; then selected+=("$r"); fi
done
((${#selected[@]})) || die "-f '$filter' matches no run (-n lists them)"

if ((dry)); then
	for r in "${selected[@]}"; do
		IFS='|' read -r name config extra <<<"$r"
		printf '%-24s train -config %s\n' "$name" "$(echo "$config" $extra $(size "$name") "${COMMON[*]}")"
	done
	echo "each at GOMAXPROCS ${THREADS[*]}, with BASE's and with HEAD's binary"
	exit 0
fi

command -v git >/dev/null || die "git is not on PATH"
git rev-parse --git-dir >/dev/null 2>&1 || die "$(pwd) is not a git checkout"
# rev REV: the commit REV names, or a message and status 2.
rev() {
	git rev-parse --verify --quiet "$1^{commit}" || die "$1 names no commit"
}
# label NAME COMMIT: NAME and COMMIT's short hash, or the hash alone when NAME is a hash.
label() {
	local short
	short=$(git rev-parse --short "$2")
	if [[ $2 == "$1"* ]]; then echo "$short"; else echo "$1 = $short"; fi
}
base=$(rev "$1") || exit 2
base_name="base ($(label "$1" "$base"))"
if (($# == 2)); then
	head=$(rev "$2") || exit 2
	head_name="head ($(label "$2" "$head"))"
else
	head=""
	head_name="head (the working tree, on $(git rev-parse --short HEAD)$([[ -z $(git status --porcelain) ]] || echo ', with changes'))"
fi

for r in "${selected[@]}"; do
	case $r in
	zinc-*) need_data zinc ;;
	aqsol-*) need_data aqsol ;;
	esac
done
DATA=$(cd "$DATA" && pwd)
if [[ -n $keep ]]; then
	[[ ! -e $keep || -z $(ls -A "$keep") ]] || die "-o $keep is not empty"
	mkdir -p "$keep"
	keep=$(cd "$keep" && pwd)
fi
for v in $(compgen -e); do
	if [[ $v == REWIREGNN_* ]]; then unset "$v"; fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bitcheck.XXXXXX")
child=""
cleanup() {
	local status=$?
	trap - EXIT INT TERM
	if [[ -n $child ]] && kill -0 "$child" 2>/dev/null; then
		kill -TERM "$child" 2>/dev/null || true
		wait "$child" 2>/dev/null || true
	fi
	rm -rf "$tmp"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# inside DIR CMD...: runs CMD in folder DIR as a child the traps can stop (the script waits with the
# wait builtin, which a signal interrupts), and returns its status.
inside() {
	local dir=$1 status=0
	shift
	(cd "$dir" && exec "$@") &
	child=$!
	wait "$child" || status=$?
	child=""
	return "$status"
}

start=$SECONDS
# build SIDE COMMIT: the trainer of COMMIT (this working tree when empty) into
# $tmp/bin/train-SIDE; sets SIDE_src to the source folder, whose configs SIDE's runs read.
build() {
	local side=$1 commit=$2 src
	if [[ -z $commit ]]; then
		src=$(pwd)
	else
		src=$tmp/src/$side
		mkdir -p "$src"
		git archive --format=tar "$commit" | tar -x -C "$src"
	fi
	echo "+ (cd $src && $GO build -trimpath -buildvcs=false -o $tmp/bin/train-$side ./cmd/train)" >&2
	inside "$src" "$GO" build -trimpath -buildvcs=false -o "$tmp/bin/train-$side" ./cmd/train ||
		die "building cmd/train of $side failed"
	printf -v "${side}_src" %s "$src"
}
echo "bitcheck: $base_name against $head_name" >&2
echo "+ $GO build -o $tmp/bin/bitcmp ./scripts/bitcheck/cmp" >&2
inside . "$GO" build -o "$tmp/bin/bitcmp" ./scripts/bitcheck/cmp || die "building the comparer failed"
build base "$base"
build head "$head"
echo "built both trainers ($((SECONDS - start)) s)" >&2

runs=${keep:-$tmp/runs}
n=0
for r in "${selected[@]}"; do
	IFS='|' read -r name config extra <<<"$r"
	for p in "${THREADS[@]}"; do
		for side in base head; do
			src=${side}_src
			dir=$runs/$side/gomaxprocs$p/$name
			mkdir -p "$dir"
			t0=$SECONDS
			# shellcheck disable=SC2046,SC2086
			if ! inside "$dir" env GOMAXPROCS=$p "$tmp/bin/train-$side" -config "${!src}/$config" $extra $(size "$name") \
				"${COMMON[@]}" -data "$DATA" >"$dir/train.log" 2>&1; then
				tail -n 20 "$dir/train.log" >&2
				die "$side's trainer failed on $name at GOMAXPROCS=$p (its log above)"
			fi
			n=$((n + 1))
			printf 'trained %-24s GOMAXPROCS=%d %s %3d s\n' "$name" "$p" "$side" $((SECONDS - t0)) >&2
		done
	done
done

failed=0
compare() {
	local status=0
	"$tmp/bin/bitcmp" "$@" || status=$?
	((status == 0)) || failed=1
	((status <= 1)) || die "the comparer failed (status $status)"
}
for p in "${THREADS[@]}"; do
	compare -a "base/GOMAXPROCS=$p" -b "head/GOMAXPROCS=$p" "$runs/base/gomaxprocs$p" "$runs/head/gomaxprocs$p"
done
for side in base head; do
	compare -threads -a "$side/GOMAXPROCS=${THREADS[0]}" -b "$side/GOMAXPROCS=${THREADS[1]}" \
		"$runs/$side/gomaxprocs${THREADS[0]}" "$runs/$side/gomaxprocs${THREADS[1]}"
done
[[ -z $keep ]] || echo "run folders kept in $keep" >&2
elapsed=$((SECONDS - start))
if ((failed)); then
	echo "bitcheck: DIFFERENT: $base_name against $head_name (differences above; $n trainings, $elapsed s)"
	exit 1
fi
echo "bitcheck: identical: $base_name against $head_name: ${#selected[@]} run$( ((${#selected[@]} == 1)) || echo s) × GOMAXPROCS ${THREADS[*]} × 2 revisions = $n trainings, 4 comparisons, timing fields left out ($elapsed s)"
