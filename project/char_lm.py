"""Train a character-level language model on the course's own handouts and sample from it.

    python project/char_lm.py                      # LSTM, FastOps, a few epochs
    python -m project.char_lm --cell gru --epochs 2 --backend simple --steps 20

The corpus is docs/module0.md ... docs/module4.md, read at run time (text this project
wrote). The model is embedding -> LSTM (or GRU) -> linear, trained with cross-entropy
to predict each next character of random windows of the text, with Adam. Every epoch
prints the mean training loss; the run ends with a line sampled from the model.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np

if __package__ in (None, ""):  # run as a file: make `project` and `minifw` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import minifw as mf  # noqa: E402
from minifw import nn  # noqa: E402
from minifw.nn import functional as F  # noqa: E402, N812 - PyTorch's idiom
from minifw.tensor import Tensor  # noqa: E402
from minifw.tensor_ops import TensorBackend  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CORPUS = tuple(ROOT / "docs" / f"module{k}.md" for k in range(5))


@dataclass
class Config:
    """Everything a run depends on (the command line's flags)."""

    epochs: int = 4
    steps: int = 40
    batch: int = 16
    seq_len: int = 32
    hidden: int = 64
    embed: int = 16
    cell: str = "lstm"
    lr: float = 0.01
    backend: str = "fast"
    seed: int = 0
    sample_length: int = 80
    prompt: str = "The "
    temperature: float = 0.8


class Vocabulary:
    """The characters of a text and their int ids."""

    def __init__(self, text: str) -> None:
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> np.ndarray:
        """The ids of `text`'s characters (unknown characters become id 0)."""
        return np.array([self.index.get(c, 0) for c in text], dtype=np.int64)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of `ids`."""
        return "".join(self.chars[i] for i in ids)


class CharModel(nn.Module):
    """Embedding -> recurrent layer -> linear: logits of the next character at each step."""

    def __init__(self, vocab: int, embed: int, hidden: int, cell: str) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        recurrent = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = recurrent(embed, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids: Tensor, state: object = None) -> tuple[Tensor, object]:
        """(logits (N, L, vocab), final state) for int64 ids (N, L)."""
        out, state = self.rnn(self.embedding(ids), state)
        return self.head(out), state


def read_corpus(paths: Sequence[Path] = CORPUS) -> str:
    """The text of the handouts, joined."""
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(f"corpus files not found: {', '.join(missing)}")
    return "\n".join(p.read_text(encoding="utf-8") for p in paths)


def batch_of_windows(
    data: np.ndarray, batch: int, length: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Random windows: inputs (batch, length) and the next characters (batch, length)."""
    starts = rng.integers(0, len(data) - length - 1, size=batch)
    rows = np.stack([data[s : s + length + 1] for s in starts])
    return rows[:, :-1], rows[:, 1:]


def train_step(
    model: CharModel, optimizer: mf.optim.Optimizer, inputs: np.ndarray, targets: np.ndarray,
    backend: TensorBackend,
) -> float:  # fmt: skip
    """One Adam step on one batch of windows; returns the loss."""
    logits, _ = model(mf.tensor(inputs, backend=backend))
    target = mf.tensor(targets.reshape(-1), backend=backend)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return float(loss.item())


def sample(model: CharModel, vocab: Vocabulary, config: Config, rng: np.random.Generator) -> str:
    """`config.prompt` followed by `config.sample_length` characters drawn from the model."""
    backend = mf.get_backend(config.backend)
    ids = list(vocab.encode(config.prompt)) or [0]
    with mf.no_grad():
        logits, state = model(mf.tensor(np.array([ids]), backend=backend))
        for _ in range(config.sample_length):
            last = logits[0, -1].detach().numpy() / config.temperature
            probs = np.exp(last - last.max())
            ids.append(int(rng.choice(len(probs), p=probs / probs.sum())))
            logits, state = model(mf.tensor(np.array([[ids[-1]]]), backend=backend), state)
    return vocab.decode(ids)


def build(config: Config, text: str) -> tuple[CharModel, Vocabulary, np.ndarray]:
    """The model (on config.backend, float32), the vocabulary and the encoded text."""
    mf.manual_seed(config.seed)
    vocab = Vocabulary(text)
    model = CharModel(len(vocab), config.embed, config.hidden, config.cell)
    backend = mf.get_backend(config.backend)
    for param in model.parameters():
        param.value = mf.tensor(param.value.detach().numpy().astype(np.float32), backend=backend)
    return model, vocab, vocab.encode(text)


def train(config: Config, text: str | None = None, out: TextIO | None = None) -> list[float]:
    """Train as `config` says, printing a line per epoch and a sample; return epoch losses."""
    stream = sys.stdout if out is None else out
    model, vocab, data = build(config, read_corpus() if text is None else text)
    optimizer = mf.optim.Adam(model.parameters(), lr=config.lr)
    backend = mf.get_backend(config.backend)
    rng = np.random.default_rng(config.seed)
    losses = []
    for epoch in range(1, config.epochs + 1):
        started, total = time.perf_counter(), 0.0
        for _ in range(config.steps):
            inputs, targets = batch_of_windows(data, config.batch, config.seq_len, rng)
            total += train_step(model, optimizer, inputs, targets, backend)
        losses.append(total / config.steps)
        seconds = time.perf_counter() - started
        print(f"epoch {epoch:3d}/{config.epochs}  loss {losses[-1]:.4f}  time {seconds:6.1f} s",
              file=stream)  # fmt: skip
    print(f"sample: {sample(model, vocab, config, rng)!r}", file=stream)
    return losses


def parse(argv: Sequence[str] | None) -> Config:
    """The Config of a command line."""
    defaults = Config()
    parser = argparse.ArgumentParser(prog="char_lm", description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=defaults.epochs, help="epochs to train")
    parser.add_argument("--steps", type=int, default=defaults.steps, help="batches per epoch")
    parser.add_argument("--batch", type=int, default=defaults.batch, help="windows per batch")
    parser.add_argument("--seq-len", type=int, default=defaults.seq_len, help="window length")
    parser.add_argument("--hidden", type=int, default=defaults.hidden, help="recurrent width")
    parser.add_argument("--embed", type=int, default=defaults.embed, help="embedding width")
    parser.add_argument("--cell", choices=("lstm", "gru"), default=defaults.cell)
    parser.add_argument("--lr", type=float, default=defaults.lr, help="Adam learning rate")
    parser.add_argument("--backend", choices=("simple", "fast", "cuda"), default=defaults.backend)
    parser.add_argument("--seed", type=int, default=defaults.seed, help="seed of data and weights")
    parser.add_argument("--sample-length", type=int, default=defaults.sample_length)
    parser.add_argument("--prompt", default=defaults.prompt, help="start of the sampled line")
    parser.add_argument("--temperature", type=float, default=defaults.temperature)
    args = parser.parse_args(argv)
    for name in ("epochs", "steps", "batch", "seq_len", "hidden", "embed", "sample_length"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if args.lr <= 0 or args.temperature <= 0:
        parser.error("--lr and --temperature must be positive")
    return Config(**vars(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Parse `argv` (default: the command line), train, print losses and a sample."""
    config = parse(argv)
    sizes = f"{config.epochs} epochs of {config.steps} batches of {config.batch}x{config.seq_len}"
    print(f"char_lm: {config.cell} hidden {config.hidden}, backend {config.backend}, {sizes}")
    train(config)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
