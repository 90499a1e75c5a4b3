"""TOML text as ``tomllib``'s values, with the position of every key and array item.

Positions come from a scanner over the text that follows what TOML writes:
``[tables]`` and ``[[arrays of tables]]``, dotted keys, strings of every form,
and inside values the keys of inline tables (nested, dotted, bare or quoted,
escapes read as ``tomllib`` reads them) and the items of arrays (over lines,
with comments). A key is placed at its first character and its value at the
value's (a dotted key's prefixes at the whole key's); an array item at its
value. Tables and arrays nest at most ``MAX_NESTING_DEPTH`` levels
(:mod:`agent_rollout._limits`), checked by the scanner before ``tomllib``
(which recurses once per level) reads the text. The scanner reads any text
in one pass, valid or not; for an invalid one, ``tomllib``'s error is what
counts, and the scanner says where the bracket or string left open began.
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
    """Refuse nesting the scanner does not measure (dotted keys and table headers
    with no bracket after them)."""
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


def _child(node: list[Any], part: Any, at: tuple[Pos, Pos]) -> list[Any]:
    """``node``'s child ``part``, made with positions ``at`` if the text has not
    written it yet (the first writing of a key path places it)."""
    children = node[2]
    if children is None:
        children = node[2] = {}
    child = children.get(part)
    if child is None:
        child = children[part] = [at[0], at[1], None, 0]
    return child


class _Walker:
    """``Parsed.walker`` for TOML: a handle is a node of the scanner's tree (``_Scan``)."""

    def __init__(self, root: list[Any]) -> None:
        self.root = root

    def step(self, handle: list[Any], part: Any) -> Optional[tuple[Any, Pos, Pos]]:
        children = handle[2]
        child = None if children is None else children.get(part)
        return None if child is None else (child, child[0], child[1])

    def plain_text(self, handle: Any) -> Optional[str]:
        return None


class _Scan:
    """One pass over a TOML text: the position of every key path and array item.

    The positions are a tree of nodes ``[key position, value position,
    children by key or list index (None: none yet), how many [[tables]] an
    array of tables has so far]``, from ``root``: each key path the text
    writes, and each prefix a dotted key or a table header implies, is
    placed where it is first written; an array item at its value (its key
    position too). The tree grows by one node a key part, so a text of any
    shape costs time and memory in proportion to its size.

    Each ``[`` or ``{`` open is a frame ``[bracket, node, items so far,
    nesting level, position]``; the node is ``None`` where the text is not
    TOML the scan follows (nothing is placed under it then).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.root: list[Any] = [(1, 1), (1, 1), None, 0]
        self.frames: list[list[Any]] = []
        self.closed: list[tuple[Pos, Pos]] = []  # (open, close) of each bracket pair
        self.string: Optional[str] = None  # the quote of a multi-line string left open
        self.string_at: Pos = (1, 1)
        self.number = 1  # the line of ``line_start``
        self.line_start = 0

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
        todo: list[tuple[KeyPath, list[Any]]] = [((), self.root)]
        while todo:
            path, node = todo.pop()
            if len(path) >= depth or node[2] is None:
                continue
            for part, child in reversed(node[2].items()):
                if isinstance(part, str):
                    key = (*path, part)
                    keys[key] = (child[0], child[1])
                    todo.append((key, child))
        return dict(sorted(keys.items(), key=lambda item: item[1][0]))

    def lines(self) -> None:
        """Every line of the text, in order."""
        table: Optional[tuple[list[Any], int]] = (self.root, 0)
        i = 0
        while i < len(self.text):
            i, table = self._line(i, table)
            self.number += 1

    def _line(
        self, i: int, table: Optional[tuple[list[Any], int]]
    ) -> tuple[int, Optional[tuple[list[Any], int]]]:
        """The line starting at ``text[i]``: a table header, or ``key = value`` (to
        where its value ends, lines later for some). ``table`` is the node of the
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
                node = _child(node, part, at)
        if _SCALAR_LINE.fullmatch(text, value, eol):  # most values: nothing to follow
            return eol + 1, table
        return self._value(value, eol, node, base), table

    def _header(self, line: str, indent: int) -> Optional[tuple[list[Any], int]]:
        """The table a ``[table]`` or ``[[array of tables]]`` line opens, and its
        depth; each key of its name is placed there, as ``a.b = 1`` places ``a``."""
        match = _TOML_KEY.match(line.lstrip("[").lstrip())
        if match is None:
            return None
        offset = indent + line.index(match.group(0))
        at = ((self.number, offset + 1), (self.number, offset + 1))
        parts = _toml_key_parts(match.group(0))
        array = line.startswith("[[")
        node, depth = self.root, 0
        for number, part in enumerate(parts, 1):
            node = _child(node, part, at)
            depth += 1
            if array and number == len(parts):
                node[3] += 1
                node = _child(node, node[3] - 1, at)
                depth += 1
            elif node[3]:  # a table under an array of tables: in its last table
                node = _child(node, node[3] - 1, at)
                depth += 1
        _deep(depth + 1, at[0])  # the table's own level
        return node, depth

    def _value(self, i: int, eol: int, node: Optional[list[Any]], base: int) -> int:
        """Scan the value of a ``key = value`` line from ``text[i]``; ``node`` is its key's.

        Goes on over the lines an array, an inline table or a multi-line string
        takes, to the end of the line where the value ends; returns where the
        next line starts. ``base`` is the nesting level of the table holding the
        value: an array or inline table nesting past ``MAX_NESTING_DEPTH`` is
        refused here, before the TOML parser (which recurses once per level)
        sees it.
        """
        text, frames, closed = self.text, self.frames, self.closed
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
                continue
            # A value: where the line's key, an array or an inline table expects one, placed.
            here = (number, i - line_start + 1)
            held = None
            if not frames:
                level = base + 1
                if expect == _VALUE:
                    held = node
            else:
                frame = frames[-1]
                level = frame[3] + 1
                if frame[0] == "[":
                    if expect == _VALUE:
                        if frame[1] is not None:
                            held = _child(frame[1], frame[2], (here, here))
                        frame[2] += 1
                elif expect == _VALUE:  # after a key in an inline table
                    level = frame[3] + len(parts)
                    if frame[1] is not None:
                        held = frame[1]
                        for part in parts:
                            held = _child(held, part, (key_at, here))
            expect = _AFTER
            if char in "[{":
                _deep(level, here)
                frames.append([char, held, 0, level, here])
                expect = _VALUE if char == "[" else _KEY
                i += 1
            elif char == '"' or char == "'":
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
    return Parsed(root, (1, 1), keys, [], _Walker(scan.root))
