"""Tests of the Module tree in minifw/nn/module.py.

Task 0.4 writes the walks over the tree (named_children, named_modules, _named_members,
train); registration by assignment, the errors of misuse, Parameter and repr are given
code, tested under `extra`.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minifw.nn import Module, Parameter
from minifw.scalar.scalar import Scalar


class Leaf(Module):
    def __init__(self, value: float = 1.0) -> None:
        super().__init__()
        self.p = Parameter(Scalar(value))
        self.factor = 2  # a plain attribute, not registered

    def forward(self, x: float, *, shift: float = 0.0) -> float:
        return x * self.factor + shift


class Inner(Module):
    def __init__(self) -> None:
        super().__init__()
        self.c = Leaf(3.0)
        self.q = Parameter(Scalar(4.0))


class Net(Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = Parameter(Scalar(0.5))
        self.a = Leaf(1.0)
        self.b = Inner()


# A drawn module tree: (parameters, buffers, children) of each module, so a walk that
# only knows Net's shape fails. Attributes are set parameters first, then buffers, then
# children, and every listing walks modules in pre-order with each module's own first.
Spec = tuple[int, int, list[Any]]
trees: st.SearchStrategy[Spec] = st.recursive(
    st.tuples(st.integers(0, 2), st.integers(0, 2), st.just([])),
    lambda children: st.tuples(
        st.integers(0, 2), st.integers(0, 2), st.lists(children, max_size=3)
    ),
    max_leaves=8,
)


def build(spec: Spec) -> Module:
    """The module tree a spec describes (parameter values count up from 1)."""
    module = Module()
    params, buffers, children = spec
    for i in range(params):
        setattr(module, f"p{i}", Parameter(Scalar(float(i + 1))))
    for i in range(buffers):
        module.register_buffer(f"b{i}", Scalar(float(i), requires_grad=False))
    for i, child in enumerate(children):
        setattr(module, f"m{i}", build(child))
    return module


def walk(spec: Spec, prefix: str = "") -> list[tuple[str, Spec]]:
    """(dotted name, spec) of every module of a spec tree, in pre-order."""
    found = [(prefix, spec)]
    for i, child in enumerate(spec[2]):
        found += walk(child, f"{prefix}.m{i}" if prefix else f"m{i}")
    return found


def own_names(spec: Spec, kind: str) -> list[str]:
    """The dotted names a listing of parameters ("p") or buffers ("b") gives."""
    count = 0 if kind == "p" else 1
    return [f"{name}.{kind}{i}" if name else f"{kind}{i}"
            for name, node in walk(spec) for i in range(node[count])]  # fmt: skip


@pytest.mark.task0_4
@given(trees)
def test_named_parameters_are_dotted_and_in_assignment_order(tree: Spec) -> None:
    drawn = build(tree)
    assert [name for name, _ in drawn.named_parameters()] == own_names(tree, "p")
    assert [name for name, _ in drawn.named_parameters(recurse=False)] == own_names(
        (tree[0], 0, []), "p"
    )
    net = Net()
    names = [name for name, _ in net.named_parameters()]
    assert names == ["w", "a.p", "b.q", "b.c.p"]
    assert [p.value.data for p in net.parameters()] == [0.5, 1.0, 4.0, 3.0]
    assert all(isinstance(p, Parameter) for p in net.parameters())
    assert [name for name, _ in net.named_parameters(recurse=False)] == ["w"]
    assert [name for name, _ in net.b.named_parameters(prefix="b")] == ["b.q", "b.c.p"]


@pytest.mark.task0_4
@given(trees)
def test_children_and_modules(tree: Spec) -> None:
    drawn = build(tree)
    assert [name for name, _ in drawn.named_children()] == [f"m{i}" for i in range(len(tree[2]))]
    assert [name for name, _ in drawn.named_modules()] == [name for name, _ in walk(tree)]
    assert len(list(drawn.modules())) == len(walk(tree))
    net = Net()
    assert [name for name, _ in net.named_children()] == ["a", "b"]
    assert list(net.children()) == [net.a, net.b]
    assert [name for name, _ in net.named_modules()] == ["", "a", "b", "b.c"]
    assert list(net.modules()) == [net, net.a, net.b, net.b.c]
    assert list(Leaf().children()) == []


@pytest.mark.task0_4
@given(trees)
def test_shared_parameters_and_modules_are_listed_once(tree: Spec) -> None:
    drawn = build(tree)
    for child in list(drawn.children()):
        drawn.add_module(f"again_{len(list(drawn.children()))}", child)  # listed once
    assert [name for name, _ in drawn.named_modules()] == [name for name, _ in walk(tree)]
    assert [name for name, _ in drawn.named_parameters()] == own_names(tree, "p")
    net = Net()
    net.tied = net.w  # the same Parameter under a second name
    net.again = net.a  # the same module under a second name
    assert [name for name, _ in net.named_parameters()] == ["w", "a.p", "b.q", "b.c.p"]
    assert [name for name, _ in net.named_modules()] == ["", "a", "b", "b.c"]
    assert len(list(net.parameters())) == 4


@pytest.mark.task0_4
@given(trees)
def test_buffers_are_listed_like_parameters_with_dotted_names(tree: Spec) -> None:
    drawn = build(tree)
    assert [name for name, _ in drawn.named_buffers()] == own_names(tree, "b")
    assert [b.data for b in drawn.buffers()] == [
        float(i) for _, node in walk(tree) for i in range(node[1])
    ]
    net = Net()
    net.register_buffer("steps", Scalar(0.0, requires_grad=False))
    net.b.c.register_buffer("mean", Scalar(1.0, requires_grad=False))
    net.b.c.register_buffer("unset", None)
    assert [name for name, _ in net.named_buffers()] == ["steps", "b.c.mean"]
    assert [name for name, _ in net.named_buffers(recurse=False)] == ["steps"]
    assert [b.data for b in net.buffers()] == [0.0, 1.0]
    assert [name for name, _ in net.b.named_buffers(prefix="b")] == ["b.c.mean"]


@pytest.mark.task0_4
@given(trees, st.data())
def test_train_and_eval_reach_every_submodule(tree: Spec, data: st.DataObject) -> None:
    drawn = build(tree)
    modules = [module for _, module in drawn.named_modules()]
    assert drawn.eval() is drawn and not any(m.training for m in modules)
    pick = data.draw(st.integers(0, len(modules) - 1), label="module set to train")
    modules[pick].train()
    below = {id(m) for m in modules[pick].modules()}
    assert [m.training for m in modules] == [id(m) in below for m in modules]
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    assert net.train() is net
    assert all(m.training for m in net.modules())
    net.b.train(False)
    assert net.training and net.a.training and not net.b.training and not net.b.c.training
    with pytest.raises(ValueError, match="boolean"):
        net.train("yes")  # type: ignore[arg-type]


@pytest.mark.extra
def test_unknown_attributes_raise_naming_class_and_attribute() -> None:
    net = Net()
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'wieght'"):
        _ = net.wieght
    assert not hasattr(net, "missing")
    assert net.a.factor == 2 and "factor" not in dict(net.a.named_parameters())


@pytest.mark.extra
def test_reassigning_and_deleting_registered_attributes() -> None:
    net = Net()
    net.w = Parameter(Scalar(9.0))
    assert net.w.value.data == 9.0 and len(list(net.parameters())) == 4
    with pytest.raises(TypeError, match="cannot assign float as parameter 'w' of Net"):
        net.w = 1.0  # type: ignore[assignment]
    with pytest.raises(TypeError, match="child module 'a'"):
        net.a = "leaf"  # type: ignore[assignment]
    net.w = None  # type: ignore[assignment]  # allowed, as in PyTorch: listed nowhere
    assert net.w is None and [n for n, _ in net.named_parameters()][0] == "a.p"
    net.a = Parameter(Scalar(7.0))  # a name can change kind
    assert [n for n, _ in net.named_children()] == ["b"]
    assert "a" in dict(net.named_parameters())
    del net.a
    assert "a" not in dict(net.named_parameters())
    with pytest.raises(AttributeError):
        _ = net.a


@pytest.mark.extra
def test_register_parameter_and_add_module() -> None:
    m = Module()
    m.register_parameter("weight_0_1", Parameter(Scalar(1.0)))
    m.add_module("layer1", Leaf())
    assert [n for n, _ in m.named_parameters()] == ["weight_0_1", "layer1.p"]
    with pytest.raises(KeyError, match="without '.'"):
        m.register_parameter("a.b", Parameter(Scalar(1.0)))
    with pytest.raises(KeyError, match="already exists"):
        m.add_module("train", Leaf())
    with pytest.raises(TypeError, match="cannot register float"):
        m.register_parameter("x", 1.0)  # type: ignore[arg-type]


@pytest.mark.extra
def test_assigning_before_init_is_a_clear_error() -> None:
    class Forgetful(Module):
        def __init__(self) -> None:
            self.p = Parameter(Scalar(1.0))

    with pytest.raises(AttributeError, match=r"super\(\).__init__\(\)"):
        Forgetful()


@pytest.mark.extra
def test_parameter_wraps_values_and_asks_tensors_for_grad() -> None:
    class FakeTensor:
        def __init__(self) -> None:
            self.requires_grad = False

        def requires_grad_(self, flag: bool = True) -> FakeTensor:
            self.requires_grad = flag
            return self

    t = FakeTensor()
    p = Parameter(t)
    assert p.value is t and t.requires_grad is True
    other = FakeTensor()
    p.update(other)
    assert p.value is other and other.requires_grad is True
    s = Parameter(Scalar(2.0))
    assert s.value.data == 2.0 and repr(s) == "Parameter(Scalar(2.0))"


@pytest.mark.extra
def test_call_runs_forward() -> None:
    leaf = Leaf()
    assert leaf(3.0) == 6.0
    assert leaf(3.0, shift=1.0) == 7.0
    with pytest.raises(
        NotImplementedError, match=r'Module \[Inner\] is missing the required "forward"'
    ):
        Inner()(1.0)


EXPECTED_REPR = """Net(
  (a): Leaf()
  (b): Inner(
    (c): Leaf()
  )
)"""


@pytest.mark.extra
def test_repr_follows_pytorch_layout() -> None:
    assert repr(Net()) == EXPECTED_REPR
    assert repr(Module()) == "Module()"

    class Sized(Module):
        def extra_repr(self) -> str:
            return "in=2, out=3"

    assert repr(Sized()) == "Sized(in=2, out=3)"
    holder = Module()
    holder.add_module("s", Sized())
    assert repr(holder) == "Module(\n  (s): Sized(in=2, out=3)\n)"


@pytest.mark.extra
def test_repr_matches_pytorch() -> None:
    torch = pytest.importorskip("torch")

    def make(base: Any) -> Any:
        class Leaf(base):  # type: ignore[misc, valid-type]
            pass

        class Inner(base):  # type: ignore[misc, valid-type]
            def __init__(self) -> None:
                super().__init__()
                self.c = Leaf()

        class Net(base):  # type: ignore[misc, valid-type]
            def __init__(self) -> None:
                super().__init__()
                self.a = Leaf()
                self.b = Inner()

        return Net()

    assert repr(make(Module)) == repr(make(torch.nn.Module)) == EXPECTED_REPR
