#!/usr/bin/env python3
"""Peptide-shaped stand-ins in the exact file format of LRGB's Peptides-func and Peptides-struct,
for a smoke run of the whole path (reader, rewiring, training, average precision, the MAE of 11
targets) where the real archives are not at hand. NOT the benchmark: random molecules, labels
computed from them.

  python3 scripts/pyfixtures/peptides_synth.py OUT [GRAPHS] [SEED]

writes OUT/peptides-func/pyg/peptidesfunc/{train,val,test}.pt and the same for peptides-struct
(GRAPHS graphs in all, default 600, split 70/15/15). Each graph is a backbone chain of 20 to 80
atoms with side branches and, now and then, a ring closure; atom and bond ids are drawn inside
OGB's vocabularies. A func graph's label k is 1 when its count of atoms of element 5 + k is above
the split-independent median of such counts (learnable from the node features; some labels are
left missing, NaN); a struct graph's 11 targets are smooth functions of its size, its counts of a
few elements and its rings. Deterministic for a given SEED."""

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fakepy as fp  # noqa: E402
from peptides import ATOM, BOND, record  # noqa: E402

NAN = float("nan")


def molecule(rng):
    n = rng.randint(20, 80)
    atoms, pairs = [], []
    for i in range(n):
        element = rng.choice([5, 5, 5, 6, 7, 7, 8, 15, 10, 11, 12, 13, 14])
        atoms.append([element] + [rng.randrange(d) for d in ATOM[1:]])
        if i > 0:
            # a backbone bond, or now and then a branch from an earlier atom
            j = i - 1 if rng.random() < 0.8 else rng.randrange(max(i - 4, 0), i)
            pairs.append((j, i))
    rings = 0
    for _ in range(rng.randint(0, 3)):
        u = rng.randrange(n)
        v = u + rng.randint(4, 6)
        if v < n and (u, v) not in pairs:
            pairs.append((u, v))
            rings += 1
    src, dst, attr = [], [], []
    for u, v in pairs:
        b = [rng.randrange(d) for d in BOND]
        src += [u, v]
        dst += [v, u]
        attr += [b, b]
    return {"x": atoms, "src": src, "dst": dst, "edge_attr": attr}, rings


def counts(g):
    c = [0] * 10
    for row in g["x"]:
        k = row[0] - 5
        if 0 <= k < 10:
            c[k] += 1
    return c


def main():
    out = sys.argv[1]
    total = int(sys.argv[2]) if len(sys.argv) > 2 else 600
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    mols = [molecule(rng) for _ in range(total)]
    cs = [counts(g) for g, _ in mols]
    medians = [sorted(c[k] for c in cs)[total // 2] for k in range(10)]
    func, struct = [], []
    for (g, rings), c in zip(mols, cs):
        n = len(g["x"])
        y = [1.0 if c[k] > medians[k] else 0.0 for k in range(10)]
        if rng.random() < 0.05:
            y[rng.randrange(10)] = NAN
        func.append(y)
        struct.append([n / 50, rings / 2, c[0] / n, c[1] / n, c[2] / n, (c[0] - c[2]) / 20,
                       len(g["src"]) / 100, c[5] / 10, c[3] / 10, (n % 7) / 7, c[9] / 10])
    cut1, cut2 = total * 70 // 100, total * 85 // 100
    splits = [("train", range(0, cut1)), ("val", range(cut1, cut2)), ("test", range(cut2, total))]
    for name, folder, ys in [("peptides-func", "peptidesfunc", func), ("peptides-struct", "peptidesstruct", struct)]:
        base = os.path.join(out, name, "pyg", folder)
        os.makedirs(base, exist_ok=True)
        for split, idx in splits:
            fp.zip_save([record(mols[i][0], ys[i]) for i in idx], os.path.join(base, split + ".pt"), name=split)


if __name__ == "__main__":
    main()
