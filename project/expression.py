"""A safe parser and evaluator for the autograd page's expressions in x, y and z.

The user's text is parsed with `ast.parse` into a syntax tree, and only a small,
whitelisted set of node types is accepted:

* numbers (`2`, `0.5`, `1e-3`; no booleans, no complex numbers),
* the names `x`, `y` and `z`,
* the operators `+ - * / **` and unary `-` / `+`,
* calls of the functions in `FUNCTIONS`, either as `exp(x)` (one argument) or as a
  method `x.exp()` (no arguments).

Anything else (attribute access, `__import__`, lambdas, comprehensions, subscripts,
keyword arguments, ...) raises `ExpressionError` with a message saying what was
refused. The accepted tree is then *interpreted* node by node with minifw values:
the text is never given to `eval`, `exec` or `compile`. Numbers are evaluated as
floats, so `9 ** 9 ** 9` overflows at once instead of running for hours.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

NAMES = ("x", "y", "z")
FUNCTIONS = ("exp", "log", "relu", "sigmoid", "tanh", "sqrt", "abs", "sum", "mean")
MAX_LENGTH = 300
MAX_NODES = 200
MAX_VALUE_CELLS = 64

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: lambda value: value,
}


class ExpressionError(ValueError):
    """The text is not an allowed expression (or could not be evaluated); says why."""


def parse(text: str) -> ast.Expression:
    """Parse `text` and check every node against the whitelist.

    Args:
        text: an expression such as `"(x * y + z.exp()).relu()"`.

    Returns:
        The checked syntax tree, ready for `evaluate`.

    Raises:
        ExpressionError: the text is too long, not valid Python syntax, or uses
            anything outside the whitelist (the message names it).
    """
    if not isinstance(text, str):
        raise ExpressionError(f"the expression must be text, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(
            f"the expression is {len(text)} characters long; at most {MAX_LENGTH} are allowed"
        )
    if not text.strip():
        raise ExpressionError("the expression is empty: type something like x * y + z")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        if len(text) == MAX_LENGTH:  # the input box keeps only MAX_LENGTH characters
            raise ExpressionError(
                f"the expression is too long: only its first {MAX_LENGTH} characters were "
                "kept, and they do not form a complete expression"
            ) from None
        where = f" at column {error.offset}" if error.offset else ""
        raise ExpressionError(f"not a valid expression: {error.msg}{where}") from None
    except (ValueError, RecursionError, MemoryError) as error:
        raise ExpressionError(f"not a valid expression: {error}") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise ExpressionError(
            f"the expression has {len(nodes)} parts; at most {MAX_NODES} are allowed"
        )
    _refuse_dunders(nodes)
    _check(tree.body)
    return tree


def variables(tree: ast.Expression) -> list[str]:
    """The variables (of x, y, z) a tree from `parse` reads, sorted; function names excluded.

    In `exp(x)` the name `exp` is the function called, not a value to look up.
    """
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    return sorted(
        {
            node.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Name) and id(node) not in called and node.id in NAMES
        }
    )


def _refuse_dunders(nodes: list[ast.AST]) -> None:
    """Refuse any name, attribute or string that mentions a double-underscore name."""
    for node in nodes:
        word = None
        if isinstance(node, ast.Name):
            word = node.id
        elif isinstance(node, ast.Attribute):
            word = node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            word = node.value
        if word is not None and "__" in word:
            raise ExpressionError(
                f"{word!r} reaches into Python internals (double-underscore names "
                "are never allowed)"
            )


def _check(node: ast.AST) -> None:
    """Raise ExpressionError unless `node` and everything below it is whitelisted."""
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ExpressionError(f"only numbers are allowed as constants, not {value!r}")
        _as_float(value)
    elif isinstance(node, ast.Name):
        if node.id not in NAMES:
            raise ExpressionError(
                f"unknown name {node.id!r}: only x, y and z can be used "
                f"(functions are called like exp(x) or x.exp())"
            )
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINARY:
            raise ExpressionError(
                f"the operator {type(node.op).__name__} is not allowed; use + - * / **"
            )
        _check(node.left)
        _check(node.right)
    elif isinstance(node, ast.UnaryOp):
        if type(node.op) not in _UNARY:
            raise ExpressionError(f"the unary operator {type(node.op).__name__} is not allowed")
        _check(node.operand)
    elif isinstance(node, ast.Call):
        _check_call(node)
    elif isinstance(node, ast.Attribute):
        raise ExpressionError(
            f"attribute access ('.{node.attr}') is not allowed; only "
            f"method calls such as x.exp() are"
        )
    else:
        raise ExpressionError(f"{_describe(node)} is not allowed in an expression")


def _check_call(node: ast.Call) -> None:
    """Accept `f(arg)` and `value.f()` for f in FUNCTIONS, with no keywords or stars."""
    if node.keywords:
        raise ExpressionError("keyword arguments are not allowed")
    if any(isinstance(arg, ast.Starred) for arg in node.args):
        raise ExpressionError("*arguments are not allowed")
    func = node.func
    if isinstance(func, ast.Name):
        if func.id not in FUNCTIONS:
            raise ExpressionError(
                f"the function {func.id!r} is not allowed; allowed: {', '.join(FUNCTIONS)}"
            )
        if len(node.args) != 1:
            raise ExpressionError(f"{func.id}() takes exactly one argument, got {len(node.args)}")
        _check(node.args[0])
    elif isinstance(func, ast.Attribute):
        if func.attr not in FUNCTIONS:
            raise ExpressionError(
                f"the method {func.attr!r} is not allowed; allowed: {', '.join(FUNCTIONS)}"
            )
        if node.args:
            raise ExpressionError(f".{func.attr}() takes no arguments, got {len(node.args)}")
        _check(func.value)
    else:
        raise ExpressionError(f"only named functions can be called, not {_describe(func)}")


def _describe(node: ast.AST) -> str:
    """A readable name for a refused kind of syntax."""
    names = {
        ast.Lambda: "a lambda",
        ast.ListComp: "a list comprehension",
        ast.SetComp: "a set comprehension",
        ast.DictComp: "a dict comprehension",
        ast.GeneratorExp: "a generator expression",
        ast.Subscript: "subscripting ([...])",
        ast.Compare: "a comparison",
        ast.BoolOp: "and/or",
        ast.IfExp: "an if-expression",
        ast.NamedExpr: "an assignment (:=)",
        ast.JoinedStr: "an f-string",
    }
    return names.get(type(node), f"{type(node).__name__} syntax")


def _as_float(value: int | float) -> float:
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ExpressionError(f"the number {str(value)[:20]} is too large")
    return number


def evaluate(
    tree: ast.Expression, variables: Mapping[str, Any], lift: Callable[[float], Any]
) -> Any:
    """Interpret a tree from `parse` with the given values of x, y and z.

    Args:
        tree: a tree returned by `parse`.
        variables: the value of each name (minifw Scalars or Tensors).
        lift: turns a plain number into a constant of the same engine; used when a
            function is applied to a number, as in `exp(1) * x`.

    Returns:
        The expression's value (a Scalar or Tensor when it uses a variable).

    Raises:
        ExpressionError: a name has no value, a function does not apply to the
            value (sum of a Scalar), or the arithmetic fails (overflow, shapes).
    """

    def run(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return _as_float(node.value)  # type: ignore[arg-type]  # parse() checked it
        if isinstance(node, ast.Name):
            if node.id not in variables:
                raise ExpressionError(f"{node.id} has no value")
            return variables[node.id]
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](run(node.left), run(node.right))
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](run(node.operand))
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                name, argument = node.func.id, run(node.args[0])
            else:
                assert isinstance(node.func, ast.Attribute)
                name, argument = node.func.attr, run(node.func.value)
            return _call(name, argument, lift)
        raise ExpressionError(f"{_describe(node)} is not allowed in an expression")

    try:
        return run(tree.body)
    except ExpressionError:
        raise
    except OverflowError:
        raise ExpressionError(
            "cannot evaluate: the result is too large (beyond about 1.8e308, the largest float)"
        ) from None
    except (ArithmeticError, ValueError, RuntimeError, TypeError, IndexError) as error:
        raise ExpressionError(f"cannot evaluate: {error}") from None


def _call(name: str, value: Any, lift: Callable[[float], Any]) -> Any:
    """Apply the whitelisted function `name` to `value` (a number is lifted first)."""
    if name not in FUNCTIONS:  # parse() already refused it; keep the evaluator safe alone
        raise ExpressionError(f"the function {name!r} is not allowed")
    if isinstance(value, float):
        value = lift(value)
    method = getattr(type(value), name, None)
    if method is None:
        hint = " (switch to tensors)" if name in ("sum", "mean") else ""
        raise ExpressionError(f"{name}() does not apply to a {type(value).__name__}{hint}")
    return method(value)


def parse_value(text: str) -> float | list[Any]:
    """Read a number or a (nested) list of numbers typed by the user, like `[1, -2.5]`.

    Only numbers, unary minus and brackets are accepted, at most `MAX_VALUE_CELLS`
    numbers, and nested lists must be rectangular.

    Raises:
        ExpressionError: anything else, with the reason.
    """
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"the value is {len(text)} characters long; at most {MAX_LENGTH}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise ExpressionError(f"not a number or list of numbers: {error}") from None
    value = _literal(tree.body)
    try:
        cells = np.asarray(value, dtype=np.float64).size
    except ValueError:
        raise ExpressionError("nested lists must be rectangular, like [[1, 2], [3, 4]]") from None
    if cells == 0:
        raise ExpressionError("the list is empty")
    if cells > MAX_VALUE_CELLS:
        raise ExpressionError(f"{cells} numbers given; at most {MAX_VALUE_CELLS} are allowed")
    return value


def _literal(node: ast.AST) -> float | list[Any]:
    """A number or nested list from a tree of numbers, unary signs and lists."""
    if isinstance(node, ast.Constant) and not isinstance(node.value, bool):
        if isinstance(node.value, int | float):
            return _as_float(node.value)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _literal(node.operand)
        if isinstance(inner, float):
            return -inner if isinstance(node.op, ast.USub) else inner
    elif isinstance(node, ast.List | ast.Tuple):
        return [_literal(item) for item in node.elts]
    raise ExpressionError("a value must be a number or a list of numbers, like 2.0 or [1, 2]")
