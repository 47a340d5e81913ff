"""The streamlit app, run headless with AppTest: every page renders, training runs live.

The app is given code, so these tests are `extra` (never graded). They collect without
streamlit: each test that runs the app asks for it with `pytest.importorskip`.
The app shows only what a student has built: `--max-module N`, `MINIFW_MAX_MODULE` or a
student repository's module hides the pages and page parts of later course modules.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from project.app_pages import (
    MAX_MODULE_ENV,
    PAGES,
    course_limit,
    max_module_option,
    page_of,
    task_ranges,
    visible_pages,
)

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "project" / "app.py"
TIMEOUT = 120
pytestmark = pytest.mark.extra
NEEDS_STREAMLIT = "the app's tests need streamlit (pip install -e '.[app]')"


def app_test() -> Any:
    """streamlit's AppTest class; the calling test is skipped where streamlit is absent."""
    return pytest.importorskip("streamlit.testing.v1", reason=NEEDS_STREAMLIT).AppTest


def run_app(monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
    """The app's entry point run once as `streamlit run project/app.py -- ARGS`."""
    monkeypatch.setattr(sys, "argv", [str(APP), *args])
    return app_test().from_file(str(APP), default_timeout=TIMEOUT).run()


def page(name: str) -> Any:
    script = f"from project.app_pages.{name} import render\nrender()\n"
    return app_test().from_string(script, default_timeout=TIMEOUT)


def elements(at: Any, kind: str) -> list[Any]:
    return list(at.get(kind))


def train_until_done(at: Any, key: str) -> Any:
    job = at.session_state[key]
    assert job.join(TIMEOUT), "training did not finish in time"
    at.run()
    return job


@pytest.mark.slow
def test_app_entry_point_renders_the_first_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_MODULE_ENV, raising=False)
    at = run_app(monkeypatch)
    assert not at.exception
    assert at.title[0].value == "1 · Train"
    assert [p.label for p in PAGES][:2] == ["1 · Train", "2 · Autograd graph"]
    assert [p.slug for p in visible_pages(2)] == ["train", "autograd", "tensors"]
    assert at.switch_page("app_pages/tensors.py").run().title[0].value == "3 · Tensor explorer"
    assert not at.exception


@pytest.mark.slow
def test_max_module_1_hides_the_tensor_pages_and_tensor_engines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(MAX_MODULE_ENV, raising=False)
    at = run_app(monkeypatch, "--max-module", "1")
    assert not at.exception
    assert at.title[0].value == "1 · Train"
    assert at.selectbox[0].options == ["Scalar engine (module 1)"]  # no tensor backend
    assert at.caption[0].value.startswith("Task 1.5: train with the Scalar engine")
    assert "parts of modules after 1 are hidden" in at.caption[0].value
    for hidden in ("tensors", "digits", "profiler"):
        with pytest.raises(ValueError, match="Could not find a navigation page"):
            at.switch_page(f"app_pages/{hidden}.py")
    at.switch_page("app_pages/autograd.py").run()
    assert not at.exception and at.title[0].value == "2 · Autograd graph"
    assert at.radio[0].options == ["Scalars"]  # tensor graphs come with module 2


@pytest.mark.slow
def test_environment_variable_limits_the_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_MODULE_ENV, "3")
    at = run_app(monkeypatch)
    assert not at.exception
    assert at.selectbox[0].value == "fast"  # the fast backend is built in module 3
    at.switch_page("app_pages/profiler.py").run()
    assert at.selectbox(key="prof-model").options == ["points MLP"]  # conv net: module 4
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page("app_pages/digits.py")
    monkeypatch.setenv(MAX_MODULE_ENV, "0")
    at = run_app(monkeypatch)
    assert not at.exception and at.title[0].value == "minifw"  # no page before module 1
    assert "module 1" in at.info[0].value
    monkeypatch.setenv(MAX_MODULE_ENV, "two")
    at = run_app(monkeypatch)
    assert not at.exception and "must be a course module number" in at.error[0].value


def test_limit_comes_from_option_then_variable_then_student_repository(tmp_path: Path) -> None:
    variable = {MAX_MODULE_ENV: "3"}
    assert course_limit(["--max-module", "2"], variable, tmp_path) == 2
    assert course_limit(["-x"], variable, tmp_path) == 3
    assert course_limit([], {}, tmp_path) is None  # the reference repository: every page
    record = tmp_path / "minifw_course" / "assignment.json"
    record.parent.mkdir()
    record.write_text(json.dumps({"module": 1, "tasks": ["1.1"]}))
    assert course_limit([], {}, tmp_path) == 1
    assert course_limit([], {MAX_MODULE_ENV: " 4 "}, tmp_path) == 4
    with pytest.raises(ValueError, match=MAX_MODULE_ENV):
        course_limit([], {MAX_MODULE_ENV: "all"}, tmp_path)
    assert max_module_option(["--max-module", "3", "-x"]) == 3
    assert max_module_option(["--max", "3"]) is None  # no abbreviations of the option


def test_each_page_says_which_tasks_it_exercises() -> None:
    assert page_of("tensors").banner(None) == (
        "Task 2.1-2.2: strides and broadcasting · needs course module 2"
    )
    assert page_of("train").banner(1) == (
        "Task 1.5: train with the Scalar engine · needs course module 1"
        " · the parts of modules after 1 are hidden"
    )
    assert "Task 2.3-2.4" in page_of("autograd").banner(2)
    assert "Task 2.3-2.4" not in page_of("autograd").banner(1)
    assert task_ranges(("3.5", "3.1", "3.2")) == "3.1-3.2, 3.5"
    assert task_ranges(("1.5", "2.1")) == "1.5-2.1"  # consecutive in the course map
    assert [(p.slug, p.module) for p in PAGES] == [
        ("train", 1), ("autograd", 1), ("tensors", 2), ("digits", 4), ("profiler", 3),
    ]  # fmt: skip
    assert [p.slug for p in visible_pages(3)] == ["train", "autograd", "tensors", "profiler"]
    assert visible_pages(0) == [] and visible_pages(None) == list(PAGES)
    assert all(page.script.is_file() for page in PAGES)


@pytest.mark.slow
def test_train_page_trains_live_and_fills_chart_and_table() -> None:
    at = page("train").run()
    assert not at.exception and at.info  # "press Train"
    at.selectbox[0].set_value("simple").run()
    at.number_input(key="points-simple-xor").set_value(12)
    at.number_input(key="hidden-simple-xor").set_value(3)
    at.number_input(key="epochs-simple-xor").set_value(3)
    at.button(key="train-run").click().run()
    assert not at.exception
    job = train_until_done(at, "train_job")
    assert job.snapshot().status == "finished"
    assert not at.exception
    assert len(elements(at, "vega_lite_chart")) == 1  # loss / accuracy chart
    assert len(elements(at, "image")) == 1  # decision boundary
    table = at.dataframe[-1].value
    assert list(table.index) == [3, 2, 1] and list(table.columns) == [
        "loss",
        "accuracy",
        "ms/epoch",
    ]
    assert at.metric[0].value == "3 / 3"
    assert at.success and "finished after 3 epochs" in at.success[0].value


@pytest.mark.slow
def test_train_page_stop_ends_a_long_scalar_run() -> None:
    at = page("train").run()
    at.selectbox[0].set_value("scalar").run()
    at.number_input(key="points-scalar-xor").set_value(8)
    at.number_input(key="epochs-scalar-xor").set_value(5000)
    at.button(key="train-run").click().run()
    job = at.session_state["train_job"]
    assert job.running
    deadline = time.monotonic() + TIMEOUT
    while not job.snapshot().records and time.monotonic() < deadline:
        time.sleep(0.05)  # let an epoch finish, so the stop is seen mid-run
    at.button(key="train-stop").click().run()
    job = train_until_done(at, "train_job")
    snapshot = job.snapshot()
    assert snapshot.status == "stopped" and 0 < len(snapshot.records) < 5000
    assert not at.exception


@pytest.mark.slow
def test_autograd_page_draws_the_graph_of_a_valid_expression() -> None:
    at = page("autograd").run()
    assert not at.exception and not at.error
    charts = elements(at, "graphviz_chart")
    assert len(charts) == 1
    dot = charts[0].proto.spec
    assert dot.startswith("digraph") and "Mul" in dot and "grad" in dot
    at.radio[0].set_value("Tensors").run()
    assert not at.exception and not at.error
    assert "shape (3,)" in elements(at, "graphviz_chart")[0].proto.spec


@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    ["__import__('os').system('ls')", "x.__class__", "(lambda: x)()", "[x for x in y]",
     "x['__class__']", "x.__class__.__mro__"],
)  # fmt: skip
def test_autograd_page_refuses_malicious_input(text: str) -> None:
    at = page("autograd").run()
    at.text_input(key="expr-Scalars").set_value(text).run()
    assert not at.exception
    assert at.error and at.error[0].value.startswith("refused:")
    assert not elements(at, "graphviz_chart")


@pytest.mark.slow
def test_tensor_explorer_applies_views_over_one_storage() -> None:
    at = page("tensors").run()
    assert not at.exception
    at.selectbox[0].set_value("permute").run()
    at.text_input(key="arg-permute").set_value("2, 0, 1")
    at.button[0].click().run()  # Apply
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert list(table["strides"]) == ["(12, 4, 1)", "(1, 12, 4)"]
    assert list(table["same storage"]) == [True, True]
    assert at.metric[1].value == "(1, 12, 4)"
    at.selectbox[0].set_value("view").run()
    at.text_input(key="arg-view").set_value("24")
    at.button[0].click().run()
    assert not at.exception
    assert at.error and "reshape" in at.error[0].value  # a permuted tensor cannot be viewed flat
    assert len(at.dataframe[0].value) == 2  # the refused step was dropped
    assert len(elements(at, "html")) >= 2


@pytest.mark.slow
def test_digits_page_trains_and_shows_predictions() -> None:
    at = page("digits").run()
    assert not at.exception
    at.number_input(key="digits-epochs").set_value(1).run()
    at.button(key="digits-train").click().run()
    job = train_until_done(at, "digits_job")
    assert job.snapshot().status == "finished", job.snapshot().error
    assert not at.exception
    assert len(elements(at, "image")) == 3  # predictions, confusion matrix, feature maps
    assert any(m.label == "test accuracy" for m in at.metric)


@pytest.mark.slow
def test_profiler_page_profiles_one_step() -> None:
    at = page("profiler").run()
    assert not at.exception
    at.number_input(key="prof-batch").set_value(8)
    at.number_input(key="prof-hidden").set_value(8)
    at.button(key="prof-run").click().run()
    assert not at.exception and not at.error
    labels = [m.label for m in at.metric]
    assert labels == ["eager step", "compiled step", "speed-up"]
    frame = at.dataframe[0].value
    assert {"matmul", "relu"} <= set(frame["op"]) and (frame["calls"] > 0).all()
    assert "Kernel launches" in at.code[0].value
    assert "launches captured" in at.code[1].value  # what mf.compile fused


STUBBED_EXPLORER = """
from project.app_pages import tensors

def stub(shape):
    raise NotImplementedError("Task 2.1: write strides_from_shape")

written, tensors.new_storage = tensors.new_storage, stub
try:
    tensors.render()
finally:
    tensors.new_storage = written
"""


@pytest.mark.slow
def test_a_page_names_the_task_of_a_stub_it_reaches() -> None:
    at = app_test().from_string(STUBBED_EXPLORER, default_timeout=TIMEOUT).run()
    assert not at.exception  # no traceback: the page says what to write
    (warning,) = at.warning
    assert warning.value.endswith(r"not written yet: Task 2\.1\: write strides\_from\_shape")
    assert at.title[0].value == "3 · Tensor explorer"


FAILED_BY_A_STUB = """
from project.app_pages.common import show_progress
from project.jobs import JobSnapshot

trace = "Traceback (most recent call last):\\nNotImplementedError: Task 1.5: write train_epoch\\n"
show_progress(JobSnapshot([], None, None, "failed", trace, {}, 0, 0.0), 5)
"""


@pytest.mark.slow
def test_training_stopped_by_a_stub_names_its_task() -> None:
    at = app_test().from_string(FAILED_BY_A_STUB, default_timeout=TIMEOUT).run()
    assert not at.exception
    assert at.error[0].value == "training failed"
    (warning,) = at.warning
    assert warning.value.endswith(r"not written yet: Task 1\.5\: write train\_epoch")
    assert "NotImplementedError" in at.code[0].value  # the traceback stays below
