"""Fixtures of the LRGB peptide readers' tests: Peptides-func and Peptides-struct in miniature,
laid out as the data folder holds them after `go run ./cmd/data get` (the archives unpack to a
folder peptidesfunc/ or peptidesstruct/ of train.pt, val.pt and test.pt), and damaged files
for the error tests.

  <out>/peptides-func/pyg/peptidesfunc/{train,val,test}.pt
  <out>/peptides-struct/pyg/peptidesstruct/{train,val,test}.pt
      torch.save zip files of a list of tuples (x, edge_attr, edge_index, y): x int64 N×9 (OGB
      atom features), edge_attr int64 E×3 (OGB bond features), edge_index int64 2×E (each bond
      both ways), y float32 1×10 (func: 0/1 labels, NaN = missing) or 1×11 (struct)
  <out>/peptides.json   the graphs they should give (y NaN written as null)
  <bad>/*.pt            one defect each, in graph 1 of a two-graph func file

The graphs are hand-written: every atom and bond column reaches its largest id somewhere, one
graph has no bonds, one has its edge_index as a strided view (numpy's transposed edge list,
as torch.from_numpy keeps it), one func graph has a missing label.
"""

import json
import os

import fakepy as fp

NAN = float("nan")

# OGB's get_atom_feature_dims() and get_bond_feature_dims()
ATOM = [119, 5, 12, 12, 10, 6, 6, 2, 2]
BOND = [5, 6, 2]


def chain(atoms, bonds, ring=False):
    """A chain of the atoms (rows of 9 ids), bond k joining atoms k and k+1 (and, with ring,
    the last bond the last atom and atom 0), each bond listed both ways as RDKit gives them."""
    n = len(atoms)
    pairs = [(k, k + 1) for k in range(n - 1)]
    if ring:
        pairs.append((n - 1, 0))
    src, dst, attr = [], [], []
    for (u, v), b in zip(pairs, bonds):
        src += [u, v]
        dst += [v, u]
        attr += [b, b]
    return {"x": atoms, "src": src, "dst": dst, "edge_attr": attr}


GRAPHS = [
    chain([[5, 0, 3, 5, 1, 0, 2, 0, 0], [118, 4, 11, 11, 9, 5, 5, 1, 1], [7, 1, 2, 6, 0, 0, 1, 1, 1]],
          [[0, 0, 0], [4, 5, 1]]),
    chain([[5, 2, 3, 5, 1, 0, 3, 1, 1], [6, 0, 2, 4, 0, 1, 2, 1, 1], [7, 3, 1, 5, 2, 0, 0, 1, 1],
           [15, 0, 4, 5, 3, 0, 4, 1, 1]], [[3, 1, 1], [3, 2, 1], [3, 3, 1], [1, 4, 0]], ring=True),
    {"x": [[16, 0, 0, 0, 0, 0, 0, 0, 0]], "src": [], "dst": [], "edge_attr": []},  # no bonds
    chain([[7, 0, 1, 5, 2, 0, 2, 0, 0], [5, 0, 2, 5, 0, 0, 1, 0, 0]], [[2, 0, 1]]),
    chain([[0, 0, 4, 5, 0, 0, 2, 0, 0], [7, 1, 3, 5, 1, 0, 2, 0, 0], [7, 0, 3, 5, 1, 0, 2, 0, 0],
           [7, 0, 1, 5, 2, 0, 2, 0, 0]], [[0, 1, 0], [1, 0, 1], [0, 0, 0]]),
    chain([[5, 0, 3, 5, 1, 0, 2, 0, 0], [5, 0, 4, 5, 0, 0, 2, 0, 0]], [[0, 0, 0]]),
]

# the split files: graph numbers, and for func the labels, for struct the targets of each
SPLITS = [("train", [0, 1, 2]), ("val", [3]), ("test", [4, 5])]

FUNC_Y = [
    [1, 0, 0, 1, 0, 0, 0, 0, 0, 1],
    [0, 1, 0, 0, 0, NAN, 0, 0, 1, 0],  # a missing label
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
    [0, 0, 1, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 1, 0, 0, 0],
]
STRUCT_Y = [[(g + 1) * 0.25 - k * 0.125 for k in range(11)] for g in range(len(GRAPHS))]


def record(g, y, strided=False):
    n, e = len(g["x"]), len(g["src"])
    x = fp.Tensor("int64", g["x"]) if n else fp.Tensor("int64", [], shape=[0, 9])
    if e == 0:
        attr = fp.Tensor("int64", [], shape=[0, 3])
        ei = fp.Tensor("int64", [], shape=[2, 0])
    else:
        attr = fp.Tensor("int64", g["edge_attr"])
        if strided:  # the E×2 edge list transposed: storage (u0, v0, u1, v1, …), strides (1, 2)
            flat = [w for pair in zip(g["src"], g["dst"]) for w in pair]
            ei = fp.Tensor("int64", flat, shape=[2, e], stride=[1, 2])
        else:
            ei = fp.Tensor("int64", [g["src"], g["dst"]])
    return (x, attr, ei, fp.Tensor("float32", [y]))


def write_dataset(out, name, folder, ys):
    base = os.path.join(out, name, "pyg", folder)
    os.makedirs(base, exist_ok=True)
    expected = {}
    for split, idx in SPLITS:
        recs = [record(GRAPHS[i], ys[i], strided=(i == 1)) for i in idx]
        fp.zip_save(recs, os.path.join(base, split + ".pt"), name=split)
        expected[split] = [dict(GRAPHS[i], y=[None if v != v else v for v in ys[i]]) for i in idx]
    return expected


def bad_files(bad):
    os.makedirs(bad, exist_ok=True)
    good = GRAPHS[0]

    def variant(**kw):
        g = {k: [list(r) if isinstance(r, list) else r for r in v] for k, v in good.items()}
        g.update(kw)
        return g

    x_wide = [row + [0] for row in good["x"]]
    x_bad_id = [list(r) for r in good["x"]]
    x_bad_id[1][3] = 12  # formal charge: 12 values
    attr_bad = [list(r) for r in good["edge_attr"]]
    attr_bad[2][1] = 6  # bond stereo: 6 values
    y = FUNC_Y[0]
    cases = {
        "x-shape": (variant(x=x_wide), y),
        "atom-id": (variant(x=x_bad_id), y),
        "bond-id": (variant(edge_attr=attr_bad), y),
        "endpoint": (variant(dst=[1, 0, 2, 3]), y),
        "y-width": (good, y[:9]),
        "label": (good, [2] + y[1:]),
    }
    for name, (g, yy) in cases.items():
        fp.zip_save([record(good, y), record(g, yy)], os.path.join(bad, name + ".pt"), name=name)
    # a record that is not a 4-tuple
    fp.zip_save([record(good, y), record(good, y)[:3]], os.path.join(bad, "not-tuple.pt"), name="not-tuple")


def make(out, bad):
    expected = {"peptides-func": write_dataset(out, "peptides-func", "peptidesfunc", FUNC_Y),
                "peptides-struct": write_dataset(out, "peptides-struct", "peptidesstruct", STRUCT_Y)}
    with open(os.path.join(out, "peptides.json"), "w") as f:
        json.dump(expected, f, indent=None, sort_keys=True, allow_nan=False)
        f.write("\n")
    bad_files(bad)
