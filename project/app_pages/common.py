"""Pieces shared by the app's pages: backend choices, record tables, live views, kernels.

The live view redraws at most `1 / REFRESH_SECONDS` times a second, from a copy of
the job's progress (`TrainingJob.snapshot`): a redraw never waits for training, and
training never waits for a redraw. Each redraw is cheap and bounded: the chart gets
at most `CHART_POINTS` points as a hand-written Vega-Lite spec (no Altair), the
table the newest `TABLE_ROWS` epochs, and figures are rendered once per new
observation and then reused.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from project.app_pages import page_of
from project.jobs import JobSnapshot, TrainingJob
from project.kernels import (
    WarmUp,
    cold_workloads,
    is_warm,
    mark_warm,
    monitor,
    warm_steps,
    workloads_up_to,
)
from project.training import EpochRecord

REFRESH_SECONDS = 0.5  # at most two redraws a second
CHART_POINTS = 400
TABLE_ROWS = 12
MAX_MODULE_KEY = "course_max_module"  # set by app.py on every run; unset means no limit
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:])")
_STUB_MESSAGE = re.compile(r"\bTask \d+\.\d+: [^\n]+")  # NotImplementedError("Task 2.1: ...")
monitor()  # count Numba's compiles from the first page view on (one listener per process)


@st.cache_resource
def cuda_available() -> bool:
    """Whether the "cuda" backend can run here (checked once per server)."""
    from minifw.backends import cuda_available as check

    return check()


def max_module() -> int | None:
    """The last course module this app shows (None: every module)."""
    value = st.session_state.get(MAX_MODULE_KEY)
    return value if isinstance(value, int) else None


def reached(module: int) -> bool:
    """Whether the student has reached course `module` (so its parts of a page show)."""
    limit = max_module()
    return limit is None or module <= limit


def page_header(slug: str) -> None:
    """The page's title and a line saying which tasks it exercises and the module it needs."""
    info = page_of(slug)
    st.title(info.label)
    st.caption(info.banner(max_module()))


def unwritten_task(text: str) -> str | None:
    """The "Task x.y: ..." message of a stub that an error or a traceback reports, if any."""
    found = _STUB_MESSAGE.findall(text)
    return found[-1] if found else None


def stub_notice(message: str) -> None:
    """Say that the page reached code of a task that is not written yet, and which."""
    st.warning(f"This page runs code that is not written yet: {escape_markdown(message)}")


def shows_stubs(draw: Callable[[], None]) -> Callable[[], None]:
    """`draw`, which says which task to write when it reaches a function that is a stub.

    In a student repository the functions of unsolved tasks raise
    `NotImplementedError("Task x.y: ...")`; the page shows that message instead of a
    traceback.
    """

    @functools.wraps(draw)
    def guarded() -> None:
        try:
            draw()
        except NotImplementedError as error:
            stub_notice(str(error))

    return guarded


def backend_choices() -> list[str]:
    """The tensor backends to offer: simple, then (from module 3) fast and cuda with a GPU."""
    if not reached(3):
        return ["simple"]
    return ["simple", "fast"] + (["cuda"] if cuda_available() else [])


def demo_once(key: str) -> bool:
    """True the first time a page opened as `...?demo=1` asks (for screenshots and links).

    A demo page starts its default action (training, profiling) without a click.
    """
    if st.query_params.get("demo") != "1" or st.session_state.get(f"demo-{key}"):
        return False
    st.session_state[f"demo-{key}"] = True
    return True


def demo_epochs(default: int) -> int:
    """The `epochs=N` of a demo link (`?demo=1&epochs=3`), else `default`."""
    text = st.query_params.get("epochs", "")
    return int(text) if text.isdigit() and 0 < int(text) <= 10_000 else default


def escape_markdown(text: str) -> str:
    """`text` with Markdown's special characters escaped, so it shows literally."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def plural(count: int, word: str) -> str:
    """The count and the word, plural unless one: "1 epoch", "3 epochs"."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def records_frame(records: Sequence[EpochRecord], rows: int | None = None) -> pd.DataFrame:
    """The table of epochs, newest first: loss, accuracy (%) and ms, as displayed text.

    Args:
        records: the epochs, oldest first.
        rows: show only this many of the newest (all when None).
    """
    shown = list(records[-rows:] if rows else records)[::-1]
    return pd.DataFrame(
        {
            "loss": [f"{r.loss:.4f}" for r in shown],
            "accuracy": [f"{r.accuracy:.1%}" for r in shown],
            "ms/epoch": [f"{r.seconds * 1e3:.1f}" for r in shown],
        },
        index=pd.Index([r.epoch for r in shown], name="epoch"),
    )


def median_epoch_seconds(records: Sequence[EpochRecord]) -> float | None:
    """The median time of the epochs after the first (which may compile kernels)."""
    warm = [r.seconds for r in records[1:]] or [r.seconds for r in records]
    return sorted(warm)[len(warm) // 2] if warm else None


def show_progress(snapshot: JobSnapshot, epochs: int) -> None:
    """Metrics of the newest epoch, what is happening now, and the job's status."""
    records = snapshot.records
    last = records[-1] if records else None
    median = median_epoch_seconds(records)
    final = snapshot.final.get("train accuracy")
    cols = st.columns(4)
    cols[0].metric("epoch", f"{snapshot.epoch} / {epochs}")
    cols[1].metric("loss", f"{last.loss:.4f}" if last else "-")
    if final is not None:
        cols[2].metric("train accuracy (final)", f"{final:.1%}")
    else:
        cols[2].metric("accuracy (this epoch)", f"{last.accuracy:.1%}" if last else "-")
    cols[3].metric("time per epoch", f"{1e3 * median:.1f} ms" if median is not None else "-")
    if snapshot.status == "failed":
        st.error("training failed")
        stub = unwritten_task(snapshot.error)
        if stub:
            stub_notice(stub)
        st.code(snapshot.error)
    elif snapshot.status == "running":
        st.info(running_text(snapshot, epochs))
    elif snapshot.status in ("stopped", "finished"):
        st.success(finished_text(snapshot))


def running_text(snapshot: JobSnapshot, epochs: int) -> str:
    """What the job is doing now: the epoch running, and any kernel compiling."""
    epoch = min(snapshot.epoch + 1, epochs)
    text = f"training… epoch {epoch} of {epochs} running for {snapshot.epoch_elapsed:.0f} s"
    compiling = monitor().state()
    if compiling.current:
        text += (
            f". Compiling Numba kernels (once per machine; later runs load them from disk): "
            f"{compiling.compiled} compiled so far, now `{compiling.current}` "
            f"({compiling.current_seconds:.0f} s)"
        )
    return text + ". The page updates by itself; Stop ends it after this epoch."


def finished_text(snapshot: JobSnapshot) -> str:
    """The end of a run: its status, epochs, final loss and final evaluation."""
    text = f"training {snapshot.status} after {plural(len(snapshot.records), 'epoch')}"
    if snapshot.records:
        text += f": final loss {snapshot.records[-1].loss:.4f}"
    for name, value in snapshot.final.items():
        text += f", {name} {value:.1%}"
    if snapshot.final:
        text += " (evaluated after the last epoch, as the command line's summary)"
    return text


def chart_spec(records: Sequence[EpochRecord]) -> dict[str, Any]:
    """A Vega-Lite line chart (with points) of loss and accuracy against epoch."""
    step = max(1, -(-len(records) // CHART_POINTS))
    shown = list(records[::step])
    if records and shown[-1] is not records[-1]:
        shown.append(records[-1])
    values = [
        row
        for r in shown
        for row in (
            {"epoch": r.epoch, "series": "loss", "value": r.loss},
            {"epoch": r.epoch, "series": "accuracy", "value": r.accuracy},
        )
    ]
    return {
        "data": {"values": values},
        "mark": {"type": "line", "point": len(shown) <= 60, "tooltip": True},
        "encoding": {
            "x": {"field": "epoch", "type": "quantitative", "title": "epoch"},
            "y": {"field": "value", "type": "quantitative", "title": "loss / accuracy"},
            "color": {"field": "series", "type": "nominal", "title": None},
        },
    }


def curves(records: Sequence[EpochRecord]) -> None:
    """The live loss / accuracy chart (one point per epoch; a single epoch shows a dot)."""
    st.vega_lite_chart(chart_spec(records), width="stretch")


def epochs_table(records: Sequence[EpochRecord], height: int) -> None:
    """The newest epochs, newest first (the same snapshot as the metrics above)."""
    rows = TABLE_ROWS if len(records) > TABLE_ROWS else None
    st.dataframe(records_frame(records, rows), height=height, width="stretch")
    if rows:
        st.caption(f"the newest {rows} of {plural(len(records), 'epoch')}")


def live(job: TrainingJob | None, draw: Callable[[JobSnapshot], None]) -> None:
    """Draw `job`'s snapshot now, and again every REFRESH_SECONDS while it runs.

    The redraw is a fragment: only this part of the page reruns, and the page's
    script never waits for training. When the job ends the whole page reruns once
    so the final state (and the buttons) are current.
    """
    if job is None:
        return
    interval = REFRESH_SECONDS if job.running else None

    @st.fragment(run_every=interval)
    def view() -> None:
        draw(job.snapshot())
        if interval is not None and not job.running:
            st.rerun()

    view()


@st.cache_resource
def warm_up_job() -> dict[str, WarmUp]:
    """The server's one warm-up (shared by every session), once started."""
    return {}


def kernel_notice(workload: str | None) -> None:
    """Say when `workload`'s kernels are not compiled yet; offer to warm them.

    Shows the warm-up's progress (phase, elapsed seconds, kernels compiled) while it
    runs, redrawn twice a second.
    """
    holder = warm_up_job()
    job = holder.get("job")
    if job is not None and job.running:
        _warm_progress(job)
        return
    if workload is None or is_warm(workload):
        return
    cold = cold_workloads(workloads_up_to(max_module()))
    st.warning(
        f"The Numba kernels of {workload} are not compiled on this machine yet: the first "
        "epoch compiles them (once per machine, 20-40 s; later runs load them "
        "from disk in seconds). The page shows the compiling as it happens, or warm them "
        f"now in the background ({', '.join(cold)})."
    )
    if st.button("Warm the kernels", key=f"warm-{workload}"):
        holder["job"] = WarmUp(warm_steps(max_module())).start()
        _warm_progress(holder["job"])


def _warm_progress(job: WarmUp) -> None:
    @st.fragment(run_every=REFRESH_SECONDS)
    def view() -> None:
        state = job.state()
        compiling = monitor().state()
        if state.running:
            now = f", now `{compiling.current}`" if compiling.current else ""
            st.info(
                f"warming the kernels (once per machine): phase {state.phase} of "
                f"{state.phases}, {state.name}; {state.elapsed:.0f} s so far, "
                f"{compiling.compiled} kernels compiled{now}"
            )
            return
        if state.error:
            st.error("warming failed for some kernels")
            st.code(state.error)
        else:
            st.success(f"the kernels are warm ({state.elapsed:.0f} s)")
        st.rerun()

    view()


def remember_warm(workload: str | None, snapshot: JobSnapshot) -> None:
    """Mark `workload` warm once a run of it has finished an epoch."""
    if workload is not None and snapshot.records and not is_warm(workload):
        mark_warm(workload)
