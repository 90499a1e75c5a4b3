"""Positions between ``check`` and a language client, and which format a document is.

``check`` counts lines from 1 and columns in characters (code points) from
1, on the text without a leading byte-order mark. A client counts both from
0, and columns in the code units of the position encoding it negotiated:
UTF-16 (the protocol's default: an emoji is two units), UTF-8 (bytes) or
UTF-32 (characters). ``Lines`` converts both ways, one line at a time, and
only the lines asked about; a byte-order mark the client's text keeps is
counted on line 1 as the client counts it.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from typing import Optional
from urllib.parse import unquote, urlparse

from agent_rollout.config import split_lines

__all__ = ["Lines", "document_format", "uri_path"]

_BREAK = re.compile(r"\r\n|\r|\n")
_ODD_BREAKS = re.compile(
    "\r(?!\n)|[\x85\u2028\u2029]"
)  # where check's lines may not be the client's
_FORMATS = {"yaml": "yaml", "json": "json", "jsonc": "json", "toml": "toml"}
_SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".toml": "toml"}


def _units(text: str, encoding: str) -> int:
    """How many code units of ``encoding`` ``text`` takes."""
    if encoding == "utf-32" or text.isascii():
        return len(text)
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


class Lines:
    """One document's text, for position conversions in a given encoding.

    ``fmt`` is how ``check`` read it: a YAML reader also breaks lines at
    NEL, LS and PS, a JSON reader only at ``\\n``; the client breaks them at
    CR, LF and CRLF. A text where the two counts differ (rare) is mapped
    through character offsets.
    """

    def __init__(self, text: str, encoding: str = "utf-16", fmt: str = "yaml") -> None:
        self.text = text
        self.encoding = encoding
        self.fmt = fmt
        self.bom = 1 if text.startswith("\ufeff") else 0
        self._starts: Optional[list[int]] = None
        self._check_starts: Optional[list[int]] = None
        self._odd: Optional[bool] = None

    def _client_starts(self) -> list[int]:
        if self._starts is None:
            starts = [0]
            starts.extend(found.end() for found in _BREAK.finditer(self.text))
            self._starts = starts
        return self._starts

    def _line(self, index: int) -> str:
        """Client line ``index`` (0-based), without its line break; ``""`` past the end."""
        starts = self._client_starts()
        if not 0 <= index < len(starts):
            return ""
        end = starts[index + 1] if index + 1 < len(starts) else len(self.text)
        return self.text[starts[index] : end].rstrip("\r\n")

    def _offsets(self) -> Optional[list[int]]:
        """Where ``check``'s lines start, when they are not the client's (``None``)."""
        if self._odd is None:
            self._odd = _ODD_BREAKS.search(self.text) is not None
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
        if odd is not None:
            offset = odd[min(max(line, 1), len(odd)) - 1] + max(col - 1, 0)
            starts = self._client_starts()
            index = bisect_right(starts, offset) - 1
            text = self._line(index)
            return index, _units(text[: offset - starts[index]], self.encoding)
        index = max(line - 1, 0)
        text = self._line(index)
        chars = max(col - 1, 0) + (self.bom if index == 0 else 0)
        chars = min(chars, len(text))
        return index, _units(text[:chars], self.encoding)

    def from_client(self, line: int, character: int) -> tuple[int, int]:
        """The client's ``(line, character)`` as ``check``'s ``(line, col)``."""
        text = self._line(line)
        if self.encoding == "utf-32" or text.isascii():
            chars = min(character, len(text))
        else:
            chars = 0
            units = 0
            for char in text:
                if units >= character:
                    break
                units += _units(char, self.encoding)
                chars += 1
        odd = self._offsets()
        if odd is not None:
            starts = self._client_starts()
            offset = (starts[line] if 0 <= line < len(starts) else len(self.text)) + chars
            index = bisect_right(odd, offset) - 1
            return index + 1, offset - odd[max(index, 0)] + 1
        if line == 0:
            chars = max(chars - self.bom, 0)
        return line + 1, chars + 1

    def line_text(self, line: int) -> str:
        """Client line ``line`` (1-based) without a leading byte-order mark."""
        text = self._line(line - 1)
        return text[self.bom :] if line == 1 else text


def uri_path(uri: str) -> Optional[str]:
    """The local path of a ``file:`` URI; ``None`` for other schemes (an unsaved buffer)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if os.name == "nt" and re.match(r"^/[A-Za-z]:", path):
        path = path[1:]
    return path


def document_format(uri: str, language_id: Optional[str]) -> Optional[str]:
    """``yaml``, ``json`` or ``toml`` for a document, from its language or its name."""
    if language_id:
        found = _FORMATS.get(language_id.lower())
        if found is not None:
            return found
    path = urlparse(uri).path
    return _SUFFIXES.get(os.path.splitext(unquote(path))[1].lower())
