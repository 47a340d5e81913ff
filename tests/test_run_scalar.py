"""Tests of the Scalar training run: project/scalar_model.py and project/run_scalar.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from minifw.datasets import simple
from minifw.scalar.scalar import Scalar

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `project` is not an installed package
    sys.path.insert(0, str(ROOT))

from project.run_scalar import main  # noqa: E402
from project.scalar_model import ScalarMLP, accuracy, train_scalar  # noqa: E402

pytestmark = [pytest.mark.task1_5, pytest.mark.slow]


def test_simple_reaches_full_accuracy_with_the_defaults() -> None:
    data = simple(50, 0)
    log: list[tuple[int, float, float, float]] = []
    model = train_scalar(data, log_fn=lambda *entry: log.append(entry))
    assert [entry[0] for entry in log] == list(range(1, 501))
    assert log[-1][1] < 0.5 * log[0][1]  # the loss went down
    assert all(seconds > 0.0 for *_, seconds in log)
    assert log[-1][2] == 1.0
    assert accuracy(model, data) == 1.0


def test_model_shape_and_parameters() -> None:
    model = ScalarMLP([2, 3, 1], seed=1)
    names = [name for name, _ in model.named_parameters()]
    assert len(names) == 2 * 3 + 3 + 3 * 1 + 1
    assert names[0] == "layer1.weight_0_0" and names[-1] == "layer2.bias_0"
    (out,) = model([0.2, 0.7])
    assert isinstance(out, Scalar) and out.history is not None
    assert ScalarMLP([2, 3, 1], seed=1)([0.2, 0.7])[0].data == out.data  # seeded
    with pytest.raises(ValueError, match="activation"):
        ScalarMLP([2, 1], activation="gelu")


def test_main_runs_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--dataset", "xor", "--points", "12", "--hidden", "3", "--epochs", "4"]
    assert main([*argv, "--log-every", "2", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "run_scalar: epochs=4 dataset=xor points=12 hidden=3" in out
    lines = [line.split() for line in out.splitlines() if line.startswith("epoch")]
    assert [line[1] for line in lines] == ["2/4", "4/4"]
    assert "done: xor on scalar, 4 epochs" in out and "train accuracy" in out
    assert "ms/epoch" in out


def test_main_rejects_bad_settings() -> None:
    with pytest.raises(SystemExit):
        main(["--epochs", "0"])
    with pytest.raises(SystemExit):
        main(["--dataset", "moons"])


def test_script_runs_from_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "project/run_scalar.py", "--epochs", "2", "--points", "8"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "done: simple on scalar, 2 epochs" in done.stdout
