#!/bin/bash
# Evaluation buckets before and after (docs/results/table-aqsol/README.md, the paragraph
# "Evaluation took more per graph than training"): AQSOL GatedGCN, adjacency encoding,
# r = 10, 4, 2, seed 41, 2 epochs, one thread, the CPU campaign's trainers paused (SIGSTOP)
# meanwhile. OLD and NEW are the two train binaries (here: go build of 5f72d0a and of the commit
# that adds the fitted buckets); runs under OUT (default /tmp/bench). The campaign's folder is
# found as campaign.sh finds it (CAMPAIGN_CPU_DIR, default .campaign/cpu in the checkout).
cd "$(dirname "$0")" && cd "$(git rev-parse --show-toplevel)" || exit 1
OUT=${OUT:-/tmp/bench}
: "${OLD:?set OLD to the train binary before the change}" "${NEW:?set NEW to the train binary after it}"
CPU_DIR=${CAMPAIGN_CPU_DIR:-$PWD/.campaign/cpu}
PIDS="$(pgrep -f "^\./train .*-device cpu -cache $CPU_DIR/" | tr '\n' ' ')"
trap '[ -z "$PIDS" ] || kill -CONT $PIDS' EXIT
[ -z "$PIDS" ] || kill -STOP $PIDS
echo "paused: $PIDS at $(date -u +%T)"
for r in 10 4 2; do
  for v in old new; do
    bin=$OLD; [ $v = new ] && bin=$NEW
    out=$OUT/$v-r$r
    [ ! -e "$out" ] || { echo "$out exists: set OUT to a new folder" >&2; exit 1; }
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
