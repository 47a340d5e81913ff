"""What `mf.compile` buys: an elementwise chain and an MLP training step, eager vs compiled.

Run from the repository root:

    python bench/compile.py                 # 1e6-element chain, 784-128-10 MLP, batch 64
    python bench/compile.py --quick         # tiny sizes, a smoke run
    python bench/compile.py --n 4000000 --batch 256 --repeat 20

Cases (each warmed up once, which also captures and compiles, then timed in turns,
five blocks of `--repeat` calls each; the best time is reported):

- chain: ((x * y + x) * y - x).relu() * 0.5 on n float64 cells (6 ops, memory-bound):
  minifw eager (6 kernels), compiled with mode="replay" (the same 6 kernels without
  the Python in between), compiled (one fused kernel), and the same expression in numpy.
- sigmoid chain: ((x * y + x).sigmoid() * y - x).relu(), the same four ways: the exp
  per cell makes it compute-bound, so fusion saves less (numpy's exp is SIMD).
- mlp: one SGD step (forward, backward, in-place update) of a 784-128-10 ReLU MLP
  with a softmax cross-entropy written with tensor ops: eager; "fwd-only", the loss
  compiled (the backward runs eagerly, op by op); "fwd+bwd", forward and backward
  compiled together (`loss.backward()` inside the compiled function, the update
  eager); "compiled", the whole step compiled (the update `p -= lr * p.grad` too);
  and the same step in PyTorch CPU, eager.
- nn mlp / mlp adam: the 784-128-10 step as people write it (nn.Linear, cross_entropy on
  int64 labels, `optimizer.step()`), with SGD and with Adam: eager, the whole step
  compiled, and PyTorch eager, float32.
- lenet: the digits net of project/digits.py (conv3x3-relu-pool twice, two linear
  layers) on 8x8 images, its SGD step eager, compiled, and the same net in PyTorch
  eager, float32.

Ratios are "other time / compiled time": above 1 means the compiled version is faster.
Targets: chain compiled >= 3x eager and faster than numpy; MLP step compiled
at least as fast as PyTorch.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_times  # noqa: E402
from _training import classifier_step  # noqa: E402

import minifw as mf  # noqa: E402
from minifw.compiler.compile import compile as mf_compile  # noqa: E402
from minifw.tools.profiler import profile  # noqa: E402

try:
    import torch
except ImportError:  # PyTorch is optional
    torch = None


def per_call(fn: Callable[[], Any]) -> str:
    """Launches, bytes moved and the share of time outside kernels in one call of `fn`."""
    with profile() as prof:
        fn()
    t = prof.totals()
    return (f"{t.launches} launches, {(t.bytes_read + t.bytes_written) / 1e6:.1f} MB moved, "
            f"{100 * t.outside_share:.0f}% of the time outside kernels")  # fmt: skip


def chain(x: Any, y: Any) -> Any:
    """Six elementwise ops, no transcendental function: memory-bound."""
    return ((x * y + x) * y - x).relu() * 0.5


def chain_numpy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The same six ops in numpy."""
    return np.maximum((x * y + x) * y - x, 0.0) * 0.5


def sigmoid_chain(x: Any, y: Any) -> Any:
    """Six elementwise ops, one exp per cell: compute-bound."""
    return ((x * y + x).sigmoid() * y - x).relu()


def sigmoid_chain_numpy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The same six ops in numpy."""
    return np.maximum((1.0 / (1.0 + np.exp(-(x * y + x)))) * y - x, 0.0)


def bench_chain(
    n: int, repeat: int, chain: Callable[..., Any], chain_numpy: Callable[..., Any]
) -> dict[str, float]:
    """Time a chain four ways; return the times in seconds."""
    rng = np.random.default_rng(0)
    xs, ys = rng.standard_normal(n), rng.standard_normal(n)
    x, y = mf.tensor(xs), mf.tensor(ys)
    replay, fused = mf_compile(chain, mode="replay"), mf_compile(chain)
    want = chain_numpy(xs, ys)
    for version in (chain, replay, fused):
        version(x, y)
        np.testing.assert_allclose(version(x, y).numpy(), want, rtol=1e-12, atol=1e-12)
    cases = {
        "eager": lambda: chain(x, y),
        "replay": lambda: replay(x, y),
        "compiled": lambda: fused(x, y),
        "numpy": lambda: chain_numpy(xs, ys),
    }
    times = best_times(cases, repeat)
    print(f"{chain.__name__}, {n:,} float64 cells")
    print(f"  eager    : {per_call(lambda: chain(x, y))}")
    print(f"  compiled : {per_call(lambda: fused(x, y))}")
    return times


def mlp_loss(x: Any, onehot: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
    """Mean softmax cross-entropy of a one-hidden-layer ReLU MLP (plain tensor ops)."""
    hidden = (x @ w1 + b1).relu()
    logits = hidden @ w2 + b2
    return (logits.exp().sum(dim=1).log() - (logits * onehot).sum(dim=1)).mean()


def bench_mlp(batch: int, sizes: tuple[int, int, int], repeat: int, lr: float) -> dict[str, float]:
    """Time one training step eager, compiled and in PyTorch; return the times."""
    rng = np.random.default_rng(0)
    xs = rng.random((batch, sizes[0])).astype(np.float32)
    onehots = np.eye(sizes[2], dtype=np.float32)[rng.integers(0, sizes[2], batch)]
    shapes = [(sizes[0], sizes[1]), (sizes[1],), (sizes[1], sizes[2]), (sizes[2],)]
    inits = [(rng.standard_normal(s) * 0.05).astype(np.float32) for s in shapes]
    x, onehot = mf.tensor(xs), mf.tensor(onehots)

    def minifw_step(compiled: str) -> Callable[[], Any]:
        params = [mf.tensor(v, requires_grad=True) for v in inits]
        loss_fn = mf_compile(mlp_loss) if compiled == "fwd-only" else mlp_loss

        def forward_backward(x: Any, onehot: Any) -> Any:
            loss = loss_fn(x, onehot, *params)
            loss.backward()
            return loss

        def update() -> None:
            with mf.no_grad():
                for p in params:
                    p -= lr * p.grad
                    p.grad = None

        def whole_step(x: Any, onehot: Any) -> Any:
            loss = forward_backward(x, onehot)
            update()
            return loss

        if compiled == "compiled":
            return functools.partial(mf_compile(whole_step), x, onehot)
        run = mf_compile(forward_backward) if compiled == "fwd+bwd" else forward_backward

        def step() -> Any:
            loss = run(x, onehot)
            update()
            return loss

        return step

    steps = {name: minifw_step(name) for name in ("eager", "fwd-only", "fwd+bwd", "compiled")}
    for _ in range(3):
        losses = [steps[name]().item() for name in steps]
        assert max(losses) - min(losses) <= 1e-4 * max(1.0, abs(losses[0])), losses
    cases: dict[str, Callable[[], Any]] = dict(steps)
    if torch is not None:
        tx, tonehot = torch.tensor(xs), torch.tensor(onehots)
        tparams = [torch.tensor(v, requires_grad=True) for v in inits]

        def torch_step() -> None:
            loss = mlp_loss(tx, tonehot, *tparams)
            loss.backward()
            with torch.no_grad():
                for p in tparams:
                    p -= lr * p.grad
                    p.grad = None

        cases["torch"] = torch_step
    times = best_times(cases, repeat)
    print(f"mlp step, {'-'.join(map(str, sizes))}, batch {batch}, float32")
    for name, step in steps.items():
        print(f"  {name:9s}: {per_call(step)}")
    return times


def time_classifier(
    make: Callable[[Any], Callable[[Any, Any], Any]], xs: np.ndarray, labels: np.ndarray,
    repeat: int, title: str,
) -> dict[str, float]:  # fmt: skip
    """Time `make(lib)`'s step eager, compiled and in PyTorch, float32; print `title`.

    The eager and compiled steps start from the same weights: their first three losses
    must agree (the first compiled call is the capture, the others replays).
    """
    mf.set_default_dtype(mf.float32)
    try:
        x, y = mf.tensor(xs), mf.tensor(labels)
        eager, compiled = make(mf), mf_compile(make(mf))
        for _ in range(3):
            want, got = eager(x, y).item(), compiled(x, y).item()
            assert abs(want - got) <= 1e-5 * max(1.0, abs(want)), (want, got)
        cases: dict[str, Callable[[], Any]] = {
            "eager": lambda: eager(x, y),
            "compiled": lambda: compiled(x, y),
        }
        if torch is not None:
            tx, ty = torch.tensor(xs), torch.tensor(labels)
            torch_step = make(torch)
            cases["torch"] = lambda: torch_step(tx, ty)
        times = best_times(cases, repeat)
        fallbacks = compiled.stats["fallbacks"] + compiled.stats["eager_calls"]
    finally:
        mf.set_default_dtype(mf.float64)
    print(f"{title}, float32{'' if not fallbacks else f' ({fallbacks} calls ran eagerly)'}")
    return times


def bench_nn_mlp(
    batch: int, sizes: tuple[int, int, int], repeat: int, lr: float, optimizer: str = "SGD"
) -> dict[str, float]:
    """The step as people write it: nn.Linear, cross_entropy on int64 labels, `optimizer`.

    Times minifw eager, the whole step under `mf.compile` (zero_grad, forward, backward
    and the update), and PyTorch eager, float32.
    """
    rng = np.random.default_rng(1)
    xs = rng.random((batch, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[2], batch)

    def make(lib: Any) -> Callable[[Any, Any], Any]:
        lib.manual_seed(0)
        model = lib.nn.Sequential(
            lib.nn.Linear(sizes[0], sizes[1]), lib.nn.ReLU(), lib.nn.Linear(sizes[1], sizes[2])
        )
        return classifier_step(lib, model, optimizer, lr)

    title = f"nn MLP step (Linear, cross_entropy on int64 labels, {optimizer}), batch {batch}"
    return time_classifier(make, xs, labels, repeat, title)


def bench_lenet(batch: int, repeat: int, lr: float) -> dict[str, float]:
    """The digits LeNet step (project/digits.py's DigitsNet) with SGD on 8x8 images.

    PyTorch runs the same layers (conv3x3 pad 1, ReLU, maxpool 2, twice; 64-32-10).
    """
    from project.digits import DigitsNet

    rng = np.random.default_rng(2)
    xs = rng.random((batch, 1, 8, 8)).astype(np.float32)
    labels = rng.integers(0, 10, batch)

    def make(lib: Any) -> Callable[[Any, Any], Any]:
        lib.manual_seed(0)
        if lib is mf:
            return classifier_step(mf, DigitsNet(), "SGD", lr)
        nn = lib.nn
        model = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10),
        )  # fmt: skip
        return classifier_step(lib, model, "SGD", lr)

    title = f"LeNet digits step (DigitsNet, cross_entropy, SGD), batch {batch}, 1x8x8"
    return time_classifier(make, xs, labels, repeat, title)


def report(name: str, times: dict[str, float], targets: dict[str, float]) -> None:
    """Print times and "other / compiled" ratios, with the issue's targets."""
    base = times["compiled"]
    for key, seconds in times.items():
        ratio = "" if key == "compiled" else f"   {key}/compiled = {seconds / base:6.2f}x"
        goal = f" (target >= {targets[key]:g}x)" if key in targets else ""
        print(f"  {name} {key:9s}: {seconds * 1e3:9.3f} ms{ratio}{goal}")


def main() -> None:
    """Parse flags, run both cases, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="cells of the chain")
    parser.add_argument("--batch", type=int, default=64, help="MLP batch size")
    parser.add_argument("--repeat", type=int, default=10, help="timed runs per case")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    parser.add_argument(
        "--threads", type=int, default=0, help="threads for Numba and PyTorch (0: their default)"
    )
    args = parser.parse_args()
    if args.threads:
        import numba

        numba.set_num_threads(args.threads)
        if torch is not None:
            torch.set_num_threads(args.threads)
    n, batch, sizes = args.n, args.batch, (784, 128, 10)
    if args.quick:
        n, batch, sizes = 10_000, 8, (32, 16, 10)
    import numba

    print(f"numba {numba.__version__}, {numba.get_num_threads()} threads", end="")
    print(f"; torch {torch.__version__}, {torch.get_num_threads()} threads" if torch else "")
    targets = {"eager": 3.0, "numpy": 1.0}
    report("chain", bench_chain(n, args.repeat, chain, chain_numpy), targets)
    report("sigmoid", bench_chain(n, args.repeat, sigmoid_chain, sigmoid_chain_numpy), targets)
    report("mlp", bench_mlp(batch, sizes, args.repeat, 0.05), {"torch": 1.0})
    report("nn mlp", bench_nn_mlp(batch, sizes, args.repeat, 0.05), {"torch": 1.3})
    report("mlp adam", bench_nn_mlp(batch, sizes, args.repeat, 1e-3, "Adam"), {})
    report("lenet", bench_lenet(batch, args.repeat, 0.05), {})


if __name__ == "__main__":
    main()
