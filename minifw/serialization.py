"""`mf.save` / `mf.load`: tensors and nested containers in a file that cannot run code.

File format (version 1)
-----------------------
A file is an uncompressed zip written by `numpy.savez`. It holds:

* `__minifw__.npy`: a 1-D uint8 array, the UTF-8 bytes of a JSON manifest
  `{"format": "minifw", "version": 1, "root": NODE}`;
* `t0.npy`, `t1.npy`, ...: one plain numpy array (float64, float32 or int64) per
  distinct tensor, C-ordered, with the tensor's shape.

A NODE describes one value, recursively:

* `{"type": "tensor", "key": "t0", "dtype": "float32", "shape": [2, 3],
  "requires_grad": false, "device": "cpu"}`
* `{"type": "dict", "items": [[KEY, NODE], ...]}` (insertion order kept; a KEY is an
  int, float, str, bool or None NODE, so optimizer state dicts keep their int keys)
* `{"type": "list" | "tuple", "items": [NODE, ...]}`
* `{"type": "int" | "str" | "bool", "value": ...}`, `{"type": "none"}`,
  `{"type": "float", "value": "0.1"}` (the float's `repr`, so nan/inf and every bit
  survive).

A tensor saved twice in one object (same Python object) is stored once and loads
as one object. Reading uses `numpy.load(..., allow_pickle=False)` and a JSON
parser only: loading a file never executes code. Every node is validated, and a
truncated, corrupted or foreign file raises `SerializationError` naming the path.

Saving to a path writes a temporary file in the same directory, flushes and
fsyncs it, then renames it over the target with `os.replace`: a crash mid-save
leaves the previous file intact.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import IO, Any

import numpy as np

from minifw.nn.module import Parameter
from minifw.tensor.tensor import Tensor, tensor

FORMAT, VERSION, MANIFEST = "minifw", 1, "__minifw__"
DTYPES = ("float64", "float32", "int64")
PathOrFile = str | os.PathLike[str] | IO[bytes]


class SerializationError(RuntimeError):
    """A file that is not a readable minifw checkpoint (truncated, corrupted or foreign)."""


def _encode(value: Any, arrays: dict[str, Any], seen: dict[int, str], where: str) -> Any:
    """The manifest NODE for `value`, adding its tensors' arrays to `arrays`."""
    if isinstance(value, Parameter):
        value = value.value
    if isinstance(value, Tensor):
        key = seen.get(id(value))
        if key is None:
            key = seen[id(value)] = f"t{len(arrays)}"
            arrays[key] = np.array(value.detach().cpu().numpy(), order="C")
        return {
            "type": "tensor", "key": key, "dtype": value.dtype.name, "shape": list(value.shape),
            "requires_grad": value.requires_grad, "device": value.device,
        }  # fmt: skip
    if value is None:
        return {"type": "none"}
    if isinstance(value, bool | np.bool_):
        return {"type": "bool", "value": bool(value)}
    if isinstance(value, int | np.integer):
        return {"type": "int", "value": int(value)}
    if isinstance(value, float | np.floating):
        return {"type": "float", "value": repr(float(value))}
    if isinstance(value, str):
        return {"type": "str", "value": value}
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            if not (k is None or isinstance(k, bool | int | float | str)):
                raise TypeError(f"{where}: cannot save a dict key of type {type(k).__name__}")
            items.append(
                [_encode(k, arrays, seen, where), _encode(v, arrays, seen, f"{where}[{k!r}]")]
            )
        return {"type": "dict", "items": items}
    if isinstance(value, list | tuple):
        kind = "list" if isinstance(value, list) else "tuple"
        return {
            "type": kind,
            "items": [_encode(v, arrays, seen, f"{where}[{i}]") for i, v in enumerate(value)],
        }
    raise TypeError(
        f"{where}: cannot save an object of type {type(value).__name__} (minifw saves tensors, "
        "numbers, strings, None, bools and dicts/lists/tuples of them; use state_dict() for "
        "modules and optimizers)"
    )


def save(obj: Any, f: PathOrFile) -> None:
    """Write `obj` (tensors, numbers, strings, None and dicts/lists/tuples of them) to `f`.

    `f` is a path (written atomically: temp file, fsync, rename) or a binary file object.
    """
    arrays: dict[str, Any] = {}
    root = _encode(obj, arrays, {}, "obj")
    manifest = json.dumps({"format": FORMAT, "version": VERSION, "root": root}, allow_nan=False)
    arrays[MANIFEST] = np.frombuffer(manifest.encode("utf-8"), dtype=np.uint8)
    if not isinstance(f, str | os.PathLike):
        np.savez(f, **arrays)
        return
    path = os.fspath(f)
    directory = os.path.dirname(os.path.abspath(path))
    handle, temp = tempfile.mkstemp(prefix=".tmp-", suffix=".mfz", dir=directory)
    try:
        with os.fdopen(handle, "wb") as stream:
            np.savez(stream, **arrays)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.remove(temp)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory: str) -> None:
    """Make the rename durable (best effort: not every OS can open a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class _Decoder:
    """Turns manifest NODEs back into values, checking every field it reads."""

    def __init__(self, archive: Any, name: str, map_location: str | None) -> None:
        self.archive, self.name, self.map_location = archive, name, map_location
        self.tensors: dict[str, Tensor] = {}

    def fail(self, problem: str) -> SerializationError:
        return SerializationError(f"{self.name}: corrupted minifw checkpoint: {problem}")

    def field(self, node: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
        value = node.get(key)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.fail(f"field {key!r} of a {node.get('type')} node is {value!r}")
        return value

    def value(self, node: Any) -> Any:
        if not isinstance(node, dict) or not isinstance(node.get("type"), str):
            raise self.fail(f"expected a node, found {str(node)[:60]!r}")
        kind = node["type"]
        if kind == "tensor":
            return self.tensor(node)
        if kind == "none":
            return None
        simple = {"bool": bool, "int": int, "str": str}
        if kind in simple:
            return self.field(node, "value", simple[kind])
        if kind == "float":
            try:
                return float(self.field(node, "value", str))
            except ValueError:
                raise self.fail(f"bad float {node['value']!r}") from None
        if kind in ("list", "tuple"):
            items = [self.value(item) for item in self.field(node, "items", list)]
            return items if kind == "list" else tuple(items)
        if kind == "dict":
            out = {}
            for pair in self.field(node, "items", list):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise self.fail(f"dict item {str(pair)[:60]!r} is not a [key, value] pair")
                key = self.value(pair[0])
                if not (key is None or isinstance(key, bool | int | float | str)):
                    raise self.fail(f"dict key of type {type(key).__name__}")
                out[key] = self.value(pair[1])
            return out
        raise self.fail(f"unknown node type {kind!r}")

    def tensor(self, node: dict[str, Any]) -> Tensor:
        key = self.field(node, "key", str)
        dtype = self.field(node, "dtype", str)
        shape = self.field(node, "shape", list)
        if key == MANIFEST or key not in self.archive.files:
            raise self.fail(f"tensor array {key!r} is missing")
        if dtype not in DTYPES:
            raise self.fail(f"tensor {key} has unsupported dtype {dtype!r}")
        if key not in self.tensors:
            array = self.archive[key]
            if array.dtype != np.dtype(dtype) or list(array.shape) != shape:
                raise self.fail(
                    f"tensor {key} should be {dtype} {shape}, the file holds {array.dtype} "
                    f"{list(array.shape)}"
                )
            device = self.map_location or self.field(node, "device", str)
            grad = bool(self.field(node, "requires_grad", bool))
            self.tensors[key] = tensor(array, dtype=dtype, device=device, requires_grad=grad)
        return self.tensors[key]


def load(f: PathOrFile, map_location: str | None = None) -> Any:
    """Read what `save` wrote. Tensors go to their saved device, or to `map_location`.

    Raises:
        FileNotFoundError: `f` is a path that does not exist.
        SerializationError: the file is truncated, corrupted or not a minifw checkpoint.
    """
    name = os.fspath(f) if isinstance(f, str | os.PathLike) else getattr(f, "name", "<stream>")
    try:
        archive = np.load(f, allow_pickle=False)
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise SerializationError(f"{name}: not a minifw checkpoint (not an npz archive)")
        with archive:
            if MANIFEST not in archive.files:
                raise SerializationError(f"{name}: not a minifw checkpoint (no manifest)")
            manifest = json.loads(archive[MANIFEST].tobytes().decode("utf-8"))
            if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
                raise SerializationError(f"{name}: not a minifw checkpoint (foreign manifest)")
            if manifest.get("version") != VERSION:
                raise SerializationError(
                    f"{name}: minifw checkpoint version {manifest.get('version')!r} is not "
                    f"supported (this minifw reads version {VERSION})"
                )
            return _Decoder(archive, name, map_location).value(manifest.get("root"))
    except (SerializationError, FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as err:  # noqa: BLE001 - whatever a damaged file makes numpy raise
        raise SerializationError(
            f"{name}: not a readable minifw checkpoint (truncated, corrupted or foreign file): "
            f"{type(err).__name__}: {err}"
        ) from err


__all__ = ["SerializationError", "load", "save"]
