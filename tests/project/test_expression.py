"""The autograd page's expression parser: whitelisted syntax only, never eval."""

from __future__ import annotations

import ast
import math
import time
from pathlib import Path

import numpy as np
import pytest

import minifw as mf
from project.expression import (
    MAX_LENGTH,
    ExpressionError,
    evaluate,
    parse,
    parse_value,
    variables,
)

pytestmark = pytest.mark.extra

SOURCE = Path(__file__).resolve().parents[2] / "project" / "expression.py"


def scalars(**values: float) -> dict[str, mf.Scalar]:
    return {name: mf.Scalar(value) for name, value in values.items()}


def run_scalars(text: str, **values: float) -> tuple[mf.Scalar, dict[str, mf.Scalar]]:
    leaves = scalars(**values)
    out = evaluate(parse(text), leaves, lambda v: mf.Scalar(v, requires_grad=False))
    return out, leaves


def test_arithmetic_and_functions_match_python_math() -> None:
    out, leaves = run_scalars("(x * y + z.exp()).relu() + x ** 2 / y - -z", x=2.0, y=-1.5, z=0.5)
    expected = max(2.0 * -1.5 + math.exp(0.5), 0.0) + 2.0**2 / -1.5 + 0.5
    assert out.data == pytest.approx(expected)
    out.backward()
    # d/dx = y * [relu'] + 2x / y ; relu' = 1 since x*y + e^z = -1.35 < 0 -> 0
    assert leaves["x"].grad == pytest.approx(2 * 2.0 / -1.5)
    assert leaves["z"].grad == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("text", "reference"),
    [
        ("exp(x)", math.exp(0.3)),
        ("x.exp()", math.exp(0.3)),
        ("log(x + 1)", math.log(1.3)),
        ("sigmoid(x) * tanh(y)", 1 / (1 + math.exp(-0.3)) * math.tanh(-0.7)),
        ("relu(y) + x.relu()", 0.3),
        ("+x - 2.5e-1", 0.05),
        ("exp(1) * x", math.e * 0.3),
    ],
)
def test_whitelisted_calls_in_both_forms(text: str, reference: float) -> None:
    out, _ = run_scalars(text, x=0.3, y=-0.7)
    assert out.data == pytest.approx(reference)


def test_tensor_expression_values_and_gradients() -> None:
    x = mf.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = mf.tensor([0.5, -1.0, 2.0], requires_grad=True)
    out = evaluate(parse("(x * y).sum() + y.mean()"), {"x": x, "y": y}, mf.tensor)
    out.backward()
    assert out.item() == pytest.approx(0.5 - 2.0 + 6.0 + 1.5 / 3)
    np.testing.assert_allclose(x.grad.numpy(), [0.5, -1.0, 2.0])
    np.testing.assert_allclose(y.grad.numpy(), [1.0 + 1 / 3, 2.0 + 1 / 3, 3.0 + 1 / 3])


MALICIOUS = [
    "__import__('os').system('ls')",
    "x.__class__",
    "x.__class__.__bases__[0].__subclasses__()",
    "(1).__class__",
    "x.__dict__",
    "x.data",
    "x.backward()",
    "getattr(x, 'data')",
    "open('/etc/passwd')",
    "eval('1')",
    "exec('x = 1')",
    "globals()",
    "lambda: 1",
    "(lambda q: q)(x)",
    "[a for a in (1, 2)]",
    "{a: 1 for a in (1, 2)}",
    "sum(a for a in (1, 2))",
    "x[0]",
    "x['__class__']",
    "{'a': 1}",
    "'text'",
    "f'{x}'",
    "True",
    "1j * x",
    "x if y else z",
    "x < y",
    "x and y",
    "(w := 3)",
    "exp(x, y)",
    "x.exp(1)",
    "exp(x=1)",
    "exp(*x)",
    "q + 1",
    "import os",
    "x; y",
    "x @ y",
    "x // y",
    "~x",
    "",
    "1" * 400,
]


@pytest.mark.parametrize("text", MALICIOUS)
def test_malicious_or_foreign_input_is_refused(text: str) -> None:
    with pytest.raises(ExpressionError) as info:
        parse(text)
    assert str(info.value)  # a message says why


def test_refusal_messages_name_the_problem() -> None:
    with pytest.raises(ExpressionError, match="double-underscore"):
        parse("__import__('os').system('ls')")
    with pytest.raises(ExpressionError, match="double-underscore"):
        parse("x.__class__")
    with pytest.raises(ExpressionError, match="lambda"):
        parse("lambda: 1")
    with pytest.raises(ExpressionError, match="comprehension"):
        parse("[a for a in (1, 2)]")
    with pytest.raises(ExpressionError, match="subscripting"):
        parse("x[0]")
    with pytest.raises(ExpressionError, match="'system' is not allowed"):
        parse("x.system()")


def test_huge_powers_fail_fast_instead_of_hanging() -> None:
    start = time.perf_counter()
    with pytest.raises(ExpressionError, match="cannot evaluate"):
        run_scalars("9 ** 9 ** 9 * x", x=1.0)
    assert time.perf_counter() - start < 5.0  # a watchdog, not a speed claim
    with pytest.raises(ExpressionError, match="too large"):
        parse("1e400 * x")


def test_evaluation_errors_become_expression_errors() -> None:
    with pytest.raises(ExpressionError, match="switch to tensors"):
        run_scalars("x.sum()", x=1.0)
    with pytest.raises(ExpressionError, match="cannot evaluate"):
        run_scalars("x * (1 / 0)", x=1.0)
    with pytest.raises(ExpressionError, match="has no value"):
        evaluate(parse("x + y"), scalars(x=1.0), mf.Scalar)


def test_parse_value_reads_numbers_and_rectangular_lists() -> None:
    assert parse_value("2.5") == 2.5
    assert parse_value("-3") == -3.0
    assert parse_value("[[1, 2], [3, -4.5]]") == [[1.0, 2.0], [3.0, -4.5]]
    for bad in ("[1, [2]]", "[]", "x", "__import__('os')", "[1] * 100", "'1'", "[True]"):
        with pytest.raises(ExpressionError):
            parse_value(bad)
    with pytest.raises(ExpressionError, match="at most"):
        parse_value(str(list(range(100))))


def test_the_module_never_calls_eval_exec_or_compile() -> None:
    tree = ast.parse(SOURCE.read_text())
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not called & {"eval", "exec", "compile", "__import__"}
    literal_evals = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in ("literal_eval", "eval", "exec")
    ]
    assert not literal_evals


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("exp(x)", ["x"]),
        ("sum(x * y) + z.exp()", ["x", "y", "z"]),
        ("mean(relu(y)) - 1", ["y"]),
        ("x.sigmoid().sum()", ["x"]),
        ("exp(1) * 2", []),
    ],
)
def test_variables_are_the_names_an_expression_reads_not_its_functions(text, names) -> None:
    assert variables(parse(text)) == names


@pytest.mark.parametrize(
    ("engine", "text", "values", "value", "grads"),
    [
        ("Scalars", "exp(x)", {"x": "0.5"}, math.exp(0.5), {"x": math.exp(0.5)}),
        ("Scalars", "relu(x) * y + tanh(z)", {"x": "2", "y": "3", "z": "0"}, 6.0,
         {"x": 3.0, "y": 2.0, "z": 1.0}),
        ("Tensors", "sum(exp(x) * y)", {"x": "[0, 1]", "y": "2"}, 2 + 2 * math.e,
         {"x": [2.0, 2 * math.e], "y": 1 + math.e}),
    ],
)  # fmt: skip
def test_the_autograd_page_builds_function_call_forms(engine, text, values, value, grads):
    pytest.importorskip("streamlit")
    from project.app_pages.autograd import build

    raw = {"x": "1.0", "y": "1.0", "z": "1.0", **values}
    out, leaves = build(engine, text, raw)
    assert sorted(leaves) == sorted(grads)
    number = out.data if engine == "Scalars" else out.item()
    assert number == pytest.approx(value)
    for name, grad in grads.items():
        got = leaves[name].grad
        got = got if engine == "Scalars" else got.numpy().tolist()
        assert got == pytest.approx(grad), name


def test_messages_say_too_large_and_too_long_without_a_doubled_prefix() -> None:
    with pytest.raises(ExpressionError, match="result is too large") as info:
        run_scalars("9**9**9", x=1.0)
    assert "Numerical result" not in str(info.value)
    cut = ("x + " * 100)[:MAX_LENGTH]  # what a 300-character box keeps of a longer input
    with pytest.raises(ExpressionError, match="too long") as info:
        parse(cut)
    assert "column" not in str(info.value)
    with pytest.raises(ExpressionError) as info:
        parse("__import__('os')")
    assert not str(info.value).startswith("refused")  # the page adds "refused: " once
