"""Eight tutorial-style PyTorch programs run under minifw with only their imports changed.

Each program in tutorials/ is plain PyTorch. It runs once under PyTorch and once with
its import lines rewritten to minifw (programs.as_minifw); every number the two runs
print must agree: to 1e-6 with both libraries in float64, and to 2e-3 in float32 (where
the two libraries' different summation orders drift apart over a training run).
"""

from __future__ import annotations

import math

import pytest

import minifw as mf
from tests.pytorch_programs.programs import HERE, as_minifw, numbers, run

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.extra
PROGRAMS = sorted((HERE / "tutorials").glob("*.py"))
TOLERANCE = {"float64": 1e-6, "float32": 2e-3}


@pytest.fixture(params=["float64", "float32"])
def default_dtype(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Both libraries' default float dtype set to one value for the test."""
    before = torch.get_default_dtype(), mf.get_default_dtype()
    torch.set_default_dtype(getattr(torch, request.param))
    mf.set_default_dtype(getattr(mf, request.param))
    yield request.param
    torch.set_default_dtype(before[0])
    mf.set_default_dtype(before[1])


def test_there_are_eight_programs():
    assert len(PROGRAMS) == 8


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_program_prints_what_pytorch_prints(program, default_dtype):
    theirs = run(program, "torch")
    ours = run(program, "minifw")
    want, got = numbers(theirs), numbers(ours)
    assert len(got) == len(want) >= 4, f"printed:\n{ours}\nPyTorch printed:\n{theirs}"
    tolerance = TOLERANCE[default_dtype]
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert math.isclose(g, w, rel_tol=tolerance, abs_tol=tolerance * 1e-3), (
            f"number {i}: {g} vs PyTorch's {w}\nminifw printed:\n{ours}\n"
            f"PyTorch printed:\n{theirs}"
        )


def test_only_the_imports_change():
    for program in PROGRAMS:
        source = program.read_text()
        changed = [
            (a, b)
            for a, b in zip(source.splitlines(), as_minifw(source).splitlines(), strict=True)
            if a != b
        ]
        assert changed, f"{program.name} imports nothing from torch"
        assert all(a.lstrip().startswith(("import torch", "from torch")) for a, _ in changed)
        assert all("minifw" in b for _, b in changed)
