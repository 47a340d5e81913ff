"""The digits run: shapes, confusion matrix, and 95% test accuracy with the defaults.

Only the net's shapes test grades task 4.5 (it calls the fenced `DigitsNet.forward`);
the rest checks given code or is a long run (`extra`). The task's training tests are
in test_digits_training.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minifw as mf
from project.digits import DEFAULTS, DigitsNet, DigitsTrainer, confusion_matrix, load_images


@pytest.mark.task4_5
@pytest.mark.parametrize("size", [8, 28])
@settings(max_examples=2, deadline=None)  # each example runs a convolutional net
@given(st.integers(0, 2**16), st.integers(1, 4))
def test_net_maps_images_to_ten_logits(size: int, seed: int, n: int) -> None:
    mf.manual_seed(seed)
    net = DigitsNet(size)
    x = mf.tensor(np.random.default_rng(seed).random((n, 1, size, size)))
    assert net(x).shape == (n, 10)
    assert net.feature_maps(x).shape == (n, DEFAULTS.channels[0], size, size)
    names = [name for name, _ in net.named_parameters()]
    assert names == [f"{layer}.{kind}" for layer in ("conv1", "conv2", "fc1", "fc2")
                     for kind in ("weight", "bias")]  # fmt: skip


@pytest.mark.extra
def test_confusion_matrix_counts_true_rows_and_predicted_columns() -> None:
    matrix = confusion_matrix(np.array([0, 0, 1, 9, 9]), np.array([0, 1, 1, 9, 3]))
    assert matrix.shape == (10, 10) and matrix.sum() == 5
    assert matrix[0, 0] == 1 and matrix[0, 1] == 1 and matrix[1, 1] == 1
    assert matrix[9, 9] == 1 and matrix[9, 3] == 1


@pytest.mark.extra
def test_limit_keeps_the_first_training_images_and_the_whole_test_set() -> None:
    full, small = load_images(), load_images(limit=10)
    assert small.train_images.shape == (10, 1, 8, 8)
    np.testing.assert_array_equal(small.train_labels, full.train_labels[:10])
    assert len(small.test_labels) == len(full.test_labels) == 359
    with pytest.raises(ValueError, match="limit"):
        load_images(limit=0)


@pytest.mark.extra
@pytest.mark.slow
def test_defaults_reach_95_percent_test_accuracy() -> None:
    trainer = DigitsTrainer()
    records = trainer.train(DEFAULTS.epochs)
    assert len(records) == DEFAULTS.epochs and records[-1].loss < records[0].loss / 4
    accuracy = trainer.test_accuracy()
    assert accuracy >= 0.95, f"test accuracy {accuracy:.1%}"
    matrix = trainer.confusion()
    assert matrix.trace() == round(accuracy * len(trainer.images.test_labels))
    maps = trainer.feature_maps(trainer.images.test_images[0])
    assert maps.shape == (DEFAULTS.channels[0], 8, 8) and (maps >= 0).all()  # after ReLU
