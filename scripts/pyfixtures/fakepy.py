"""Stand-ins for the numpy and torch objects that the benchmark distributions pickle.

Neither numpy nor torch is needed (or installed here): the stand-ins reduce themselves exactly as
the real objects do, so Python's own pickle module writes the byte stream the real libraries
would, and the Go readers are tested against files a Python pickler made. What each stand-in
emits, and where the real library does the same:

* numpy.ndarray.__reduce__ (numpy/core/src/multiarray/methods.c, array_reduce):
  (numpy.core.multiarray._reconstruct, (numpy.ndarray, (0,), b'b'),
   (1, shape, dtype, is_fortran, raw bytes))
* numpy.dtype.__reduce__ (descriptor.c, arraydescr_reduce):
  (numpy.dtype, ('i8', False, True), (3, '<', None, None, None, -1, -1, 0))
* numpy scalars (scalartypes.c, gentype_reduce): (numpy.core.multiarray.scalar, (dtype, raw bytes))
* a torch 1.x tensor in a plain pickle (torch/_tensor.py, _reduce_ex_internal):
  (torch._utils._rebuild_tensor_v2, (storage, offset, size, stride, requires_grad, OrderedDict()))
  and its storage (torch/storage.py, __reduce__): (torch.storage._load_from_bytes, (b,)) with b a
  legacy torch.save stream of the storage alone (torch/serialization.py, _legacy_save)
* torch.save's zip format (serialization.py, _save): records <name>/data.pkl (protocol 2, each
  storage a persistent id ('storage', torch.<T>Storage, key, 'cpu', numel)), <name>/data/<key>
  (raw little-endian bytes), <name>/version and <name>/byteorder.
"""

import collections
import io
import pickle
import struct
import sys
import types
import zipfile


def _module(name):
    m = types.ModuleType(name)
    sys.modules[name] = m
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, m)
    return m


def _global(module, name, obj):
    obj.__module__ = module.__name__
    obj.__qualname__ = name
    obj.__name__ = name
    setattr(module, name, obj)
    return obj


np = _module("numpy")
np_core = _module("numpy.core")
np_multiarray = _module("numpy.core.multiarray")
torch = _module("torch")
torch_utils = _module("torch._utils")
torch_storage = _module("torch.storage")


def _never(*args):
    raise RuntimeError("stand-in called: only pickling is supported")


_global(np_multiarray, "_reconstruct", lambda *a: _never())
_global(np_multiarray, "scalar", lambda *a: _never())
_global(torch_utils, "_rebuild_tensor_v2", lambda *a: _never())
_global(torch_storage, "_load_from_bytes", lambda *a: _never())


class ndarray:  # noqa: N801 (numpy's name)
    pass


_global(np, "ndarray", ndarray)

# struct format, numpy name, torch storage class name
KINDS = {
    "int64": ("q", "i8", "LongStorage"),
    "int32": ("i", "i4", "IntStorage"),
    "int16": ("h", "i2", "ShortStorage"),
    "int8": ("b", "i1", "CharStorage"),
    "uint8": ("B", "u1", "ByteStorage"),
    "bool": ("?", "b1", "BoolStorage"),
    "float32": ("f", "f4", "FloatStorage"),
    "float64": ("d", "f8", "DoubleStorage"),
    "float16": ("e", "f2", "HalfStorage"),
}

STORAGE_CLASSES = {}
for _kind, (_fmt, _np, _torch) in KINDS.items():
    STORAGE_CLASSES[_kind] = _global(torch, _torch, type(_torch, (), {}))


def _flatten(values):
    if isinstance(values, (list, tuple)):
        out, shape = [], [len(values)]
        inner = None
        for v in values:
            flat, s = _flatten(v)
            if inner is not None and s != inner:
                raise ValueError("ragged array")
            inner = s
            out.extend(flat)
        return out, shape + (inner or [])
    return [values], []


def raw_bytes(kind, flat, big_endian=False):
    fmt = KINDS[kind][0]
    return struct.pack((">" if big_endian else "<") + fmt * len(flat), *flat)


class dtype:  # noqa: N801
    def __init__(self, kind, big_endian=False):
        self.kind, self.big_endian = kind, big_endian

    def __reduce__(self):
        name = KINDS[self.kind][1]
        order = "|" if name[1] == "1" else (">" if self.big_endian else "<")
        return (_dtype_global, (name, False, True), (3, order, None, None, None, -1, -1, 0))


def _dtype_new(*a):
    _never()


_dtype_global = _global(np, "dtype", type("dtype", (), {"__new__": _dtype_new}))


class Array:
    """A numpy array: Array('int64', [[0, 1], [1, 0]])."""

    def __init__(self, kind, values, big_endian=False, fortran=False, shape=None):
        self.kind, self.big_endian, self.fortran = kind, big_endian, fortran
        self.flat, self.shape = _flatten(values)
        if shape is not None:  # an empty array of a given shape, e.g. (2, 0)
            self.shape = list(shape)

    def __reduce__(self):
        flat = self.flat
        if self.fortran:  # numpy writes a Fortran-ordered array's bytes column by column
            rows, cols = self.shape
            flat = [self.flat[i * cols + j] for j in range(cols) for i in range(rows)]
        state = (1, tuple(self.shape), dtype(self.kind, self.big_endian), self.fortran,
                 raw_bytes(self.kind, flat, self.big_endian))
        return (np_multiarray._reconstruct, (ndarray, (0,), b"b"), state)


class Scalar:
    """A numpy scalar such as numpy.float64(1.5)."""

    def __init__(self, kind, value):
        self.kind, self.value = kind, value

    def __reduce__(self):
        return (np_multiarray.scalar, (dtype(self.kind), raw_bytes(self.kind, [self.value])))


class Storage:
    def __init__(self, kind, flat):
        self.kind, self.flat = kind, flat

    def raw(self):
        return raw_bytes(self.kind, self.flat)

    def __reduce__(self):
        return (torch_storage._load_from_bytes, (legacy_save(self),))


class Tensor:
    """A torch tensor: Tensor('int64', [[0, 1], [1, 0]]); contiguous unless strides are given
    (then flat is the whole storage and offset/shape/stride select from it)."""

    def __init__(self, kind, values, offset=0, shape=None, stride=None):
        flat, s = _flatten(values)
        self.storage = Storage(kind, flat)
        self.offset = offset
        self.shape = list(shape if shape is not None else s)
        if stride is None:
            stride, acc = [], 1
            for d in reversed(self.shape):
                stride.insert(0, acc)
                acc *= d
        self.stride = list(stride)

    def __reduce_ex__(self, protocol):
        return (torch_utils._rebuild_tensor_v2,
                (self.storage, self.offset, tuple(self.shape), tuple(self.stride), False,
                 collections.OrderedDict()))


class _StoragePickler(pickle.Pickler):
    """Pickles storages as persistent ids, as torch.save does."""

    def __init__(self, f, protocol, legacy):
        super().__init__(f, protocol=protocol)
        self.legacy, self.storages = legacy, {}

    def persistent_id(self, obj):
        if not isinstance(obj, Storage):
            return None
        key = self.storages.setdefault(id(obj), (str(len(self.storages)), obj))[0]
        cls = STORAGE_CLASSES[obj.kind]
        if self.legacy:
            return ("storage", cls, key, "cpu", len(obj.flat), None)
        return ("storage", cls, key, "cpu", len(obj.flat))


LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


def legacy_save(obj):
    """torch.save(obj, f, _use_new_zipfile_serialization=False) for storages and tensors."""
    f = io.BytesIO()
    pickle.dump(LEGACY_MAGIC, f, protocol=2)
    pickle.dump(1001, f, protocol=2)
    pickle.dump({"protocol_version": 1001, "little_endian": True,
                 "type_sizes": {"short": 2, "int": 4, "long": 4}}, f, protocol=2)
    p = _StoragePickler(f, 2, legacy=True)
    p.dump(obj)
    keys = [k for k, _ in p.storages.values()]
    pickle.dump(keys, f, protocol=2)
    for _, st in p.storages.values():
        f.write(struct.pack("<q", len(st.flat)))
        f.write(st.raw())
    return f.getvalue()


def zip_save(obj, path, name="archive"):
    """torch.save(obj, path) in the zip format (records stored, not compressed)."""
    f = io.BytesIO()
    p = _StoragePickler(f, 2, legacy=False)
    p.dump(obj)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        _write(z, f"{name}/data.pkl", f.getvalue())
        _write(z, f"{name}/byteorder", b"little")
        for key, st in p.storages.values():
            _write(z, f"{name}/data/{key}", st.raw())
        _write(z, f"{name}/version", b"3\n")


def _write(z, name, data):
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    z.writestr(info, data)


def dump(obj, path, protocol):
    with open(path, "wb") as f:
        pickle.dump(obj, f, protocol=protocol)
