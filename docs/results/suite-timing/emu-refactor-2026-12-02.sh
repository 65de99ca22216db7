#!/usr/bin/env bash
# Emulated-GPU training before (92a0c5d) and after issue 67: one ZINC r = 1 GatedGCN run and one
# ZINC r = 4 CLS Transformer run each, then the bitcheck comparer on the two trees.
set -u
out=/tmp/i67/emu; rm -rf $out; mkdir -p $out
(cd /work/wt-base && go build -o $out/train-base ./cmd/train) || exit 1
(cd /work/main && go build -o $out/train-head ./cmd/train) || exit 1
for rev in base head; do
  dir=/work/wt-base; [ $rev = head ] && dir=/work/main
  for cfg in configs/zinc/gatedgcn-adj-r1.yaml configs/zinc/transformer-adj-cls-r4.yaml; do
    (cd $dir && env -u REWIREGNN_EMULATE_GPU $out/train-$rev -config $cfg -subset 192 -set train.batch_size=32 -seed 41 -epochs 3 -device emu -cache off -quiet -out $out/$rev) > $out/$rev-$(basename $cfg .yaml).log 2>&1
    echo "$rev $cfg rc=$?"
  done
done
cd /work/main && go run ./scripts/bitcheck/cmp -a base -b head $out/base $out/head > $out/cmp.txt 2>&1; echo "cmp rc=$?"
