"""Train a tiny MLP made of Scalars on a toy 2-D dataset (course task 1.5).

    python project/run_scalar.py --dataset simple
    python -m project.run_scalar --dataset xor --hidden 10 --epochs 1000

Prints loss, accuracy and time per epoch every `--log-every` epochs, then a summary.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

if not __package__:  # run as a script: make `project` and `minifw` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from minifw.datasets import DATASETS  # noqa: E402
from project.scalar_model import accuracy, train_scalar  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    """The command-line flags."""
    parser = argparse.ArgumentParser(description="Train a Scalar MLP on a toy 2-D dataset.")
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="simple")
    parser.add_argument("--points", type=int, default=50, help="number of points")
    parser.add_argument("--hidden", type=int, default=2, help="hidden units")
    parser.add_argument("--lr", type=float, default=0.5, help="learning rate")
    parser.add_argument("--epochs", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and weights")
    parser.add_argument("--log-every", type=int, default=50, help="print every N epochs")
    parser.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Train with the flags in `argv` (default: the command line); return the exit status."""
    args = build_parser().parse_args(argv)
    if args.points < 1 or args.hidden < 1 or args.epochs < 1 or args.lr <= 0:
        build_parser().error("--points, --hidden and --epochs must be >= 1 and --lr > 0")
    data = DATASETS[args.dataset](args.points, args.seed)
    print(
        f"dataset {args.dataset}: {data.n} points, MLP 2-{args.hidden}-1 (tanh), "
        f"lr {args.lr}, {args.epochs} epochs"
    )
    bar = None
    if not args.no_progress:
        try:
            from tqdm import tqdm
        except ImportError:  # the progress bar is optional: plain lines still report
            tqdm = None
        if tqdm is not None:
            bar = tqdm(total=args.epochs, unit="epoch", leave=False, file=sys.stderr)
    say = print if bar is None else bar.write

    def log(epoch: int, loss: float, acc: float, seconds: float) -> None:
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.4f}", acc=f"{acc:.0%}")
        if epoch % args.log_every == 0 or epoch == 1 or epoch == args.epochs:
            say(
                f"epoch {epoch:5d}  loss {loss:.4f}  accuracy {acc:6.1%}  "
                f"time/epoch {seconds * 1e3:7.2f} ms"
            )

    start = time.perf_counter()
    model = train_scalar(data, args.hidden, args.lr, args.epochs, log, seed=args.seed)
    elapsed = time.perf_counter() - start
    if bar is not None:
        bar.close()
    final = accuracy(model, data)
    print(
        f"final: {args.dataset} accuracy {final:.1%} after {args.epochs} epochs in "
        f"{elapsed:.2f} s ({elapsed / args.epochs * 1e3:.2f} ms/epoch)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
