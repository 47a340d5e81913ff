"""Train a tiny MLP made of Scalars on a toy 2-D dataset (course task 1.5).

    python project/run_scalar.py --dataset simple
    python -m project.run_scalar --dataset xor --hidden 10 --epochs 1000 --plot xor.png

Full-batch SGD on a 2-hidden-1 tanh MLP whose every weight is a `minifw.Scalar`.
Prints loss, accuracy and time per epoch every `--log-every` epochs, then a summary;
every flag has a per-dataset default (`SCALAR_DEFAULTS` in project/points.py).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

if not __package__:  # run as a script: make `project` and `minifw` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from project.cli import check_args, points_parser, train_and_report  # noqa: E402
from project.points import SCALAR_DEFAULTS, ScalarTrainer  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    """Train with the flags in `argv` (default: the command line); return the exit status."""
    parser = points_parser("run_scalar", "Train a Scalar MLP on a toy 2-D dataset.", None)
    args = parser.parse_args(argv)
    check_args(parser, args)
    trainer = ScalarTrainer(args.dataset, args.points, args.hidden, args.lr, args.seed)
    return train_and_report("run_scalar", trainer, args, SCALAR_DEFAULTS[args.dataset].epochs)


if __name__ == "__main__":
    sys.exit(main())
