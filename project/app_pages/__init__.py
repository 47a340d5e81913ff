"""The app's pages, one module each, numbered and tagged with their course module.

Each page module has a `render()` function that draws the whole page; `app.py`
turns `PAGES` into the sidebar navigation and can hide pages of later course
modules (`streamlit run project/app.py -- --max-module 2`), so a course shows
students only what they have built.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import NamedTuple


class PageInfo(NamedTuple):
    """One page: its number, title, course module, URL slug and module name."""

    number: int
    title: str
    module: int
    slug: str
    module_name: str

    @property
    def label(self) -> str:
        """The sidebar text, e.g. "1 · Train"."""
        return f"{self.number} · {self.title}"

    def render_function(self) -> Callable[[], None]:
        """The page's `render` function (its module is imported on first use)."""
        page = importlib.import_module(f"project.app_pages.{self.module_name}")
        return page.render  # type: ignore[no-any-return]


PAGES = (
    PageInfo(1, "Train", 1, "train", "train"),
    PageInfo(2, "Autograd graph", 1, "autograd", "autograd"),
    PageInfo(3, "Tensor explorer", 2, "tensors", "tensors"),
    PageInfo(4, "Digits", 4, "digits", "digits"),
    PageInfo(5, "Profiler", 3, "profiler", "profiler"),
)


def visible_pages(max_module: int | None = None) -> list[PageInfo]:
    """The pages of course modules up to `max_module` (all pages when None)."""
    return [p for p in PAGES if max_module is None or p.module <= max_module]
