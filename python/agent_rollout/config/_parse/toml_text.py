"""TOML text as ``tomllib``'s values, with the position of every key and array item.

Positions come from a scanner over the text that follows what TOML writes:
``[tables]`` and ``[[arrays of tables]]``, dotted keys, strings of every form,
and inside values the keys of inline tables (nested, dotted, bare or quoted,
escapes read as ``tomllib`` reads them) and the items of arrays (over lines,
with comments). A key is placed at its first character and its value at the
value's (a dotted key's prefixes at the whole key's); an array item at its
value. Tables, arrays and dotted keys nest at most ``MAX_NESTING_DEPTH``
levels (:mod:`agent_rollout._limits`), checked by the scanner before
``tomllib`` reads the text (it recurses once per bracket, and its time and
memory grow with the square of a dotted key's length). The scanner reads any
text in one pass, valid or not, in time and memory in proportion to its
size; for an invalid text ``tomllib``'s error is what counts, and the scanner
says where the bracket or string left open began.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from agent_rollout._limits import MAX_NESTING_DEPTH
from agent_rollout.config._parse.positions import (
    KeyPath,
    Parsed,
    ParseProblem,
    Pos,
    long_number,
)

_TOML_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')"""
_TOML_KEY = re.compile(rf"{_TOML_KEY_PART}(?:[ \t]*\.[ \t]*{_TOML_KEY_PART})*")
_TOML_PART = re.compile(_TOML_KEY_PART)
_STATEMENT = re.compile(rf"[ \t\r]*(?:\[|({_TOML_KEY.pattern})[ \t]*=[ \t]*)")
"""A line's table header (its ``[``) or key and ``=``."""
_SCALAR_LINE = re.compile(
    r"""(?:"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^ \t\r\n#,\[\]{}="']+)[ \t\r]*(?:#.*)?"""
)
"""The rest of a line that holds a string on one line or a bare value, and maybe a comment."""
_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TOML_END = re.compile(r"\s*\(at end of document\)\s*$")

# Inside a value: a basic or literal string on one line (to its closing quote,
# else to the end of the line), a bare value (a number, a date, a boolean).
_BASIC = re.compile(r'"(?:[^"\\\n]|\\[^\n])*"?')
_LITERAL = re.compile(r"'[^'\n]*'?")
_PLAIN = re.compile(r"[^ \t\r\n#,\[\]{}=\"']+")
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|x([0-9A-Fa-f]{2})|(.))", re.S)
_ESCAPED = dict(zip('btnfre"\\', '\b\t\n\f\r\x1b"\\', strict=True))
"""What ``\\b``, ``\\t``, ... stand for. ``\\e`` and ``\\xHH`` are TOML 1.1's: a
``tomllib`` of TOML 1.0 refuses them, one of TOML 1.1 reads them so."""

_VALUE, _KEY, _AFTER = 0, 1, 2
"""What an open inline table or array expects next: a value, a key, a ``,`` or its end."""


def _unescaped(body: str) -> str:
    """A basic string's text as ``tomllib`` reads it (an escape it refuses left as written)."""
    if "\\" not in body:
        return body

    def one(match: re.Match[str]) -> str:
        code = match.group(1) or match.group(2) or match.group(3)
        if code is not None:
            try:
                return chr(int(code, 16))
            except (ValueError, OverflowError):  # past U+10FFFF: tomllib refuses the text
                return match.group(0)
        return _ESCAPED.get(match.group(4), match.group(0))

    return _ESCAPE.sub(one, body)


def _toml_key_parts(text: str) -> KeyPath:
    """The parts of a (dotted) key as written, as ``tomllib`` reads them."""
    if "." not in text and text[0] not in "\"'":
        return (text,)  # a bare key
    parts = []
    for match in _TOML_PART.finditer(text):
        part = match.group(0)
        if part.startswith('"'):
            parts.append(_unescaped(part[1:-1]))
        elif part.startswith("'"):
            parts.append(part[1:-1])
        else:
            parts.append(part)
    return tuple(parts)


def _string_end(text: str, start: int, quote: str) -> int:
    """The end of the multi-line string whose body starts at ``text[start]``; -1: none.

    ``quote`` is ``'''`` or its double-quoted twin. Up to two quotes right
    before the closing three belong to the string (four quotes end it, the
    first of them in the string); in a basic string, a quote after an odd run
    of backslashes is escaped.
    """
    end = text.find(quote, start)
    if quote == '"""':
        while end > 0 and _escaped(text, end):
            end = text.find(quote, end + 1)
    if end < 0:
        return -1
    end += 3
    for _ in range(2):
        if text.startswith(quote[0], end):
            end += 1
    return end


def _escaped(text: str, end: int) -> bool:
    count = 0
    while end - count - 1 >= 0 and text[end - count - 1] == "\\":
        count += 1
    return count % 2 == 1


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
    """Refuse nesting the scanner missed (in a text it did not follow): a last guard."""
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


def _deep(level: int, pos: Pos) -> None:
    """Refuse a mapping or list at ``level`` (the root is 1) past ``MAX_NESTING_DEPTH``,
    before ``tomllib`` reads the text: it recurses once per bracket, and its time and
    memory grow with the square of a dotted key's length."""
    if level > MAX_NESTING_DEPTH:
        raise ParseProblem(pos, f"nested deeper than {MAX_NESTING_DEPTH} levels")


class _Walker:
    """``Parsed.walker`` for TOML: a handle is the number of a key path in ``_Scan.found``."""

    root = 0

    def __init__(self, found: dict[tuple[int, Any], tuple[int, Pos, Pos]]) -> None:
        self.found = found

    def step(self, handle: int, part: Any) -> Optional[tuple[Any, Pos, Pos]]:
        return self.found.get((handle, part))

    def plain_text(self, handle: Any) -> Optional[str]:
        return None


class _Scan:
    """One pass over a TOML text: the position of every key path and array item.

    Each key path the text writes, and each prefix a dotted key or a table
    header implies, is placed where it is first written; an array item at its
    value (its key position too). ``found`` holds them flat, each path
    numbered: ``(number of the path's parent, last part) -> (number, key
    position, value position)``, the root being 0. So the table grows by one
    entry a key part (a text of any shape costs time and memory in proportion
    to its size), and holds few objects the garbage collector must visit.
    ``tables`` counts the ``[[tables]]`` of each array of tables so far.

    Each ``[`` or ``{`` open is a frame ``[bracket, path number, items so far,
    nesting level, position]``; the number is ``None`` where the text is not
    TOML the scan follows (nothing is placed under it then).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.found: dict[tuple[int, Any], tuple[int, Pos, Pos]] = {}
        self.tables: dict[int, int] = {}
        self.frames: list[list[Any]] = []
        self.closed: list[tuple[Pos, Pos]] = []  # (open, close) of each bracket pair
        self.string: Optional[str] = None  # the quote of a multi-line string left open
        self.string_at: Pos = (1, 1)
        self.number = 1  # the line of ``line_start``
        self.line_start = 0

    def child(self, parent: int, part: Any, at: tuple[Pos, Pos]) -> int:
        """The number of path ``parent`` + ``part``, placed at ``at`` if the text has
        not written it yet."""
        entry = self.found.get((parent, part))
        if entry is None:
            entry = self.found[(parent, part)] = (len(self.found) + 1, *at)
        return entry[0]

    def state(self) -> dict[str, Any]:
        """What ``_toml_error`` needs: the brackets and multi-line string left open."""
        return {
            "string": self.string,
            "string_at": self.string_at,
            "open": [frame[4] for frame in self.frames],
            "closed": self.closed,
        }

    def keys(self, depth: int) -> dict[KeyPath, tuple[Pos, Pos]]:
        """The positions of the key paths (no list index) up to ``depth`` long, in the
        order the text first writes them."""
        keys: dict[KeyPath, tuple[Pos, Pos]] = {}
        paths: dict[int, KeyPath] = {0: ()}  # the numbers of those shorter than depth
        for (parent, part), (number, key_at, value_at) in self.found.items():
            path = paths.get(parent)
            if path is not None and isinstance(part, str):
                path = (*path, part)
                keys[path] = (key_at, value_at)
                if len(path) < depth:
                    paths[number] = path
        return keys

    def lines(self) -> None:
        """Every line of the text, in order."""
        table: Optional[tuple[int, int]] = (0, 0)
        i = 0
        while i < len(self.text):
            i, table = self._line(i, table)
            self.number += 1

    def _line(
        self, i: int, table: Optional[tuple[int, int]]
    ) -> tuple[int, Optional[tuple[int, int]]]:
        """The line starting at ``text[i]``: a table header, or ``key = value`` (to
        where its value ends, lines later for some). ``table`` is the number of the
        table the line is in and its depth (``None``: under a header not read).
        Returns where the next line starts, and the table of the lines after."""
        text = self.text
        self.line_start = i
        eol = text.find("\n", i)
        if eol < 0:
            eol = len(text)
        match = _STATEMENT.match(text, i, eol)
        if match is None:  # a blank line, a comment, or not TOML
            return eol + 1, table
        start = match.start(1)
        if start < 0:
            return eol + 1, self._header(text[match.end() - 1 : eol], match.end() - 1 - i)
        value = match.end()
        parts = _toml_key_parts(match.group(1))
        # The value's container: the root, its tables, then the dotted key's parts.
        base = (table[1] if table else 0) + len(parts)
        _deep(base, (self.number, start - i + 1))
        node = None
        if table is not None:
            node = table[0]
            at = ((self.number, start - i + 1), (self.number, value - i + 1))
            for part in parts:
                node = self.child(node, part, at)
        if _SCALAR_LINE.fullmatch(text, value, eol):  # most values: nothing to follow
            return eol + 1, table
        return self._value(value, eol, node, base), table

    def _header(self, line: str, indent: int) -> Optional[tuple[int, int]]:
        """The table a ``[table]`` or ``[[array of tables]]`` line opens, and its
        depth; each key of its name is placed there, as ``a.b = 1`` places ``a``."""
        match = _TOML_KEY.match(line.lstrip("[").lstrip())
        if match is None:
            return None
        offset = indent + line.index(match.group(0))
        at = ((self.number, offset + 1), (self.number, offset + 1))
        parts = _toml_key_parts(match.group(0))
        array = line.startswith("[[")
        node, depth, tables = 0, 0, self.tables
        for count, part in enumerate(parts, 1):
            node = self.child(node, part, at)
            depth += 1
            if array and count == len(parts):
                tables[node] = tables.get(node, 0) + 1
            if node in tables:  # its last table (a table under it: in that one)
                node = self.child(node, tables[node] - 1, at)
                depth += 1
        _deep(depth + 1, at[0])  # the table's own level
        return node, depth

    def _value(self, i: int, eol: int, node: Optional[int], base: int) -> int:
        """Scan the value of a ``key = value`` line from ``text[i]``; ``node`` is its key's.

        Goes on over the lines an array, an inline table or a multi-line string
        takes, to the end of the line where the value ends; returns where the
        next line starts. ``base`` is the nesting level of the table holding the
        value: an array or inline table nesting past ``MAX_NESTING_DEPTH`` is
        refused here, before the TOML parser (which recurses once per level)
        sees it.
        """
        text, frames, closed, found, child = (
            self.text,
            self.frames,
            self.closed,
            self.found,
            self.child,
        )
        end = len(text)
        number, line_start = self.number, self.line_start
        expect = _VALUE
        parts: KeyPath = ()  # the key of the value expected next in an inline table
        key_at: Pos = (number, i - line_start + 1)  # and where it is
        while i < end:
            char = text[i]
            if char in " \t\r":
                i += 1
                continue
            if char == "\n":
                i += 1
                if not frames:
                    break
                number, line_start = number + 1, i
                eol = text.find("\n", i)
                if eol < 0:
                    eol = end
                continue
            if char == "#":
                i = eol
                continue
            if char == ",":
                if frames:
                    expect = _VALUE if frames[-1][0] == "[" else _KEY
                i += 1
                continue
            if char in "]}":
                if frames:
                    closed.append((frames.pop()[4], (number, i - line_start + 1)))
                expect = _AFTER
                i += 1
                continue
            if char == "=":
                i += 1
                continue
            if expect == _KEY and char not in "[{":
                # A key in an inline table: on one line, then '=' and its value.
                match = _TOML_KEY.match(text, i, eol)
                after = match.end() if match else i + 1
                while after < eol and text[after] in " \t":
                    after += 1
                if match is None or after >= eol or text[after] != "=":
                    expect = _AFTER  # not TOML: nothing placed up to the next ','
                    i = after
                    continue
                key_at = (number, i - line_start + 1)
                parts = _toml_key_parts(match.group(0))
                _deep(frames[-1][3] - 1 + len(parts), key_at)
                expect = _VALUE
                i = after + 1
                while i < eol and text[i] in " \t":
                    i += 1
                continue
            # A value: where the line's key, an array or an inline table expects one, placed.
            here = (number, i - line_start + 1)
            held = None
            if expect == _VALUE:
                if not frames:
                    held = node
                else:
                    frame = frames[-1]
                    if frame[0] == "[":
                        if frame[1] is not None:  # an item: a new path, but for bad TOML
                            entry = found.setdefault(
                                (frame[1], frame[2]), (len(found) + 1, here, here)
                            )
                            held = entry[0]
                        frame[2] += 1
                    elif frame[1] is not None:
                        held, at = frame[1], (key_at, here)
                        for part in parts:
                            held = child(held, part, at)
            if char in "[{":
                if not frames:
                    level = base + 1
                elif frames[-1][0] == "{" and expect == _VALUE:
                    level = frames[-1][3] + len(parts)  # the key's parts nest too
                else:
                    level = frames[-1][3] + 1
                _deep(level, here)
                frames.append([char, held, 0, level, here])
                expect = _VALUE if char == "[" else _KEY
                i += 1
                continue
            expect = _AFTER
            if char == '"' or char == "'":
                quote = char * 3
                if not text.startswith(quote, i):
                    match = (_BASIC if char == '"' else _LITERAL).match(text, i)
                    i = match.end() if match else i + 1
                    continue
                closing = _string_end(text, i + 3, quote)
                if closing < 0:
                    self.string, self.string_at = quote, here
                    i = end
                    break
                lines = text.count("\n", i, closing)
                if lines:
                    number += lines
                    line_start = text.rfind("\n", i, closing) + 1
                    eol = text.find("\n", closing)
                    if eol < 0:
                        eol = end
                i = closing
            else:
                match = _PLAIN.match(text, i)
                i = match.end() if match else i + 1
        self.number, self.line_start = number, line_start
        return i


def _toml_scan(text: str, key_depth: int = 2) -> tuple[dict[KeyPath, tuple[Pos, Pos]], _Scan]:
    """The positions of the key paths up to ``key_depth`` long, and the scan (the
    positions of every key path and array item; what was left open at the end)."""
    scan = _Scan(text)
    scan.lines()
    return scan.keys(key_depth), scan


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
    keys, scan = _toml_scan(text, depth)
    try:
        root = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _toml_error(str(exc), text, scan.state()) from None
    except RecursionError:  # the scanner missed some nesting: still our limit
        raise ParseProblem((1, 1), f"nested deeper than {MAX_NESTING_DEPTH} levels") from None
    except ValueError as exc:  # an integer too long to convert
        raise long_number(text, "TOML", exc) from None
    _toml_deep_value(root, keys)
    return Parsed(root, (1, 1), keys, [], _Walker(scan.found))
