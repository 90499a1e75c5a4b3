"""What every format's reader returns (``Parsed``, ``ParseProblem``) and its positions.

A position is a 1-based ``(line, column)``; ``location`` shows a key path as
messages show it. Shared by the readers of ``yaml_text``, ``json_text`` and
``toml_text``; knows no format.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from agent_rollout._errors import shown

Pos = tuple[int, int]
KeyPath = tuple[str, ...]


class ParseProblem(Exception):
    """A parser stops at a problem it cannot read past: its position, message and kind,
    and the key path it is at (``location``) when the reader knows it (a bad scalar)."""

    def __init__(self, pos: Pos, message: str, kind: str = "syntax", where: str = "") -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message
        self.kind = kind
        self.location = where


class TableWalker:
    """Positions from a table of key paths (TOML's line scanner)."""

    root: Any = ()

    def __init__(self, table: dict[tuple[Any, ...], tuple[Pos, Pos]]) -> None:
        self.table = table

    def step(self, path: tuple[Any, ...], part: Any) -> Optional[tuple[Any, Pos, Pos]]:
        child = (*path, part)
        found = self.table.get(child)
        return None if found is None else (child, found[0], found[1])

    def plain_text(self, handle: Any) -> Optional[str]:
        return None


@dataclass
class Parsed:
    """What every parser returns: values, key positions, and problems found."""

    root: Any
    root_pos: Pos
    keys: dict[KeyPath, tuple[Pos, Pos]]  # key path (the top levels) -> (key, value)
    problems: list[tuple[Pos, str, str, str]]  # (pos, location, message, kind)
    walker: Any = None
    """Finds positions at any depth (``locate``); ``None``: ``keys`` only."""
    empty: bool = False
    """The text holds no document at all (an empty or comment-only YAML file): ``root``
    is ``None`` then, as it is for a document that holds ``null``."""

    def locate(self, path: Sequence[Any]) -> tuple[int, Pos, Pos]:
        """``(found, key position, value position)`` of ``path`` (keys and list indices).

        ``found`` is how many leading parts of the path the text holds; the
        positions are those of the deepest of them (the document start when
        none is), so a key added after reading (a command-line override) is
        placed at the nearest enclosing key the file has. A list item's key
        position is its value position.
        """
        walker = self.walker if self.walker is not None else TableWalker(dict(self.keys))
        handle = walker.root
        key_pos = value_pos = self.root_pos
        for found, part in enumerate(path):
            step = walker.step(handle, part)
            if step is None:
                return found, key_pos, value_pos
            handle, key_pos, value_pos = step
        return len(path), key_pos, value_pos

    def plain_scalar(self, path: Sequence[Any]) -> Optional[tuple[Pos, str]]:
        """``(position, text)`` of the value at ``path`` when it is a plain YAML scalar.

        Plain: written without quotes or tag, so its type is the reading's
        choice (``010``, ``yes``, ``1e3``). ``None`` otherwise, and for JSON and TOML.
        """
        if self.walker is None:
            return None
        handle, pos = self.walker.root, self.root_pos
        for part in path:
            step = self.walker.step(handle, part)
            if step is None:
                return None
            handle, _, pos = step
        text = self.walker.plain_text(handle)
        return None if text is None else (pos, text)


def _part(key: Any) -> str:
    return key if isinstance(key, str) else shown(key)


def location(path: Sequence[Any]) -> str:
    """A key path as messages show it: ``training.items[0].name`` (an int, a list
    index or an int key, in brackets)."""
    text = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            text += f"[{shown(part)}]"
        else:
            text += ("." if text else "") + _part(part)
    return text


def long_number(text: str, language: str, exc: ValueError) -> ParseProblem:
    digits = re.search(r"[0-9]{4000,}", text)
    pos = Lines(text).pos(digits.start()) if digits else (1, 1)
    return ParseProblem(pos, f"invalid {language}: {str(exc).split(';')[0]}")


class Lines:
    """Character offset -> 1-based (line, column)."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def pos(self, offset: int) -> Pos:
        line = bisect_right(self.starts, offset)
        return (line, offset - self.starts[line - 1] + 1)
