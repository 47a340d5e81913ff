"""Train a tensor MLP on a toy 2-D set (course task 2.5), on the pure-Python backend.

    python project/run_tensor.py --dataset xor
    python -m project.run_tensor --dataset spiral --backend fast --plot spiral.png

Every flag has a per-dataset default (see `DEFAULTS` in project/points.py); with
them every dataset reaches at least 95% training accuracy.
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
    return points_main(argv, "run_tensor", "simple", __doc__.splitlines()[0])


if __name__ == "__main__":
    raise SystemExit(main())
