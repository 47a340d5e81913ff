"""Task 3.5: the batched points network of project/fast_network.py, trained on "fast".

Everything runs on the fast backend (in a student repository: the kernels of tasks 3.1
and 3.2). The forwards are compared with numpy, the layer's speed property (one matmul
per layer, no reduction) is read from the profiler's launch list, and training reaches
an accuracy. Timing is never asserted.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minifw as mf
from minifw.tools.profiler import profile
from project.fast_network import FastLinear, FastNetwork, FastPointsTrainer
from project.training import backend_scope

pytestmark = pytest.mark.task3_5
FAST = "fast"


def numpy_of(parameter: mf.nn.Parameter) -> np.ndarray:
    """A numpy copy of a Parameter's tensor."""
    return np.asarray(parameter.value.detach().numpy())


def make(factory, seed: int = 0):  # type: ignore[no-untyped-def]
    """`factory()` built on the fast backend with weights drawn from `seed`."""
    with backend_scope(FAST):
        mf.manual_seed(seed)
        return factory()


@given(st.integers(1, 6), st.integers(1, 5), st.integers(1, 5), st.integers(0, 2**16))
def test_fast_linear_is_x_times_weight_plus_bias(
    batch: int, fan_in: int, fan_out: int, seed: int
) -> None:
    layer = make(lambda: FastLinear(fan_in, fan_out), seed=seed)
    x = np.random.default_rng(seed).uniform(-1, 1, size=(batch, fan_in))
    out = layer(mf.tensor(x, backend=FAST))
    assert out.shape == (batch, fan_out)
    expected = x @ numpy_of(layer.weight) + numpy_of(layer.bias)
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-12, atol=1e-12)


@given(st.integers(1, 6), st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**16))
def test_fast_linear_gradients_reach_weight_and_bias(
    batch: int, fan_in: int, fan_out: int, seed: int
) -> None:
    layer = make(lambda: FastLinear(fan_in, fan_out), seed=seed)
    x = np.random.default_rng(seed).uniform(-2, 2, size=(batch, fan_in))
    layer(mf.tensor(x, backend=FAST)).sum().backward()
    want = np.repeat(x.sum(0)[:, None], fan_out, 1)
    np.testing.assert_allclose(layer.weight.value.grad.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(layer.bias.value.grad.numpy(), [float(batch)] * fan_out)


@given(st.integers(1, 8), st.integers(1, 9), st.integers(0, 2**16))
def test_fast_network_matches_its_numpy_forward(hidden_size: int, batch: int, seed: int) -> None:
    net = make(lambda: FastNetwork(hidden_size), seed=seed)
    x = np.random.default_rng(seed).uniform(-1, 1, size=(batch, 2))
    hidden = x
    for layer in (net.layer1, net.layer2):
        hidden = np.maximum(hidden @ numpy_of(layer.weight) + numpy_of(layer.bias), 0.0)
    expected = hidden @ numpy_of(net.layer3.weight) + numpy_of(net.layer3.bias)
    got = net(mf.tensor(x, backend=FAST))
    assert got.shape == (batch, 1)
    np.testing.assert_allclose(got.detach().numpy(), expected, rtol=1e-12, atol=1e-12)


@given(st.integers(1, 8), st.integers(2, 12), st.integers(0, 2**16))
def test_each_layer_is_one_matmul_for_the_whole_batch(
    hidden_size: int, batch: int, seed: int
) -> None:
    net = make(lambda: FastNetwork(hidden_size), seed=seed)
    x = mf.tensor(np.random.default_rng(seed).uniform(-1, 1, size=(batch, 2)), backend=FAST)
    with profile() as prof:
        net(x)
    kinds = [event.kind for event in prof.events]
    assert kinds.count("matmul") == 3, kinds
    assert "reduce" not in kinds, kinds  # no broadcast product summed over a dim
    assert len(kinds) <= 12, kinds  # a few launches per layer, none per sample


@pytest.mark.parametrize("dataset", ["simple", "split"])
def test_training_on_the_fast_backend_reaches_95_percent(dataset: str) -> None:
    trainer = FastPointsTrainer(dataset, backend=FAST)
    records = trainer.train(60)
    assert records[-1].loss < records[0].loss / 2
    assert trainer.accuracy() >= 0.95, f"{dataset}: {trainer.accuracy():.1%}"
