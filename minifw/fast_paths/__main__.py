"""Print every kernel source minifw generates: `python -m minifw.fast_paths`."""

from __future__ import annotations

from minifw.core import operators
from minifw.fast_paths import line_loops


def generated_sources() -> dict[str, str]:
    """Name -> source of each generated function: the line loops, and the op dispatchers.

    The dispatchers appear where `operators.py` generates them (`dispatch_source`).
    """
    sources = {f"line_loops.{name}": text for name, text in line_loops.line_sources().items()}
    dispatch_source = getattr(operators, "dispatch_source", None)
    if dispatch_source is not None:
        sources["operators.dispatch_source()"] = dispatch_source()
    return sources


def main() -> None:
    """Print each generated source under a header naming it."""
    for name, source in generated_sources().items():
        print(f"# ---- {name} " + "-" * max(0, 84 - len(name)))
        print(source.rstrip("\n"), end="\n\n")


if __name__ == "__main__":
    main()
