#!/usr/bin/env bash
# zinc-cpu.sh: converged cells of table:zinc trained on the CPU (docs/results/zinc-cpu): GatedGCN
# with the adjacency encoding, r = 1 without CLS and r = 4 with CLS (the paper's best ZINC cell),
# the full protocol (LR halved on a validation plateau until it falls below 1e-6, 12-hour cap),
# seeds 41 and 95 (the grid configs/grids/zinc-cpu.yaml, 4 runs).
#
#   scripts/zinc-cpu.sh [-n] [-w WORKERS] [-o RESULTS]
#
#   -n  dry run: list the jobs, their state and trainer command lines; run nothing
#   -w  runs at once (default 1; each run uses every core)
#   -o  folder for the tables, plots and densities (default docs/results/zinc-cpu)
#
# Steps: build bin/train; sweep the grid into runs/zinc-cpu (finished runs are skipped and
# interrupted ones resumed, so running the script again continues where it stopped); measure the
# ZINC densities for r = 1 and 4 over all splits (RESULTS/zinc-stats.json); copy the finished
# runs' config.yaml, metrics.jsonl and result.json into RESULTS/runs; write the paper-shaped
# table and plots into RESULTS from those (scripts/tables.sh). About 1.5 to 2 hours on 2 cores:
# r = 1 about 12 minutes a seed, r = 4 with CLS about 35.
# Paths are relative to the repository root.
#
# Environment: REWIREGNN_DATA or DATA (data folder, default ../shared/data), GO.
source "$(dirname "$0")/lib.sh"

grid=configs/grids/zinc-cpu.yaml
dry=0 workers=1 results=docs/results/zinc-cpu
while getopts "nw:o:h" opt; do
	case $opt in
	n) dry=1 ;;
	w) workers=$OPTARG ;;
	o) results=$OPTARG ;;
	h) usage; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -eq 0 ]] || die "unexpected arguments: $* (see -h)"

sweep=("$GO" run ./cmd/sweep -grid "$grid" -out runs/zinc-cpu)
if ((dry)); then
	run "${sweep[@]}" -dry-run
	exit 0
fi

need_data zinc
export REWIREGNN_DATA=$DATA
run "$GO" build -o bin/train ./cmd/train
run "${sweep[@]}" -train-bin bin/train -workers "$workers"
zinc_results runs/zinc-cpu "$results" "$grid"
