"""Kernel fusion for `mf.compile`: group elementwise steps, generate one Numba kernel each.

`plan_fusion` walks the recorded steps in order and grows groups of map/zip steps
that have the same output shape, where each step reads the outputs of earlier
members cell for cell (same shape, row-major). Reading a member any other way
(broadcast, transposed, by a reduce or a matmul) closes its group, which then
runs before that reader; an in-place write closes every open group, and when it
only copies a group's result into a tensor the group reads cell for cell (if at
all), that group writes the tensor's cells itself (`x -= lr * g`: one kernel, no
copy). Operands from outside a group (graph inputs, parameters, matmul results)
may broadcast.

`fused_kernel` writes Python source for a group (one `prange` loop; per output
cell it reads each operand once, evaluates the members with the scalar functions
of `scalar_math.py` rounded to each member's dtype, exactly as the unfused kernels
store them, and writes the outputs still needed), saves it under `cache_dir()`
named by its hash and runs it as a module, so Numba's disk cache (`cache=True`)
works across processes as it does for `fast_ops.py`.

The cache folder is private: created with mode 0o700, and an existing one must be
owned by this user and writable by no one else, or another local user could plant
code (or Numba cache pickles) that runs in this process. `set_cache_dir` refuses an
unsafe folder with PermissionError; for the automatic choice (NUMBA_CACHE_DIR,
~/.cache, the temp dir) an unsafe folder is skipped with a `CacheDirWarning`, down to
a fresh private temp folder. A cached file is never imported from disk: the module
runs the source generated in this process, and a file whose text differs from it is
rewritten (with a warning) before Numba looks up its cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
import tempfile
import threading
import types
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numba
import numpy as np

from minifw._jit import compile_functions, kernel_sources_hash, njit
from minifw.backends import fast_path
from minifw.compiler.capture import Ref, Step
from minifw.core import operators, tensor_data

# The scalar functions generated kernels call, compiled once (like fast_ops' copies); with
# the fast paths present, e^x is their SIMD version, as in FastOps' kernels.
SCALAR = compile_functions(
    [*operators.KERNEL_MODULES, tensor_data],
    operators.KERNEL_FUNCTIONS,
    lambda fn: njit(fn, inline="always"),
    replacements={"exp": simd.exp} if (simd := fast_path("simd_math")) is not None else None,
)
# About this many cells of out per task of a loop over rows (whole rows per task).
ROWS_CELLS = 16384
_INFIX = {operators.ADD: "+", operators.SUB: "-", operators.MUL: "*", operators.DIV: "/"}
_CASTS = {"float64": "np.float64", "float32": "np.float32", "int64": "np.int64",
          "bool": "np.bool_"}  # fmt: skip
_cache_dir: list[Path | None] = [None]
_kernels: dict[tuple[str, Path], Any] = {}
_kernel_lock = threading.Lock()
_dir_lock = threading.Lock()


class CacheDirWarning(UserWarning):
    """A kernel cache folder or file was unsafe or tampered with; minifw worked around it."""


class UnsafeCacheDirError(PermissionError):
    """A kernel cache folder that another user owns or may write to."""


@dataclass(slots=True, eq=False)
class Group:
    """Elementwise steps fused into one kernel; `outputs` are the buffers it must write."""

    members: list[int]
    shape: tuple[int, ...]
    closed: bool = False
    outputs: list[int] = field(default_factory=list)
    leaves: list[Ref] = field(default_factory=list)
    into: dict[int, Ref] = field(default_factory=dict)  # output -> where it is written instead


def fusable(step: Step) -> bool:
    """True for a map or zip step on the CPU whose op and dtypes a fused kernel handles."""
    if step.kind not in ("map", "zip") or step.backend.device != "cpu":
        return False
    names = operators.UNARY_NAMES if step.kind == "map" else operators.BINARY_NAMES
    return step.op in names


def plan_fusion(steps: list[Step], dtypes: list[str], needed: set[int]) -> list[int | Group]:
    """The program: step numbers to run as they are, and groups to run fused, in order.

    `dtypes[b]` is buffer b's dtype name; `needed` holds the buffers that must be
    written because something outside the steps (the result, autograd) reads them.
    """
    program: list[int | Group] = []
    open_groups: list[Group] = []
    owner: dict[int, Group] = {}  # output buffer of a member -> its group
    readers = Counter(r.buf for step in steps for r in step.inputs)

    def close(group: Group) -> None:
        if not group.closed:
            group.closed = True
            open_groups.remove(group)
            program.append(group)

    for number, step in enumerate(steps):
        if not (fusable(step) and all(dtypes[r.buf] in _CASTS for r in step.inputs)):
            if step.kind == "map_into":
                source = _copied_group(step, owner, steps, dtypes, needed, readers)
                for group in [g for g in open_groups if g is not source]:
                    close(group)
                if source is not None:  # x -= y: the group writes x's cells itself
                    source.into[step.inputs[0].buf] = step.out
                    close(source)
                    continue
            for ref in step.inputs:
                if ref.buf in owner:
                    close(owner[ref.buf])
            program.append(number)
            continue
        shape = step.out.shape
        joined: list[Group] = []
        for ref in step.inputs:
            found = owner.get(ref.buf)
            if found is None or found.closed:
                continue
            group = found
            if _reads_cellwise(ref, shape) and group.shape == shape:
                joined.append(group)
            else:
                close(group)
        joined = [g for g in dict.fromkeys(joined) if not g.closed]
        if joined:
            target = joined[0]
            for other in joined[1:]:
                target.members += other.members
                for buf in [b for b, g in owner.items() if g is other]:
                    owner[buf] = target
                open_groups.remove(other)
            target.members.append(number)
        else:
            target = Group([number], shape)
            open_groups.append(target)
        owner[step.out.buf] = target
    for group in list(open_groups):
        close(group)
    return [_finish(item, steps, needed) if isinstance(item, Group) else item for item in program]


def _copied_group(
    copy: Step, owner: dict[int, Group], steps: list[Step], dtypes: list[str],
    needed: set[int], readers: Counter[int],
) -> Group | None:  # fmt: skip
    """The open group whose output `copy` (a map_into) only copies, if it may write there.

    That is when the copy is the output's only reader, cell for cell into a row-major
    view of the same dtype, and the group reads the target's cells (if at all) only
    each at the cell it writes: each cell is then read before it is written.
    """
    (source,) = copy.inputs
    group = owner.get(source.buf)
    if (
        copy.op != operators.ID
        or group is None
        or group.closed
        or source.buf in needed
        or readers[source.buf] != 1
        or owner.get(copy.out.buf) is not None
        or dtypes[source.buf] != dtypes[copy.out.buf]
        or not (_reads_cellwise(source, group.shape) and copy.out.shape == group.shape)
        or not _row_major(copy.out)
    ):
        return None
    target = copy.out.buf
    for m in group.members:
        if any(r.buf == target and r != copy.out for r in steps[m].inputs):
            return None
    return group


def _reads_cellwise(ref: Ref, shape: tuple[int, ...]) -> bool:
    return ref.shape == shape and ref.offset == 0 and _row_major(ref)


def _row_major(ref: Ref) -> bool:
    return ref.strides == tensor_data.strides_from_shape(ref.shape)


def _finish(group: Group, steps: list[Step], needed: set[int]) -> int | Group:
    """A one-step group runs unfused; else decide which outputs to write, which leaves to read."""
    group.members.sort()
    if len(group.members) == 1 and not group.into:
        return group.members[0]
    inside = {steps[m].out.buf for m in group.members}
    read_outside: set[int] = set()
    for number, step in enumerate(steps):
        if number not in group.members:
            read_outside.update(r.buf for r in step.inputs)
            read_outside.add(step.out.buf)
    group.outputs = [b for b in sorted(inside) if b in needed or b in read_outside]
    leaves: dict[Ref, None] = {}
    for m in group.members:
        for ref in steps[m].inputs:
            if ref.buf not in inside:
                leaves[ref] = None
    group.leaves = list(leaves)
    return group


def leaf_access(ref: Ref, shape: tuple[int, ...]) -> tuple[str, tuple[Any, ...]]:
    """How a kernel reads operand `ref` at out cell i, and the sizes that takes.

    "dense" a[i] (out's shape, row-major); "scalar" a[0], read once (it broadcasts
    along every dim); "block" a[(i // inner) % span] (row-major over a run of dims,
    broadcast along the others: a bias, a column); else "strided": the position
    is summed over out's dims with the broadcast strides.
    """
    if ref.shape == shape and _row_major(ref):
        return "dense", ()
    strides = broadcast_strides(ref, shape)
    used = [d for d in range(len(shape)) if strides[d] != 0 and shape[d] != 1]
    if not used:
        return "scalar", ()
    first, last = used[0], used[-1] + 1
    inner = int(np.prod(shape[last:], dtype=np.int64))
    span = int(np.prod(shape[first:last], dtype=np.int64))
    expected = tensor_data.strides_from_shape(shape[first:last])
    if all(strides[d] == expected[d - first] for d in range(first, last) if shape[d] != 1):
        return "block", (inner, span)
    return "strided", (strides,)


def kernel_source(group: Group, steps: list[Step], dtypes: list[str]) -> str:
    """The Python source of the fused kernel of `group` (it depends on layouts, not sizes)."""
    kinds = [_read_kind(ref, group.shape) for ref in group.leaves]
    leaf_of = {ref: i for i, ref in enumerate(group.leaves)}
    temps: dict[int, str] = {}
    body, used, doc = [], set(), []
    for k, m in enumerate(group.members):
        step = steps[m]
        args = [temps[r.buf] if r.buf in temps else f"x{leaf_of[r]}" for r in step.inputs]
        expr, name = _expression(step, args)
        if name:
            used.add(name)
        temps[step.out.buf] = f"t{k}"
        body.append(f"t{k} = {_CASTS[dtypes[step.out.buf]]}({expr})")
        doc.append(f"    t{k} = {expr}")
    body += [f"o{i}[i] = {temps[b]}" for i, b in enumerate(group.outputs)]
    params = ["shape", *(f"o{i}" for i in range(len(group.outputs)))]
    for i, kind in enumerate(kinds):
        params += [f"a{i}", *_EXTRA_PARAMS[kind].format(i=i).split()]
    by_rows = ("row" in kinds or "column" in kinds) and "strided" not in kinds
    loop = (_row_loop if by_rows else _flat_loop)(kinds, body)
    lines = [
        '"""A fused kernel generated by minifw.compile (its file name is a hash of it).',
        "",
        "for r in prange(rows): for i in row r:  # operands read once per cell or row"
        if by_rows
        else "for i in prange(cells):  # one output cell per iteration; operands read once",
        *doc,
        "",
        "`kernel` runs the loop in parallel; `kernel_serial`, the same loop in one thread,",
        "is for small outputs, where starting threads costs more than the loop.",
        '"""',
        "import numpy as np",
        "from numba import prange",
        "",
        "from minifw.compiler.fusion import SCALAR",
        "from minifw._jit import njit",
        "",
        *(f"{name} = SCALAR.{name}" for name in sorted(used)),
        "",
    ]
    for name, options in (
        ("kernel", "parallel=True, cache=True"),
        ("kernel_serial", "cache=True"),
    ):
        lines += ["", f"@njit({options})", f"def {name}({', '.join(params)}):", *loop, ""]
    return "\n".join(lines)


# The sizes a kernel takes after each operand, by how it reads the operand.
_EXTRA_PARAMS = {"dense": "", "scalar": "", "row": "n{i} m{i}", "column": "n{i} m{i}",
                 "strided": "s{i}"}  # fmt: skip
_CELLS = ["    ndim = shape.shape[0]", "    cells = 1", "    for d in range(ndim):",
          "        cells *= shape[d]"]  # fmt: skip


def _read_kind(ref: Ref, shape: tuple[int, ...]) -> str:
    """`leaf_access`'s kind, with "block" split into "column" and "row".

    A "column" block spans out's last dim (its cells along a row of out are
    contiguous); a "row" block has one cell for each row of out, or each run of rows.
    """
    kind, extra = leaf_access(ref, shape)
    if kind != "block":
        return kind
    return "column" if extra[0] == 1 else "row"


def _flat_loop(kinds: list[str], body: list[str]) -> list[str]:
    """One prange loop over out's cells (`_strided_loop` when an operand is strided)."""
    if "strided" in kinds:
        return _strided_loop(kinds, body)
    reads = {"dense": "a{i}[i]", "row": "a{i}[(i // n{i}) % m{i}]",
             "column": "a{i}[(i // n{i}) % m{i}]"}  # fmt: skip
    loop = [*_CELLS]
    loop += [f"    x{i} = a{i}[0]" for i, kind in enumerate(kinds) if kind == "scalar"]
    loop.append("    for i in prange(cells):")
    loop += [f"        x{i} = " + reads[kind].format(i=i) for i, kind in enumerate(kinds)
             if kind != "scalar"]  # fmt: skip
    return loop + [f"        {line}" for line in body]


def _row_loop(kinds: list[str], body: list[str]) -> list[str]:
    """A prange loop over out's rows (its last dim) with a contiguous loop inside.

    A "row" operand (n cells of out per cell of it, n a multiple of the row length)
    is read once per row; a "column" operand (n == 1) at a row start plus the column:
    no division per cell, so the inner loop runs in SIMD lanes. Needs no strided operand.
    """
    loop = [*_CELLS, "    last = max(shape[ndim - 1], 1) if ndim else 1", *_set_up_reads(kinds)]
    loop.append("    for r in prange(cells // last):")
    loop += _row_reads(kinds, "        ")
    loop += ["        for j in range(last):", "            i = r * last + j"]
    loop += _cell_reads(kinds, "            ")
    return loop + [f"            {line}" for line in body]


def _strided_loop(kinds: list[str], body: list[str]) -> list[str]:
    """A prange loop over tasks of whole rows of out, for operands read with strides.

    Each task finds its first row's index (divisions, once); along a row the strided
    positions p move by the last dim's stride, and from row to row the index steps
    like an odometer (the dims that wrap give back their span): no division per cell.
    Other operands are read as in `_row_loop`.
    """
    strided = [i for i, kind in enumerate(kinds) if kind == "strided"]
    loop = [*_CELLS, "    last = max(shape[ndim - 1], 1)", "    rows = cells // last"]
    loop += _set_up_reads(kinds) + [f"    along{j} = s{j}[ndim - 1]" for j in strided]
    loop += [
        f"    per_task = max(1, {ROWS_CELLS} // last)",
        "    for task in prange((rows + per_task - 1) // per_task):",
        "        first = task * per_task",
        "        index = np.empty(ndim, np.int64)",
        "        rest = first",
        *(f"        p{j} = 0" for j in strided),
        "        for d in range(ndim - 2, -1, -1):",
        "            index[d] = rest % shape[d]",
        "            rest = rest // shape[d]",
        *(f"            p{j} += index[d] * s{j}[d]" for j in strided),
        "        for r in range(first, min(rows, first + per_task)):",
        *_row_reads(kinds, "            "),
        "            for j in range(last):",
        "                i = r * last + j",
        *_cell_reads(kinds, "                "),
        *(f"                {line}" for line in body),
        *(f"                p{j} += along{j}" for j in strided),
        *(f"            p{j} -= last * along{j}" for j in strided),
        "            d = ndim - 2",
        "            while d >= 0 and index[d] == shape[d] - 1:",
        "                index[d] = 0",
        *(f"                p{j} -= (shape[d] - 1) * s{j}[d]" for j in strided),
        "                d -= 1",
        "            if d >= 0:",
        "                index[d] += 1",
        *(f"                p{j} += s{j}[d]" for j in strided),
    ]
    return loop


def _set_up_reads(kinds: list[str]) -> list[str]:
    """Before a loop over rows: scalars read, and the row counts of row and column blocks."""
    lines = [f"    x{i} = a{i}[0]" for i, kind in enumerate(kinds) if kind == "scalar"]
    lines += [f"    k{i} = n{i} // last" for i, kind in enumerate(kinds) if kind == "row"]
    return lines + [f"    q{i} = m{i} // last" for i, kind in enumerate(kinds) if kind == "column"]


def _row_reads(kinds: list[str], indent: str) -> list[str]:
    """At the start of row r: a row block's cell, a column block's start."""
    lines = [f"{indent}x{i} = a{i}[(r // k{i}) % m{i}]" for i, k in enumerate(kinds) if k == "row"]
    return lines + [
        f"{indent}c{i} = (r % q{i}) * last" for i, k in enumerate(kinds) if k == "column"
    ]


def _cell_reads(kinds: list[str], indent: str) -> list[str]:
    """At cell i (column j of row r): the dense, column and strided operands."""
    reads = {"dense": "a{i}[i]", "column": "a{i}[c{i} + j]", "strided": "a{i}[p{i}]"}
    return [f"{indent}x{i} = " + reads[kind].format(i=i) for i, kind in enumerate(kinds)
            if kind in reads]  # fmt: skip


def _expression(step: Step, args: list[str]) -> tuple[str, str]:
    """The scalar expression of one step, and the SCALAR function it calls ("" for none)."""
    op = step.op
    if step.kind == "map":
        if op == operators.ID:
            return args[0], ""
        if op == operators.NEG:
            return f"-{args[0]}", ""
        name = operators.UNARY_NAMES[op]
        return f"{name}({args[0]})", name
    if op in _INFIX:
        return f"({args[0]} {_INFIX[op]} {args[1]})", ""
    name = operators.BINARY_NAMES[op]
    return f"{name}({args[0]}, {args[1]})", name


def broadcast_strides(ref: Ref, shape: tuple[int, ...]) -> np.ndarray:
    """The strides of `ref` over out `shape`: 0 along dims it broadcasts."""
    extra = len(shape) - len(ref.shape)
    out = np.zeros(len(shape), dtype=np.int64)
    for d in range(len(shape)):
        own = d - extra
        if own >= 0 and ref.shape[own] != 1:
            out[d] = ref.strides[own]
    return out


def cache_dir() -> Path:
    """Where generated kernels are written: NUMBA_CACHE_DIR/minifw-fused or ~/.cache.

    Falls back to TMPDIR/minifw-fused-UID when that place cannot be written, and to a
    fresh private temp folder when the folders tried are unsafe (warning which and why).
    """
    with _dir_lock:
        chosen = _cache_dir[0]
        if chosen is None:
            chosen = _cache_dir[0] = _default_cache_dir()
        return chosen


def set_cache_dir(path: str | os.PathLike[str] | None) -> None:
    """Write generated kernels under `path` from now on (None: the default place).

    Raises:
        PermissionError: `path` belongs to another user or others may write to it
            (`UnsafeCacheDirError`), or it cannot be created.
    """
    chosen = None if path is None else private_dir(Path(path))
    with _dir_lock:
        _cache_dir[0] = chosen


def private_dir(path: Path) -> Path:
    """`path`, created with mode 0o700 (parents too) if missing, after checking it is safe.

    Raises:
        UnsafeCacheDirError: it is owned by another user or writable by group or others.
        OSError: it cannot be created, or is not a folder.
    """
    for folder in [*reversed(path.parents), path]:
        if not folder.exists():
            with contextlib.suppress(FileExistsError):  # made meanwhile by another process
                folder.mkdir(mode=0o700)
    _check_private(path)
    return path


def _check_private(path: Path) -> None:
    """Raise unless `path` is a folder this user owns and only this user may write."""
    status = path.stat()
    if not stat.S_ISDIR(status.st_mode):
        raise NotADirectoryError(f"kernel cache folder {path} is not a folder")
    if not hasattr(os, "getuid"):  # Windows: access is by ACLs, not owner and mode bits
        return
    mode = stat.S_IMODE(status.st_mode)
    if status.st_uid != os.getuid():
        problem = f"belongs to uid {status.st_uid}, not to this user (uid {os.getuid()})"
    elif mode & 0o022:
        who = " and ".join(w for bit, w in ((0o020, "group"), (0o002, "others")) if mode & bit)
        problem = f"is writable by {who} (mode {mode:o})"
    else:
        return
    raise UnsafeCacheDirError(
        f"kernel cache folder {path} {problem}: another user could plant code there that "
        f"mf.compile would run; use a folder only you can write (chmod 700)"
    )


def _default_cache_dir() -> Path:
    """The first safe, writable default folder, else a fresh private temp folder."""
    numba_dir = getattr(numba.config, "CACHE_DIR", "")
    candidates = [Path(numba_dir) / "minifw-fused"] if numba_dir else []
    if not numba_dir:
        with contextlib.suppress(RuntimeError):  # no home folder to be found
            candidates.append(Path.home() / ".cache" / "minifw" / "fused")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    candidates.append(Path(tempfile.gettempdir()) / f"minifw-fused-{uid}")
    unsafe = []
    for candidate in candidates:
        try:
            private_dir(candidate)
            probe = tempfile.NamedTemporaryFile(dir=candidate)  # noqa: SIM115 - a write probe
            probe.close()
        except UnsafeCacheDirError as error:
            unsafe.append(str(error))
            continue
        except OSError:
            continue
        chosen = candidate
        break
    else:
        chosen = Path(tempfile.mkdtemp(prefix="minifw-fused-"))  # mode 0o700, a new name
    if unsafe:
        warnings.warn(
            f"mf.compile: {'; '.join(unsafe)}. Generated kernels go to {chosen} instead.",
            CacheDirWarning,
            stacklevel=3,
        )
    return chosen


def _salt() -> str:
    """What generated kernels depend on besides their source: the functions they call, numba.

    `kernel_sources_hash` covers every minifw file that compiled kernels inline (the op
    table, the index math, the SIMD e^x), so editing one of them never loads a stale kernel.
    """
    parts = [kernel_sources_hash(), numba.__version__, np.__version__]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


_SALT = _salt()


def fused_kernel(source: str) -> tuple[Any, Path]:
    """The compiled kernels of `source` (parallel, serial) and its file (written first if new).

    The module runs `source` itself, never what the file holds; a file whose text differs
    is rewritten first (so Numba's cache, keyed by the file, matches the code run).
    """
    digest = hashlib.sha256((_SALT + source).encode()).hexdigest()[:24]
    path = cache_dir() / f"fused_{digest}.py"
    with _kernel_lock:
        if (digest, path) in _kernels:
            return _kernels[digest, path], path
        _write_verified(path, source)
        name = f"minifw_fused_{digest}"  # numba's cache finds the module by this name
        module = types.ModuleType(name)
        module.__file__ = str(path)
        sys.modules[name] = module
        exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - our own source
        _kernels[digest, path] = (module.kernel, module.kernel_serial)
        return _kernels[digest, path], path


def _write_verified(path: Path, source: str) -> None:
    """Make the file at `path` hold exactly `source` (atomically), warning if it held else."""
    wanted = source.encode("utf-8")
    try:
        held = path.read_bytes()
    except FileNotFoundError:
        held = None
    if held == wanted:
        return
    if held is not None:
        warnings.warn(
            f"mf.compile: cached kernel {path} did not match its name's hash (tampered with or "
            "corrupted); it was not run, and is rewritten",
            CacheDirWarning,
            stacklevel=4,
        )
        for stale in path.parent.glob(f"__pycache__/{path.stem}.*"):  # numba's index, code
            stale.unlink(missing_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(handle, "wb") as stream:
        stream.write(wanted)
    os.replace(temp, path)


__all__ = ["CacheDirWarning", "Group", "SCALAR", "UnsafeCacheDirError", "broadcast_strides",
           "cache_dir", "fusable", "fused_kernel", "kernel_source", "leaf_access",
           "plan_fusion", "private_dir", "set_cache_dir"]  # fmt: skip
