#!/bin/bash
# One GPU window: gpu-check (full) of the bundle, then gpu-speed (HEAD against the base named in
# SPEED-BUILD-INFO; SKIP: steps left out), then EXTRA: ZINC r = 1 with the batched products one
# by one (REWIREGNN_CUBLAS_BATCHED=0), and profiles (launch by launch, products labelled with
# their shapes) of ZINC r = 1 and superpixel r = 4.
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
timeout -k 5 ${GC_LIMIT:-220} bash gpu-check/gpu-check.sh run $G/gpu-check.tar.xz $W/gc > $W/gc.out 2>&1
echo "gpu-check exit $? after $((SECONDS - T0))s" >> $W/gc.out
cp $W/gc.out $OUT/gpucheck.txt
tar -czf $OUT/gpucheck-logs.tar.gz -C $W gc
S=$W/s/gpu-speed; mkdir -p $S/bin $S/data
tar -C $W/s -xJf $G/gpu-check.tar.xz gpu-check/bin/gpubench gpu-check/bin/gpubench-base gpu-check/bin/train gpu-check/data/zinc gpu-check/SPEED-BUILD-INFO
mv $W/s/gpu-check/bin/gpubench $W/s/gpu-check/bin/gpubench-base $W/s/gpu-check/bin/train $S/bin/ && mv $W/s/gpu-check/data/zinc $S/data/
cp $R/scripts/bench/torch_gatedgcn.py $R/scripts/gpu-speed.sh $S/ && cp $W/s/gpu-check/SPEED-BUILD-INFO $S/BUILD-INFO
tar -C $W/s -cf - gpu-speed | xz -0 -T0 > $W/gs.tar.xz
B=$((${TOTAL:-545} - ${EXTRA_S:-0} - (SECONDS - T0)))
echo "gpu-speed budget ${B}s (at $((SECONDS - T0))s), -skip ${SKIP:-}" > $W/gs.out
bash $S/gpu-speed.sh run $W/gs.tar.xz $W/gs -budget $B ${SKIP:+-skip $SKIP} >> $W/gs.out 2>&1
echo "gpu-speed exit $? after $((SECONDS - T0))s" >> $W/gs.out
if [ -n "${EXTRA:-}" ]; then
	X=$W/gs/extra; mkdir -p $X
	a=(-device cuda -cls false -epochs 4 -batch 128 -prebuilt -json -data $S/data)
	export REWIREGNN_KERNEL_CACHE=$W/kc
	{
		echo "== ZINC r=1, batched products one by one"
		REWIREGNN_CUBLAS_BATCHED=0 timeout 60 $S/bin/gpubench "${a[@]}" -suite zinc -r 1 -subset 0
		echo "== ZINC r=1, profile launch by launch, labelled"
		REWIREGNN_CUDA_GRAPHS=0 timeout 60 $S/bin/gpubench "${a[@]}" -suite zinc -r 1 -subset 0 -profile 20
		echo "== ZINC r=1, batched products one by one, profile launch by launch"
		REWIREGNN_CUBLAS_BATCHED=0 REWIREGNN_CUDA_GRAPHS=0 timeout 60 $S/bin/gpubench "${a[@]}" -suite zinc -r 1 -subset 0 -profile 20
		echo "== superpixel r=4, profile launch by launch, labelled"
		REWIREGNN_CUDA_GRAPHS=0 timeout 90 $S/bin/gpubench "${a[@]}" -suite superpixel -r 4 -graphs 2048 -distinct 512 -profile 8
	} > $X/extra.jsonl 2> $X/extra.log
	echo "extra done after $((SECONDS - T0))s" >> $W/gs.out
fi
cp $W/gs.out $OUT/gpuspeed.txt
tar -czf $OUT/gpuspeed-logs.tar.gz -C $W gs
if [ -n "${ZINC:-}" ]; then
	# Whole ZINC runs with the protocol (r = 1, no CLS): seed 41 alone, then the four seeds of
	# train.seeds at once (-parallel 4), each within what is left of ZINC_S seconds.
	Z=$W/zinc; mkdir -p $Z
	export REWIREGNN_DATA=$S/data REWIREGNN_KERNEL_CACHE=$W/kc
	zt0=$SECONDS
	{ echo "== train seed 41 alone, $(date -u +%H:%M:%S)"; time timeout $((ZINC_S / 3)) $S/bin/train -config $R/configs/zinc/gatedgcn-adj-r1.yaml -device cuda -seed 41 -out $Z/alone -cache $Z/cache; echo "exit $? after $((SECONDS - zt0))s"; } > $Z/alone.log 2>&1
	left=$((ZINC_S - (SECONDS - zt0)))
	{ echo "== train -parallel 4, $(date -u +%H:%M:%S), at most ${left}s"; time timeout $left $S/bin/train -config $R/configs/zinc/gatedgcn-adj-r1.yaml -device cuda -parallel 4 -out $Z/par4 -cache $Z/cache; echo "exit $? after $((SECONDS - zt0))s"; } > $Z/par4.log 2>&1
	find $Z -name '*.bin' -delete
	tar -czf $OUT/zinc-runs.tar.gz -C $W zinc
	tail -n 8 $Z/alone.log $Z/par4.log > $OUT/zinc.txt
fi
tail -25 $W/gc.out; tail -40 $W/gs.out; grep -E "profile of|sgemm|bn_|stats|col_sum" $W/gs/extra/extra.log 2>/dev/null | head -60
