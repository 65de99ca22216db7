#!/usr/bin/env bash
# zinc-reduced.sh: the reduced-budget CPU slice of table:zinc (docs/results/zinc-reduced):
# GatedGCN, adjacency-power encoding, without and with the CLS node, r = 1..4, seeds 41 and 95
# (the grid configs/grids/zinc-reduced.yaml), each run capped at a few minutes of wall time.
#
#   scripts/zinc-reduced.sh [-n] [-t MAX_TIME] [-w WORKERS] [-o RESULTS]
#
#   -n  dry run: list the 16 jobs, their state and trainer command lines; run nothing
#   -t  wall-clock cap per run, preprocessing included (default 4m, the budget of the published
#       folder; the grid's own cap is 10m)
#   -w  runs at once (default 2)
#   -o  folder for the tables, plots and densities (default docs/results/zinc-reduced)
#
# Steps: build bin/train; sweep the grid into runs/zinc-reduced (finished runs are skipped and
# interrupted ones resumed, so running the script again continues where it stopped); measure
# the ZINC densities for r = 1..4 over all splits (RESULTS/zinc-stats.json); write the
# paper-shaped tables and plots into RESULTS (scripts/tables.sh -R: these reduced-budget runs
# are included and marked §). About 45 minutes on 2 cores.
# Paths are relative to the repository root.
#
# Environment: REWIREGNN_DATA or DATA (data folder, default ../shared/data), GO.
source "$(dirname "$0")/lib.sh"

grid=configs/grids/zinc-reduced.yaml
dry=0 max_time=4m workers=2 results=docs/results/zinc-reduced
while getopts "nt:w:o:h" opt; do
	case $opt in
	n) dry=1 ;;
	t) max_time=$OPTARG ;;
	w) workers=$OPTARG ;;
	o) results=$OPTARG ;;
	h) usage; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -eq 0 ]] || die "unexpected arguments: $* (see -h)"

sweep=("$GO" run ./cmd/sweep -grid "$grid" -set "train.max_time=$max_time" -out runs/zinc-reduced)
if ((dry)); then
	run "${sweep[@]}" -dry-run
	exit 0
fi

need_data zinc
export REWIREGNN_DATA=$DATA
run "$GO" build -o bin/train ./cmd/train
run "${sweep[@]}" -train-bin bin/train -workers "$workers"
"$(dirname "$SELF")/stats.sh" -d zinc -s all -r 1-4 -j -o "$results/zinc-stats.json"
# a reduced budget by design (the grid's 10m and the -t cap): -R includes its runs, marked §
"$(dirname "$SELF")/tables.sh" -R -k "train.max_time=$max_time" -o "$results" zinc-reduced
