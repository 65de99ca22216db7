"""Fixtures of pyfile's tests (pyfile/testdata): numpy arrays and scalars in pickles of
protocols 2 and 4, torch 1.x tensors in a plain pickle, and a torch.save zip file, each beside
a JSON file of the values written (expected.json). Run: python3 scripts/pyfixtures/make.py"""

import collections
import json
import os

import fakepy as fp


def numpy_objects():
    return {
        "i8": fp.Array("int64", [[0, 1, -2], [3, -4, 5]]),
        "i4_big": fp.Array("int32", [7, -8, 9], big_endian=True),
        "u1": fp.Array("uint8", [0, 255, 7]),
        "b1": fp.Array("bool", [True, False, True]),
        "f4": fp.Array("float32", [0.5, -1.25, 3.0]),
        "f8": fp.Array("float64", [[1e-300, 2.5], [-3.75, 1e300]]),
        "f2": fp.Array("float16", [1.5, -0.0009765625, 65504.0]),
        "empty": fp.Array("int64", []),
        "fortran": fp.Array("int64", [[0, 1, 2], [1, 2, 0]], fortran=True),
        "empty2x0": fp.Array("float64", [], shape=[2, 0]),
        "scalar": fp.Scalar("float64", -0.015625),
        "tuple": (fp.Array("int16", [1, 2]), 3, "text", 2.5, None, True),
    }


NUMPY_EXPECTED = {
    "i8": {"dtype": "i8", "shape": [2, 3], "values": [0, 1, -2, 3, -4, 5]},
    "i4_big": {"dtype": "i4", "shape": [3], "values": [7, -8, 9]},
    "u1": {"dtype": "u1", "shape": [3], "values": [0, 255, 7]},
    "b1": {"dtype": "b1", "shape": [3], "values": [1, 0, 1]},
    "f4": {"dtype": "f4", "shape": [3], "values": [0.5, -1.25, 3.0]},
    "f8": {"dtype": "f8", "shape": [2, 2], "values": [1e-300, 2.5, -3.75, 1e300]},
    "f2": {"dtype": "f2", "shape": [3], "values": [1.5, -0.0009765625, 65504.0]},
    "empty": {"dtype": "i8", "shape": [0], "values": []},
    "fortran": {"dtype": "i8", "shape": [2, 3], "values": [0, 1, 2, 1, 2, 0]},
    "empty2x0": {"dtype": "f8", "shape": [2, 0], "values": []},
    "scalar": {"dtype": "f8", "shape": [], "values": [-0.015625]},
}


def torch_objects():
    base = fp.Tensor("int64", list(range(12)))
    view = fp.Tensor("int64", list(range(12)), offset=1, shape=[2, 3], stride=[4, 2])
    return collections.OrderedDict([
        ("long2d", fp.Tensor("int64", [[0, 1, 2], [1, 0, 3], [2, 3, 0]])),
        ("float", fp.Tensor("float32", [0.25, -8.5])),
        ("double", fp.Tensor("float64", [[3.5]])),
        ("byte", fp.Tensor("uint8", [1, 200])),
        ("view", view),
        ("base", base),
    ])


TORCH_EXPECTED = {
    "long2d": {"dtype": "i8", "shape": [3, 3], "values": [0, 1, 2, 1, 0, 3, 2, 3, 0]},
    "float": {"dtype": "f4", "shape": [2], "values": [0.25, -8.5]},
    "double": {"dtype": "f8", "shape": [1, 1], "values": [3.5]},
    "byte": {"dtype": "u1", "shape": [2], "values": [1, 200]},
    "view": {"dtype": "i8", "shape": [2, 3], "values": [1, 3, 5, 5, 7, 9]},
    "base": {"dtype": "i8", "shape": [12], "values": list(range(12))},
}


def make(out):
    os.makedirs(out, exist_ok=True)
    fp.dump(numpy_objects(), os.path.join(out, "numpy-p2.pickle"), 2)
    fp.dump(numpy_objects(), os.path.join(out, "numpy-p4.pickle"), 4)
    fp.dump(torch_objects(), os.path.join(out, "tensors.pickle"), 4)
    fp.zip_save(torch_objects(), os.path.join(out, "tensors.pt"), name="tensors")
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"numpy": NUMPY_EXPECTED, "torch": TORCH_EXPECTED}, f, indent=1, sort_keys=True)
        f.write("\n")
