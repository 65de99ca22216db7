#!/usr/bin/env python3
"""GatedGCN 100K in plain PyTorch, timed on batches exported by `gpubench -export DIR`.

The PyTorch side of the speed comparison in docs/gpu.md: the same model as the Go trainer's
GatedGCN (benchmarking-gnns semantics: node and edge embeddings, the adjacency-power encoding
through a linear layer on the edges, L layers of gated aggregation with batch norm, ReLU and
residuals on nodes and edges, mean readout, a 3-layer MLP, L1 loss or cross-entropy, Adam), fed
the very batches the Go run trained on (one folder per setting, see cmd/gpubench/export.go).
Eager mode, float32, no TF32, as the benchmark's own PyTorch code runs; each step copies its
batch to the GPU and reads the loss back, as the Go trainer does.

Usage: torch_gatedgcn.py [--epochs 2] [--compile] [--json out.jsonl] EXPORT_DIR...
Prints, per setting, seconds per epoch after one warm-up epoch and the peak GPU memory
allocated by PyTorch. --compile times the same model under torch.compile (dynamic shapes, as
every batch has its own node and edge counts; the warm-up epoch includes the compilation); a
setting whose compilation fails (no C compiler for Triton, a graph break that cannot be traced)
is reported with the error and the exit status is 1.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def load(folder):
    """Reads header.json and data.bin into a list of batches (dicts of CPU tensors)."""
    with open(os.path.join(folder, "header.json")) as f:
        h = json.load(f)
    raw = np.fromfile(os.path.join(folder, "data.bin"), dtype=np.uint8)
    batches = []
    for b in h["batches"]:
        n, e, g = b["nodes"], b["edges"], b["graphs"]
        off = b["offset"]
        out = {}
        for name, dtype, shape in [
            ("node_cat", np.int32, (n, h["node_cat_dim"])),
            ("node_float", np.float32, (n, h["node_float_dim"])),
            ("edge_cat", np.int32, (e, h["edge_cat_dim"])),
            ("edge_float", np.float32, (e, h["edge_float_dim"])),
            ("adj", np.float32, (e, h["adj_dim"])),
            ("src", np.int32, (e,)),
            ("dst", np.int32, (e,)),
            ("node_graph", np.int32, (n,)),
            ("y", np.float32, (g, h["y_dim"])),
            ("label", np.int32, (g,)),
        ]:
            count = int(np.prod(shape))
            size = count * 4
            a = raw[off:off + size].view(dtype).reshape(shape)
            off += size
            t = torch.from_numpy(a.copy())
            if dtype == np.int32:
                t = t.long()
            out[name] = t.pin_memory() if torch.cuda.is_available() else t
        out["graphs"] = g
        batches.append(out)
    return h, batches


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.A, self.B, self.C, self.D, self.E = (nn.Linear(d, d) for _ in range(5))
        self.bn_h, self.bn_e = nn.BatchNorm1d(d), nn.BatchNorm1d(d)

    def forward(self, h, e, src, dst):
        ah, bh, dh, eh, ce = self.A(h), self.B(h), self.D(h), self.E(h), self.C(e)
        e_new = ce + dh[src] + eh[dst]
        sig = torch.sigmoid(e_new)
        num = torch.zeros_like(h).index_add_(0, dst, sig * bh[src])
        den = torch.zeros_like(h).index_add_(0, dst, sig)
        h_new = ah + num / (den + 1e-6)
        h_new = F.relu(self.bn_h(h_new))
        e_new = F.relu(self.bn_e(e_new))
        return h + h_new, e + e_new


class GatedGCN(nn.Module):
    def __init__(self, h, node_vocab, edge_vocab, d=70, layers=4):
        super().__init__()
        self.node_cat = nn.ModuleList(nn.Embedding(node_vocab, d) for _ in range(h["node_cat_dim"]))
        self.node_float = nn.Linear(h["node_float_dim"], d) if h["node_float_dim"] else None
        self.edge_cat = nn.ModuleList(nn.Embedding(edge_vocab, d) for _ in range(h["edge_cat_dim"]))
        self.edge_float = nn.Linear(h["edge_float_dim"], d) if h["edge_float_dim"] else None
        self.adj = nn.Linear(h["adj_dim"], d) if h["adj_dim"] else None
        self.layers = nn.ModuleList(Layer(d) for _ in range(layers))
        out = h["classes"] if h["task"] == "classification" else h["y_dim"]
        self.mlp = nn.Sequential(nn.Linear(d, d // 2), nn.ReLU(), nn.Linear(d // 2, d // 4), nn.ReLU(), nn.Linear(d // 4, out))
        self.d = d

    def forward(self, b):
        n, e = b["node_graph"].shape[0], b["src"].shape[0]
        h = 0
        for i, emb in enumerate(self.node_cat):
            h = h + emb(b["node_cat"][:, i])
        if self.node_float is not None:
            h = h + self.node_float(b["node_float"])
        x = 0
        for i, emb in enumerate(self.edge_cat):
            x = x + emb(b["edge_cat"][:, i])
        if self.edge_float is not None:
            x = x + self.edge_float(b["edge_float"])
        if self.adj is not None:
            x = x + self.adj(b["adj"])
        for layer in self.layers:
            h, x = layer(h, x, b["src"], b["dst"])
        g = b["graphs"]
        sums = torch.zeros(g, self.d, device=h.device).index_add_(0, b["node_graph"], h)
        counts = torch.zeros(g, device=h.device).index_add_(0, b["node_graph"], torch.ones(n, device=h.device))
        return self.mlp(sums / counts.clamp(min=1).unsqueeze(1))


def bench(folder, epochs, dev, compiled=False):
    h, batches = load(folder)
    node_vocab = max(int(b["node_cat"].max()) + 1 if b["node_cat"].numel() else 1 for b in batches)
    edge_vocab = max(int(b["edge_cat"].max()) + 1 if b["edge_cat"].numel() else 1 for b in batches)
    torch.manual_seed(41)
    model = GatedGCN(h, node_vocab, edge_vocab).to(dev)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    classify = h["task"] == "classification"
    run = torch.compile(model, dynamic=True) if compiled else model

    def epoch():
        model.train()
        total = 0.0
        for b in batches:
            g = {k: (v.to(dev, non_blocking=True) if torch.is_tensor(v) else v) for k, v in b.items()}
            pred = run(g)
            loss = F.cross_entropy(pred, g["label"]) if classify else F.l1_loss(pred, g["y"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.item()  # one read back per step, as the Go trainer
        return total / len(batches)

    torch.cuda.reset_peak_memory_stats(dev)
    t0 = time.perf_counter()
    epoch()  # warm-up: allocator, cuBLAS handles, kernels
    torch.cuda.synchronize(dev)
    first = time.perf_counter() - t0
    times = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        loss = epoch()
        torch.cuda.synchronize(dev)
        times.append(time.perf_counter() - t0)
    return {
        "setting": os.path.basename(os.path.normpath(folder)),
        "suite": h["suite"], "r": h["r"], "cls": h["cls"],
        "graphs": sum(b["graphs"] for b in batches), "batches": len(batches),
        "edges_per_batch": sum(b["src"].shape[0] for b in batches) / len(batches),
        "params": params, "first_epoch_seconds": first,
        "seconds_per_epoch": sum(times) / len(times), "epochs_seconds": times,
        "peak_alloc_mib": torch.cuda.max_memory_allocated(dev) / 2**20,
        "last_loss": loss, "torch": torch.__version__, "device": torch.cuda.get_device_name(dev),
        "mode": "compile" if compiled else "eager",
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=2, help="timed epochs after the warm-up epoch")
    ap.add_argument("--json", help="append one JSON object per setting to this file")
    ap.add_argument("--compile", action="store_true", help="time the model under torch.compile instead of eagerly")
    ap.add_argument("dirs", nargs="+", help="setting folders written by gpubench -export")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_gatedgcn: no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda:0")
    print(f"{'setting':24} {'graphs':>7} {'edges/batch':>11} {'params':>7} {'1st ep s':>9} {'s/epoch':>8} {'peak MiB':>9}")
    status = 0
    for d in a.dirs:
        try:
            r = bench(d, a.epochs, dev, a.compile)
        except Exception as ex:  # one broken setting must not hide the others
            print(f"{d}: {'torch.compile: ' if a.compile else ''}{type(ex).__name__}: {ex}", file=sys.stderr)
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps({"setting": os.path.basename(os.path.normpath(d)), "mode": "compile" if a.compile else "eager",
                                        "error": f"{type(ex).__name__}: {ex}"}) + "\n")
            status = 1
            continue
        print(f"{r['setting']:24} {r['graphs']:7d} {r['edges_per_batch']:11.0f} {r['params']:7d} "
              f"{r['first_epoch_seconds']:9.2f} {r['seconds_per_epoch']:8.3f} {r['peak_alloc_mib']:9.1f}", flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(r) + "\n")
        torch.cuda.empty_cache()
    sys.exit(status)


if __name__ == "__main__":
    main()
