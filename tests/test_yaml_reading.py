"""YAML read as the trainers read it: our values are exactly ``yaml.safe_load``'s.

soup-cli, TRL (``TrlParser``), axolotl and OmegaConf load configs with PyYAML
(YAML 1.1). The property below generates documents holding every YAML 1.1 and
1.2 spelling of a scalar (octal ``010`` and ``0o10``, underscores, sexagesimal
``1:30``, ``yes``/``no``/``on``/``off``, ``.inf``/``.nan``, ``1e3`` against
``1.0e+3``, timestamps, explicit tags, ``=``), block and flow collections,
anchors, aliases and ``<<`` merges (one source or several, overridden or
not), and checks that ``read_config_bytes(text).data`` equals
``yaml.safe_load(text)`` node for node (types, key order, ``NaN``), or that
both refuse the text; and that every key of the result is placed where the
text writes it. Our own limits stay (tested in ``test_loader.py``): they
refuse only what no config holds (recursive aliases, alias bombs, nesting past
200 levels, a sexagesimal int longer than ``int()``'s digit limit). JSON and
TOML are ``json.loads``'s and ``tomllib``'s values, with every key placed too.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_rollout.config import ConfigError, read_config_bytes
from support import typed

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as a package
    import tomli as tomllib

MANY = max(300, settings().max_examples)

SCALARS_1_1_AND_1_2 = [
    # ints: octal, 0o, hex, binary, underscores, sexagesimal, signs
    "010",
    "0o10",
    "0x1F",
    "0x_1F",
    "0b101",
    "-0b11",
    "1_000",
    "0_7",
    "09",
    "+12",
    "-0",
    "0",
    "64",
    "1:30",
    "-1:30:00",
    "190:20:30",
    # floats
    "1:30.5",
    ".inf",
    "-.Inf",
    "+.INF",
    ".nan",
    ".NaN",
    "1e3",
    "1.0e+3",
    "1.0e3",
    "1.5",
    ".5",
    "+.5e-3",
    "0.",
    "1_0.5",
    "-1.5E-2",
    # bools and nulls, both readings
    "yes",
    "no",
    "on",
    "off",
    "Yes",
    "NO",
    "On",
    "OFF",
    "y",
    "n",
    "true",
    "False",
    "TRUE",
    "~",
    "null",
    "Null",
    "NULL",
    "",
    # timestamps
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5",
    "2002-12-14T00:00:00Z",
    "2001-13-14",
    # strings that look like other things, and quoted ones
    "plain text",
    "a:b",
    "http://127.0.0.1:8000/v1",
    "pkg.mod:fn",
    "é",
    "x # a comment",
    "'010'",
    '"yes"',
    '"a\\tb\\u00e9"',
    "'it''s'",
    # explicit tags (safe_load's: str, int, float, bool, null, binary, timestamp)
    "!!str 010",
    "!!int '0x1F'",
    "!!int 0o10",
    "!!float 3",
    "!!float '1e3'",
    "!!bool yes",
    "!!null x",
    "!!binary aGk=",
    "!!timestamp 2001-01-01",
    "!!str",
    "!!int abc",
    "!!bool maybe",
    "!!timestamp nope",
    "!!binary '!!'",
    "=",
]
FLOW_SCALARS = [s for s in SCALARS_1_1_AND_1_2 if s and "#" not in s and " " not in s]
KEYS = {
    # written -> what safe_load reads
    "a": "a",
    "b": "b",
    "k k": "k k",
    "'q'": "q",
    "1": 1,
    "yes": True,
    "~": None,
    "0o10": "0o10",
    "010": 8,
    "1:30": 90,
    "rollout_max_steps": "rollout_max_steps",
    "rollout_backend": "rollout_backend",
    "=": "=",
}
SCALARS = st.sampled_from(SCALARS_1_1_AND_1_2)


@st.composite
def flow(draw: st.DrawFn, anchors: list[tuple[str, str]]) -> str:
    if draw(st.booleans()):
        items = draw(st.lists(st.sampled_from(FLOW_SCALARS), min_size=1, max_size=3))
        if anchors and draw(st.booleans()):
            items.append("*" + draw(st.sampled_from(anchors))[0])
        return "[" + ", ".join(items) + "]"
    keys = draw(st.lists(st.sampled_from(sorted(KEYS)), min_size=1, max_size=3))
    pairs = [f"{key}: {draw(st.sampled_from(FLOW_SCALARS))}" for key in keys]
    if draw(st.integers(0, 5)) == 0:
        return "!!set {" + ", ".join(keys) + "}"
    return "{" + ", ".join(pairs) + "}"


@st.composite
def block_mapping(
    draw: st.DrawFn, indent: int, depth: int, anchors: list[tuple[str, str]]
) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        key = draw(st.sampled_from(sorted(KEYS)))
        choice = draw(st.integers(0, 11 if depth < 3 else 6))
        maps = [name for name, kind in anchors if kind == "map"]
        if choice <= 2:
            lines.append(f"{pad}{key}: {draw(SCALARS)}".rstrip())
        elif choice == 3:
            name = f"a{len(anchors)}"
            lines.append(f"{pad}{key}: &{name} {draw(st.sampled_from(FLOW_SCALARS))}")
            anchors.append((name, "scalar"))
        elif choice == 4 and anchors:
            lines.append(f"{pad}{key}: *{draw(st.sampled_from(anchors))[0]}")
        elif choice == 5:
            text = draw(flow(anchors))
            if text.startswith("{") and draw(st.booleans()):
                name = f"a{len(anchors)}"
                lines.append(f"{pad}{key}: &{name} {text}")
                anchors.append((name, "map"))
            else:
                lines.append(f"{pad}{key}: {text}")
        elif choice == 6:
            style = draw(st.sampled_from(["|", ">", "|-", ">+"]))
            lines.append(f"{pad}{key}: {style}")
            for word in draw(st.lists(st.sampled_from(["010", "yes", "a b", ""]), min_size=1)):
                lines.append(f"{pad}  {word}".rstrip() if word else "")
        elif choice in (7, 8):
            name = f"a{len(anchors)}" if draw(st.booleans()) else None
            lines.append(f"{pad}{key}:" + (f" &{name}" if name else ""))
            lines.extend(draw(block_mapping(indent + 2, depth + 1, anchors)))
            if name:
                anchors.append((name, "map"))
        elif choice == 9:
            lines.append(f"{pad}{key}:")
            for _ in range(draw(st.integers(1, 3))):
                if draw(st.integers(0, 3)) == 0:
                    nested = draw(block_mapping(indent + 4, depth + 1, anchors))
                    lines.append(f"{pad}  - " + nested[0].lstrip())
                    lines.extend(nested[1:])
                else:
                    lines.append(f"{pad}  - {draw(SCALARS)}".rstrip())
        elif choice >= 10 and maps:
            sources = draw(st.lists(st.sampled_from(maps), min_size=1, max_size=3))
            merged = (
                f"*{sources[0]}"
                if len(sources) == 1
                else "[" + ", ".join(f"*{name}" for name in sources) + "]"
            )
            lines.append(f"{pad}<<: {merged}")
        else:
            lines.append(f"{pad}{key}: {draw(SCALARS)}".rstrip())
    return lines


@st.composite
def documents(draw: st.DrawFn) -> str:
    anchors: list[tuple[str, str]] = []
    lines = draw(block_mapping(0, 0, anchors))
    if draw(st.integers(0, 9)) == 0:
        lines.insert(0, "---")
    return "\n".join(lines) + "\n"


def safe_load_outcome(text: str) -> tuple[str, Any]:
    try:
        return "ok", typed(yaml.safe_load(text))
    except (yaml.YAMLError, ValueError, KeyError, TypeError, AttributeError):
        return "refused", None


def our_outcome(text: str) -> tuple[str, Any]:
    try:
        return "ok", typed(read_config_bytes(text).data)
    except ConfigError:
        return "refused", None


@given(documents())
@settings(max_examples=MANY)
def test_our_values_are_yaml_safe_load_values(text: str) -> None:
    assert our_outcome(text) == safe_load_outcome(text)


@given(documents())
@settings(max_examples=MANY)
def test_every_key_is_placed_where_the_text_writes_it(text: str) -> None:
    try:
        document = read_config_bytes(text)
    except ConfigError:
        return
    lines = text.split("\n")
    todo: list[tuple[tuple[Any, ...], Any]] = [((), document.data)]
    while todo:
        path, value = todo.pop()
        if isinstance(value, dict) and len(path) < 4:
            for key, item in value.items():
                line, col = document.key_position((*path, key))
                written = lines[line - 1][col - 1 :]
                # 1 and yes (True) are one key to a dict: the pair that gave the value is placed
                spellings = [w for w, read in KEYS.items() if read == key]
                assert any(written.startswith(w + ":") for w in spellings), (path, key, written)
                todo.append(((*path, key), item))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x: 010", 8),
        ("x: 0o10", "0o10"),
        ("x: 1_000", 1000),
        ("x: 1:30", 90),
        ("x: 1e3", "1e3"),
        ("x: 1.0e+3", 1000.0),
        ("x: [yes, no, on, off]", [True, False, True, False]),
        ("x: y", "y"),
        ("x: !!null whatever", None),
        ("x: !!set {a}", {"a"}),
        ("x: !!omap [a: 1, b: 2]", [("a", 1), ("b", 2)]),
        ("x: !!binary aGk=", b"hi"),
        ("=: 1", None),
    ],
)
def test_examples_of_the_trainers_reading(text: str, expected: Any) -> None:
    data = read_config_bytes(text).data
    assert typed(data) == typed(yaml.safe_load(text))
    if text.startswith("x"):
        assert typed(data["x"]) == typed(expected)


def test_merges_follow_pyyaml_however_it_resolves_them() -> None:
    # PyYAML's merge keeps the first source's value for a key of one character and, for
    # longer keys, the last one's (it compares key strings by identity): we are read by
    # the same code, so we read what the trainer reads.
    text = (
        "one: &one {x: 1, xy: 1}\n"
        "two: &two {x: 2, xy: 2}\n"
        "both:\n  <<: [*one, *two]\n"
        "own:\n  <<: *one\n  x: 3\n"
    )
    assert typed(read_config_bytes(text).data) == typed(yaml.safe_load(text))
    assert read_config_bytes(text).data["own"] == {"x": 3, "xy": 1}


@pytest.mark.parametrize(
    "text",
    [
        "x: &a [*a]\n",  # PyYAML builds a list holding itself; no config needs one
        # a sexagesimal int costs the square of its length: no longer than int()'s digit limit
        "x: 1" + ":30" * 2000 + "\n",
        "a0: &a0 [x, x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]\n" for i in range(1, 22)),
    ],
)
def test_our_limits_stay(text: str) -> None:
    with pytest.raises(ConfigError):
        read_config_bytes(text)


def test_a_tab_before_a_flow_item_is_refused_as_safe_load_refuses_it() -> None:
    # libyaml (yaml.CSafeLoader) accepts it; yaml.safe_load, the trainers' reader, does not.
    text = "x: [1,\t2]\n"
    assert safe_load_outcome(text)[0] == "refused"
    assert our_outcome(text)[0] == "refused"


# ------------------------------------------------------------ JSON and TOML: their readers' values

JSON_VALUES = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text('abk_é"\\', max_size=4), children, max_size=4),
    ),
    max_leaves=20,
)


@given(st.dictionaries(st.text("abk_", max_size=4), JSON_VALUES, max_size=4), st.booleans())
@settings(max_examples=MANY)
def test_json_values_are_json_loads_values_and_every_key_is_placed(
    data: dict[str, Any], indent: bool
) -> None:
    text = json.dumps(data, indent=2 if indent else None)
    document = read_config_bytes(text, format="json")
    assert typed(document.data) == typed(json.loads(text))
    lines = text.split("\n")
    todo: list[tuple[tuple[Any, ...], Any]] = [((), document.data)]
    while todo:
        path, value = todo.pop()
        children = (
            value.items()
            if isinstance(value, dict)
            else enumerate(value)
            if isinstance(value, list)
            else ()
        )
        for key, item in children:
            line, col = document.key_position((*path, key))
            written = lines[line - 1][col - 1 :]
            if isinstance(key, str):
                assert written.startswith(json.dumps(key) + ":"), (path, key, written)
            else:  # a list item: its value
                assert written.startswith(json.dumps(item, indent=2 if indent else None)[:1])
            todo.append(((*path, key), item))


def test_toml_values_are_tomllib_values() -> None:
    text = (
        'title = "x"\n[training]\nrollout_max_steps = 0o10\nlr = 1e-5\n'
        "when = 1979-05-27T07:32:00Z\n[[datasets]]\npath = 'a'\n[[datasets]]\npath = 'b'\n"
    )
    document = read_config_bytes(text, format="toml")
    assert document.data == tomllib.loads(text)
    assert document.data["training"]["rollout_max_steps"] == 8
    assert document.key_position(("datasets", 1, "path")) == (9, 1)
