"""What each module and task asks of students, where the work lives, which app page helps.

The course map itself (ids, modules, titles) is `tasks.py`; this file adds the prose
the docs pages and the generated student READMEs are rendered from. Where a task's work
lives is read from the fences (`docs.task_files`), so the two cannot disagree; `also`
lists only what no fence can mark: `project/` for the training tasks, and the files of
a task whose work is not a fenced function.
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
    app_page: int | None = None
    also: tuple[str, ...] = ()  # work outside the fences (`project/`, test files)
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
    ),
    "0.2": TaskInfo(
        "Write the property checks of the operators, each a function that asserts one "
        "law for given inputs: symmetry, distributivity, sigmoid(-x) = 1 - sigmoid(x) "
        "and its bounds, max/min, agreeing comparisons, monotonicity, log/exp. The tests "
        "run them with hypothesis on the real operators, where they must pass, and on "
        "broken ones, where they must fail.",
    ),
    "0.3": TaskInfo(
        "Write the higher-order list functions `map`, `zip_with` and `reduce`, then "
        "`neg_list`, `add_lists`, `sum` and `prod` with them.",
    ),
    "0.4": TaskInfo(
        "Make `nn.Module` walk its tree: `named_children()`, `named_modules()` with "
        "dotted names, the shared walk behind `named_parameters()` and `named_buffers()`, "
        "and `train()` setting `training` on every module of the tree.",
    ),
    "1.1": TaskInfo(
        "Write `central_difference(f, *vals, arg, epsilon)`, the numerical derivative "
        "that checks every gradient in the course.",
    ),
    "1.2": TaskInfo(
        "Write the forward of each scalar Function (add, sub, mul, div, neg, pow, exp, "
        "log, sigmoid, relu, tanh and the comparisons): the value of the result, with what "
        "the backward will need saved on the context.",
        app_page=2,
    ),
    "1.3": TaskInfo(
        "Write the backward of each scalar Function and `Scalar.chain_rule`, which pairs "
        "every input with its share of the output's derivative.",
        app_page=2,
    ),
    "1.4": TaskInfo(
        "Write `topological_sort` (every value before the values it was computed from) "
        "and `backpropagate`, which visits each node once and accumulates derivatives "
        "in the leaves.",
        app_page=2,
    ),
    "1.5": TaskInfo(
        "Write the forward pass of a small network of Scalars (a linear layer and the "
        "MLP) and its training step (loss, backward, a manual SGD update), then train it "
        "on the toy 2-D datasets to the accuracy the tests ask for.",
        app_page=1,
        also=("project/",),
    ),
    "2.1": TaskInfo(
        "Write the index math of strided storage: `index_to_position`, `to_index`, "
        "`strides_from_shape`, and `permute` as a view that only reorders shape and "
        "strides.",
        app_page=3,
    ),
    "2.2": TaskInfo(
        "Write broadcasting: `shape_broadcast` (numpy/PyTorch rules, with an error that "
        "names both shapes) and `broadcast_index`, which maps an index of the big shape "
        "to an index of a smaller one.",
        app_page=3,
    ),
    "2.3": TaskInfo(
        "Write the reference kernels of `SimpleOps` (map, zip, reduce, matmul) over "
        "(storage, shape, strides) triples, and the forward of each tensor Function.",
        app_page=2,
    ),
    "2.4": TaskInfo(
        "Write the backward of each tensor Function, summing gradients back to the shape "
        "of a broadcast input.",
        app_page=2,
    ),
    "2.5": TaskInfo(
        "Train a tensor network on the toy 2-D datasets to the accuracy the tests ask for.",
        app_page=1,
        also=("project/",),
    ),
    "3.1": TaskInfo(
        "Write the parallel Numba CPU kernels map, zip and reduce: `prange` over output "
        "cells, thread-local index buffers, and a fast path when every operand is "
        "contiguous with the output's shape (the given `_same_dense` tells you).",
        app_page=5,
    ),
    "3.2": TaskInfo(
        "Write the CPU matmul kernel: batch dims broadcast, parallel outer loop, tiled "
        "for the cache, no allocation in the inner loop.",
        app_page=5,
    ),
    "3.3": TaskInfo(
        "Write the CUDA kernels map and zip (grid-stride loops) and reduce (in shared "
        "memory, finishing in one launch). Without a GPU, test with NUMBA_ENABLE_CUDASIM=1.",
        app_page=5,
    ),
    "3.4": TaskInfo(
        "Write the CUDA matmul kernel tiled in shared memory.",
        app_page=5,
    ),
    "3.5": TaskInfo(
        "Write a network for speed: a batched linear layer that is one matmul plus a "
        "bias for the whole batch, and the 2-layer ReLU network built from it; the tests "
        "train it on the fast backend.",
        app_page=1,
        also=("project/",),
    ),
    "4.1": TaskInfo(
        "Write 1-D convolution (forward and backward) with PyTorch's argument order and "
        "output shape.",
        app_page=4,
    ),
    "4.2": TaskInfo(
        "Write 2-D convolution (forward and backward) with PyTorch's argument order and "
        "output shape.",
        app_page=4,
    ),
    "4.3": TaskInfo(
        "Write average and max pooling over 2-D windows.",
        app_page=4,
    ),
    "4.4": TaskInfo(
        "Write max along a dim (values and indices, with its gradient), softmax and "
        "log-softmax (numerically stable), and dropout (off in eval mode).",
        app_page=4,
    ),
    "4.5": TaskInfo(
        "Write the digits network's forward pass (two conv-ReLU-pool stages, then two "
        "linear layers) and one training epoch (shuffle, batches, zero_grad, forward, "
        "cross-entropy, backward, step); the tests train it on a small subset of the 8x8 "
        "scikit-learn digits.",
        app_page=4,
        also=("project/",),
    ),
}


def app_page_text(page: int | None) -> str:
    """Say which page of the streamlit app helps with a task ("" for none)."""
    if page is None:
        return ""
    return f"app page {page} ({APP_PAGES[page]}): `{APP_COMMAND}`"
