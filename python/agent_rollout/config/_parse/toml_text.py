"""TOML text as ``tomllib``'s values, with the position of any key.

Positions come from a small line scanner: keys written inside an inline table
(``training = {rollout_backend = "art"}``) or an inline array are reported at
the line of the table's own key. Tables and arrays nest at most
``MAX_NESTING_DEPTH`` levels (:mod:`agent_rollout._limits`), checked by the
scanner before ``tomllib`` (which recurses once per level) reads the text.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

from agent_rollout._limits import MAX_NESTING_DEPTH
from agent_rollout.config._parse.positions import (
    KeyPath,
    Parsed,
    ParseProblem,
    Pos,
    TableWalker,
    long_number,
)

_TOML_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')"""
_TOML_KEY = re.compile(rf"{_TOML_KEY_PART}(?:[ \t]*\.[ \t]*{_TOML_KEY_PART})*")
_TOML_PART = re.compile(_TOML_KEY_PART)
_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TOML_END = re.compile(r"\s*\(at end of document\)\s*$")


def _toml_key_parts(text: str) -> KeyPath:
    parts = []
    for match in _TOML_PART.finditer(text):
        part = match.group(0)
        if part.startswith('"'):
            try:
                parts.append(json.loads(part))
            except ValueError:  # an escape JSON lacks; the TOML parser judges it
                parts.append(part[1:-1])
        elif part.startswith("'"):
            parts.append(part[1:-1])
        else:
            parts.append(part)
    return tuple(parts)


def _toml_scan_value(text: str, start: int, state: dict[str, Any], where: Pos) -> None:
    """Follow brackets and multi-line strings from ``start`` to the end of a line.

    ``where`` is the (line, column) of ``text[0]``. ``state["base"]`` is the
    nesting level of the table that holds the value; an array or inline table
    that would nest past ``MAX_NESTING_DEPTH`` is refused here, before the
    TOML parser (which recurses once per level) sees it. Where each bracket
    opens and closes is kept (``state["open"]``, ``state["closed"]``), and where
    the open multi-line string began (``state["string_at"]``), to place the
    TOML parser's errors at what was left open.
    """
    i = start
    while i < len(text):
        quote = state["string"]
        if quote is not None:
            end = text.find(quote, i)
            if quote == '"""':
                while end > 0 and text[end - 1] == "\\" and not _even_backslashes(text, end):
                    end = text.find(quote, end + 1)
            if end < 0:
                return
            i = end + len(quote)
            state["string"] = None
            continue
        char = text[i]
        if char == "#":
            return
        if text.startswith(('"""', "'''"), i):
            state["string"] = text[i : i + 3]
            state["string_at"] = (where[0], where[1] + i)
            i += 3
            continue
        if char in "\"'":
            end = i + 1
            while end < len(text) and text[end] != char:
                end += 2 if char == '"' and text[end] == "\\" else 1
            i = end + 1
            continue
        if char in "[{":
            state["depth"] += 1
            state["open"].append((where[0], where[1] + i))
            if state["base"] + state["depth"] > MAX_NESTING_DEPTH:
                raise ParseProblem(
                    (where[0], where[1] + i), f"nested deeper than {MAX_NESTING_DEPTH} levels"
                )
        elif char in "]}":
            state["depth"] -= 1
            if state["open"]:
                state["closed"].append((state["open"].pop(), (where[0], where[1] + i)))
        i += 1


def _even_backslashes(text: str, end: int) -> bool:
    count = 0
    while end - count - 1 >= 0 and text[end - count - 1] == "\\":
        count += 1
    return count % 2 == 0


def _toml_module() -> Any:
    import importlib

    try:
        return importlib.import_module("tomllib")
    except ModuleNotFoundError:  # Python 3.10: the same parser, as a package
        return importlib.import_module("tomli")


def _depth(value: Any) -> int:
    """How deeply dicts and lists nest in ``value`` (a scalar is 0), without recursion."""
    deepest = 0
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level + 1)
        todo.extend((child, level + 1) for child in children)
    return deepest


def _toml_deep_value(root: dict[str, Any], keys: dict[KeyPath, tuple[Pos, Pos]]) -> None:
    """Refuse nesting the line scanner cannot see (dotted keys, tables in arrays)."""
    if _depth(root) <= MAX_NESTING_DEPTH:
        return
    pos: Pos = (1, 1)
    for key, value in root.items():
        if 1 + _depth(value) > MAX_NESTING_DEPTH:
            pos = keys.get((key,), (pos, pos))[1]
            if isinstance(value, dict):
                for inner, inner_value in value.items():
                    if 2 + _depth(inner_value) > MAX_NESTING_DEPTH:
                        pos = keys.get((key, inner), (pos, pos))[1]
                        break
            break
    raise ParseProblem(pos, f"nested deeper than {MAX_NESTING_DEPTH} levels")


def _toml_scan(
    text: str, key_depth: int = 2
) -> tuple[dict[KeyPath, tuple[Pos, Pos]], dict[tuple[Any, ...], tuple[Pos, Pos]], dict[str, Any]]:
    """Key positions of a TOML text, and its bracket nesting checked.

    Returns the positions of the key paths up to ``key_depth`` long, of
    every key path the scanner sees (arrays of tables ``[[x]]`` give their
    elements an index: ``("x", 0, "name")``), and the scanner's state at the
    end (see ``_toml_scan_value``).
    """
    found: dict[tuple[Any, ...], tuple[Pos, Pos]] = {}
    arrays: dict[tuple[Any, ...], int] = {}  # [[x]] paths -> elements so far

    def resolved(parts: tuple[Any, ...]) -> tuple[Any, ...]:
        path: tuple[Any, ...] = ()
        for part in parts:
            path = (*path, part)
            if path in arrays:  # a table under an array of tables: its last element
                path = (*path, arrays[path] - 1)
        return path

    table: Optional[tuple[Any, ...]] = ()
    state: dict[str, Any] = {
        "string": None,
        "string_at": (1, 1),
        "depth": 0,
        "base": 1,
        "open": [],
        "closed": [],
    }
    for number, line in enumerate(text.split("\n"), 1):
        if state["string"] is not None or state["depth"] > 0:
            _toml_scan_value(line, 0, state, (number, 1))
            continue
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if stripped.startswith("["):
            header = stripped.startswith("[[")
            match = _TOML_KEY.match(stripped.lstrip("[").lstrip())
            if match is None:
                table = None
                continue
            offset = indent + stripped.index(match.group(0))
            at = ((number, offset + 1), (number, offset + 1))
            parts = _toml_key_parts(match.group(0))
            if header:
                array = (*resolved(parts[:-1]), parts[-1])
                arrays[array] = arrays.get(array, 0) + 1
                found.setdefault(array, at)
                table = (*array, arrays[array] - 1)
            else:
                table = resolved(parts)
            for depth in range(1, len(table) + 1):  # [a.b] also places a, as a.b = 1 does
                found.setdefault(table[:depth], at)
            continue
        match = _TOML_KEY.match(stripped)
        if match is None or not stripped or stripped.startswith("#"):
            continue
        rest = stripped[match.end() :]
        eq = len(rest) - len(rest.lstrip(" \t"))
        if not rest[eq:].startswith("="):
            continue
        value_at = match.end() + eq + 1
        value_at += len(stripped[value_at:]) - len(stripped[value_at:].lstrip(" \t"))
        parts = _toml_key_parts(match.group(0))
        if table is not None:
            path = (*table, *parts)
            for depth in range(len(table) + 1, len(path) + 1):
                found.setdefault(
                    path[:depth], ((number, indent + 1), (number, indent + value_at + 1))
                )
        # The value's container: the root, its tables, then the dotted key's parts.
        state["base"] = len(table or ()) + len(parts)
        _toml_scan_value(stripped, value_at, state, (number, indent + 1))
    keys = {
        path: at
        for path, at in found.items()
        if len(path) <= key_depth and all(isinstance(part, str) for part in path)
    }
    return keys, found, state


def _toml_error(message: str, text: str, state: dict[str, Any]) -> ParseProblem:
    """``tomllib``'s error placed at its cause.

    ``tomllib`` says where it found the error. Where that is not the cause,
    the position is where the thing left open began: an array or inline
    table not closed (``Unclosed array``, found at the next statement, lines
    later) at its bracket; an error at the end of the text at the multi-line
    string or the bracket still open there, or else at the end of the text.
    """
    at = _TOML_AT.search(message)
    opened: list[Pos] = state["open"]
    if at:
        pos = (int(at.group(1)), int(at.group(2)))
        message = message[: at.start()]
        if message.startswith(("Unclosed array", "Unclosed inline table")):
            # The innermost bracket opened before the error and not closed by then.
            around = [o for o, c in state["closed"] if o < pos <= c] + [
                o for o in opened if o < pos
            ]
            pos = max(around, default=pos)
        return ParseProblem(pos, f"invalid TOML: {message}")
    end = _TOML_END.search(message)
    if end is None:
        return ParseProblem((1, 1), f"invalid TOML: {message}")
    message = message[: end.start()]
    if state["string"] is not None:
        pos = state["string_at"]
    elif opened:
        pos = opened[-1]
    else:
        pos = (text.count("\n") + 1, len(text) - text.rfind("\n"))
    return ParseProblem(pos, f"invalid TOML: {message}")


def parse_toml(text: str, depth: int = 2) -> Parsed:
    tomllib = _toml_module()
    keys, found, state = _toml_scan(text, depth)
    try:
        root = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _toml_error(str(exc), text, state) from None
    except RecursionError:  # the scanner missed some nesting: still our limit
        raise ParseProblem((1, 1), f"nested deeper than {MAX_NESTING_DEPTH} levels") from None
    except ValueError as exc:  # an integer too long to convert
        raise long_number(text, "TOML", exc) from None
    _toml_deep_value(root, keys)
    return Parsed(root, (1, 1), keys, [], TableWalker(found))
