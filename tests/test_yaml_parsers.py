"""YAML's two parsers side by side: libyaml answers only where it reads as the pure one.

``parse_yaml`` lets PyYAML's C parser (libyaml) read a text where it cannot
read it otherwise than the pure-Python parser that ``yaml.safe_load`` runs
(``libyaml_reading``); everywhere else, and for every refusal, the pure
parser reads. So whichever parser answered, the result must be the pure
parser's: the values, every node's tag, style, start and end, every key's
position, the duplicate-key problems, and for a text that is refused the
same message at the same position. The property below generates YAML
(block and flow collections, every scalar style, comments, anchors,
aliases, merges, tags) and then damages it with what the parsers read apart
(tabs, a BOM, CRLF and lone CRs, NEL, directives, ``?`` and empty values in
flow collections, a comment after a block scalar's header, no final line
break), and compares; the tricky texts of the other tests, and every
difference the comparison ever found, are compared one by one.
``AGENT_ROLLOUT_PURE_YAML=1`` is how the pure parser is made to read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_rollout.config._parse import Parsed, ParseProblem, parse
from agent_rollout.config._parse.yaml_events import LIBYAML_VERSIONS, PURE_YAML_ENV
from agent_rollout.config._parse.yaml_text import libyaml_reading
from support import typed_bits
from test_yaml_reading import documents

MANY = max(500, settings().max_examples)
HAS_LIBYAML = bool(getattr(yaml, "__with_libyaml__", False))
needs_libyaml = pytest.mark.skipif(not HAS_LIBYAML, reason="PyYAML without libyaml")


@contextmanager
def pure_parser() -> Iterator[None]:
    before = os.environ.get(PURE_YAML_ENV)
    os.environ[PURE_YAML_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ[PURE_YAML_ENV]
        else:
            os.environ[PURE_YAML_ENV] = before


def nodes(parsed: Parsed) -> list[Any]:
    """Every node once, in document order: kind, tag, style, start and end, plain or not."""
    walker = parsed.walker
    rows: list[Any] = []
    seen: dict[int, int] = {}
    todo = [walker.root]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            rows.append(("alias of", seen[id(node)]))
            continue
        seen[id(node)] = len(seen)
        marks = [(m.line, m.column) for m in (node.start_mark, node.end_mark)]
        row = [node.id, node.tag, marks, id(node) in walker.plain]
        if node.id == "scalar":
            rows.append((*row, node.style, node.value))
            continue
        rows.append((*row, node.flow_style, len(node.value)))
        children = node.value if node.id == "sequence" else [c for p in node.value for c in p]
        todo.extend(reversed(children))
    return rows


def reading(parsed: Parsed) -> Any:
    if parsed.empty:
        return ("empty",)
    return (
        typed_bits(parsed.root),
        parsed.root_pos,
        sorted(parsed.keys.items(), key=repr),
        parsed.problems,
        nodes(parsed),
    )


def outcome(text: str, version: str = "1.1") -> Any:
    try:
        return reading(parse(text, "yaml", depth=6, yaml_version=version))
    except ParseProblem as exc:
        return ("refused", exc.pos, exc.message, exc.kind)


def assert_same_reading(text: str, version: str = "1.1") -> bool:
    """Both parsers read ``text`` alike; True when libyaml answered."""
    with pure_parser():
        pure = outcome(text, version)
    assert outcome(text, version) == pure
    fast = libyaml_reading(text, 6, version)
    if fast is None:
        return False
    assert reading(fast) == pure
    return True


# ------------------------------------------------------------ generated texts

# What the two parsers read apart, and what configs hold: put into generated documents.
DAMAGE = [
    "\t",
    " \t",
    "\ufeff",
    "\r\n",
    "\r",
    "\x85",
    "\u2028",
    "%YAML 1.1\n---\n",
    "%TAG !e! tag:yaml.org,2002:\n---\n",
    "%YAML 1.1#x\n",
    "? ",
    "?",
    "[a?b]",
    "[? ]",
    "{a, b: , c}",
    "[a: ]",
    "{: x}",
    "[!!str,b]",
    "[!!str a, b]",
    "! ",
    "!!str ",
    "&x ",
    "*x",
    "|#",
    ">-#c",
    "|2",
    "# c",
    " # c",
    "\n",
    "\n  ",
    "- ",
    ": ",
    ",",
    "[",
    "]",
    "{",
    "}",
    "'",
    '"',
    '"\\/"',
    "'it''s'",
    "é",
    "\U0001f600",
    "---",
    "...",
    "\n...\n",
    "x" * 1030,
]


@st.composite
def damaged(draw: st.DrawFn) -> str:
    text = draw(documents())
    if draw(st.booleans()):
        text = text.replace("\n", draw(st.sampled_from(["\r\n", "\n"])))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(text)))
        if draw(st.integers(0, 4)) == 0:
            text = text[:at] + text[at + draw(st.integers(1, 3)) :]
        else:
            text = text[:at] + draw(st.sampled_from(DAMAGE)) + text[at:]
    if draw(st.booleans()):
        text = text.rstrip("\r\n")
    return text


@given(damaged(), st.sampled_from(["1.1", "1.2"]))
@settings(max_examples=MANY)
def test_both_parsers_read_every_text_alike(text: str, version: str) -> None:
    assert_same_reading(text, version)


# ------------------------------------------------------------ texts one by one

TRICKY = [
    # every difference between the raw readings of the two parsers
    "a: b\tc\n",
    "x: [1,\t2]\n",
    "x: {a:\t1}\n",
    "a:\t\n  b: 1\n",
    "a: 1\t# c\n",
    "\ufeffa: 1\n",
    "a: 1\n\ufeffb: 2\n",
    "a: 1\r\nb: [x, y]\r\n",
    "a: 1\rb: 2\r",
    "a: x\x85y\n",
    "a: x\u2028y\n",
    "%YAML 1.1\n---\na: 1\n",
    "%YAML 1.1#...\n---\na: 1\n",
    "%TAG !e! tag:yaml.org,2002:\n---\na: !e!int 3\n",
    "a: |#c\n  x\n",
    "a: >-2#c\n   x\n",
    "a: |2 # c\n   x\n",
    "x: {a, b: , c}\n",
    "x: {a: }\n",
    "x: [a: ]\n",
    "x: {? a}\n",
    "x: [? ]\n",
    "x: [ ? ] ]\n",
    "x: [a?b]\n",
    "x: {a?b: 1}\n",
    "url: http://h/p?q=1\nx: [1, 2]\n",
    "x: [!!str,b]\n",
    "x: [!!str a, b]\n",
    "x: !!set {a, b}\n",
    "x: ! 010\n",
    "x: ! [1]\n",
    "! 010",
    "x: [a:b]\n",
    "x: {a:b}\n",
    # no line break at the end: marks at the end of the text
    "a: 1\nb: [x, y]\nc: {d: e}",
    "a:\n  - 1\n  - 2",
    "a:\n  - ? x",
    "a: |\n  x\n  y",
    "a: >-\n x",
    "a:",
    "-",
    "a: 1  # c",
    "a: 'x\n  y'",
    "a: x\n  y",
    # the tricky texts of test_loader.py and test_yaml_reading.py
    "training: [1\n",
    "a: 1\n---\nb: 2\n",
    "- 1\n- 2\n",
    "",
    "# only a comment\n",
    "training:\n",
    "x: !!python/object:os.system {}\n",
    "x: !!python/tuple [1]\n",
    "a: &x 1\nb: &x 2\n",
    "x: =\n",
    "x: !!int abc\n",
    "x: !!bool maybe\n",
    "x: a\x01\n",
    "x: {<<: 3}\n",
    "x: !custom 1\n",
    "x: &a [*a]\n",
    "x: *nope\n",
    "? [1]\n: 2\n",
    "a: " + "1" * 5000,
    "x: 1" + ":30" * 2000 + "\n",
    "a0: &a0 [x, x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]\n" for i in range(1, 22)),
    "x: " + "[" * 300,
    "x: " + "[" * 300 + "]" * 300 + "\n",
    "training: {}\nx:\n  - {k: 1,\n     k: 2}\n",
    "training:\n  rollout_backend: art\n  rollout_backend: ruler\n",
    "one: &one {x: 1, xy: 1}\ntwo: &two {x: 2, xy: 2}\nboth:\n  <<: [*one, *two]\n",
    "x: !!omap [a: 1, b: 2]\n",
    "x: !!binary aGk=\n",
    "x: [yes, no, on, off, 010, 0o10, 1_000, 1:30, 1e3, 1.0e+3, .nan, ~]\n",
    "x: 2001-12-14t21:59:43.10-05:00\n",
    "rollout_backend: art\nrollout_\n\n# note\nx: 1\n",
    "k: " + "é" * 600 + "\n" + "é" * 600 + ": 1\n",
    "x" * 1030 + ": 1\n",
]


@pytest.mark.parametrize("version", ["1.1", "1.2"])
@pytest.mark.parametrize("text", TRICKY)
def test_both_parsers_read_the_tricky_texts_alike(text: str, version: str) -> None:
    assert_same_reading(text, version)


@pytest.mark.parametrize(
    "text", ["a: b\tc\n", "x: [1,\t2]\n", "x: {a:\t1}\n", "a:\t\n  b: 1\n", "x: [a?b]\n"]
)
@pytest.mark.parametrize("version", ["1.1", "1.2"])
def test_texts_libyaml_alone_accepts_are_refused_as_the_pure_parser_refuses(
    text: str, version: str
) -> None:
    # yaml.safe_load refuses them, yaml.CSafeLoader reads them: the verdict is
    # safe_load's, whether PyYAML has libyaml or not, under either reading.
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(text)
    with pytest.raises(ParseProblem, match="invalid YAML"):
        parse(text, "yaml", yaml_version=version)


# ------------------------------------------------------------ libyaml reads configs

CONFIG = """\
# The training run
training:
  rollout_func: my_project.rollouts:play_episode  # one episode per call
  rollout_backend: art
  rollout_max_steps: 64
  rollout_policy_base_url: http://127.0.0.1:8000/v1
  learning_rate: 1.0e-6
  betas: [0.9, 0.999]
  data: {train: ~/data/train.parquet, shuffle: true}
  prompt: |
    Solve it.
  tags: ['a', "b"]
defaults: &defaults
  seed: 42
stage:
  <<: *defaults
  name: stage_0
"""


@needs_libyaml
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("version", ["1.1", "1.2"])
def test_libyaml_reads_a_config(newline: str, version: str) -> None:
    assert yaml._yaml.get_version() in LIBYAML_VERSIONS, (  # type: ignore[attr-defined]
        f"libyaml {yaml._yaml.get_version_string()} is new: run this module against it "  # type: ignore[attr-defined]
        "and add it to LIBYAML_VERSIONS"
    )
    text = CONFIG.replace("\n", newline)
    for ending in (text, text.rstrip()):
        assert assert_same_reading(ending, version)


@needs_libyaml
def test_the_pure_parser_is_forced_by_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PURE_YAML_ENV, "1")
    parsed = parse(CONFIG, "yaml")
    # The pure parser's marks hold the text (for its error snippets); libyaml's do not.
    assert parsed.walker.root.start_mark.buffer is not None
    monkeypatch.setenv(PURE_YAML_ENV, "0")
    assert parse(CONFIG, "yaml").walker.root.start_mark.buffer is None
