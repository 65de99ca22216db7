#!/usr/bin/env bash
# neighborsmatch.sh: the paper's over-squashing figure (fig:neighborplot) on the CPU
# (docs/results/neighborsmatch): NeighborsMatch at problem radius r_p, GatedGCN with r_p + 1
# layers and the adjacency encoding, r = 1, 2, 3, 4 without CLS and r = 1 with CLS (the settings of
# configs/grids/fig-neighborplot.yaml, for the depths and seeds asked), each run until its training
# accuracy reaches 100% or its learning rate falls below 1e-6; the best training accuracy per r_p
# beside the paper's points.
#
#   scripts/neighborsmatch.sh [-n | -c] [-d DEPTHS] [-r FIELDS] [-s SEEDS] [-w WORKERS] [-o RESULTS]
#
#   -n  dry run: list the jobs (parked runs restored first), their state and trainer command
#       lines; train nothing
#   -c  collect only: train nothing; keep the finished runs, park the interrupted ones and write
#       the table (after stopping a run with SIGTERM at the end of a session)
#   -d  problem radii, a range or list (default 2-6; the paper's figure has 1-9)
#   -r  receptive fields, a list of 1..4 and cls (r = 1 with CLS) (default 1,2,3,4,cls), e.g.
#       -d 5 -r 2 for the one run that shows whether r = 2 fails at r_p = 5
#   -s  seeds, comma-separated (default 41; the grid has 41,95,12,35)
#   -w  runs at once (default 1; each run uses every core)
#   -o  folder for the table, plot and JSON (default docs/results/neighborsmatch)
#
# Steps: restore the runs parked in RESULTS/unfinished into runs/neighborsmatch (where it lacks
# them); write the grid of those depths and seeds (runs/neighborsmatch/grid.yaml; its runs are
# the full grid's, same configs and config hashes); build bin/train; sweep it into
# runs/neighborsmatch (finished runs are skipped, interrupted ones resumed); copy the finished
# runs' config.yaml, metrics.jsonl and result.json into RESULTS/runs; park the interrupted runs
# whole (checkpoint included, a few MB each) in RESULTS/unfinished, so that committing it lets a
# session on a fresh machine resume them; from the finished runs write neighborplot.md,
# neighborplot.json and neighborplot.png (tables -figure). Time grows about fourfold per depth:
# seconds per run at r_p = 2, minutes at 3, tens of minutes at 4, hours at 5 on 2 cores.
# Paths are relative to the repository root. Environment: GO.
source "$(dirname "$0")/lib.sh"

dry=0 collect=0 depths=2-6 fields=1,2,3,4,cls seeds=41 workers=1 results=docs/results/neighborsmatch
while getopts "ncd:r:s:w:o:h" opt; do
	case $opt in
	n) dry=1 ;;
	c) collect=1 ;;
	d) depths=$OPTARG ;;
	r) fields=$OPTARG ;;
	s) seeds=$OPTARG ;;
	w) workers=$OPTARG ;;
	o) results=$OPTARG ;;
	h) usage; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -eq 0 ]] || die "unexpected arguments: $* (see -h)"

datasets=()
IFS=, read -ra parts <<<"$depths"
for p in "${parts[@]}"; do
	if [[ $p =~ ^([1-9])-([1-9])$ ]]; then
		for ((d = BASH_REMATCH[1]; d <= BASH_REMATCH[2]; d++)); do datasets+=("neighborsmatch-$d"); done
	elif [[ $p =~ ^[1-9]$ ]]; then
		datasets+=("neighborsmatch-$p")
	else
		die "-d $depths: want depths 1..9 as a range or list, like 2-6 or 2,3,5"
	fi
done
[[ $seeds =~ ^[0-9]+(,[0-9]+)*$ ]] || die "-s $seeds: want seeds like 41 or 41,95"

# The grid's r list (no CLS) and whether the r = 1 CLS setting is in.
rs=() cls=0
IFS=, read -ra parts <<<"$fields"
for f in "${parts[@]}"; do
	case $f in
	[1-4]) [[ " ${rs[*]} " == *" $f "* ]] || rs+=("$f") ;;
	cls) cls=1 ;;
	*) die "-r $fields: want receptive fields 1..4 and cls, comma-separated, like 1,2,cls" ;;
	esac
done
if ((${#rs[@]})); then
	settings="cls: [false]
r: [$(IFS=,; echo "${rs[*]}")]"
	((cls)) && settings+="
extra:
  - cls: [true]
    r: [1]"
else
	settings="cls: [true]
r: [1]"
fi

grid=runs/neighborsmatch/grid.yaml
mkdir -p runs/neighborsmatch
unpark_runs "$results/unfinished" runs/neighborsmatch
cat >"$grid" <<GRID
# written by scripts/neighborsmatch.sh: configs/grids/fig-neighborplot.yaml for depths $depths, fields $fields, seeds $seeds
table: "fig:neighborplot"
datasets: [$(IFS=,; echo "${datasets[*]}")]
models: [gatedgcn]
encodings: [adj]
seeds: [$seeds]
$settings
overrides:
  out: runs/neighborsmatch
GRID

sweep=("$GO" run ./cmd/sweep -grid "$grid")
if ((dry)); then
	run "${sweep[@]}" -dry-run
	exit 0
fi
if ((!collect)); then
	run "$GO" build -o bin/train ./cmd/train
	run "${sweep[@]}" -train-bin bin/train -workers "$workers" || echo "some runs failed or were stopped; tabulating the finished ones" >&2
fi
keep_runs runs/neighborsmatch "$results/runs"
park_runs runs/neighborsmatch "$results/unfinished"
run "$GO" run ./cmd/tables -figure fig:neighborplot -runs "$results/runs" -out "$results"
