"""Train the LeNet-style digits classifier (course task 4.5) and report test accuracy.

    python project/run_digits.py                  # the embedded 8x8 digits, no download
    python -m project.run_digits --mnist ~/data/mnist --epochs 3 --limit 10000

With no flags it trains on scikit-learn's bundled digits with the defaults of
project/digits.py and reaches at least 95% test accuracy.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

if __package__ in (None, ""):  # run as a file: make `project` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from project.cli import base_parser, check_args, train_and_report  # noqa: E402
from project.digits import DEFAULTS, DigitsTrainer  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    """Parse `argv` (default: the command line), train, print the summary."""
    parser = base_parser("run_digits", __doc__.splitlines()[0], "fast")
    parser.add_argument("--mnist", metavar="DIR", help="train on MNIST IDX files in DIR")
    parser.add_argument("--limit", type=int, metavar="N", help="use the first N train images")
    parser.add_argument("--hidden", type=int, help=f"hidden width (default {DEFAULTS.hidden})")
    args = parser.parse_args(argv)
    check_args(parser, args)
    if args.limit is not None and args.limit < 1:
        parser.error(f"--limit must be positive, got {args.limit}")
    if args.mnist is not None and not os.path.isdir(args.mnist):
        parser.error(f"--mnist: {args.mnist} is not a directory")
    trainer = DigitsTrainer(
        mnist=args.mnist,
        lr=args.lr,
        batch=args.batch,
        hidden=args.hidden,
        optimizer=args.optimizer,
        backend=args.backend,
        seed=args.seed,
        limit=args.limit,
    )
    return train_and_report("run_digits", trainer, args, DEFAULTS.epochs)


if __name__ == "__main__":
    raise SystemExit(main())
