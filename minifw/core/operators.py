"""The op table: one row per elementwise op, and everything derived from the rows.

Kernels receive an integer *op code* instead of a Python function (so compiled kernels
cache on disk and one kernel serves every op). A row binds a code to the op's scalar
function of `scalar_math.py` and, for the ops that autograd differentiates cell by
cell, to its derivative rule and to the same rule on tensors (its gradient); it also
names the Tensor method that computes the op and the domain that property tests draw
its arguments from. Derived from the rows: the codes' names, the `unary` / `binary`
dispatchers that kernels call (generated source), the functions the backends compile,
the autograd Functions of unary ops (tensor/functions.py), the in-place twins
(`t.exp_()`) and `mf.` functions of the methods, and the rows of the tests' op table
(tests/strategies.py).
"""

from __future__ import annotations

import linecache
import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from minifw.core import scalar_math as sm

# grad * f'(a) on tensors, as gradient(a, grad): tensor methods and operators only (this
# layer never imports the tensor layer; any object with those methods will do).
GradientRule = Callable[[Any, Any], Any]
# A row's gradient when f' is constant almost everywhere (relu, abs, sign, floor, ...):
# the derivative kernel, launched on (a, grad), is the gradient, and its own derivative
# in `a` is zero.
KERNEL = "kernel"


class Domain(NamedTuple):
    """Where property tests draw an op's argument from: [low, high], with |x| >= min_abs."""

    low: float = -3.0
    high: float = 3.0
    min_abs: float = 0.0


ANY = Domain()
POSITIVE = Domain(0.1, 3.0)
NONZERO = Domain(-3.0, 3.0, min_abs=0.5)
AWAY_FROM_KINK = Domain(-3.0, 3.0, min_abs=0.05)  # gradient checks of relu and abs
UNIT = Domain(-0.95, 0.95)  # inside the domain of asin and acos


@dataclass(frozen=True)
class OpRow:
    """One elementwise op of the table.

    `function` is its scalar function (of `scalar_math.py`); `derivative` gives
    d * f'(x) as derivative(x, d), cell by cell, for the unary ops that autograd
    differentiates. `gradient` is then the same rule on tensors, grad * f'(a) as
    gradient(a, grad) in tensor methods and operators (recorded under create_graph, so
    second derivatives follow), or KERNEL for an op whose f' is constant almost
    everywhere: one launch of the derivative kernel serves. `method` names the Tensor
    method computing the op (None: no method of its own). `domain` holds, per
    argument, where property tests draw it from; `grad_domain` where gradient checks
    draw it from (None: not gradient-checked).
    """

    code: int
    function: Callable[..., float]
    arity: int
    derivative: Callable[[float, float], float] | None = None
    method: str | None = None
    domain: tuple[Domain, ...] = ()
    grad_domain: tuple[Domain, ...] | None = None
    gradient: GradientRule | str | None = None

    @property
    def name(self) -> str:
        """The name of its scalar function (`exp`), which kernels call it by."""
        return self.function.__name__

    @property
    def title(self) -> str:
        """Its PyTorch name, capitalised, as in grad_fn names (`ExpBackward`)."""
        return (self.method or self.name).capitalize()


OP_TABLE: dict[int, OpRow] = {}
# Codes: unary ops 0-99, binary ops 100-199; the derivative rule of unary op c is the
# binary op 200 + c (one code per rule, shared by the ops that share it).
DERIVATIVE_CODES = 200
_SAME = Domain(math.nan)  # grad_domain: the same as `domain`


def unary_op(
    code: int,
    function: Callable[[float], float],
    derivative: Callable[[float, float], float] | None = None,
    *,
    method: str | None = "",
    domain: Domain | None = ANY,
    grad_domain: Domain | None = _SAME,
    gradient: GradientRule | str | None = None,
) -> int:
    """Add the row of a one-argument op (and of its derivative rule) to OP_TABLE.

    An op with a `derivative` needs its `gradient` (see OpRow), and only such an op
    has one. `method` defaults to the function's name; `grad_domain` to `domain` when
    the op has a derivative rule. Returns the op's code.
    """
    domains = () if domain is None else (domain,)
    grads: tuple[Domain, ...] | None = None if grad_domain is None else (grad_domain,)
    if grad_domain is _SAME:
        grads = domains if derivative is not None else None
    name = function.__name__ if method == "" else method
    row = OpRow(code, function, 1, derivative, name, domains, grads, gradient)
    _check_row(row)
    _check_gradient(row)
    if derivative is not None and derivative not in BINARY_FUNCTIONS.values():
        _add_row(OpRow(DERIVATIVE_CODES + code, derivative, 2))
    return _add_row(row)


def binary_op(
    code: int,
    function: Callable[[float, float], float],
    *,
    method: str | None = None,
    domain: tuple[Domain, Domain] = (ANY, ANY),
) -> int:
    """Add the row of a two-argument op to OP_TABLE; return its code."""
    return _add_row(OpRow(code, function, 2, None, method, domain if method else ()))


class _Functions(dict[int, Callable[..., float]]):
    """Op code -> scalar function, for the ops of one arity; a missing code raises."""

    def __init__(self, arity: int) -> None:
        super().__init__()
        self.arity = arity

    def __missing__(self, op: int) -> Callable[..., float]:
        """Raise the ValueError of `check_op`, naming `op` and what it is."""
        check_op(f"{'unary' if self.arity == 1 else 'binary'}_function", op, self.arity)
        raise AssertionError(f"op code {op} is in OP_TABLE but has no function")


UNARY_NAMES: dict[int, str] = {}
BINARY_NAMES: dict[int, str] = {}
CODES: dict[str, int] = {}
# Python's dispatch (SimpleOps, tests): a code's scalar function, looked up in a dict.
UNARY_FUNCTIONS = _Functions(1)
BINARY_FUNCTIONS = _Functions(2)
# Unary op -> the binary op of its derivative rule, for the ops that have one.
DERIVATIVES: dict[int, int] = {}


def _check_row(row: OpRow) -> None:
    """Raise unless `row`'s code and name are free and its code is in its arity's range.

    The row's function must be the function of that name in `scalar_math.py`: the
    backends compile that module's functions by name.
    """
    taken = OP_TABLE.get(row.code)
    if taken is not None or (row.code < 100) != (row.arity == 1) or not 0 <= row.code < 300:
        why = f"taken by {taken.name!r}" if taken else "outside its range"
        raise ValueError(f"op table: code {row.code} of {row.name!r} is {why}")
    if row.name in CODES:
        raise ValueError(f"op table: {row.name!r} has a row already (code {CODES[row.name]})")
    if getattr(sm, row.name, None) is not row.function:
        raise ValueError(f"op table: row {row.name!r} needs scalar_math.{row.name} as function")


def _check_gradient(row: OpRow) -> None:
    """Raise unless `row` has a gradient exactly when it has a derivative rule."""
    if row.derivative is not None and row.gradient is None:
        raise ValueError(
            f"op table: row {row.name!r} has a derivative rule but no gradient: give it "
            f"gradient=lambda a, g: ... (grad * f'(a) in tensor methods) or, when f' is "
            f"constant almost everywhere, gradient=KERNEL"
        )
    if row.derivative is None and row.gradient is not None:
        raise ValueError(f"op table: row {row.name!r} has a gradient but no derivative rule")
    if row.gradient is not None and not callable(row.gradient) and row.gradient != KERNEL:
        raise ValueError(
            f"op table: the gradient of {row.name!r} must be a function or KERNEL, "
            f"got {row.gradient!r}"
        )


def _add_row(row: OpRow) -> int:
    """Check `row` (`_check_row`), add it to OP_TABLE and the tables derived from it."""
    _check_row(row)
    OP_TABLE[row.code] = row
    CODES[row.name] = row.code
    if row.arity == 1:
        UNARY_NAMES[row.code], UNARY_FUNCTIONS[row.code] = row.name, row.function
    else:
        BINARY_NAMES[row.code], BINARY_FUNCTIONS[row.code] = row.name, row.function
    if row.derivative is not None:
        DERIVATIVES[row.code] = CODES[row.derivative.__name__]
    return row.code


# ---- The rows ----------------------------------------------------------------------------
# Adding an elementwise op: its scalar function (and derivative rule) in scalar_math.py, its
# row here (with its gradient), its Tensor method (tensor/tensor.py) and its row of
# docs/pytorch.md.

_LN2, _LN10, _TWO_OVER_SQRT_PI = math.log(2.0), math.log(10.0), 2.0 / math.sqrt(math.pi)


def _sigmoid_gradient(a: Any, g: Any) -> Any:
    s = a.sigmoid()
    return g * (s * (1.0 - s))


def _tanh_gradient(a: Any, g: Any) -> Any:
    t = a.tanh()
    return g * (1.0 - t * t)


def _tan_gradient(a: Any, g: Any) -> Any:
    t = a.tan()
    return g * (1.0 + t * t)


ID = unary_op(0, sm.id, method=None, domain=None)
NEG = unary_op(1, sm.neg, grad_domain=ANY)  # its gradient is the Neg Function's
EXP = unary_op(2, sm.exp, sm.exp_back, gradient=lambda a, g: g * a.exp())
LOG = unary_op(3, sm.log, sm.log_back, domain=POSITIVE, gradient=lambda a, g: g / a)
SIGMOID = unary_op(4, sm.sigmoid, sm.sigmoid_back, gradient=_sigmoid_gradient)
RELU = unary_op(5, sm.relu, sm.relu_back, grad_domain=AWAY_FROM_KINK, gradient=KERNEL)
TANH = unary_op(6, sm.tanh, sm.tanh_back, gradient=_tanh_gradient)
INV = unary_op(
    7, sm.inv, sm.inv_back, method="reciprocal", domain=NONZERO,
    gradient=lambda a, g: -g / (a * a),
)  # fmt: skip
SQRT = unary_op(
    8, sm.sqrt, sm.sqrt_back, domain=POSITIVE, gradient=lambda a, g: g / (2.0 * a.sqrt())
)
ABS = unary_op(9, sm.abs, sm.abs_back, grad_domain=AWAY_FROM_KINK, gradient=KERNEL)
SIN = unary_op(10, sm.sin, sm.sin_back, gradient=lambda a, g: g * a.cos())
COS = unary_op(11, sm.cos, sm.cos_back, gradient=lambda a, g: -g * a.sin())
TAN = unary_op(12, sm.tan, sm.tan_back, domain=Domain(-1.3, 1.3), gradient=_tan_gradient)
ASIN = unary_op(
    13, sm.asin, sm.asin_back, domain=UNIT, gradient=lambda a, g: g * (1.0 - a * a).rsqrt()
)
ACOS = unary_op(
    14, sm.acos, sm.acos_back, domain=UNIT, gradient=lambda a, g: -g * (1.0 - a * a).rsqrt()
)
ATAN = unary_op(15, sm.atan, sm.atan_back, gradient=lambda a, g: g / (1.0 + a * a))
SINH = unary_op(16, sm.sinh, sm.sinh_back, gradient=lambda a, g: g * a.cosh())
COSH = unary_op(17, sm.cosh, sm.cosh_back, gradient=lambda a, g: g * a.sinh())
LOG1P = unary_op(
    18, sm.log1p, sm.log1p_back, domain=Domain(-0.9, 3.0), gradient=lambda a, g: g / (1.0 + a)
)
EXPM1 = unary_op(19, sm.expm1, sm.expm1_back, gradient=lambda a, g: g * a.exp())
LOG2 = unary_op(20, sm.log2, sm.log2_back, domain=POSITIVE, gradient=lambda a, g: g / (a * _LN2))
LOG10 = unary_op(
    21, sm.log10, sm.log10_back, domain=POSITIVE, gradient=lambda a, g: g / (a * _LN10)
)
EXP2 = unary_op(22, sm.exp2, sm.exp2_back, gradient=lambda a, g: g * (a.exp2() * _LN2))
RSQRT = unary_op(
    23, sm.rsqrt, sm.rsqrt_back, domain=POSITIVE,
    gradient=lambda a, g: g * (-0.5 * a.rsqrt() / a),
)  # fmt: skip
SQUARE = unary_op(24, sm.square, sm.square_back, gradient=lambda a, g: g * (2.0 * a))
ERF = unary_op(
    25, sm.erf, sm.erf_back, gradient=lambda a, g: g * (_TWO_OVER_SQRT_PI * (-(a * a)).exp())
)
# Step functions: a zero gradient, and no gradient check (finite differences jump).
SIGN = unary_op(26, sm.sign, sm.zero_back, grad_domain=None, gradient=KERNEL)
FLOOR = unary_op(27, sm.floor, sm.zero_back, grad_domain=None, gradient=KERNEL)
CEIL = unary_op(28, sm.ceil, sm.zero_back, grad_domain=None, gradient=KERNEL)
ROUND = unary_op(29, sm.round, sm.zero_back, grad_domain=None, gradient=KERNEL)
TRUNC = unary_op(30, sm.trunc, sm.zero_back, grad_domain=None, gradient=KERNEL)
FRAC = unary_op(31, sm.frac, sm.frac_back, grad_domain=None, gradient=KERNEL)

ADD = binary_op(100, sm.add)
SUB = binary_op(101, sm.sub)
MUL = binary_op(102, sm.mul)
DIV = binary_op(103, sm.div)
LT = binary_op(104, sm.lt)
GT = binary_op(105, sm.gt)
LE = binary_op(106, sm.le)
GE = binary_op(107, sm.ge)
EQ = binary_op(108, sm.eq)
NE = binary_op(109, sm.ne)
MAX = binary_op(110, sm.max)
MIN = binary_op(111, sm.min)
POW = binary_op(112, sm.pow)
IS_CLOSE = binary_op(113, sm.is_close)
SELECT = binary_op(114, sm.select)
ATAN2 = binary_op(115, sm.atan2, method="atan2", domain=(ANY, NONZERO))
FMOD = binary_op(116, sm.fmod, method="fmod", domain=(ANY, NONZERO))
REMAINDER = binary_op(117, sm.remainder, method="remainder", domain=(ANY, NONZERO))
FLOOR_DIVIDE = binary_op(118, sm.floor_divide, method="floor_divide", domain=(ANY, NONZERO))

# ---- Derived from the rows ---------------------------------------------------------------

# The Tensor methods of the rows, in code order: each is also an `mf.` function, and has
# an in-place twin (`exp_`).
METHODS: list[str] = [row.method for row in OP_TABLE.values() if row.method]


def check_op(what: str, op: int, arity: int) -> None:
    """Raise a ValueError naming `op` unless it is the code of an op of `arity` arguments."""
    row = OP_TABLE.get(op)
    if row is None or row.arity != arity:
        kinds = {1: "unary", 2: "binary"}
        found = f"it is the {kinds[row.arity]} op {row.name!r}" if row else "not in OP_TABLE"
        raise ValueError(f"{what}: op code {op!r} is not a {kinds[arity]} op ({found})")


# The scalar function of a unary / binary op code; a ValueError naming the code if none.
# (Dict lookups: a valid code runs no Python code of this module.)
unary_function: Callable[[int], Callable[[float], float]] = UNARY_FUNCTIONS.__getitem__
binary_function: Callable[[int], Callable[[float, float], float]] = BINARY_FUNCTIONS.__getitem__


# Compiled kernels dispatch with `unary(op, x)` / `binary(op, x, y)`. Numba needs them as
# plain if-chains on integer constants (it folds a chain away when `op` is a constant and
# costs a few compares otherwise; a dict of functions does not compile). Kept by hand, such
# a chain drifted from the table (a forgotten branch returned NaN), so it is generated
# from the rows: print(operators.dispatch_source()) shows it.
_DISPATCH_FILE = "<minifw.core.operators: unary and binary, generated from OP_TABLE>"


def dispatch_source(codes: Iterable[int] | None = None) -> str:
    """The Python source of `unary` and `binary`: one `if op == CODE` branch per row.

    With `codes`, only the rows of those codes get a branch (every other code gives nan):
    the helpers of a kernel compiled for one op (`_jit.PerOp`).
    """
    wanted = None if codes is None else set(codes)
    rows = [row for row in OP_TABLE.values() if wanted is None or row.code in wanted]
    return (
        _dispatcher("unary", "x", 1, rows)
        + "\n\n\n"
        + _dispatcher("binary", "x, y", 2, rows)
        + "\n"
    )


def _dispatcher(name: str, args: str, arity: int, rows: list[OpRow]) -> str:
    typed = ", ".join(f"{arg}: float" for arg in args.split(", "))
    lines = [
        f"def {name}(op: int, {typed}) -> float:",
        f'    """Apply the {name} op whose code is `op` to {args} (generated from OP_TABLE)."""',
    ]
    for row in rows:
        if row.arity == arity:
            lines += [f"    if op == {row.code}:  # {row.name.upper()}"]
            lines += [f"        return {row.name}({args})"]
    lines.append("    return math.nan  # not a code of the table: launchers refuse it first")
    return "\n".join(lines)


def _compile_dispatchers(codes: tuple[int, ...] | None = None) -> dict[str, Any]:
    """Run the generated source with the rows' functions; return its two functions."""
    source = dispatch_source(codes)
    where = _DISPATCH_FILE if codes is None else f"<minifw.core.operators: ops {codes}>"
    linecache.cache[where] = (len(source), None, source.splitlines(True), where)
    scope: dict[str, Any] = {row.name: row.function for row in OP_TABLE.values()}
    scope["math"] = math
    generated: dict[str, Any] = {}
    exec(compile(source, where, "exec"), scope, generated)
    return generated


def dispatchers_for(op: int) -> dict[str, Any]:
    """`unary` and `binary` that know op code `op` only (nan for any other code)."""
    return _compile_dispatchers((op,))


_generated = _compile_dispatchers()
unary: Callable[[int, float], float] = _generated["unary"]
binary: Callable[[int, float, float], float] = _generated["binary"]

# The functions that kernels call; backends recompile exactly these, linked to each other,
# from the modules of KERNEL_MODULES (`_jit.compile_functions`): the rows' functions and
# the constants they read are scalar_math's, the dispatchers this module's.
KERNEL_FUNCTIONS: list[str] = [*CODES, "unary", "binary"]
KERNEL_MODULES: tuple[Any, ...] = (sm, sys.modules[__name__])
