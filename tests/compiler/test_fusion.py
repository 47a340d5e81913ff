"""Kernel fusion (minifw/compiler/fusion.py): what gets fused, how operands are read, caching."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import minifw as mf
from minifw.compiler import fusion as _fusion
from minifw.compiler.compile import compile as mf_compile
from minifw.tools.profiler import profile
from tests.strategies import assert_close

pytestmark = pytest.mark.extra  # given code (profiler, mf.compile): no course task


def values(shape, seed, requires_grad=False):
    data = np.random.default_rng(seed).uniform(-2.0, 2.0, size=shape)
    return mf.tensor(data, requires_grad=requires_grad)


# Compiled and eager runs agree to the last bits, or nearly.
TIGHT = {"rtol": 1e-12, "atol": 1e-12}


def test_a_chain_becomes_one_kernel_that_writes_only_its_result():
    def f(x, y):
        return ((x * y + x).sigmoid() * y - x).relu()

    compiled = mf_compile(f)
    x, y = values((5, 4), 0), values((4,), 1)
    compiled(x, y)
    with profile() as prof:
        got = compiled(x, y)
    assert_close(got, f(x, y), **TIGHT)
    (event,) = prof.events
    assert event.kind == "fused"
    assert event.name == "fused[mul,add,sigmoid,mul,sub,relu]"
    assert event.flops == 6 * 20
    assert event.bytes_read == 8 * (20 + 4)
    assert event.bytes_written == 8 * 20
    assert event.function.endswith("<locals>.f") and event.phase == "forward"
    (plan,) = compiled.plans()
    source = plan.fused[0].source
    assert "@njit(parallel=True, cache=True)" in source
    assert plan.fused[0].path.parent == _fusion.cache_dir()
    assert plan.fused[0].path.read_text() == source
    assert "fused[mul,add,sigmoid,mul,sub,relu]" in compiled.explain()


def shared_intermediate(x, y):
    a = (x * y).exp()
    return a * (x + y).sigmoid(), a


def reduce_reads_a_member(x, y):
    a = x * y
    return (a + 1.0).tanh() * a.sum(dim=-1, keepdim=True)


def transposed_and_sliced(x, y):
    return ((x.T * 2.0).exp().T - x[:, 1:2]).abs() + y


def in_place_on_an_intermediate(x, y):
    z = x * 2.0
    z += y
    return z.tanh() * x


@pytest.mark.parametrize(
    "f",
    [
        shared_intermediate,
        reduce_reads_a_member,
        transposed_and_sliced,
        in_place_on_an_intermediate,
    ],
)
@pytest.mark.parametrize("grad", [False, True])
def test_graphs_with_branches_views_and_in_place_writes_match_eager(f, grad):
    compiled = mf_compile(f)
    compiled(values((3, 4), 0, grad), values((4,), 1, grad))
    x, y = values((3, 4), 2, grad), values((4,), 3, grad)
    ex, ey = values((3, 4), 2, grad), values((4,), 3, grad)
    got, want = compiled(x, y), f(ex, ey)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want, strict=True):
        assert_close(g, w, **TIGHT)
    assert compiled.stats["replays"] == 1
    if grad:
        sum(g.sum() for g in got).backward()
        sum(w.sum() for w in want).backward()
        assert_close(x.grad, ex.grad, **TIGHT)
        assert_close(y.grad, ey.grad, **TIGHT)


@pytest.mark.parametrize(
    ("f", "kinds"),
    [
        (lambda x, r, c: (x * r).exp() + c, ["dense", "block", "block"]),
        (lambda x, r, c: (x * x[:, 0:1, :]).exp() - 2.0, ["dense", "strided", "scalar"]),
        (
            lambda x, r, c: (x.permute(2, 0, 1) + 1.0).tanh() * c.permute(2, 0, 1),
            ["strided", "scalar", "block"],
        ),
    ],
)
def test_broadcast_operands_are_read_the_right_way(f, kinds):
    compiled = mf_compile(f)
    shapes = [(2, 3, 4), (4,), (2, 3, 1)]
    compiled(*(values(s, i) for i, s in enumerate(shapes)))
    args = [values(s, 10 + i) for i, s in enumerate(shapes)]
    assert_close(compiled(*args), f(*args), **TIGHT)
    (kernel,) = compiled.plans()[0].fused
    assert [_fusion.leaf_access(r, kernel.group.shape)[0] for r in kernel.group.leaves] == kinds


@pytest.mark.parametrize(
    ("out", "operand", "kind"),
    [
        ((4, 3, 5), (3, 5), "column"),  # spans the last two dims
        ((4, 3, 5), (5,), "column"),
        ((4, 3, 1), (3, 1), "column"),  # rows of one cell: the column is the row number
        ((4, 3, 5), (4, 1, 1), "row"),  # one cell per 3 rows
        ((4, 3, 5), (1, 3, 1), "row"),
        ((4, 3, 5), (4, 3, 1), "row"),
        ((64, 10), (64, 1), "row"),
    ],
)
def test_row_and_column_operands_are_read_without_a_division_per_cell(out, operand, kind):
    f = mf_compile(lambda x, b: (x + b).exp() * b)
    f(values(out, 1), values(operand, 2))
    (kernel,) = f.plans()[0].fused
    kinds = [_fusion._read_kind(r, kernel.group.shape) for r in kernel.group.leaves]
    assert kinds == ["dense", kind]
    assert "for r in prange(cells // last):" in kernel.source
    assert " // n1" not in kernel.source.split("for j in range(last):")[1]
    x, b = values(out, 3), values(operand, 4)
    np.testing.assert_array_equal(f(x, b).numpy(), ((x + b).exp() * b).numpy())


@pytest.mark.parametrize(
    "shape",
    [(2, 3, 4), (3, 1, 5), (4, 3, 1), (5, 7), (40, 30, 20), (3, 2, 2, 9000)],
    # (40, 30, 20) and (3, 2, 2, 9000): several tasks of whole rows, and rows longer
    # than a task's share of cells
)
def test_strided_operands_step_from_row_to_row_without_a_division_per_cell(shape):
    dims = len(shape)
    backwards = tuple(range(dims - 1, -1, -1))

    def f(x, r, c):  # x read through a permute: strided; r a row block, c a column block
        return (x.permute(*backwards) * r + c).tanh() - x.permute(*backwards)

    row = (shape[0],) + (1,) * (dims - 1)
    args = [values(shape[::-1], 1), values(row, 2), values(shape[-1:], 3)]
    compiled = mf_compile(f)
    compiled(*args)
    (kernel,) = compiled.plans()[0].fused
    kinds = [_fusion._read_kind(r, kernel.group.shape) for r in kernel.group.leaves]
    assert "strided" in kinds
    cell_loop = kernel.source.split("for j in range(last):")[1].split("@njit")[0]
    assert "%" not in cell_loop and "//" not in cell_loop
    args = [values(shape[::-1], 4), values(row, 5), values(shape[-1:], 6)]
    assert_close(compiled(*args), f(*args), **TIGHT)


def test_the_disk_cache_serves_a_second_process(tmp_path):
    script = textwrap.dedent(
        f"""
        import minifw as mf
        from minifw.compiler import fusion as _fusion
        from minifw.compiler.compile import compile as mf_compile
        _fusion.set_cache_dir({str(tmp_path)!r})
        f = mf_compile(lambda x: (x * 3.0).sigmoid().abs())
        x = mf.ones(4)
        f(x)
        f(x)
        kernel = f.plans()[0].fused[0].serial_kernel
        print(sum(kernel.stats.cache_hits.values()))
        """
    )
    root = Path(__file__).resolve().parents[2]
    runs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root)
        for _ in range(2)
    ]
    assert [r.returncode for r in runs] == [0, 0], runs[1].stderr
    assert [r.stdout.split()[-1] for r in runs] == ["0", "1"]
    assert len(list(tmp_path.glob("fused_*.py"))) == 1


@pytest.fixture
def fresh_cache(monkeypatch):
    """Forget the chosen cache folder and the loaded kernels (restored afterwards)."""
    monkeypatch.setattr(_fusion, "_cache_dir", [None])
    monkeypatch.setattr(_fusion, "_kernels", {})
    return _fusion


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


posix_only = pytest.mark.skipif(os.name == "nt", reason="POSIX owners and permission bits")


@posix_only
def test_a_planted_kernel_file_is_never_executed(tmp_path, fresh_cache):
    def f(x):
        return (x * 3.0).sigmoid().abs()

    fresh_cache.set_cache_dir(tmp_path / "cache")
    x = values((4, 3), 0)
    compiled = mf_compile(f)
    compiled(x)
    (kernel,) = compiled.plans()[0].fused
    marker = tmp_path / "planted-code-ran"
    planted = textwrap.dedent(
        f"""
        import pathlib
        pathlib.Path({str(marker)!r}).write_text("owned")
        def kernel(*args):
            pass
        kernel_serial = kernel
        """
    )
    kernel.path.write_text(planted)
    fresh_cache._kernels.clear()
    again = mf_compile(f)
    with pytest.warns(_fusion.CacheDirWarning, match="did not match"):
        again(x)
        got = again(x)
    assert not marker.exists()
    assert_close(got, f(x), **TIGHT)
    assert kernel.path.read_text() == kernel.source  # rewritten with the right source


@posix_only
def test_new_cache_folders_are_private(tmp_path, fresh_cache):
    target = tmp_path / "made" / "for" / "kernels"
    fresh_cache.set_cache_dir(target)
    assert fresh_cache.cache_dir() == target
    assert [_mode(p) for p in (tmp_path / "made", tmp_path / "made" / "for", target)] == [
        0o700
    ] * 3


@posix_only
@pytest.mark.parametrize("mode", [0o777, 0o770, 0o757, 0o1777])
def test_a_folder_others_can_write_is_refused(tmp_path, fresh_cache, mode):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    with pytest.raises(PermissionError, match=r"writable by (group|others).*plant code"):
        fresh_cache.set_cache_dir(shared)
    assert fresh_cache._cache_dir == [None]


@posix_only
def test_an_unsafe_folder_from_the_environment_falls_back_to_a_private_one(
    tmp_path, fresh_cache, monkeypatch
):
    numba_dir = tmp_path / "numba"
    (numba_dir / "minifw-fused").mkdir(parents=True)
    (numba_dir / "minifw-fused").chmod(0o777)
    monkeypatch.setattr(_fusion.numba.config, "CACHE_DIR", str(numba_dir))
    monkeypatch.setattr(_fusion.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    squatted = tmp_path / "tmp" / f"minifw-fused-{os.getuid()}"
    squatted.mkdir(mode=0o777)
    squatted.chmod(0o777)
    with pytest.warns(_fusion.CacheDirWarning, match="writable by group and others") as caught:
        chosen = fresh_cache.cache_dir()
    assert chosen not in (numba_dir / "minifw-fused", squatted)
    assert chosen.parent == tmp_path / "tmp" and _mode(chosen) == 0o700
    assert str(squatted) in str(caught[0].message)
