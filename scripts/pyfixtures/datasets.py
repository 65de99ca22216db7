"""Fixtures of the dataset readers' tests (data/testdata/pyg, laid out as a data folder): small
files in the exact structure of the public distributions, with the graphs they should give
(expected.json, in the reader's form: x, src, dst, edge_attr, y or label).

  zinc/pyg/molecules/{train,val,test}.pickle  benchmarking-gnns' molecules.zip: a list of dicts
      num_atom, atom_type (LongTensor N), bond_type (LongTensor N×N), logP_SA_cycle_normalized
      (FloatTensor 1), torch 1.x tensors pickled with protocol 3
  zinc/pyg/{train,val,test}.index   one line of comma-separated record numbers, CRLF-terminated
  aqsol/pyg/asqol_graph_raw/{train,val,test}.pickle   aqsol_graph_raw.zip: a protocol-4 list of
      (x int64 N, edge_attr int64 E, edge_index int64 2×E Fortran-ordered, y numpy.float64); a
      graph without bonds has edge_attr of shape (0, 1) and edge_index np.empty((2, 0)) (float64)
  mnist/pyg/MNIST_v2.pt, cifar10/pyg/CIFAR10_v2.pt   torch.save zip files of three lists
      (train, val, test) of dicts x (N×C), pos (N×2), edge_index (2×E), edge_attr (E), y (1)
"""

import json
import os
import random
import struct

import fakepy as fp


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def molecule(rng, n, atoms, bonds):
    """A random connected molecule: a tree plus one ring bond, symmetric bond matrix."""
    x = [rng.randrange(atoms) for _ in range(n)]
    adj = [[0] * n for _ in range(n)]
    for v in range(1, n):
        u = rng.randrange(v)
        adj[u][v] = adj[v][u] = rng.randrange(1, bonds)
    if n > 3:
        adj[0][n - 1] = adj[n - 1][0] = rng.randrange(1, bonds)
    return x, adj


def canonical(x, adj, y):
    src, dst, attr = [], [], []
    for i, row in enumerate(adj):
        for j, b in enumerate(row):
            if b:
                src.append(i), dst.append(j), attr.append(b)
    return {"x": x, "src": src, "dst": dst, "edge_attr": attr, "y": y}


def zinc(out, rng):
    base = os.path.join(out, "zinc", "pyg")
    os.makedirs(os.path.join(base, "molecules"), exist_ok=True)
    expected = {}
    for split, count, index in [("train", 6, [4, 0, 2]), ("val", 3, [1, 2]), ("test", 2, [0, 1])]:
        records, graphs = [], []
        for _ in range(count):
            x, adj = molecule(rng, rng.randrange(3, 8), 28, 4)
            y = f32(rng.uniform(-5, 3))
            records.append({
                "num_atom": len(x),
                "atom_type": fp.Tensor("int64", x),
                "bond_type": fp.Tensor("int64", adj),
                "logP_SA_cycle_normalized": fp.Tensor("float32", [y]),
            })
            graphs.append(canonical(x, adj, y))
        fp.dump(records, os.path.join(base, "molecules", split + ".pickle"), 3)
        with open(os.path.join(base, split + ".index"), "wb") as f:
            f.write(",".join(map(str, index)).encode() + b"\r\n")
        expected[split] = [graphs[i] for i in index]
    return expected


def aqsol(out, rng):
    base = os.path.join(out, "aqsol", "pyg", "asqol_graph_raw")
    os.makedirs(base, exist_ok=True)
    expected = {}
    for split, count in [("train", 5), ("val", 2), ("test", 2)]:
        records, graphs = [], []
        for k in range(count):
            x, adj = molecule(rng, rng.randrange(2, 7), 65, 5)
            y = rng.uniform(-10, 2)
            src, dst, attr = [], [], []
            for i, row in enumerate(adj):  # bond pairs (u, v), (v, u) as RDKit lists them
                for j in range(i + 1, len(row)):
                    if row[j]:
                        src += [i, j]
                        dst += [j, i]
                        attr += [row[j], row[j]]
            keep = True
            if split == "train" and k == 1:  # no bonds: dropped
                src, dst, attr, keep = [], [], [], False
            if split == "train" and k == 3:  # a trailing atom in no bond: dropped
                x, keep = x + [7], False
            if src:
                ei = fp.Array("int64", [src, dst], fortran=True)
                ea = fp.Array("int64", attr)
            else:
                ei = fp.Array("float64", [], shape=[2, 0])
                ea = fp.Array("int64", [], shape=[0, 1])
            records.append((fp.Array("int64", x), ea, ei, fp.Scalar("float64", y)))
            if keep:
                graphs.append({"x": x, "src": src, "dst": dst, "edge_attr": attr, "y": f32(y)})
        fp.dump(records, os.path.join(base, split + ".pickle"), 4)
        expected[split] = graphs
    return expected


def superpixels(out, rng, name, channels):
    base = os.path.join(out, name.lower(), "pyg")
    os.makedirs(base, exist_ok=True)
    expected, parts = {}, []
    for split, count in [("train", 3), ("val", 1), ("test", 2)]:
        records, graphs = [], []
        for _ in range(count):
            n = rng.randrange(3, 7)
            x = [[f32(rng.random()) for _ in range(channels)] for _ in range(n)]
            pos = [[f32(rng.random()), f32(rng.random())] for _ in range(n)]
            src, dst, w = [], [], []
            for i in range(n):
                for j in rng.sample([j for j in range(n) if j != i], min(2, n - 1)):
                    src.append(i), dst.append(j), w.append(f32(rng.random()))
            label = rng.randrange(10)
            records.append({"x": fp.Tensor("float32", x), "pos": fp.Tensor("float32", pos),
                            "edge_index": fp.Tensor("int64", [src, dst]),
                            "edge_attr": fp.Tensor("float32", w), "y": fp.Tensor("int64", [label])})
            node = [v for i in range(n) for v in x[i] + pos[i]]
            graphs.append({"node": node, "src": src, "dst": dst, "edge_attr": w, "label": label})
        parts.append(records)
        expected[split] = graphs
    fp.zip_save(parts, os.path.join(base, name + "_v2.pt"), name=name + "_v2")
    return expected


def make(out):
    rng = random.Random(19)
    expected = {"zinc": zinc(out, rng), "aqsol": aqsol(out, rng),
                "mnist": superpixels(out, rng, "MNIST", 1),
                "cifar10": superpixels(out, rng, "CIFAR10", 3)}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=None, sort_keys=True)
        f.write("\n")
