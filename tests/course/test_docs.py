"""docs/: the generated index, the generated task table of each guide, student READMEs."""

from __future__ import annotations

from pathlib import Path

import pytest

from minifw_course.catalog import APP_PAGES, TASK_INFO
from minifw_course.docs import (
    BLOCK_BEGIN,
    BLOCK_END,
    COMPARISON_NOTE,
    DocsError,
    generated_block,
    render_index,
    render_module_page,
    render_task_block,
    task_files,
    update_module_page,
    write_docs,
)
from minifw_course.fences import scan_fences
from minifw_course.tasks import MODULES, TASKS

pytestmark = pytest.mark.staff

ROOT = Path(__file__).resolve().parents[2]
SCAN = {"0.1": {"minifw/elsewhere.py": ["f", "Cls.g"]}, "0.3": {"minifw/ops.py": ["map"]}}


def test_every_task_has_a_description() -> None:
    assert set(TASK_INFO) == {task.id for task in TASKS}
    for info in TASK_INFO.values():
        assert info.asks and info.points > 0
        assert info.app_page is None or info.app_page in APP_PAGES


def test_the_index_links_every_module_and_notes_bool_comparisons() -> None:
    index = (ROOT / "docs" / "README.md").read_text()
    for module in MODULES:
        assert f"(module{module}.md)" in index
    assert COMPARISON_NOTE in index
    assert "return bool tensors, as PyTorch's do" in COMPARISON_NOTE


def test_the_index_is_up_to_date() -> None:
    index = (ROOT / "docs" / "README.md").read_text()
    assert index == render_index(scan_fences(ROOT)), "regenerate: `python -m minifw.course docs`"


def test_the_architecture_page_says_where_each_task_lives() -> None:
    page = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    rows = {
        line.split("|")[1].strip(): line.split("|")[2]
        for line in page.splitlines()
        if line.startswith("| ") and line.split("|")[1].strip() in TASK_INFO
    }
    assert sorted(rows) == sorted(TASK_INFO), "docs/ARCHITECTURE.md: one row per task"
    scan = scan_fences(ROOT)
    for task in TASKS:
        named = {name.strip(" `") for name in rows[task.id].split(",")}
        assert named == set(task_files(task, scan)), f"docs/ARCHITECTURE.md, task {task.id}"


def test_files_are_the_fences_then_the_catalogs_other_paths() -> None:
    by_id = {task.id: task for task in TASKS}
    assert task_files(by_id["0.1"], {}) == []
    assert task_files(by_id["0.1"], SCAN) == ["minifw/elsewhere.py"]
    assert task_files(by_id["1.5"], {}) == ["project/"]
    fenced = {"4.5": {"minifw/nn/losses.py": ["nll_loss"]}}
    assert task_files(by_id["4.5"], fenced) == ["minifw/nn/losses.py", "project/"]
    in_project = {"2.5": {"project/training.py": ["train_step"]}}
    assert task_files(by_id["2.5"], in_project) == ["project/training.py"]


def test_the_block_is_a_table_of_the_modules_tasks() -> None:
    block = render_task_block(0, SCAN)
    lines = block.splitlines()
    assert lines[0] == BLOCK_BEGIN and lines[-1] == BLOCK_END
    rows = [line for line in lines if line.startswith("| 0.")]
    assert [row.split(" | ")[0] for row in rows] == ["| 0.1", "| 0.2", "| 0.3", "| 0.4"]
    assert rows[0] == (
        "| 0.1 | operators | `pytest -m task0_1` | `minifw/elsewhere.py` | `f`, `Cls.g` | - |"
    )
    assert rows[1].endswith("| - | - | - |") and "| `map` |" in rows[2]  # 0.2: not in SCAN
    assert "| 2 (Autograd graph) |" in render_task_block(1, {})
    assert '`pytest -m "task0_1 or task0_2 or task0_3 or task0_4"`' in block


GUIDE = """# Module 0: Fundamentals

Prose written by hand, kept byte for byte.

{block}

## Task 0.1: operators

More prose.
"""


def test_only_the_block_of_a_guide_is_rewritten() -> None:
    stale = f"{BLOCK_BEGIN}\n| old | table |\n{BLOCK_END}"
    page = update_module_page(GUIDE.format(block=stale), 0, SCAN)
    assert page == GUIDE.format(block=render_task_block(0, SCAN))
    assert generated_block(page) == render_task_block(0, SCAN)
    assert update_module_page(page, 0, SCAN) == page


def test_a_guide_without_the_block_gets_it_appended() -> None:
    text = "# Module 0: Fundamentals\n\nOnly prose.\n"
    page = update_module_page(text, 0, SCAN)
    assert page == text + "\n" + render_task_block(0, SCAN) + "\n"
    assert generated_block(text) is None


@pytest.mark.parametrize(
    "broken",
    [
        f"{BLOCK_BEGIN}\nno end\n",
        f"{BLOCK_END}\n{BLOCK_BEGIN}\n",
        f"{BLOCK_BEGIN}\n" * 2 + BLOCK_END,
    ],
)
def test_a_malformed_block_is_refused(broken: str) -> None:
    with pytest.raises(DocsError, match="expected one"):
        update_module_page("# Module 0\n\n" + broken, 0, SCAN)


def test_a_missing_guide_starts_with_its_title_and_block() -> None:
    page = render_module_page(0, SCAN)
    assert page.startswith("# Module 0: Fundamentals\n")
    assert generated_block(page) == render_task_block(0, SCAN)
    assert "](module4.md)" in render_index({})


def test_docs_command_writes_the_index_and_only_the_blocks(tmp_path: Path, course_cli) -> None:
    (tmp_path / "minifw").mkdir()
    (tmp_path / "minifw" / "ops.py").write_text("# BEGIN TASK 0.1\ndef f():\n    pass\n")
    failed = course_cli("docs", "--repo", str(tmp_path), cwd=tmp_path)
    assert failed.returncode == 2 and "never closed" in failed.stderr
    (tmp_path / "minifw" / "ops.py").write_text(
        "# BEGIN TASK 0.1\ndef f():\n    pass\n# END TASK 0.1\n"
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "module1.md").write_text("# Module 1\n\nHand-written.\n")
    done = course_cli("docs", "--repo", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in (tmp_path / "docs").iterdir())
    assert names == ["README.md"] + [f"module{m}.md" for m in MODULES]
    assert "| `f` |" in (tmp_path / "docs" / "module0.md").read_text()
    module1 = (tmp_path / "docs" / "module1.md").read_text()
    assert module1.startswith("# Module 1\n\nHand-written.\n\n" + BLOCK_BEGIN)
    assert write_docs(tmp_path, {})[0].name == "README.md"
