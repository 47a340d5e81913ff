"""nn.RNN, nn.LSTM, nn.GRU and their cells against PyTorch: names, init, values, gradients.

Each case builds the same layer in both libraries, copies PyTorch's parameters into
minifw's (on the backend under test, in float64 or float32), runs both on the same
hypothesis-drawn input (and initial state) and compares every output, the input and
state gradients and every parameter gradient.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minifw as mf
from minifw import nn
from tests.hypothesis_profiles import at_most
from tests.parity import TOLERANCES, assert_same, check_raises_like_torch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.extra  # no course task teaches recurrent layers

FEW = at_most(3)


def load_torch_parameters(ours: Any, theirs: Any, backend: Any, dtype: str) -> None:
    """Give `ours` the values of `theirs` (names and shapes must agree) on `backend`."""
    mine, ref = list(ours.named_parameters()), list(theirs.named_parameters())
    assert [name for name, _ in mine] == [name for name, _ in ref]
    for (name, p), (_, tp) in zip(mine, ref, strict=True):
        assert tuple(p.shape) == tuple(tp.shape), name
        p.value = mf.tensor(tp.detach().numpy().astype(dtype), backend=backend)


def _tensors(result: Any) -> list[Any]:
    """The tensors of a nested result ((out, (h, c)) -> [out, h, c]), None skipped."""
    if isinstance(result, tuple | list):
        return [t for item in result for t in _tensors(item)]
    return [] if result is None else [result]


def compare_module(
    make: Callable[[Any], Any],
    call: Callable[[Any, list[Any]], Any],
    arrays: list[np.ndarray],
    backend: Any,
    dtype: str,
) -> None:
    """Build `make(lib)` in both libraries, run `call(module, inputs)`, compare everything.

    Compares outputs, the gradients of every float input and of every parameter, for
    one random upstream gradient per output.
    """
    theirs = make(torch).to(getattr(torch, dtype)).eval()
    ours = make(mf).eval()
    load_torch_parameters(ours, theirs, backend, dtype)
    rtol, atol = TOLERANCES[dtype]
    mine_in = [mf.tensor(a.astype(dtype), backend=backend, requires_grad=True) for a in arrays]
    ref_in = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    mine, ref = _tensors(call(ours, mine_in)), _tensors(call(theirs, ref_in))
    assert_same(mine, ref, rtol, atol)
    rng = np.random.default_rng(0)
    ups = [rng.standard_normal(tuple(r.shape)).astype(dtype) for r in ref]
    torch.autograd.backward(ref, [torch.tensor(u) for u in ups])
    total = sum((m * mf.tensor(u, backend=backend)).sum() for m, u in zip(mine, ups, strict=True))
    total.backward()
    for i, (m, t) in enumerate(zip(mine_in, ref_in, strict=True)):
        assert_same(m.grad, t.grad, rtol, atol, f"gradient of input {i}")
    for (name, p), (_, tp) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        assert_same(p.grad, tp.grad, rtol, atol, f"gradient of {name}")


# (layer name, constructor options, batch_first, unbatched, initial state given)
LAYERS = [
    ("RNN", {}, False, False, False),
    ("RNN", {"nonlinearity": "relu", "bias": False, "batch_first": True}, True, False, True),
    ("LSTM", {"num_layers": 2, "bidirectional": True}, False, False, True),
    ("LSTM", {"batch_first": True}, True, False, False),
    ("LSTM", {}, False, True, True),
    ("GRU", {"bidirectional": True, "batch_first": True}, True, False, True),
    ("GRU", {"num_layers": 2, "dropout": 0.5}, False, False, False),
    ("GRU", {}, False, True, False),
]


def _state_arrays(name: str, layers: int, batch: int | None, hidden: int) -> list[np.ndarray]:
    """Random initial states: [h0] or [h0, c0]."""
    shape = (layers, hidden) if batch is None else (layers, batch, hidden)
    rng = np.random.default_rng(1)
    return [rng.standard_normal(shape) for _ in range(2 if name == "LSTM" else 1)]


def _run_layer(name: str, layer: Any, inputs: list[Any]) -> Any:
    """Call a recurrent layer on x with its initial state when one is given."""
    x, *state = inputs
    if not state:
        return layer(x)
    return layer(x, (state[0], state[1]) if name == "LSTM" else state[0])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,options,batch_first,unbatched,with_state", LAYERS)
@FEW
@given(
    length=st.integers(1, 3), batch=st.integers(1, 3), width=st.integers(1, 3),
    hidden=st.integers(1, 3),
)  # fmt: skip
def test_recurrent_layer_matches_torch(
    backend, dtype, name, options, batch_first, unbatched, with_state,
    length, batch, width, hidden,
):  # fmt: skip
    shape = (length, width) if unbatched else (length, batch, width)
    if batch_first and not unbatched:
        shape = (batch, length, width)
    arrays = [np.random.default_rng(length * 7 + batch).standard_normal(shape)]
    if with_state:
        layers = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)
        arrays += _state_arrays(name, layers, None if unbatched else batch, hidden)
    compare_module(
        lambda lib: getattr(lib.nn, name)(width, hidden, **options),
        lambda layer, inputs: _run_layer(name, layer, inputs),
        arrays,
        backend,
        dtype,
    )


# (cell name, constructor options, initial state given, unbatched)
CELLS = [
    ("RNNCell", {}, False, False),
    ("RNNCell", {"nonlinearity": "relu", "bias": False}, True, True),
    ("LSTMCell", {}, True, False),
    ("LSTMCell", {"bias": False}, False, True),
    ("GRUCell", {}, True, True),
    ("GRUCell", {}, False, False),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,options,with_state,unbatched", CELLS)
def test_cell_matches_torch(backend, dtype, name, options, with_state, unbatched):
    rng = np.random.default_rng(2)
    batch, width, hidden = 3, 2, 4
    arrays = [rng.standard_normal((width,) if unbatched else (batch, width))]
    if with_state:
        state_shape = (hidden,) if unbatched else (batch, hidden)
        arrays += [rng.standard_normal(state_shape) for _ in range(2 if name == "LSTMCell" else 1)]

    def call(cell: Any, inputs: list[Any]) -> Any:
        x, *state = inputs
        if not state:
            return cell(x)
        return cell(x, tuple(state) if name == "LSTMCell" else state[0])

    compare_module(
        lambda lib: getattr(lib.nn, name)(width, hidden, **options), call, arrays, backend, dtype
    )


def test_parameters_names_init_and_repr_match_torch():
    mf.manual_seed(0)
    for name, options in [
        ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True, "dropout": 0.25}),
        ("GRU", {"bias": False}),
        ("RNN", {"nonlinearity": "relu"}),
        ("LSTMCell", {}),
        ("RNNCell", {"nonlinearity": "relu", "bias": False}),
    ]:
        ours, theirs = getattr(nn, name)(3, 5, **options), getattr(torch.nn, name)(3, 5, **options)
        assert repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        bound = 1 / np.sqrt(5)
        values = np.concatenate([p.detach().numpy().ravel() for p in ours.parameters()])
        # uniform(-bound, bound) has standard deviation bound / sqrt(3)
        assert np.all(np.abs(values) <= bound)
        assert abs(values.std() - bound / np.sqrt(3)) < bound / 6


def test_torch_state_dict_loads():
    theirs = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True).double()
    ours = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    state = OrderedDict((k, mf.tensor(v.numpy())) for k, v in theirs.state_dict().items())
    result = ours.load_state_dict(state)
    assert not result.missing_keys and not result.unexpected_keys
    x = np.random.default_rng(3).standard_normal((4, 2, 3))
    out, (h, c) = ours(mf.tensor(x))
    ref, (th, tc) = theirs(torch.tensor(x))
    assert_same([out, h, c], [ref, th, tc], *TOLERANCES["float64"])


def test_dropout_between_layers_only_in_training():
    mf.manual_seed(4)
    layer = nn.GRU(2, 3, num_layers=2, dropout=0.5)
    x = mf.tensor(np.random.default_rng(5).standard_normal((4, 2, 2)))
    layer.eval()
    first, second = layer(x)[0].detach().numpy(), layer(x)[0].detach().numpy()
    np.testing.assert_array_equal(first, second)
    layer.train()
    assert not np.allclose(layer(x)[0].detach().numpy(), first)
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.LSTM(2, 3, dropout=0.5)


def _bad_calls() -> list[tuple[str, Callable[..., Any], list[Any], str]]:
    def opts(lib: Any) -> dict[str, Any]:
        return {"dtype": lib.float64}

    rng = np.random.default_rng(6)
    x3, x4 = rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 3, 3))
    return [
        (
            "input_size",
            lambda lib, x: lib.nn.LSTM(4, 2, **opts(lib))(x),
            [x3],
            "Expected 4, got 3",
        ),
        ("4-D input", lambda lib, x: lib.nn.GRU(3, 2, **opts(lib))(x), [x4], "2D or 3D, got 4D"),
        (
            "h0 shape",
            lambda lib, x, h: lib.nn.GRU(3, 2, **opts(lib))(x, h),
            [x3, rng.standard_normal((1, 2, 2))],
            r"Expected hidden size \(1, 3, 2\), got \[1, 2, 2\]",
        ),
        (
            "unbatched h0",
            lambda lib, x, h: lib.nn.RNN(3, 2, **opts(lib))(x, h),
            [x3[0], rng.standard_normal((1, 1, 2))],
            "hx should also be 2-D",
        ),
        ("nonlinearity", lambda lib, x: lib.nn.RNN(3, 2, nonlinearity="gelu"), [x3], "gelu"),
        ("dropout", lambda lib, x: lib.nn.GRU(3, 2, dropout=1.5), [x3], "range"),
        (
            "cell input",
            lambda lib, x: lib.nn.LSTMCell(4, 2, **opts(lib))(x[0]),
            [x3],
            "got 3 expected 4",
        ),
        ("cell 3-D", lambda lib, x: lib.nn.GRUCell(3, 2, **opts(lib))(x), [x3], "1D or 2D"),
        (
            "cell batch",
            lambda lib, x, h: lib.nn.RNNCell(3, 2, **opts(lib))(x[0], h),
            [x3, rng.standard_normal((4, 2))],
            "batch size 3 doesn't match hidden0 batch size 4",
        ),
        (
            "dtype",
            lambda lib, x: lib.nn.LSTM(3, 2, **opts(lib))(x.float()),
            [x3],
            "does not match weight dtype",
        ),
    ]


@pytest.mark.parametrize("what,fn,arrays,match", _bad_calls(), ids=[c[0] for c in _bad_calls()])
def test_bad_input_raises_like_torch(backend, what, fn, arrays, match):
    check_raises_like_torch(fn, arrays, backend, match=match)
