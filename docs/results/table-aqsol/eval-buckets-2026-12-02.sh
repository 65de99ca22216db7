#!/bin/bash
# Evaluation buckets before and after (docs/results/table-aqsol/README.md §"Seconds per epoch"):
# AQSOL GatedGCN, adjacency encoding, r = 10, 4, 2, seed 41, 2 epochs, one thread, the CPU
# campaign's trainers paused (SIGSTOP) meanwhile. OLD and NEW are the two train binaries
# (here: go build of 5f72d0a and of the commit that adds the fitted buckets); runs under /tmp/bench.
cd "$(git rev-parse --show-toplevel)"
PIDS="$(pgrep -f '^\./train .*-device cpu -cache /work/main/.campaign' | tr '\n' ' ')"
trap 'kill -CONT $PIDS' EXIT
kill -STOP $PIDS
echo "paused: $PIDS at $(date -u +%T)"
for r in 10 4 2; do
  for v in old new; do
    bin=${OLD:-/tmp/train}; [ $v = new ] && bin=${NEW:-/tmp/train-new}
    out=/tmp/bench/$v-r$r
    rm -rf $out
    /usr/bin/time -f "$v r$r wall %e s" env GOMAXPROCS=1 $bin -config configs/aqsol/gatedgcn-adj-r$r.yaml -seed 41 -epochs 2 -out $out -quiet 2>&1 | tail -2
    python3 -c "
import json
for l in open('$out/aqsol-gatedgcn-adj-r$r/seed41/metrics.jsonl'):
    e=json.loads(l); print('$v r$r epoch', e['epoch'], 'train %.2f s eval %.2f s'%(e['seconds'],e['eval_seconds']), 'val', repr(e['val_metric']), 'test', repr(e['test_metric']))
r=json.load(open('$out/aqsol-gatedgcn-adj-r$r/seed41/result.json')); print('$v r$r result train_metric', repr(r['train_metric']))
"
  done
done
echo "resumed at $(date -u +%T)"
