"""Colour on a terminal, as ruff chooses it (standard library only).

``--color auto`` (the default) colours when ``FORCE_COLOR`` is set to a
non-empty value, else not when ``NO_COLOR`` is (https://no-color.org), else
when the stream is a terminal; ``always`` and ``never`` decide alone, the
environment aside. Only text meant for people is coloured, never a machine
format, and only by putting SGR codes around text already made ``printable``:
colour never lets a user's text through unescaped.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Optional, TextIO

__all__ = ["BOLD", "CYAN", "GREEN", "RED", "YELLOW", "add_color", "paint", "use_color"]

BOLD = "1"
RED = "31"
GREEN = "32"
YELLOW = "33"
CYAN = "36"


def add_color(parser: argparse.ArgumentParser) -> None:
    """``--color auto|always|never``."""
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the text report: auto (default) on a terminal, unless NO_COLOR is "
        "set (FORCE_COLOR forces it); always; never",
    )


def use_color(choice: str, stream: TextIO, environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether to colour what goes to ``stream`` (``choice``: ``--color``'s value)."""
    if choice != "auto":
        return choice == "always"
    env = os.environ if environ is None else environ
    if env.get("FORCE_COLOR"):
        return True
    if env.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


def paint(text: str, *styles: str) -> str:
    """``text`` between the SGR codes of ``styles`` and a reset (``text``: printable already)."""
    if not styles or not text:
        return text
    return f"\x1b[{';'.join(styles)}m{text}\x1b[0m"
