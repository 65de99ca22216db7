#!/usr/bin/env bash
# Emulated-GPU training of two revisions (here: 92a0c5d, before issue 67, and the merged refactor):
# one ZINC r = 1 GatedGCN run and one ZINC r = 4 CLS Transformer run each, 3 epochs on 192 graphs,
# then the bitcheck comparer on the two trees. Run from the repository root:
#   bash docs/results/suite-timing/emu-refactor-2026-12-02.sh [BASE [HEAD]]   (default 92a0c5d HEAD)
# OUT (default: a new temporary folder) receives the trainers, run folders, logs and cmp.txt.
set -u
base=${1:-92a0c5d} head=${2:-HEAD}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
for rev in base head; do
	src="$out/src-$rev"
	mkdir -p "$src"
	git archive "${!rev}" | tar -x -C "$src" || exit 1
	(cd "$src" && go build -o "$out/train-$rev" ./cmd/train) || exit 1
	for cfg in configs/zinc/gatedgcn-adj-r1.yaml configs/zinc/transformer-adj-cls-r4.yaml; do
		(cd "$src" && "$out/train-$rev" -config "$cfg" -subset 192 -set train.batch_size=32 -seed 41 -epochs 3 \
			-device emu -cache off -quiet -out "$out/$rev") >"$out/$rev-$(basename "$cfg" .yaml).log" 2>&1
		echo "$rev $cfg rc=$?"
	done
done
go run ./scripts/bitcheck/cmp -a base -b head "$out/base" "$out/head" >"$out/cmp.txt" 2>&1
echo "cmp rc=$? ($out/cmp.txt)"
