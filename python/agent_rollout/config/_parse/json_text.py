"""JSON text as ``json.loads``'s values, with the position of any key.

The values are ``json.loads``'s; a token walk over the (then valid) text
places the keys and finds duplicate keys. Objects and arrays nest at most
``MAX_NESTING_DEPTH`` levels (:mod:`agent_rollout._limits`).
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

from agent_rollout._errors import shown
from agent_rollout._limits import MAX_NESTING_DEPTH
from agent_rollout.config._parse.positions import (
    KeyPath,
    Lines,
    Parsed,
    ParseProblem,
    Pos,
    location,
    long_number,
)

_JSON_TOKEN = re.compile(
    r'[ \t\r\n]*(?:([{}\[\]:,])|("(?:[^"\\]|\\.)*")|([^ \t\r\n{}\[\]:,"]+))', re.S
)


class _TreeWalker:
    """Positions from the tree a JSON token walk leaves, as character offsets.

    A container is ``[key offset, value offset, children]`` (children: a dict
    by key for an object, a list for an array); a scalar in an object is
    ``(key offset, value offset)``, in an array its value offset alone. The
    offsets become (line, column) only for the keys asked for.
    """

    def __init__(self, root: list[Any], lines: Lines) -> None:
        self.root = root
        self.lines = lines

    def step(self, entry: Any, part: Any) -> Optional[tuple[Any, Pos, Pos]]:
        children = entry[2] if isinstance(entry, list) else None
        child: Any = None
        if isinstance(children, dict) and isinstance(part, str):
            child = children.get(part)
        elif isinstance(children, list) and isinstance(part, int) and not isinstance(part, bool):
            child = children[part] if 0 <= part < len(children) else None
        if child is None:
            return None
        if isinstance(child, int):
            at = self.lines.pos(child)
            return child, at, at
        return child, self.lines.pos(child[0]), self.lines.pos(child[1])

    def plain_text(self, handle: Any) -> Optional[str]:
        return None


def _json_path(frame: list[Any]) -> tuple[Any, ...]:
    """The key path of a frame of the JSON walk, read up its parents."""
    parts: list[Any] = []
    while frame[6] is not None:
        parts.append(frame[7])
        frame = frame[6]
    return tuple(reversed(parts))


# What json.loads finds missing at the next token, which may be lines later.
_MISSING = frozenset(
    (
        "Expecting ',' delimiter",
        "Expecting ':' delimiter",
        "Expecting value",
        "Expecting property name enclosed in double quotes",
    )
)


def _json_error_pos(text: str, exc: json.JSONDecodeError) -> Pos:
    """Where the cause of ``json.loads``'s error is.

    A missing ``,`` or ``:`` (or value, or key) is found at the next token;
    when that is on a later line, the cause is where the previous token ends
    (``{"a": 1`` then ``"b": 2`` on the next line: the ``,`` belongs after
    the ``1``). A value or key missing after a ``,`` is a trailing comma
    (``[1,]``, ``{"a": 1,}``): the comma is the cause. A comment (``//``,
    ``/*``: a JSONC file) where a token was expected is the cause itself.
    """
    if _at_comment(text, exc):
        return (exc.lineno, exc.colno)
    if exc.msg in _MISSING:
        before = text[: exc.pos].rstrip(" \t\r\n")
        if before.endswith(",") and exc.msg != "Expecting ',' delimiter":
            return Lines(text).pos(len(before) - 1)
        if before and "\n" in text[len(before) : exc.pos]:
            return Lines(text).pos(len(before))
    return (exc.lineno, exc.colno)


def _at_comment(text: str, exc: json.JSONDecodeError) -> bool:
    return text.startswith(("//", "/*"), exc.pos)


def parse_json(text: str, depth: int = 2) -> Parsed:
    try:
        root = json.loads(text)
    except json.JSONDecodeError as exc:
        message = f"invalid JSON: {exc.msg}"
        if _at_comment(text, exc):
            message += " (found a comment: JSON has none)"
        raise ParseProblem(_json_error_pos(text, exc), message) from None
    except RecursionError:
        raise ParseProblem((1, 1), f"nested deeper than {MAX_NESTING_DEPTH} levels") from None
    except ValueError as exc:  # an integer too long to convert
        raise long_number(text, "JSON", exc) from None
    lines = Lines(text)
    keys: dict[KeyPath, tuple[Pos, Pos]] = {}
    problems: list[tuple[Pos, str, str, str]] = []
    # The text is valid JSON now, so a flat token walk is enough to place keys.
    # A frame: [is_object, key path (None when it is not str keys within depth),
    # keys seen, expecting a key, (key, start), its tree entry, parent frame,
    # its key or index in the parent].
    stack: list[list[Any]] = []
    tree: list[Any] = [0, 0, None]
    for match in _JSON_TOKEN.finditer(text):
        punct, string, _scalar = match.groups()
        start = match.start(1 if punct else 2 if string else 3)
        top = stack[-1] if stack else None
        if top is not None and top[0] and top[3] and string is not None:
            key = json.loads(string)
            top[3], top[4] = False, (key, start)
            if key in top[2]:
                line, col = lines.pos(top[2][key])
                problems.append(
                    (
                        lines.pos(start),
                        location((*_json_path(top), key)),
                        f"duplicate key {shown(key)} (first at line {line}, column {col}); "
                        "JSON readers silently keep this one",
                        "duplicate",
                    )
                )
            top[2][key] = start
            continue
        if punct == ":":
            continue
        if punct == ",":
            if top is not None and top[0]:
                top[3] = True
            continue
        if punct in ("}", "]"):
            stack.pop()
            continue
        opens = punct in ("{", "[")
        children: Any = ({} if punct == "{" else []) if opens else None
        path: Optional[KeyPath] = None
        name: Any = None
        entry: Any
        if top is None:
            tree = [start, start, children]
            entry, path = tree, ()
        elif top[0]:
            name, key_start = top[4]
            entry = [key_start, start, children] if opens else (key_start, start)
            top[5][2][name] = entry
            if top[1] is not None and len(top[1]) < depth:
                path = (*top[1], name)
                keys[path] = (lines.pos(key_start), lines.pos(start))
        else:
            name = len(top[5][2])
            entry = [start, start, children] if opens else start
            top[5][2].append(entry)
        if not opens:
            continue
        if len(stack) >= MAX_NESTING_DEPTH:
            raise ParseProblem(lines.pos(start), f"nested deeper than {MAX_NESTING_DEPTH} levels")
        is_object = punct == "{"
        stack.append([is_object, path, {}, is_object, None, entry, top, name])
    root_pos = lines.pos(tree[0])
    return Parsed(root, root_pos, keys, problems, _TreeWalker(tree, lines))
