"""The training scripts end to end with small settings (flags, logs, plot, checkpoints)."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from project import run_digits, run_fast_tensor, run_tensor

ROOT = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"
# The scripts' command lines are given code: no task teaches them (each task's training
# tests live beside its training code).
pytestmark = [pytest.mark.slow, pytest.mark.extra]


def log_epochs(out: str) -> list[int]:
    return [
        int(line.split()[1].split("/")[0]) for line in out.splitlines() if line.startswith("epoch")
    ]


def test_run_tensor_trains_plots_and_checkpoints(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    plot, checkpoint = tmp_path / "xor.png", tmp_path / "xor.mf"
    argv = ["--dataset", "xor", "--points", "16", "--hidden", "4", "--batch", "8",
            "--no-progress", "--checkpoint", str(checkpoint), "--log-every", "2"]  # fmt: skip
    assert run_tensor.main([*argv, "--epochs", "4", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "run_tensor: epochs=4 dataset=xor points=16 hidden=4" in out and "backend=simple" in out
    assert log_epochs(out) == [2, 4]
    summary = [line for line in out.splitlines() if line.startswith("done:")]
    assert len(summary) == 1 and "xor on simple, 4 epochs" in summary[0]
    assert "ms/epoch" in summary[0] and "train accuracy" in summary[0]
    assert plot.read_bytes().startswith(PNG) and checkpoint.exists()

    assert run_tensor.main([*argv, "--epochs", "6", "--resume"]) == 0
    out = capsys.readouterr().out
    assert f"resumed {checkpoint}: 4 epochs done" in out
    assert log_epochs(out) == [6] and "6 epochs in" in out


def test_bad_flags_exit_with_a_usage_message(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    for argv, message in [
        (["--epochs", "-1"], "--epochs must be positive"),
        (["--lr", "0"], "--lr must be positive"),
        (["--resume"], "--resume needs --checkpoint"),
        (["--resume", "--checkpoint", str(tmp_path / "none.mf")], "does not exist"),
        (["--dataset", "moons"], "invalid choice"),
        (["--backend", "tpu"], "invalid choice"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            run_tensor.main(argv)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err


@pytest.mark.parametrize("form", ["file", "module"])
def test_scripts_run_as_a_file_and_as_a_module(form: str) -> None:
    command = ["project/run_tensor.py"] if form == "file" else ["-m", "project.run_tensor"]
    argv = ["--dataset", "simple", "--points", "8", "--hidden", "2", "--epochs", "2",
            "--no-progress"]  # fmt: skip
    result = subprocess.run(
        [sys.executable, *command, *argv], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert "done: simple on simple, 2 epochs" in result.stdout


def test_run_fast_tensor_uses_the_fast_backend(capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["--dataset", "split", "--points", "20", "--hidden", "8", "--batch", "10",
            "--epochs", "3", "--no-progress"]  # fmt: skip
    assert run_fast_tensor.main(argv) == 0
    out = capsys.readouterr().out
    assert "backend=fast" in out and "done: split on fast, 3 epochs" in out
    assert log_epochs(out) == [1, 2, 3]


def test_run_digits_small_run_reports_test_accuracy(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    plot = tmp_path / "digits.png"
    argv = [
        "--limit",
        "64",
        "--epochs",
        "2",
        "--batch",
        "32",
        "--no-progress",
        "--plot",
        str(plot),
    ]
    assert run_digits.main(argv) == 0
    out = capsys.readouterr().out
    assert "run_digits: epochs=2 data=digits" in out
    assert log_epochs(out) == [1, 2] and "test accuracy" in out
    assert "done: digits on fast, 2 epochs" in out
    assert plot.read_bytes().startswith(PNG)


def write_idx(path: Path, magic: int, array: np.ndarray, gzipped: bool) -> None:
    header = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in array.shape)
    raw = header + array.astype(np.uint8).tobytes()
    if gzipped:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(raw))
    else:
        path.write_bytes(raw)


def test_run_digits_reads_mnist_idx_files(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    for kind, n, gzipped in (("train", 24, True), ("t10k", 8, False)):
        write_idx(
            tmp_path / f"{kind}-images-idx3-ubyte",
            2051,
            rng.integers(0, 256, (n, 12, 12)),
            gzipped,
        )
        write_idx(tmp_path / f"{kind}-labels-idx1-ubyte", 2049, rng.integers(0, 10, n), gzipped)
    argv = ["--mnist", str(tmp_path), "--epochs", "1", "--batch", "8", "--no-progress"]
    assert run_digits.main(argv) == 0
    out = capsys.readouterr().out
    assert f"data=mnist:{tmp_path}" in out and "1 epochs in" in out
    with pytest.raises(SystemExit):
        run_digits.main(["--mnist", str(tmp_path / "missing")])


def test_run_scalar_shares_the_cli_checkpoints_and_plot(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from project import run_scalar

    plot, checkpoint = tmp_path / "scalar.png", tmp_path / "scalar.mf"
    argv = ["--dataset", "diag", "--points", "10", "--hidden", "2", "--no-progress",
            "--checkpoint", str(checkpoint)]  # fmt: skip
    assert run_scalar.main([*argv, "--epochs", "3", "--plot", str(plot)]) == 0
    assert "done: diag on scalar, 3 epochs" in capsys.readouterr().out
    assert plot.read_bytes().startswith(PNG)
    assert run_scalar.main([*argv, "--epochs", "5", "--resume", "--log-every", "1"]) == 0
    out = capsys.readouterr().out
    assert f"resumed {checkpoint}: 3 epochs done" in out and log_epochs(out) == [4, 5]
    with pytest.raises(SystemExit):
        run_scalar.main(["--backend", "fast"])  # the Scalar engine has no backends
