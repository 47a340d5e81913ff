"""Run a PyTorch program under PyTorch or under minifw, changing only its import lines.

`as_minifw(source)` rewrites `import torch`, `import torch.nn as nn`, `from torch import
nn` and `from torch.x import y` to the same names from minifw; nothing else in the
program changes. `run(path, lib)` executes a program and returns what it printed;
`load(path, lib)` returns its namespace (for files that define functions).
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
_IMPORT = re.compile(r"^(\s*)(import|from)\s+torch(\.[\w.]+)?(\s|$)", re.MULTILINE)
NUMBER = re.compile(r"-?\d+\.?\d*(?:e[-+]?\d+)?|nan|-?inf")


def as_minifw(source: str) -> str:
    """`source` with every import of torch turned into the same import of minifw."""

    def swap(match: re.Match[str]) -> str:
        indent, word, sub, end = match.groups()
        sub = sub or ""
        if word == "import" and not sub:
            return f"{indent}import minifw as torch{end}"
        return f"{indent}{word} minifw{sub}{end}"

    return _IMPORT.sub(swap, source)


def _source(path: Path, lib: str) -> str:
    text = path.read_text()
    return as_minifw(text) if lib == "minifw" else text


def load(path: Path, lib: str) -> dict[str, Any]:
    """The namespace of the program at `path` run under `lib` ("torch" or "minifw")."""
    namespace: dict[str, Any] = {"__name__": f"program_{path.stem}_{lib}"}
    exec(compile(_source(path, lib), str(path), "exec"), namespace)
    return namespace


def run(path: Path, lib: str) -> str:
    """What the program at `path` prints when run as a script under `lib`."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_source(path, lib), str(path), "exec"), {"__name__": "__main__"})
    return out.getvalue()


def numbers(text: str) -> list[float]:
    """Every number printed in `text`, in order."""
    return [float(n) for n in NUMBER.findall(text)]
