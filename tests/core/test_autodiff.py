"""Tests of minifw/autodiff.py: central differences (1.1), sorting and backpropagation (1.4).

The engine is tested on a tiny stand-in value class (`Node`) whose every edge has a
fixed weight, so these tests do not depend on the Scalar engine: the derivative of
the root with respect to a leaf is the sum over paths of the product of weights.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minifw.core.autodiff import (
    Context,
    History,
    backpropagate,
    central_difference,
    enable_grad,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
    topological_sort,
)

_ids = itertools.count()


class Node:
    """A value whose op multiplies each input's derivative by a fixed weight."""

    def __init__(
        self,
        inputs: Sequence[Node] = (),
        weights: Sequence[float] = (),
        *,
        constant: bool = False,
    ) -> None:
        self.unique_id = next(_ids)
        self.inputs = tuple(inputs)
        self.weights = tuple(weights)
        self.history = None if constant else History("op" if inputs else None, Context(), inputs)
        self.derivative: float | None = None
        self.chain_calls = 0

    def is_leaf(self) -> bool:
        return self.history is not None and not self.inputs

    def is_constant(self) -> bool:
        return self.history is None

    @property
    def parents(self) -> tuple[Node, ...]:
        return self.inputs

    def chain_rule(self, d: float) -> list[tuple[Node, float]]:
        assert self.history is not None and self.history.ctx is not None
        self.history.ctx.check_alive()
        self.chain_calls += 1
        return [(x, w * d) for x, w in zip(self.inputs, self.weights, strict=True)]

    def accumulate_derivative(self, x: float) -> None:
        assert self.is_leaf()
        self.derivative = x if self.derivative is None else self.derivative + x


# ---- 1.1 central differences ----


@pytest.mark.task1_1
@given(st.floats(min_value=-3.0, max_value=3.0), st.floats(min_value=0.5, max_value=2.0))
def test_central_difference_of_known_functions(x: float, scale: float) -> None:
    assert math.isclose(central_difference(lambda v: scale * v * v, x), 2 * scale * x,
                        rel_tol=1e-6, abs_tol=1e-6)  # fmt: skip
    slope = central_difference(math.sin, x)
    assert math.isclose(slope, math.cos(x), rel_tol=1e-6, abs_tol=1e-6)
    slope = central_difference(math.exp, x, epsilon=1e-4)
    assert math.isclose(slope, math.exp(x), rel_tol=1e-6)


@pytest.mark.task1_1
@given(st.lists(st.floats(min_value=-4.0, max_value=4.0), min_size=3, max_size=3))
def test_central_difference_picks_the_argument(values: list[float]) -> None:
    def f(x: float, y: float, z: float) -> float:
        return x * y + y * z * z

    x, y, z = values
    for arg, exact in enumerate((y, x + z * z, 2 * y * z)):
        estimate = central_difference(f, x, y, z, arg=arg)
        assert math.isclose(estimate, exact, rel_tol=1e-6, abs_tol=1e-6), arg


@pytest.mark.task1_1
@given(
    st.floats(min_value=-10.0, max_value=10.0),
    st.floats(min_value=-3.0, max_value=3.0),
    st.floats(min_value=-3.0, max_value=3.0),
)
def test_central_difference_of_a_cubic(x: float, a: float, b: float) -> None:
    # f = a x^3 + b x: the central difference is exact up to a e^2 and rounding
    estimate = central_difference(lambda v: a * v**3 + b * v, x, epsilon=1e-5)
    exact = 3 * a * x * x + b
    assert math.isclose(estimate, exact, rel_tol=1e-5, abs_tol=1e-5)


# ---- 1.4 topological sort ----


@st.composite
def random_graphs(draw: st.DrawFn) -> tuple[list[Node], list[Node]]:
    """Leaves, then nodes each combining 1-3 earlier values with integer weights."""
    leaves = [Node() for _ in range(draw(st.integers(1, 3)))]
    nodes: list[Node] = list(leaves)
    for _ in range(draw(st.integers(1, 10))):
        k = draw(st.integers(1, 3))
        inputs = [nodes[draw(st.integers(0, len(nodes) - 1))] for _ in range(k)]
        weights = [float(draw(st.integers(-3, 3))) for _ in range(k)]
        nodes.append(Node(inputs, weights))
    return leaves, nodes


def expected_derivatives(nodes: list[Node]) -> dict[int, float]:
    """d root / d value for every value the last node reaches, summed over paths."""
    root = nodes[-1]
    expected: dict[int, float] = {root.unique_id: 1.0}
    for node in reversed(nodes):  # creation order is a topological order
        if node.unique_id in expected:
            for x, w in zip(node.inputs, node.weights, strict=True):
                expected[x.unique_id] = (
                    expected.get(x.unique_id, 0.0) + w * expected[node.unique_id]
                )
    return expected


def check_drawn_graph(graph: tuple[list[Node], list[Node]]) -> None:
    """Sort and backpropagate a drawn graph: every fixed-graph test checks one too."""
    leaves, nodes = graph
    order = topological_sort(nodes[-1])
    position = {n.unique_id: i for i, n in enumerate(order)}
    reached = expected_derivatives(nodes)
    assert set(position) == set(reached) and len(order) == len(position)
    for node in order:
        for parent in node.parents:
            assert position[node.unique_id] < position[parent.unique_id]
    backpropagate(nodes[-1], 1.0)
    for leaf in leaves:
        assert leaf.derivative == reached.get(leaf.unique_id)


def diamond() -> tuple[Node, Node, Node, Node]:
    """x -> a = 2x, b = 3x -> out = a + b (the derivative is 5 along two paths)."""
    x = Node()
    a = Node([x], [2.0])
    b = Node([x], [3.0])
    out = Node([a, b], [1.0, 1.0])
    return x, a, b, out


@pytest.mark.task1_4
@given(random_graphs())
def test_sort_puts_every_value_before_its_inputs(graph: tuple[list[Node], list[Node]]) -> None:
    check_drawn_graph(graph)
    x, a, b, out = diamond()
    order = topological_sort(out)
    assert order[0] is out
    assert {n.unique_id for n in order} == {n.unique_id for n in (x, a, b, out)}
    assert len(order) == 4
    position = {n.unique_id: i for i, n in enumerate(order)}
    for node in order:
        for parent in node.parents:
            assert position[node.unique_id] < position[parent.unique_id]


@pytest.mark.task1_4
@given(random_graphs())
def test_sort_skips_constants(graph: tuple[list[Node], list[Node]]) -> None:
    check_drawn_graph(graph)
    x = Node()
    c = Node(constant=True)
    out = Node([x, c], [1.0, 1.0])
    order = topological_sort(out)
    assert [n.unique_id for n in order] == [out.unique_id, x.unique_id]


@pytest.mark.task1_4
@given(st.integers(2_000, 10_000), st.integers(-4, 4))
def test_sort_and_backpropagate_a_long_chain(length: int, seed: int) -> None:
    # far deeper than Python's recursion limit (1000): the sort must not recurse
    x = Node()
    node = x
    for _ in range(length):
        node = Node([node], [1.0])
    order = topological_sort(node)
    assert len(order) == length + 1
    assert order[0] is node and order[-1] is x
    backpropagate(node, float(seed))
    assert x.derivative == float(seed)


# ---- 1.4 backpropagation ----


@pytest.mark.task1_4
@given(random_graphs())
def test_diamond_accumulates_both_paths_and_visits_each_node_once(
    graph: tuple[list[Node], list[Node]],
) -> None:
    check_drawn_graph(graph)
    x, a, b, out = diamond()
    backpropagate(out, 1.0)
    assert x.derivative == 5.0
    assert (out.chain_calls, a.chain_calls, b.chain_calls) == (1, 1, 1)


@pytest.mark.task1_4
@given(random_graphs())
def test_leaves_accumulate_across_backward_calls(graph: tuple[list[Node], list[Node]]) -> None:
    check_drawn_graph(graph)
    x, _, _, out = diamond()
    backpropagate(out, 1.0)
    backpropagate(out, 0.5)
    assert x.derivative == 7.5


@pytest.mark.task1_4
@given(random_graphs())
def test_constants_receive_nothing_and_unreached_leaves_stay_none(
    graph: tuple[list[Node], list[Node]],
) -> None:
    check_drawn_graph(graph)
    x, y = Node(), Node()
    c = Node(constant=True)
    out = Node([x, c, x], [2.0, 5.0, 3.0])
    Node([y], [1.0])  # y feeds another graph only
    backpropagate(out, 1.0)
    assert x.derivative == 5.0
    assert y.derivative is None


@pytest.mark.task1_4
@given(random_graphs())
def test_without_retain_graph_a_second_backward_raises(
    graph: tuple[list[Node], list[Node]],
) -> None:
    check_drawn_graph(graph)
    _, _, _, out = diamond()
    backpropagate(out, 1.0, retain_graph=False)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        backpropagate(out, 1.0)


@pytest.mark.task1_4
@given(random_graphs())
def test_backpropagate_sums_weights_over_all_paths(graph: tuple[list[Node], list[Node]]) -> None:
    leaves, nodes = graph
    root = nodes[-1]
    expected = expected_derivatives(nodes)
    backpropagate(root, 1.0)
    for leaf in leaves:
        assert leaf.derivative == expected.get(leaf.unique_id)
    for node in nodes[len(leaves) :]:
        assert node.chain_calls == (1 if node.unique_id in expected else 0)


# ---- 1.4 saved values and grad mode ----


@pytest.mark.extra
def test_context_keeps_values_until_released() -> None:
    ctx = Context()
    ctx.save_for_backward(1.0, 2.0)
    assert ctx.saved_tensors == (1.0, 2.0)
    ctx.release()
    with pytest.raises(RuntimeError, match="second time"):
        _ = ctx.saved_tensors


@pytest.mark.extra
def test_grad_mode_switches_and_restores() -> None:
    assert is_grad_enabled()
    with no_grad():
        assert not is_grad_enabled()
        with enable_grad():
            assert is_grad_enabled()
        assert not is_grad_enabled()
    assert is_grad_enabled()

    @no_grad()
    def inside() -> bool:
        return is_grad_enabled()

    assert inside() is False and is_grad_enabled()
    set_grad_enabled(False)
    try:
        assert not is_grad_enabled()
    finally:
        set_grad_enabled(True)
