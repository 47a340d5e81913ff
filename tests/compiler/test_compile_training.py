"""mf.compile on whole training steps: Adam/AdamW updates and a LeNet step replay exactly.

A compiled step must give, call after call, the very numbers the eager step gives
(the replay runs the same kernels), keep the optimizer's state where `state_dict`
finds it, and never fall back to eager (no CompileWarning) for these steps.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minifw as mf
from minifw import nn, optim
from minifw.compiler.compile import CompileWarning
from minifw.compiler.compile import compile as mf_compile

pytestmark = pytest.mark.extra  # given code (mf.compile, optimizers): no course task

SHAPES = [(4, 3), (3,)]


def linear_params(seed: int, dtype: Any) -> list[Any]:
    """The weight and bias of a 4 -> 3 layer, drawn from `seed`."""
    rng = np.random.default_rng(seed)
    return [mf.tensor(rng.normal(size=s), dtype=dtype, requires_grad=True) for s in SHAPES]


def adam_step(params: list[Any], opt: optim.Optimizer, calls: list[int]) -> Callable[..., Any]:
    """A training step: zero_grad, a tanh regression loss, backward, opt.step()."""

    def step(x: Any) -> Any:
        calls.append(1)  # Python side effects run only when the body runs
        opt.zero_grad()
        loss = ((x @ params[0] + params[1]).tanh() ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    return step


def inputs(seed: int, count: int, dtype: Any) -> list[Any]:
    """`count` batches (5, 4) drawn from `seed`."""
    rng = np.random.default_rng(seed)
    return [mf.tensor(rng.normal(size=(5, 4)), dtype=dtype) for _ in range(count)]


def assert_same_state(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Two optimizer state dicts hold the same hyperparameters, step counts and tensors."""
    assert ours["param_groups"] == theirs["param_groups"]
    assert ours["state"].keys() == theirs["state"].keys()
    for index, state in ours["state"].items():
        assert state.keys() == theirs["state"][index].keys()
        for name, value in state.items():
            if name == "step":
                assert type(value) is int and value == theirs["state"][index][name]
            else:
                np.testing.assert_array_equal(value.numpy(), theirs["state"][index][name].numpy())


adam_settings = st.fixed_dictionaries(
    {
        "lr": st.sampled_from([1e-3, 0.01, 0.1]),
        "betas": st.sampled_from([(0.9, 0.999), (0.8, 0.9), (0.0, 0.5)]),
        "eps": st.sampled_from([1e-8, 1e-3]),
        "weight_decay": st.sampled_from([0.0, 0.1]),
        "amsgrad": st.booleans(),
        "maximize": st.booleans(),
    }
)


@settings(max_examples=6)
@given(
    kind=st.sampled_from(["Adam", "AdamW"]),
    options=adam_settings,
    dtype=st.sampled_from(["float64", "float32"]),
    seed=st.integers(0, 10**6),
)
def test_compiled_adam_steps_match_eager_steps(kind, options, dtype, seed):
    dtype = getattr(mf, dtype)
    runs = []
    for compiled in (False, True):
        params, calls = linear_params(seed, dtype), []
        opt = getattr(optim, kind)(params, **options)
        step = adam_step(params, opt, calls)
        run = mf_compile(step) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("error", CompileWarning)
            losses = [run(x).item() for x in inputs(seed + 1, 5, dtype)]
        runs.append((losses, params, opt, run, calls))
    (eager_losses, eager_params, eager_opt, _, _), (losses, params, opt, run, calls) = runs
    assert losses == eager_losses
    for ours, theirs in zip(params, eager_params, strict=True):
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    assert_same_state(opt.state_dict(), eager_opt.state_dict())
    assert opt.state_dict()["state"][0]["step"] == 5
    assert run.stats == {"captures": 1, "replays": 4, "eager_calls": 0, "fallbacks": 0}
    assert len(calls) == 1  # the body ran once, at the capture: the rest were replays


def test_adam_state_is_updated_in_place_by_replays():
    params, calls = linear_params(1, mf.float64), []
    opt = optim.Adam(params, lr=0.01)
    step = mf_compile(adam_step(params, opt, calls))
    batches = inputs(2, 4, mf.float64)
    step(batches[0])
    state = opt.state[params[0]]
    kept = {name: (value, value._data.base) for name, value in state.items()}
    saved = [state["exp_avg"].clone()]
    for x in batches[1:]:
        step(x)
        saved.append(state["exp_avg"].clone())
    for name, (value, storage) in kept.items():
        assert state[name] is value and value._data.base is storage
    assert state["step"].item() == 4 and step.stats["replays"] == 3
    assert not np.array_equal(saved[-1].numpy(), saved[-2].numpy())


def test_eager_steps_before_and_after_replays_share_the_state():
    batches = inputs(4, 8, mf.float64)
    results = []
    for plan in ("eeeeeeee", "eecccecc"):
        params, calls = linear_params(3, mf.float64), []
        opt = optim.AdamW(params, lr=0.05, amsgrad=True)
        eager = adam_step(params, opt, calls)
        compiled = mf_compile(eager)
        for how, x in zip(plan, batches, strict=True):
            (compiled if how == "c" else eager)(x)
        results.append((params, opt.state_dict()))
    (eager_params, eager_state), (params, state) = results
    for ours, theirs in zip(params, eager_params, strict=True):
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    assert_same_state(state, eager_state)
    assert state["state"][1]["step"] == 8


def test_loading_a_state_dict_between_replays_captures_again():
    batches = inputs(6, 6, mf.float64)
    params, calls = linear_params(5, mf.float64), []
    opt = optim.Adam(params, lr=0.05)
    step = mf_compile(adam_step(params, opt, calls))
    for x in batches[:3]:
        step(x)
    saved = opt.state_dict()
    start = [p.detach().clone() for p in params]
    for x in batches[3:]:
        step(x)
    opt.load_state_dict(saved)  # new state tensors: the old replay must not write the old ones
    with mf.no_grad():
        for p, value in zip(params, start, strict=True):
            p.copy_(value)
    with pytest.warns(CompileWarning, match="captures again: an optimizer's settings"):
        for x in batches[3:]:
            step(x)
    twins, twin_calls = linear_params(5, mf.float64), []
    twin_opt = optim.Adam(twins, lr=0.05)
    eager = adam_step(twins, twin_opt, twin_calls)
    for x in batches:
        eager(x)
    for ours, theirs in zip(params, twins, strict=True):
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    assert_same_state(opt.state_dict(), twin_opt.state_dict())
    assert step.stats["captures"] == 2 and step.stats["fallbacks"] == 0


def lenet(seed: int) -> Any:
    """The digits net's layers (project/digits.py), narrow: (N, 1, 8, 8) -> (N, 10)."""
    mf.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(12, 6), nn.ReLU(), nn.Linear(6, 10),
    )  # fmt: skip


def lenet_step(model: Any, opt: optim.Optimizer) -> Callable[..., Any]:
    """zero_grad, cross-entropy on int64 labels, backward, step."""

    def step(x: Any, labels: Any) -> Any:
        opt.zero_grad()
        loss = mf.nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        opt.step()
        return loss

    return step


OPTIMIZERS = {
    "sgd": lambda ps: optim.SGD(ps, lr=0.1),
    "adam": lambda ps: optim.Adam(ps, lr=0.01),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_lenet_step_is_captured_and_matches_eager(name):
    rng = np.random.default_rng(7)
    batches = [
        (mf.tensor(rng.random((4, 1, 8, 8))), mf.tensor(rng.integers(0, 10, 4))) for _ in range(4)
    ]
    runs = []
    for compiled in (False, True):
        model = lenet(8)
        step = lenet_step(model, OPTIMIZERS[name](model.parameters()))
        run = mf_compile(step) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("error", CompileWarning)
            losses = [run(x, labels).item() for x, labels in batches]
        runs.append((losses, model, run))
    (eager_losses, eager_model, _), (losses, model, run) = runs
    # cross_entropy is one kernel each way (fast_paths/fused_loss.py), eager and
    # replayed alike: the same sums in the same order.
    assert losses == eager_losses and losses[0] != losses[-1]
    for ours, theirs in zip(model.parameters(), eager_model.parameters(), strict=True):
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    assert run.stats == {"captures": 1, "replays": 3, "eager_calls": 0, "fallbacks": 0}
    # padding and the backward's fold write into buffers the step makes: refilled per call
    assert "fill ->" in run.explain()


def test_a_step_reading_closed_over_labels_checks_them_at_every_replay():
    model = lenet(9)
    opt = optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(9)
    x, labels = mf.tensor(rng.random((3, 1, 8, 8))), mf.tensor([1, 2, 3])
    step = mf_compile(lambda: lenet_step(model, opt)(x, labels))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        step()
        step()
    assert step.stats["replays"] == 1
    labels[1] = 10
    with pytest.raises(IndexError, match="out of bounds"):
        step()


def test_zeros_made_inside_the_function_and_written_in_place_are_made_again():
    def f(x):
        total = mf.zeros(3)
        for row in range(x.shape[0]):
            total += x[row]  # reads the zeros first, then writes them: refilled per call
        out = mf.zeros(2, 3)
        out[1] = total * 2.0
        return mf.cat([out, x], 0)

    compiled = mf_compile(f)
    rng = np.random.default_rng(10)
    for _ in range(3):
        x = mf.tensor(rng.normal(size=(2, 3)))
        np.testing.assert_array_equal(compiled(x).numpy(), f(x).numpy())
    assert compiled.stats == {"captures": 1, "replays": 2, "eager_calls": 0, "fallbacks": 0}


def test_a_step_that_falls_back_says_why_once():
    params, calls = linear_params(11, mf.float64), []
    opt = optim.SGD(params, lr=0.1, momentum=0.9)
    step = mf_compile(adam_step(params, opt, calls))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for x in inputs(12, 3, mf.float64):
            step(x)
    messages = [str(w.message) for w in caught if issubclass(w.category, CompileWarning)]
    assert len(messages) == 1 and "per-parameter state" in messages[0]
    assert step.stats["fallbacks"] == 1 and step.stats["eager_calls"] == 2
