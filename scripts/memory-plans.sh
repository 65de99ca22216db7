#!/usr/bin/env bash
# memory-plans.sh: the planned memory (train -plan) of every dataset's largest paper setting,
# against a 16 GiB and a 32 GiB V100: the table of docs/memory.md. Each plan preprocesses the
# whole split into the cache (chunk by chunk, where a file is missing), reads only the graphs'
# sizes back and builds the nets of every bucket; nothing is trained.
#
#   scripts/memory-plans.sh [-o FOLDER] [SETTING …]
#
#   -o  write each plan to FOLDER/<setting>-<budget>.txt (default: standard output only)
#   SETTING  one or more of: zinc-r10 aqsol-r10 cluster-r3 cluster-transformer-r3 pattern-r3
#            mnist-r3 mnist-r4 cifar10-r3 cifar10-r4 (default: all), or mnist-r3-sub, mnist-r4-sub
#            (the first 10000 graphs of each split: a subset run's plan loads its graphs)
#
# Environment: REWIREGNN_DATA or DATA (data folder, default ../shared/data), GO.
source "$(dirname "$0")/lib.sh"

out=
while getopts "o:h" opt; do
	case $opt in
	o) out=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

declare -A settings=(
	[zinc-r10]="-config configs/zinc/gatedgcn-adj-cls-r10.yaml"
	[aqsol-r10]="-config configs/aqsol/gatedgcn-adj-cls-r10.yaml"
	[cluster-r3]="-config configs/cluster/gatedgcn-lp-r3.yaml"
	[cluster-transformer-r3]="-config configs/cluster/transformer-lp-r3.yaml"
	[pattern-r3]="-config configs/pattern/gatedgcn-lp-r3.yaml"
	[mnist-r3]="-config configs/mnist/gatedgcn-adj-cls-r3.yaml"
	[mnist-r4]="-config configs/mnist/gatedgcn-adj-cls-r3.yaml -set dataset.r=4"
	[mnist-r3-sub]="-config configs/mnist/gatedgcn-adj-cls-r3.yaml -subset 10000"
	[mnist-r4-sub]="-config configs/mnist/gatedgcn-adj-cls-r3.yaml -set dataset.r=4 -subset 10000"
	[cifar10-r3]="-config configs/cifar10/gatedgcn-adj-cls-r3.yaml"
	[cifar10-r4]="-config configs/cifar10/gatedgcn-adj-cls-r3.yaml -set dataset.r=4"
)
order=(zinc-r10 aqsol-r10 cluster-r3 cluster-transformer-r3 pattern-r3 mnist-r3 mnist-r4 cifar10-r3 cifar10-r4)
(($# > 0)) && order=("$@")
for s in "${order[@]}"; do
	[[ -n ${settings[$s]:-} ]] || die "unknown setting $s (see -h)"
done
[[ -z $out ]] || mkdir -p "$out"
bin=$(mktemp -d)/train
trap 'rm -rf "$(dirname "$bin")"' EXIT
run "$GO" build -o "$bin" ./cmd/train
for s in "${order[@]}"; do
	for budget in 16GiB 32GiB; do
		# shellcheck disable=SC2086 # the setting's flags split on purpose
		if [[ -n $out ]]; then
			run "$bin" ${settings[$s]} -data "$DATA" -plan -budget "$budget" | tee "$out/$s-$budget.txt"
		else
			run "$bin" ${settings[$s]} -data "$DATA" -plan -budget "$budget"
		fi
	done
done
