"""Positions between ``check`` and a language client, edits, and which format a document is.

``check`` counts lines from 1 and columns in characters (code points) from
1, on the text without a leading byte-order mark. A client counts both from
0, and columns in the code units of the position encoding it negotiated:
UTF-16 (the protocol's default: an emoji is two units), UTF-8 (bytes) or
UTF-32 (characters). ``Lines`` converts both ways, one line at a time, and
only the lines asked about; a byte-order mark the client's text keeps is
counted on line 1 as the client counts it.

The client breaks lines at CR, LF and CRLF only (``line_starts``), never at
the other characters ``str.splitlines`` takes (NEL, LS, PS, form feed...).
``apply_changes`` applies ``didChange``'s edits to a document's text with
where its lines start kept up to date (``LineStarts``), so an edit costs a
copy of the text (at memory speed), a scan of the text it puts in, and the
line starts between it and the edit before (none, typing in one place),
never all those after it, nor a walk, character by character, over a long
line. Every conversion of a column runs at the speed of ``str.encode`` over
the line's text before it, whatever the encoding; many positions at once
(``to_client_all``) measure each line once, in order.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Optional, Union, overload
from urllib.parse import unquote, urlparse

from agent_rollout.config import format_for_suffix, split_lines

__all__ = [
    "Change",
    "LineStarts",
    "Lines",
    "apply_changes",
    "code_units",
    "document_format",
    "line_starts",
    "uri_path",
]

_BREAK = re.compile(r"\r\n|\r|\n")
_ODD_BREAKS = re.compile(
    "\r(?!\n)|[\x85\u2028\u2029]"
)  # where check's lines may not be the client's
_FORMATS = {"yaml": "yaml", "json": "json", "jsonc": "json", "toml": "toml"}
_UTF8_FOLLOWERS = bytes(range(0x80, 0xC0))
_LOW_SURROGATE_HIGH_BYTES = bytes(range(0xDC, 0xE0))


def code_units(text: str, encoding: str) -> int:
    """How many code units of ``encoding`` ``text`` takes."""
    if encoding == "utf-32" or text.isascii():
        return len(text)
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _chars(text: str, start: int, end: int, units: int, encoding: str) -> int:
    """How many characters of ``text[start:end]`` the first ``units`` code units reach
    (a unit inside a character reaches all of it); at most ``end - start``."""
    if units <= 0:
        return 0
    if encoding == "utf-32" or text.isascii():  # (a flag of the string: no scan)
        return min(units, end - start)
    piece = text[start : min(end, start + units)]  # a character takes one unit or more
    if encoding == "utf-32" or piece.isascii():
        return len(piece)
    if encoding == "utf-8":
        data = piece.encode("utf-8", "surrogatepass")
        if len(data) <= units:
            return len(piece)
        return len(data[:units].translate(None, _UTF8_FOLLOWERS))  # lead bytes: characters
    data = piece.encode("utf-16-le", "surrogatepass")
    if len(data) <= 2 * units:
        return len(piece)
    high_bytes = data[1 : 2 * units : 2]  # little-endian: each unit's second byte
    return len(high_bytes.translate(None, _LOW_SURROGATE_HIGH_BYTES))  # pairs count once


def line_starts(text: str) -> list[int]:
    """Where each of the client's lines starts in ``text`` (a break ends the last one
    with an empty line after it, as the client counts)."""
    starts = [0]
    starts.extend(found.end() for found in _BREAK.finditer(text))
    return starts


def _span(text: str, starts: Sequence[int], index: int) -> tuple[int, int]:
    """Where client line ``index`` (0-based, within ``starts``) starts and ends, its
    line break left out."""
    start = starts[index]
    end = starts[index + 1] if index + 1 < len(starts) else len(text)
    if end > start and text[end - 1] == "\n":
        end -= 1
    if end > start and text[end - 1] == "\r":
        end -= 1
    return start, end


def _offset(text: str, starts: Sequence[int], line: int, character: int, encoding: str) -> int:
    """The client's position as an index into ``text``, clamped as the protocol says:
    past the end of a line, its end; past the last line, the end of the text."""
    if line < 0:
        return 0
    if line >= len(starts):
        return len(text)
    start, end = _span(text, starts, line)
    return start + _chars(text, start, end, character, encoding)


@dataclass(frozen=True)
class Change:
    """One of ``didChange``'s content changes: ``text`` in place of the range from
    ``start`` to ``end`` (client positions, ``(line, character)``), or in place of
    the whole text (``start`` None)."""

    text: str
    start: Optional[tuple[int, int]] = None
    end: Optional[tuple[int, int]] = None


class LineStarts(Sequence[int]):
    """A text's ``line_starts``, kept through its edits (``apply_changes``) at the cost of
    each edit, not of the text: the starts after an edit move by its change in length
    lazily, as one shift pending from one line on, settled only between that line and
    the next edit's (typing in one place settles nothing). Read like the list it stands
    for; it is changed in place by the next edit, so a reader uses it before then."""

    def __init__(self, starts: list[int]) -> None:
        self.values = starts
        self.pivot = len(starts)
        """The first index whose value is off by ``shift``."""
        self.shift = 0
        self.mark: Optional[tuple[int, int, int]] = None
        """A column converted exactly: where its line starts, its characters and code
        units; the next conversion on that line, further along, starts there."""

    def __len__(self) -> int:
        return len(self.values)

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[int]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[int, Sequence[int]]:
        if isinstance(index, slice):
            return [self[number] for number in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self.values)
        return self.values[index] + (self.shift if index >= self.pivot else 0)

    def _pivot_at(self, index: int) -> None:
        """The starts before ``index`` made exact, those from it on left pending."""
        values, shift = self.values, self.shift
        if shift and index > self.pivot:
            values[self.pivot : index] = [start + shift for start in values[self.pivot : index]]
        elif shift and index < self.pivot:
            values[index : self.pivot] = [start - shift for start in values[index : self.pivot]]
        self.pivot = index

    def offset(self, text: str, line: int, character: int, encoding: str) -> int:
        """``_offset`` for an edit, from the last column converted on the same line when
        it comes before this one: typing along a long line that is not ASCII measures the
        text typed over, not the line up to the cursor at each keystroke."""
        if encoding == "utf-32" or text.isascii() or not 0 <= line < len(self):
            return _offset(text, self, line, character, encoding)
        start, end = _span(text, self, line)
        chars = units = 0
        if self.mark is not None and self.mark[0] == start and self.mark[2] <= character:
            chars, units = self.mark[1], self.mark[2]
        more = _chars(text, start + chars, end, character - units, encoding)
        chars += more
        if more and start + chars < end and code_units(text[start + chars - 1], encoding) == 1:
            self.mark = (start, chars, character)  # one unit each: the column is exact
        elif more:
            self.mark = None
        return start + chars

    def edited(self, begin: int) -> None:
        """The text changed from ``begin`` on: a mark after it no longer holds."""
        if self.mark is not None and begin < self.mark[0] + self.mark[1]:
            self.mark = None

    def replace(self, first: int, last: int, starts: list[int], delta: int) -> None:
        """The starts from index ``first`` to ``last`` (not included) replaced by ``starts``
        (exact), and those after them moved by ``delta``."""
        self._pivot_at(last)
        self.values[first:last] = starts
        self.pivot = first + len(starts)
        self.shift = self.shift + delta if self.pivot < len(self.values) else 0


def apply_changes(
    text: str, starts: Optional[LineStarts], changes: Iterable[Change], encoding: str
) -> tuple[str, LineStarts]:
    """``text`` with ``changes`` applied in order, and where its lines start.

    ``starts`` are ``text``'s, or None to find them (``line_starts``); they are
    changed in place. A range that ends before it starts is read as empty at its
    start. An edit costs a copy of the text (at memory speed), a scan of the text it
    puts in, and the line starts between it and the edit before, not all of them.

    A start before ``begin`` stays. A start from ``end + 2`` on moves by the change
    in length: the break before it lies wholly in text the edit kept (a break is at
    most two characters, and one that ends at ``end + 1`` may have lost or gained a
    CR). Between the two, the new text is scanned, from one character before
    ``begin`` (a CR kept there may now meet an LF).
    """
    kept = LineStarts(line_starts(text)) if starts is None else starts
    for change in changes:
        if change.start is None or change.end is None:
            text = change.text
            kept = LineStarts(line_starts(text))
            continue
        begin = kept.offset(text, *change.start, encoding)
        end = max(kept.offset(text, *change.end, encoding), begin)
        kept.edited(begin)
        new = "".join((text[:begin], change.text, text[end:]))
        delta = len(change.text) - (end - begin)
        stop = end + 2 + delta  # in the new text: where the moved starts begin
        middle = [
            found.end()
            for found in _BREAK.finditer(new, max(begin - 1, 0), min(stop, len(new)))
            if begin <= found.end() < stop
        ]
        kept.replace(max(bisect_left(kept, begin), 1), bisect_left(kept, end + 2), middle, delta)
        text = new
    return text, kept


class Lines:
    """One document's text, for position conversions in a given encoding.

    ``fmt`` is how ``check`` read it: a YAML reader also breaks lines at
    NEL, LS and PS, a JSON reader only at ``\\n``; the client breaks them at
    CR, LF and CRLF. A text where the two counts differ (rare) is mapped
    through character offsets. ``starts``: the text's ``line_starts``, when
    the caller has them.
    """

    def __init__(
        self,
        text: str,
        encoding: str = "utf-16",
        fmt: str = "yaml",
        starts: Optional[Sequence[int]] = None,
    ) -> None:
        self.text = text
        self.encoding = encoding
        self.fmt = fmt
        self.bom = 1 if text.startswith("\ufeff") else 0
        self._starts = starts
        self._check_starts: Optional[list[int]] = None
        self._odd: Optional[bool] = None

    def starts(self) -> Sequence[int]:
        """Where each of the client's lines starts (``line_starts``), found once."""
        if self._starts is None:
            self._starts = line_starts(self.text)
        return self._starts

    def line_count(self) -> int:
        """How many lines the client counts (a text that ends with a break has an
        empty last line)."""
        return len(self.starts())

    def _line(self, index: int) -> str:
        """Client line ``index`` (0-based), without its line break; ``""`` past the end."""
        starts = self.starts()
        if not 0 <= index < len(starts):
            return ""
        start, end = _span(self.text, starts, index)
        return self.text[start:end]

    def _offsets(self) -> Optional[list[int]]:
        """Where ``check``'s lines start, when they are not the client's (``None``)."""
        if self._odd is None:
            text = self.text  # (each ``in`` a scan at memory speed; the pattern is slower)
            rare = "\x85" in text or "\u2028" in text or "\u2029" in text
            self._odd = rare or ("\r" in text and _ODD_BREAKS.search(text) is not None)
        if not self._odd:
            return None
        if self._check_starts is None:
            starts = [self.bom]
            for line in split_lines(self.text, self.fmt, keep_breaks=True)[:-1]:
                starts.append(starts[-1] + len(line))
            self._check_starts = starts
        return self._check_starts

    def to_client(self, line: int, col: int) -> tuple[int, int]:
        """``check``'s ``(line, col)`` (1-based, characters) as the client's (0-based, units)."""
        odd = self._offsets()
        starts = self.starts()
        if odd is not None:
            offset = odd[min(max(line, 1), len(odd)) - 1] + max(col - 1, 0)
            index = bisect_right(starts, offset) - 1
            start, end = _span(self.text, starts, index)
            return index, code_units(self.text[start : min(offset, end)], self.encoding)
        index = max(line - 1, 0)
        if index >= len(starts):
            return index, 0
        start, end = _span(self.text, starts, index)
        chars = max(col - 1, 0) + (self.bom if index == 0 else 0)
        return index, code_units(self.text[start : min(start + chars, end)], self.encoding)

    def to_client_all(self, points: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        """``to_client`` of each of ``points``, at once: each line's text is measured in one
        pass, from one position to the next in order, so many positions on one long line
        (40,000 issues on a minified JSON file's) cost the line once, not once each."""
        text, starts = self.text, self.starts()
        odd = self._offsets()
        found: list[tuple[int, int]] = []
        for line, col in points:
            if odd is not None:
                offset = odd[min(max(line, 1), len(odd)) - 1] + max(col - 1, 0)
                index = bisect_right(starts, offset) - 1
            else:
                index = max(line - 1, 0)
                if index >= len(starts):
                    found.append((index, -1))  # past the end: character 0
                    continue
                offset = starts[index] + max(col - 1, 0) + (self.bom if index == 0 else 0)
            found.append((index, min(offset, _span(text, starts, index)[1])))
        if self.encoding == "utf-32" or text.isascii():
            return [
                (index, offset - starts[index] if offset >= 0 else 0) for index, offset in found
            ]
        result = [(0, 0)] * len(found)
        at_line, at, units = -1, 0, 0
        for number in sorted(range(len(found)), key=found.__getitem__):
            index, offset = found[number]
            if offset < 0:
                result[number] = (index, 0)
                continue
            if index != at_line:
                at_line, at, units = index, starts[index], 0
            units += code_units(text[at:offset], self.encoding)
            at = offset
            result[number] = (index, units)
        return result

    def from_client(self, line: int, character: int) -> tuple[int, int]:
        """The client's ``(line, character)`` as ``check``'s ``(line, col)``."""
        starts = self.starts()
        if 0 <= line < len(starts):
            start, end = _span(self.text, starts, line)
            chars = _chars(self.text, start, end, character, self.encoding)
        else:
            start, chars = len(self.text), 0
        odd = self._offsets()
        if odd is not None:
            offset = start + chars
            index = bisect_right(odd, offset) - 1
            return index + 1, offset - odd[max(index, 0)] + 1
        if line == 0:
            chars = max(chars - self.bom, 0)
        return line + 1, chars + 1

    def clamp(self, line: int, character: int) -> tuple[int, int]:
        """A client position inside the text: one past the last line is the end of the
        text, as the protocol reads it; a negative line or character, 0."""
        if line < 0:
            return 0, 0
        count = self.line_count()
        if line < count:
            return line, max(character, 0)
        return count - 1, code_units(self._line(count - 1), self.encoding)

    def line_text(self, line: int) -> str:
        """Client line ``line`` (1-based) without a leading byte-order mark."""
        text = self._line(line - 1)
        return text[self.bom :] if line == 1 else text

    def rows(self) -> Sequence[str]:
        """The client's lines (0-based, as ``line_text`` gives them), each cut from the
        text only when asked for: a reader that looks a few lines up from line 100,000
        costs those lines, not a list of all."""
        return _Rows(self)

    def offset(self, line: int, character: int) -> int:
        """The client's position as an index into the text (clamped, as an edit's)."""
        return _offset(self.text, self.starts(), line, character, self.encoding)


class _Rows(Sequence[str]):
    """``Lines.rows``: the client's lines, read one at a time."""

    def __init__(self, lines: Lines) -> None:
        self.lines = lines

    def __len__(self) -> int:
        return self.lines.line_count()

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[str, Sequence[str]]:
        if isinstance(index, slice):
            return [self[number] for number in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.lines.line_text(index + 1)


def uri_path(uri: str) -> Optional[str]:
    """The local path of a ``file:`` URI; ``None`` for other schemes (an unsaved buffer)
    and for a URI that is not one (``file://[x/``: ``urlparse`` refuses it)."""
    try:
        parsed = urlparse(uri)
    except ValueError:
        return None
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if os.name == "nt" and re.match(r"^/[A-Za-z]:", path):
        path = path[1:]
    return path


def document_format(uri: str, language_id: Optional[str]) -> Optional[str]:
    """``yaml``, ``json`` or ``toml`` for a document: from its name when its suffix is
    one ``check`` reads (``.yaml``, ``.yml``, ``.json``, ``.toml``), else from its
    language (an unsaved buffer, ``.jsonc``).

    The name comes first because a client may send one language for every
    document a server serves: eglot 1.9 sends the language of the mode that
    started the server, so a ``train.toml`` it shares with a YAML buffer
    arrives as ``yaml``.
    """
    try:
        path = urlparse(uri).path
    except ValueError:
        path = uri
    found = format_for_suffix(unquote(path))
    if found is None and language_id:
        found = _FORMATS.get(language_id.lower())
    return found
