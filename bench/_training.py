"""The training-step cases of bench/ops.py: an MLP step and the digits LeNet step.

The MLP: one SGD step of a 784-128-10 ReLU MLP, batch 64, float64 and float32. With
`mf.nn.Linear`, `mf.nn.functional.cross_entropy` and `mf.optim.SGD` present the step
uses them (and `torch.nn` on the PyTorch side); until then it runs the same
computation with tensor operations only (matmul, relu, log-softmax by hand, manual
SGD update), in both frameworks, and says which variant it timed.

The LeNet: one step of `project/digits.py`'s `DigitsNet` as the quick start trains it
(8x8 images, its default batch, optimizer and learning rate), against the same net
written with `torch.nn`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import best_times

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


def data(batch: int = BATCH, dtype: str = "float64") -> tuple[np.ndarray, np.ndarray]:
    """A fixed random batch: inputs (batch, 784) of `dtype` and class labels (batch,)."""
    rng = np.random.default_rng(0)
    return rng.random((batch, SIZES[0])).astype(dtype), rng.integers(0, SIZES[-1], batch)


def minifw_step(mf: Any, batch: int = BATCH, dtype: str = "float64") -> tuple[str, Step]:
    """(variant name, a function running one forward + backward + SGD update)."""
    x_np, y_np = data(batch, dtype)
    x, y = mf.tensor(x_np), mf.tensor(y_np)
    if has_nn_api(mf):
        model = mf.nn.Sequential(
            mf.nn.Linear(SIZES[0], SIZES[1]), mf.nn.ReLU(), mf.nn.Linear(SIZES[1], SIZES[2])
        )
        if dtype == "float32":
            model = model.float()
        step = classifier_step(mf, model, "SGD", LR)
        return "nn.Linear + cross_entropy + optim.SGD", lambda: step(x, y)
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


def torch_step(torch: Any, batch: int = BATCH, dtype: str = "float64") -> Step:
    """The same step in PyTorch with torch.nn, in `dtype`."""
    x_np, y_np = data(batch, dtype)
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)
    model = torch.nn.Sequential(
        torch.nn.Linear(SIZES[0], SIZES[1]), torch.nn.ReLU(), torch.nn.Linear(SIZES[1], SIZES[2])
    ).to(getattr(torch, dtype))
    step = classifier_step(torch, model, "SGD", LR)
    return lambda: step(x, y)


def lenet_steps(mf: Any, torch: Any, batch: int) -> tuple[Step, Step | None]:
    """One step of the digits LeNet in minifw and (if given) in PyTorch, same weights."""
    from project.digits import DEFAULTS, DigitsNet

    rng = np.random.default_rng(0)
    images, labels = rng.random((batch, 1, 8, 8)), rng.integers(0, 10, batch)
    net = DigitsNet(8, DEFAULTS.channels, DEFAULTS.hidden)
    step = classifier_step(mf, net, "Adam", DEFAULTS.lr)
    x, y = mf.tensor(images), mf.tensor(labels)
    steps: list[Step] = [lambda: step(x, y)]
    if torch is not None:
        twin = _torch_lenet(torch, DEFAULTS.channels, DEFAULTS.hidden)
        with torch.no_grad():
            for name, value in net.state_dict().items():
                twin.get_parameter(name).copy_(torch.from_numpy(value.numpy()))
        twin_step = classifier_step(torch, twin, "Adam", DEFAULTS.lr)
        tx, ty = torch.from_numpy(images), torch.from_numpy(labels)
        steps.append(lambda: twin_step(tx, ty))
    return steps[0], steps[1] if torch is not None else None


def classifier_step(lib: Any, model: Any, optimizer: str, lr: float) -> Callable[[Any, Any], Any]:
    """zero_grad, cross_entropy on int64 labels, backward, `optimizer` step (mf or torch)."""
    opt = getattr(lib.optim, optimizer)(model.parameters(), lr=lr)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def _torch_lenet(torch: Any, channels: tuple[int, int], hidden: int) -> Any:
    """`DigitsNet` written with torch.nn (float64), parameters named as minifw's."""
    nn = torch.nn

    class TorchDigitsNet(nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, channels[0], 3, padding=1)
            self.conv2 = nn.Conv2d(channels[0], channels[1], 3, padding=1)
            self.pool = nn.MaxPool2d(2)
            self.fc1 = nn.Linear(channels[1] * 4, hidden)
            self.fc2 = nn.Linear(hidden, 10)

        def forward(self, x: Any) -> Any:
            x = self.pool(self.conv1(x).relu())
            x = self.pool(self.conv2(x).relu())
            return self.fc2(self.fc1(x.flatten(1)).relu())

    return TorchDigitsNet().double()


def training_step_cases(quick: bool, repeat: int, only: str = "") -> list[str]:
    """Table lines: minifw's and PyTorch's time per training step, and the ratio.

    `only` "mlp" or "lenet" keeps those lines. The target is at least
    PyTorch's eager speed: "vs torch" >= 1.
    """
    import minifw as mf

    try:
        import torch
    except ImportError:
        torch = None
    batch = 8 if quick else BATCH
    lines: list[str] = []
    for dtype in ("float64", "float32") if only != "lenet" else ():
        name = f"MLP 784-128-10 SGD {dtype}, b{batch}"
        try:
            variant, step = minifw_step(mf, batch, dtype)
        except (AttributeError, NotImplementedError, TypeError) as error:
            lines.append(f"{name}: skipped, minifw lacks part of the API ({error})")
            continue
        other = torch_step(torch, batch, dtype) if torch is not None else None
        lines.append(_step_line(name, step, other, quick, repeat, f" [{variant}]"))
    if only == "mlp":
        return lines
    from project.digits import DEFAULTS

    batch = 8 if quick else DEFAULTS.batch
    mf_lenet, torch_lenet = lenet_steps(mf, torch, batch)
    lines.append(_step_line(f"digits LeNet Adam step, b{batch}", mf_lenet, torch_lenet,
                            quick, repeat, ""))  # fmt: skip
    return lines


def _step_line(name: str, step: Step, other: Step | None, quick: bool, repeat: int,
               note: str) -> str:  # fmt: skip
    """One table line for a training step timed in turns with PyTorch's."""
    steps = {"minifw": step} if other is None else {"minifw": step, "torch": other}
    times = best_times(steps, max(1, repeat // 4))
    t_mf = times["minifw"]
    if other is None:
        return f"{name:<34}{t_mf * 1e3:11.3f}  (torch not installed){note}"
    t_th = times["torch"]
    verdict = "" if quick else f">= 1.0: {'ok' if t_th >= t_mf else 'MISS'}"
    return (f"{name:<34}{t_mf * 1e3:11.3f}{'-':>10}{t_th * 1e3:10.3f}{'-':>10}"
            f"{t_th / t_mf:10.2f}  {verdict}{note}")  # fmt: skip
