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
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from agent_rollout._errors import ConfigIssue
from agent_rollout.config._parse import Pos

__all__ = ["split_lines", "token_end", "with_ends"]

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
