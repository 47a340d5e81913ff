"""Which files of minifw does `(a * b).sum().backward()` run through?

A student who follows one expression from the Tensor method down to the kernel and back
through autograd reads these files, in this order. The expression runs on SimpleOps (the
executable specification) with small float64 tensors; only the expression and its
backward are traced (imports and tensor creation happen before the trace starts), and
a file counts when one of its Python functions is called.

    python scripts/reading_path.py            # the files, in first-visit order
    python scripts/reading_path.py --functions  # and the functions called in each
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "minifw"


def trace_files(run: Callable[[], object]) -> dict[str, list[str]]:
    """Call `run` under a profiler; map each minifw file called to its functions, in order."""
    visited: dict[str, list[str]] = {}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        path = Path(frame.f_code.co_filename)
        if path.is_relative_to(PACKAGE):
            functions = visited.setdefault(path.relative_to(REPO).as_posix(), [])
            name = frame.f_code.co_qualname
            if name not in functions:
                functions.append(name)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return visited


def reading_path() -> dict[str, list[str]]:
    """The files (and functions) that `(a * b).sum().backward()` calls on SimpleOps."""
    sys.path.insert(0, str(REPO))
    import minifw as mf

    options: dict[str, Any] = {"dtype": mf.float64, "requires_grad": True, "backend": "simple"}
    a = mf.tensor([[1.0, 2.0], [3.0, 4.0]], **options)
    b = mf.tensor([[0.5, -1.0], [2.0, 0.25]], **options)
    return trace_files(lambda: (a * b).sum().backward())


def main(argv: list[str] | None = None) -> int:
    """Print the reading path; exit status 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", action="store_true", help="list the functions too")
    args = parser.parse_args(argv)
    files = reading_path()
    print(f"(a * b).sum().backward() on SimpleOps calls code in {len(files)} files:")
    for number, (name, functions) in enumerate(files.items(), 1):
        print(f"{number:3d}. {name}")
        if args.functions:
            for function in functions:
                print(f"       {function}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
