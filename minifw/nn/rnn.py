"""Recurrent layers as PyTorch defines them: RNN, LSTM, GRU and their one-step cells.

Every layer is composed of differentiable tensor operations (matmul, sigmoid, tanh,
slices and `stack`/`cat`), so autograd and every backend come for free. The input
projection of all time steps is one matmul per layer and direction; the recurrence is
a Python loop over the time steps. Parameter names, shapes, gate order (LSTM: i, f, g,
o; GRU: r, z, n with b_hn inside r * (...)) and the initialisation
uniform(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) are PyTorch's, so a PyTorch state
dict converted to numpy loads unchanged.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable
from typing import Any

from minifw.core import dtypes
from minifw.core.random import generator
from minifw.nn import functional as F  # noqa: N812 - PyTorch's idiom
from minifw.nn.module import Module, Parameter
from minifw.tensor.creation import cat, stack, zeros
from minifw.tensor.tensor import Tensor, tensor

# A step maps (input projection of one time step, state) to the new state.
State = Any
Step = Callable[[Tensor, State], State]

# Gate blocks stacked in weight_ih / weight_hh, per mode.
GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _uniform_param(shape: tuple[int, ...], hidden_size: int, device: Any, dtype: Any) -> Parameter:
    """A parameter drawn from uniform(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    kind = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    values = generator().uniform(-bound, bound, size=shape)
    return Parameter(tensor(values, dtype=kind, device=device))


def _check_float_input(name: str, x: Tensor, weight: Tensor) -> None:
    """ValueError unless `x` has the weights' dtype, as PyTorch's recurrent layers check."""
    if x.dtype is not weight.dtype:
        raise ValueError(
            f"{name} input dtype ({x.dtype}) does not match weight dtype ({weight.dtype}). "
            f"Convert input: input.to({weight.dtype}), or convert model: model.to({x.dtype})"
        )


# ---- One time step of each kind ----------------------------------------------------------


def _split(gates: Tensor, count: int) -> list[Tensor]:
    """The `count` equal blocks of the last dim of `gates` (views)."""
    size = gates.shape[-1] // count
    return [gates[..., k * size : (k + 1) * size] for k in range(count)]


def _project(h: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """Return h @ weight.T + bias."""
    return F.linear(h, weight, bias)


def rnn_step(activation: Callable[[Tensor], Tensor], w_hh: Tensor, b_hh: Tensor | None) -> Step:
    """The Elman step: h' = activation(x_proj + h @ w_hh.T + b_hh)."""

    def step(x_proj: Tensor, h: Tensor) -> Tensor:
        return activation(x_proj + _project(h, w_hh, b_hh))

    return step


def lstm_step(w_hh: Tensor, b_hh: Tensor | None) -> Step:
    """(h', c') from gates i, f, g, o: c' = f * c + i * g, h' = o * tanh(c')."""

    def step(x_proj: Tensor, state: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        h, c = state
        i, f, g, o = _split(x_proj + _project(h, w_hh, b_hh), 4)
        c_next = f.sigmoid() * c + i.sigmoid() * g.tanh()
        return o.sigmoid() * c_next.tanh(), c_next

    return step


def gru_step(w_hh: Tensor, b_hh: Tensor | None) -> Step:
    """The GRU step: h' = (1 - z) * n + z * h, with n = tanh(x_n + r * (h @ w_hn.T + b_hn))."""

    def step(x_proj: Tensor, h: Tensor) -> Tensor:
        x_r, x_z, x_n = _split(x_proj, 3)
        h_r, h_z, h_n = _split(_project(h, w_hh, b_hh), 3)
        r = (x_r + h_r).sigmoid()
        z = (x_z + h_z).sigmoid()
        n = (x_n + r * h_n).tanh()
        return n + z * (h - n)

    return step


def _relu(x: Tensor) -> Tensor:
    return x.relu()


def _tanh(x: Tensor) -> Tensor:
    return x.tanh()


def make_step(mode: str, w_hh: Tensor, b_hh: Tensor | None) -> Step:
    """The step function of `mode` ("RNN_TANH", "RNN_RELU", "LSTM", "GRU")."""
    if mode == "LSTM":
        return lstm_step(w_hh, b_hh)
    if mode == "GRU":
        return gru_step(w_hh, b_hh)
    return rnn_step(_relu if mode == "RNN_RELU" else _tanh, w_hh, b_hh)


def _hidden(state: State) -> Tensor:
    """The h of a state (an LSTM state is (h, c))."""
    h: Tensor = state[0] if isinstance(state, tuple) else state
    return h


def run_sequence(step: Step, x_proj: Tensor, state: State, reverse: bool) -> tuple[Tensor, State]:
    """Apply `step` along dim 0 of x_proj (L, N, G); return (the h of every step, last state)."""
    steps = range(x_proj.shape[0] - 1, -1, -1) if reverse else range(x_proj.shape[0])
    outputs: list[Tensor] = []
    for t in steps:
        state = step(x_proj[t], state)
        outputs.append(_hidden(state))
    if reverse:
        outputs.reverse()
    return stack(outputs, 0), state


# ---- Layers over whole sequences -------------------------------------------------------------


class RNNBase(Module):
    """What RNN, LSTM and GRU share: parameters, shape checks and the layer loop."""

    mode = "RNN_TANH"

    def __init__(
        self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
        bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
        bidirectional: bool = False, proj_size: int = 0, device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        _check_sizes(input_size, hidden_size, num_layers, dropout, proj_size)
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}",
                UserWarning,
                stacklevel=2,
            )
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, 0
        gates = GATES[mode] * hidden_size
        for layer in range(num_layers):
            width = input_size if layer == 0 else hidden_size * self.num_directions
            for suffix in self._suffixes(layer):
                shapes: dict[str, tuple[int, ...]] = {
                    "weight_ih": (gates, width),
                    "weight_hh": (gates, hidden_size),
                }
                if bias:
                    shapes |= {"bias_ih": (gates,), "bias_hh": (gates,)}
                for name, shape in shapes.items():
                    param = _uniform_param(shape, hidden_size, device, dtype)
                    self.register_parameter(name + suffix, param)

    @property
    def num_directions(self) -> int:
        """2 when bidirectional, else 1."""
        return 2 if self.bidirectional else 1

    def _suffixes(self, layer: int) -> list[str]:
        """Name suffixes of a layer: "_l0" (and "_l0_reverse" when bidirectional)."""
        return [f"_l{layer}", f"_l{layer}_reverse"][: self.num_directions]

    def _weights(self, suffix: str) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
        """(weight_ih, weight_hh, bias_ih, bias_hh) of one layer and direction."""
        get = self._parameters.get
        w_ih, w_hh = get("weight_ih" + suffix), get("weight_hh" + suffix)
        b_ih, b_hh = get("bias_ih" + suffix), get("bias_hh" + suffix)
        return w_ih.value, w_hh.value, _value(b_ih), _value(b_hh)  # type: ignore[union-attr]

    def _zero_state(self, like: Tensor, batch: int) -> Tensor:
        """Zeros of shape (num_layers * num_directions, batch, hidden_size) like `like`."""
        shape = (self.num_layers * self.num_directions, batch, self.hidden_size)
        return zeros(*shape, dtype=like.dtype, backend=like.backend)

    def forward(self, input: Tensor, hx: Any = None) -> tuple[Tensor, Any]:  # noqa: A002
        """Run the layers over `input`; return (output of the last layer, final states)."""
        first = self._weights("_l0")[0]
        x, batched = _as_batched(type(self).__name__, input, self.batch_first)
        _check_float_input(self.mode.split("_")[0], x, first)
        if x.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                f"got {x.shape[-1]}"
            )
        states = self._initial_states(hx, x, batched)
        output, finals = self._run_layers(x, states)
        if self.batch_first:
            output = output.transpose(0, 1)
        if not batched:
            output = output.squeeze(1)
        return output, self._pack_finals(finals, batched)

    def _initial_states(self, hx: Any, x: Tensor, batched: bool) -> list[Tensor]:
        """The initial states [h0] or [h0, c0], (layers * directions, N, H), checked."""
        given = list(hx) if isinstance(hx, tuple | list) else [hx]
        if self.mode == "LSTM" and hx is not None and len(given) != 2:
            raise RuntimeError(f"LSTM: hx must be a tuple (h_0, c_0), got {len(given)} tensors")
        count = 2 if self.mode == "LSTM" else 1
        if hx is None:
            return [self._zero_state(x, x.shape[1]) for _ in range(count)]
        states = []
        for k, h in enumerate(given):
            if not batched:
                if h.dim() != 2:
                    raise RuntimeError(
                        f"For unbatched 2-D input, hx should also be 2-D but got {h.dim()}-D "
                        "tensor"
                    )
                h = h.unsqueeze(1)
            expected = (self.num_layers * self.num_directions, x.shape[1], self.hidden_size)
            if tuple(h.shape) != expected:
                which = f"hidden[{k}]" if self.mode == "LSTM" else "hidden"
                raise RuntimeError(f"Expected {which} size {expected}, got {list(h.shape)}")
            states.append(h)
        return states

    def _run_layers(self, x: Tensor, states: list[Tensor]) -> tuple[Tensor, list[State]]:
        """The layer loop: each layer's output (dropout between layers) feeds the next."""
        finals: list[State] = []
        length, batch = x.shape[0], x.shape[1]
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0:
                x = F.dropout(x, self.dropout, self.training)
            outputs = []
            for direction, suffix in enumerate(self._suffixes(layer)):
                w_ih, w_hh, b_ih, b_hh = self._weights(suffix)
                index = layer * self.num_directions + direction
                state = tuple(s[index] for s in states)
                projected = F.linear(x.reshape(length * batch, x.shape[2]), w_ih, b_ih)
                projected = projected.view(length, batch, w_ih.shape[0])
                step = make_step(self.mode, w_hh, b_hh)
                start = state if self.mode == "LSTM" else state[0]
                out, last = run_sequence(step, projected, start, reverse=direction == 1)
                outputs.append(out)
                finals.append(last)
            x = outputs[0] if len(outputs) == 1 else cat(outputs, 2)
        return x, finals

    def _pack_finals(self, finals: list[State], batched: bool) -> Any:
        """h_n (or (h_n, c_n)) stacked over layers and directions."""

        def packed(items: list[Tensor]) -> Tensor:
            out = stack(items, 0)
            return out if batched else out.squeeze(1)

        if self.mode == "LSTM":
            return packed([h for h, _ in finals]), packed([c for _, c in finals])
        return packed(finals)

    def extra_repr(self) -> str:
        """Sizes and the options that differ from the defaults, as PyTorch shows them."""
        text = f"{self.input_size}, {self.hidden_size}"
        options = {
            "num_layers": (self.num_layers, 1),
            "bias": (self.bias, True),
            "batch_first": (self.batch_first, False),
            "dropout": (self.dropout, 0),
            "bidirectional": (self.bidirectional, False),
        }
        for name, (value, default) in options.items():
            if value != default:
                text += f", {name}={value}"
        return text


def _value(param: Parameter | None) -> Tensor | None:
    """The tensor inside an optional Parameter."""
    return None if param is None else param.value  # type: ignore[no-any-return]


def _check_sizes(
    input_size: int, hidden_size: int, num_layers: int, dropout: float, proj_size: int
) -> None:
    """Reject sizes and a dropout that PyTorch rejects, with its exception classes."""
    if not isinstance(dropout, numbers.Number) or not 0 <= float(dropout) <= 1:  # type: ignore[arg-type]
        raise ValueError(
            "dropout should be a number in range [0, 1] representing the probability of an "
            "element being zeroed"
        )
    if not isinstance(hidden_size, int) or hidden_size <= 0:
        raise ValueError(f"hidden_size must be a positive integer, got {hidden_size!r}")
    if not isinstance(num_layers, int) or num_layers <= 0:
        raise ValueError(f"num_layers must be a positive integer, got {num_layers!r}")
    if input_size < 0:
        raise ValueError(f"input_size must be non-negative, got {input_size}")
    if proj_size != 0:
        raise NotImplementedError(
            f"LSTM proj_size={proj_size}: projections are not supported by minifw"
        )


def _as_batched(name: str, x: Tensor, batch_first: bool) -> tuple[Tensor, bool]:
    """(x as (L, N, H_in), whether it was batched): unbatched gets N = 1; batch_first swaps."""
    if x.dim() not in (2, 3):
        raise ValueError(f"{name}: Expected input to be 2D or 3D, got {x.dim()}D instead")
    if x.dim() == 2:
        return x.unsqueeze(1), False
    return (x.transpose(0, 1) if batch_first else x), True


class RNN(RNNBase):
    """Elman RNN: h_t = nonlinearity(x_t @ W_ih.T + b_ih + h_(t-1) @ W_hh.T + b_hh)."""

    def __init__(
        self, input_size: int, hidden_size: int, num_layers: int = 1,
        nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
        dropout: float = 0.0, bidirectional: bool = False, device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(
            mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
            bidirectional, device=device, dtype=dtype,
        )  # fmt: skip
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory: gates i, f, g, o; returns (output, (h_n, c_n))."""

    def __init__(
        self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
        batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
        proj_size: int = 0, device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__(
            "LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
            bidirectional, proj_size, device, dtype,
        )  # fmt: skip


class GRU(RNNBase):
    """Gated recurrent unit: gates r, z, n; returns (output, h_n)."""

    def __init__(
        self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
        batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
        device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__(
            "GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
            bidirectional, device=device, dtype=dtype,
        )  # fmt: skip


# ---- Cells: one time step -------------------------------------------------------------------


class RNNCellBase(Module):
    """What the cells share: weight_ih, weight_hh, bias_ih, bias_hh and input checks."""

    def __init__(
        self, mode: str, input_size: int, hidden_size: int, bias: bool, device: Any, dtype: Any
    ) -> None:
        super().__init__()
        self.mode, self.input_size, self.hidden_size, self.bias = (
            mode, input_size, hidden_size, bias
        )  # fmt: skip
        gates = GATES[mode] * hidden_size
        shapes: dict[str, tuple[int, ...]] = {
            "weight_ih": (gates, input_size),
            "weight_hh": (gates, hidden_size),
        }
        if bias:
            shapes |= {"bias_ih": (gates,), "bias_hh": (gates,)}
        for name, shape in shapes.items():
            self.register_parameter(name, _uniform_param(shape, hidden_size, device, dtype))
        if not bias:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)

    def _batched_input(self, x: Tensor) -> tuple[Tensor, bool]:
        """(x as (N, input_size), whether it was batched), checked."""
        if x.dim() not in (1, 2):
            raise ValueError(
                f"{type(self).__name__}: Expected input to be 1D or 2D, got {x.dim()}D instead"
            )
        if x.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {x.shape[-1]} expected {self.input_size}"
            )
        _check_float_input(self.mode.split("_")[0] + "Cell", x, self.weight_ih.value)
        return (x, True) if x.dim() == 2 else (x.unsqueeze(0), False)

    def _state(self, hx: Tensor | None, x: Tensor, batched: bool, which: str) -> Tensor:
        """The state `hx` as (N, hidden_size) (zeros when None), checked against x."""
        if hx is None:
            shape = (x.shape[0], self.hidden_size)
            return zeros(*shape, dtype=x.dtype, backend=x.backend)
        h = hx if batched else hx.unsqueeze(0)
        if h.dim() != 2 or h.shape[0] != x.shape[0]:
            raise RuntimeError(
                f"Input batch size {x.shape[0]} doesn't match {which} batch size "
                f"{h.shape[0] if h.dim() == 2 else list(hx.shape)}"
            )
        if h.shape[1] != self.hidden_size:
            raise RuntimeError(
                f"{which} has inconsistent hidden_size: got {h.shape[1]}, expected "
                f"{self.hidden_size}"
            )
        return h

    def _one_step(self, input: Tensor, hx: Any) -> Any:  # noqa: A002
        """The next state from `input` (N, input_size) or (input_size,) and `hx`."""
        x, batched = self._batched_input(input)
        if self.mode == "LSTM":
            h0, c0 = (None, None) if hx is None else hx
            state: State = (
                self._state(h0, x, batched, "hidden0"),
                self._state(c0, x, batched, "hidden1"),
            )
        else:
            state = self._state(hx, x, batched, "hidden0")
        step = make_step(self.mode, self.weight_hh.value, _value(self.bias_hh))
        projected = F.linear(x, self.weight_ih.value, _value(self.bias_ih))
        out = step(projected, state)
        if batched:
            return out
        return tuple(o.squeeze(0) for o in out) if isinstance(out, tuple) else out.squeeze(0)

    def extra_repr(self) -> str:
        """Sizes, bias and nonlinearity when not the defaults, as PyTorch shows them."""
        text = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            text += ", bias=False"
        if self.mode == "RNN_RELU":
            text += ", nonlinearity=relu"
        return text


class RNNCell(RNNCellBase):
    """One Elman step: h' = nonlinearity(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
        device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(mode, input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        """The next hidden state (N, hidden_size), or (hidden_size,) for a 1-D input."""
        return self._one_step(input, hx)  # type: ignore[no-any-return]


class GRUCell(RNNCellBase):
    """One GRU step (gates r, z, n)."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True,
        device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__("GRU", input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        """The next hidden state (N, hidden_size), or (hidden_size,) for a 1-D input."""
        return self._one_step(input, hx)  # type: ignore[no-any-return]


class LSTMCell(RNNCellBase):
    """One LSTM step: returns (h', c')."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True,
        device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__("LSTM", input_size, hidden_size, bias, device, dtype)

    def forward(
        self,
        input: Tensor,  # noqa: A002
        hx: tuple[Tensor, Tensor] | None = None,
    ) -> tuple[Tensor, Tensor]:
        """The next (h, c), each (N, hidden_size), or (hidden_size,) for a 1-D input."""
        return self._one_step(input, hx)  # type: ignore[no-any-return]


__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase"]
