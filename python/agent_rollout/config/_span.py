"""Where the key or value an issue points at ends: ``ConfigIssue.end_line``/``end_col``.

``check`` places every issue at the first character of the key or value at
fault. An editor underlines a range, so each issue also gets the end of the
text that starts there, read from the text itself (the parsers are not asked
again): a quoted string to its closing quote, a flow mapping or list (and a
JSON object or array) to its closing bracket, a plain value or key to the
``:`` or ``=`` after it, a comment, a flow separator or the end of the line.
The end is exclusive and 1-based, as the start is: ``rollout_fucn`` at
column 3 ends at column 15. A position past the end of its line (an empty
value, the end of the file) ends where it starts.

Read from the text the same way: where the keys of a TOML inline table and
the items of a TOML array are (``with_inline_tables``), which TOML's line
scanner leaves at the key that holds them, so that an issue there is placed,
underlined and fixed at its own key or value.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from typing import Any, Optional

from agent_rollout._errors import ConfigIssue
from agent_rollout.config._parse import Parsed, Pos

__all__ = ["InlineTables", "split_lines", "token_end", "with_ends", "with_inline_tables"]

# The line breaks each reader counts lines by (PyYAML's include NEL, LS and PS).
_BREAKS = {
    "yaml": re.compile("\r\n|[\r\n\x85\u2028\u2029]"),
    "json": re.compile("\r?\n"),
    "toml": re.compile("\r?\n"),
}
_CLOSING = {"[": "]", "{": "}"}
_STOPS = {
    "yaml": " \t",
    "json": " \t,]}",
    "toml": " \t,]}=#",
}


def _quoted_end(lines: Sequence[str], line: int, start: int, fmt: str) -> Pos:
    """The end of the string whose opening quote is at ``lines[line][start]`` (0-based)."""
    text = lines[line]
    quote = text[start]
    if fmt == "toml" and text.startswith(quote * 3, start):
        for number in range(line, len(lines)):
            begin = start + 3 if number == line else 0
            found = lines[number].find(quote * 3, begin)
            while found >= 0 and quote == '"' and _escaped(lines[number], found):
                found = lines[number].find(quote * 3, found + 1)
            if found >= 0:
                return (number + 1, found + 4)
        return (line + 1, len(text) + 1)
    number, i = line, start + 1
    # A YAML quoted scalar may go on over several lines; JSON and TOML strings end on theirs.
    last = len(lines) if fmt == "yaml" else line + 1
    while number < last:
        current = lines[number]
        while i < len(current):
            char = current[i]
            if char == "\\" and quote == '"':
                i += 2
                continue
            if char == quote:
                if fmt == "yaml" and quote == "'" and current.startswith("''", i):
                    i += 2
                    continue
                return (number + 1, i + 2)
            i += 1
        number, i = number + 1, 0
    return (line + 1, len(text) + 1)


def _escaped(text: str, at: int) -> bool:
    count = 0
    while at - count - 1 >= 0 and text[at - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def _bracket_end(lines: Sequence[str], line: int, start: int, fmt: str) -> Pos:
    """The end of the flow collection (or JSON container) opening at ``lines[line][start]``."""
    depth = 0
    number, i = line, start
    while number < len(lines):
        current = lines[number]
        while i < len(current):
            char = current[i]
            if char in "\"'" and not (fmt == "json" and char == "'"):
                end_line, end_col = _quoted_end(lines, number, i, fmt)
                if end_line - 1 != number:
                    number, i = end_line - 1, end_col - 1
                    current = lines[number]
                    continue
                i = end_col - 1
                continue
            if char == "#" and fmt != "json" and (i == 0 or current[i - 1] in " \t"):
                break  # a comment to the end of the line
            if char in "[{":
                depth += 1
            elif char in "]}":
                depth -= 1
                if depth == 0:
                    return (number + 1, i + 2)
            i += 1
        number, i = number + 1, 0
    return (line + 1, len(lines[line]) + 1)


def _in_flow(text: str, start: int) -> bool:
    """Whether ``text[start]`` sits inside a flow collection opened earlier on its line."""
    depth = 0
    quote = ""
    for char in text[:start]:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth = max(0, depth - 1)
    return depth > 0


def _plain_end(text: str, start: int, fmt: str) -> int:
    """The 0-based end of a plain (unquoted) key or value starting at ``text[start]``."""
    stops = _STOPS[fmt]
    flow = fmt == "yaml" and _in_flow(text, start)
    i = start
    while i < len(text):
        char = text[i]
        if fmt == "yaml":
            following = text[i + 1 : i + 2]
            if char == ":" and following in ("", " ", "\t") and i > start:
                break
            if flow and char in ",]}":
                break
            if char in stops and _yaml_plain_ends(text[i:], flow):
                break
        elif char in stops or (fmt == "json" and char == ":"):
            break
        i += 1
    return i


def _yaml_plain_ends(rest: str, flow: bool) -> bool:
    """Whether a YAML plain scalar ends at the blank that starts ``rest``: blanks only,
    or a comment, or ``:`` and a blank (it was a key), or in a flow collection a flow
    indicator, follow."""
    rest = rest.lstrip(" \t")
    if not rest or rest.startswith("#") or (rest.startswith(":") and rest[1:2] in ("", " ")):
        return True
    return flow and rest[0] in ",]}"


def token_end(lines: Sequence[str], fmt: str, pos: Pos) -> Pos:
    """The exclusive end ``(line, col)`` of the key or value starting at ``pos`` (1-based)."""
    line, col = pos
    if not 1 <= line <= len(lines):
        return pos
    text = lines[line - 1]
    start = col - 1
    if not 0 <= start < len(text) or text[start] in " \t":
        return pos
    char = text[start]
    if char in "\"'" and not (fmt == "json" and char == "'"):
        return _quoted_end(lines, line - 1, start, fmt)
    if char in _CLOSING:
        return _bracket_end(lines, line - 1, start, fmt)
    end = _plain_end(text, start, fmt)
    return (line, max(end, start + 1) + 1)


def split_lines(text: str, fmt: str, keep_breaks: bool = False) -> list[str]:
    """The lines of ``text`` as the format's reader counts them (a leading byte-order
    mark left out, as the readers leave it); ``keep_breaks``: each with its line break."""
    text = text.removeprefix("\ufeff")
    if not keep_breaks:
        return _BREAKS[fmt].split(text)
    lines = []
    last = 0
    for found in _BREAKS[fmt].finditer(text):
        lines.append(text[last : found.end()])
        last = found.end()
    lines.append(text[last:])
    return lines


def with_ends(text: str, fmt: str, issues: list[ConfigIssue]) -> list[ConfigIssue]:
    """``issues`` with their end positions, read from ``text`` (as the parsers read it)."""
    if not issues:
        return issues
    lines = split_lines(text, fmt)
    out = []
    for issue in issues:
        if issue.end_line is not None:
            out.append(issue)
            continue
        end_line, end_col = token_end(lines, fmt, (issue.line, issue.col))
        out.append(dataclasses.replace(issue, end_line=end_line, end_col=end_col))
    return out


# ---------------------------------------------------------------- TOML inline tables

_TOML_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")

_Entries = dict[tuple[str, ...], tuple[Pos, Pos, bool]]
"""An inline table's keys: each key path written in it (a dotted key gives each of its
prefixes too) to ``(key position, value position, whether the path ends there)``."""


def _blank_end(lines: Sequence[str], line: int, i: int) -> tuple[int, int]:
    """Past the blanks, line breaks and comments from ``lines[line][i]`` (0-based)."""
    while line < len(lines):
        text = lines[line]
        while i < len(text) and text[i] in " \t":
            i += 1
        if i < len(text) and text[i] != "#":
            return line, i
        line, i = line + 1, 0
    return line, i


def _toml_key_part(lines: Sequence[str], line: int, i: int) -> Optional[tuple[str, int]]:
    """``(key, end)`` of the bare or quoted key part at ``lines[line][i]``."""
    text = lines[line]
    if text[i] == "'":
        end = text.find("'", i + 1)
        return None if end < 0 else (text[i + 1 : end], end + 1)
    if text[i] == '"':
        end_line, end_col = _quoted_end(lines, line, i, "toml")
        if end_line != line + 1:
            return None
        try:
            key = json.loads(text[i : end_col - 1], strict=False)
        except ValueError:  # an escape JSON lacks (\UXXXXXXXX): not placed
            return None
        return (key, end_col - 1) if isinstance(key, str) else None
    found = _TOML_BARE_KEY.match(text, i)
    return None if found is None else (found.group(0), found.end())


def _inline_entries(lines: Sequence[str], at: Pos) -> _Entries:
    """The keys of the TOML inline table whose ``{`` is at ``at``, read from the text.

    Each value is skipped as ``token_end`` reads it (a string, an array or table
    however many lines it takes, a plain value). A text the scan does not follow
    ends it: the keys after are not placed (``locate`` gives the table's own key).
    """
    entries: _Entries = {}
    line, i = at[0] - 1, at[1]
    while True:
        line, i = _blank_end(lines, line, i)
        if line >= len(lines) or lines[line][i] == "}":
            return entries
        if lines[line][i] == ",":
            i += 1
            continue
        key_pos = (line + 1, i + 1)
        parts: list[str] = []
        text = lines[line]
        while True:
            part = _toml_key_part(lines, line, i)
            if part is None:
                return entries
            parts.append(part[0])
            i = part[1]
            while i < len(text) and text[i] in " \t":
                i += 1
            if i < len(text) and text[i] == ".":
                i += 1
                while i < len(text) and text[i] in " \t":
                    i += 1
                if i < len(text):
                    continue
            break
        if i >= len(text) or text[i] != "=":
            return entries
        i += 1
        while i < len(text) and text[i] in " \t":
            i += 1
        value_pos = (line + 1, i + 1)
        for size in range(1, len(parts) + 1):
            entries.setdefault(tuple(parts[:size]), (key_pos, value_pos, size == len(parts)))
        end = token_end(lines, "toml", value_pos)
        if end <= value_pos:
            return entries
        line, i = end[0] - 1, end[1] - 1
        # A value with a blank inside (a date and time, ``1979-05-27 07:32:00``) goes on.
        text = lines[line]
        while i < len(text) and text[i] not in ",}#":
            i += 1


def _array_items(lines: Sequence[str], at: Pos) -> list[Pos]:
    """Where each item of the TOML array whose ``[`` is at ``at`` starts."""
    items: list[Pos] = []
    line, i = at[0] - 1, at[1]
    while True:
        line, i = _blank_end(lines, line, i)
        if line >= len(lines) or lines[line][i] == "]":
            return items
        if lines[line][i] == ",":
            i += 1
            continue
        items.append((line + 1, i + 1))
        end = token_end(lines, "toml", items[-1])
        if end <= items[-1]:
            return items
        line, i = end[0] - 1, end[1] - 1
        text = lines[line]
        while i < len(text) and text[i] not in ",]#":  # a date and time goes on past a blank
            i += 1


class InlineTables:
    """``Parsed.walker`` for TOML: the line scanner's positions, and where it has none,
    the keys of inline tables (``training = { rollout_backend = "art" }``) and the items
    of arrays, read from the text.

    The scanner places a key written inside an inline table at the table's own key.
    Stepping into a table's value when the scanner has no such key reads the text at
    that value's position, once per table; the value found must be the one the data
    holds (its keys, or its items, are the data's), so a dotted key's position (which
    the scanner gives every prefix of the key) is never read as a table of its prefix.
    A handle is ``(scanner handle or None, value position, dotted prefix, value)``.
    """

    def __init__(self, walker: Any, lines: Sequence[str], root: Any) -> None:
        self.walker = walker
        self.lines = lines
        self.root: tuple[Any, Optional[Pos], tuple[str, ...], Any] = (walker.root, None, (), root)
        self.tables: dict[Pos, _Entries] = {}
        self.arrays: dict[Pos, list[Pos]] = {}
        self.held: dict[tuple[Pos, int], bool] = {}  # (table, id of a value): its table?

    def _char(self, at: Pos) -> str:
        line, col = at
        if 1 <= line <= len(self.lines) and 1 <= col <= len(self.lines[line - 1]):
            return self.lines[line - 1][col - 1]
        return ""

    def step(self, handle: Any, part: Any) -> Optional[tuple[Any, Pos, Pos]]:
        scanned, at, prefix, value = handle
        child = _data_child(value, part)
        if scanned is not None:
            found = self.walker.step(scanned, part)
            if found is not None:
                inner, key_pos, value_pos = found
                return (inner, value_pos, (), child), key_pos, value_pos
        if at is None or child is _NOTHING:
            return None
        char = self._char(at)
        if char == "{" and isinstance(part, str) and isinstance(value, dict):
            entries = self.tables.get(at)
            if entries is None:
                entries = self.tables[at] = _inline_entries(self.lines, at)
            if scanned is not None and not self._holds(at, entries, value):
                return None  # not this value's table (a dotted key's position)
            hit = entries.get((*prefix, part))
            if hit is None:
                return None
            key_pos, value_pos, ends = hit
            if ends:
                return (None, value_pos, (), child), key_pos, value_pos
            return (None, at, (*prefix, part), child), key_pos, value_pos
        if char == "[" and not prefix and isinstance(value, list) and isinstance(part, int):
            items = self.arrays.get(at)
            if items is None:
                items = self.arrays[at] = _array_items(self.lines, at)
            if len(items) != len(value):
                return None
            pos = items[part]  # in range: the data holds it
            return (None, pos, (), child), pos, pos
        return None

    def _holds(self, at: Pos, entries: _Entries, value: dict[Any, Any]) -> bool:
        """Whether the table at ``at`` is ``value``'s own: its keys are the value's."""
        verdict = self.held.get((at, id(value)))
        if verdict is None:
            verdict = {path[0] for path in entries} == set(value)
            self.held[(at, id(value))] = verdict
        return verdict

    def plain_text(self, handle: Any) -> Optional[str]:
        return None


_NOTHING = object()


def _data_child(value: Any, part: Any) -> Any:
    if isinstance(value, dict):
        return value.get(part, _NOTHING) if isinstance(part, str) else _NOTHING
    if isinstance(value, list) and isinstance(part, int) and not isinstance(part, bool):
        return value[part] if 0 <= part < len(value) else _NOTHING
    return _NOTHING


def with_inline_tables(parsed: Parsed, text: str, depth: int) -> Parsed:
    """TOML's ``parsed`` with the keys of its inline tables placed (``InlineTables``):
    in ``locate``, and in ``keys`` up to ``depth`` parts, as the scanner gives its own."""
    walker = InlineTables(parsed.walker, split_lines(text, "toml"), parsed.root)
    if "{" not in text:
        return dataclasses.replace(parsed, walker=walker)  # no inline table: no key to add
    keys = dict(parsed.keys)
    todo: list[tuple[tuple[str, ...], Any]] = [((), walker.root)]
    while todo:
        path, handle = todo.pop()
        value = handle[3]
        if len(path) >= depth or not isinstance(value, dict):
            continue
        for key in value:
            step = walker.step(handle, key)
            if step is None:
                continue
            inner, key_pos, value_pos = step
            child = (*path, key)
            keys.setdefault(child, (key_pos, value_pos))
            todo.append((child, inner))
    return dataclasses.replace(parsed, keys=keys, walker=walker)
