"""Tutorial-style programs with random draws, run under PyTorch and under minifw.

The programs in seeded/ (a DataLoader with worker processes and samplers; seeded
generators) use random generators, whose streams differ between the two libraries. So
they print only what the stream cannot change (sizes, counts, sums over a whole pass,
whether a seeded draw repeats): every number printed must be the same under both, with
only the import lines changed (programs.as_minifw).
"""

from __future__ import annotations

import gc
import multiprocessing

import pytest

from tests.pytorch_programs.programs import HERE, as_minifw, numbers, run

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.extra
PROGRAMS = sorted((HERE / "seeded").glob("*.py"))


def test_there_are_the_seeded_programs() -> None:
    assert [p.stem for p in PROGRAMS] == ["dataloader_workers", "seeded_generators"]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_program_prints_what_pytorch_prints(program) -> None:  # type: ignore[no-untyped-def]
    theirs = run(program, "torch")
    ours = run(program, "minifw")
    assert numbers(ours) == numbers(theirs) and len(numbers(ours)) >= 10, (
        f"minifw printed:\n{ours}\nPyTorch printed:\n{theirs}"
    )
    gc.collect()  # a loader the program kept: its workers stop when it is collected
    left = [p for p in multiprocessing.active_children() if p.name.startswith("minifw")]
    assert left == [], f"the program left worker processes running: {left}"


def test_only_the_imports_change() -> None:
    for program in PROGRAMS:
        source = program.read_text()
        changed = [
            (a, b)
            for a, b in zip(source.splitlines(), as_minifw(source).splitlines(), strict=True)
            if a != b
        ]
        assert changed and all(
            a.lstrip().startswith(("import torch", "from torch")) for a, _ in changed
        )
