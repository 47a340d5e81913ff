"""minifw's training visualizer: `streamlit run project/app.py`.

Pages (sidebar): 1 Train, 2 Autograd graph, 3 Tensor explorer, 4 Digits,
5 Profiler. `streamlit run project/app.py -- --max-module N` hides the pages of
course modules after N. The server binds to localhost (see .streamlit/config.toml
at the repository root; run streamlit from there).
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # streamlit puts project/ on the path, not the repository root
    sys.path.insert(0, ROOT)

import streamlit as st  # noqa: E402

from project.app_pages import visible_pages  # noqa: E402


def max_module(argv: list[str]) -> int | None:
    """The `--max-module N` option after streamlit's `--`, if any."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--max-module", type=int)
    known, _ = parser.parse_known_args(argv)
    return known.max_module  # type: ignore[no-any-return]


def main() -> None:
    """Set up the page and run the one the sidebar selects."""
    st.set_page_config(page_title="minifw", layout="wide")
    pages = [
        st.Page(info.render_function(), title=info.label, url_path=info.slug)
        for info in visible_pages(max_module(sys.argv[1:]))
    ]
    st.sidebar.caption("minifw: a small teaching deep-learning framework")
    st.navigation(pages).run()


main()
