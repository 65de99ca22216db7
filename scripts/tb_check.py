#!/usr/bin/env python3
"""Read a run's TensorBoard event files with TensorBoard's own loader and check them.

    python3 scripts/tb_check.py RUN_DIR_OR_FOLDER [--no-compare] [--quiet]

Every folder under the argument that holds event files (events.out.tfevents.*) is loaded with
tensorboard.backend.event_processing.event_file_loader, file by file in name order (the order
TensorBoard reads them). It prints, as JSON, per folder: the scalars (tag -> [[step, value], ...]),
the hparams plugin summaries decoded with TensorBoard's HParamsPluginData, and the problems found.
A folder named tb inside a run directory (one holding metrics.jsonl) is compared with that
metrics.jsonl: each epoch must appear exactly once under each tag, with the value of its line as a
float32 (tags: train/loss, train/<metric>, val/loss, val/<metric>, test/<metric>, lr,
time/epoch_seconds, time/eval_seconds, time/elapsed_seconds, memory/peak_bytes, test/loss; val and
test only where the run has those splits, the peak, the test loss and the validation figures
only where metrics.jsonl records them). The exit status is 1 when any problem is found, 2 on a usage error.

Needs TensorBoard's Python package (pip install tensorboard); the GPU machines have it.
"""
import argparse
import json
import os
import sys

import numpy as np
from google.protobuf import json_format
from tensorboard.backend.event_processing import event_file_loader
from tensorboard.plugins.hparams import plugin_data_pb2
from tensorboard.util import tensor_util

# metrics.jsonl key of each tag; <m> is the run's metric name.
TAGS = {
    "train/loss": "train_loss",
    "train/<m>": "train_metric",
    "val/loss": "val_loss",
    "val/<m>": "val_metric",
    "test/<m>": "test_metric",
    "test/loss": "test_loss",
    "lr": "lr",
    "time/epoch_seconds": "seconds",
    "time/eval_seconds": "eval_seconds",
    "time/elapsed_seconds": "elapsed_seconds",
    "memory/peak_bytes": "peak_bytes",
}

# keys a metrics.jsonl line may lack: peak_bytes and test_loss in records written before runs
# kept them, val_loss and val_metric in the records of a run without a validation split.
OPTIONAL = ("peak_bytes", "test_loss", "val_loss", "val_metric")


def event_folders(root):
    for d, _, files in sorted(os.walk(root)):
        names = sorted(f for f in files if "tfevents" in f and not f.startswith("."))
        if names:
            yield d, [os.path.join(d, f) for f in names]


def scalar_of(value):
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return float(np.float32(value.simple_value))
    if kind == "tensor" and value.metadata.plugin_data.plugin_name in ("", "scalars"):
        arr = tensor_util.make_ndarray(value.tensor)
        if arr.size == 1:
            return float(np.float32(arr.item()))
    return None


def load(files):
    scalars, hparams, problems = {}, [], []
    for path in files:
        first = True
        for event in event_file_loader.EventFileLoader(path).Load():
            if first:
                first = False
                if event.file_version != "brain.Event:2":
                    problems.append(f"{path}: first event has file_version {event.file_version!r}")
            if not event.HasField("summary"):
                continue
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name == "hparams":
                    data = plugin_data_pb2.HParamsPluginData.FromString(value.metadata.plugin_data.content)
                    hparams.append({"file": os.path.basename(path), "tag": value.tag,
                                    "data": json_format.MessageToDict(data)})
                    continue
                x = scalar_of(value)
                if x is None:
                    problems.append(f"{path}: step {event.step}: {value.tag} is not a scalar")
                    continue
                scalars.setdefault(value.tag, []).append([event.step, x])
    for tag, pts in scalars.items():
        steps = [s for s, _ in pts]
        dup = sorted({s for s in steps if steps.count(s) > 1})
        if dup:
            problems.append(f"{tag}: steps {dup} appear more than once")
    return scalars, hparams, problems


def metric_name(run_dir, scalars):
    try:
        with open(os.path.join(run_dir, "result.json")) as f:
            return json.load(f)["metric"]
    except (OSError, KeyError, ValueError):
        pass
    for tag in scalars:
        if tag.startswith("train/") and tag != "train/loss":
            return tag[len("train/"):]
    return None


def compare(run_dir, scalars):
    problems = []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        epochs = [json.loads(line) for line in f if line.strip()]
    m = metric_name(run_dir, scalars)
    if m is None:
        return ["no metric name (no result.json, no train/<metric> tag)"]
    for pattern, key in TAGS.items():
        tag = pattern.replace("<m>", m)
        if key in OPTIONAL and not any(key in ep for ep in epochs):
            continue
        if tag not in scalars:
            if not tag.startswith(("val/", "test/")):
                problems.append(f"tag {tag} is missing")
            continue
        got = dict((s, v) for s, v in scalars[tag])
        for ep in epochs:
            if key in OPTIONAL and key not in ep:
                continue  # a record written before runs kept it, or of a run without a validation split
            want = float(np.float32(ep[key]))
            if ep["epoch"] not in got:
                problems.append(f"{tag}: epoch {ep['epoch']} is missing")
            elif got[ep["epoch"]] != want:
                problems.append(f"{tag}: epoch {ep['epoch']}: {got[ep['epoch']]} != metrics.jsonl {want}")
        extra = sorted(set(got) - {ep["epoch"] for ep in epochs if key in ep})
        if extra:
            problems.append(f"{tag}: steps {extra} are not in metrics.jsonl")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--no-compare", action="store_true", help="do not compare with metrics.jsonl")
    ap.add_argument("--quiet", action="store_true", help="print only the problems")
    args = ap.parse_args()
    if not os.path.isdir(args.folder):
        print(f"tb_check: {args.folder} is not a folder", file=sys.stderr)
        return 2
    report, bad = {}, False
    for d, files in event_folders(args.folder):
        scalars, hparams, problems = load(files)
        run_dir = os.path.dirname(d)
        if (not args.no_compare and os.path.basename(d) == "tb"
                and os.path.exists(os.path.join(run_dir, "metrics.jsonl"))):
            problems += compare(run_dir, scalars)
        bad = bad or bool(problems)
        entry = {"files": [os.path.basename(f) for f in files], "problems": problems}
        if not args.quiet:
            entry["scalars"], entry["hparams"] = scalars, hparams
        report[d] = entry
    if not report:
        print(f"tb_check: no event files under {args.folder}", file=sys.stderr)
        return 1
    json.dump(report, sys.stdout, indent=1)
    print()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
