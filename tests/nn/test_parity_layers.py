"""nn modules against PyTorch: batch and group norm with their running
statistics, reshaping and channel-dropout modules, the new containers and reprs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minifw as mf
from tests.hypothesis_profiles import at_most
from tests.parity import TOLERANCES, assert_same

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.extra

few = at_most(10)

BATCH_NORMS = {"BatchNorm1d": [(4, 3), (3, 3, 2)], "BatchNorm2d": [(2, 3, 2, 2)]}


def _copy_params(mine: Any, theirs: Any, rng: np.random.Generator) -> None:
    """Give both modules the same random affine parameters."""
    for (_, p), (_, q) in zip(mine.named_parameters(), theirs.named_parameters(), strict=True):
        values = rng.standard_normal(tuple(q.shape))
        with torch.no_grad():
            q.copy_(torch.tensor(values))
        with mf.no_grad():
            p.copy_(mf.tensor(values, dtype=p.dtype, backend=p.backend))


@few
@given(
    kind=st.sampled_from([("BatchNorm1d", 0), ("BatchNorm1d", 1), ("BatchNorm2d", 0)]),
    momentum=st.sampled_from([0.1, 0.5, None]), affine=st.booleans(),
    track=st.booleans(), dtype=st.sampled_from(["float64", "float32"]), seed=st.integers(0, 99),
)  # fmt: skip
def test_batch_norm_train_then_eval(
    backend: Any, kind: tuple[str, int], momentum: float | None, affine: bool, track: bool,
    dtype: str, seed: int,
) -> None:  # fmt: skip
    name, which = kind
    shape = BATCH_NORMS[name][which]
    rng = np.random.default_rng(seed)
    settings_ = {"momentum": momentum, "affine": affine, "track_running_stats": track}
    mine = getattr(mf.nn, name)(3, **settings_).to(getattr(mf, dtype)).to(backend.device)
    theirs = getattr(torch.nn, name)(3, **settings_).to(getattr(torch, dtype))
    _copy_params(mine, theirs, rng)
    rtol, atol = TOLERANCES[dtype]
    for step in range(3):
        x = rng.standard_normal(shape) * 2 + step
        if step == 2:
            mine.eval()
            theirs.eval()
        a = mf.tensor(x.astype(dtype), backend=backend, requires_grad=True)
        b = torch.tensor(x.astype(dtype), requires_grad=True)
        out_a, out_b = mine(a), theirs(b)
        assert_same(out_a, out_b.detach(), rtol, atol, f"output of batch {step}")
        up = rng.standard_normal(shape).astype(dtype)
        out_a.backward(mf.tensor(up, backend=backend))
        out_b.backward(torch.tensor(up))
        assert_same(a.grad, b.grad, rtol, atol, f"input gradient of batch {step}")
        for (key, p), (_, q) in zip(
            mine.named_parameters(), theirs.named_parameters(), strict=True
        ):
            assert_same(p.grad, q.grad, rtol, atol, f"gradient of {key}")
            p.grad, q.grad = None, None
        for (key, buf), (_, ref) in zip(mine.named_buffers(), theirs.named_buffers(), strict=True):
            assert_same(buf, ref, rtol, atol, f"buffer {key} after batch {step}")


def test_batch_norm_buffers_and_repr_match_torch() -> None:
    mine, theirs = mf.nn.BatchNorm2d(4, momentum=None), torch.nn.BatchNorm2d(4, momentum=None)
    assert repr(mine) == repr(theirs)
    assert list(mine.state_dict()) == list(theirs.state_dict())
    assert mine.num_batches_tracked.dtype == mf.int64
    untracked = mf.nn.BatchNorm1d(2, track_running_stats=False)
    assert untracked.running_mean is None and "running_mean" not in untracked.state_dict()


@pytest.mark.parametrize(
    ("make", "shape", "match"),
    [(lambda: mf.nn.BatchNorm1d(3), (2, 3, 2, 2), "expected 2D or 3D input"),
     (lambda: mf.nn.BatchNorm2d(3), (2, 3, 2), "expected 4D input"),
     (lambda: mf.nn.BatchNorm1d(3), (1, 3), "more than 1 value per channel")],
)  # fmt: skip
def test_batch_norm_refuses_bad_input_as_torch(
    make: Any, shape: tuple[int, ...], match: str
) -> None:
    torch_layer = {2: torch.nn.BatchNorm1d, 3: torch.nn.BatchNorm1d, 4: torch.nn.BatchNorm2d}
    layer = make()
    with pytest.raises(ValueError):
        type_ = torch.nn.BatchNorm2d if isinstance(layer, mf.nn.BatchNorm2d) else torch_layer[2]
        type_(3)(torch.zeros(shape))
    with pytest.raises(ValueError, match=match):
        layer(mf.zeros(*shape))


def test_group_norm_module_matches_torch(backend: Any) -> None:
    rng = np.random.default_rng(0)
    mine, theirs = mf.nn.GroupNorm(2, 4).to(backend.device), torch.nn.GroupNorm(2, 4).double()
    _copy_params(mine, theirs, rng)
    x = rng.standard_normal((3, 4, 5))
    out = mine(mf.tensor(x, backend=backend))
    assert_same(out, theirs(torch.tensor(x)).detach(), 1e-7, 1e-10)
    assert repr(mine) == repr(theirs)
    with pytest.raises(ValueError, match="divisible"):
        mf.nn.GroupNorm(3, 4)


@pytest.mark.parametrize(
    ("make", "shape"),
    [(lambda lib: lib.nn.Unflatten(1, (2, 3)), (4, 6, 2)),
     (lambda lib: lib.nn.Unflatten(-1, (2, 2)), (3, 4)),
     (lambda lib: lib.nn.Flatten(0, 1), (2, 3, 4)),
     (lambda lib: lib.nn.Identity(), (2, 2))],
)  # fmt: skip
def test_reshaping_modules(backend: Any, make: Any, shape: tuple[int, ...]) -> None:
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    out = make(mf)(mf.tensor(x, backend=backend))
    assert_same(out, make(torch)(torch.tensor(x)), 0, 0)
    assert repr(make(mf)) == repr(make(torch))


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 4), (2, 2, 2, 3)])
def test_softmax_module_without_dim_picks_torchs_dim(shape: tuple[int, ...]) -> None:
    x = np.random.default_rng(1).standard_normal(shape)
    for name in ("Softmax", "LogSoftmax"):
        with pytest.warns(UserWarning, match="Implicit dimension"):
            mine = getattr(mf.nn, name)()(mf.tensor(x))
        with pytest.warns(UserWarning):
            theirs = getattr(torch.nn, name)()(torch.tensor(x))
        assert_same(mine, theirs, 1e-7, 1e-10)


@pytest.mark.parametrize(
    ("name", "shape"),
    [("Dropout1d", (50, 8, 3)), ("Dropout2d", (50, 8, 2, 2)), ("Dropout3d", (50, 8, 1, 2, 1))],
)
def test_channel_dropout_zeroes_whole_channels(
    backend: Any, name: str, shape: tuple[int, ...]
) -> None:
    mf.manual_seed(0)
    layer = getattr(mf.nn, name)(p=0.4)
    out = layer(mf.ones(*shape, backend=backend)).numpy()
    channels = out.reshape(shape[0], shape[1], -1)
    # every channel is all zero or all 1 / (1 - p)
    assert np.all((channels == 0).all(-1) | np.isclose(channels, 1 / 0.6).all(-1))
    kept = np.isclose(channels, 1 / 0.6).all(-1).mean()
    assert 0.4 < kept < 0.8
    layer.eval()
    x = mf.ones(*shape, backend=backend)
    assert layer(x) is x
    assert repr(layer) == repr(getattr(torch.nn, name)(p=0.4))


def test_module_dict_and_parameter_containers() -> None:
    blocks = mf.nn.ModuleDict({"a": mf.nn.Linear(2, 3), "b": mf.nn.ReLU()})
    blocks["c"] = mf.nn.Linear(3, 1)
    assert list(blocks) == ["a", "b", "c"] and "b" in blocks and len(blocks) == 3
    assert [n for n, _ in blocks.named_parameters()] == [
        "a.weight",
        "a.bias",
        "c.weight",
        "c.bias",
    ]
    assert isinstance(blocks.pop("b"), mf.nn.ReLU) and list(blocks.keys()) == ["a", "c"]
    plist = mf.nn.ParameterList([mf.zeros(2), mf.nn.Parameter(mf.ones(3))])
    plist.append(mf.zeros(1, 2))
    assert [tuple(p.shape) for p in plist] == [(2,), (3,), (1, 2)]
    assert all(p.requires_grad for p in plist)
    assert [n for n, _ in plist.named_parameters()] == ["0", "1", "2"]
    pdict = mf.nn.ParameterDict({"w": mf.zeros(2, 2)})
    pdict["b"] = mf.zeros(2)
    assert [n for n, _ in pdict.named_parameters()] == ["w", "b"]
    model = mf.nn.Module()
    model.heads = mf.nn.ModuleDict([("x", mf.nn.Linear(1, 1))])
    assert [n for n, _ in model.named_parameters()] == ["heads.x.weight", "heads.x.bias"]


@pytest.mark.parametrize(
    "make",
    [lambda lib: lib.nn.LeakyReLU(0.2), lambda lib: lib.nn.GELU("tanh"), lambda lib: lib.nn.ELU(),
     lambda lib: lib.nn.Softplus(2.0, 10.0), lambda lib: lib.nn.Hardtanh(-2.0, 2.0),
     lambda lib: lib.nn.ReLU(inplace=True), lambda lib: lib.nn.SiLU(), lambda lib: lib.nn.ReLU6(),
     lambda lib: lib.nn.Dropout(0.2), lambda lib: lib.nn.CrossEntropyLoss(label_smoothing=0.1),
     lambda lib: lib.nn.CosineSimilarity()],
)  # fmt: skip
def test_module_reprs_match_torch(make: Any) -> None:
    assert repr(make(mf)) == repr(make(torch))


def test_dropout2d_reads_a_3d_input_as_batch_channels_length() -> None:
    mf.manual_seed(1)
    with pytest.warns(UserWarning, match=r"\(N, C, L\)"):
        out = mf.nn.functional.dropout2d(mf.ones(40, 6, 5), 0.5).numpy()
    assert np.all((out == 0).all(-1) | (out == 2.0).all(-1))
    assert 0 < (out == 0).all(-1).sum() < 240  # the draws differ within a sample
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        mf.nn.functional.dropout1d(mf.ones(2, 2, 2, 2))
