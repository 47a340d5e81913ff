"""Differential checks against PyTorch, shared by the parity tests.

A case is one function written against the shared API, `fn(lib, *inputs)`, run once with
`lib = minifw` on a chosen backend and dtype and once with `lib = torch` on the same values.
`check_against_torch` compares the results (values, shapes and dtypes) and then, when the
result is a float tensor that depends on float inputs, one random upstream gradient sent
back through both (every input's gradient, None where PyTorch has None).
`check_raises_like_torch` asserts both libraries refuse an input with the same exception
class and that minifw's message names what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import minifw as mf
from minifw.tensor_ops import TensorBackend

torch = pytest.importorskip("torch")

# (rtol, atol) for values and for gradients, by dtype name.
TOLERANCES = {"float64": (1e-7, 1e-10), "float32": (2e-4, 2e-5)}
Result = Any


def as_dtype_name(dtype: Any) -> str:
    """'float32' for mf.float32, torch.float32 or np.float32; 'bool' for either bool."""
    name = str(dtype).replace("torch.", "").replace("minifw.", "")
    return {"bool_": "bool"}.get(name, name)


def inputs_for(
    lib: Any, arrays: Sequence[Any], dtype: str, backend: TensorBackend | None, grad: bool
) -> list[Any]:
    """Leaves of `lib` made from `arrays`: float arrays in `dtype`, others as they are.

    Non-array values (numbers, lists, None, slices) pass through unchanged.
    """
    made = []
    for a in arrays:
        if not isinstance(a, np.ndarray):
            made.append(a)
            continue
        is_float = a.dtype.kind == "f"
        values = a.astype(dtype) if is_float else a
        t = mf.tensor(values, backend=backend) if lib is mf else torch.tensor(values)
        made.append(t.requires_grad_(True) if grad and is_float else t)
    return made


def to_numpy(value: Any) -> Any:
    """A result of either library as numpy (tensors), a tuple (sequences) or itself."""
    if isinstance(value, list | tuple):
        return tuple(to_numpy(v) for v in value)
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if mf.is_tensor(value):
        return value.detach().cpu().numpy()
    return value


def assert_same(mine: Any, theirs: Any, rtol: float, atol: float, what: str = "result") -> None:
    """Assert two results agree: dtype and shape of tensors, then values within tolerance."""
    if isinstance(theirs, list | tuple):
        assert isinstance(mine, list | tuple), f"{what}: got {type(mine).__name__}, not a tuple"
        assert len(mine) == len(theirs), f"{what}: {len(mine)} results, PyTorch has {len(theirs)}"
        for i, (m, t) in enumerate(zip(mine, theirs, strict=True)):
            assert_same(m, t, rtol, atol, f"{what}[{i}]")
        return
    if isinstance(theirs, torch.Tensor):
        assert mf.is_tensor(mine), f"{what}: got {type(mine).__name__}, PyTorch a tensor"
        assert as_dtype_name(mine.dtype) == as_dtype_name(theirs.dtype), (
            f"{what}: dtype {mine.dtype}, PyTorch {theirs.dtype}"
        )
        assert tuple(mine.shape) == tuple(theirs.shape), (
            f"{what}: shape {tuple(mine.shape)}, PyTorch {tuple(theirs.shape)}"
        )
    got, want = to_numpy(mine), to_numpy(theirs)
    if isinstance(want, np.ndarray) and want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)
    else:
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=what)


def _float_outputs(result: Any) -> list[Any]:
    items = result if isinstance(result, list | tuple) else [result]
    return [
        r
        for r in items
        if isinstance(r, torch.Tensor) and r.is_floating_point() and r.requires_grad
    ]


def check_against_torch(
    fn: Callable[..., Result],
    arrays: Sequence[Any],
    backend: TensorBackend | None = None,
    dtype: str = "float64",
    grad: bool = True,
    seed: int = 0,
    tolerances: tuple[float, float] | None = None,
) -> Result:
    """Run `fn(lib, *inputs)` on both libraries; assert results and gradients agree.

    Float arrays become `dtype` leaves (requiring grad when `grad`); int and bool arrays keep
    their dtype. Returns minifw's result.
    """
    rtol, atol = tolerances or TOLERANCES[dtype]
    ours = inputs_for(mf, arrays, dtype, backend, grad)
    theirs = inputs_for(torch, arrays, dtype, None, grad)
    mine, ref = fn(mf, *ours), fn(torch, *theirs)
    assert_same(mine, ref, rtol, atol)
    outputs = _float_outputs(ref)
    if not grad or not outputs:
        return mine
    rng = np.random.default_rng(seed)
    mine_items = mine if isinstance(mine, list | tuple) else [mine]
    ref_items = ref if isinstance(ref, list | tuple) else [ref]
    ups = [rng.standard_normal(tuple(r.shape)).astype(dtype) for r in outputs]
    pairs = [
        (m, r) for m, r in zip(mine_items, ref_items, strict=True) if any(r is o for o in outputs)
    ]
    torch.autograd.backward([r for _, r in pairs], [torch.tensor(u) for u in ups])
    mf_ups = [mf.tensor(u, backend=backend) for u in ups]
    for (m, _), u in zip(pairs, mf_ups, strict=True):
        m.backward(u, retain_graph=True)
    for i, (m, t) in enumerate(zip(ours, theirs, strict=True)):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            if t.grad is None:
                assert m.grad is None, f"input {i}: a gradient where PyTorch has none"
            else:
                assert m.grad is not None, f"input {i}: no gradient (PyTorch has one)"
                assert_same(m.grad, t.grad, rtol, atol, f"gradient of input {i}")
    return mine


def check_raises_like_torch(
    fn: Callable[..., Any],
    arrays: Sequence[Any],
    backend: TensorBackend | None = None,
    match: str | None = None,
    dtype: str = "float64",
) -> BaseException:
    """Assert `fn` raises on both libraries with the same exception class.

    `match` (a regular expression) must be found in minifw's message: what it names.
    """
    with pytest.raises(Exception) as theirs:
        fn(torch, *inputs_for(torch, arrays, dtype, None, False))
    expected = type(theirs.value)
    # PyTorch's own subclasses (torch.OutOfMemoryError...) are compared by their Python base.
    while expected.__module__.startswith("torch"):
        expected = expected.__base__  # type: ignore[assignment]
    with pytest.raises(expected, match=match) as mine:
        fn(mf, *inputs_for(mf, arrays, dtype, backend, False))
    return mine.value
