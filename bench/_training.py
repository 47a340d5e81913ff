"""The training-step case of bench/ops.py: one SGD step of a 784-128-10 ReLU MLP.

With `mf.nn.Linear`, `mf.nn.functional.cross_entropy` and `mf.optim.SGD` present the
step uses them (and `torch.nn` on the PyTorch side); until then it runs the same
computation with tensor operations only (matmul, relu, log-softmax by hand, manual
SGD update), in both frameworks, and says which variant it timed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import best_time

BATCH, SIZES, LR = 64, (784, 128, 10), 0.05

Step = Callable[[], Any]


def has_nn_api(mf: Any) -> bool:
    """True once minifw has the layers, loss and optimiser the nn variant needs."""
    nn = getattr(mf, "nn", None)
    functional = getattr(nn, "functional", None)
    optim = getattr(mf, "optim", None)
    return all(
        getattr(owner, name, None) is not None
        for owner, name in ((nn, "Linear"), (functional, "cross_entropy"), (optim, "SGD"))
    )


def data(batch: int = BATCH) -> tuple[np.ndarray, np.ndarray]:
    """A fixed random batch: inputs (batch, 784) and class labels (batch,)."""
    rng = np.random.default_rng(0)
    return rng.random((batch, SIZES[0])), rng.integers(0, SIZES[-1], batch)


def minifw_step(mf: Any, batch: int = BATCH) -> tuple[str, Step]:
    """(variant name, a function running one forward + backward + SGD update)."""
    x_np, y_np = data(batch)
    x, y = mf.tensor(x_np), mf.tensor(y_np)
    if has_nn_api(mf):
        model = mf.nn.Sequential(
            mf.nn.Linear(SIZES[0], SIZES[1]), mf.nn.ReLU(), mf.nn.Linear(SIZES[1], SIZES[2])
        )
        opt = mf.optim.SGD(model.parameters(), lr=LR)

        def nn_step() -> Any:
            opt.zero_grad()
            loss = mf.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return "nn.Linear + cross_entropy + optim.SGD", nn_step
    rng = np.random.default_rng(1)
    params = [
        mf.tensor(rng.standard_normal(shape) * 0.05, requires_grad=True)
        for shape in ((784, 128), (128,), (128, 10), (10,))
    ]
    onehot = mf.tensor(np.eye(SIZES[-1])[y_np])

    def tensor_step() -> Any:
        w1, b1, w2, b2 = params
        logits = (x @ w1 + b1).relu() @ w2 + b2
        shifted = logits - logits.max(dim=1, keepdim=True)[0].detach()
        log_probs = shifted - shifted.exp().sum(dim=1, keepdim=True).log()
        loss = -(log_probs * onehot).sum() / batch
        for p in params:
            p.grad = None
        loss.backward()
        with mf.no_grad():
            for p in params:
                p -= LR * p.grad
        return loss

    return "tensor ops (no nn.Linear/optim.SGD yet)", tensor_step


def torch_step(torch: Any, batch: int = BATCH) -> Step:
    """The same step in PyTorch with torch.nn (float64, like minifw's default dtype)."""
    x_np, y_np = data(batch)
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)
    model = torch.nn.Sequential(
        torch.nn.Linear(SIZES[0], SIZES[1]), torch.nn.ReLU(), torch.nn.Linear(SIZES[1], SIZES[2])
    ).double()
    opt = torch.optim.SGD(model.parameters(), lr=LR)

    def step() -> Any:
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def mlp_step_case(quick: bool, repeat: int) -> str:
    """One table line: minifw's and PyTorch's time for one training step, and the ratio."""
    import minifw as mf

    batch = 8 if quick else BATCH
    name = f"MLP 784-128-10 SGD step, batch {batch}"
    try:
        variant, step = minifw_step(mf, batch)
        t_mf = best_time(step, repeat)
    except (AttributeError, NotImplementedError, TypeError) as error:
        return f"{name}: skipped, minifw lacks part of the API ({error})"
    try:
        import torch
    except ImportError:
        return f"{name}: minifw {t_mf * 1e3:.3f} ms [{variant}]; torch not installed"
    t_th = best_time(torch_step(torch, batch), repeat)
    verdict = "" if quick else f"minifw <= 2x torch: {'ok' if t_mf <= 2 * t_th else 'MISS'} "
    return (
        f"{name:<34}{t_mf * 1e3:11.3f}{'-':>10}{t_th * 1e3:10.3f}{'-':>10}"
        f"{t_th / t_mf:10.2f}  {verdict}[{variant}]"
    )
