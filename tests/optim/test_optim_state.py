"""Optimizer.load_state_dict checks the state against the parameters.

A state tensor of the wrong shape would broadcast silently at the next step; one of
the wrong kind would fail there or train on nonsense. Both raise a ValueError naming
the parameter, the key and the shapes, and a refused load leaves the optimizer as it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

import minifw as mf
from minifw import optim

pytestmark = pytest.mark.extra


def _trained(make: Callable[..., optim.Optimizer]) -> tuple[optim.Optimizer, list[Any]]:
    """An optimizer over a (3,) and a (2, 2) parameter after one step."""
    params = [mf.zeros(3, requires_grad=True), mf.zeros(2, 2, requires_grad=True)]
    opt = make(params)
    for p in params:
        p.grad = mf.ones(*p.shape)
    opt.step()
    return opt, params


ADAM = lambda ps: optim.Adam(ps, lr=0.1)  # noqa: E731
MOMENTUM = lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9)  # noqa: E731


@pytest.mark.parametrize(
    ("make", "key"),
    [(ADAM, "exp_avg"), (ADAM, "exp_avg_sq"), (MOMENTUM, "momentum_buffer")],
)
@pytest.mark.parametrize("bad", [(1,), (2, 2), ()])
def test_state_tensor_of_another_shape_is_refused(
    make: Callable[..., optim.Optimizer], key: str, bad: tuple[int, ...]
) -> None:
    opt, params = _trained(make)
    saved = opt.state_dict()
    saved["state"][0][key] = mf.ones(*bad)
    before = opt.state_dict()
    pattern = rf"'{key}' of shape {re.escape(str(bad))} for parameter 0 of shape \(3,\)"
    with pytest.raises(ValueError, match=pattern):
        opt.load_state_dict(saved)
    after = opt.state_dict()
    assert after["state"].keys() == before["state"].keys()
    assert after["state"][0][key].tolist() == before["state"][0][key].tolist()


@pytest.mark.parametrize("bad", ["int64 tensor", [1.0, 1.0, 1.0], 1.0])
def test_state_value_of_another_kind_is_refused(bad: Any) -> None:
    opt, _ = _trained(ADAM)
    saved = opt.state_dict()
    # tensors are built in the test, not at collection (where a student's stubs may raise)
    saved["state"][0]["exp_avg"] = mf.ones(3, dtype=mf.int64) if bad == "int64 tensor" else bad
    with pytest.raises(ValueError, match="exp_avg"):
        opt.load_state_dict(saved)


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_step_count_must_be_a_non_negative_int(bad: Any) -> None:
    opt, _ = _trained(ADAM)
    saved = opt.state_dict()
    saved["state"][1]["step"] = bad
    with pytest.raises(ValueError, match="step"):
        opt.load_state_dict(saved)


def test_state_for_an_unknown_parameter_leaves_the_optimizer_unchanged() -> None:
    opt, _ = _trained(ADAM)
    saved = opt.state_dict()
    saved["state"] = {7: saved["state"][0], **saved["state"]}
    before = opt.state_dict()
    with pytest.raises(ValueError, match="unknown parameter 7"):
        opt.load_state_dict(saved)
    assert opt.state_dict()["state"].keys() == before["state"].keys()


def test_param_group_of_another_size_is_refused() -> None:
    opt, _ = _trained(ADAM)
    saved = opt.state_dict()
    saved["param_groups"][0]["params"] = [0]
    with pytest.raises(ValueError, match="group 0 of 1 parameters"):
        opt.load_state_dict(saved)


def test_state_of_another_float_dtype_is_cast_as_torch_does() -> None:
    opt, params = _trained(ADAM)
    saved = opt.state_dict()
    saved["state"][0]["exp_avg"] = saved["state"][0]["exp_avg"].float()
    opt.load_state_dict(saved)
    state = opt.state[params[0]]
    assert state["exp_avg"].dtype is mf.float64
    opt.step()


def test_a_valid_state_dict_loads_and_steps() -> None:
    opt, params = _trained(ADAM)
    saved = opt.state_dict()
    fresh = optim.Adam(params, lr=0.5)
    fresh.load_state_dict(saved)
    assert fresh.param_groups[0]["lr"] == 0.1
    assert fresh.state[params[1]]["step"] == 1
    fresh.step()


def test_sgd_accepts_a_momentum_buffer_of_none_as_torch_saves_it() -> None:
    opt, params = _trained(MOMENTUM)
    saved = opt.state_dict()
    saved["state"][0]["momentum_buffer"] = None
    opt.load_state_dict(saved)
    params[0].grad = mf.ones(3)
    opt.step()
    assert opt.state[params[0]]["momentum_buffer"].shape == (3,)
