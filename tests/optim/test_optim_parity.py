"""Optimizers and learning-rate schedules follow PyTorch's trajectories.

Both libraries start from the same parameters and minimise the same small loss (a
least-squares fit through a tanh layer); after every step the parameters must agree
within 1e-6 in float64. Schedules are compared by the rates they set, epoch by epoch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minifw as mf
from minifw.optim import lr_scheduler as mf_sched

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.extra

STEPS = 6

OPTIMIZERS: list[tuple[str, dict[str, Any]]] = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "maximize": True}),
    ("Adam", {"lr": 0.05}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True}),
    ("AdamW", {"lr": 0.05}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.3, "amsgrad": True, "betas": (0.8, 0.9)}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "eps": 1e-6, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    (
        "Adagrad",
        {"lr": 0.1, "lr_decay": 0.1, "weight_decay": 0.1, "initial_accumulator_value": 0.5},
    ),
]


def _problem(seed: int = 0) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Initial weights (3, 4), (4,), (4, 1) and data x (5, 3), y (5, 1)."""
    rng = np.random.default_rng(seed)
    shapes = [(3, 4), (4,), (4, 1)]
    params = [rng.standard_normal(s) for s in shapes]
    return params, rng.standard_normal((5, 3)), rng.standard_normal((5, 1))


def _loss(lib: Any, params: list[Any], x: Any, y: Any) -> Any:
    """Mean squared error of a one-hidden-layer tanh network."""
    w1, b1, w2 = params
    out = (x @ w1 + b1).tanh() @ w2
    return ((out - y) * (out - y)).mean()


def _run(lib: Any, name: str, kwargs: dict[str, Any], backend: Any = None) -> list[np.ndarray]:
    """The parameters after each of STEPS steps, as numpy arrays."""
    values, x_np, y_np = _problem()
    make = (lambda a: mf.tensor(a, backend=backend)) if lib is mf else torch.tensor
    params = [make(v).requires_grad_(True) for v in values]
    x, y = make(x_np), make(y_np)
    opt = getattr(lib.optim, name)(params, **kwargs)
    seen = []
    for _ in range(STEPS):
        opt.zero_grad()
        _loss(lib, params, x, y).backward()
        opt.step()
        seen.append(np.concatenate([p.detach().cpu().numpy().ravel() for p in params]))
    return seen


@pytest.mark.parametrize(("name", "kwargs"), OPTIMIZERS)
def test_trajectory_matches_torch(name: str, kwargs: dict[str, Any], backend: Any) -> None:
    mine = _run(mf, name, kwargs, backend)
    theirs = _run(torch, name, kwargs)
    for step, (m, t) in enumerate(zip(mine, theirs, strict=True)):
        np.testing.assert_allclose(m, t, rtol=1e-6, atol=1e-9, err_msg=f"step {step + 1}")


@pytest.mark.parametrize(("name", "kwargs"), OPTIMIZERS[4:])
def test_state_dict_round_trip_resumes_the_same_run(name: str, kwargs: dict[str, Any]) -> None:
    values, x_np, y_np = _problem()
    x, y = mf.tensor(x_np), mf.tensor(y_np)

    def fresh() -> tuple[list[Any], Any]:
        params = [mf.tensor(v).requires_grad_(True) for v in values]
        return params, getattr(mf.optim, name)(params, **kwargs)

    def train(params: list[Any], opt: Any, steps: int) -> None:
        for _ in range(steps):
            opt.zero_grad()
            _loss(mf, params, x, y).backward()
            opt.step()

    params, opt = fresh()
    train(params, opt, 2)
    saved = opt.state_dict()
    resumed_params, resumed = fresh()
    for p, q in zip(resumed_params, params, strict=True):
        p.detach().copy_(q.detach())
    resumed.load_state_dict(saved)
    train(params, opt, 2)
    train(resumed_params, resumed, 2)
    for p, q in zip(resumed_params, params, strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


@pytest.mark.parametrize(
    ("name", "bad"),
    [("RMSprop", {"lr": -1.0}), ("RMSprop", {"alpha": -0.5}), ("Adagrad", {"lr_decay": -1.0}),
     ("AdamW", {"betas": (1.0, 0.9)}), ("Adagrad", {"eps": -1.0})],
)  # fmt: skip
def test_bad_hyperparameters_raise_value_error_like_torch(name: str, bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **bad)
    with pytest.raises(ValueError, match="Invalid"):
        getattr(mf.optim, name)([mf.zeros(2, requires_grad=True)], **bad)


SCHEDULES: list[tuple[str, dict[str, Any]]] = [
    ("StepLR", {"step_size": 3, "gamma": 0.5}),
    ("MultiStepLR", {"milestones": [2, 5, 5], "gamma": 0.3}),
    ("ExponentialLR", {"gamma": 0.9}),
    ("CosineAnnealingLR", {"T_max": 4, "eta_min": 0.01}),
    ("LambdaLR", {"lr_lambda": lambda epoch: 1.0 / (epoch + 1)}),
]


def _rates(lib: Any, name: str, kwargs: dict[str, Any], epochs: int = 12) -> list[list[float]]:
    """get_last_lr() after building and after each step, for two groups of rates 0.1 and 1."""
    make = mf.zeros if lib is mf else torch.zeros
    groups = [
        {"params": [make(2, requires_grad=True)]},
        {"params": [make(1, requires_grad=True)], "lr": 1.0},
    ]
    opt = lib.optim.SGD(groups, lr=0.1)
    sched = getattr(lib.optim.lr_scheduler, name)(opt, **kwargs)
    rates = [sched.get_last_lr()]
    for _ in range(epochs):
        opt.step()
        sched.step()
        rates.append(sched.get_last_lr())
        assert rates[-1] == [g["lr"] for g in opt.param_groups]
    return rates


@pytest.mark.parametrize(("name", "kwargs"), SCHEDULES)
def test_schedule_sets_the_rates_torch_sets(name: str, kwargs: dict[str, Any]) -> None:
    np.testing.assert_allclose(_rates(mf, name, kwargs), _rates(torch, name, kwargs), rtol=1e-12)


@pytest.mark.parametrize(("name", "kwargs"), SCHEDULES)
def test_schedule_state_dict_resumes(name: str, kwargs: dict[str, Any]) -> None:
    def build() -> tuple[Any, Any]:
        opt = mf.optim.SGD([mf.zeros(2, requires_grad=True)], lr=0.1)
        return opt, getattr(mf_sched, name)(opt, **kwargs)

    opt, sched = build()
    for _ in range(5):
        sched.step()
    saved_opt, saved = opt.state_dict(), sched.state_dict()
    assert "optimizer" not in saved
    opt2, sched2 = build()
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved)
    for _ in range(4):
        sched.step()
        sched2.step()
    assert sched2.get_last_lr() == sched.get_last_lr()
    assert sched2.last_epoch == sched.last_epoch == 9


def test_lr_scheduler_imports_as_in_torch() -> None:
    from minifw.optim.lr_scheduler import StepLR

    assert mf.optim.lr_scheduler.StepLR is StepLR
    with pytest.raises(TypeError, match="not an Optimizer"):
        StepLR("sgd", step_size=1)  # type: ignore[arg-type]
