"""Task 4.5: the digits network's forward pass and its training epoch (project/digits.py).

Small and quick: a few hundred of the embedded 8x8 digits, a few epochs.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minifw as mf
import minifw.nn.functional as F  # noqa: N812 - PyTorch's idiom
from minifw.datasets import ImageSplit
from project.digits import DigitsNet, DigitsTrainer, load_images
from project.training import batches

pytestmark = pytest.mark.task4_5
# A few drawn seeds and sizes per test: each example builds and runs a convolutional net.
FEW = settings(max_examples=4, deadline=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip


def by_hand(net: DigitsNet, x: mf.Tensor) -> mf.Tensor:
    """The documented stack, written with the net's own layers and nn.functional."""
    x = F.max_pool2d(F.relu(net.conv1(x)), 2)
    x = F.max_pool2d(F.relu(net.conv2(x)), 2)
    x = x.reshape(x.shape[0], -1)
    return net.fc2(F.relu(net.fc1(x)))


@pytest.fixture(scope="module")
def small_digits() -> ImageSplit:
    """The first 320 training images and the first 200 test images."""
    split = load_images(seed=0)
    return ImageSplit(
        split.train_images[:320],
        split.train_labels[:320],
        split.test_images[:200],
        split.test_labels[:200],
    )


@pytest.mark.parametrize(("size", "channels", "hidden"), [(8, (8, 16), 32), (12, (3, 5), 7)])
@FEW
@given(st.integers(0, 2**16), st.integers(1, 4))
def test_forward_is_conv_relu_pool_twice_then_two_linear_layers(size, channels, hidden, seed, n):
    mf.manual_seed(seed)
    net = DigitsNet(size, channels, hidden)
    x = mf.tensor(np.random.default_rng(seed).random((n, 1, size, size)))
    logits = net(x)
    assert logits.shape == (n, 10)
    want = by_hand(net, x).detach().numpy()
    np.testing.assert_allclose(logits.detach().numpy(), want, rtol=1e-12, atol=1e-12)


@FEW
@given(st.integers(0, 2**16), st.lists(st.integers(0, 9), min_size=2, max_size=5))
def test_forward_gradients_reach_every_parameter(seed, labels):
    mf.manual_seed(seed)
    net = DigitsNet(8)
    x = mf.tensor(np.random.default_rng(seed).random((len(labels), 1, 8, 8)))
    F.cross_entropy(net(x), mf.tensor(labels)).backward()
    for name, param in net.named_parameters():
        assert param.grad is not None, name
        assert np.abs(param.grad.numpy()).sum() > 0, name


@FEW
@given(st.integers(0, 2**16), st.integers(30, 60))
def test_an_epoch_without_learning_reports_the_mean_loss_and_accuracy(small_digits, seed, count):
    images = ImageSplit(*(part[:count] for part in small_digits))  # the last batch is short
    # a learning rate too small to move any parameter: every batch sees the same net
    trainer = DigitsTrainer(images=images, lr=1e-300, batch=16, optimizer="sgd", seed=seed)
    net = trainer.model
    with mf.no_grad():
        logits = net(mf.tensor(images.train_images))
        loss = F.cross_entropy(logits, mf.tensor(images.train_labels)).item()
    hits = (logits.numpy().argmax(axis=1) == images.train_labels).mean()
    mean_loss, accuracy = trainer.run_epoch(1)
    assert mean_loss == pytest.approx(loss, rel=1e-9)  # weighted by batch size
    assert accuracy == pytest.approx(hits)
    assert all(p.grad is not None for p in net.parameters())  # it did backpropagate


def test_training_a_small_subset_learns_the_digits(small_digits):
    trainer = DigitsTrainer(images=small_digits, lr=0.01, batch=16, seed=0)
    before = trainer.test_accuracy()
    records = trainer.train(6)  # the reference: 70-90% test accuracy (seeds 0-3)
    losses = [record.loss for record in records]
    assert losses[-1] < losses[0] / 2, losses
    assert records[-1].accuracy > 0.5, records[-1]
    after = trainer.test_accuracy()
    assert before < 0.3 and after > 0.6, (before, after)


@FEW
@given(st.integers(0, 2**16), st.integers(1, 3))
def test_an_epoch_steps_once_per_batch_in_the_documented_order(small_digits, seed, epoch):
    images = ImageSplit(*(part[:40] for part in small_digits))
    trainer, twin = (DigitsTrainer(images=images, lr=0.01, batch=16, seed=seed) for _ in range(2))
    trainer.run_epoch(epoch)
    rng = np.random.default_rng([seed, epoch])
    for x, y in batches(images.train_images, images.train_labels, 16, "fast", rng):
        twin.optimizer.zero_grad()
        F.cross_entropy(twin.model(x), y).backward()
        twin.optimizer.step()
    for (name, mine), (_, want) in zip(
        trainer.model.named_parameters(), twin.model.named_parameters(), strict=True
    ):
        np.testing.assert_allclose(mine.detach().numpy(), want.detach().numpy(), err_msg=name)
