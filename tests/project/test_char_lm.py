"""project/char_lm.py: the character-level language model learns, and its CLI works."""

from __future__ import annotations

import io

import pytest

from project import char_lm

pytestmark = [pytest.mark.slow, pytest.mark.extra]


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_loss_falls_on_the_handouts(cell):
    config = char_lm.Config(
        epochs=3, steps=6, batch=8, seq_len=12, hidden=24, embed=8, cell=cell, lr=0.02,
        backend="fast", sample_length=10,
    )  # fmt: skip
    out = io.StringIO()
    losses = char_lm.train(config, out=out)
    assert len(losses) == 3
    # the first epoch starts near log(vocabulary size); training must bring it down
    assert losses[-1] < losses[0] - 0.3, losses
    printed = out.getvalue().splitlines()
    assert printed[0].startswith("epoch   1/3  loss")
    assert printed[-1].startswith("sample: 'The ")


def test_corpus_is_the_course_handouts():
    text = char_lm.read_corpus()
    assert len(text) > 100_000 and "Module" in text
    vocab = char_lm.Vocabulary(text)
    assert vocab.decode(vocab.encode("tensor")) == "tensor"


def test_cli_rejects_bad_flags(capsys):
    with pytest.raises(SystemExit):
        char_lm.main(["--epochs", "0"])
    assert "--epochs must be positive" in capsys.readouterr().err
