"""Bad arguments to the optimizers raise PyTorch's errors before any step runs.

A single tensor in place of a list of parameters, and learning rates that are nan,
infinite or negative. PyTorch decides the messages; where it lets a value through that
makes every step produce nan (`inf` everywhere, `nan` on SGD), minifw refuses it too.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import minifw as mf
from minifw import nn, optim

torch = pytest.importorskip("torch", reason="PyTorch, the oracle of these tests, is missing")
pytestmark = pytest.mark.extra  # given code: no task teaches it

NAMES = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"]


def _error(make: Any) -> BaseException | None:
    """The exception `make()` raises, or None."""
    try:
        make()
    except (TypeError, ValueError) as error:
        return error
    return None


@pytest.mark.parametrize("name", NAMES)
def test_a_single_tensor_for_params_is_pytorchs_type_error(name: str) -> None:
    theirs = _error(lambda: getattr(torch.optim, name)(torch.zeros(3, requires_grad=True)))
    ours = _error(lambda: getattr(optim, name)(mf.zeros(3, requires_grad=True)))
    assert isinstance(theirs, TypeError) and isinstance(ours, TypeError)
    assert str(ours) == str(theirs).replace("FloatTensor", "DoubleTensor")  # minifw's default


def test_a_single_parameter_for_params_names_its_type() -> None:
    weight = nn.Linear(2, 3).weight
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts, but got"):
        optim.SGD(weight, lr=0.1)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("lr", [math.nan, math.inf, -math.inf, -0.5])
def test_a_learning_rate_that_is_not_finite_and_non_negative_is_refused(
    name: str, lr: float
) -> None:
    error = _error(lambda: getattr(optim, name)([mf.zeros(3, requires_grad=True)], lr=lr))
    assert isinstance(error, ValueError)
    assert str(error) == f"Invalid learning rate: {lr}"
    theirs = _error(
        lambda: getattr(torch.optim, name)([torch.zeros(3, requires_grad=True)], lr=lr)
    )
    if theirs is not None:  # PyTorch refuses nan (but on SGD) and negative rates: same words
        assert str(theirs) == str(error)


@pytest.mark.parametrize("lr", [math.nan, math.inf])
def test_a_param_group_with_a_rate_that_is_not_finite_is_refused(lr: float) -> None:
    opt = optim.SGD([mf.zeros(2, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        opt.add_param_group({"params": [mf.zeros(2, requires_grad=True)], "lr": lr})
    assert len(opt.param_groups) == 1


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("Adam", {"eps": math.nan}),
        ("Adam", {"betas": (0.9, math.nan)}),
        ("Adam", {"betas": (1.0, 0.9)}),
        ("Adam", {"weight_decay": -1.0}),
        ("RMSprop", {"alpha": math.nan}),
        ("RMSprop", {"momentum": -1.0}),
        ("Adagrad", {"lr_decay": -1.0}),
        ("Adagrad", {"initial_accumulator_value": -1.0}),
        ("SGD", {"momentum": -1.0}),
        ("SGD", {"weight_decay": -1.0}),
    ],
)
def test_other_hyperparameters_out_of_range_give_pytorchs_message(
    name: str, kwargs: dict[str, Any]
) -> None:
    theirs = _error(
        lambda: getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], lr=0.1, **kwargs)
    )
    ours = _error(
        lambda: getattr(optim, name)([mf.zeros(2, requires_grad=True)], lr=0.1, **kwargs)
    )
    assert isinstance(theirs, ValueError) and isinstance(ours, ValueError)
    assert str(ours) == str(theirs)


@pytest.mark.parametrize("bad", [np.zeros(3), [0.0, 0.0, 0.0], {"a": 1}])
@pytest.mark.parametrize(
    ("make", "key"),
    [
        (lambda ps: optim.Adam(ps, lr=0.1), "exp_avg"),
        (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), "momentum_buffer"),
        (lambda ps: optim.Adagrad(ps, lr=0.1), "sum"),
        (lambda ps: optim.Adam(ps, lr=0.1), "a_key_of_another_version"),
    ],
)
def test_loading_state_that_is_not_a_tensor_names_the_key_and_type(
    make: Any, key: str, bad: Any
) -> None:
    param = mf.zeros(3, requires_grad=True)
    opt = make([param])
    param.grad = mf.ones(3)
    opt.step()
    saved = opt.state_dict()
    saved["state"][0][key] = bad
    with pytest.raises(ValueError, match=rf"'{key}' of type {type(bad).__name__} for parameter 0"):
        opt.load_state_dict(saved)
