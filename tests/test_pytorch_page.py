"""docs/pytorch.md cannot drift: every row is checked against minifw itself.

A `yes` row's name must resolve in minifw (torch -> minifw); a `no` row's name must
raise NotImplementedError saying why (minifw/core/unsupported.py), and every name that module
refuses must have a `no` row. In the other direction, every PyTorch-named public name of
minifw, nn, nn.functional, optim, lr_scheduler, nn.init, autograd and the Tensor class
must have a row, and so must every torch name the tutorial programs and puzzles use.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

import minifw as mf
from minifw.core import unsupported

pytestmark = pytest.mark.extra
PAGE = Path(__file__).resolve().parents[1] / "docs" / "pytorch.md"
ROW = re.compile(r"^\|\s*`(torch[\w.]*)`\s*\|\s*(yes|no)\s*\|(.*)\|\s*$")
PROGRAMS = Path(__file__).resolve().parent / "pytorch_programs"

# Public names of minifw with no PyTorch counterpart (its own tools and course parts).
MINIFW_ONLY = {
    "minifw": {
        "CudaOps", "DType", "FastOps", "Scalar", "SimpleOps", "TensorBackend", "autodiff",
        "datasets", "dtypes", "get_backend", "operators", "profiler", "serialization",
        "set_default_backend", "viz",
    },
    "minifw.Tensor": {
        "backend", "history", "is_constant", "parents",
        "unique_id", "value",
    },
}  # fmt: skip


def page_rows() -> dict[str, tuple[str, str]]:
    """name -> (yes/no, notes) for every row of the page's tables."""
    rows: dict[str, tuple[str, str]] = {}
    for line in PAGE.read_text().splitlines():
        match = ROW.match(line)
        if match:
            name, status, notes = match.groups()
            assert name not in rows, f"{name} has two rows"
            rows[name] = (status, notes.strip())
    return rows


def resolve(name: str) -> Any:
    """The minifw object a torch name maps to (`torch.Tensor.x` -> `minifw.Tensor.x`)."""
    if name.startswith("torch.Tensor."):  # on an instance: Tensor.__getattr__ refuses there
        return getattr(mf.zeros(1, 1), name.removeprefix("torch.Tensor."))
    parts = ["minifw", *name.split(".")[1:]]
    for cut in range(len(parts), 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            value = getattr(value, attribute)
        return value
    raise AssertionError(f"{name}: no module to start from")


@pytest.fixture(scope="module")
def rows() -> dict[str, tuple[str, str]]:
    found = page_rows()
    assert len(found) > 300, "the page's tables did not parse"
    return found


def test_supported_names_resolve(rows):
    broken = []
    for name, (status, _) in rows.items():
        if status == "yes":
            try:
                resolve(name)
            except (AttributeError, NotImplementedError) as error:
                broken.append(f"{name}: {error}")
    assert not broken, "rows marked yes that minifw lacks:\n" + "\n".join(broken)


def test_unsupported_names_say_why(rows):
    for name, (status, notes) in rows.items():
        if status == "no":
            assert notes, f"{name}: a `no` row needs the reason"
            with pytest.raises(NotImplementedError, match="not supported by minifw"):
                resolve(name)
    for namespace, names in unsupported.UNSUPPORTED.items():
        for name in names:
            assert rows.get(f"{namespace}.{name}", ("",))[0] == "no", f"{namespace}.{name}"


def _public(names: Any, skip: set[str]) -> set[str]:
    return {n for n in names if not n.startswith("_") and n not in skip}


def minifw_names() -> set[str]:
    """Every PyTorch-named public name of minifw, spelled as PyTorch spells it."""
    import minifw.nn.functional as F  # noqa: N812
    import minifw.nn.init as init
    import minifw.optim as optim
    import minifw.optim.lr_scheduler as lr_scheduler

    names = {f"torch.{n}" for n in _public(mf.__all__, MINIFW_ONLY["minifw"])}
    names |= {f"torch.nn.{n}" for n in _public(mf.nn.__all__, {"functional", "init", "utils"})}
    names |= {f"torch.nn.functional.{n}" for n in _public(F.__all__, set())}
    names |= {f"torch.nn.init.{n}" for n in _public(init.__all__, set())}
    optimizers = [n for n in dir(optim) if isinstance(getattr(optim, n), type)]
    names |= {f"torch.optim.{n}" for n in _public(optimizers, {"lr_scheduler"})}
    schedulers = [n for n in dir(lr_scheduler) if isinstance(getattr(lr_scheduler, n), type)]
    names |= {f"torch.optim.lr_scheduler.{n}" for n in _public(schedulers, set())}
    names |= {f"torch.Tensor.{n}" for n in _public(dir(mf.Tensor), MINIFW_ONLY["minifw.Tensor"])}
    return names


def test_every_pytorch_named_api_has_a_row(rows):
    missing = sorted(minifw_names() - set(rows))
    assert not missing, "add rows to docs/pytorch.md for:\n" + "\n".join(missing)


def test_every_name_the_programs_use_is_supported(rows):
    used: set[str] = set()
    for program in [*PROGRAMS.glob("tutorials/*.py"), PROGRAMS / "puzzles.py"]:
        text = program.read_text()
        used |= set(re.findall(r"\btorch(?:\.[A-Za-z_]\w*)+", text))
        used |= {f"torch.nn.{n}" for n in re.findall(r"\bnn\.([A-Z]\w*)", text)}
        used |= {f"torch.nn.functional.{n}" for n in re.findall(r"\bF\.(\w+)", text)}
    modules = {"torch.nn", "torch.nn.functional", "torch.optim", "torch.autograd"}
    used = {n for n in used if n not in modules}
    missing = sorted(n for n in used if rows.get(n, ("",))[0] != "yes")
    assert not missing, "names the programs use without a `yes` row:\n" + "\n".join(missing)


PUBLIC_MODULES = {"autodiff", "autograd", "cuda", "datasets", "dtypes", "linalg", "nn"}
PUBLIC_MODULES |= {"operators", "optim", "serialization", "utils"}


def test_all_lists_every_public_name():
    import types

    public = {
        name
        for name, value in vars(mf).items()
        if not name.startswith("_")
        and name != "annotations"
        and (not isinstance(value, types.ModuleType) or name in PUBLIC_MODULES)
    }
    lazy = {"compile", "profiler", "viz", "FastOps", "CudaOps", "cpu"}
    assert public - lazy <= set(mf.__all__), sorted(public - set(mf.__all__))
    assert set(mf.__all__) - lazy <= public, sorted(set(mf.__all__) - public)
