"""TOML keys inside inline tables, and items of arrays, are placed at their own key and
value (``config._span.with_inline_tables``), whatever the spelling: bare, literal or
basic quoted keys, dotted keys inside a table, strings holding ``,}=#``, dates and
times with a blank inside, nested tables and arrays, a trailing comma."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_rollout.config import read_config_bytes

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BARE = st.from_regex(r"[A-Za-z0-9_-]{1,6}", fullmatch=True)
KEYS = st.one_of(BARE, st.text(alphabet="ab .=,{}#'\"é\\", max_size=5))
WRITTEN = ("1979-05-27 07:32:00", "1979-05-27T07:32:00Z", "1979-05-27", "07:32:00", "3.5e2")
SCALARS = st.one_of(
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.text(alphabet="ab ,}{]#'\"\\é=", max_size=6),
    st.sampled_from(WRITTEN),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=8,
)


def key_text(key: str, style: int) -> str:
    if style == 0 and key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key):
        return key
    if style == 1 and "'" not in key:
        return f"'{key}'"
    return json.dumps(key, ensure_ascii=False)


def value_text(value: Any, style: int) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value if value in WRITTEN else json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        items = [value_text(item, style) for item in value]
        return "[" + ", ".join(items) + ("," if style == 2 and items else "") + "]"
    entries = []
    for key, inner in value.items():
        if style == 0 and isinstance(inner, dict) and inner:  # dotted keys inside the table
            entries.extend(
                f"{key_text(key, 0)} . {key_text(sub, 1)} = {value_text(item, 0)}"
                for sub, item in inner.items()
            )
        else:
            entries.append(f"{key_text(key, style)} = {value_text(inner, style)}")
    return "{" + ", ".join(entries) + "}"


def spellings(key: str) -> tuple[str, ...]:
    return (key, f"'{key}", json.dumps(key, ensure_ascii=False))


@given(st.dictionaries(KEYS, VALUES, min_size=1, max_size=3), st.integers(0, 2))
def test_every_key_and_item_is_placed_at_its_own(doc: dict[str, Any], style: int) -> None:
    text = "".join(f"{key_text(k, style)} = {value_text(v, style)}\n" for k, v in doc.items())
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return  # a spelling TOML refuses (a bare key that is a number, ...)
    document = read_config_bytes(text, format="toml")
    lines = text.split("\n")
    todo: list[tuple[tuple[Any, ...], Any]] = [((), data)]
    while todo:
        path, node = todo.pop()
        children = node.items() if isinstance(node, dict) else enumerate(node)
        for part, child in children:
            here = (*path, part)
            key_at, value_at = document.key_position(here), document.position(here)
            value = lines[value_at[0] - 1][value_at[1] - 1 :]
            if isinstance(child, (dict, list)):
                # A table's value is its '{', or the first value of the dotted keys making it.
                assert isinstance(child, dict) or value[0] == "[", (text, here)
                todo.append((here, child))
            elif isinstance(child, (bool, int, str)):
                assert value.startswith(value_text(child, style)), (text, here)
            else:  # a date, a time, a float
                assert value[0].isdigit(), (text, here)
            if isinstance(part, str):  # at the key, or (a dotted key) at its first part
                assert any(s in lines[key_at[0] - 1][key_at[1] - 1 :] for s in spellings(part))


@pytest.mark.parametrize(
    ("text", "path", "key", "value"),
    [
        ('t = { a = 1, b = "x" }\n', ("t", "b"), (1, 14), (1, 18)),
        ('t = { "a.b" = 1, a . c = 2 }\n', ("t", "a", "c"), (1, 18), (1, 26)),
        ("t = [ 1979-05-27 07:32:00, { x = 2 } ]\n", ("t", 1, "x"), (1, 30), (1, 34)),
        (
            "[s]\nt = { u = { v = [ 0,\n  # note\n  1 ] } }\n",
            ("s", "t", "u", "v", 1),
            (4, 3),
            (4, 3),
        ),
    ],
)
def test_positions_inside_inline_tables_and_arrays(
    text: str, path: tuple[Any, ...], key: tuple[int, int], value: tuple[int, int]
) -> None:
    document = read_config_bytes(text, format="toml")
    assert (document.key_position(path), document.position(path)) == (key, value)
