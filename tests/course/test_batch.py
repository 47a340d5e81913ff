"""grade-batch: a folder of submissions graded into one CSV and one results.json each."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from minifw_course.assignment import make_assignment
from minifw_course.batch import BatchError, grade_batch

pytestmark = pytest.mark.staff


@pytest.mark.slow
def test_a_batch_grades_each_submission_and_writes_one_csv(make_mini_repo, tmp_path) -> None:
    reference = make_mini_repo(name="reference")
    subs = tmp_path / "subs"
    shutil.copytree(reference / "minifw", subs / "full" / "minifw")
    make_assignment(reference, subs / "stubs", 1)
    broken = subs / "half-written"
    shutil.copytree(reference / "minifw", broken / "minifw")
    (broken / "minifw/ops.py").write_text("def mul(x, y:\n")
    (subs / "a-zip-not-a-folder.zip").write_bytes(b"PK")
    out = tmp_path / "grades.csv"
    lines: list[str] = []
    rows = grade_batch(subs, 1, out, repo=reference, jobs=2, user="same", log=lines.append)
    totals = {row.name: row.total for row in rows}
    assert totals == {"a-zip-not-a-folder.zip": 0.0, "full": 10.0, "half-written": 0.0,
                      "stubs": 0.0}  # fmt: skip
    with out.open() as stream:
        table = list(csv.reader(stream))
    assert table[0][:3] == ["submission", "total (of 50)", "task 1.1"]
    assert [row[0] for row in table[1:]] == sorted(totals)
    assert "not a folder" in table[1][-1]
    results = tmp_path / "grades-results"
    data = json.loads((results / "full" / "results.json").read_text())
    assert data["score"] == 10.0 and len(data["tests"]) == 5  # the mini repo tests 1.1 only
    assert not (results / "a-zip-not-a-folder.zip").exists()
    assert any("2 at once" in line for line in lines)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing", "is not a folder"),
        ("empty", "holds no submission folders"),
        ("module", "module 7 is not in the course map"),
        ("csv", "the grades go to a .csv file"),
    ],
)
def test_bad_input_gets_one_clear_line(tmp_path, course_cli, case, message) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "subs" / "one").mkdir(parents=True)
    folder, module, out = {
        "missing": ("nowhere", "1", "g.csv"),
        "empty": ("empty", "1", "g.csv"),
        "module": ("subs", "7", "g.csv"),
        "csv": ("subs", "1", "g.txt"),
    }[case]
    with pytest.raises(BatchError, match=message):
        grade_batch(tmp_path / folder, int(module), tmp_path / out)
    done = course_cli("grade-batch", str(tmp_path / folder), "--module", module, "--out",
                      str(tmp_path / out), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and not (tmp_path / out).exists()
