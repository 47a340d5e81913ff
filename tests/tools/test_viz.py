"""Tests of minifw/viz.py: the DOT text of autograd graphs, read back by a tiny parser."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from minifw.core.autodiff import Context, History
from minifw.scalar.scalar import Scalar
from minifw.tools.viz import to_dot

pytestmark = pytest.mark.extra

NODE = re.compile(r"^\s*(\w+) \[(.*)\];$")
EDGE = re.compile(r"^\s*(\w+) -> (\w+);$")
ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^,\s]+)')


@dataclass
class Dot:
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)

    def ops(self) -> dict[str, str]:
        return {n: a["label"] for n, a in self.nodes.items() if a.get("shape") == "ellipse"}

    def values(self) -> dict[str, list[str]]:
        """Value node -> record fields, unescaped."""
        out = {}
        for name, attrs in self.nodes.items():
            if attrs.get("shape") == "record":
                inner = attrs["label"]
                assert inner.startswith("{") and inner.endswith("}")
                parts = re.split(r"(?<!\\) \| ", inner[1:-1])
                out[name] = [re.sub(r"\\(.)", r"\1", p) for p in parts]
        return out


def parse(text: str) -> Dot:
    lines = text.strip().splitlines()
    assert lines[0] == "digraph autograd {" and lines[-1] == "}"
    dot = Dot()
    for line in lines[1:-1]:
        if m := EDGE.match(line):
            dot.edges.append((m.group(1), m.group(2)))
        elif m := NODE.match(line):
            if m.group(1) in ("node", "graph", "edge"):
                continue
            attrs = {k: v[1:-1] if v.startswith('"') else v for k, v in ATTR.findall(m.group(2))}
            assert m.group(1) not in dot.nodes, f"node {m.group(1)} defined twice"
            dot.nodes[m.group(1)] = attrs
        else:
            assert re.match(r"^\s*\w+=\w+;$", line), f"unexpected DOT line: {line!r}"
    for a, b in dot.edges:
        assert a in dot.nodes and b in dot.nodes, (a, b)
    return dot


def test_small_graph_nodes_edges_and_labels() -> None:
    a, b = Scalar(2.0), Scalar(-3.0)
    c = a * b
    d = c + 1.0
    d.backward()
    dot = parse(to_dot(d, labels={a: "a", b: "b", d: "d"}))
    values, ops = dot.values(), dot.ops()
    # values: a, b, c, the constant 1.0, d; ops: Mul, Add
    assert len(values) == 5 and sorted(ops.values()) == ["Add", "Mul"]
    assert len(dot.edges) == 2 + 1 + 2 + 1  # inputs->Mul, Mul->c, inputs->Add, Add->d
    assert values["v0"] == ["d", "data -5.0000", "grad None"]
    by_name = {fields[0]: fields for fields in values.values()}
    assert by_name["a"] == ["a", "data 2.0000", "grad -3.0000"]
    assert by_name["b"] == ["b", "data -3.0000", "grad 2.0000"]
    assert ["data 1.0000", "grad None"] in values.values()  # the constant
    mul = next(n for n, label in ops.items() if label == "Mul")
    into_mul = sorted(values[src][0] for src, dst in dot.edges if dst == mul)
    assert into_mul == ["a", "b"]
    (mul_out,) = [dst for src, dst in dot.edges if src == mul]
    assert values[mul_out] == ["data -6.0000", "grad None"]
    constant = next(n for n, f in values.items() if f == ["data 1.0000", "grad None"])
    assert dot.nodes[constant]["style"] == "dashed"
    leaf = next(n for n, f in values.items() if f[0] == "a")
    assert dot.nodes[leaf]["style"] == "filled"
    assert "style" not in dot.nodes[mul_out]


def test_shared_values_appear_once() -> None:
    x = Scalar(1.5)
    y = x * x + x.exp()  # x feeds two ops (three edges)
    dot = parse(to_dot(y))
    assert len(dot.values()) == 4  # x, x*x, exp(x), y
    assert sorted(dot.ops().values()) == ["Add", "Exp", "Mul"]
    x_node = next(n for n, f in dot.values().items() if f[0] == "data 1.5000")
    assert sum(1 for src, _ in dot.edges if src == x_node) == 3


def test_deep_graph_and_escaping() -> None:
    x = Scalar(1.0)
    y = x
    for _ in range(3000):  # deeper than the recursion limit
        y = y + 1.0
    dot = parse(to_dot(y, labels={x: 'x{"|"}'}))
    assert len(dot.ops()) == 3000
    assert ['x{"|"}', "data 1.0000", "grad None"] in dot.values().values()


@dataclass
class FakeTensor:
    """Only the Variable protocol and a shape: what a Tensor offers viz."""

    shape: tuple[int, ...]
    unique_id: int
    history: Any = None
    data: Any = None
    grad: Any = None


class Sum:
    pass


class Scale:
    @staticmethod
    def forward(ctx: Any, a: Any, factor: float, keepdim: bool) -> Any:
        return a


def test_values_with_a_shape_show_it_and_plain_inputs_are_not_nodes() -> None:
    leaf = FakeTensor((2, 3), 1, History())
    leaf.grad = FakeTensor((2, 3), 2)
    out = FakeTensor((2,), 3, History(Sum, Context(), (leaf, 1)))
    dot = parse(to_dot(out))
    values = dot.values()
    assert values["v0"] == ["shape (2,)", "grad None"]
    assert ["shape (2, 3)", "grad (2, 3)"] in values.values()
    assert len(values) == 2 and "dotted" not in to_dot(out)  # the dim is no input box
    assert list(dot.ops().values()) == ["Sum\\n1"]  # ... but is written in the op
    named = FakeTensor((2,), 4, History(Scale, Context(), (leaf, 0.5, False)))
    assert list(parse(to_dot(named)).ops().values()) == ["Scale\\nfactor=0.5, keepdim=False"]


def test_tensor_leaves_that_require_grad_are_filled_and_constants_dashed() -> None:
    import minifw as mf

    x = mf.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = mf.tensor(1.0)
    out = (x * z).sum(0)
    out.backward()
    dot = parse(to_dot(out, labels={x: "x", z: "z"}))
    by_name = {fields[0]: name for name, fields in dot.values().items()}
    assert "filled" in dot.nodes[by_name["x"]]["style"]
    assert dot.nodes[by_name["z"]]["style"] == "dashed"
    assert "Sum\\ndims=(0,), keepdim=False" in dot.ops().values()
    assert len(dot.values()) == 4  # x, z, x * z, out: no boxes for (0,) and False
    assert "fontsize=14" in to_dot(out)  # readable when the graph is scaled to fit


def test_rejects_unknown_layout() -> None:
    with pytest.raises(ValueError, match="rankdir"):
        to_dot(Scalar(1.0), rankdir="diagonal")
