#!/usr/bin/env bash
# zinc-gpu.sh: the full-protocol ZINC runs on a GPU (docs/results/zinc-gpu): GatedGCN,
# adjacency-power encoding, r = 1 and 4, without and with the CLS node, seeds 41, 95, 12, 35
# (configs/grids/zinc-gpu.yaml), several trainers sharing one GPU.
#
#   scripts/zinc-gpu.sh [-n] [-s SLOTS]         # on a GPU machine with Go: sweep, collect, tables
#   scripts/zinc-gpu.sh -b DIR                  # here: a bundle for a GPU machine without Go
#   scripts/zinc-gpu.sh -c RUNS                 # here: collect runs brought back, then tables
#
#   -n  dry run: list the 16 jobs and trainer command lines; run nothing
#   -s  trainers sharing GPU 0 at once (default 8; the published runs used 8)
#   -b  build train and sweep (CGO_ENABLED=0: they load the CUDA libraries at run time), and
#       copy the grid, the ZINC files and the command to run into DIR; on the GPU machine run
#       DIR/run.sh there (it resumes if stopped; run it again), then bring DIR/runs/zinc-gpu
#       back and use -c
#   -c  copy config.yaml, metrics.jsonl and result.json of every run under RUNS into
#       RESULTS/runs, then measure the densities and write the tables
#   -o  results folder (default docs/results/zinc-gpu)
#
# Paths are relative to the repository root. Each run stops when the learning rate falls below
# 1e-6 (174 to 255 epochs on an H100; 14 minutes of GPU time for all 16 with 8 at once).
#
# Environment: REWIREGNN_DATA or DATA (data folder, default ../shared/data), GO.
source "$(dirname "$0")/lib.sh"

grid=configs/grids/zinc-gpu.yaml
dry=0 slots=8 bundle= collect= results=docs/results/zinc-gpu
while getopts "ns:b:c:o:h" opt; do
	case $opt in
	n) dry=1 ;;
	s) slots=$OPTARG ;;
	b) bundle=$OPTARG ;;
	c) collect=$OPTARG ;;
	o) results=$OPTARG ;;
	h) usage; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -eq 0 ]] || die "unexpected arguments: $* (see -h)"

gpus=$(printf '0,%.0s' $(seq "$slots"))
gpus=${gpus%,}


if [[ -n $bundle ]]; then
	need_data zinc
	mkdir -p "$bundle/configs/grids" "$bundle/data"
	CGO_ENABLED=0 run "$GO" build -trimpath -ldflags=-s -o "$bundle/" ./cmd/train ./cmd/sweep
	cp "$grid" "$bundle/configs/grids/"
	cp -r "$DATA/zinc" "$bundle/data/"
	cat >"$bundle/run.sh" <<RUN
#!/usr/bin/env bash
# Run on the GPU machine, in this folder; again to resume.
set -euo pipefail
cd "\$(dirname "\$0")"
REWIREGNN_DATA=data ./sweep -grid configs/grids/zinc-gpu.yaml -out runs/zinc-gpu -workers $slots -gpus $gpus -train-bin ./train
RUN
	chmod +x "$bundle/run.sh"
	echo "bundle in $bundle: run $bundle/run.sh on the GPU machine, bring back runs/zinc-gpu, then scripts/zinc-gpu.sh -c <that folder>" >&2
	exit 0
fi
if [[ -n $collect ]]; then
	zinc_results "$collect" "$results" "$grid"
	exit 0
fi

sweep=("$GO" run ./cmd/sweep -grid "$grid" -out runs/zinc-gpu)
if ((dry)); then
	run "${sweep[@]}" -dry-run
	exit 0
fi
need_data zinc
export REWIREGNN_DATA=$DATA
run "$GO" build -o bin/train ./cmd/train
run "${sweep[@]}" -train-bin bin/train -workers "$slots" -gpus "$gpus"
zinc_results runs/zinc-gpu "$results" "$grid"
