"""The course map: every task's id, module and title (DESIGN.md, "The course map")."""

from __future__ import annotations

from typing import NamedTuple


class Task(NamedTuple):
    """One course task: `id` like "2.3", its module number and a one-line title."""

    id: str
    module: int
    title: str

    @property
    def marker(self) -> str:
        """The pytest marker of this task's tests, e.g. "task2_3"."""
        return "task" + self.id.replace(".", "_")


TASKS = (
    Task("0.1", 0, "operators"),
    Task("0.2", 0, "property tests"),
    Task("0.3", 0, "list map/zip/reduce"),
    Task("0.4", 0, "Module tree"),
    Task("1.1", 1, "central difference"),
    Task("1.2", 1, "Scalar forwards"),
    Task("1.3", 1, "chain rule"),
    Task("1.4", 1, "topological sort and backpropagation"),
    Task("1.5", 1, "scalar training"),
    Task("2.1", 2, "strides, indexing, permute"),
    Task("2.2", 2, "broadcasting"),
    Task("2.3", 2, "SimpleOps kernels and tensor forwards"),
    Task("2.4", 2, "tensor backwards"),
    Task("2.5", 2, "tensor training"),
    Task("3.1", 3, "FastOps map/zip/reduce"),
    Task("3.2", 3, "fast matmul"),
    Task("3.3", 3, "CUDA map/zip/reduce"),
    Task("3.4", 3, "CUDA tiled matmul"),
    Task("3.5", 3, "fast training"),
    Task("4.1", 4, "conv1d"),
    Task("4.2", 4, "conv2d"),
    Task("4.3", 4, "pooling"),
    Task("4.4", 4, "softmax, log-softmax, max, dropout"),
    Task("4.5", 4, "digits classifier training"),
)
COURSE_TASKS = tuple(task.id for task in TASKS)
MODULES = sorted({task.module for task in TASKS})


def tasks_of_module(module: int) -> list[Task]:
    """The tasks of one course module, in order."""
    return [task for task in TASKS if task.module == module]


def has_cuda_tasks(module: int) -> bool:
    """True for the module whose tasks are CUDA kernels (graded on Numba's simulator)."""
    return any(task.module == module and "CUDA" in task.title for task in TASKS)
