"""minifw's training visualizer: `streamlit run project/app.py`.

Pages (sidebar): 1 Train, 2 Autograd graph, 3 Tensor explorer, 4 Digits,
5 Profiler; each says at its top which course tasks it exercises. The app shows
only what a student has built: `streamlit run project/app.py -- --max-module N`
(or `MINIFW_MAX_MODULE=N streamlit run project/app.py`) hides the pages, and the
parts of pages, of course modules after N; in a generated student repository the
default is the repository's module. The server binds to localhost (see
.streamlit/config.toml at the repository root; run streamlit from there).
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # streamlit puts project/ on the path, not the repository root
    sys.path.insert(0, ROOT)

import streamlit as st  # noqa: E402

from project.app_pages import MAX_MODULE_ENV, course_limit, visible_pages  # noqa: E402
from project.app_pages.common import MAX_MODULE_KEY  # noqa: E402


def nothing_yet() -> None:
    """The page shown when the course module has no app page yet (module 0)."""
    st.title("minifw")
    st.info(
        "The app's first pages come with course module 1 (the Scalar engine). "
        "Come back when you start it."
    )


def limit_text(limit: int | None) -> str:
    """The sidebar's note on which course modules the pages cover."""
    if limit is None:
        return "Pages of every course module."
    return (
        f"Pages of course modules up to {limit}; later ones are hidden "
        f"(`--max-module N` or {MAX_MODULE_ENV}=N shows more)."
    )


def main() -> None:
    """Set up the page and run the one the sidebar selects."""
    st.set_page_config(page_title="minifw", layout="wide")
    try:
        limit = course_limit(sys.argv[1:])
    except ValueError as error:
        st.error(str(error))
        return
    st.session_state[MAX_MODULE_KEY] = limit
    pages = [
        st.Page(info.script, title=info.label, url_path=info.slug) for info in visible_pages(limit)
    ] or [st.Page(nothing_yet, title="minifw", url_path="start")]
    st.sidebar.caption("minifw: a small teaching deep-learning framework")
    st.sidebar.caption(limit_text(limit))
    st.navigation(pages).run()


if __name__ == "__main__":  # streamlit runs the script as __main__
    main()
