"""docs/: one page per module, listing each task, its files, its tests and its app page."""

from __future__ import annotations

from pathlib import Path

import pytest

from minifw_course.catalog import APP_PAGES, TASK_INFO
from minifw_course.docs import (
    COMPARISON_NOTE,
    render_index,
    render_module_page,
    task_files,
    write_docs,
)
from minifw_course.fences import scan_fences
from minifw_course.tasks import MODULES, TASKS, tasks_of_module

pytestmark = pytest.mark.staff

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "regenerate with `python -m minifw.course docs`"


def test_every_task_has_a_description() -> None:
    assert set(TASK_INFO) == {task.id for task in TASKS}
    for info in TASK_INFO.values():
        assert info.asks and info.files and info.points > 0
        assert info.app_page is None or info.app_page in APP_PAGES


@pytest.mark.parametrize("module", MODULES)
def test_each_module_page_lists_its_tasks_tests_and_app_pages(module: int) -> None:
    page = (ROOT / "docs" / f"module{module}.md").read_text()
    assert page.startswith(f"# Module {module}: ")
    for task in tasks_of_module(module):
        assert f"## Task {task.id}: {task.title}" in page, REGENERATE
        assert f"`pytest -m {task.marker}`" in page
        info = TASK_INFO[task.id]
        assert info.asks in page, REGENERATE
        if info.app_page is not None:
            assert f"app page {info.app_page} ({APP_PAGES[info.app_page]})" in page


@pytest.mark.parametrize("module", MODULES)
def test_each_module_page_names_the_files_its_fences_are_in(module: int) -> None:
    page = (ROOT / "docs" / f"module{module}.md").read_text()
    scan = scan_fences(ROOT)
    for task in tasks_of_module(module):
        for name in scan.get(task.id, {}):
            assert f"`{name}`" in page, f"task {task.id} is fenced in {name}; {REGENERATE}"


def test_the_index_links_every_module_and_notes_float_comparisons() -> None:
    index = (ROOT / "docs" / "README.md").read_text()
    for module in MODULES:
        assert f"(module{module}.md)" in index
    assert COMPARISON_NOTE in index
    assert "PyTorch returns bool" in COMPARISON_NOTE
    assert COMPARISON_NOTE in (ROOT / "docs" / "module2.md").read_text()


def test_the_catalog_lists_the_files_each_task_is_fenced_in() -> None:
    scan = scan_fences(ROOT)
    for task in TASKS:
        listed = TASK_INFO[task.id].files
        missing = [name for name in listed if not (ROOT / name).exists()]
        assert missing == [], f"task {task.id}: catalog.py lists missing files {missing}"
        fenced = set(scan.get(task.id, {}))
        if fenced:
            assert set(listed) - {"project/"} == fenced, (task.id, listed, sorted(fenced))


def test_the_architecture_page_says_where_each_task_lives() -> None:
    page = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    rows = {
        line.split("|")[1].strip(): line.split("|")[2]
        for line in page.splitlines()
        if line.startswith("| ") and line.split("|")[1].strip() in TASK_INFO
    }
    assert sorted(rows) == sorted(TASK_INFO), "docs/ARCHITECTURE.md: one row per task"
    for task, info in TASK_INFO.items():
        named = {name.strip(" `") for name in rows[task].split(",")}
        assert named == set(info.files), f"docs/ARCHITECTURE.md, task {task}: {named}"


def test_files_come_from_fences_when_there_are_some() -> None:
    task = TASKS[0]
    assert task_files(task, {}) == list(TASK_INFO[task.id].files)
    assert task_files(task, {task.id: {"minifw/elsewhere.py": ["f"]}}) == ["minifw/elsewhere.py"]
    page = render_module_page(0, {task.id: {"minifw/elsewhere.py": ["f", "Cls.g"]}})
    assert "- To implement: `f`, `Cls.g`" in page and "`minifw/elsewhere.py`" in page
    assert "](module4.md)" in render_index({})


def test_docs_command_writes_every_page(tmp_path: Path, course_cli) -> None:
    (tmp_path / "minifw").mkdir()
    (tmp_path / "minifw" / "ops.py").write_text("# BEGIN TASK 0.1\ndef f():\n    pass\n")
    failed = course_cli("docs", "--repo", str(tmp_path), cwd=tmp_path)
    assert failed.returncode == 2 and "never closed" in failed.stderr
    (tmp_path / "minifw" / "ops.py").write_text(
        "# BEGIN TASK 0.1\ndef f():\n    pass\n# END TASK 0.1\n"
    )
    done = course_cli("docs", "--repo", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in (tmp_path / "docs").iterdir())
    assert names == ["README.md"] + [f"module{m}.md" for m in MODULES]
    assert "- To implement: `f`" in (tmp_path / "docs" / "module0.md").read_text()
    assert write_docs(tmp_path, {})[0].name == "README.md"
