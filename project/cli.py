"""The command line shared by the run_*.py scripts: flags, progress, logs, checkpoints.

Every script builds a Trainer from its flags and hands it to `run`, which drives the
shared loop with a tqdm bar, prints a log line every `--log-every` epochs and a final
summary line, saves/resumes checkpoints and writes the `--plot` figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from tqdm import tqdm

from minifw.datasets import DATASETS
from project.kernels import CompileNotices
from project.training import BACKENDS, EpochRecord, Trainer, final_figures


def base_parser(prog: str, description: str, backend: str | None) -> argparse.ArgumentParser:
    """A parser with the flags every script shares.

    Args:
        prog: the script's name.
        description: one line for --help.
        backend: the default of --backend; None for the Scalar engine, which has no
            backend, minibatches or optimizer choice (full-batch SGD).
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--epochs", type=int, help="epochs to train (default: per dataset)")
    parser.add_argument("--lr", type=float, help="learning rate (default: per dataset)")
    if backend is not None:
        parser.add_argument("--batch", type=int, help="minibatch size (default: per dataset)")
        parser.add_argument("--optimizer", choices=("sgd", "adam"), help="default: per dataset")
        parser.add_argument(
            "--backend", choices=BACKENDS, default=backend, help=f"kernels (default: {backend})"
        )
    parser.add_argument("--seed", type=int, default=0, help="seed of data and weights")
    parser.add_argument("--checkpoint", metavar="PATH", help="save a checkpoint here")
    parser.add_argument(
        "--resume", action="store_true", help="continue from --checkpoint PATH up to --epochs"
    )
    parser.add_argument(
        "--log-every", type=int, metavar="N", help="a log line every N epochs (default: 10 lines)"
    )
    parser.add_argument("--plot", metavar="OUT.png", help="save the loss curve (and boundary)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def points_parser(prog: str, description: str, backend: str | None) -> argparse.ArgumentParser:
    """`base_parser` plus the 2-D flags: dataset, points, hidden size."""
    parser = base_parser(prog, description, backend)
    parser.add_argument("--dataset", choices=tuple(DATASETS), default="simple")
    parser.add_argument("--points", type=int, help="number of points (default: per dataset)")
    parser.add_argument("--hidden", type=int, help="hidden layer size (default: per dataset)")
    return parser


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject flag values that cannot work, with argparse's usage message."""
    for name in ("epochs", "batch", "points", "hidden", "log_every"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {value}")
    if args.lr is not None and args.lr <= 0:
        parser.error(f"--lr must be positive, got {args.lr}")
    if args.resume and not args.checkpoint:
        parser.error("--resume needs --checkpoint PATH")
    if args.resume and not os.path.exists(args.checkpoint):
        parser.error(f"cannot resume: {args.checkpoint} does not exist")


def run(
    trainer: Trainer,
    epochs: int,
    *,
    log_every: int | None = None,
    progress: bool = True,
    checkpoint: str | None = None,
    resume: bool = False,
    plot: str | None = None,
    out: TextIO | None = None,
) -> list[EpochRecord]:
    """Train `trainer` up to `epochs` epochs with progress, logs and checkpoints.

    Returns:
        The records of every epoch, resumed ones included.
    """
    stream = sys.stdout if out is None else out
    if resume and checkpoint:
        trainer.resume(checkpoint)
        print(f"resumed {checkpoint}: {trainer.epochs_done} epochs done", file=stream)
    every = log_every or max(1, epochs // 10)
    # disable=None: tqdm shows the bar only on a terminal
    bar = tqdm(
        total=epochs,
        initial=min(trainer.epochs_done, epochs),
        unit="epoch",
        disable=None if progress else True,
        leave=False,
    )
    started = time.perf_counter()

    def log_fn(epoch: int, loss: float, accuracy: float, seconds: float) -> None:
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.4f}", acc=f"{accuracy:.1%}", refresh=False)
        if epoch % every == 0 or epoch == epochs:
            extra = "".join(f"  {k} {v:6.1%}" for k, v in trainer.extra_metrics().items())
            bar.write(
                f"epoch {epoch:5d}/{epochs}  loss {loss:.4f}  accuracy {accuracy:6.1%}{extra}"
                f"  time {seconds * 1e3:8.2f} ms/epoch",
                file=stream,
            )
            if checkpoint:
                trainer.save(checkpoint)

    try:
        with CompileNotices(sys.stderr):
            trainer.train(epochs, log_fn)
    except KeyboardInterrupt:
        print(f"\ninterrupted after epoch {trainer.epochs_done}", file=stream)
    finally:
        bar.close()
    if checkpoint and trainer.epochs_done:
        trainer.save(checkpoint)
    print(summary(trainer, time.perf_counter() - started), file=stream)
    if plot:
        save_plot(trainer, plot)
        print(f"saved the plot to {plot}", file=stream)
    return trainer.records


def summary(trainer: Trainer, total_seconds: float) -> str:
    """One line: what ran, how long it took, the final loss and accuracies."""
    config = trainer.config
    what = config.get("dataset", config.get("data", trainer.kind))
    backend = config.get("backend", "scalar")
    records = trainer.records
    if not records:
        return f"done: {what} on {backend}: no epochs ran"
    times = [r.seconds for r in records]
    warm = times[1:] or times
    figures = final_figures(trainer)
    scores = ", ".join(f"{k} {v:.1%}" for k, v in figures.items())
    return (
        f"done: {what} on {backend}, {trainer.epochs_done} epochs in {total_seconds:.2f} s "
        f"(median {statistics.median(warm) * 1e3:.2f} ms/epoch, first "
        f"{times[0] * 1e3:.1f} ms): final loss {records[-1].loss:.4f}"
        + (f", {scores}" if scores else "")
    )


def save_plot(trainer: Trainer, path: str) -> None:
    """Save the loss curve, with the decision boundary for a 2-D trainer, to `path`."""
    from project.plots import grid, training_figure

    predict = getattr(trainer, "predict_proba", None)
    if callable(predict):
        points = grid()
        fig = training_figure(trainer.records, predict(points), trainer.X, trainer.y)  # type: ignore[attr-defined]
    else:
        fig = training_figure(trainer.records)
    fig.savefig(path, dpi=100)


def describe(prog: str, config: dict[str, Any], epochs: int) -> str:
    """The first line a script prints: its settings."""
    settings = " ".join(f"{key}={value}" for key, value in config.items())
    return f"{prog}: epochs={epochs} {settings}"


def epochs_or_default(args: argparse.Namespace, default: int) -> int:
    """--epochs if given, else `default`."""
    return default if args.epochs is None else int(args.epochs)


def run_args(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of `run` taken from parsed flags."""
    return {
        "log_every": args.log_every,
        "progress": not args.no_progress,
        "checkpoint": args.checkpoint,
        "resume": args.resume,
        "plot": args.plot,
    }


def points_main(
    argv: Sequence[str] | None,
    prog: str,
    backend: str,
    description: str,
    trainer_class: Callable[..., Any] | None = None,
) -> int:
    """The whole of run_tensor.py / run_fast_tensor.py: parse, train, report.

    `trainer_class` builds the trainer from the flags (default: `PointsTrainer`).
    """
    from project.points import DEFAULTS, PointsTrainer

    parser = points_parser(prog, description, backend)
    args = parser.parse_args(argv)
    check_args(parser, args)
    trainer = (trainer_class or PointsTrainer)(
        dataset=args.dataset,
        points=args.points,
        hidden=args.hidden,
        lr=args.lr,
        batch=args.batch,
        optimizer=args.optimizer,
        backend=args.backend,
        seed=args.seed,
    )
    return train_and_report(prog, trainer, args, DEFAULTS[args.dataset].epochs)


def train_and_report(
    prog: str, trainer: Trainer, args: argparse.Namespace, default_epochs: int
) -> int:
    """Print the run's settings, train for --epochs (else `default_epochs`); exit status 0."""
    epochs = epochs_or_default(args, default_epochs)
    print(describe(prog, trainer.config, epochs))
    run(trainer, epochs, **run_args(args))
    return 0
