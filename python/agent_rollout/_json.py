"""JSON for one JSONL line, as the Rust parser reads and writes it (the twin of ``rust/json.rs``).

``loads`` is ``json.loads`` held to RFC 8259 and three limits both engines
share (no NaN/Infinity, no lone surrogate escapes, no integer longer than the
interpreter reads, nesting at most ``MAX_JSON_DEPTH``); when it refuses a line,
``scan`` walks the same grammar as the Rust parser to name the reason (a key of
``agent_rollout._errors.JSON_REASONS``) and the offset. ``dumps`` writes a value
the way the canonical JSONL output (and the Rust writer) does.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

from agent_rollout._exceptions import RolloutValueError
from agent_rollout._limits import MAX_JSON_DEPTH, int_digits_limit

_WS = " \t\n\r"
_ESCAPES = '"\\/bfnrt'
_HEX = "0123456789abcdefABCDEF"


class JsonSyntaxError(Exception):
    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offset = offset


def scan(text: str) -> Optional[tuple[str, int]]:
    """The first JSON grammar error in ``text`` as (reason code, offset), or None."""
    if text.startswith("\ufeff"):
        return "byte_order_mark", 0
    try:
        end = _scan_value(text, _skip_ws(text, 0), 0)
        end = _skip_ws(text, end)
        if end != len(text):
            raise JsonSyntaxError("trailing_data", end)
    except JsonSyntaxError as err:
        return _cut_short(text, err.reason, err.offset), err.offset
    return None


_IN_OBJECT = frozenset({"expected_object_sep", "expected_colon", "expected_key"})


def _cut_short(text: str, reason: str, offset: int) -> str:
    """The reason of an error at the end of the line, where the line ends inside an
    object or an array (a line cut short): that, not what the grammar expected next.
    Which one is open: the reason says it, or, for a value expected, the character
    before (``:`` in an object; ``[`` or ``,`` in an array, since an object expects a
    key after ``,``). The Rust parser does the same (``cut_short`` in ``json.rs``)."""
    if offset != len(text):
        return reason
    before = text[:offset].rstrip(_WS)[-1:]
    if reason in _IN_OBJECT or (reason == "expected_value" and before == ":"):
        return "ends_in_object"
    if reason == "expected_array_sep" or (reason == "expected_value" and before in ("[", ",")):
        return "ends_in_array"
    return reason


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def _scan_value(text: str, pos: int, depth: int) -> int:
    ch = text[pos] if pos < len(text) else ""
    if ch == "{":
        return _scan_object(text, pos, depth + 1)
    if ch == "[":
        return _scan_array(text, pos, depth + 1)
    if ch == '"':
        return _scan_string(text, pos)
    if ch and ch in "-0123456789":
        return _scan_number(text, pos)
    for word in ("true", "false", "null"):
        if text.startswith(word, pos):
            return pos + len(word)
    if text.startswith("NaN", pos) or text.startswith("Infinity", pos):
        raise JsonSyntaxError("nan_infinity", pos)
    raise JsonSyntaxError("expected_value", pos)


def _scan_object(text: str, pos: int, depth: int) -> int:
    if depth > MAX_JSON_DEPTH:
        raise JsonSyntaxError("too_deep", pos)
    pos = _skip_ws(text, pos + 1)
    if text.startswith("}", pos):
        return pos + 1
    while True:
        if not text.startswith('"', pos):
            raise JsonSyntaxError("expected_key", pos)
        pos = _skip_ws(text, _scan_string(text, pos))
        if not text.startswith(":", pos):
            raise JsonSyntaxError("expected_colon", pos)
        pos = _skip_ws(text, _scan_value(text, _skip_ws(text, pos + 1), depth))
        if text.startswith(",", pos):
            pos = _skip_ws(text, pos + 1)
        elif text.startswith("}", pos):
            return pos + 1
        else:
            raise JsonSyntaxError("expected_object_sep", pos)


def _scan_array(text: str, pos: int, depth: int) -> int:
    if depth > MAX_JSON_DEPTH:
        raise JsonSyntaxError("too_deep", pos)
    pos = _skip_ws(text, pos + 1)
    if text.startswith("]", pos):
        return pos + 1
    while True:
        pos = _skip_ws(text, _scan_value(text, pos, depth))
        if text.startswith(",", pos):
            pos = _skip_ws(text, pos + 1)
        elif text.startswith("]", pos):
            return pos + 1
        else:
            raise JsonSyntaxError("expected_array_sep", pos)


def _digits(text: str, pos: int) -> int:
    start = pos
    while pos < len(text) and text[pos] in "0123456789":
        pos += 1
    return pos - start


def _scan_number(text: str, pos: int) -> int:
    start = pos
    if text.startswith("-", pos):
        pos += 1
        if text.startswith("Infinity", pos):
            raise JsonSyntaxError("nan_infinity", start)
    if text.startswith("0", pos):
        int_digits = 1
        pos += 1
    elif pos < len(text) and text[pos] in "123456789":
        int_digits = _digits(text, pos)
        pos += int_digits
    else:
        raise JsonSyntaxError("bad_number", start)
    is_float = False
    if text.startswith(".", pos):
        count = _digits(text, pos + 1)
        if count == 0:
            raise JsonSyntaxError("bad_number", start)
        pos += 1 + count
        is_float = True
    if pos < len(text) and text[pos] in "eE":
        pos += 1
        if pos < len(text) and text[pos] in "+-":
            pos += 1
        count = _digits(text, pos)
        if count == 0:
            raise JsonSyntaxError("bad_number", start)
        pos += count
        is_float = True
    if not is_float and int_digits > int_digits_limit():
        raise JsonSyntaxError("long_integer", start)
    return pos


def _hex4(text: str, pos: int) -> Optional[int]:
    digits = text[pos : pos + 4]
    if len(digits) != 4 or any(c not in _HEX for c in digits):
        return None
    return int(digits, 16)


def _scan_string(text: str, pos: int) -> int:
    opening = pos
    pos += 1
    while True:
        if pos >= len(text):
            raise JsonSyntaxError("unterminated_string", opening)
        ch = text[pos]
        if ch == '"':
            return pos + 1
        if ch == "\\":
            kind = text[pos + 1] if pos + 1 < len(text) else ""
            if kind == "u":
                pos = _scan_unicode(text, pos)
            elif kind and kind in _ESCAPES:
                pos += 2
            else:
                raise JsonSyntaxError("bad_escape", pos)
        elif ord(ch) < 0x20:
            raise JsonSyntaxError("control_character", pos)
        else:
            pos += 1


def _scan_unicode(text: str, slash: int) -> int:
    first = _hex4(text, slash + 2)
    if first is None:
        raise JsonSyntaxError("bad_unicode_escape", slash)
    pos = slash + 6
    if 0xD800 <= first <= 0xDBFF:
        low = _hex4(text, pos + 2) if text.startswith("\\u", pos) else None
        if low is None or not 0xDC00 <= low <= 0xDFFF:
            raise JsonSyntaxError("lone_surrogate", slash)
        return pos + 6
    if 0xDC00 <= first <= 0xDFFF:
        raise JsonSyntaxError("lone_surrogate", slash)
    return pos


# ---- parsing one line in the twin --------------------------------------------------------

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")
_FAILED = object()


def _refuse_constant(name: str) -> Any:
    raise RolloutValueError(f"{name} is not JSON")


def _may_nest_too_deep(text: str) -> bool:
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    depth = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            return True
    return False


def loads(text: str) -> Any:
    """``json.loads`` held to the Rust parser's grammar; raises ``JsonSyntaxError``."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        value = _FAILED
    if (
        value is _FAILED
        or ("\\u" in text and _SURROGATE_ESCAPE.search(text) is not None)
        or _may_nest_too_deep(text)
    ):
        problem = scan(text)
        if problem is not None:
            raise JsonSyntaxError(*problem)
        if value is _FAILED:  # pragma: no cover - the grammars agree; kept as a guard
            raise JsonSyntaxError("expected_value", 0)
    return value


dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
"""Compact JSON text, UTF-8 kept as is: what a canonical JSONL line holds."""

__all__ = ["JsonSyntaxError", "dumps", "loads", "scan"]
