#!/usr/bin/env bash
# sweep.sh: train every (setting, seed) of a grid, the paper's tables and figures included
# (configs/grids/*.yaml), locally or as a Slurm array job, then aggregate the finished runs
# into tables (scripts/tables.sh).
#
#   scripts/sweep.sh [-n] [-w WORKERS] [-d DEVICE] [-o OUT] [-T TABLES] GRID [-- SWEEP FLAGS …]
#   scripts/sweep.sh -S SLURM_DIR [-x] [-d DEVICE] GRID [-- SWEEP FLAGS …]
#
#   GRID  a grid name or file: table-zinc, table-aqsol, table-cluster, table-pattern,
#         table-mnist, table-cifar10, fig-neighborplot, fig-random-erdos, fig-comp-time1,
#         fig-comp-time2, zinc-reduced, zinc-gpu
#   -n    dry run: list the jobs, their state and trainer command lines; run nothing
#   -w    local runs at once (default 1; CUDA runs go one per GPU id, see -gpus after --)
#   -d    device for every run: cpu, cuda, emu or auto (default: the grid's, cpu unless it says)
#   -o    runs folder (default: the grid's out folder, runs/ unless the grid says)
#   -T    folder for the tables after a local sweep (default docs/results/GRID; - prints them)
#   -S    write a Slurm array job into SLURM_DIR instead of running locally (one task per
#         unfinished job; time limit = the largest max_time + 30m); then run this again
#         without -S, or scripts/tables.sh GRID, once the jobs are done
#   -x    with -S: submit it with sbatch and print the job id
#   after --: more cmd/sweep flags, e.g. -set train.max_time=1h, -gpus 0,1, -partition gpu,
#         -account mylab, -mem 32G, -max-parallel 20
#
# Finished runs are skipped and interrupted ones resumed, so running the same command again
# continues the sweep. The full protocol is 12 hours per run at most (6 h for NeighborsMatch):
# table-zinc is 480 runs; use a GPU cluster (-d cuda -S …). After a local sweep the tables
# are written into docs/results/GRID (or -T; scripts/tables.sh, given the same -set overrides).
# Runs of a reduced budget (a -set on dataset.subset, train.max_epochs or train.max_time) are
# left out of those tables; scripts/tables.sh -R GRID includes them, marked §. Paths are relative
# to the repository root.
#
# Examples:
#   scripts/sweep.sh -n table-zinc
#   scripts/sweep.sh -w 2 fig-random-erdos
#   scripts/sweep.sh -d cuda -S slurm/zinc -x table-zinc -- -partition gpu -account mylab
#
# Environment: REWIREGNN_DATA or DATA (data folder, default ../shared/data), GO.
source "$(dirname "$0")/lib.sh"

dry=0 workers=1 device= out= slurm= submit=0 tout=
while getopts "nw:d:o:T:S:xh" opt; do
	case $opt in
	n) dry=1 ;;
	w) workers=$OPTARG ;;
	d) device=$OPTARG ;;
	o) out=$OPTARG ;;
	T) tout=$OPTARG ;;
	S) slurm=$OPTARG ;;
	x) submit=1 ;;
	h) usage; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -ge 1 ]] || die "give a grid (see -h)"
grid=$1
shift
[[ ${1:-} != -- ]] || shift
[[ -f $grid ]] || grid=configs/grids/${grid%.yaml}.yaml
[[ -f $grid ]] || die "no grid $grid"
((submit == 0)) || [[ -n $slurm ]] || die "-x needs -S"

args=(-grid "$grid")
[[ -z $device ]] || args+=(-set "device=$device")
[[ -z $out ]] || args+=(-out "$out")
args+=("$@")

if ((dry)); then
	run "$GO" run ./cmd/sweep "${args[@]}" -dry-run
	exit 0
fi
export REWIREGNN_DATA=$DATA
if [[ -n $slurm ]]; then
	sub=()
	((submit == 0)) || sub=(-submit)
	run "$GO" build -o bin/train ./cmd/train
	run "$GO" run ./cmd/sweep "${args[@]}" -train-bin "$(pwd)/bin/train" -slurm "$slurm" "${sub[@]}"
	exit 0
fi
run "$GO" build -o bin/train ./cmd/train
status=0
run "$GO" run ./cmd/sweep "${args[@]}" -train-bin bin/train -workers "$workers" || status=$?
# tables resolves the grid's runs with the same -set overrides as the sweep (tables.sh -k)
tables=()
[[ -z $device ]] || tables+=(-k "device=$device")
extra=("$@")
for ((i = 0; i < ${#extra[@]}; i++)); do
	case ${extra[i]} in
	-set | --set) tables+=(-k "${extra[i + 1]:-}") ;;
	-set=* | --set=*) tables+=(-k "${extra[i]#*=}") ;;
	esac
done
[[ -z $out ]] || tables+=(-r "$out")
[[ -z $tout ]] || tables+=(-o "$tout")
"$(dirname "$SELF")/tables.sh" "${tables[@]}" "$grid"
exit $status
