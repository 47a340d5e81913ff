"""Module.load_state_dict refuses a value that is not a tensor, naming the key and type."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from minifw import nn

torch = pytest.importorskip("torch", reason="PyTorch, the oracle of these tests, is missing")
pytestmark = pytest.mark.extra  # given code: no task teaches it


@pytest.mark.parametrize("kind", ["ndarray", "list", "float"])
def test_a_value_that_is_not_a_tensor_is_refused_as_pytorch_refuses_it(kind: str) -> None:
    def bad() -> Any:
        weight = np.zeros((3, 2))
        return {"ndarray": weight, "list": weight.tolist(), "float": 0.5}[kind]

    ours, theirs = nn.Linear(2, 3), torch.nn.Linear(2, 3)
    before = ours.weight.tolist()
    with pytest.raises(RuntimeError) as pytorch_error:
        theirs.load_state_dict({"weight": bad(), "bias": theirs.bias.detach()})
    with pytest.raises(RuntimeError) as error:
        ours.load_state_dict({"weight": bad(), "bias": ours.bias.detach()})
    for message in (str(pytorch_error.value), str(error.value)):
        assert 'While copying the parameter named "weight"' in message
    assert f"received {type(bad()).__name__}" in str(error.value)
    assert ours.weight.tolist() == before  # a refused load changes nothing
