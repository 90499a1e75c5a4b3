"""TOML's scanner places every key and every array item at its own key and value, at any
depth: keys inside inline tables (nested, dotted, bare, literal or basic quoted with
escapes), items of arrays over lines with comments, strings of every form, dates and
times with a blank inside, tables and arrays of tables.

The property writes a document it draws, in spellings it draws, noting where it writes
each key and value; ``tomllib`` must read the values drawn, and ``parse`` must give
every key path and list index of them at the noted positions."""

from __future__ import annotations

import datetime as dt
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_rollout.config import ConfigError, check_bytes, find_settings, read_config_bytes
from agent_rollout.config._parse import ParseProblem, parse

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

Draw = Callable[[st.SearchStrategy[Any]], Any]

KEYS = st.one_of(
    st.from_regex(r"[A-Za-z0-9_-]{1,6}", fullmatch=True),
    st.text(alphabet="ab_ .=,{}[]#'\"é\\\t\n\x7f😀", max_size=5),
)
SCALARS = st.one_of(
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.floats(allow_nan=False),
    st.text(alphabet="ab ,}{][#'\"\\é=\n\t\x01😀", max_size=8),
    st.datetimes(min_value=dt.datetime(1000, 1, 1)),
    st.datetimes(min_value=dt.datetime(1000, 1, 2), timezones=st.just(dt.timezone.utc)),
    st.dates(min_value=dt.date(1000, 1, 1)),
    st.times(),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=10,
)
COMMENT = "# a [comment] {with} 'quotes\" = ,"


def _escaped(char: str, draw: Draw) -> str:
    """``char`` as a basic string writes it: escaped where TOML says it must be, and
    sometimes where it may be."""
    short = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t"}
    must = char in '"\\' or (ord(char) < 0x20 and char != "\t") or char == "\x7f"
    if not must and draw(st.integers(0, 3)):
        return char
    if char in short and draw(st.booleans()):
        return short[char]
    if ord(char) > 0xFFFF or draw(st.booleans()):
        return f"\\U{ord(char):08X}"
    return f"\\u{ord(char):04x}"


def _plain(text: str) -> bool:
    """Whether ``text`` may be written between single quotes."""
    return all(c == "\t" or (ord(c) >= 0x20 and c != "\x7f") for c in text)


def key_text(key: str, draw: Draw) -> str:
    style = draw(st.integers(0, 2))
    if style == 0 and key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key):
        return key
    if style <= 1 and "'" not in key and _plain(key):
        return f"'{key}'"
    return '"' + "".join(_escaped(c, draw) for c in key) + '"'


def string_text(text: str, draw: Draw) -> str:
    style = draw(st.integers(0, 3))
    if style == 1 and "'" not in text and _plain(text):
        return f"'{text}'"
    if style == 2 and "'''" not in text and not text.startswith("\n"):
        if all(c in "\t\n" or _plain(c) for c in text):
            return f"'''{text}'''"  # a quote or two at its end: four or five close it
    if style == 3:  # a newline right after the opening quotes is not in the string
        body = "".join(c if c == "\n" and i else _escaped(c, draw) for i, c in enumerate(text))
        return '"""' + draw(st.sampled_from(["", "\n"])) + body + '"""'
    return '"' + "".join(_escaped(c, draw) for c in text) + '"'


def scalar_text(value: Any, draw: Draw) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("-inf" if value < 0 else "inf")
    if isinstance(value, str):
        return string_text(value, draw)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=draw(st.sampled_from(" T")))
    return value.isoformat()  # a date, a time


class Writer:
    """A TOML text written piece by piece, and where each key path's key and value are
    (offsets; the first writing of a path counts, as in the scanner)."""

    def __init__(self, draw: Draw) -> None:
        self.draw = draw
        self.pieces: list[str] = []
        self.size = 0
        self.at: dict[tuple[Any, ...], tuple[int, int]] = {}
        self.newline = draw(st.sampled_from(["\n", "\r\n"]))

    def put(self, text: str) -> None:
        self.pieces.append(text)
        self.size += len(text)

    def blank(self) -> None:
        self.put(self.draw(st.sampled_from(["", " ", "  ", "\t"])))

    def value(self, path: tuple[Any, ...], value: Any) -> None:
        if isinstance(value, dict):
            self.put("{")
            self.blank()
            self.entries(path, value, ", ")
            self.blank()
            self.put("}")
        elif isinstance(value, list):
            self.put("[")
            for index, item in enumerate(value):
                self.gap()
                self.at.setdefault((*path, index), (self.size, self.size))
                self.value((*path, index), item)
                if index < len(value) - 1 or self.draw(st.booleans()):  # a trailing comma
                    self.put(",")
            self.gap()
            self.put("]")
        else:
            self.put(scalar_text(value, self.draw))

    def gap(self) -> None:
        """What may stand between an array's items: blanks, line breaks, comments."""
        choice = self.draw(st.integers(0, 3))
        if choice == 2:
            self.put(self.newline + "  ")
        elif choice == 3:
            self.put(f"  {COMMENT}{self.newline}  ")
        else:
            self.blank()

    def chains(self, value: dict[str, Any]) -> list[tuple[tuple[str, ...], Any]]:
        """The entries of a table, some as dotted keys (``a.b = 1`` for ``a = {b = 1}``)."""
        out: list[tuple[tuple[str, ...], Any]] = []
        for key, inner in value.items():
            if isinstance(inner, dict) and inner and self.draw(st.booleans()):
                out.extend(((key, *chain), deeper) for chain, deeper in self.chains(inner))
            else:
                out.append(((key,), inner))
        return out

    def entry(self, path: tuple[Any, ...], chain: tuple[str, ...], value: Any) -> None:
        key_at = self.size
        dots = self.draw(st.sampled_from([".", " . ", ".\t"]))
        self.put(dots.join(key_text(key, self.draw) for key in chain))
        self.put(self.draw(st.sampled_from(["=", " = ", "\t=  "])))
        for size in range(1, len(chain) + 1):
            self.at.setdefault((*path, *chain[:size]), (key_at, self.size))
        self.value((*path, *chain), value)

    def entries(self, path: tuple[Any, ...], value: dict[str, Any], between: str) -> None:
        for number, (chain, inner) in enumerate(self.chains(value)):
            if number:
                self.put(between)
            self.entry(path, chain, inner)

    def table(self, path: tuple[Any, ...], names: tuple[str, ...], value: dict[str, Any]) -> None:
        """A table's ``key = value`` lines, then its tables and arrays of tables."""
        later: list[tuple[str, Any]] = []
        lines: dict[str, Any] = {}
        for key, inner in value.items():
            aot = isinstance(inner, list) and inner and all(isinstance(i, dict) for i in inner)
            if (isinstance(inner, dict) or aot) and self.draw(st.booleans()):
                later.append((key, inner))
            else:
                lines[key] = inner
        for chain, inner in self.chains(lines):
            self.blank()
            self.entry(path, chain, inner)
            if self.draw(st.booleans()):
                self.put(f"  {COMMENT}")
            self.put(self.newline)
        for key, inner in later:
            for index, element in enumerate(inner if isinstance(inner, list) else [inner]):
                here = (*path, key) if isinstance(inner, dict) else (*path, key, index)
                self.header((*names, key), here, isinstance(inner, list))
                self.table(here, (*names, key), element)

    def header(self, names: tuple[str, ...], path: tuple[Any, ...], array: bool) -> None:
        self.blank()
        self.put("[[" if array else "[")
        self.blank()
        key_at = self.size
        self.put(".".join(key_text(name, self.draw) for name in names))
        self.blank()
        self.put(("]]" if array else "]") + self.newline)
        for size in range(1, len(path) + 1):
            self.at.setdefault(path[:size], (key_at, key_at))


@st.composite
def documents(draw: Draw) -> tuple[str, dict[str, Any], dict[tuple[Any, ...], Any]]:
    doc = draw(st.dictionaries(KEYS, VALUES, min_size=1, max_size=4))
    writer = Writer(draw)
    writer.table((), (), doc)
    return "".join(writer.pieces), doc, writer.at


def paths(node: Any, path: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], Any]:
    """Every key path and list index in ``node``."""
    found: dict[tuple[Any, ...], Any] = {}
    children = node.items() if isinstance(node, dict) else enumerate(node)
    for part, child in children:
        found[(*path, part)] = child
        if isinstance(child, (dict, list)):
            found.update(paths(child, (*path, part)))
    return found


def line_col(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


@given(documents())
def test_every_key_and_item_is_placed_at_its_own(
    drawn: tuple[str, dict[str, Any], dict[tuple[Any, ...], Any]],
) -> None:
    text, doc, written = drawn
    assert tomllib.loads(text) == doc, text  # what was drawn is what tomllib reads
    assert set(written) == set(paths(doc)), text
    parsed = parse(text, "toml")
    for path, (key_at, value_at) in written.items():
        want = (len(path), line_col(text, key_at), line_col(text, value_at))
        assert parsed.locate(path) == want, (text, path)
    top = {
        path: (line_col(text, key_at), line_col(text, value_at))
        for path, (key_at, value_at) in written.items()
        if len(path) <= 2 and all(isinstance(part, str) for part in path)
    }
    assert parsed.keys == top, text


ESCAPES = ["\\U0000005F", "\\Ua0000000", "\\u00"]
PIECES = st.sampled_from(
    [*"[]{}\"'#=,. \\a1", "\n", "\r\n", '"""', "'''", "[[", "]]", "a = ", "{a = 1}", *ESCAPES]
)
"""Pieces of TOML text: brackets, quotes, line breaks, escapes (one past U+10FFFF)."""


@given(
    st.one_of(
        documents().map(lambda drawn: drawn[0]),
        st.lists(PIECES, max_size=30).map("".join),
    ),
    st.lists(st.tuples(st.integers(0, 10**6), PIECES, st.booleans()), max_size=3),
)
def test_any_text_is_read_with_every_key_placed_or_refused_at_a_position(
    text: str, edits: list[tuple[int, str, bool]]
) -> None:
    for at, piece, delete in edits:  # a few characters inserted or deleted
        at %= len(text) + 1
        text = text[:at] + text[at + 1 :] if delete else text[:at] + piece + text[at:]
    try:
        parsed = parse(text, "toml")
    except ParseProblem as problem:
        assert problem.pos >= (1, 1)
        return
    for path in paths(parsed.root):
        assert parsed.locate(path)[0] == len(path), (text, path)


@pytest.mark.parametrize(
    "text", ['"\\Ua0000000" = 1\n', 't = { "\\U00110000" = 1 }\n', '["\\Uffffffff"]\n']
)
def test_a_key_escape_past_unicode_is_a_syntax_error(text: str) -> None:
    with pytest.raises(ParseProblem) as caught:
        parse(text, "toml")
    assert caught.value.message.startswith("invalid TOML: Escaped character")


@pytest.mark.parametrize(
    ("text", "path", "key", "value"),
    [
        ('t = { a = 1, b = "x" }\n', ("t", "b"), (1, 14), (1, 18)),
        ('t = { "a.b" = 1, a . c = 2 }\n', ("t", "a", "c"), (1, 18), (1, 26)),
        ("t = { a.b = 1 }\n", ("t", "a", "b"), (1, 7), (1, 13)),
        ("t = [ 1979-05-27 07:32:00, { x = 2 } ]\n", ("t", 1, "x"), (1, 30), (1, 34)),
        (
            "[s]\nt = { u = { v = [ 0,\n  # note\n  1 ] } }\n",
            ("s", "t", "u", "v", 1),
            (4, 3),
            (4, 3),
        ),
        # escapes in a key, as tomllib reads them
        ('t = { "rollout\\u005fbackend" = 1 }\n', ("t", "rollout_backend"), (1, 7), (1, 32)),
        ('t = { "\\U0001F600\\t" = 1 }\n', ("t", "😀\t"), (1, 7), (1, 24)),
        # multi-line strings in an array: brackets, quotes and '#' in them are text
        ("a = [\"\"\"x]\n\"#{\"\"\", '''y'''', {k = 1}]\n", ("a", 2, "k"), (2, 20), (2, 24)),
        ('a = ["""\\"""" , {k = 1}]\n', ("a", 1, "k"), (1, 18), (1, 22)),
        # arrays of tables, a table under one, inline tables in them
        (
            "[[x]]\n[[x]]\n[x.y]\nz = {w = [{v = 1}]}\n",
            ("x", 1, "y", "z", "w", 0, "v"),
            (4, 12),
            (4, 16),
        ),
        # CRLF line ends
        ("a = [\r\n  1,\r\n  {k = 2},\r\n]\r\n", ("a", 1, "k"), (3, 4), (3, 8)),
    ],
)
def test_positions_inside_inline_tables_and_arrays(
    text: str, path: tuple[Any, ...], key: tuple[int, int], value: tuple[int, int]
) -> None:
    tomllib.loads(text)  # valid TOML
    document = read_config_bytes(text, format="toml")
    assert (document.key_position(path), document.position(path)) == (key, value)


def test_inline_table_keys_join_the_section_keys() -> None:
    text = 'training = { rollout_backend = "Nemo-Gym", "rollout\\u005fmax_steps" = "8" }\n'
    result = check_bytes(text, format="toml")
    assert result.key_positions[("training", "rollout_backend")] == ((1, 14), (1, 32))
    assert result.key_positions[("training", "rollout_max_steps")] == ((1, 44), (1, 71))
    found = [*result.issues, *result.warnings]
    where = {issue.location: (issue.line, issue.col, issue.end_col) for issue in found}
    assert where["training.rollout_max_steps"] == (1, 71, 74)


def test_a_bad_setting_in_an_inline_table_is_placed_at_its_own_key(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool]\nname = "x"\nagent-rollout = { section = "a", strict = "yes" }\n')
    with pytest.raises(ConfigError) as caught:
        find_settings(str(tmp_path))
    [issue] = caught.value.issues
    assert (issue.line, issue.col, issue.location) == (3, 34, "tool.agent-rollout.strict")
    assert "true or false" in issue.message


def test_keys_far_along_a_long_line_are_placed() -> None:
    text = "t = { " + ", ".join(f"k{n} = [{{ v = {n} }}]" for n in range(20_000)) + " }\n"
    parsed = parse(text, "toml")
    col = text.index("k19999") + 1
    assert parsed.locate(("t", "k19999", 0, "v")) == (4, (1, col + 12), (1, col + 16))
    assert parsed.root["t"]["k19999"] == [{"v": 19999}]


@pytest.mark.parametrize(
    ("text", "pos"),
    [
        ("a." * 5_000 + "b = 1\n", (1, 1)),
        ("[t]\nt = { " + "a." * 5_000 + "b = 1 }\n", (2, 7)),
        ("[" + "a." * 5_000 + "b]\n", (1, 2)),
    ],
)
def test_a_dotted_key_nested_too_deep_is_refused_at_the_key(
    text: str, pos: tuple[int, int]
) -> None:
    # Before tomllib reads it: its time and memory grow with the square of the key's length.
    with pytest.raises(ParseProblem) as caught:
        parse(text, "toml")
    assert (caught.value.pos, caught.value.message) == (pos, "nested deeper than 200 levels")
