#!/usr/bin/env bash
# tables.sh: aggregate finished runs (result.json, metrics.jsonl) into the paper-shaped tables:
# mean ± population std over seeds, the paper's value beside each cell, Markdown, LaTeX, plots
# (metric vs r, the r-trend per setting with runs at three or more r, seconds per epoch and
# density vs r, validation curves), results.md, tables.md
# and summary.json (cmd/tables).
#
#   scripts/tables.sh [-o OUT] [-r RUNS] [-s STATS.json …] [-R] [-k KEY=VALUE …] GRID [GRID …]  # one table's grids
#   scripts/tables.sh [-o OUT] [-r RUNS] [-R] -a                                         # every table found under RUNS
#
#   GRID  a grid name or file: zinc-reduced, zinc-gpu, table-zinc, … (configs/grids/GRID.yaml);
#         more than one for grids that fill one table (lrgb-peptides-func
#         lrgb-peptides-func-baselines): the first names the default OUT and RUNS
#   -a    every run under RUNS (default runs), into OUT (default docs/results); RUNS must exist
#         (a fresh clone has no runs/: sweep first, or give -r)
#   -o    output folder (default docs/results/GRID for a grid); "-" prints Markdown only
#   -r    runs folder (default: docs/results/GRID/runs when it exists, as for zinc-gpu, whose
#         runs are kept in the repository; otherwise the grid's own out folder, e.g.
#         runs/zinc-reduced, where scripts/sweep.sh GRID puts them)
#   -s    a cmd/stats -json file for our density column (repeatable; default: every
#         *-stats.json in OUT, else in docs/results/GRID; make one with scripts/stats.sh -j -o)
#   -R    include reduced-budget runs (tables -include-reduced), marked § in the tables: runs
#         with departures from the configured protocol (a -set, an environment variable or a
#         trainer flag on dataset.subset, train.max_epochs or train.max_time), of a grid set
#         below the built-in budget (zinc-reduced), or without config_hash. Without -R they
#         are left out and listed with the reason, as are runs stopped by a signal or a NaN
#         and unreadable result.json files
#   -k    a -set KEY=VALUE the grid was swept with (repeatable), so that tables resolves the
#         same runs as the sweep: a run swept with -set train.max_time=4m is another config
#         than the grid's, listed as "not the grid's run" unless given -k train.max_time=4m
#
# When OUT is under docs/results, the figures the docs quote from the committed runs are then
# rewritten where they changed (go run ./cmd/docfacts -w; a test fails while a doc disagrees).
#
# OUT's tables are never replaced by tables of fewer runs than OUT/summary.json records
# (cmd/tables refuses, exit status 1): in a fresh clone, whose runs/ is empty, the committed
# tables stay as they are.
#
# Examples:
#   scripts/tables.sh -R zinc-reduced                  # docs/results/zinc-reduced from runs/zinc-reduced
#   scripts/tables.sh -R -k train.max_time=4m zinc-reduced   # the same, of a sweep given -set train.max_time=4m
#   scripts/tables.sh zinc-gpu                         # docs/results/zinc-gpu from its runs/ folder
#   scripts/tables.sh -o /tmp/t zinc-gpu               # the same, elsewhere
#   scripts/tables.sh -a                               # every table under runs/ into docs/results
#   scripts/tables.sh lrgb-peptides-func lrgb-peptides-func-baselines   # table:peptides-func: the
#                                                      # rewired settings and LRGB's baselines
# Paths are relative to the repository root.
#
# Environment: GO.
source "$(dirname "$0")/lib.sh"

all=0 out= runs= stats=() reduced=0 sets=()
while getopts "ao:r:s:Rk:h" opt; do
	case $opt in
	a) all=1 ;;
	o) out=$OPTARG ;;
	r) runs=$OPTARG ;;
	s) stats+=("$OPTARG") ;;
	R) reduced=1 ;;
	k) sets+=(-set "$OPTARG") ;;
	h) usage; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))

args=()
if ((all)); then
	[[ $# -eq 0 ]] || die "-a takes no grid (got $*)"
	[[ ${#sets[@]} -eq 0 ]] || die "-k needs a grid, not -a"
	out=${out:-docs/results}
	runs=${runs:-runs}
	[[ -d $runs ]] || die "-a: no runs folder $runs (a fresh clone has none: sweep a grid first, scripts/sweep.sh GRID, or give -r RUNS)"
	args+=(-runs "$runs")
else
	[[ $# -ge 1 ]] || die "give a grid (or more, of one table), or -a (see -h)"
	name=
	for g in "$@"; do
		grid=$g
		if [[ ! -f $grid ]]; then
			grid=configs/grids/${grid%.yaml}.yaml
		fi
		[[ -f $grid ]] || die "no grid $g (looked for $grid)"
		name=${name:-$(basename "$grid" .yaml)}
		args+=(-grid "$grid")
	done
	home=docs/results/$name
	out=${out:-$home}
	if [[ -z $runs && -d $home/runs ]]; then
		runs=$home/runs
	fi
	args+=("${sets[@]}")
	[[ -z $runs ]] || args+=(-runs "$runs")
fi

if [[ ${#stats[@]} -eq 0 ]]; then
	shopt -s nullglob
	[[ $out == - ]] || stats=("$out"/*-stats.json)
	if [[ ${#stats[@]} -eq 0 && -n ${home:-} ]]; then
		stats=("$home"/*-stats.json)
	fi
	shopt -u nullglob
fi
for s in "${stats[@]}"; do
	args+=(-stats "$s")
done
[[ $out == - ]] || args+=(-out "$out")
((reduced == 0)) || args+=(-include-reduced)

run "$GO" run ./cmd/tables "${args[@]}"
# The figures the docs quote from committed runs (README's results table, the results READMEs'
# epochs and parked runs) follow the runs: rewrite those that changed (cmd/docfacts).
if [[ $out == docs/results* ]]; then
	run "$GO" run ./cmd/docfacts -w
fi
