"""The reading path of docs/ARCHITECTURE.md: `(a * b).sum().backward()` stays in few files."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.staff

REPO = Path(__file__).resolve().parents[2]
MAX_FILES = 8


def test_one_expression_and_its_backward_read_through_few_files() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "reading_path.py")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    files = re.findall(r"^\s*\d+\. (\S+)$", done.stdout, re.MULTILINE)
    summary = re.search(r"calls code in (\d+) files", done.stdout)
    assert summary is not None and int(summary.group(1)) == len(files), done.stdout
    count = len(files)
    # the path runs from the Tensor method through the Function, the launcher and the
    # reference kernel, and back through the autograd engine
    for name in ("tensor/tensor.py", "tensor/functions.py", "tensor_ops.py", "simple_ops.py"):
        assert f"minifw/{name}" in files
    assert "minifw/core/autodiff.py" in files
    assert files[0] == "minifw/tensor/tensor.py"
    assert count <= MAX_FILES, f"{count} files on the reading path: {files}"
