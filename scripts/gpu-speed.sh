#!/usr/bin/env bash
# gpu-speed.sh: the GPU speed comparison of docs/gpu.md §"Speed against PyTorch" in one prepared
# command: this build replaying CUDA graphs, the same build launch by launch
# (gpubench -cuda-graphs=false), the build of an earlier commit, eager PyTorch and torch.compile, all
# on the same GPU in the same run and (for PyTorch) on the very batches this build trained on.
#
#   scripts/gpu-speed.sh build DIR [BASE]          # here: DIR/gpu-speed.tar.xz (BASE default 68a53d3)
#   gpu-speed.sh run ARCHIVE OUTDIR [-quick] [-emu] [-budget SECONDS] [-skip LIST]   # there
#
# build: gpubench of this checkout and of BASE (git archive, built with the same toolchain),
# scripts/bench/torch_gatedgcn.py, the ZINC data and this script, in one archive.
#
# run: per setting (ZINC r = 1; CIFAR10-sized superpixel graphs at r = 4, 2048 a epoch; -quick:
# fewer graphs), in this order, each within what is left of the budget (default 480 s):
#   graphs  this build, steps replayed as graphs; it exports its first epoch's batches
#   eager   this build, -cuda-graphs=false (gpu.cuda_graphs false)
#   base    the BASE build
#   unroll1 this build with its kernels compiled with -DRW_UNROLL=1 (-kernel-defines, gpu.kernel_defines:
#           the column reductions' loops one row at a time, as before 2026-11-27)
#   nofold  this build without the edge folds (-edge-folds none: the edge sum's gradient,
#           the edges' batch norm's dx and the gated aggregation as launches of their own, as
#           before 2026-11-27)
#   nogate  this build without the gate's fold alone (-edge-folds scatter,bndx: the gated
#           aggregation's pass over ê as a launch of its own: what the fold saves)
#   gradw   this build with the narrow products' weight gradients on its own two-pass kernels
#           instead of cuBLAS (-narrow-gradw, gpu.narrow_gradw; off by default until measured)
#   torch   eager PyTorch on the exported batches, then torch.compile
#   profile this build on ZINC r = 1, 20 steps, with and without graphs (-profile)
#   concurrent  runs sharing the GPU: K = 1, 4, 8 trainers of ZINC r = 1 at once in one
#           process, each on its own stream (gpubench -concurrent; one warm-up epoch, one timed)
#   tf32    this build with train.precision tf32 (matrix products on the TF32 tensor cores)
#   bf16    this build with train.precision bf16 (GatedGCN's edge sums ê stored in bf16)
#   evalbig ZINC's validation split evaluated batch by batch and in large batches (-eval)
# Rows go to OUTDIR/gpubench-VARIANT.jsonl and OUTDIR/torch.jsonl, logs to OUTDIR/*.log, and
# OUTDIR/summary.md is the table (seconds per epoch after a warm-up epoch, allocator peaks) and
# the runs sharing the GPU (graphs/s of K at once against K times one's).
# -emu: the emulated GPU (tiny settings, no PyTorch): how the script is tested without a GPU.
# -skip LIST: leave out these steps (comma-separated: graphs, eager, base, unroll1, nofold, nogate, gradw, torch,
# profile-graphs, profile-eager, concurrent, tf32, bf16, evalbig), e.g. the PyTorch rows of a window
# when an earlier window measured them on the same kind of GPU.
set -u -o pipefail

die() {
	echo "gpu-speed: $*" >&2
	exit 1
}

usage() {
	sed -n '2,34p' "${BASH_SOURCE[0]}" >&2
	exit 2
}

build() {
	[ $# -ge 1 ] && [ $# -le 2 ] || usage
	local dir=$1 base=${2:-68a53d3} root go=${GO:-go} datadir
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd) || die "no repository above the script"
	grep -q '^module github.com/rewiregnn/rewiregnn$' "$root/go.mod" 2>/dev/null || die "$root is not a rewiregnn checkout"
	command -v "$go" >/dev/null || die "no Go toolchain ($go) on PATH"
	datadir=${REWIREGNN_DATA:-$root/../shared/data}
	[ -f "$datadir/zinc/train.jsonl.gz" ] || die "no ZINC data in $datadir (set REWIREGNN_DATA)"
	git -C "$root" rev-parse --verify -q "$base^{commit}" >/dev/null || die "no commit $base"
	mkdir -p "$dir" || die "cannot create $dir"
	dir=$(cd "$dir" && pwd)
	STAGE=$(mktemp -d "${TMPDIR:-/tmp}/gpu-speed-build.XXXXXX") || die "mktemp"
	trap 'rm -rf "$STAGE"' EXIT
	local stage=$STAGE b=$STAGE/gpu-speed
	mkdir -p "$b/bin" "$b/data" "$stage/base" || die "mkdir"
	echo "gpu-speed: go build ./cmd/gpubench (this checkout)"
	(cd "$root" && CGO_ENABLED=0 "$go" build -trimpath -ldflags='-s -w' -o "$b/bin/gpubench" ./cmd/gpubench) || die "build failed"
	echo "gpu-speed: go build ./cmd/gpubench at $base"
	git -C "$root" archive "$base" | tar -x -C "$stage/base" || die "git archive $base"
	(cd "$stage/base" && CGO_ENABLED=0 "$go" build -trimpath -ldflags='-s -w' -o "$b/bin/gpubench-base" ./cmd/gpubench) || die "build of $base failed"
	cp "$root/scripts/bench/torch_gatedgcn.py" "$b/" || die "copy the PyTorch script"
	cp -R "$datadir/zinc" "$b/data/zinc" || die "copy ZINC"
	cp "${BASH_SOURCE[0]}" "$b/gpu-speed.sh" && chmod +x "$b/gpu-speed.sh" || die "copy the script"
	{
		echo "commit: $(git -C "$root" rev-parse HEAD)$(git -C "$root" diff --quiet HEAD || echo ' (with uncommitted changes)')"
		echo "base: $(git -C "$root" rev-parse "$base")"
		echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ); $("$go" version)"
	} >"$b/BUILD-INFO"
	tar -C "$stage" -cf - gpu-speed | xz -T1 --lzma2=preset=1 >"$dir/gpu-speed.tar.xz.tmp" || die "packing failed"
	mv "$dir/gpu-speed.tar.xz.tmp" "$dir/gpu-speed.tar.xz"
	echo "gpu-speed: $dir/gpu-speed.tar.xz, $(wc -c <"$dir/gpu-speed.tar.xz") bytes"
}

# STEPS are the steps of run, in order, as -skip names them.
STEPS="graphs eager base unroll1 nofold nogate gradw torch profile-graphs profile-eager concurrent tf32 bf16 evalbig"

# skipped STEP: whether -skip names STEP.
skipped() { case ",$SKIP," in *",$1,"*) return 0 ;; esac; return 1; }

# bench VARIANT BINARY SUITE R [EXTRA...]: one gpubench setting within the time left; its JSON
# row is appended to OUTDIR/gpubench-VARIANT.jsonl with the variant added.
bench() {
	local variant=$1 bin=$2 suite=$3 r=$4 left
	shift 4
	if skipped "$variant"; then
		echo "gpu-speed: $variant $suite r=$r: skipped (-skip)" >>"$OUT/run.log"
		return 0
	fi
	left=$((DEADLINE - SECONDS))
	if [ $left -le 5 ]; then
		echo "gpu-speed: $variant $suite r=$r: not run, out of time" | tee -a "$OUT/run.log"
		return 1
	fi
	local -a args=(-device "$DEV" -suite "$suite" -r "$r" -cls false -epochs "$EPOCHS" -batch "$BATCH" -prebuilt -json -data "$B/data")
	if [ "$suite" = zinc ]; then
		args+=(-subset "$ZSUB")
	else
		args+=(-graphs "$GRAPHS" -distinct "$DISTINCT")
	fi
	echo "== $variant: gpubench ${args[*]} $* (at most ${left}s)" >>"$OUT/run.log"
	timeout --foreground -k 3 $left "$B/bin/$bin" "${args[@]}" "$@" 2>>"$OUT/$variant.log" |
		sed "s/^{/{\"variant\":\"$variant\",/" | tee -a "$OUT/gpubench-$variant.jsonl" >>"$OUT/run.log"
}

run() {
	[ $# -ge 2 ] || usage
	local archive=$1 out=$2 quick=0 emu=0 budget=480 step
	shift 2
	SKIP=
	while [ $# -gt 0 ]; do
		case $1 in
		-quick) quick=1 ;;
		-emu) emu=1 ;;
		-budget) budget=${2:-}; shift ;;
		-skip) SKIP=${2:-}; shift ;;
		*) usage ;;
		esac
		shift
	done
	for step in ${SKIP//,/ }; do
		case " $STEPS " in
		*" $step "*) ;;
		*) die "-skip $SKIP: no step $step ($STEPS)" ;;
		esac
	done
	[[ $budget =~ ^[0-9]+$ ]] || die "-budget $budget: want seconds"
	[ -f "$archive" ] || die "no archive $archive"
	mkdir -p "$out" || die "cannot create $out"
	OUT=$(cd "$out" && pwd)
	[ -e "$OUT/summary.md" ] && die "$OUT already holds a run (summary.md): use another folder"
	DEADLINE=$((SECONDS + budget))
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-speed.XXXXXX") || die "mktemp"
	trap 'rm -rf "$WORK"' EXIT
	local work=$WORK
	tar -C "$work" -xf "$archive" || die "cannot unpack $archive" # xz or plain tar
	B=$work/gpu-speed
	export REWIREGNN_KERNEL_CACHE=$work/kernel-cache
	cp "$B/BUILD-INFO" "$OUT/" 2>/dev/null
	DEV=cuda EPOCHS=4 ZSUB=0 GRAPHS=2048 DISTINCT=512 BATCH=128
	[ $quick = 1 ] && EPOCHS=3 ZSUB=2048 GRAPHS=1024 DISTINCT=256
	[ $emu = 1 ] && DEV=emu EPOCHS=2 ZSUB=32 GRAPHS=6 DISTINCT=3 BATCH=3
	{
		echo "gpu-speed on $(uname -n), $(date -u +%Y-%m-%dT%H:%M:%SZ), budget ${budget}s"
		cat "$B/BUILD-INFO"
		command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
	} | tee "$OUT/run.log"
	local exp=$work/export
	bench graphs gpubench zinc 1 -export "$exp"
	bench graphs gpubench superpixel 4 -export "$exp"
	bench eager gpubench zinc 1 -cuda-graphs=false
	bench eager gpubench superpixel 4 -cuda-graphs=false
	bench base gpubench-base zinc 1
	bench base gpubench-base superpixel 4
	bench unroll1 gpubench zinc 1 -kernel-defines RW_UNROLL=1
	bench unroll1 gpubench superpixel 4 -kernel-defines RW_UNROLL=1
	bench nofold gpubench zinc 1 -edge-folds none
	bench nofold gpubench superpixel 4 -edge-folds none
	bench nogate gpubench zinc 1 -edge-folds scatter,bndx
	bench nogate gpubench superpixel 4 -edge-folds scatter,bndx
	bench gradw gpubench zinc 1 -narrow-gradw
	bench gradw gpubench superpixel 4 -narrow-gradw
	if skipped torch; then
		echo "gpu-speed: torch: skipped (-skip)" >>"$OUT/run.log"
	elif [ $emu = 0 ] && python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>>"$OUT/torch.log"; then
		local mode left
		for mode in eager compile; do
			left=$((DEADLINE - SECONDS))
			[ $left -le 5 ] && { echo "gpu-speed: torch $mode: not run, out of time" | tee -a "$OUT/run.log"; continue; }
			local -a flag=()
			[ $mode = compile ] && flag=(--compile)
			echo "== torch $mode (at most ${left}s)" >>"$OUT/run.log"
			timeout --foreground -k 3 $left python3 "$B/torch_gatedgcn.py" --epochs $((EPOCHS - 1)) "${flag[@]}" --json "$OUT/torch.jsonl" "$exp"/* \
				>>"$OUT/torch.log" 2>&1 || echo "gpu-speed: torch $mode: exit $?" | tee -a "$OUT/run.log"
		done
	else
		echo "gpu-speed: torch: skipped (no PyTorch with CUDA here)" | tee -a "$OUT/run.log"
	fi
	local steps=20
	[ $emu = 1 ] && steps=1
	bench profile-graphs gpubench zinc 1 -profile $steps
	bench profile-eager gpubench zinc 1 -profile $steps -cuda-graphs=false
	# Runs sharing the GPU, last: the emulator's two trainers on a handful of graphs.
	if [ $emu = 1 ]; then
		bench concurrent gpubench zinc 1 -concurrent 1,2 -epochs 2 -subset 6
	else
		bench concurrent gpubench zinc 1 -concurrent 1,4,8 -epochs 2
	fi
	# train.precision tf32, after everything the float32 comparison needs: what TF32 products save.
	bench tf32 gpubench zinc 1 -precision tf32
	bench tf32 gpubench superpixel 4 -precision tf32
	# train.precision bf16: what storing ê in bf16 saves (time and peak memory).
	bench bf16 gpubench zinc 1 -precision bf16
	bench bf16 gpubench superpixel 4 -precision bf16
	# Evaluation of ZINC's validation split batch by batch (as the CPU) and in large batches (as
	# a GPU run evaluates since 2026-11-27): seconds and device operations of each.
	if [ $emu = 1 ]; then
		bench evalbig gpubench zinc 1 -eval 12 -eval-batch 6
	else
		bench evalbig gpubench zinc 1 -eval 1000
	fi
	summary >"$OUT/summary.md"
	cat "$OUT/summary.md"
}

# summary prints the Markdown table of every row (python3, which GPU machines have).
summary() {
	python3 - "$OUT" <<'EOF'
import glob, json, os, sys
out = sys.argv[1]
rows = {}
for f in sorted(glob.glob(os.path.join(out, "gpubench-*.jsonl"))):
    for line in open(f):
        r = json.loads(line)
        rows.setdefault((r["suite"], r["r"]), {})[r["variant"]] = r
if os.path.exists(os.path.join(out, "torch.jsonl")):
    for line in open(os.path.join(out, "torch.jsonl")):
        r = json.loads(line)
        s = r.get("setting", "")
        suite, rr = ("zinc" if s.startswith("zinc") else "superpixel"), r.get("r")
        if rr is None:  # a failed setting: its folder name (zinc-r1-…)
            try:
                rr = int(s.split("-r")[1].split("-")[0])
            except (IndexError, ValueError):
                continue
        rows.setdefault((suite, rr), {})["torch-" + r.get("mode", "eager")] = r
cols = ["graphs", "eager", "base", "unroll1", "nofold", "nogate", "gradw", "torch-eager", "torch-compile", "tf32", "bf16"]
print("| setting | " + " | ".join(f"{c} s/epoch (peak MiB)" for c in cols) + " |")
print("|---|" + "---:|" * len(cols))
for (suite, r), v in sorted(rows.items()):
    cells = []
    for c in cols:
        x = v.get(c)
        if x is None:
            cells.append("—")
        elif x.get("error"):
            cells.append("error: " + x["error"][:60])
        else:
            cells.append(f"{x['seconds_per_epoch']:.3f} ({x['peak_alloc_mib']:.0f})")
    print(f"| {suite} r = {r} | " + " | ".join(cells) + " |")
conc = []
if os.path.exists(os.path.join(out, "gpubench-concurrent.jsonl")):
    conc = [json.loads(line) for line in open(os.path.join(out, "gpubench-concurrent.jsonl"))]
if conc:
    print("\nRuns sharing the GPU: K trainers at once in one process, each on its own stream "
          "(gpubench -concurrent; one timed epoch each after a warm-up one; target: ratio ≥ 0.7 for K ≤ 8)\n")
    print("| setting | K | graphs/s | steps/s | ratio to K × one | peak MiB (all K) | device used MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for x in conc:
        setting = f"{x['suite']} r = {x['r']}"
        if x.get("error"):
            print(f"| {setting} | {x['concurrent']} | error: {x['error'][:60]} | | | | |")
            continue
        print(f"| {setting} | {x['concurrent']} | {x['graphs_per_second']:.1f} | {x['steps_per_second']:.2f} | {x['ratio']:.2f} "
              f"| {x['peak_alloc_mib']:.0f} | {x['device_used_mib']:.0f} |")
for (suite, r), v in sorted(rows.items()):
    e = (v.get("evalbig") or {}).get("eval")
    if e:
        print(f"\nevaluation {suite} r = {r}: {e['graphs']} graphs in {e['batches']} batches: {e['seconds']:.3f} s, "
              f"{e['device_ops']} device operations, {e['host_calls']} host calls; in {e['large_batches']} large batches: "
              f"{e['large_seconds']:.3f} s, {e['large_device_ops']} device operations, {e['large_host_calls']} host calls "
              f"({e['metric']} {e['value']:.5f} / {e['large_value']:.5f})")
    for p in ("profile-graphs", "profile-eager"):
        x = v.get(p)
        if x and x.get("profile"):
            q = x["profile"]
            n = q.get("Counts", {})
            print(f"\n{p} {suite} r = {r}: {q['Ops']} operations ({n.get('DeviceOps')} device operations, {n.get('HostCalls')} host calls), "
                  f"GPU busy {q['BusyMs']:.2f} ms, span {q['SpanMs']:.2f} ms, wall {q['WallMs']:.2f} ms")
EOF
}

case ${1:-} in
build) shift; build "$@" ;;
run) shift; run "$@" ;;
*) usage ;;
esac
