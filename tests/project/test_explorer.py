"""The tensor explorer's logic: views share one storage; index -> position."""

from __future__ import annotations

import numpy as np
import pytest

from project.explorer import (
    ExplorerError,
    apply_step,
    formula,
    html_storage,
    html_view,
    new_storage,
    parse_index,
    parse_ints,
    positions_used,
)

pytestmark = pytest.mark.extra  # the explorer is given app code: no task teaches it


def values(view) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The view's cells read through its strides, in row-major order of the view."""
    return np.array([view.get(list(i)) for i in view.indices()]).reshape(view.shape)


def test_new_storage_is_contiguous_and_holds_positions() -> None:
    base = new_storage((2, 3, 4))
    assert base.shape == (2, 3, 4) and base.strides == (12, 4, 1) and base.offset == 0
    np.testing.assert_array_equal(values(base), np.arange(24).reshape(2, 3, 4))
    with pytest.raises(ExplorerError, match="at most"):
        new_storage((20, 20))
    with pytest.raises(ExplorerError, match="positive"):
        new_storage((2, 0))


@pytest.mark.parametrize(
    ("step", "argument", "reference"),
    [
        ("permute", "2, 0, 1", lambda a: a.transpose(2, 0, 1)),
        ("transpose", "0, -1", lambda a: a.swapaxes(0, 2)),
        ("view", "6, -1", lambda a: a.reshape(6, 4)),
        ("slice", "1, 0:3:2", lambda a: a[1, 0:3:2]),
        ("slice", "..., None, 1", lambda a: a[..., None, 1]),
        ("expand", "3, 2, 3, 4", lambda a: np.broadcast_to(a, (3, 2, 3, 4))),
        ("unsqueeze", "1", lambda a: a[:, None]),
    ],
)
def test_each_step_matches_numpy_and_shares_the_storage(step, argument, reference) -> None:  # type: ignore[no-untyped-def]
    base = new_storage((2, 3, 4))
    view = apply_step(base, step, argument)
    np.testing.assert_array_equal(values(view), reference(np.arange(24.0).reshape(2, 3, 4)))
    assert view.base is base.base  # no copy


def test_strides_change_while_storage_stays() -> None:
    base = new_storage((2, 3))
    t = apply_step(base, "transpose", "0, 1")
    assert t.shape == (3, 2) and t.strides == (1, 3) and not t.is_contiguous()
    e = apply_step(new_storage((3, 1)), "expand", "3, 4")
    assert e.strides == (1, 0)
    s = apply_step(base, "slice", "1, 1:")
    assert s.offset == 4 and s.strides == (1,)
    assert formula(s, (1,)) == "4 + 1*1 = 5"
    assert formula(t, (2, 1)) == "0 + 2*1 + 1*3 = 5"


def test_view_of_a_transposed_tensor_is_refused_with_pytorch_reason() -> None:
    t = apply_step(new_storage((2, 3)), "transpose", "0, 1")
    with pytest.raises(ExplorerError, match="reshape"):
        apply_step(t, "view", "6")
    with pytest.raises(ExplorerError, match="invalid for input of size 6"):
        apply_step(new_storage((2, 3)), "view", "4, 2")


@pytest.mark.parametrize(
    ("step", "argument"),
    [
        ("permute", "0, 0"),
        ("permute", "a, b"),
        ("transpose", "0"),
        ("expand", "3, 5"),
        ("slice", "__import__('os')"),
        ("slice", "x"),
        ("slice", "5"),
        ("slice", "0, 0, 0"),
        ("unsqueeze", "7"),
        ("rotate", "1"),
    ],
)
def test_bad_steps_raise_explorer_errors(step: str, argument: str) -> None:
    with pytest.raises(ExplorerError):
        apply_step(new_storage((2, 3)), step, argument)


def test_parsers() -> None:
    assert parse_ints("(2, 3,4)", "shape") == (2, 3, 4)
    assert parse_index("0, 1:3, ::2, None, ...") == (
        0,
        slice(1, 3),
        slice(None, None, 2),
        None,
        ...,
    )
    assert parse_index("-1") == (-1,)
    with pytest.raises(ExplorerError):
        parse_ints("2.5", "shape")
    with pytest.raises(ExplorerError):
        parse_index("1 + 1")


def test_positions_used_and_html_highlight_the_cells_a_view_reads() -> None:
    base = new_storage((2, 3))
    column = apply_step(base, "slice", ":, 1")
    assert positions_used(column) == {1: [(0,)], 4: [(1,)]}
    broadcast = apply_step(apply_step(base, "slice", "0:1, :"), "expand", "4, 3")
    assert positions_used(broadcast)[2] == [(0, 2), (1, 2), (2, 2), (3, 2)]
    page = html_storage(column, selected=4)
    assert page.count("background:#bfdbfe") == 2  # the two cells the column reads
    assert page.count("outline:3px") == 1
    grid = html_view(apply_step(new_storage((2, 2, 2)), "permute", "2, 1, 0"), (1, 0, 1))
    assert grid.count("<table") == 2 and grid.count("outline:3px") == 1 and "@5" in grid
