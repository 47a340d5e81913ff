"""A LeNet-style conv net learns the 8x8 digits, and checkpointed training resumes exactly."""

from __future__ import annotations

import numpy as np
import pytest

import minifw as mf
import minifw.nn.functional as F  # noqa: N812 - PyTorch's idiom
from minifw import nn, optim
from minifw.core.random import generator
from minifw.datasets import load_digits
from minifw.serialization import load, save
from minifw.utils.data import DataLoader, TensorDataset

pytest.importorskip("sklearn")
pytestmark = [pytest.mark.extra, pytest.mark.slow]  # given layers and loaders


def lenet(width=8, dropout=0.0):
    """conv-relu-pool twice, then two linear layers: (N, 1, 8, 8) -> (N, 10) scores."""
    return nn.Sequential(
        nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(8 * width, 32), nn.ReLU(), nn.Dropout(dropout),
        nn.Linear(32, 10),
    )  # fmt: skip


def train_epoch(model, opt, loader):
    model.train()
    for images, labels in loader:
        opt.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        opt.step()


def accuracy(model, images, labels):
    model.eval()
    with mf.no_grad():
        return (model(images).argmax(1) == labels).float().mean().item()


@pytest.fixture(scope="module")
def digits():
    split = load_digits(test_fraction=0.2, seed=0)
    return {name: mf.tensor(values) for name, values in split._asdict().items()}


def test_lenet_learns_digits(digits):
    mf.manual_seed(0)
    model = lenet()
    opt = optim.Adam(model.parameters(), lr=0.01)
    data = TensorDataset(digits["train_images"], digits["train_labels"])
    loader = DataLoader(data, batch_size=32, shuffle=True)
    before = accuracy(model, digits["test_images"], digits["test_labels"])
    for _ in range(2):
        train_epoch(model, opt, loader)
    after = accuracy(model, digits["test_images"], digits["test_labels"])
    assert before < 0.2  # chance is 0.1
    assert after > 0.7, f"test accuracy {after:.3f} after two epochs"


def test_training_resumed_from_a_checkpoint_ends_where_an_uninterrupted_run_does(digits, tmp_path):
    images, labels = digits["train_images"][:160], digits["train_labels"][:160]
    loader = DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=True)

    def fresh():
        mf.manual_seed(1)
        model = lenet(width=4, dropout=0.2)
        return model, optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)

    model, opt = fresh()
    for _ in range(3):
        train_epoch(model, opt, loader)
    straight = {k: v.numpy().copy() for k, v in model.state_dict().items()}

    model, opt = fresh()
    train_epoch(model, opt, loader)
    path = tmp_path / "ckpt.mfz"
    save(
        {"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 1,
         "rng": generator().bit_generator.state},
        path,
    )  # fmt: skip
    del model, opt
    mf.manual_seed(12345)  # the resumed process starts with another random state

    model, opt = lenet(width=4, dropout=0.2), None
    checkpoint = load(path)
    model.load_state_dict(checkpoint["model"])
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    opt.load_state_dict(checkpoint["optim"])
    generator().bit_generator.state = checkpoint["rng"]
    for _ in range(checkpoint["epoch"], 3):
        train_epoch(model, opt, loader)
    resumed = {k: v.numpy() for k, v in model.state_dict().items()}
    assert list(resumed) == list(straight)
    for key, value in straight.items():
        assert np.array_equal(resumed[key], value), key
    first = next(iter(straight.values()))
    assert not np.array_equal(first, fresh()[0].state_dict()["0.weight"].numpy())
