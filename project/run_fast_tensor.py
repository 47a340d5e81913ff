"""Train a tensor MLP on a toy 2-D set (course task 3.5), on the fast Numba backend.

    python project/run_fast_tensor.py --dataset split --hidden 100 --points 50 --batch 10
    python -m project.run_fast_tensor --dataset circle --backend cuda

The same script as run_tensor.py with `--backend fast` as its default.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

if __package__ in (None, ""):  # run as a file: make `project` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from project.cli import points_main  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    """Parse `argv` (default: the command line), train, print the summary."""
    return points_main(argv, "run_fast_tensor", "fast", __doc__.splitlines()[0])


if __name__ == "__main__":
    raise SystemExit(main())
