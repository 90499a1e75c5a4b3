"""git's glob matcher (``wildmatch``), on bytes: what ignore patterns match.

The answers are those of git's ``wildmatch.c`` (as of git 2.41): ``*``, ``?``,
``[...]`` (``!`` or ``^`` to negate, ranges, ``[:alpha:]`` and the other
classes, ASCII only as git's ``ctype``), ``\\`` quoting; with ``pathname``
(``WM_PATHNAME``) ``*``, ``?`` and ``[...]`` stop at ``/``, and ``**`` between
slashes crosses them (``**/x``, ``x/**``, ``a/**/b``; a ``**`` that begins the
pattern counts as after a slash). git's quirks are kept: a class never closed,
an unknown ``[:name:]`` and a ``\\`` at the end make a pattern that matches
nothing; ``**`` next to other bytes is one ``*``; ``**\\/`` is ``**`` then a
slash that must be there (``**/`` may match no folder at all).

How, in time bounded by the text's length times the pattern's: a pattern is
translated once (``compile_glob``) into a Python regular expression that never
backtracks far. ``re`` backtracks, and a plain translation (``*`` as
``[^/]*``) takes time exponential in the stars on a text that fails
(``*a*a*a...b`` against ``aaaa...``). Here every ``*`` that does not cross
``/`` takes the shortest run that lets the fixed-width part after it match
(``(?:(?!C)[^/])*C``), and never gives it back: within one name that is the
right choice (the earliest end leaves the most room for the rest); a run of
one byte class needs no look-ahead (``[^/a]*a``). A ``**`` that crosses
slashes always stands for whole folders, so it takes the fewest folders after
which the part up to the next ``**`` matches, and never gives them back: that
part covers as many names wherever it starts, so the earliest is again the
right choice (the part after the last ``**``, which must reach the end, is
tried at each start). What is left to backtrack is the last ``*`` of a name,
which must end where the name ends, and a text that fails gives back each of
these choices once, each failing at once. Its answers were compared with those
of a line-by-line port of git's matcher on 5 million random patterns and
texts, and ``tests/test_walk_ignore.py`` compares them with git's.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["Glob", "compile_glob", "wildmatch"]

Glob = Callable[[bytes], object]
"""A compiled pattern: called with a text, something true when the text matches."""

_STAR, _QUESTION, _OPEN, _CLOSE = ord("*"), ord("?"), ord("["), ord("]")
_BACKSLASH, _SLASH, _BANG, _CARET = ord("\\"), ord("/"), ord("!"), ord("^")
_DASH, _COLON = ord("-"), ord(":")
_EVERY_BYTE = frozenset(range(256))
_NOT_SLASH = _EVERY_BYTE - {_SLASH}


def _bytes_in(*ranges: tuple[int, int]) -> frozenset[int]:
    return frozenset(c for low, high in ranges for c in range(low, high + 1))


_CLASSES = {
    b"alnum": _bytes_in((48, 57), (65, 90), (97, 122)),
    b"alpha": _bytes_in((65, 90), (97, 122)),
    b"blank": frozenset(b" \t"),
    b"cntrl": _bytes_in((0, 31), (127, 127)),
    b"digit": _bytes_in((48, 57)),
    b"graph": _bytes_in((33, 126)),
    b"lower": _bytes_in((97, 122)),
    b"print": _bytes_in((32, 126)),
    b"punct": _bytes_in((33, 47), (58, 64), (91, 96), (123, 126)),
    b"space": frozenset(b" \t\n\r"),
    b"upper": _bytes_in((65, 90)),
    b"xdigit": _bytes_in((48, 57), (65, 70), (97, 102)),
}
"""``[:name:]`` classes, as git's ``ctype`` has them (ASCII only)."""


# ---- the pattern's parts --------------------------------------------------------------------

# A pattern is read into a list of parts: a frozenset is one byte of the text (one
# of those), and the markers below stand for runs.
_ONE_NAME = "*"  # a run within a name (any run, without ``pathname``)
_FOLDERS = "**/"  # no folder or several: "" or "a/" or "a/b/"
_SOME_FOLDERS = "**\\/"  # at least one folder: "a/" or "a/b/"
_THE_REST = "/**"  # anything to the end

_Part = frozenset[int] | str


class _Never(Exception):
    """A pattern git's matcher gives up on wherever it gets to it: it matches nothing."""


def _bracket(p: bytes, pi: int, pathname: bool) -> tuple[frozenset[int], int]:
    """The bytes the class ``[...]`` opening at ``p[pi]`` matches, and where it closes
    (git's ``dowild``, its ``[`` case, read for every byte at once)."""
    p_end = len(p)

    def at(index: int) -> int:
        return p[index] if index < p_end else 0

    pi += 1
    pc = at(pi)
    if pc == _CARET:
        pc = _BANG
    negated = pc == _BANG
    if negated:
        pi += 1
        pc = at(pi)
    previous = 0
    members: set[int] = set()
    while True:
        if not pc:
            raise _Never
        if pc == _BACKSLASH:
            pi += 1
            pc = at(pi)
            if not pc:
                raise _Never
            members.add(pc)
        elif pc == _DASH and previous and at(pi + 1) and at(pi + 1) != _CLOSE:
            pi += 1
            pc = p[pi]
            if pc == _BACKSLASH:
                pi += 1
                pc = at(pi)
                if not pc:
                    raise _Never
            members.update(range(previous, pc + 1))
            pc = 0  # a range is not the start of another
        elif pc == _OPEN and at(pi + 1) == _COLON:
            end = p.find(b"]", pi + 2)
            if end < 0:
                raise _Never
            if end - (pi + 2) - 1 < 0 or p[end - 1] != _COLON:  # no ":]": a plain "["
                members.add(_OPEN)
            else:
                named = _CLASSES.get(p[pi + 2 : end - 1])
                if named is None:
                    raise _Never
                members |= named
                pi = end
                pc = 0
        else:
            members.add(pc)
        previous = pc
        pi += 1
        pc = at(pi)
        if pc == _CLOSE:
            break
    chosen = _EVERY_BYTE - members if negated else frozenset(members)
    return (chosen - {_SLASH} if pathname else chosen), pi


def _parts(p: bytes, pathname: bool) -> list[_Part]:
    """The parts of ``p`` (git's ``dowild``, read once instead of at each match)."""
    parts: list[_Part] = []
    pi, p_end = 0, len(p)
    while pi < p_end:
        pc = p[pi]
        if pc == _BACKSLASH:  # the next byte, literally; a backslash at the end matches nothing
            pi += 1
            if pi >= p_end:
                raise _Never
            parts.append(frozenset((p[pi],)))
        elif pc == _QUESTION:
            parts.append(_NOT_SLASH if pathname else _EVERY_BYTE)
        elif pc == _STAR:
            before = pi - 1
            while pi + 1 < p_end and p[pi + 1] == _STAR:
                pi += 1
            after = pi + 1
            if (
                pathname
                and pi > before + 1
                and (before < 0 or p[before] == _SLASH)
                and (
                    after == p_end
                    or p[after] == _SLASH
                    or (p[after] == _BACKSLASH and after + 1 < p_end and p[after + 1] == _SLASH)
                )
            ):
                if after == p_end:
                    parts.append(_THE_REST)
                elif p[after] == _SLASH:
                    parts.append(_FOLDERS)
                    pi = after
                else:
                    parts.append(_SOME_FOLDERS)
                    pi = after + 1
            else:  # "**" not between slashes: one "*"
                parts.append(_ONE_NAME)
        elif pc == _OPEN:
            members, pi = _bracket(p, pi, pathname)
            parts.append(members)
        else:
            parts.append(frozenset((pc,)))
        pi += 1
    return parts


# ---- the regular expression -------------------------------------------------------------------


def _class_text(members: list[int]) -> bytes:
    """The inside of a ``[...]`` holding ``members`` (sorted): runs of three or more as ranges."""
    found = []
    start = 0
    while start < len(members):
        end = start
        while end + 1 < len(members) and members[end + 1] == members[end] + 1:
            end += 1
        low, high = re.escape(bytes((members[start],))), re.escape(bytes((members[end],)))
        if end - start >= 2:
            found.append(low + b"-" + high)
        else:
            found.extend(re.escape(bytes((c,))) for c in members[start : end + 1])
        start = end + 1
    return b"".join(found)


def _byte_class(members: frozenset[int]) -> bytes:
    """A regular expression matching one byte of ``members`` (short: ``re`` compiles a
    long class slowly)."""
    if not members:
        return b"(?!)"
    if len(members) == 256:
        return b"(?s:.)"
    if len(members) == 1:
        return re.escape(bytes(members))
    if len(members) <= 128:
        return b"[" + _class_text(sorted(members)) + b"]"
    return b"[^" + _class_text(sorted(_EVERY_BYTE - members)) + b"]"


def _fixed(chunk: list[frozenset[int]]) -> bytes:
    return b"".join(_byte_class(members) for members in chunk)


def _name(parts: list[_Part], run: frozenset[int]) -> bytes:
    """One name's parts (bytes and ``*``; ``run``: what a ``*`` may take) as a regular
    expression: each ``*`` but the last takes the shortest run after which the bytes
    up to the next ``*`` match, and keeps it."""
    chunks: list[list[frozenset[int]]] = [[]]
    for part in parts:
        if isinstance(part, frozenset):
            chunks[-1].append(part)
        else:
            chunks.append([])
    found = [_fixed(chunks[0])]
    for chunk in chunks[1:-1]:
        if len(chunk) == 1:
            skipped = run - chunk[0]
            if skipped:
                found.append(_byte_class(skipped) + b"*")
        else:
            found.append(b"(?:(?!" + _fixed(chunk) + b")" + _byte_class(run) + b")*")
        found.append(_fixed(chunk))
    if len(chunks) > 1:
        found.append(_byte_class(run) + b"*" + _fixed(chunks[-1]))
    return b"".join(found)


def _names(parts: list[_Part]) -> bytes:
    """Parts up to the next ``**`` (bytes, ``/`` and ``*``) as a regular expression."""
    names: list[list[_Part]] = [[]]
    for part in parts:
        if part == frozenset((_SLASH,)):
            names.append([])
        else:
            names[-1].append(part)
    return b"/".join(_name(name, _NOT_SLASH) for name in names)


def _regex(parts: list[_Part], pathname: bool) -> bytes:
    """The regular expression of a pattern's parts, to be matched from the text's start."""
    if not pathname:
        return _name(parts, _EVERY_BYTE) + b"\\Z"
    groups: list[list[_Part]] = [[]]
    runs: list[str] = []
    for part in parts:
        if isinstance(part, str) and part != _ONE_NAME:
            runs.append(part)
            groups.append([])
        else:
            groups[-1].append(part)
    tail = b"" if runs and runs[-1] == _THE_REST else b"\\Z"
    found = [_names(groups[0]) + (tail if not runs else b"")]
    for index, (run, group) in enumerate(zip(runs, groups[1:], strict=True)):
        if run == _THE_REST:
            break
        here = _names(group)
        if index == len(runs) - 1:  # the last: any start where it matches to the end will do
            skip = b"(?:[^/]*/)*?"
            here += tail
        else:  # the first start where it matches, kept
            skip = b"(?:(?!" + here + b")[^/]*/)*"
        found.append((b"[^/]*/" if run == _SOME_FOLDERS else b"") + skip + here)
    return b"".join(found)


def _never(text: bytes) -> None:
    return None


def compile_glob(pattern: bytes, *, pathname: bool, prefix: bytes = b"") -> Glob:
    """``pattern`` ready to match texts as git's ``wildmatch`` does (``pathname``:
    ``WM_PATHNAME``, where ``*``, ``?`` and ``[...]`` stop at ``/`` and ``**`` crosses it);
    with ``prefix``, texts that begin with it, the rest matched against ``pattern``."""
    try:
        parts = _parts(pattern, pathname)
    except _Never:
        return _never
    return re.compile(re.escape(prefix) + _regex(parts, pathname)).match


def wildmatch(pattern: bytes, text: bytes, *, pathname: bool) -> bool:
    """Whether ``text`` matches ``pattern`` as git's ``wildmatch`` has it."""
    return bool(compile_glob(pattern, pathname=pathname)(text))
