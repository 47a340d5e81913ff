"""Check minifw's CUDA backend on a real GPU: correctness, then speed beside PyTorch CUDA.

Run from the repository root on a machine with an NVIDIA GPU:

    python bench/gpu_check.py                                  # full sizes, under 5 minutes
    NUMBA_ENABLE_CUDASIM=1 python bench/gpu_check.py --tiny    # same code, tiny sizes

It prints, in one run:
1. correctness: the max abs error of the "cuda" backend against the CPU backend on
   permuted, sliced and broadcast layouts, odd sizes and broadcast batches;
2. matmul at 1024/2048/4096 (float32 and float64): time and GFLOP/s for minifw's tiled
   kernel and for cuBLAS, called through CuPy where it is installed, else through
   PyTorch CUDA (TF32 off, so both do full-precision float32);
3. map / zip / reduce throughput in GB/s (bytes read + written per second) on 1e7 cells;
4. one SGD step of the 784-128-10 MLP on device "cuda", if minifw's tensor API is there.

Every time is the best of `--repeat` runs after a warm-up run (which compiles the
kernels), with `cuda.synchronize()` before and after each timed call. minifw's times
include what a tensor operation pays: checks, output allocation and launch. The exit
status is 1 when a correctness check fails.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from minifw.backends import cuda_available, get_backend  # noqa: E402
from minifw.core import operators as ops  # noqa: E402

FULL = {
    "matmul": (1024, 2048, 4096), "cells": 10_000_000, "rows": 10_000,
    "mlp_batches": (64, 1024), "mlp_widths": (784, 128, 10),
}  # fmt: skip
TINY = {
    "matmul": (4, 8, 12), "cells": 512, "rows": 16,
    "mlp_batches": (4,), "mlp_widths": (12, 8, 4),
}  # fmt: skip
CPU_BACKEND = "fast"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny sizes (for the simulator)")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per case")
    args = parser.parse_args()
    sizes = TINY if args.tiny else FULL
    repeat = args.repeat or (1 if args.tiny else 5)
    if not cuda_available():
        print("no CUDA GPU here (set NUMBA_ENABLE_CUDASIM=1 to try the simulator)")
        return 2
    from numba import cuda

    torch = cuda_torch()
    start = time.perf_counter()
    header(cuda, torch)
    failures = correctness(tiny=args.tiny)
    matmul_table(cuda, torch, sizes["matmul"], repeat)
    throughput_table(cuda, torch, sizes["cells"], sizes["rows"], repeat)
    mlp_table(cuda, torch, sizes["mlp_batches"], sizes["mlp_widths"], repeat)
    verdict = "all checks passed" if not failures else f"FAILED {', '.join(failures)}"
    print(f"\ntotal {time.perf_counter() - start:.1f} s; correctness: {verdict}")
    return 1 if failures else 0


def cuda_torch() -> Any:
    """PyTorch if it is installed with a usable CUDA device, else None."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def header(cuda: Any, torch: Any) -> None:
    import numba

    if numba.config.ENABLE_CUDASIM:
        print("device: Numba's CUDA simulator, on the CPU (times mean nothing here)")
    else:
        device = cuda.get_current_device()
        name = device.name.decode() if isinstance(device.name, bytes) else device.name
        print(f"device: {name}, compute capability {device.compute_capability}")
    print(f"numba {numba.__version__}, numba.cuda: {getattr(cuda, 'implementation', '?')}"
          f"{' (SIMULATOR)' if numba.config.ENABLE_CUDASIM else ''}")  # fmt: skip
    print(f"PyTorch CUDA: {torch.__version__ if torch else 'not available'}")


# 1. Correctness -------------------------------------------------------------------------


def correctness(tiny: bool) -> list[str]:
    """Compare every kernel on "cuda" with the CPU backend; return the failed cases."""
    print(f"\n1. correctness: cuda vs {CPU_BACKEND!r} (max abs error)")
    gpu, cpu = get_backend("cuda"), get_backend(CPU_BACKEND)
    rng = np.random.default_rng(0)
    n = 5 if tiny else 37
    x = rng.uniform(-2, 2, size=(n, n + 2, 3))
    y = rng.uniform(-2, 2, size=(n + 2, 1))
    f32 = np.float32
    a3, b3 = rng.uniform(-1, 1, size=(2, n, n + 3)), rng.uniform(-1, 1, size=(1, n + 3, n + 9))
    cases: list[tuple[str, Callable[[Any, Any], Any]]] = [
        ("map exp, permuted", lambda be, t: be.map(ops.EXP, t(x).permute(2, 0, 1))),
        ("map sigmoid, sliced", lambda be, t: be.map(ops.SIGMOID, t(x).narrow(1, slice(1, 9, 2)))),
        ("zip mul, broadcast", lambda be, t: be.zip(ops.MUL, t(x), t(y))),
        ("zip pow, permuted", lambda be, t: be.zip(ops.POW, t(np.abs(x)), t(x).permute(0, 1, 2))),
        ("reduce add dim 0", lambda be, t: be.reduce(ops.ADD, t(x), 0)),
        ("reduce max dim 1, permuted", lambda be, t: be.reduce(ops.MAX, t(x).permute(1, 2, 0), 1)),
        ("reduce mul dim 2", lambda be, t: be.reduce(ops.MUL, t(x), 2)),
        ("matmul odd sizes, broadcast batch", lambda be, t: be.matmul(t(a3), t(b3))),
        ("matmul transposed operand", lambda be, t: be.matmul(t(a3[0]).permute(1, 0), t(a3[1]))),
        ("matmul float32", lambda be, t: be.matmul(t(a3.astype(f32)), t(b3.astype(f32)))),
    ]  # fmt: skip
    failures = []
    for name, case in cases:
        got = gpu.to_numpy(case(gpu, gpu.from_numpy))
        want = cpu.to_numpy(case(cpu, cpu.from_numpy))
        error = float(np.max(np.abs(got - want))) if got.size else 0.0
        tolerance = 1e-4 if got.dtype == np.float32 else 1e-9
        scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
        ok = got.shape == want.shape and got.dtype == want.dtype and error <= tolerance * scale
        print(f"  {name:<36} {str(got.shape):>14} {got.dtype!s:>8}  {error:9.2e}  "
              f"{'ok' if ok else 'FAIL'}")  # fmt: skip
        if not ok:
            failures.append(name)
    return failures


# 2. matmul ------------------------------------------------------------------------------


def best_time(fn: Callable[[], Any], sync: Callable[[], Any], repeat: int) -> float:
    """The best wall time of `repeat` synchronised calls of `fn`, after one warm-up call."""
    fn()
    sync()
    best = float("inf")
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


class Cublas:
    """cuBLAS's matmul through CuPy (if installed) or PyTorch CUDA: name, copy, product."""

    def __init__(self, torch: Any) -> None:
        try:
            import cupy

            self.name = f"CuPy {cupy.__version__}"
            self.to_device, self.to_host = cupy.asarray, cupy.asnumpy
            self.sync = cupy.cuda.Device().synchronize
        except ImportError:
            if torch is None:
                raise
            self.name = f"PyTorch {torch.__version__}"
            self.to_device = lambda a: torch.from_numpy(a).cuda()
            self.to_host = lambda t: t.cpu().numpy()
            self.sync = torch.cuda.synchronize


def cublas(torch: Any) -> Cublas | None:
    """A way to call cuBLAS here, or None (neither CuPy nor PyTorch CUDA installed)."""
    try:
        return Cublas(torch)
    except ImportError:
        return None


def matmul_table(cuda: Any, torch: Any, sizes: tuple[int, ...], repeat: int) -> None:
    blas = cublas(torch)
    print(
        "\n2. matmul n x n @ n x n: time (ms) and GFLOP/s; vs cuBLAS = its time / minifw's; "
        "err = max abs diff vs cuBLAS (or numpy)"
    )
    print(f"  cuBLAS through: {blas.name if blas else 'nothing installed (CuPy or PyTorch CUDA)'}")
    print(f"  {'n':>5} {'dtype':>8} {'minifw ms':>10} {'GFLOP/s':>9} {'cuBLAS ms':>10} "
          f"{'GFLOP/s':>9} {'vs cuBLAS':>14} {'err':>9}")  # fmt: skip
    gpu = get_backend("cuda")
    rng = np.random.default_rng(1)
    for n in sizes:
        for dtype in (np.float32, np.float64):
            a, b = (rng.uniform(-1, 1, size=(n, n)).astype(dtype) for _ in range(2))
            da, db = gpu.from_numpy(a), gpu.from_numpy(b)
            t_mf = best_time(lambda da=da, db=db: gpu.matmul(da, db), cuda.synchronize, repeat)
            got = gpu.to_numpy(gpu.matmul(da, db))
            flops = 2.0 * n**3
            line = (
                f"  {n:>5} {np.dtype(dtype).name:>8} {t_mf * 1e3:10.3f} {flops / t_mf / 1e9:9.1f}"
            )
            if blas is not None:
                ba, bb = blas.to_device(a), blas.to_device(b)
                t_bl = best_time(lambda ba=ba, bb=bb: ba @ bb, blas.sync, repeat)
                want = blas.to_host(ba @ bb)
                line += f" {t_bl * 1e3:10.3f} {flops / t_bl / 1e9:9.1f} {t_bl / t_mf:14.3f}"
            else:
                want = a.astype(np.float64) @ b.astype(np.float64) if n <= 1024 else None
                line += f" {'-':>10} {'-':>9} {'-':>14}"
            error = "-" if want is None else f"{float(np.max(np.abs(got - want))):.2e}"
            print(f"{line} {error:>9}")


# 3. map / zip / reduce throughput -------------------------------------------------------


Case = tuple[str, int, Callable[[], Any], Callable[[], Any] | None]


def throughput_table(cuda: Any, torch: Any, cells: int, rows: int, repeat: int) -> None:
    print(f"\n3. throughput on {cells:.0e} cells: GB/s = bytes read + written / time")
    print(f"  {'case':<36} {'dtype':>8} {'minifw ms':>10} {'GB/s':>8} {'torch ms':>10} "
          f"{'GB/s':>8}")  # fmt: skip
    for dtype in (np.float32, np.float64):
        host = np.random.default_rng(2).uniform(-1, 1, size=(rows, cells // rows)).astype(dtype)
        for name, passes, ours, theirs in throughput_cases(torch, host):
            moved = passes * host.nbytes
            t_mf = best_time(ours, cuda.synchronize, repeat)
            line = f"  {name:<36} {host.dtype.name:>8} {t_mf * 1e3:10.3f}"
            line += f" {moved / t_mf / 1e9:8.1f}"
            if theirs is not None:
                t_th = best_time(theirs, torch.cuda.synchronize, repeat)
                line += f" {t_th * 1e3:10.3f} {moved / t_th / 1e9:8.1f}"
            print(line)


def throughput_cases(torch: Any, host: np.ndarray) -> list[Case]:
    """(name, passes over the data, minifw call, PyTorch call or None) on a 2-D array."""
    gpu = get_backend("cuda")
    rows, cols = host.shape
    x, r = gpu.from_numpy(host), gpu.from_numpy(host[:1])
    flat = x.view((host.size,))
    cases: list[Case] = [
        ("map exp, contiguous", 2, lambda: gpu.map(ops.EXP, x), None),
        ("map id, transposed (a copy)", 2, lambda: gpu.map(ops.ID, x.permute(1, 0)), None),
        ("zip add, contiguous", 3, lambda: gpu.zip(ops.ADD, x, x), None),
        ("zip add, broadcast row", 2, lambda: gpu.zip(ops.ADD, x, r), None),
        (f"reduce add rows ({rows} x {cols}, dim 1)", 1, lambda: gpu.reduce(ops.ADD, x, 1), None),
        ("reduce add columns (dim 0)", 1, lambda: gpu.reduce(ops.ADD, x, 0), None),
        ("reduce add all (1-D, one out cell)", 1, lambda: gpu.reduce(ops.ADD, flat, 0), None),
    ]
    if torch is None:
        return cases
    xt, rt = torch.from_numpy(host).cuda(), torch.from_numpy(host[:1]).cuda()
    theirs = [
        lambda: xt.exp(), lambda: xt.t().contiguous(), lambda: xt + xt, lambda: xt + rt,
        lambda: xt.sum(1, keepdim=True), lambda: xt.sum(0, keepdim=True), lambda: xt.sum(),
    ]  # fmt: skip
    return [(name, n, ours, th) for (name, n, ours, _), th in zip(cases, theirs, strict=True)]


# 4. MLP training step -------------------------------------------------------------------


def mlp_table(
    cuda: Any, torch: Any, batches: tuple[int, ...], widths: tuple[int, int, int], repeat: int
) -> None:
    print(f"\n4. one SGD step of a {'-'.join(map(str, widths))} ReLU MLP (float64) on 'cuda'")
    try:
        import minifw as mf
    except Exception as error:  # noqa: BLE001 - report and go on: the rest has run
        print(f"  skipped: import minifw failed ({type(error).__name__}: {error})")
        return
    for batch in batches:
        try:
            variant, step = minifw_mlp_step(mf, batch, widths)
            t_mf = best_time(step, cuda.synchronize, repeat)
        except Exception as error:  # noqa: BLE001 - the tensor API may be incomplete
            print(f"  batch {batch}: skipped, minifw lacks part of the API "
                  f"({type(error).__name__}: {error})")  # fmt: skip
            return
        line = f"  batch {batch:>5}: minifw {t_mf * 1e3:9.3f} ms"
        if torch is not None:
            step = torch_mlp_step(torch, batch, widths)
            t_th = best_time(step, torch.cuda.synchronize, repeat)
            line += f", torch {t_th * 1e3:9.3f} ms, torch/minifw {t_th / t_mf:.3f}"
        print(f"{line}  [{variant}]")


def mlp_data(batch: int, widths: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    return rng.random((batch, widths[0])), rng.integers(0, widths[2], batch)


def minifw_mlp_step(
    mf: Any, batch: int, widths: tuple[int, int, int]
) -> tuple[str, Callable[[], Any]]:
    """(variant, step): nn.Linear + cross_entropy + optim.SGD if present, else tensor ops."""
    n_in, hidden, n_out = widths
    x_np, y_np = mlp_data(batch, widths)
    x, y = mf.tensor(x_np, device="cuda"), mf.tensor(y_np, device="cuda")
    nn = getattr(mf, "nn", None)
    if all(hasattr(nn, name) for name in ("Sequential", "Linear", "ReLU")) and hasattr(
        getattr(mf, "optim", None), "SGD"
    ):
        model = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, n_out))
        model = model.to("cuda")
        opt = mf.optim.SGD(model.parameters(), lr=0.05)

        def nn_step() -> Any:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return float(loss.item())

        return "nn.Sequential + cross_entropy + optim.SGD", nn_step
    rng = np.random.default_rng(4)
    params = [
        mf.tensor(rng.standard_normal(shape) * 0.05, requires_grad=True, device="cuda")
        for shape in ((n_in, hidden), (hidden,), (hidden, n_out), (n_out,))
    ]
    onehot = mf.tensor(np.eye(n_out)[y_np], device="cuda")

    def tensor_step() -> Any:
        w1, b1, w2, b2 = params
        logits = (x @ w1 + b1).relu() @ w2 + b2
        shifted = logits - logits.max(dim=1, keepdim=True)[0].detach()
        loss = -((shifted - shifted.exp().sum(dim=1, keepdim=True).log()) * onehot).sum() / batch
        for p in params:
            p.grad = None
        loss.backward()
        with mf.no_grad():
            for p in params:
                p -= 0.05 * p.grad
        return float(loss.item())

    return "tensor ops (no nn.Sequential/optim.SGD yet)", tensor_step


def torch_mlp_step(torch: Any, batch: int, widths: tuple[int, int, int]) -> Callable[[], Any]:
    n_in, hidden, n_out = widths
    x_np, y_np = mlp_data(batch, widths)
    x, y = torch.from_numpy(x_np).cuda(), torch.from_numpy(y_np).cuda()
    nn = torch.nn
    model = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, n_out))
    model = model.double().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    def step() -> Any:
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return float(loss.item())

    return step


if __name__ == "__main__":
    sys.exit(main())
