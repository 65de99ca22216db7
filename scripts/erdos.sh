#!/usr/bin/env bash
# erdos.sh: the paper's Erdős–Rényi retrieval figure (fig:random_erdos) on the CPU
# (docs/results/erdos): GatedGCN on 100 G(20, 0.3) graphs rewired to complete graphs, one class
# per graph, with the Laplacian, shortest-path, Adj-5 and Adj-10 encodings, 4 seeds each (the grid
# configs/grids/fig-random-erdos.yaml, 16 runs of 250 epochs), training accuracy per epoch beside
# the paper's curves.
#
#   scripts/erdos.sh [-n] [-w WORKERS] [-o RESULTS]
#
#   -n  dry run: list the jobs, their state and trainer command lines; run nothing
#   -w  runs at once (default 1; each run uses every core)
#   -o  folder for the table, plot and JSON (default docs/results/erdos)
#
# Steps: build bin/train; sweep the grid into runs/erdos (finished runs are skipped, interrupted
# ones resumed); copy the finished runs' config.yaml, metrics.jsonl and result.json into
# RESULTS/runs; from those write random-erdos.md, random-erdos.json and random-erdos.png
# (tables -figure); from the runs' checkpoints in runs/erdos, write RESULTS/recalibrated.md (the
# training split in evaluation mode with the stored and with re-estimated batch-norm statistics,
# cmd/recalibrate).
# About 15 minutes on 2 cores. Paths are relative to the repository root. Environment: GO.
source "$(dirname "$0")/lib.sh"

grid=configs/grids/fig-random-erdos.yaml
dry=0 workers=1 results=docs/results/erdos
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

sweep=("$GO" run ./cmd/sweep -grid "$grid" -out runs/erdos)
if ((dry)); then
	run "${sweep[@]}" -dry-run
	exit 0
fi
run "$GO" build -o bin/train ./cmd/train
run "${sweep[@]}" -train-bin bin/train -workers "$workers"
keep_runs runs/erdos "$results/runs"
run "$GO" run ./cmd/tables -figure fig:random_erdos -runs "$results/runs" -out "$results"
run "$GO" run ./cmd/recalibrate -runs runs/erdos -out "$results/recalibrated.md"
