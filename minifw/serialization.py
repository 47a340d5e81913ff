"""`mf.save` / `mf.load`: tensors and nested containers in a file that cannot run code.

File format (version 1)
-----------------------
A file is an uncompressed zip written by `numpy.savez`. It holds:

* `__minifw__.npy`: a 1-D uint8 array, the UTF-8 bytes of a JSON manifest
  `{"format": "minifw", "version": 1, "root": NODE}`;
* `t0.npy`, `t1.npy`, ...: one plain numpy array (float64, float32, int64 or bool) per
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
as one object. Reading uses `zipfile`, numpy's `.npy` header parser and a JSON
parser only: loading a file never executes code. Every node is validated (each
node that names an array, not only the first), and a truncated, corrupted or
foreign file raises `SerializationError` naming the path. Members must be stored
uncompressed, as `save` writes them: a compressed member is refused before it is
inflated, every member's bytes (local header and data) must lie inside the file
without overlapping another's (checked here, on every Python), and a member's size
must match its header and the manifest, so a file cannot make `load` allocate more
than the file holds. A bool array must hold only the bytes 0 and 1. Each array is
read once, into the memory the loaded CPU tensor keeps (no intermediate copies).

A tensor saved on a device this machine cannot use (a GPU checkpoint on a CPU-only
machine) raises a RuntimeError naming the device and suggesting `map_location="cpu"`;
`load` reads from a path or a seekable stream only.

Saving to a path writes a temporary file `.tmp-mfsave-HOST-PID-XXXX.mfz` in the
same directory, flushes and fsyncs it, then renames it over the target with
`os.replace`: a crash mid-save leaves the previous file intact. The file gets the
permissions `open()` would give it (0o666 less the umask; an overwritten file keeps
its own). Each save to a path first removes the temporary files that killed saves
left in that directory: those of this host whose process is gone, owned by this
user and untouched for `STALE_AFTER_S` seconds (never a live process's file).
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import socket
import stat
import struct
import tempfile
import threading
import time
import zipfile
from typing import IO, Any

import numpy as np

from minifw.core.device import device_type, is_device_like
from minifw.nn.module import Parameter
from minifw.tensor.tensor import Tensor, backend_for

FORMAT, VERSION, MANIFEST = "minifw", 1, "__minifw__"
DTYPES = ("float64", "float32", "int64", "bool")
PathOrFile = str | os.PathLike[str] | IO[bytes]
STALE_AFTER_S = 10.0  # a dead save's temp file is removed once untouched this long
_TEMP = ".tmp-mfsave-"
_TEMP_NAME = re.compile(r"\.tmp-mfsave-(?P<host>[A-Za-z0-9._]+)-(?P<pid>[0-9]{1,10})-\w+\.mfz")
_CHUNK = 1 << 20  # bytes read from a member at a time
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # a zip member's local file header (30 bytes)
_umask_lock = threading.Lock()


class SerializationError(RuntimeError):
    """A file that is not a readable minifw checkpoint (truncated, corrupted or foreign)."""


class _DeviceError(RuntimeError):
    """A readable checkpoint whose tensors cannot go to the device asked for."""


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
            "requires_grad": value.requires_grad, "device": value.backend.device,
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
    _remove_stale_temps(directory)
    handle, temp = tempfile.mkstemp(prefix=_temp_prefix(), suffix=".mfz", dir=directory)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(handle, _file_mode(path))
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


def _file_mode(path: str) -> int:
    """The permission bits `open(path, "wb")` would leave: the file's own, else the umask's."""
    try:
        status = os.stat(path)
    except OSError:
        return 0o666 & ~_umask()
    return stat.S_IMODE(status.st_mode) & 0o777 if stat.S_ISREG(status.st_mode) else 0o644


def _umask() -> int:
    """The process umask (read from /proc where it can be, without changing it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:  # elsewhere: set and restore (a file made meanwhile gets 0o077: safe)
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def _host() -> str:
    """This machine's name as it may appear in a temp file name (no '-')."""
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname())[:64] or "host"


def _temp_prefix() -> str:
    """The start of this process's temp file names: who writes them, so others can tell."""
    return f"{_TEMP}{_host()}-{os.getpid()}-"


def _remove_stale_temps(directory: str) -> None:
    """Remove the temp files that killed saves left in `directory` (see the module doc)."""
    if os.name != "posix":  # os.kill(pid, 0) would terminate the process on Windows
        return
    host, now = _host(), time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        found = _TEMP_NAME.fullmatch(entry.name) if entry.name.startswith(_TEMP) else None
        if found is None or found["host"] != host or _alive(int(found["pid"])):
            continue
        try:
            status = entry.stat(follow_symlinks=False)
            if (
                stat.S_ISREG(status.st_mode)
                and status.st_uid == os.getuid()
                and now - status.st_mtime >= STALE_AFTER_S
            ):
                os.remove(entry.path)
        except OSError:  # removed meanwhile, or not ours to remove
            continue


def _alive(pid: int) -> bool:
    """Whether process `pid` may still run on this host (True when unsure)."""
    if pid <= 0 or pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's process (EPERM), or an odd pid
        return True
    return True


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


class _Archive:
    """The members of a checkpoint's zip, each read once into a new array, after checks.

    A member must be stored uncompressed, lie inside the file, hold a C-ordered `.npy`
    array of the expected dtype and shape, and have exactly the size its header declares:
    what is allocated is bounded by the file's own size.
    """

    def __init__(self, archive: zipfile.ZipFile, size: int, fail: Any) -> None:
        self.archive, self.size, self.fail = archive, size, fail
        self.names = set(archive.namelist())
        self._check_ranges()

    def _check_ranges(self) -> None:
        """Refuse members whose bytes (local header and data) overlap or pass the file's end.

        Overlapping members would let a small file load the same bytes many times; this is
        checked here, whatever `zipfile` of this Python checks.
        """
        stream = self.archive.fp
        if stream is None:
            raise self.fail("the zip archive is closed")
        spans = []
        for info in self.archive.infolist():
            if not 0 <= info.header_offset < self.size:
                raise self.fail(f"member {info.filename!r} starts outside the file")
            stream.seek(info.header_offset)
            header = stream.read(_LOCAL_HEADER.size)
            if len(header) != _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
                raise self.fail(f"member {info.filename!r} has no local header where it claims")
            *_, name_length, extra_length = _LOCAL_HEADER.unpack(header)
            start = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
            spans.append((info.header_offset, start + info.compress_size, info.filename))
        spans.sort()
        for (_, end, name), (start, _, following) in zip(spans, spans[1:], strict=False):
            if start < end:
                raise self.fail(
                    f"members {name!r} and {following!r} overlap (bytes {start}..{end - 1}); "
                    "each member must have bytes of its own"
                )
        for _, end, name in spans:
            if end > self.size:
                raise self.fail(
                    f"member {name!r} ends at byte {end}, past the file's end ({self.size})"
                )

    def has(self, key: str) -> bool:
        return f"{key}.npy" in self.names

    def read(self, key: str, dtype: str, shape: list[int] | None) -> np.ndarray:
        """Member `key` as an array of `dtype` and `shape` (None: any 1-D shape)."""
        info = self.archive.getinfo(f"{key}.npy")
        if info.compress_type != zipfile.ZIP_STORED:
            raise self.fail(
                f"array {key} is compressed (zip method {info.compress_type}); minifw "
                "checkpoints store arrays uncompressed"
            )
        if info.header_offset + info.compress_size > self.size:
            raise self.fail(f"array {key} claims {info.file_size} bytes past the file's end")
        with self.archive.open(info) as member:
            found_shape, found = self._header(key, member)
            fits = found_shape == tuple(shape) if shape is not None else len(found_shape) == 1
            if found != np.dtype(dtype) or not fits:
                raise self.fail(
                    f"tensor {key} should be {dtype} {'1-D' if shape is None else shape}, the "
                    f"file holds {found} {list(found_shape)}"
                )
            count = math.prod(found_shape)
            if info.file_size - member.tell() != count * found.itemsize:
                raise self.fail(
                    f"array {key} holds {info.file_size - member.tell()} data bytes; its "
                    f"shape {list(found_shape)} of {found} needs {count * found.itemsize}"
                )
            array = np.empty(count, dtype=found)
            _read_into(member, array.data.cast("B"), self.fail, key)
        if found == np.bool_:
            stray = np.flatnonzero(array.view(np.uint8) > 1)
            if stray.size:
                raise self.fail(
                    f"bool tensor {key} holds byte {int(array.view(np.uint8)[stray[0]])} at cell "
                    f"{int(stray[0])} ({stray.size} cells hold bytes other than 0 and 1)"
                )
        return array.reshape(found_shape)

    def _header(self, key: str, member: IO[bytes]) -> tuple[tuple[int, ...], np.dtype[Any]]:
        """The shape and dtype a member's `.npy` header declares (C order only)."""
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
        else:
            raise self.fail(f"array {key} has unsupported .npy version {version}")
        if fortran:
            raise self.fail(f"array {key} is stored in Fortran order; minifw writes C order")
        return tuple(shape), dtype


def _read_into(member: IO[bytes], target: memoryview, fail: Any, key: str) -> None:
    """Fill `target` from `member` in chunks; the member must end exactly there."""
    done = 0
    while done < len(target):
        chunk = member.read(min(_CHUNK, len(target) - done))
        if not chunk:
            raise fail(f"array {key} is truncated")
        target[done : done + len(chunk)] = chunk
        done += len(chunk)
    if member.read(1):
        raise fail(f"array {key} has data past its declared size")


class _Decoder:
    """Turns manifest NODEs back into values, checking every field it reads."""

    def __init__(self, archive: _Archive, name: str, map_location: str | None) -> None:
        self.archive, self.name, self.map_location = archive, name, map_location
        self.tensors: dict[str, tuple[Tensor, tuple[Any, ...]]] = {}

    def fail(self, problem: str) -> SerializationError:
        return _corrupted(self.name, problem)

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
        """The tensor a node names; every node naming an array must describe it alike."""
        key = self.field(node, "key", str)
        dtype = self.field(node, "dtype", str)
        shape = self.field(node, "shape", list)
        if key == MANIFEST or not self.archive.has(key):
            raise self.fail(f"tensor array {key!r} is missing")
        if dtype not in DTYPES:
            raise self.fail(f"tensor {key} has unsupported dtype {dtype!r}")
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
            raise self.fail(f"tensor {key} has a bad shape {str(shape)[:60]}")
        device = self.map_location or self.field(node, "device", str)
        grad = bool(self.field(node, "requires_grad", bool))
        described = (dtype, shape, grad, device)
        if key in self.tensors:
            loaded, first = self.tensors[key]
            if described[:2] != first[:2]:
                raise self.fail(
                    f"tensor {key} should be {dtype} {shape}, the file holds {first[0]} {first[1]}"
                )
            if described != first:
                raise self.fail(f"tensor {key} is described twice with different options")
            return loaded
        backend = self.backend(key, device)
        array = self.archive.read(key, dtype, shape)
        made = Tensor(backend.from_numpy(array, share=True), backend)  # no copy on the CPU
        self.tensors[key] = (made.requires_grad_(True) if grad else made), described
        return self.tensors[key][0]

    def backend(self, key: str, device: str) -> Any:
        """The backend of `device`, or an error saying where the tensor was saved."""
        try:
            return backend_for(device, None)
        except RuntimeError as err:
            if self.map_location is not None:
                raise _DeviceError(f"{self.name}: map_location={device!r}: {err}") from None
            raise _DeviceError(
                f"{self.name}: tensor {key} was saved on device {device!r}, which this machine "
                f'cannot use ({err}); pass map_location="cpu" to load it on the CPU'
            ) from None


def load(f: PathOrFile, map_location: Any = None, *, weights_only: bool | None = None) -> Any:
    """Read what `save` wrote. Tensors go to their saved device, or to `map_location`.

    `map_location` is a device string ("cpu", "cuda") or an `mf.device`. A minifw file
    holds only data (tensors, numbers, strings and containers, never code), so every load
    is what PyTorch calls weights-only: `weights_only` is accepted for PyTorch's
    signature and changes nothing.

    Raises:
        FileNotFoundError: `f` is a path that does not exist.
        io.UnsupportedOperation: `f` is a stream that cannot seek.
        RuntimeError: `map_location` names no device, or a tensor's device (saved or
            mapped) is not usable on this machine.
        SerializationError: the file is truncated, corrupted, compressed or not a minifw
            checkpoint.
    """
    name = os.fspath(f) if isinstance(f, str | os.PathLike) else getattr(f, "name", "<stream>")
    location = _location(map_location)
    if not isinstance(f, str | os.PathLike) and not _seekable(f):
        raise io.UnsupportedOperation(
            f"{name}: mf.load needs a seekable file (a path, or a stream whose seek() works); "
            f"got a {type(f).__name__} that cannot seek: read it into io.BytesIO first"
        )
    del weights_only  # every minifw load is weights-only
    try:
        size = _size(f)
        with zipfile.ZipFile(f) as archive:
            members = _Archive(archive, size, lambda problem: _corrupted(name, problem))
            if not members.has(MANIFEST):
                raise SerializationError(f"{name}: not a minifw checkpoint (no manifest)")
            manifest = json.loads(members.read(MANIFEST, "uint8", None).tobytes().decode())
            if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
                raise SerializationError(f"{name}: not a minifw checkpoint (foreign manifest)")
            if manifest.get("version") != VERSION:
                raise SerializationError(
                    f"{name}: minifw checkpoint version {manifest.get('version')!r} is not "
                    f"supported (this minifw reads version {VERSION})"
                )
            return _Decoder(members, name, location).value(manifest.get("root"))
    except (
        SerializationError,
        _DeviceError,
        FileNotFoundError,
        IsADirectoryError,
        PermissionError,
    ):
        raise
    except Exception as err:  # noqa: BLE001 - whatever a damaged file makes zipfile raise
        raise SerializationError(
            f"{name}: not a readable minifw checkpoint (truncated, corrupted or foreign file): "
            f"{type(err).__name__}: {err}"
        ) from err


def _location(map_location: Any) -> str | None:
    """`map_location` as a device string, refusing anything that names no device."""
    if map_location is None:
        return None
    if isinstance(map_location, str) or is_device_like(map_location):
        try:
            device_type(map_location)
        except RuntimeError as err:
            raise RuntimeError(f"map_location={map_location!r} is not a device: {err}") from None
        return str(map_location)
    raise TypeError(
        f'map_location must be a device string such as "cpu" or an mf.device (got '
        f"{type(map_location).__name__}: {map_location!r})"
    )


def _seekable(f: Any) -> bool:
    """Whether stream `f` says it can seek (and its seek/tell exist)."""
    try:
        return bool(f.seekable()) and callable(f.seek) and callable(f.tell)
    except (AttributeError, io.UnsupportedOperation):
        return False


def _corrupted(name: str, problem: str) -> SerializationError:
    return SerializationError(f"{name}: corrupted minifw checkpoint: {problem}")


def _size(f: PathOrFile) -> int:
    """The size in bytes of the file at path `f`, or of the seekable stream `f`."""
    if isinstance(f, str | os.PathLike):
        return os.stat(f).st_size
    here = f.tell()
    end = f.seek(0, os.SEEK_END)
    f.seek(here)
    return end


__all__ = ["SerializationError", "load", "save"]
