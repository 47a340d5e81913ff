"""The streamlit app, run headless with AppTest: every page renders, training runs live."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from project.app import max_module
from project.app_pages import PAGES, visible_pages

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120
pytestmark = pytest.mark.slow


def page(name: str) -> AppTest:
    script = f"from project.app_pages.{name} import render\nrender()\n"
    return AppTest.from_string(script, default_timeout=TIMEOUT)


def elements(at: AppTest, kind: str) -> list[object]:
    return list(at.get(kind))


def train_until_done(at: AppTest, key: str) -> object:
    job = at.session_state[key]
    assert job.join(TIMEOUT), "training did not finish in time"
    at.run()
    return job


@pytest.mark.task2_5
def test_app_entry_point_renders_the_first_page() -> None:
    at = AppTest.from_file(str(ROOT / "project" / "app.py"), default_timeout=TIMEOUT).run()
    assert not at.exception
    assert at.title[0].value == "1 · Train"
    assert [p.label for p in PAGES][:2] == ["1 · Train", "2 · Autograd graph"]
    assert [p.slug for p in visible_pages(2)] == ["train", "autograd", "tensors"]
    assert max_module(["--max-module", "3", "-x"]) == 3 and max_module([]) is None


@pytest.mark.task2_5
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


@pytest.mark.task2_5
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


@pytest.mark.task1_3
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


@pytest.mark.task1_3
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


@pytest.mark.task2_1
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


@pytest.mark.task4_5
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


@pytest.mark.task3_5
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
