"""Train the batched points network of task 3.5 on a toy 2-D set, on the fast backend.

    python project/run_fast_tensor.py --dataset split --hidden 100 --points 50 --batch 10
    python -m project.run_fast_tensor --dataset circle --backend cuda

The flags of run_tensor.py, with `--backend fast` as the default; the model is
`project.fast_network.FastNetwork` (one matmul per layer), the network you write in 3.5.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

if __package__ in (None, ""):  # run as a file: make `project` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from project.cli import points_main  # noqa: E402

PROG = "run_fast_tensor"


def main(argv: Sequence[str] | None = None) -> int:
    """Parse `argv` (default: the command line), train FastNetwork, print the summary."""
    from project.fast_network import FastPointsTrainer

    return points_main(argv, PROG, "fast", __doc__.splitlines()[0], FastPointsTrainer)


if __name__ == "__main__":
    raise SystemExit(main())
