"""Linear algebra with PyTorch's checks: mm, bmm, mv, dot, outer, addmm, einsum, meshgrid.

Each is a thin check in front of matmul, broadcasting multiply, permute/reshape and
sum, so autograd comes from those. `einsum` contracts its operands two at a time,
each pair as one batched matmul: the shared letters that stay are the batch, the
shared letters that go are the inner dim, the rest are rows and columns.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from minifw.core import unsupported
from minifw.tensor.functions import Where
from minifw.tensor.reductions import vector_norm
from minifw.tensor.tensor import Tensor, tensor

_NAMES = {"float64": "double", "float32": "float", "int64": "long", "bool": "bool"}


def _name(t: Tensor) -> str:
    return _NAMES.get(t.dtype.name, t.dtype.name)


def mm(a: Tensor, b: Tensor) -> Tensor:
    """The matrix product of two 2-D tensors (no broadcasting)."""
    if a.dim() != 2:
        raise RuntimeError(
            f"self must be a matrix (got a {a.dim()}-D tensor of shape {tuple(a.shape)})"
        )
    if b.dim() != 2:
        raise RuntimeError(
            f"mat2 must be a matrix (got a {b.dim()}-D tensor of shape {tuple(b.shape)})"
        )
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {_name(a)} != {_name(b)}"
        )
    return a @ b


def bmm(a: Tensor, b: Tensor) -> Tensor:
    """Matrix products of two batches of matrices, (B, n, k) @ (B, k, m)."""
    if a.dim() != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor (got shape {tuple(a.shape)})")
    if b.dim() != 3:
        raise RuntimeError(f"batch2 must be a 3D tensor (got shape {tuple(b.shape)})")
    want = [a.shape[0], a.shape[2]]
    if list(b.shape[:2]) != want:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: {want} but got: "
            f"{list(b.shape[:2])}."
        )
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"expected scalar type {_name(a)} but found {_name(b)} (bmm of {tuple(a.shape)} and "
            f"{tuple(b.shape)})"
        )
    return a @ b


def mv(a: Tensor, v: Tensor) -> Tensor:
    """The product of a matrix and a vector."""
    if a.dim() != 2 or v.dim() != 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got 1, {a.dim()}, {v.dim()} (shapes "
            f"{tuple(a.shape)} and {tuple(v.shape)})"
        )
    if a.shape[1] != v.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({a.shape[0]}), mat ({a.shape[0]}x{a.shape[1]}), vec "
            f"({v.shape[0]})"
        )
    return a @ v


def dot(a: Tensor, b: Tensor) -> Tensor:
    """The inner product of two 1-D tensors of one size and dtype."""
    if a.dim() != 1 or b.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] "
            f"to have the same number of elements, but got {a.shape[0]} and {b.shape[0]} "
            f"elements respectively"
        )
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"dot : expected both vectors to have same dtype, but found {_name(a).title()} "
            f"and {_name(b).title()}"
        )
    return a @ b


def outer(a: Tensor, b: Tensor) -> Tensor:
    """The outer product of two vectors: out[i, j] = a[i] * b[j]."""
    for name, t in (("self", a), ("vec2", b)):
        if t.dim() != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.dim()}-D")
    return a.reshape(-1, 1) * b.reshape(1, -1)


def addmm(
    input: Tensor,  # noqa: A002 - PyTorch's name
    mat1: Tensor,
    mat2: Tensor,
    *,
    beta: float = 1,
    alpha: float = 1,
) -> Tensor:
    """Return beta * input + alpha * (mat1 @ mat2); with beta = 0, input is ignored (even nan)."""
    product = mm(mat1, mat2)
    if alpha != 1:
        product = product * alpha
    shape = product.shape
    if not _broadcasts_to(input.shape, shape):
        raise RuntimeError(
            f"The expanded size of the tensor ({shape[-1]}) must match the existing size "
            f"({input.shape[-1] if input.dim() else 1}) at non-singleton dimension "
            f"{input.dim() - 1}.  Target sizes: {list(shape)}.  Tensor sizes: "
            f"{list(input.shape)}"
        )
    if beta == 0:  # input takes no part, even where it is nan (its gradient is 0)
        ignored = Where.apply(input._zeros(input.shape), input, input._scalar_like(0))
        return product + ignored
    return product + (input if beta == 1 else input * beta)


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(reversed(shape), reversed(target), strict=False))


def _listed(args: tuple[Any, ...]) -> list[Any]:
    """The tensors given as separate arguments or as one list or tuple."""
    if len(args) == 1 and isinstance(args[0], list | tuple):
        return list(args[0])
    return list(args)


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids from 0-D or 1-D tensors (broadcast views, like PyTorch's).

    "ij": output k varies along dim k; "xy": the first two dims are swapped (x along
    columns), as numpy's default.
    """
    items = _listed(tensors)
    if not items:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    for i, t in enumerate(items):
        if t.dim() > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a "
                f"{t.dim()}-D tensor of shape {tuple(t.shape)} at position {i}"
            )
        if t.dtype is not items[0].dtype:
            raise RuntimeError(
                f"meshgrid expects all tensors to have the same dtype (got {items[0].dtype} "
                f"and {t.dtype} at position {i})"
            )
    axes = list(range(len(items)))
    if indexing == "xy" and len(items) >= 2:
        axes[0], axes[1] = 1, 0
    sizes = [0] * len(items)
    for t, axis in zip(items, axes, strict=True):
        sizes[axis] = t.numel()
    grids = []
    for t, axis in zip(items, axes, strict=True):
        shape = [1] * len(items)
        shape[axis] = t.numel()
        grids.append(t.reshape(*shape).expand(*sizes))
    return tuple(grids)


# ---- einsum ----------------------------------------------------------------------------------

_LETTERS = set(string.ascii_letters)


def _einsum_error(message: str) -> RuntimeError:
    return RuntimeError(f"einsum(): {message}")


def _parse_term(term: str, position: str) -> list[str]:
    """The letters of one term, with "..." kept as one item."""
    letters: list[str] = []
    rest = term
    while rest:
        if rest.startswith("..."):
            if "..." in letters:
                raise _einsum_error(f"found more than one ellipsis ('...') in {position}")
            letters.append("...")
            rest = rest[3:]
            continue
        if rest[0] not in _LETTERS:
            raise _einsum_error(
                f"invalid subscript given at index {len(term) - len(rest)} in the equation "
                f"string, subscripts must be in [a-zA-Z] (got {rest[0]!r} in {position})"
            )
        letters.append(rest[0])
        rest = rest[1:]
    return letters


def _expand_ellipsis(letters: list[str], ndim: int, i: int) -> list[str]:
    """The letters of operand i with "..." replaced by one private name per dim it covers."""
    if "..." not in letters:
        if len(letters) != ndim:
            raise _einsum_error(
                f"the number of subscripts in the equation ({len(letters)}) does not match the "
                f"number of dimensions ({ndim}) for operand {i} and no ellipsis was given"
            )
        return letters
    covered = ndim - (len(letters) - 1)
    if covered < 0:
        raise _einsum_error(
            f"the number of subscripts in the equation ({len(letters) - 1}) is more than the "
            f"number of dimensions ({ndim}) for operand {i}"
        )
    at = letters.index("...")
    return letters[:at] + [f"...{k}" for k in range(-covered, 0)] + letters[at + 1 :]


def _ellipsis_names(terms: list[list[str]]) -> list[str]:
    longest = max((sum(1 for x in t if x.startswith("...")) for t in terms), default=0)
    return [f"...{k}" for k in range(-longest, 0)]


def _parse_equation(
    equation: str, operands: Sequence[Tensor]
) -> tuple[list[list[str]], list[str]]:
    """Each operand's letters and the output's (ellipsis dims as "...-k" names)."""
    text = equation.replace(" ", "")
    inputs_text, arrow, output_text = text.partition("->")
    terms = inputs_text.split(",")
    if len(terms) < len(operands):
        raise _einsum_error("more operands were provided than specified in the equation")
    if len(terms) > len(operands):
        raise _einsum_error("fewer operands were provided than specified in the equation")
    parsed = [_parse_term(t, f"operand {i}") for i, t in enumerate(terms)]
    expanded = [
        _expand_ellipsis(p, op.dim(), i)
        for i, (p, op) in enumerate(zip(parsed, operands, strict=True))
    ]
    batch = _ellipsis_names(expanded)
    if arrow:
        out = _parse_term(output_text, "the output")
        if "..." in out:
            at = out.index("...")
            out = out[:at] + batch + out[at + 1 :]
        _check_output(out, expanded)
        return expanded, out
    counts: dict[str, int] = {}
    for letters in expanded:
        for x in letters:
            counts[x] = counts.get(x, 0) + 1
    singles = sorted(x for x, c in counts.items() if c == 1 and not x.startswith("..."))
    return expanded, batch + singles


def _check_output(out: list[str], terms: list[list[str]]) -> None:
    seen: set[str] = set()
    known = {x for t in terms for x in t}
    for x in out:
        if x in seen:
            raise _einsum_error(f"output subscript {x} appears more than once in the output")
        if x not in known and not x.startswith("..."):
            raise _einsum_error(
                f"output subscript {x} does not appear in the equation for any input operand"
            )
        seen.add(x)


def _take_diagonals(t: Tensor, letters: list[str], i: int) -> tuple[Tensor, list[str]]:
    """Operand i with each letter repeated in it reduced to the diagonal (ii -> i)."""
    while len(set(letters)) != len(letters):
        first = next(x for x in letters if letters.count(x) > 1)
        a = letters.index(first)
        b = letters.index(first, a + 1)
        if t.shape[a] != t.shape[b]:
            raise _einsum_error(
                f"subscript {first} is repeated for operand {i} but the sizes don't match, "
                f"{t.shape[b]} != {t.shape[a]}"
            )
        n = t.shape[a]
        eye_shape = [1] * t.dim()
        eye_shape[a], eye_shape[b] = n, n
        identity = tensor(_identity(n), dtype=t.dtype, backend=t.backend).reshape(eye_shape)
        t = (t * identity).sum(b)
        letters = letters[:b] + letters[b + 1 :]
    return t, letters


def _identity(n: int) -> list[list[int]]:
    return [[int(r == c) for c in range(n)] for r in range(n)]


def _sum_letters(t: Tensor, letters: list[str], keep: set[str]) -> tuple[Tensor, list[str]]:
    """Sum away the dims whose letters are not in `keep`."""
    gone = tuple(d for d, x in enumerate(letters) if x not in keep)
    if not gone:
        return t, letters
    return t.sum(gone), [x for x in letters if x in keep]


def _contract(
    a: Tensor, la: list[str], b: Tensor, lb: list[str], keep: set[str]
) -> tuple[Tensor, list[str]]:
    """Contract a and b over their shared letters not in `keep`, as one batched matmul."""
    a, la = _sum_letters(a, la, keep | set(lb))
    b, lb = _sum_letters(b, lb, keep | set(la))
    shared = [x for x in la if x in lb]
    batch = [x for x in shared if x in keep]
    inner = [x for x in shared if x not in keep]
    rows = [x for x in la if x not in lb]
    cols = [x for x in lb if x not in la]
    size = {x: n for x, n in zip(la, a.shape, strict=True)}
    for x, n in zip(lb, b.shape, strict=True):
        size[x] = n if size.get(x, 1) == 1 else size[x]
    a = _arrange(a, la, batch + rows + inner, size)
    b = _arrange(b, lb, batch + inner + cols, size)
    batch_sizes = [size[x] for x in batch]
    n_rows = _product(size[x] for x in rows)
    n_inner = _product(size[x] for x in inner)
    n_cols = _product(size[x] for x in cols)
    out = a.reshape(*batch_sizes, n_rows, n_inner) @ b.reshape(*batch_sizes, n_inner, n_cols)
    letters = batch + rows + cols
    return out.reshape(*[size[x] for x in letters]), letters


def _product(sizes: Any) -> int:
    total = 1
    for s in sizes:
        total *= s
    return total


def _arrange(t: Tensor, letters: list[str], order: list[str], size: dict[str, int]) -> Tensor:
    """`t` permuted to `order` and expanded to the full size of each letter."""
    t = t.permute(*[letters.index(x) for x in order])
    return t.expand(*[size[x] for x in order])


def _check_sizes(operands: Sequence[Tensor], terms: list[list[str]]) -> None:
    seen: dict[str, int] = {}
    for i, (t, letters) in enumerate(zip(operands, terms, strict=True)):
        for x, n in zip(letters, t.shape, strict=True):
            known = seen.get(x, 1)
            if n != 1 and known != 1 and n != known:
                name = "..." if x.startswith("...") else x
                raise _einsum_error(
                    f"subscript {name} has size {n} for operand {i} which does not broadcast "
                    f"with previously seen size {known}"
                )
            seen[x] = n if known == 1 else known


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation, as `torch.einsum`.

    The output is explicit ("ij,jk->ik") or implicit ("ij,jk": the letters seen once,
    sorted); "..." stands for broadcast batch dims; a letter repeated in one operand
    takes its diagonal ("ii->i").
    """
    items = _listed(operands)
    if not items:
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, or at least "
            "one operand and its subscripts list"
        )
    for t in items[1:]:
        if t.dtype is not items[0].dtype:
            raise RuntimeError(
                f"expected scalar type {_name(items[0]).title()} but found "
                f"{_name(t).title()} (einsum operands of dtypes {items[0].dtype} and {t.dtype})"
            )
    terms, out = _parse_equation(equation, items)
    pairs = [
        _take_diagonals(t, letters, i)
        for i, (t, letters) in enumerate(zip(items, terms, strict=True))
    ]
    _check_sizes([p[0] for p in pairs], [p[1] for p in pairs])
    result, letters = pairs[0]
    for k in range(1, len(pairs)):
        later = {x for _, ls in pairs[k + 1 :] for x in ls}
        result, letters = _contract(result, letters, *pairs[k], set(out) | later)
    result, letters = _sum_letters(result, letters, set(out))
    return result.permute(*[letters.index(x) for x in out]) if letters else result


def _linalg_namespace() -> SimpleNamespace:
    """`mf.linalg`: the names of `torch.linalg` that minifw has."""

    def matmul(a: Tensor, b: Tensor) -> Tensor:
        """Return a @ b."""
        return a @ b

    return _Linalg(vector_norm=vector_norm, matmul=matmul)


class _Linalg(SimpleNamespace):
    """The `mf.linalg` namespace; a name left out on purpose says why."""

    def __getattr__(self, name: str) -> Any:
        raise unsupported.missing("torch.linalg", "minifw.linalg", name)


linalg_namespace = _linalg_namespace()

__all__ = [
    "addmm", "bmm", "dot", "einsum", "linalg_namespace", "meshgrid", "mm", "mv", "outer",
]  # fmt: skip
