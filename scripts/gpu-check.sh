#!/usr/bin/env bash
# gpu-check.sh: the whole GPU verification in one command (see docs/gpu.md, "Checking a GPU
# machine"). A GPU machine has no Go toolchain, so a bundle is built here and run there.
#
#   scripts/gpu-check.sh build DIR                      # here: DIR/gpu-check.tar.xz
#   gpu-check.sh run ARCHIVE OUTDIR [-quick] [-emu]     # there (or here with -emu)
#
# build: the test binaries of ./cuda ./gpu ./train and the commands gpuinfo, gpubench, train
# (CGO_ENABLED=0, stripped), the ZINC data, any testdata folders of those packages and this
# script, packed into one archive of at most 50 MB.
#
# run: unpacks the archive into a temporary folder and runs the steps below, each under its
# own time limit, each logging to OUTDIR/NN-step.log as it goes; then prints a summary table
# (also OUTDIR/summary.txt) and packs every log into OUTDIR/logs.tar.gz. The exit status is 1
# when a step FAILs or TIMEOUTs. -quick: a smaller run (3 minutes); -emu (or GPU_CHECK_EMU=1):
# the emulated GPU (cuda.OpenEmulator: the real kernels compiled for the CPU; needs a C++
# compiler) where a step has an emulated counterpart, SKIP where it needs the hardware (this is
# how the script itself is tested without a GPU).
#
# Environment: GO (the go command, build), GPU_CHECK_XZ (xz options, default
# "--lzma2=preset=1,dict=128MiB": 12 MB in 10 s where -9 takes 70 s for 11 MB),
# GPU_CHECK_KEEP=1 (keep the unpacked folder), GPU_CHECK_EMU=1 (as -emu),
# GPU_CHECK_LIMIT_SCALE=N (a whole number: every step's limit times N; the script's own test
# sets it, so that a slow or busy machine cannot turn a working step into a TIMEOUT),
# GPU_CHECK_ONLY=STEP,… (run only these steps; the others are SKIP "not selected": how
# scripts/gpu-window.sh's test keeps its gpu-check short; NVRTC none: see bundle_nvrtc70).
set -u -o pipefail

MAX_ARCHIVE=$((50 * 1000 * 1000)) # bytes
MAX_LOG=$((3 * 1024 * 1024))       # bytes kept of one step's log (head and tail)
TEST_PKGS="cuda gpu train"
COMMANDS="gpuinfo gpubench train"

usage() {
	cat >&2 <<'EOF'
usage:
  scripts/gpu-check.sh build DIR                    build DIR/gpu-check.tar.xz (needs Go; no GPU)
  gpu-check.sh run ARCHIVE OUTDIR [-quick] [-emu]   run every check, logs and summary.txt in OUTDIR
on the GPU machine:
  tar -xJf gpu-check.tar.xz gpu-check/gpu-check.sh && gpu-check/gpu-check.sh run gpu-check.tar.xz out
EOF
	exit 2
}

die() {
	echo "gpu-check: $*" >&2
	exit 1
}

# ---------------------------------------------------------------- build (here) ----

build() {
	[ $# -eq 1 ] || usage
	local dir=$1 root datadir go=${GO:-go}
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd) || die "no repository above the script"
	[ -f "$root/go.mod" ] && grep -q '^module github.com/rewiregnn/rewiregnn$' "$root/go.mod" ||
		die "build runs from a checkout (scripts/gpu-check.sh), $root has no rewiregnn go.mod"
	command -v "$go" >/dev/null || die "no Go toolchain ($go) on PATH"
	command -v xz >/dev/null || die "no xz on PATH"
	# The data folder as the code finds it: $REWIREGNN_DATA, else ../shared/data beside the repo.
	datadir=${REWIREGNN_DATA:-$root/../shared/data}
	for f in atom_types.json train.jsonl.gz val.jsonl.gz test.jsonl.gz; do
		[ -f "$datadir/zinc/$f" ] || die "ZINC data missing: $datadir/zinc/$f (set REWIREGNN_DATA)"
	done
	local zkb
	zkb=$(du -sk "$datadir/zinc" | cut -f1)
	[ "$zkb" -le 20480 ] || die "$datadir/zinc is ${zkb} KiB, expected under 1 MB: not bundling it whole"

	mkdir -p "$dir" || die "cannot create $dir"
	dir=$(cd "$dir" && pwd)
	STAGE=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-build.XXXXXX") || die "mktemp"
	trap 'rm -rf "$STAGE"' EXIT
	local stage=$STAGE
	local b=$stage/gpu-check
	mkdir -p "$b/bin" "$b/data" || die "mkdir"

	local t0=$SECONDS p c
	cd "$root" || die "cd $root"
	# Test binaries run from their package folder (as go test runs them): PKG/PKG.test, with
	# PKG/testdata beside it when the package has one.
	for p in $TEST_PKGS; do
		mkdir -p "$b/$p"
		echo "gpu-check: go test -c ./$p"
		CGO_ENABLED=0 "$go" test -c -ldflags='-s -w' -o "$b/$p/$p.test" "./$p" || die "go test -c ./$p failed"
		if [ -d "$p/testdata" ]; then
			cp -R "$p/testdata" "$b/$p/testdata" || die "copy $p/testdata"
		fi
	done
	for c in $COMMANDS; do
		echo "gpu-check: go build ./cmd/$c"
		CGO_ENABLED=0 "$go" build -ldflags='-s -w' -o "$b/bin/$c" "./cmd/$c" || die "go build ./cmd/$c failed"
	done
	cp -R "$datadir/zinc" "$b/data/zinc" || die "copy ZINC"
	bundle_nvrtc70 "$b/nvrtc-compute70"
	cp "${BASH_SOURCE[0]}" "$b/gpu-check.sh" && chmod +x "$b/gpu-check.sh" || die "copy the script"
	{
		echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
		echo "branch: $(git -C "$root" rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)"
		echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
		echo "go: $("$go" version)"
		echo "data: zinc, by SHA-256 (the data folder's README lists the same sums):"
		(cd "$b/data/zinc" && sha256sum -- * | sed 's/^/  /')
		(cd "$b" && find . -type f ! -name BUILD-INFO | sort | while read -r f; do printf '%10d %s\n' "$(wc -c <"$f")" "${f#./}"; done)
	} >"$b/BUILD-INFO"
	echo "gpu-check: built in $((SECONDS - t0))s; packing (xz ${GPU_CHECK_XZ:---lzma2=preset=1,dict=128MiB})"

	local archive=$dir/gpu-check.tar.xz size
	# shellcheck disable=SC2086 # GPU_CHECK_XZ is a list of options
	tar -C "$stage" -cf - gpu-check | xz -T1 ${GPU_CHECK_XZ:---lzma2=preset=1,dict=128MiB} >"$archive.tmp" ||
		die "packing failed"
	mv "$archive.tmp" "$archive"
	size=$(wc -c <"$archive")
	if [ "$size" -gt "$MAX_ARCHIVE" ]; then
		echo "gpu-check: $archive is $size bytes, over the limit of $MAX_ARCHIVE; its members:" >&2
		(cd "$b" && find . -type f -exec ls -l {} + | sort -k5 -n -r) >&2
		die "archive too large (nothing was dropped; shrink the binaries or raise the limit knowingly)"
	fi
	echo "gpu-check: $archive $size bytes ($((size / 1024 / 1024)) MiB) in $((SECONDS - t0))s"
}

# bundle_nvrtc70 DIR copies an NVRTC of CUDA 11 or 12 (one that still compiles for compute_70,
# a V100's architecture; CUDA 13's does not) and its builtins into DIR, for the compute70 step:
# GPU_CHECK_NVRTC names the library, else the system's (Debian's libnvrtc11.2, which CI
# installs). Without one the bundle has none and the step SKIPs.
bundle_nvrtc70() {
	local dir=$1 lib real ver builtins
	lib=${GPU_CHECK_NVRTC:-$(ldconfig -p 2>/dev/null | awk '$1 ~ /^libnvrtc\.so\.1[12](\.|$)/ {print $NF; exit}')}
	if [ "$lib" = none ]; then
		echo "gpu-check: GPU_CHECK_NVRTC=none: no NVRTC bundled, the compute70 step will SKIP"
		return 0
	fi
	if [ -z "$lib" ] || [ ! -f "$lib" ]; then
		echo "gpu-check: no NVRTC of CUDA 11 or 12 here (GPU_CHECK_NVRTC): the compute70 step will SKIP"
		return 0
	fi
	real=$(readlink -f "$lib") || die "readlink $lib"
	# libnvrtc.so.11.8.89 → its builtins, libnvrtc-builtins.so.11.8, in the same folder.
	ver=$(basename "$real" | sed -nE 's/^libnvrtc\.so\.([0-9]+\.[0-9]+).*/\1/p')
	builtins=$(dirname "$real")/libnvrtc-builtins.so.$ver
	[ -n "$ver" ] && [ -f "$builtins" ] || die "NVRTC $lib: no builtins $builtins beside it"
	mkdir -p "$dir" || die "mkdir $dir"
	cp -L "$lib" "$dir/$(basename "$lib")" && cp -L "$builtins" "$dir/libnvrtc-builtins.so.$ver" || die "copy NVRTC $lib"
	echo "gpu-check: bundled NVRTC $ver ($lib) for the compute70 step"
}

# ---------------------------------------------------------------- run (there) ----

# Step plan: name, limit in seconds (full, quick). The limits sum to 560 s (full) and 195 s
# (quick); unpacking and the summary take a few seconds more.
STEPS="env gpuinfo ops large equiv track train memcheck racecheck bench compute70"
declare -A LIMIT_FULL=([env]=15 [gpuinfo]=40 [ops]=60 [large]=60 [equiv]=40 [track]=40 [train]=40 [memcheck]=70 [racecheck]=45 [bench]=100 [compute70]=50)
declare -A LIMIT_QUICK=([env]=8 [gpuinfo]=25 [ops]=25 [large]=15 [equiv]=15 [track]=15 [train]=15 [memcheck]=15 [racecheck]=12 [bench]=25 [compute70]=25)

# Hardware steps are SKIP under -emu (env and gpuinfo still run what needs no GPU, for the
# log); the rest run their emulated counterparts.
declare -A HARDWARE=([env]=1 [gpuinfo]=1 [large]=1 [train]=1 [memcheck]=1 [racecheck]=1 [compute70]=1)

# The sanitizers run the ops tests whose kernels they check; the run filter keeps them in
# their time limit (a sanitized launch is 10-100x slower). GPU_CHECK_SAN_RUN and
# GPU_CHECK_SAN_SKIP replace the filters.
SAN_RUN_FULL='TestGPU'
SAN_SKIP_FULL='TestGPULarge|TestGPUGoroutines'
SAN_RUN_QUICK='TestGPUGatherScatter|TestGPUSegmentSoftmax|TestGPUBatchNorm$|TestGPUAdam'
SAN_SKIP_QUICK='TestGPULarge'

sanitizer() {
	local s
	s=$(command -v compute-sanitizer 2>/dev/null) && { echo "$s"; return; }
	for s in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda-*/bin/compute-sanitizer /opt/cuda/bin/compute-sanitizer; do
		[ -x "$s" ] && { echo "$s"; return; }
	done
	return 1
}

# step_NAME runs one step; stdout and stderr go to its log. Exit status 0 = PASS; 3 = SKIP
# (with the reason as the log's last "SKIP:" line); anything else = FAIL.
step_env() {
	local sk=0
	echo "== uname -a"; uname -a
	echo "== date"; date -u
	echo "== nproc / memory"; nproc; free -g 2>/dev/null | head -2
	if command -v nvidia-smi >/dev/null; then
		echo "== nvidia-smi"; timeout 10 nvidia-smi || sk=1
		echo "== nvidia-smi --query-gpu"
		timeout 10 nvidia-smi --query-gpu=name,pci.bus_id,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,persistence_mode,mig.mode.current --format=csv
		echo "== nvidia-smi -q (excerpt)"
		timeout 10 nvidia-smi -q | grep -E 'Driver Version|CUDA Version|Product Name|Product Architecture|Persistence Mode|Compute Mode|Current +: |Pending +: ' | head -30
		echo "== nvidia-smi -q -d CLOCK,PERFORMANCE"
		timeout 10 nvidia-smi -q -d CLOCK,PERFORMANCE | grep -vE '^=+|^$' | head -60
	else
		echo "nvidia-smi: not on PATH"
		sk=1
	fi
	echo "== CUDA libraries: ldconfig -p"
	ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libnvrtc|libcublas' || echo "(none through ldconfig)"
	echo "== CUDA libraries under /usr/local/cuda*/ and /opt/cuda"
	find /usr/local/cuda*/ /opt/cuda/ -maxdepth 5 \( -name 'libcuda.so*' -o -name 'libnvrtc.so*' -o -name 'libcublas.so*' \) 2>/dev/null | sort | head -40
	# The wheel search walks big trees (Go and pip caches): it gets at most a third of the
	# step's limit, so a slow disk shortens the log instead of failing the step.
	local wl=$((LIM / 3 > 2 ? LIM / 3 : 2))
	echo "== CUDA libraries in Python wheels (nvidia/*/lib; search stops after ${wl}s)"
	timeout "$wl" find /usr /opt /root /home ${VIRTUAL_ENV:-} ${CONDA_PREFIX:-} -xdev -maxdepth 9 -path '*/nvidia/*/lib/*' \
		\( -name 'libnvrtc.so*' -o -name 'libcublas.so*' \) 2>/dev/null | sort -u | head -20
	echo "== toolkit"
	for t in nvcc compute-sanitizer ncu; do
		p=$(command -v $t 2>/dev/null || ls /usr/local/cuda/bin/$t 2>/dev/null) && echo "$t: $p" || echo "$t: not found"
	done
	[ -x /usr/local/cuda/bin/nvcc ] && /usr/local/cuda/bin/nvcc --version | tail -2
	s=$(sanitizer) && "$s" --version | head -3
	echo "== environment (CUDA, NVIDIA, REWIREGNN)"
	env | grep -iE 'cuda|nvidia|rewiregnn|^LD_LIBRARY_PATH' | sort
	if [ "$EMU" = 1 ]; then echo "SKIP: emu"; return 3; fi
	if [ $sk = 1 ]; then echo "FAIL: nvidia-smi missing or failed"; return 1; fi
}

step_gpuinfo() {
	if [ "$EMU" = 1 ]; then
		"$B/bin/gpuinfo"
		echo "(exit status $?)"
		echo "SKIP: emu (probe report only)"
		return 3
	fi
	"$B/bin/gpuinfo" -compile
}

# gotest PKG ARGS...: a test binary run from its package folder, verbose.
gotest() {
	local p=$1
	shift
	cd "$B/$p" || return 1
	"./$p.test" -test.v -test.count=1 "$@"
}

step_ops() {
	if [ "$EMU" = 1 ]; then
		# The TestGPU* op tests on the emulated GPU, against their CPU twins (-quick: four).
		local run='TestGPU'
		[ "$QUICK" = 1 ] && run='TestGPUGatherScatter|TestGPUSegmentSoftmax|TestGPUBatchNorm$|TestGPUAdam'
		REWIREGNN_TEST_DEVICE=emu REWIREGNN_REQUIRE_EMU=1 gotest cuda -test.run "$run" -test.skip 'TestGPULarge'
		return
	fi
	REWIREGNN_REQUIRE_GPU=1 gotest cuda -test.run 'TestGPU' -test.skip 'TestGPULarge'
}

step_large() {
	if [ "$EMU" = 1 ]; then echo "SKIP: emu"; return 3; fi
	REWIREGNN_REQUIRE_GPU=1 gotest cuda -test.run 'TestGPULarge'
}

step_equiv() {
	if [ "$EMU" = 1 ]; then
		gotest gpu -test.run '^TestStepMatchesCPU$|TestSyncRoundTrip|TestPipelinedSteps'
		return
	fi
	REWIREGNN_REQUIRE_GPU=1 gotest gpu -test.run 'TestGPUStepMatchesCPU'
}

step_track() {
	if [ "$EMU" = 1 ]; then
		if [ "$QUICK" = 1 ]; then
			gotest train -test.run 'TestDeviceRunTracksCPU'
		else
			gotest train -test.run 'TestDeviceRunTracksCPU|TestDeviceResumeIsExact'
		fi
		return
	fi
	REWIREGNN_REQUIRE_GPU=1 gotest train -test.run 'TestGPURunTracksCPU'
}

# train: the trainer end to end on the GPU (ZINC, r = 4 with CLS, a subset), result.json read back.
step_train() {
	if [ "$EMU" = 1 ]; then echo "SKIP: emu (train runs the GPU only)"; return 3; fi
	local sub=2000
	[ "$QUICK" = 1 ] && sub=500
	cd "$WORK" || return 1
	"$B/bin/train" -set dataset.name=zinc -set dataset.encoding=adj -set dataset.r=4 -set dataset.cls=true \
		-device cuda -seed 41 -epochs 2 -subset $sub -out "$WORK/runs" -cache "$WORK/cache" -quiet || return 1
	local res
	res=$(find "$WORK/runs" -name result.json | head -1)
	[ -n "$res" ] || { echo "FAIL: no result.json"; return 1; }
	echo "== $res"; cat "$res"; echo
	grep -q '"device": *"cpu' "$res" && { echo "FAIL: trained on the CPU"; return 1; }
	return 0
}

sanitize() {
	local tool=$1 s run skip
	if [ "$EMU" = 1 ]; then echo "SKIP: emu"; return 3; fi
	s=$(sanitizer) || { echo "SKIP: compute-sanitizer not found (PATH, /usr/local/cuda*/bin)"; return 3; }
	run=$SAN_RUN_FULL skip=$SAN_SKIP_FULL
	[ "$QUICK" = 1 ] && run=$SAN_RUN_QUICK skip=$SAN_SKIP_QUICK
	run=${GPU_CHECK_SAN_RUN:-$run} skip=${GPU_CHECK_SAN_SKIP:-$skip}
	echo "== $s --tool $tool over: -test.run '$run' -test.skip '$skip'"
	cd "$B/cuda" || return 1
	REWIREGNN_REQUIRE_GPU=1 "$s" --tool "$tool" --error-exitcode 1 --print-limit 50 \
		./cuda.test -test.v -test.count=1 -test.run "$run" -test.skip "$skip"
}
# compute70: the op tests with the kernels compiled by the bundled NVRTC of CUDA 11 or 12 as PTX
# for compute_70 (a V100's architecture) and JIT-compiled by this GPU's driver: the nearest
# check of a V100 on a newer GPU (gpuinfo -arch 70 and the cuda tests' REWIREGNN_TEST_CUDA_ARCH,
# the test switch of gpu.arch; REWIREGNN_NVRTC; a kernel cache of its own).
step_compute70() {
	if [ "$EMU" = 1 ]; then echo "SKIP: emu (the emulated GPU compiles no PTX)"; return 3; fi
	local lib
	lib=$(ls "$B"/nvrtc-compute70/libnvrtc.so.* 2>/dev/null | head -1)
	[ -n "$lib" ] || { echo "SKIP: the bundle holds no NVRTC of CUDA 11 or 12 (build it where one is: Debian's libnvrtc11.2, or GPU_CHECK_NVRTC)"; return 3; }
	export REWIREGNN_NVRTC=$lib REWIREGNN_TEST_CUDA_ARCH=70 REWIREGNN_KERNEL_CACHE=$WORK/kernel-cache-70
	"$B/bin/gpuinfo" -compile -arch 70 | tee "$WORK/compute70-gpuinfo.txt" || return 1
	grep -q 'for compute_70 by NVRTC' "$WORK/compute70-gpuinfo.txt" || { echo "FAIL: the kernels were not compiled for compute_70"; return 1; }
	local run='TestGPU'
	[ "$QUICK" = 1 ] && run='TestGPUGatherScatter|TestGPUBatchNorm$|TestGPUBatched|TestGPUFusedStats|TestGPUAdam'
	REWIREGNN_REQUIRE_GPU=1 gotest cuda -test.run "$run" -test.skip 'TestGPULarge'
}

step_memcheck() { sanitize memcheck; }
step_racecheck() { sanitize racecheck; }

# bench: one gpubench per setting, most important first, each within what is left of the
# step's limit, so a slow GPU still reports the settings it finished. Rows go to bench.jsonl.
# Superpixel epochs have 2048 graphs (CIFAR10 has 45000: scale s/epoch by 22), so that r = 4
# fits at today's ~6 s per 1000 graphs; GPU_CHECK_BENCH_GRAPHS changes it (a multiple of 512).
step_bench() {
	local deadline=$((SECONDS + LIM - 3)) dev=cuda zsub=0 graphs=${GPU_CHECK_BENCH_GRAPHS:-2048} distinct=512 epochs=2 batch=128 failed=0
	local -a sets
	if [ "$EMU" = 1 ]; then
		# gpubench's buckets come from the distinct graphs: keep -distinct a multiple of -batch.
		dev=emu zsub=16 graphs=6 distinct=3 batch=3
		sets=("zinc 1 false" "superpixel 2 false")
		[ "$QUICK" = 1 ] && epochs=1
	elif [ "$QUICK" = 1 ]; then
		zsub=2048 graphs=1024 distinct=256
		sets=("zinc 1 false" "zinc 4 true" "superpixel 1 false")
	else
		sets=("zinc 1 false" "zinc 1 true" "zinc 4 false" "zinc 4 true" "superpixel 1 false" "superpixel 2 false" "superpixel 3 false" "superpixel 4 false")
	fi
	echo "== gpubench -device $dev, $epochs epochs, batch $batch; zinc subset $zsub (0: all), superpixel -graphs $graphs -distinct $distinct"
	local st su r c left
	for st in "${sets[@]}"; do
		read -r su r c <<<"$st"
		left=$((deadline - SECONDS))
		if [ $left -le 2 ]; then
			echo "gpubench $su r=$r cls=$c: not run, out of time"
			failed=124
			continue
		fi
		echo "== gpubench $su r=$r cls=$c (at most ${left}s)"
		timeout --foreground -k 3 $left "$B/bin/gpubench" -device $dev -suite "$su" -r "$r" -cls "$c" -epochs $epochs -batch $batch \
			-subset $zsub -graphs $graphs -distinct $distinct -data "$REWIREGNN_DATA" -json >"$WORK/row.json"
		rc=$?
		cat "$WORK/row.json" | tee -a "$OUT/bench.jsonl"
		if [ $rc = 124 ] || [ $rc = 137 ]; then
			echo "gpubench $su r=$r cls=$c: timed out"
			failed=124
		elif [ $rc != 0 ]; then
			[ $failed = 0 ] && failed=1
		fi
	done
	return $failed
}

# --- the summary ----------------------------------------------------------------------

# counts LOG: "P pass, F fail, S skip" over every --- PASS/FAIL/SKIP line (subtests too).
counts() {
	local p f s
	p=$(grep -cE -- '^ *--- PASS' "$1")
	f=$(grep -cE -- '^ *--- FAIL' "$1")
	s=$(grep -cE -- '^ *--- SKIP' "$1")
	echo "$p pass, $f fail, $s skip"
}

# key STEP LOG STATUS: the step's key number.
key() {
	local name=$1 log=$2 status=$3 v
	case $name in
	env)
		v=$(grep -m1 -oE 'Driver Version: *[0-9.]+ +CUDA Version: *[0-9.]+' "$log" | tr -s ' ')
		[ -n "$v" ] || v=$(grep -m1 -E '^Linux' "$log" | cut -d' ' -f1,3)
		echo "$v"
		;;
	gpuinfo)
		v=$(grep -m1 -oE 'kernels for GPU 0: architecture [0-9]+' "$log")
		[ -n "$v" ] || v=$(grep -m1 -E 'driver:' "$log" | cut -c1-60)
		echo "$v"
		;;
	compute70)
		v=$(grep -m1 -oE '[0-9]+ kernels for compute_70 by NVRTC [0-9.]+' "$log")
		[ -n "$v" ] && grep -qE -- '^ *--- (PASS|FAIL|SKIP)' "$log" && v="$v; $(counts "$log")"
		echo "$v"
		;;
	ops | large | equiv | track)
		if grep -q 'testing: warning: no tests to run' "$log"; then
			echo "no tests in the binary"
		elif grep -qE -- '^ *--- (PASS|FAIL|SKIP)' "$log"; then
			counts "$log"
		fi
		;;
	train)
		v=$(grep -m1 -oE '"test_metric": *[0-9.eE+-]+' "$log" | grep -oE '[0-9.eE+-]+$')
		[ -n "$v" ] && printf 'test MAE %.3f, %s s/epoch\n' "$v" "$(grep -m1 -oE '"seconds_per_epoch": *[0-9.]+' "$log" | grep -oE '[0-9.]+$' | cut -c1-5)"
		;;
	memcheck | racecheck)
		v=$(grep -m1 -oE 'ERROR SUMMARY: [0-9]+ errors?' "$log")
		[ -z "$v" ] && v=$(grep -m1 -oE 'RACECHECK SUMMARY: [0-9]+ hazards?[^)]*\)' "$log")
		if [ -n "$v" ]; then echo "${v#*SUMMARY: }; $(counts "$log")"; fi
		;;
	bench)
		v=$(grep -c '"seconds_per_epoch"' "$OUT/bench.jsonl" 2>/dev/null)
		echo "${v:-0} settings measured (below)"
		;;
	esac
}

# benchrows: one line per bench.jsonl row.
benchrows() {
	[ -s "$OUT/bench.jsonl" ] || return 0
	printf '  %-11s %2s %-5s %8s %10s %9s %9s\n' suite r cls graphs "1st ep s" "s/epoch" "peak MiB"
	local line
	while read -r line; do
		j() { echo "$line" | grep -oE "\"$1\":(\"[^\"]*\"|[^,}]*)" | head -1 | cut -d: -f2- | tr -d '"'; }
		if [ -n "$(j error)" ]; then
			printf '  %-11s %2s %-5s error: %s\n' "$(j suite)" "$(j r)" "$(j cls)" "$(j error | cut -c1-60)"
			continue
		fi
		printf '  %-11s %2s %-5s %8s %10.2f %9.3f %9.1f\n' "$(j suite)" "$(j r)" "$(j cls)" "$(j graphs)" \
			"$(j first_epoch_seconds)" "$(j seconds_per_epoch)" "$(j peak_alloc_mib)"
	done <"$OUT/bench.jsonl"
}

# trim LOG: keep the first and last MAX_LOG/2 bytes of an oversized log.
trim() {
	local log=$1 n half
	n=$(wc -c <"$log")
	[ "$n" -le "$MAX_LOG" ] && return
	half=$((MAX_LOG / 2))
	{
		head -c $half "$log"
		printf '\n\n[gpu-check: %d bytes cut from the middle of this log]\n\n' $((n - 2 * half))
		tail -c $half "$log"
	} >"$log.trim" && mv "$log.trim" "$log"
}

runall() {
	local archive=$1 out=$2
	shift 2
	QUICK=0
	EMU=${GPU_CHECK_EMU:-0}
	for a in "$@"; do
		case $a in
		-quick) QUICK=1 ;;
		-emu) EMU=1 ;;
		*) usage ;;
		esac
	done
	SCALE=${GPU_CHECK_LIMIT_SCALE:-1}
	[[ $SCALE =~ ^[1-9][0-9]*$ ]] || die "GPU_CHECK_LIMIT_SCALE=$SCALE: want a whole number of at least 1"
	local only=${GPU_CHECK_ONLY:-} o
	for o in ${only//,/ }; do
		[[ " $STEPS " == *" $o "* ]] || die "GPU_CHECK_ONLY=$only: no step $o ($STEPS)"
	done
	[ -f "$archive" ] || die "no archive $archive"
	mkdir -p "$out" || die "cannot create $out"
	OUT=$(cd "$out" && pwd)
	rm -f "$OUT"/[0-9][0-9]-*.log "$OUT/summary.txt" "$OUT/bench.jsonl" "$OUT/logs.tar.gz"
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || die "mktemp"
	if [ "${GPU_CHECK_KEEP:-0}" = 1 ]; then
		echo "gpu-check: keeping $WORK"
	else
		trap 'rm -rf "$WORK"' EXIT
	fi
	tar -C "$WORK" -xf "$archive" || die "cannot unpack $archive" # xz or plain tar
	B=$WORK/gpu-check
	[ -x "$B/bin/gpuinfo" ] || die "$archive holds no gpu-check/bin/gpuinfo"
	cp "$B/BUILD-INFO" "$OUT/BUILD-INFO" 2>/dev/null
	export REWIREGNN_DATA=$B/data REWIREGNN_KERNEL_CACHE=$WORK/kernel-cache
	export B WORK OUT EMU QUICK SAN_RUN_FULL SAN_SKIP_FULL SAN_RUN_QUICK SAN_SKIP_QUICK
	export -f gotest sanitizer sanitize $(for s in $STEPS; do echo "step_$s"; done)

	local mode=full
	[ "$QUICK" = 1 ] && mode=quick
	[ "$EMU" = 1 ] && mode="$mode, emulated GPU"
	[ "$SCALE" = 1 ] || mode="$mode, limits x$SCALE"
	local head
	head="gpu-check ($mode) on $(uname -n), $(date -u +%Y-%m-%dT%H:%M:%SZ); $(head -1 "$B/BUILD-INFO" 2>/dev/null)"
	echo "$head"

	local i=0 name lim log rc status t0 secs k anyfail=0
	local -a rows
	for name in $STEPS; do
		i=$((i + 1))
		if [ "$QUICK" = 1 ]; then lim=${LIMIT_QUICK[$name]}; else lim=${LIMIT_FULL[$name]}; fi
		if [ "$EMU" = 1 ]; then # the emulated GPU is slower than a GPU (and shares this machine)
			case $name in
			ops) if [ "$QUICK" = 1 ]; then lim=90; else lim=300; fi ;;
			equiv | track) if [ "$QUICK" = 1 ]; then lim=60; else lim=180; fi ;;
			esac
		fi
		lim=$((lim * SCALE))
		log=$OUT/$(printf '%02d' $i)-$name.log
		echo "gpu-check: [$i] $name (limit ${lim}s) -> $log"
		t0=$SECONDS
		{
			echo "# gpu-check step $name, limit ${lim}s, $(date -u +%H:%M:%S)"
		} >"$log"
		if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then
			echo "SKIP: not selected (GPU_CHECK_ONLY=$only)" >>"$log"
			rc=3
		else
			LIM=$lim timeout -k 10 "$lim" bash -c "LIM=$lim step_$name" >>"$log" 2>&1 </dev/null
			rc=$?
		fi
		secs=$((SECONDS - t0))
		case $rc in
		0) status=PASS ;;
		3) status=SKIP ;;
		124 | 137) status=TIMEOUT ;;
		*) status=FAIL ;;
		esac
		# The bench step reports a setting cut short by its own timeout as 124 too.
		if [ $status = PASS ] && grep -q 'testing: warning: no tests to run' "$log"; then status=SKIP; fi
		echo "# gpu-check: exit status $rc after ${secs}s: $status" >>"$log"
		trim "$log"
		k=$(key "$name" "$log" "$status")
		# A failed step without a key: its last line of output.
		if [ -z "$k" ] && [ $status != PASS ] && [ $status != SKIP ]; then
			k=$(grep -vE '^(# |== |\s*$)' "$log" | tail -1 | cut -c1-60)
		fi
		# A skipped step's reason (its "SKIP: ..." line) follows the key.
		if [ $status = SKIP ] && grep -q '^SKIP: ' "$log"; then k="${k:+$k; }$(grep -m1 -oE '^SKIP: .*' "$log" | cut -c7-60)"; fi
		rows+=("$(printf '%-3s %-10s %-8s %5d %5d  %s' "$(printf '%02d' $i)" "$name" "$status" "$secs" "$lim" "$k")")
		echo "gpu-check: [$i] $name: $status in ${secs}s${k:+ ($k)}"
		case $status in FAIL | TIMEOUT) anyfail=1 ;; esac
	done

	{
		echo "$head"
		printf '%-3s %-10s %-8s %5s %5s  %s\n' "#" step status sec limit key
		printf '%s\n' "${rows[@]}"
		if [ -s "$OUT/bench.jsonl" ]; then
			echo "bench (gpubench; s/epoch excludes the first epoch when there are two):"
			benchrows
		fi
		if [ $anyfail = 1 ]; then echo "RESULT: FAIL"; else echo "RESULT: OK"; fi
	} >"$OUT/summary.txt"
	echo
	cat "$OUT/summary.txt"
	(cd "$OUT" && tar -czf logs.tar.gz --exclude logs.tar.gz ./*.log summary.txt BUILD-INFO $( [ -f bench.jsonl ] && echo bench.jsonl) 2>/dev/null)
	echo "gpu-check: logs in $OUT (all of them in $OUT/logs.tar.gz)"
	return $anyfail
}

case ${1:-} in
build)
	shift
	build "$@"
	;;
run)
	shift
	[ $# -ge 2 ] || usage
	runall "$@"
	exit $?
	;;
*) usage ;;
esac
