#!/bin/bash
# The bundle of windows 2 and 3 (run from .gpuwin/ in the repository: it cds one folder up): gpu-check of HEAD (with the NVRTC 11.8 of compute70), plus the gpubench of
# BASE_BIN (the build of window 1, 842132e) as bin/gpubench-base and SPEED-BUILD-INFO, repacked
# with xz's x86 filter and a 256 MiB dictionary (the Go binaries share most of their bytes).
set -eu
cd "$(dirname "$0")/.."
BASE_BIN=${BASE_BIN:?BASE_BIN: the base build's gpubench}
BASE=${BASE:?BASE: the base commit}
rm -rf /tmp/b2 && mkdir -p /tmp/b2/out
bash scripts/gpu-check.sh build /tmp/b2/out
tar -C /tmp/b2 -xJf /tmp/b2/out/gpu-check.tar.xz
cp "$BASE_BIN" /tmp/b2/gpu-check/bin/gpubench-base
{
	echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
	echo "base: $(git rev-parse "$BASE")"
	echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ); $(go version)"
} > /tmp/b2/gpu-check/SPEED-BUILD-INFO
echo "repacked $(date -u +%Y-%m-%d) with bin/gpubench-base ($BASE) and SPEED-BUILD-INFO for the gpu-speed run (xz --x86, dict 256 MiB)" >> /tmp/b2/gpu-check/BUILD-INFO
tar -C /tmp/b2 -cf - gpu-check | xz -T1 --x86 --lzma2=preset=9e,dict=256MiB > .gpuwin/gpu-check.tar.xz.tmp
mv .gpuwin/gpu-check.tar.xz.tmp .gpuwin/gpu-check.tar.xz
ls -l .gpuwin
