"""A message's params, read where the protocol puts each value, of the type it says.

The session reads the params of the methods it answers itself (``_session``)
with ``take``: the value at a dotted path, which must be an object, a
string, an integer (never a boolean), an array, or a request id. Anything
else raises ``BadParams`` saying where and what came instead
(``params.textDocument.uri: a string expected, got null``), which the
session answers ``InvalidParams`` (a request) or logs (a notification).
Members the session does not read are not looked at.
"""

from __future__ import annotations

from typing import Any

from agent_rollout.lsp._text import Change
from agent_rollout.lsp._wire import is_id

__all__ = ["BadParams", "change", "position", "take"]


class BadParams(Exception):
    """Params the protocol does not take (the message says where and why)."""


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    names.update({int: "an integer", float: "a number"})
    return names.get(type(value), f"a {type(value).__name__}")


_EXPECTED = {
    "string": (lambda value: isinstance(value, str), "a string"),
    "integer": (
        lambda value: isinstance(value, int) and not isinstance(value, bool),
        "an integer",
    ),
    "array": (lambda value: isinstance(value, list), "an array"),
    "object": (lambda value: isinstance(value, dict), "an object"),
    "id": (is_id, "an integer or a string"),
}


def take(params: Any, path: str, kind: str, optional: bool = False) -> Any:
    """The value at ``path`` (dotted) of ``params``, which must be of ``kind`` (``string``,
    ``integer``, ``array``, ``object``, ``id``); raises ``BadParams`` otherwise.
    ``optional``: absent or null gives None."""
    value = params
    where = "params"
    for name in path.split("."):
        if not isinstance(value, dict):
            raise BadParams(f"{where}: an object expected, got {_kind(value)}")
        where += f".{name}"
        if name not in value:
            if optional:
                return None
            raise BadParams(f"{where} is missing")
        value = value[name]
    if optional and value is None:
        return None
    test, expected = _EXPECTED[kind]
    if not test(value):
        raise BadParams(f"{where}: {expected} expected, got {_kind(value)}")
    return value


def position(params: Any) -> tuple[str, int, int]:
    """A ``TextDocumentPositionParams``: the document's URI, the line and character."""
    return (
        take(params, "textDocument.uri", "string"),
        take(params, "position.line", "integer"),
        take(params, "position.character", "integer"),
    )


def change(value: Any) -> Change:
    """One of ``didChange``'s content changes as ``_text``'s ``Change``."""
    text = take(value, "text", "string")
    if take(value, "range", "object", optional=True) is None:
        return Change(text)
    start = take(value, "range.start.line", "integer")
    start_character = take(value, "range.start.character", "integer")
    end = take(value, "range.end.line", "integer")
    end_character = take(value, "range.end.character", "integer")
    return Change(text, (start, start_character), (end, end_character))
