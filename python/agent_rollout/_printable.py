"""Text as output shows it: the one escaping of user text (``printable``), a file's
name in a message (``shown_path``; ``found_path`` for one the package found), an
exception's text (``error_text``).

Keys, values and file names read from input or the command line reach a terminal, a
CI log or a file through here. ``agent_rollout._errors`` re-exports these names, as
the package's modules have always imported them from there. Standard library only.
"""

from __future__ import annotations

import os
import re

__all__ = [
    "error_text",
    "found_path",
    "printable",
    "printable_json",
    "printable_lines",
    "shown_path",
]

# What cannot be shown as it is: C0 controls, DEL, C1 controls (U+0085 among them), the
# Unicode line and paragraph separators, the bidirectional controls (marks, embeddings,
# overrides, isolates: they reorder the rest of a terminal's line), lone surrogates (a byte
# Python could not decode in a file name, kept by surrogateescape, is U+DC80..U+DCFF); and
# GitHub Actions' legacy workflow-command prefix, which its runner obeys anywhere in a line.
_UNPRINTABLE = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]|##\["
)
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNDECODED = re.compile(r"[\ud800-\udfff]")
_COMMAND = "::"  # a line starting with it (after white space) is a GitHub Actions command


def _escape(match: re.Match[str]) -> str:
    text = match.group()
    if text == "##[":
        return "##\\x5b"
    point = ord(text)
    if text in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[text]
    if point < 0x100:
        return f"\\x{point:02x}"
    if 0xDC80 <= point <= 0xDCFF:
        return f"\\x{point - 0xDC00:02x}"  # the undecodable byte itself
    return f"\\u{point:04x}"


def printable(text: str) -> str:
    """``text`` safe to print as (part of) one line of output, whatever it holds.

    The one escaping of every printer: keys, values and file names read from
    input or the command line go through it (or the whole line holding them
    does), so that no text of a user's can end a line, move the cursor, fail
    to encode, or start a CI workflow command. Shown escaped: control
    characters (``\\n``, ``\\r``, ``\\t``, else ``\\xNN``, C1 included), DEL, the
    line separators U+2028 and U+2029 (``\\u2028``), the bidirectional controls
    (U+200E, U+200F, U+061C, U+202A..U+202E, U+2066..U+2069: ``\\u202e``, which
    would reverse the rest of the line on a terminal), lone surrogates (a byte a
    file name could not decode, held by ``surrogateescape``, as that byte's
    ``\\xNN``), the ``##[`` of GitHub Actions' legacy commands (``##\\x5b``),
    and the first ``:`` of a ``::`` that starts the text after white space
    (``\\x3a:``). Everything else, accented letters and emoji included, is kept.
    Applying it twice changes nothing more.
    """
    shown = _UNPRINTABLE.sub(_escape, text)
    rest = shown.lstrip()
    if rest.startswith(_COMMAND):
        at = len(shown) - len(rest)
        shown = shown[:at] + "\\x3a" + shown[at + 1 :]
    return shown


def printable_lines(text: str) -> str:
    """``text`` that may hold several lines (a log's tail), each made ``printable``."""
    return "\n".join(printable(line) for line in text.split("\n"))


def printable_json(text: str) -> str:
    """JSON text as ``json.dumps`` wrote it, with ``##[`` written ``##\\u005b``.

    The same value to any JSON reader (``#`` occurs in JSON only inside
    strings), and no legacy workflow command in a CI log. Control characters
    and line separators are already escaped by ``json.dumps`` (ASCII output).
    """
    return text.replace("##[", "##\\u005b")


def error_text(exc: BaseException) -> str:
    """``str(exc)``, but an ``OSError``'s file names are shown by ``printable`` (a byte
    that did not decode as ``\\xNN``, as in every message) where ``str`` would ``repr`` them."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        number = getattr(exc, "winerror", None)
        kind = "WinError" if number is not None else "Errno"
        names = [exc.filename] if exc.filename2 is None else [exc.filename, exc.filename2]
        shown = " -> ".join(
            f"'{printable(os.fsdecode(name) if isinstance(name, bytes) else str(name))}'"
            for name in names
        )
        return f"[{kind} {exc.errno if number is None else number}] {exc.strerror}: {shown}"
    return str(exc)


def shown_path(path: str) -> str:
    """A file's path as messages show it: as given, but with the bytes of a name that
    are no text in the filesystem's encoding (a name that is not UTF-8, which Python
    holds as lone surrogates) as ``\\xNN``, as ``printable`` shows them:
    ``r\\xe9sultats.jsonl:2: ...``. Such text
    can be printed and written anywhere, where a lone surrogate cannot be encoded.
    An ``OSError`` keeps the path itself, as Python's own ``open`` does (its message
    shows it with ``repr``)."""
    return _UNDECODED.sub(_escape, path)


def found_path(path: str) -> str:
    """A path the package found itself (the ``pyproject.toml`` above a config), as
    messages show it: relative to the current folder when it lies under it, as the
    paths a user types are; else absolute."""
    try:
        here = os.getcwd()
    except OSError:  # the current folder was removed
        return path
    absolute = os.path.abspath(path)
    if os.path.commonpath([absolute, here]) == here:
        return os.path.relpath(absolute, here)
    return absolute
