#!/bin/bash
# One GPU window (2026-11-27): gpu-check (full) of 842132e, then gpu-speed (842132e against
# 68a53d3, eager PyTorch, torch.compile, profile, K = 1/4/8, tf32, large-batch evaluation).
# The gpu-speed bundle is assembled here from the gpu-check bundle's gpubench and ZINC data, the
# base gpubench (repacked into the gpu-check bundle) and the repository's scripts (both bundles
# as built exceed the carry limit).
set -u
T0=$SECONDS
W=/tmp/win; rm -rf $W; mkdir -p $W
G=$PWD/.gpuwin R=$PWD
{ date -u; nvidia-smi; nproc; free -g; } > $OUT/machine.txt 2>&1
cd $W || exit 1
tar -xJf $G/gpu-check.tar.xz gpu-check/gpu-check.sh
timeout -k 5 220 bash gpu-check/gpu-check.sh run $G/gpu-check.tar.xz $W/gc > $W/gc.out 2>&1
echo "gpu-check exit $? after $((SECONDS - T0))s" >> $W/gc.out
cp $W/gc.out $OUT/gpucheck.txt
tar -czf $OUT/gpucheck-logs.tar.gz -C $W gc
S=$W/s/gpu-speed; mkdir -p $S/bin $S/data
tar -C $W/s -xJf $G/gpu-check.tar.xz gpu-check/bin/gpubench gpu-check/bin/gpubench-base gpu-check/data/zinc gpu-check/SPEED-BUILD-INFO
mv $W/s/gpu-check/bin/gpubench $W/s/gpu-check/bin/gpubench-base $S/bin/ && mv $W/s/gpu-check/data/zinc $S/data/
cp $R/scripts/bench/torch_gatedgcn.py $R/scripts/gpu-speed.sh $S/ && cp $W/s/gpu-check/SPEED-BUILD-INFO $S/BUILD-INFO
tar -C $W/s -cf - gpu-speed | xz -0 -T0 > $W/gs.tar.xz
B=$((545 - (SECONDS - T0)))
echo "gpu-speed budget ${B}s (at $((SECONDS - T0))s)" > $W/gs.out
bash $S/gpu-speed.sh run $W/gs.tar.xz $W/gs -budget $B >> $W/gs.out 2>&1
echo "gpu-speed exit $? after $((SECONDS - T0))s" >> $W/gs.out
cp $W/gs.out $OUT/gpuspeed.txt
tar -czf $OUT/gpuspeed-logs.tar.gz -C $W gs
tail -25 $W/gc.out; tail -40 $W/gs.out
