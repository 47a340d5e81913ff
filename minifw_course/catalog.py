"""What each module and task asks of students, where the work lives, which app page helps.

The course map itself (ids, modules, titles) is `tasks.py`; this file adds the prose
the docs pages and the generated student READMEs are rendered from. `files` lists
where a task's work lives: every file that fences code for the task (the docs render
the fences, see `docs.task_files`; tests/course/test_docs.py checks the two agree), plus
`project/` for the training tasks.
"""

from __future__ import annotations

from typing import NamedTuple

APP_PAGES = {
    1: "Train",
    2: "Autograd graph",
    3: "Tensor explorer",
    4: "Digits",
    5: "Profiler",
}
APP_COMMAND = "streamlit run project/app.py"
DEFAULT_POINTS = 10.0


class TaskInfo(NamedTuple):
    """The student-facing description of one task."""

    asks: str
    files: tuple[str, ...]
    app_page: int | None = None
    points: float = DEFAULT_POINTS


class ModuleInfo(NamedTuple):
    """The title and introduction of one course module."""

    title: str
    intro: str


MODULE_INFO = {
    0: ModuleInfo(
        "Fundamentals",
        "Scalar math, the first property tests, functional list helpers and the Module "
        "tree that every network in the course is built from.",
    ),
    1: ModuleInfo(
        "Autodiff",
        "A scalar autograd engine in the style of micrograd: numerical derivatives, "
        "Scalar operations that record their history, the chain rule, and "
        "backpropagation in topological order; then a first network trained with it.",
    ),
    2: ModuleInfo(
        "Tensors",
        "Tensors as a flat storage plus shape and strides, broadcasting, the "
        "map/zip/reduce/matmul kernel contract with its pure-Python reference kernels, "
        "and tensor autograd.",
    ),
    3: ModuleInfo(
        "Efficiency",
        "The same kernel contract, fast: parallel Numba CPU kernels and CUDA kernels, "
        "including tiled matrix multiplication, checked against the reference kernels.",
    ),
    4: ModuleInfo(
        "Networks",
        "Convolutions, pooling, softmax and dropout, and a digits classifier trained with them.",
    ),
}

TASK_INFO = {
    "0.1": TaskInfo(
        "Write the scalar functions (arithmetic, comparisons that return 0.0/1.0, max, "
        "min, is_close, an overflow-safe sigmoid, relu, log, exp, inv, tanh, sqrt, abs, "
        "pow) and their derivatives `*_back(x, d)`, which return d times the derivative. "
        "Edge cases follow numpy and PyTorch (log(0) is -inf, relu(nan) is nan).",
        ("minifw/core/operators.py",),
    ),
    "0.2": TaskInfo(
        "Write hypothesis property tests for the operators: symmetry, distributivity, "
        "sigmoid(-x) = 1 - sigmoid(x), the bounds of relu and sigmoid, transitivity of "
        "lt. Build inputs with the strategies in `tests/strategies.py`.",
        ("tests/core/test_operators.py", "tests/strategies.py"),
    ),
    "0.3": TaskInfo(
        "Write the higher-order list functions `map`, `zip_with` and `reduce`, then "
        "`neg_list`, `add_lists`, `sum` and `prod` with them.",
        ("minifw/core/operators.py",),
    ),
    "0.4": TaskInfo(
        "Make `nn.Module` find its parameters and submodules from its attributes: "
        "`parameters()`, `named_parameters()` with dotted names, `children()`, "
        "`modules()`, and `train()` / `eval()` setting `training` on the whole tree.",
        ("minifw/nn/module.py",),
    ),
    "1.1": TaskInfo(
        "Write `central_difference(f, *vals, arg, epsilon)`, the numerical derivative "
        "that checks every gradient in the course.",
        ("minifw/core/autodiff.py",),
        2,
    ),
    "1.2": TaskInfo(
        "Write the forward of each scalar Function (add, mul, div, neg, inv, log, exp, "
        "sigmoid, relu, tanh, comparisons, pow) and the Scalar operators that call them, "
        "so that every result remembers how it was made.",
        ("minifw/scalar/functions.py",),
        2,
    ),
    "1.3": TaskInfo(
        "Write the backward of each scalar Function and `Scalar.chain_rule`, which pairs "
        "every input with its share of the output's derivative.",
        ("minifw/scalar/functions.py", "minifw/scalar/scalar.py"),
        2,
    ),
    "1.4": TaskInfo(
        "Write `topological_sort` (every value before the values it was computed from) "
        "and `backpropagate`, which visits each node once and accumulates derivatives "
        "in the leaves.",
        ("minifw/core/autodiff.py",),
        2,
    ),
    "1.5": TaskInfo(
        "Train a small network built from Scalars on the toy 2-D datasets until it "
        "reaches the accuracy the tests ask for.",
        ("project/",),
        1,
    ),
    "2.1": TaskInfo(
        "Write the index math of strided storage: `index_to_position`, `to_index`, "
        "`strides_from_shape`, and `permute` as a view that only reorders shape and "
        "strides.",
        ("minifw/core/tensor_data.py",),
        3,
    ),
    "2.2": TaskInfo(
        "Write broadcasting: `shape_broadcast` (numpy/PyTorch rules, with an error that "
        "names both shapes) and `broadcast_index`, which maps an index of the big shape "
        "to an index of a smaller one.",
        ("minifw/core/tensor_data.py",),
        3,
    ),
    "2.3": TaskInfo(
        "Write the reference kernels of `SimpleOps` (map, zip, reduce, matmul) over "
        "(storage, shape, strides) triples, and the forward of each tensor Function.",
        ("minifw/simple_ops.py", "minifw/tensor/functions.py"),
        3,
    ),
    "2.4": TaskInfo(
        "Write the backward of each tensor Function, summing gradients back to the shape "
        "of a broadcast input.",
        ("minifw/tensor/functions.py",),
        2,
    ),
    "2.5": TaskInfo(
        "Train a tensor network on the toy 2-D datasets to the accuracy the tests ask for.",
        ("project/",),
        1,
    ),
    "3.1": TaskInfo(
        "Write the parallel Numba CPU kernels map, zip and reduce: `prange` over output "
        "cells, thread-local index buffers, and a fast path for contiguous same-shape "
        "inputs.",
        ("minifw/fast_ops.py",),
        5,
    ),
    "3.2": TaskInfo(
        "Write the CPU matmul kernel: batch dims broadcast, parallel outer loop, tiled "
        "for the cache, no allocation in the inner loop.",
        ("minifw/fast_ops.py",),
        5,
    ),
    "3.3": TaskInfo(
        "Write the CUDA kernels map, zip and reduce (the reduce finishes in one launch) "
        "and their launch sizes. Without a GPU, test with NUMBA_ENABLE_CUDASIM=1.",
        ("minifw/cuda_ops.py",),
        5,
    ),
    "3.4": TaskInfo(
        "Write the CUDA matmul kernel tiled in shared memory.",
        ("minifw/cuda_ops.py",),
        5,
    ),
    "3.5": TaskInfo(
        "Train the tensor network again on the fast backend and compare the time per "
        "epoch with the reference kernels.",
        ("minifw/tools/profiler.py", "project/"),
        1,
    ),
    "4.1": TaskInfo(
        "Write 1-D convolution (forward and backward) with PyTorch's argument order and "
        "output shape.",
        ("minifw/nn/conv.py",),
        4,
    ),
    "4.2": TaskInfo(
        "Write 2-D convolution (forward and backward) with PyTorch's argument order and "
        "output shape.",
        ("minifw/nn/conv.py",),
        4,
    ),
    "4.3": TaskInfo(
        "Write average and max pooling over 2-D windows.",
        ("minifw/nn/conv.py",),
        4,
    ),
    "4.4": TaskInfo(
        "Write max along a dim (values and indices, with its gradient), softmax and "
        "log-softmax (numerically stable), and dropout (off in eval mode).",
        ("minifw/nn/activation.py",),
        4,
    ),
    "4.5": TaskInfo(
        "Train the digits classifier (8x8 scikit-learn digits) to the accuracy the tests ask for.",
        ("minifw/nn/losses.py", "project/"),
        4,
    ),
}


def app_page_text(page: int | None) -> str:
    """Say which page of the streamlit app helps with a task ("" for none)."""
    if page is None:
        return ""
    return f"app page {page} ({APP_PAGES[page]}): `{APP_COMMAND}`"
