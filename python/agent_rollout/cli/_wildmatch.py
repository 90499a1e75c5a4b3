"""git's glob matcher (``wildmatch``), on bytes: what ignore patterns match.

A port of git's ``wildmatch.c`` (as of git 2.41, which made more of a failed
match stop early): ``*``, ``?``, ``[...]`` (``!`` or ``^`` to negate, ranges,
``[:alpha:]`` and the other classes, ASCII only as git's ``ctype``), ``\\``
quoting; with ``pathname`` (``WM_PATHNAME``) ``*``, ``?`` and ``[...]`` stop at
``/``, and ``**`` between slashes (``**/x``, ``x/**``, ``a/**/b``) crosses them.
Its answers are git's, quirks included (a class never closed matches nothing,
``**`` next to other bytes is one ``*``); each partial answer is kept for the
one match, so a pattern of many ``**/`` that fails takes polynomial time where
git's recursion takes exponential time.
"""

from __future__ import annotations

__all__ = ["wildmatch"]

_MATCH, _NO_MATCH, _ABORT_ALL, _ABORT_TO_STARSTAR = 0, 1, 2, 3
_STAR, _QUESTION, _OPEN, _CLOSE = ord("*"), ord("?"), ord("["), ord("]")
_BACKSLASH, _SLASH, _BANG, _CARET = ord("\\"), ord("/"), ord("!"), ord("^")
_DASH, _COLON = ord("-"), ord(":")
_GLOB_SPECIAL = frozenset(b"*?[\\")
"""The bytes that make a pattern more than a plain name (git's ``is_glob_special``)."""


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


def wildmatch(pattern: bytes, text: bytes, *, pathname: bool) -> bool:
    """Whether ``text`` matches ``pattern`` as git's ``wildmatch`` has it (``pathname``:
    ``WM_PATHNAME``, where ``*``, ``?`` and ``[...]`` stop at ``/`` and ``**`` crosses it)."""
    return _dowild(pattern, 0, text, 0, pathname, {}) == _MATCH


def _dowild(p: bytes, pi: int, t: bytes, ti: int, pathname: bool, seen: dict[int, int]) -> int:
    """Match ``p[pi:]`` against ``t[ti:]``: ``_MATCH``, ``_NO_MATCH`` or an abort that
    tells the ``*`` being tried above that no later start can match either.

    Each answer is kept in ``seen`` (one match's): git's own recursion takes time
    exponential in the ``**/`` of a pattern that fails (``**/**/**/.../x``); asked
    again, the same ``(pi, ti)`` has the same answer, so here it takes polynomial time."""
    key = pi * (len(t) + 1) + ti
    known = seen.get(key)
    if known is None:
        known = seen[key] = _wild(p, pi, t, ti, pathname, seen)
    return known


def _wild(p: bytes, pi: int, t: bytes, ti: int, pathname: bool, seen: dict[int, int]) -> int:
    """``_dowild``'s work (git's ``dowild``)."""
    start = pi
    p_end, t_end = len(p), len(t)
    while pi < p_end:
        pc = p[pi]
        if ti >= t_end and pc != _STAR:
            return _ABORT_ALL
        tc = t[ti] if ti < t_end else 0
        if pc == _BACKSLASH:  # the next byte, literally; a backslash at the end matches nothing
            pi += 1
            if pi >= p_end or tc != p[pi]:
                return _NO_MATCH
        elif pc == _QUESTION:
            if pathname and tc == _SLASH:
                return _NO_MATCH
        elif pc == _STAR:
            pi += 1
            if pi < p_end and p[pi] == _STAR:
                before = pi - 2
                while pi < p_end and p[pi] == _STAR:
                    pi += 1
                if not pathname:
                    match_slash = True
                elif (before < start or p[before] == _SLASH) and (
                    pi == p_end
                    or p[pi] == _SLASH
                    or (p[pi] == _BACKSLASH and pi + 1 < p_end and p[pi + 1] == _SLASH)
                ):
                    # "**/" may match no folder at all: try the rest right here first.
                    if pi < p_end and p[pi] == _SLASH:
                        if _dowild(p, pi + 1, t, ti, pathname, seen) == _MATCH:
                            return _MATCH
                    match_slash = True
                else:  # "**" not between slashes: one "*"
                    match_slash = False
            else:
                match_slash = not pathname
            if pi == p_end:  # a trailing "*" matches the rest of a name, "**" anything
                if not match_slash and t.find(b"/", ti) >= 0:
                    return _ABORT_TO_STARSTAR
                return _MATCH
            if not match_slash and p[pi] == _SLASH:  # "*/": the rest of this name
                slash = t.find(b"/", ti)
                if slash < 0:
                    return _ABORT_ALL
                ti = slash  # both slashes are stepped over below
            else:
                return _star(p, pi, t, ti, pathname, match_slash, seen)
        elif pc == _OPEN:
            result, pi = _bracket(p, pi, tc, pathname)
            if result != _MATCH:
                return result
        elif tc != pc:
            return _NO_MATCH
        pi += 1
        ti += 1
    return _NO_MATCH if ti < t_end else _MATCH


def _star(
    p: bytes, pi: int, t: bytes, ti: int, pathname: bool, match_slash: bool, seen: dict[int, int]
) -> int:
    """A ``*`` (``match_slash``: one that crosses ``/``) followed by ``p[pi:]``: try each
    place in ``t`` where the rest could start."""
    t_end = len(t)
    while ti < t_end:
        if p[pi] not in _GLOB_SPECIAL:  # skip to where the literal that follows is
            want = p[pi]
            while ti < t_end and (match_slash or t[ti] != _SLASH) and t[ti] != want:
                ti += 1
            if ti >= t_end or t[ti] != want:
                return _ABORT_ALL if match_slash else _ABORT_TO_STARSTAR
        matched = _dowild(p, pi, t, ti, pathname, seen)
        if matched != _NO_MATCH:
            if not match_slash or matched != _ABORT_TO_STARSTAR:
                return matched
        elif not match_slash and t[ti] == _SLASH:
            return _ABORT_TO_STARSTAR
        ti += 1
    return _ABORT_ALL


def _bracket(p: bytes, pi: int, tc: int, pathname: bool) -> tuple[int, int]:
    """The class ``[...]`` opening at ``p[pi]`` against the byte ``tc``: the result and
    where the class closes."""
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
    matched = False
    while True:
        if not pc:
            return _ABORT_ALL, pi
        if pc == _BACKSLASH:
            pi += 1
            pc = at(pi)
            if not pc:
                return _ABORT_ALL, pi
            matched = matched or tc == pc
        elif pc == _DASH and previous and at(pi + 1) and at(pi + 1) != _CLOSE:
            pi += 1
            pc = p[pi]
            if pc == _BACKSLASH:
                pi += 1
                pc = at(pi)
                if not pc:
                    return _ABORT_ALL, pi
            matched = matched or previous <= tc <= pc
            pc = 0  # a range is not the start of another
        elif pc == _OPEN and at(pi + 1) == _COLON:
            end = p.find(b"]", pi + 2)
            if end < 0:
                return _ABORT_ALL, pi
            if end - (pi + 2) - 1 < 0 or p[end - 1] != _COLON:  # no ":]": a plain "["
                matched = matched or tc == _OPEN
            else:
                members = _CLASSES.get(p[pi + 2 : end - 1])
                if members is None:
                    return _ABORT_ALL, end
                matched = matched or tc in members
                pi = end
                pc = 0
        elif tc == pc:
            matched = True
        previous = pc
        pi += 1
        pc = at(pi)
        if pc == _CLOSE:
            break
    if matched == negated or (pathname and tc == _SLASH):
        return _NO_MATCH, pi
    return _MATCH, pi
